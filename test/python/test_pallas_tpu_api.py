"""JAX's smaller `pltpu`/`pl` helpers: einshape, core barriers, the first
core, started remote copies, the TPU queries, debug checks and
`empty_ref_like` (values recorded from JAX 0.10.2 where it runs them on a
CPU)."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember.experimental import checkify
from ember.experimental import pallas as pl
from ember.experimental.pallas import tpu as pltpu


def test_einshape_as_jax():
    x = jnp.arange(2 * 12 * 3).reshape(2, 12, 3)
    # (equation, sizes, JAX's shape, JAX's sum of the first 7 elements
    # weighted by their position)
    cases = [("abc->acb", {}, (2, 3, 12), 273), ("a(bc)d->(ba)cd", {"b": 4}, (8, 3, 3), 91),
             ("a(bc)d->(ba)cd", {"c": 4}, (6, 4, 3), 91), ("abc->(abc)", {}, (72,), 91),
             ("a(bc)d->dcab", {"b": 2, "c": 6}, (3, 6, 2, 2), 603)]
    for eq, sizes, shape, check in cases:
        y = pltpu.einshape(eq, x, **sizes)
        assert y.shape == shape, eq
        assert int(np.asarray(y).ravel()[:7] @ np.arange(7)) == check, eq
    # And against NumPy: split, transpose, merge.
    want = np.asarray(x).reshape(2, 2, 6, 3).transpose(3, 2, 0, 1)
    np.testing.assert_array_equal(np.asarray(pltpu.einshape("a(bc)d->dcab", x, b=2)), want)
    # JAX's errors: sizes it cannot infer, a wrong rank, no arrow, dimensions
    # dropped (NotImplementedError), a split that does not divide.
    for eq, sizes, err in [("a(bc)d->abcd", {}, ValueError), ("ab->ab", {}, ValueError),
                           ("abc->ab", {}, NotImplementedError), ("abc-acb", {}, ValueError),
                           ("a(bc)d->abcd", {"b": 5}, ValueError)]:
        with pytest.raises(err):
            pltpu.einshape(eq, x, **sizes)


def test_einshape_in_a_kernel():
    def k(x_ref, o_ref):
        o_ref[...] = pltpu.einshape("a(bc)->(ba)c", x_ref[...], b=2)

    x = jnp.arange(8 * 256, dtype=jnp.float32).reshape(8, 256)
    y = pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32))(x)
    np.testing.assert_array_equal(
        np.asarray(y), np.asarray(x).reshape(8, 2, 128).transpose(1, 0, 2).reshape(16, 128))


def test_core_barrier_and_first_core():
    tc = pltpu.create_tensorcore_mesh("core", num_cores=4)

    def k(o_ref, sem, count):
        c = lax.axis_index("core")
        pltpu.core_barrier(sem, core_axis_name="core")
        # Every core met the others: its semaphore is back at zero.
        count[0] = pl.semaphore_read(sem)

        @pltpu.run_on_first_core("core")
        def _():
            o_ref[0] = jnp.float32(42.0)

        o_ref[pl.ds(c + 1, 1)] = count[...].astype(jnp.float32) + c

    y = pl.kernel(k, out_type=jax.ShapeDtypeStruct((5,), jnp.float32), mesh=tc,
                  scratch_types=[pltpu.SemaphoreType.REGULAR, pltpu.SMEM((1,), jnp.int32)])()
    np.testing.assert_array_equal(np.asarray(y), [42, 0, 1, 2, 3])


def test_semaphore_signal_by_core_index():
    tc = pltpu.create_tensorcore_mesh("core", num_cores=2)

    def k(o_ref, sem):
        c = lax.axis_index("core")
        # Core 0 signals core 1 twice; core 1 reads 2, core 0 reads 0.
        @pl.when(c == 0)
        def _():
            pl.semaphore_signal(sem, 2, core_index=1)

        o_ref[pl.ds(c, 1)] = jnp.full((1,), pl.semaphore_read(sem), jnp.int32)

    y = pl.kernel(k, out_type=jax.ShapeDtypeStruct((2,), jnp.int32), mesh=tc,
                  scratch_types=[pltpu.SemaphoreType.REGULAR])()
    np.testing.assert_array_equal(np.asarray(y), [0, 2])


def test_async_remote_copy_is_started():
    tc = pltpu.create_tensorcore_mesh("core", num_cores=2)

    def k(x_hbm, o_hbm, buf, got, send, recv):
        c = lax.axis_index("core")
        buf[...] = x_hbm[pl.ds(c, 1), :]
        pltpu.async_remote_copy(buf, got, send, recv, device_id={"core": 1 - c}).wait()
        o_hbm[pl.ds(c, 1), :] = got[...]

    x = jnp.arange(16, dtype=jnp.float32).reshape(2, 8)
    y = pl.kernel(k, out_type=x, mesh=tc,
                  scratch_types=[pltpu.VMEM((1, 8), jnp.float32)] * 2
                  + [pltpu.SemaphoreType.DMA] * 2)(x)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x)[::-1])


def test_tpu_queries_on_a_cpu():
    assert pltpu.is_tpu_device() is False
    # JAX 0.10.2's error on a CPU.
    with pytest.raises(ValueError, match="Unsupported TPU device kind: cpu"):
        pltpu.get_tpu_info()
    assert str(pltpu.ChipVersion.TPU_V5P) == "v5p"


def test_debug_checks_and_empty_ref_like():
    def k(x_ref, o_ref):
        pl.debug_check(x_ref[0] > 100, "too small")
        o_ref[...] = x_ref[...] + 1

    f = pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct((4,), jnp.float32))
    # As in JAX's interpret mode: the check changes nothing, enabled or not.
    assert pl.enable_debug_checks.value is False
    with pl.enable_debug_checks(True):
        assert pl.enable_debug_checks.value is True
        np.testing.assert_array_equal(np.asarray(f(jnp.ones(4))), [2.0] * 4)
        err, _ = checkify.checkify(f)(jnp.ones(4))
        assert err.get() is None
    r = pl.empty_ref_like(pltpu.VMEM((2, 3), jnp.float32))
    assert r.shape == (2, 3) and np.isnan(np.asarray(r[...])).all()
    r = pl.empty_ref_like(jax.ShapeDtypeStruct((3,), jnp.int32))
    assert r.dtype == jnp.int32
    with pytest.raises(ValueError, match="does not support"):
        pl.empty_ref_like(np.zeros(3))


def test_remote_signal_from_a_when_reaches_every_device(devices8):
    # Devices 1..3 signal device 0 from inside `pl.when(me != 0)`, and
    # device 1 copies its row to it: device 0's own condition is false, yet
    # it receives (the lanes run the body with their writes masked; a
    # conditional op taken per lane dropped what was sent to device 0).
    n = 4
    mesh = jax.sharding.Mesh(np.array(devices8[:n]), ("x",))

    def k(x_ref, o_ref, sem, got, send, recv):
        me = lax.axis_index("x")
        got[...] = jnp.zeros_like(got)

        @pl.when(me != 0)
        def _():
            pl.semaphore_signal(sem, me, device_id=(0,))

            @pl.when(me == 1)
            def _():
                copy = pltpu.make_async_remote_copy(x_ref, got, send, recv, device_id=(0,))
                copy.start()
                copy.wait()

        count = pl.semaphore_read(sem)
        pl.semaphore_wait(sem, count)
        o_ref[...] = got[...] + count.astype(jnp.float32)

    f = jax.shard_map(
        lambda v: pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct(v.shape, v.dtype),
                                 scratch_shapes=[pltpu.SemaphoreType.REGULAR,
                                                 pltpu.VMEM((1, 8), jnp.float32),
                                                 pltpu.SemaphoreType.DMA,
                                                 pltpu.SemaphoreType.DMA])(v),
        mesh=mesh, in_specs=jax.sharding.PartitionSpec("x"),
        out_specs=jax.sharding.PartitionSpec("x"), check_vma=False)
    x = jnp.arange(n * 8, dtype=jnp.float32).reshape(n, 8)
    y = np.asarray(f(x))
    # Device 0: the signals 1 + 2 + 3 and device 1's row; the others nothing.
    want = np.zeros((n, 8), np.float32)
    want[0] = np.asarray(x)[1] + 6
    np.testing.assert_array_equal(y, want)
