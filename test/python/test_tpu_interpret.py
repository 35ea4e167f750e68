"""The checked TPU interpreter (`interpret=pltpu.InterpretParams()`): DMAs
run asynchronously and each hazard is an `InterpretError` at the kernel's
line (`python/ember/_src/pallas/tpu_interpret.py`)."""

import functools
import os
import re

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.experimental import pallas as pl
from ember.experimental.pallas import tpu as pltpu

from helpers import load_example

X = jnp.arange(16 * 128, dtype=jnp.float32).reshape(16, 128) / 100


def _run(kernel, scratch, out_any=False, params=None, x=X):
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY) if out_any else pl.BlockSpec(),
        scratch_shapes=scratch,
        interpret=params or pltpu.InterpretParams())(x)


def test_correct_kernel_runs_in_both_dma_modes():
    def k(x_hbm, o_ref, buf, sem):
        c = pltpu.make_async_copy(x_hbm.at[pl.ds(8, 8)], buf, sem)
        c.start()
        c.wait()
        o_ref[...] = buf[...] + 1

    for mode in ("on_wait", "eager"):
        out = _run(k, [pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA],
                   params=pltpu.InterpretParams(dma_execution_mode=mode))
        np.testing.assert_allclose(np.asarray(out), np.asarray(X[8:]) + 1)


def test_read_before_wait():
    def k(x_hbm, o_ref, buf, sem):
        c = pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], buf, sem)
        c.start()
        o_ref[...] = buf[...]  # the copy may not have landed
        c.wait()

    with pytest.raises(pltpu.InterpretError,
                       match=r"test_tpu_interpret\.py:\d+.* reads scratch 0 while the DMA "
                             r"into it started at .*test_tpu_interpret\.py:\d+.* is in flight"):
        _run(k, [pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA])


def test_write_into_dma_destination_in_flight():
    def k(x_hbm, o_ref, buf, sem):
        c = pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], buf, sem)
        c.start()
        buf[0:1, :] = jnp.zeros((1, 128), jnp.float32)
        c.wait()
        o_ref[...] = buf[...]

    with pytest.raises(pltpu.InterpretError, match="writes scratch 0 while the DMA into it"):
        _run(k, [pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA])


def test_overwrite_dma_source_still_being_read():
    def k(x_hbm, o_hbm, buf, sem):
        buf[...] = jnp.ones((8, 128), jnp.float32)
        c = pltpu.make_async_copy(buf, o_hbm, sem)
        c.start()
        buf[...] = jnp.zeros((8, 128), jnp.float32)  # the copy may still read it
        c.wait()

    with pytest.raises(pltpu.InterpretError, match="overwrites scratch 0 while the DMA started "
                                                   "at .* is still reading it"):
        _run(k, [pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA], out_any=True)


def test_dma_into_buffer_still_in_use():
    def k(x_hbm, o_ref, buf, sem):
        # Double buffering gone wrong: both copies into slot 0.
        a = pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], buf.at[0], sem.at[0])
        b = pltpu.make_async_copy(x_hbm.at[pl.ds(8, 8)], buf.at[0], sem.at[1])
        a.start()
        b.start()
        a.wait()
        b.wait()
        o_ref[...] = buf[0]

    with pytest.raises(pltpu.InterpretError, match="copies into scratch 0, which the DMA "
                                                   "started at .* writes"):
        _run(k, [pltpu.VMEM((2, 8, 128), jnp.float32), pltpu.SemaphoreType.DMA((2,))])


def test_wait_without_dma_never_returns():
    def k(x_hbm, o_ref, buf, sem):
        pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], buf, sem).wait()
        o_ref[...] = buf[...]

    with pytest.raises(pltpu.InterpretError, match="has no DMA in flight that signals it: it "
                                                   "would never return"):
        _run(k, [pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA])


def test_dma_never_waited_for():
    def k(x_hbm, o_ref, buf, sem):
        pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], buf, sem).start()
        o_ref[...] = jnp.zeros((8, 128), jnp.float32)

    with pytest.raises(pltpu.InterpretError, match="was never waited for"):
        _run(k, [pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA])


def test_regular_semaphores():
    def ok(x_hbm, o_ref, sem):
        pltpu.semaphore_signal(sem, 2)
        n = pltpu.semaphore_read(sem)
        pltpu.semaphore_wait(sem, 2)
        o_ref[...] = jnp.full((8, 128), n, jnp.float32)

    np.testing.assert_allclose(np.asarray(_run(ok, [pltpu.SemaphoreType.REGULAR])), 2.0)
    # Without checks (the traced interpreter) the count lives in the buffer.
    traced = pl.pallas_call(ok, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                            scratch_shapes=[pltpu.SemaphoreType.REGULAR])
    np.testing.assert_allclose(np.asarray(jax.jit(traced)(X)), 2.0)

    def deadlock(x_hbm, o_ref, sem):
        pltpu.semaphore_signal(sem, 1)
        pltpu.semaphore_wait(sem, 2)
        o_ref[...] = jnp.zeros((8, 128), jnp.float32)

    with pytest.raises(pltpu.InterpretError, match="for 2 on semaphore scratch 0, which holds "
                                                   "1, would never return"):
        _run(deadlock, [pltpu.SemaphoreType.REGULAR])

    def leftover(x_hbm, o_ref, sem):
        pltpu.semaphore_signal(sem)
        o_ref[...] = jnp.zeros((8, 128), jnp.float32)

    with pytest.raises(pltpu.InterpretError, match="holds 1 when the kernel ends"):
        _run(leftover, [pltpu.SemaphoreType.REGULAR])
    # Outside shard_map the kernel runs on one device.
    with pytest.raises(pltpu.InterpretError, match=r"semaphore_signal at .*test_tpu_interpret"
                                                   r"\.py:\d+ names device 1, but the kernel "
                                                   r"runs on 1 device \(not under shard_map\)"):
        _run(lambda x, o, s: pltpu.semaphore_signal(s, 1, device_id=1),
             [pltpu.SemaphoreType.REGULAR])


def test_grid_and_double_buffering_checked():
    # A grid over blocks with a manual double buffer in each step; the
    # checked run equals the traced one.
    def k(x_ref, x_hbm, o_ref, buf, sem):
        copies = [pltpu.make_async_copy(x_hbm.at[pl.ds(r * 4, 4)], buf.at[r % 2],
                                        sem.at[r % 2]) for r in range(4)]
        copies[0].start()
        acc = jnp.zeros((4, 128), jnp.float32)
        for r in range(4):
            if r + 1 < 4:
                copies[r + 1].start()
            copies[r].wait()
            acc = acc + buf[r % 2]
        o_ref[...] = x_ref[...] + jnp.tile(acc, (2, 1))

    def f(x, params):
        return pl.pallas_call(
            k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0)),
                      pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
            scratch_shapes=[pltpu.VMEM((2, 4, 128), jnp.float32),
                            pltpu.SemaphoreType.DMA((2,))],
            interpret=params)(x, x)

    checked = f(X, pltpu.InterpretParams())
    np.testing.assert_allclose(np.asarray(checked), np.asarray(f(X, True)), rtol=1e-6)
    # Under jit (and vmap) the checked interpreter runs on the call's values
    # through a host callback.
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: f(x, pltpu.InterpretParams()))(X)),
                               np.asarray(checked), rtol=1e-6)
    xs = jnp.stack([X, X * 3])
    np.testing.assert_allclose(
        np.asarray(jax.jit(jax.vmap(lambda x: f(x, pltpu.InterpretParams())))(xs)),
        np.stack([np.asarray(f(x, True)) for x in xs]), rtol=1e-6)


def test_vmem_capacity():
    def k(x_ref, o_ref, big):
        o_ref[...] = x_ref[...]

    def f(params, limit=None):
        return pl.pallas_call(
            k, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
            scratch_shapes=[pltpu.VMEM((2048, 2048), jnp.float32)],  # 16 MiB
            compiler_params=pltpu.CompilerParams(vmem_limit_bytes=limit),
            interpret=params)(X[:8])

    with pytest.raises(pltpu.InterpretError, match=r"needs 16793600 bytes of VMEM .* over the "
                                                   r"limit of 16777216"):
        f(pltpu.InterpretParams())
    np.testing.assert_allclose(np.asarray(f(pltpu.InterpretParams(), 32 << 20)), np.asarray(X[:8]))
    with pytest.raises(pltpu.InterpretError, match="bytes of SMEM"):
        pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                       scratch_shapes=[pltpu.SMEM((64,), jnp.int32)],
                       interpret=pltpu.InterpretParams(smem_limit_bytes=128))(X[:8])


def _emit_pipeline_add_one(params):
    """JAX's emit_pipeline example (test/data/tpu/kernels.py), its
    pallas_call run with `params`."""
    f, (x,) = load_example("pallas_tpu_kernels").cross_check_programs(
        interpret=params)["emit_pipeline_add_one"]
    return x, f


def test_emit_pipeline():
    # JAX's emit_pipeline example (add one over (8, 128) blocks of HBM refs)
    # in the checked interpreter, the traced one and under jit.
    for params in (pltpu.InterpretParams(), True):
        x, f = _emit_pipeline_add_one(params)
        np.testing.assert_allclose(np.asarray(f(x)), np.asarray(x) + 1)
        np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), np.asarray(x) + 1)

    # The example's blocked matmul accumulating into its output blocks.
    a = jnp.arange(64 * 64, dtype=jnp.float32).reshape(64, 64) / 1000
    b = jnp.cos(a)
    mm = load_example("pallas_tpu_kernels").pipelined_matmul
    for params in (pltpu.InterpretParams(), True):
        np.testing.assert_allclose(np.asarray(mm(a, b, interpret=params)),
                                   np.asarray(a) @ np.asarray(b), rtol=1e-4, atol=1e-4)
    # Lowered for TPU: one region holding the two (2, 8, 128) VMEM slots and
    # the DMA semaphores of each operand, the first block fetched before
    # the loop, the last one waited for after it.
    x, f = _emit_pipeline_add_one(False)
    text = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    region = text[text.index("ember_tpu.region"):]
    assert region.count("memref.alloca() : memref<2x8x128xf32") == 2
    assert region.count("ember_tpu.sem_alloc : memref<2x!ember_tpu.dma_semaphore") == 2
    loop = region.index("scf.while")
    assert "enqueue_dma" in region[:loop] and "wait_dma2" in region[region.rindex("scf.yield"):]
    # Fetch before the loop; in it, prefetch, wait, copy out, wait for the
    # previous copy out; the last wait after it.
    assert text.count("enqueue_dma") == 3 and text.count("wait_dma2") == 3


def test_emit_pipeline_revisits_blocks_as_jax():
    # Input blocks fetched only when the index map moves on (also back to an
    # earlier block), an output block kept in VMEM while its index stays and
    # copied out when it changes; checked for races and against NumPy.
    def body(x, o):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o[...] = jnp.zeros_like(o)

        o[...] += x[...] * (pl.program_id(1) + 1).astype(jnp.float32)

    def kernel(x_hbm, o_hbm):
        # Row blocks 0, 1, 1, 0 for each output row block i.
        pltpu.emit_pipeline(
            body, grid=(2, 4),
            in_specs=[pl.BlockSpec((8, 128), lambda i, j: (jnp.where((j == 1) | (j == 2), 1, 0),
                                                           i))],
            out_specs=[pl.BlockSpec((8, 128), lambda i, j: (0, i))])(x_hbm, o_hbm)

    x = jnp.arange(16 * 256, dtype=jnp.float32).reshape(16, 256) / 100
    xs = np.asarray(x)
    want = np.concatenate([xs[:8, c] * 1 + xs[8:, c] * 2 + xs[8:, c] * 3 + xs[:8, c] * 4
                           for c in (slice(0, 128), slice(128, 256))], axis=1)
    for params in (pltpu.InterpretParams(), pltpu.InterpretParams(dma_execution_mode="eager"),
                   True):
        out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 256), jnp.float32),
                             in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                             out_specs=pl.BlockSpec(memory_space=pl.ANY),
                             interpret=params)(x)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


def test_emit_pipeline_body_prologue():
    # JAX's body_prologue runs at each step, in the pipeline's grid
    # environment, before the body; allocations= is not supported.
    def kernel(x_hbm, o_hbm, count):
        count[0] = 0

        def prologue():
            count[0] += pl.program_id(0) + 1

        def body(x, o):
            o[...] = x[...] + count[0].astype(jnp.float32)

        pltpu.emit_pipeline(body, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                            out_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))])(
                                x_hbm, o_hbm, body_prologue=prologue)

    x = jnp.zeros((16, 128), jnp.float32)
    for params in (pltpu.InterpretParams(), True):
        out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                             in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                             out_specs=pl.BlockSpec(memory_space=pl.ANY),
                             scratch_shapes=[pltpu.SMEM((1,), jnp.int32)], interpret=params)(x)
        np.testing.assert_array_equal(np.asarray(out)[::8, 0], [1, 3])
    with pytest.raises(NotImplementedError, match="allocations"):
        pltpu.emit_pipeline(lambda x: None, grid=(1,))(allocations=())


def test_emit_pipeline_output_starts_undefined():
    # As on a TPU, an output block's VMEM buffer is not read from HBM: a body
    # that accumulates without initialising reads undefined (NaN) values in
    # the checked interpreter.
    def body(x, o):
        o[...] += x[...]

    def kernel(x_hbm, o_hbm):
        pltpu.emit_pipeline(body, grid=(2,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                            out_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))])(x_hbm, o_hbm)

    x = jnp.ones((16, 128), jnp.float32)
    out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                         out_specs=pl.BlockSpec(memory_space=pl.ANY),
                         interpret=pltpu.InterpretParams())(x)
    assert np.isnan(np.asarray(out)).all()


def test_run_scoped_in_checked_and_lowered_kernels():
    # pl.run_scoped buffers are watched by the checked interpreter (a read of
    # a scoped buffer while a DMA into it is in flight is reported) and are
    # Mosaic's scoped allocations when lowered.
    def kernel(racy, x_hbm, o_ref):
        def scoped(buf, sem):
            c = pltpu.make_async_copy(x_hbm, buf, sem)
            c.start()
            if not racy:
                c.wait()
            o_ref[...] = buf[...] + 1.0
            if racy:
                c.wait()

        pl.run_scoped(scoped, pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA)

    x = jnp.ones((8, 128), jnp.float32)

    def call(interpret, racy=False):
        return pl.pallas_call(functools.partial(kernel, racy),
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              interpret=interpret)

    for wrap in (lambda f: f, jax.jit):
        # (Under jit the error is the host callback's, an InterpretError too.)
        with pytest.raises(pltpu.InterpretError, match="reads scoped buffer 0 while the DMA"):
            np.asarray(wrap(call(pltpu.InterpretParams(), racy=True))(x))
    np.testing.assert_array_equal(np.asarray(call(pltpu.InterpretParams())(x)), 2.0)
    # Lowered, the racy read is an error at its line (the buffer's contents
    # before the copy landed).
    with pytest.raises(NotImplementedError, match="before a later write"):
        jax.jit(call(False, racy=True)).trace(x).lower(
            lowering_platforms=("tpu",)).as_text("mosaic")
    text = jax.jit(call(False)).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "memref.alloca() : memref<8x128xf32, #ember_tpu.memory_space<vmem>>" in text
    assert "ember_tpu.sem_alloc : memref<!ember_tpu.dma_semaphore" in text


def test_ring_all_reduce_over_simulated_devices(devices8):
    # The example's double-buffered ring all-reduce (remote DMAs to the right
    # neighbour) over 4 in-process devices equals the sum, as psum gives it.
    n = 4
    mesh = jax.sharding.Mesh(np.array(devices8[:n]), ("x",))
    ring, (x,) = load_example("pallas_tpu_kernels").cross_check_programs()["ring_all_reduce"]
    want = np.tile(np.asarray(x).reshape(n, 8, 128).sum(0), (n, 1))
    np.testing.assert_allclose(np.asarray(ring(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(ring)(x)), want, rtol=1e-6)

    # A remote semaphore signal: each device tells its right neighbour its
    # id + 1, which the neighbour reads and takes.
    def signal_kernel(x_ref, o_ref, sem):
        me = jax.lax.axis_index("x")
        pltpu.semaphore_signal(sem, me + 1, device_id=(jax.lax.rem(me + 1, n),),
                               device_id_type=pltpu.DeviceIdType.MESH)
        got = pltpu.semaphore_read(sem)
        pltpu.semaphore_wait(sem, got)
        o_ref[...] = jnp.full(o_ref.shape, got, jnp.float32)

    f = jax.shard_map(
        lambda v: pl.pallas_call(signal_kernel, out_shape=jax.ShapeDtypeStruct(v.shape, v.dtype),
                                 scratch_shapes=[pltpu.SemaphoreType.REGULAR])(v),
        mesh=mesh, in_specs=jax.sharding.PartitionSpec("x"),
        out_specs=jax.sharding.PartitionSpec("x"), check_vma=False)
    got = np.asarray(f(x))[::8, 0]
    np.testing.assert_array_equal(got, [(d - 1) % n + 1 for d in range(n)])
    # Lowered for TPU (38th session): one kernel per device in a manual
    # computation; the remote signal names the right neighbour's logical id,
    # the ring's copies a send and a receive semaphore and the device.
    text = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "ember_tpu.device_id" in text
    assert re.search(r"ember_tpu.sem_signal %\S+, %\S+ device_id %", text), text
    text = jax.jit(ring).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert re.search(r"enqueue_dma source\(.*\) target\(.*\) source_semaphore\(.*\) "
                     r"target_semaphore\(.*\) device_id\(", text), text
    stablehlo = jax.jit(ring).trace(x).lower(lowering_platforms=("tpu",)).as_text("stablehlo")
    assert '"sdy.manual_computation"' in stablehlo and "has_communication" in stablehlo


def test_pallas_call_output_window_starts_undefined():
    # A pallas_call's output block is not loaded from HBM either, aliased or
    # not: on a real TPU (43rd session) a vmapped kernel reading its aliased
    # output block got the values a previous grid step had left in the VMEM
    # buffer. The checked interpreter gives NaN for a new window and keeps
    # the block while its window repeats (an accumulator over k).
    def read_alias(x_ref, y_ref, o_ref):
        o_ref[...] = o_ref[...] + x_ref[...]

    x = jnp.ones((16, 128), jnp.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    out = pl.pallas_call(read_alias, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         grid=(2,), in_specs=[spec, spec], out_specs=spec,
                         input_output_aliases={1: 0},
                         interpret=pltpu.InterpretParams())(x, x)
    assert np.isnan(np.asarray(out)).all()

    def accumulate(x_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[...]

    out = pl.pallas_call(accumulate, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32),
                         grid=(2, 3), in_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, 0))],
                         out_specs=pl.BlockSpec((8, 128), lambda i, k: (i, 0)),
                         interpret=pltpu.InterpretParams())(x)
    np.testing.assert_array_equal(np.asarray(out), 3 * np.ones((16, 128), np.float32))


def test_fori_index_in_an_interpreted_kernel_is_an_array():
    # The interpreters run kernels eagerly (disable_jit inside), where a
    # user's disable_jit gives fori_loop a Python int index (JAX's); a
    # kernel's index stays an array, as when JAX traces the kernel.
    def kernel(x_ref, o_ref):
        def body(i, acc):
            return acc + i.astype(jnp.float32)

        o_ref[...] = jax.lax.fori_loop(0, 4, body, x_ref[...])

    x = jnp.zeros((8, 128), jnp.float32)
    out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         interpret=pltpu.InterpretParams())(x)
    np.testing.assert_array_equal(np.asarray(out), 6 * np.ones((8, 128), np.float32))
    with jax.disable_jit():
        seen = []
        jax.lax.fori_loop(0, 2, lambda i, c: seen.append(type(i)) or c, 0)
    assert seen == [int, int]


def test_repeat_roll_bitcast():
    x = jnp.arange(16 * 128, dtype=jnp.int32).reshape(16, 128)
    np.testing.assert_array_equal(np.asarray(pltpu.repeat(x, 2, 0)),
                                  np.tile(np.asarray(x), (2, 1)))
    np.testing.assert_array_equal(np.asarray(pltpu.roll(x, 3, 1)),
                                  np.roll(np.asarray(x), 3, 1))
    strided = np.asarray(pltpu.roll(x, 1, 1, stride=2, stride_axis=0))
    for i in range(16):
        np.testing.assert_array_equal(strided[i], np.roll(np.asarray(x)[i], 1 + 2 * i))
    # Packing rows: two int16 rows make one int32 row (the first in the low
    # bits), and back.
    h = (jnp.arange(4 * 128, dtype=jnp.int32).reshape(4, 128) % 3000).astype(jnp.int16)
    w = pltpu.bitcast(h, jnp.int32)
    assert w.shape == (2, 128)
    hn = np.asarray(h).astype(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(np.asarray(w).view(np.uint32), hn[0::2] | (hn[1::2] << 16))
    np.testing.assert_array_equal(np.asarray(pltpu.bitcast(w, jnp.int16)), np.asarray(h))
    with pytest.raises(ValueError, match="do not pack"):
        pltpu.bitcast(h[:3], jnp.int32)
    with pytest.raises(ValueError, match="non-negative"):
        pltpu.roll(x, -1, 0)


def test_cross_check_programs_run_checked(devices8):
    # Every program of the TPU cross-check (test/data/tpu/kernels.py) gives
    # the same outputs in the checked interpreter as in the traced one, and
    # none is reported.
    example = load_example("pallas_tpu_kernels")
    plain = example.cross_check_programs()
    checked = example.cross_check_programs(interpret=pltpu.InterpretParams())
    for name, (f, args) in plain.items():
        g = checked[name][0]
        for a, b in zip(jax.tree_util.tree_leaves(f(*args)), jax.tree_util.tree_leaves(g(*args))):
            # Compiled and eager arithmetic may differ in the last bit (fused
            # multiply-adds), which a bf16 rounding can widen.
            tol = 1e-2 if a.dtype == jnp.bfloat16 else 1e-5
            np.testing.assert_allclose(np.asarray(a.astype(jnp.float32)),
                                       np.asarray(b.astype(jnp.float32)), rtol=tol, atol=tol,
                                       err_msg=name)


def test_example_script():
    # examples/pallas_tpu_kernels.py as a user runs it, with 4 CPU devices.
    import os
    import subprocess
    import sys

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    run = subprocess.run([sys.executable, os.path.join(root, "examples", "pallas_tpu_kernels.py")],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "EMBER_NUM_CPU_DEVICES": "4"})
    assert run.returncode == 0, run.stderr
    assert "double-buffered DMA: checked run ok; TPU custom calls, StableHLO characters: (1," \
        in run.stdout
    assert "flash attention: checked run ok; TPU custom calls" in run.stdout
    assert "emit_pipeline matmul: checked run ok" in run.stdout
    assert "ring all-reduce over 4 devices: checked run ok, equals the sum" in run.stdout


def test_semaphores_under_pl_names():
    # JAX 0.10.2 deprecates pltpu.semaphore_* for pl.semaphore_* (the same functions).
    from ember.experimental import pallas as pl
    from ember.experimental.pallas import tpu as pltpu

    assert pl.semaphore_signal is pltpu.semaphore_signal
    assert pl.semaphore_wait is pltpu.semaphore_wait
    assert pl.semaphore_read is pltpu.semaphore_read
    assert pl.DeviceIdType is pltpu.DeviceIdType


def _buffered_pipeline(in_mode, out_mode, params):
    """An emit_pipeline over (8, 128) blocks of a (64, 128) HBM array whose
    input blocks repeat (index i // 2) and whose output blocks repeat in
    turn (i // 4), with the given `pl.Buffered` modes (None: the default)."""
    def body(x, o):
        @pl.when(pl.program_id(0) % 4 == 0)
        def _():
            o[...] = jnp.zeros_like(o)

        o[...] += x[...] * 2

    def kernel(x_hbm, o_hbm):
        pltpu.emit_pipeline(
            body, grid=(8,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i // 2, 0), pipeline_mode=in_mode)],
            out_specs=[pl.BlockSpec((8, 128), lambda i: (i // 4, 0),
                                    pipeline_mode=out_mode)])(x_hbm, o_hbm)

    hbm = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32),
                          in_specs=[hbm], out_specs=hbm, interpret=params)


def test_emit_pipeline_buffer_counts():
    # pl.Buffered(n): n VMEM buffers for an operand's blocks, used in turn;
    # one buffer fetches (or copies out) when needed. Checked for races
    # and against NumPy in the checked and the traced interpreter.
    x = jnp.arange(64 * 128, dtype=jnp.float32).reshape(64, 128) / 100
    blocks = np.asarray(x).reshape(8, 8, 128)[:4]  # the blocks read (i // 2), each twice
    want = (2 * 2 * blocks.reshape(2, 2, 8, 128).sum(1)).reshape(16, 128)
    modes = [(pl.Buffered(1), pl.Buffered(1)), (pl.Buffered(3), pl.Buffered(2)),
             (pl.Buffered(1), None), (None, pl.Buffered(1)), (pl.Buffered(4), pl.Buffered(1))]
    for in_mode, out_mode in modes:
        for params in (pltpu.InterpretParams(), True):
            got = _buffered_pipeline(in_mode, out_mode, params)(x)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # Lowered for TPU: the buffers have the counts' slots.
    f = _buffered_pipeline(pl.Buffered(3), pl.Buffered(1), False)
    text = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "memref.alloca() : memref<3x8x128xf32" in text
    assert "memref.alloca() : memref<1x8x128xf32" in text
    assert "ember_tpu.sem_alloc : memref<3x!ember_tpu.dma_semaphore" in text
    # JAX's checks.
    with pytest.raises(NotImplementedError, match="Buffer count >2 not supported for output"):
        _buffered_pipeline(None, pl.Buffered(3), True)(x)
    with pytest.raises(ValueError, match="buffer_count must be at least 1, got 0"):
        _buffered_pipeline(pl.Buffered(0), None, True)(x)
    with pytest.raises(ValueError, match="Output buffering does not support lookahead"):
        _buffered_pipeline(None, pl.Buffered(2, use_lookahead=True), True)(x)
    with pytest.raises(NotImplementedError, match="use_lookahead"):
        _buffered_pipeline(pl.Buffered(2, use_lookahead=True), None, True)(x)


def test_pallas_call_pipeline_mode_lowered_for_tpu():
    # A pallas_call block's pl.Buffered(1) is its window's synchronous
    # pipeline mode (JAX's #tpu.pipeline_mode<synchronous>), Buffered(2)
    # double_buffered; JAX's errors for other counts.
    def kernel(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[...] * w_ref[...]

    def call(mode):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32), grid=(4,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=mode),
                      pl.BlockSpec((8, 128), lambda i: (0, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))

    x = jnp.ones((32, 128), jnp.float32)
    w = jnp.full((8, 128), 3.0, jnp.float32)
    for mode, text in ((pl.Buffered(1), "synchronous"), (pl.Buffered(2), "double_buffered")):
        np.testing.assert_allclose(np.asarray(call(mode)(x, w)), 3.0)
        mosaic = jax.jit(call(mode)).trace(x, w).lower(
            lowering_platforms=("tpu",)).as_text("mosaic")
        assert f"pipeline_mode = #ember_tpu.pipeline_mode<{text}>" in mosaic
    mosaic = jax.jit(call(pl.Buffered(1, revisit=pl.RevisitMode.ANY))).trace(x, w).lower(
        lowering_platforms=("tpu",)).as_text("mosaic")
    assert "revisit_mode = #ember_tpu.revisit_mode<any>" in mosaic
    with pytest.raises(Exception, match="RevisitMode.ANY is not supported with double"):
        jax.jit(call(pl.Buffered(2, revisit=pl.RevisitMode.ANY))).trace(x, w).lower(
            lowering_platforms=("tpu",)).as_text("mosaic")
    with pytest.raises(Exception, match=r"Only single \(1\) and double \(2\) buffering"):
        jax.jit(call(pl.Buffered(3))).trace(x, w).lower(
            lowering_platforms=("tpu",)).as_text("mosaic")
    assert issubclass(pltpu.LoweringException, Exception)


def test_masked_load_store_and_small_apis():
    # pltpu.load/store with masks, MemorySpace by name, touch, trace_value
    # and with_memory_space_constraint (JAX 0.10.2's names).
    def kernel(x_ref, o_ref, acc):
        mask = x_ref[...] > 0.5
        acc[...] = jnp.zeros_like(acc)
        pltpu.store(acc, pltpu.load(x_ref) * 2, mask=mask)
        pltpu.touch(acc)
        pltpu.trace_value("count", jnp.sum(mask.astype(jnp.int32)))
        o_ref[...] = pltpu.load(acc) + 1

    x = pltpu.with_memory_space_constraint(jnp.linspace(0, 1, 8 * 128).reshape(8, 128),
                                           pltpu.MemorySpace.VMEM)
    want = np.where(np.asarray(x) > 0.5, 2 * np.asarray(x), 0) + 1
    for params in (True, pltpu.InterpretParams()):
        out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                             scratch_shapes=[pltpu.MemorySpace.VMEM((8, 128), jnp.float32)],
                             interpret=params)(x)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    assert pltpu.MemorySpace.SMEM is pltpu.SMEM
    # Lowered for TPU: the masked store a masked vector_store (JAX's form,
    # 47th session; was a read, a select and a store).
    call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                          scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)])
    text = jax.jit(call).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert re.search(r"ember_tpu.vector_store %\S+\[.*\], %\S+ masked %\S+", text), text
    assert "arith.select" not in text
    with pytest.raises(NotImplementedError, match="only supports HBM, VMEM and SMEM"):
        pltpu.with_memory_space_constraint(x, pltpu.SEMAPHORE)


# -- several devices: remote DMAs and semaphores, checked -----------------
# Inside shard_map over one mesh axis each device runs the kernel in a
# thread of its own (switching at waits); vector clocks find the races
# whatever the interleaving. test/data/tpu/races.py has kernels with and
# without races, written once for Ember and JAX.


def _races():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "data" / "tpu" / "races.py"
    spec = importlib.util.spec_from_file_location("tpu_races", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _on_devices(kernel, scratch, **kw):
    return _races().on_devices(
        jax, functools.partial(pl.pallas_call, interpret=pltpu.InterpretParams(), **kw),
        kernel, scratch)


def _race_kernels():
    return _races().kernels(jax, jnp, pl, pltpu)


RACE_X = jnp.arange(32 * 128, dtype=jnp.float32).reshape(32, 128) / 64
# Which kernels of races.py race (JAX 0.10.2's checked interpreter agrees:
# test_race_verdicts_agree_with_jax).
RACY = {"ring_every_step": False, "ring_start_only": True, "exchange": False,
        "read_before_wait": True, "overwrite_before_send": True,
        "reuse_without_handshake": True}


def _verdicts():
    found = {}
    for name, (kernel, scratch) in _race_kernels().items():
        try:
            _on_devices(kernel, scratch)(RACE_X)
            found[name] = False
        except pltpu.InterpretError as e:
            assert re.search(r"in flight|still reading|nothing ordering the two", str(e)), e
            found[name] = True
    return found


def test_ring_all_reduce_checked_over_devices(devices8):
    want = np.tile(np.asarray(RACE_X).reshape(4, 8, 128).sum(0), (4, 1))
    f = _on_devices(*_race_kernels()["ring_every_step"])
    np.testing.assert_allclose(np.asarray(f(RACE_X)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(RACE_X)), want, rtol=1e-6)
    # With the handshake only at the start, a device's second copy may land
    # in its right neighbour's slot before that neighbour filled or sent it.
    # The traced interpreter (lanes in lock step) gives the sum regardless;
    # the checked one reports the race at the kernel's lines.
    with pytest.raises(pltpu.InterpretError,
                       match=r"(scratch 0 of device \d while the DMA into it started at "
                             r".*races\.py:\d+ on device \d is in flight|copies "
                             r"into scratch 0 of device \d, which device \d (reads|writes) at "
                             r".*races\.py:\d+ with nothing ordering the two)"):
        _on_devices(*_race_kernels()["ring_start_only"])(RACE_X)


def test_race_verdicts(devices8):
    assert _verdicts() == RACY


@pytest.mark.skipif(not os.environ.get("EMBER_JAX_PYTHON"),
                    reason="no JAX Python for the cross-check (EMBER_JAX_PYTHON; make test "
                           "sets it)")
def test_race_verdicts_agree_with_jax():
    # JAX 0.10.2's checked interpreter (detect_races=True) on the same
    # kernels, in its own process (one MLIR per process).
    import json
    import pathlib
    import subprocess

    tool = pathlib.Path(__file__).resolve().parents[2] / "tools" / "tpu" / "jax_races.py"
    out = subprocess.run([os.environ["EMBER_JAX_PYTHON"], str(tool)], capture_output=True,
                         text=True, timeout=600, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == RACY


def test_remote_hazards_each_reported(devices8):
    x = jnp.ones((32, 128), jnp.float32)
    kernels = _race_kernels()
    np.testing.assert_array_equal(np.asarray(_on_devices(*kernels["exchange"])(x)), 2.0)
    # A read of the receive buffer unordered with the neighbour's copy into
    # it: reported at the read or at the copy, whichever comes second.
    unordered_read = (r"(reads scratch 1 of device \d while the DMA into it started at "
                      r".*races\.py:\d+ on device \d is in flight|copies into scratch 1 of "
                      r"device \d, which device \d reads at .*races\.py:\d+ with nothing "
                      r"ordering the two)")
    for name in ("read_before_wait", "reuse_without_handshake"):
        with pytest.raises(pltpu.InterpretError, match=unordered_read):
            _on_devices(*kernels[name])(x)
    with pytest.raises(pltpu.InterpretError, match=r"overwrites scratch 0 of device \d while "
                                                   r"the DMA started at .* on device \d is "
                                                   r"still reading it"):
        _on_devices(*kernels["overwrite_before_send"])(x)
    scratch = kernels["exchange"][1]

    def send_right(x_ref, sbuf, rbuf, send, recv):
        me = jax.lax.axis_index("x")
        sbuf[...] = x_ref[...]
        c = pltpu.make_async_remote_copy(sbuf, rbuf, send, recv,
                                         device_id=(jax.lax.rem(me + 1, 4),))
        c.start()
        return c

    def recv_never_waited(x_ref, o_ref, sbuf, rbuf, send, recv):
        send_right(x_ref, sbuf, rbuf, send, recv).wait_send()
        o_ref[...] = x_ref[...]

    with pytest.raises(pltpu.InterpretError,
                       match=r"into scratch 1 of device \d was never waited for \(on device "
                             r"\d\)"):
        _on_devices(recv_never_waited, scratch)(x)

    def send_never_waited(x_ref, o_ref, sbuf, rbuf, send, recv):
        send_right(x_ref, sbuf, rbuf, send, recv).wait_recv()
        o_ref[...] = rbuf[...]

    with pytest.raises(pltpu.InterpretError, match=r"never waited for on its sending side"):
        _on_devices(send_never_waited, scratch)(x)

    def deadlock(x_ref, o_ref, sem):
        pltpu.semaphore_wait(sem, 1)  # nobody signals
        o_ref[...] = x_ref[...]

    with pytest.raises(pltpu.InterpretError, match=r"deadlock: no device can proceed") as e:
        _on_devices(deadlock, [pltpu.SemaphoreType.REGULAR])(x)
    # Each device's stuck wait is listed at the kernel's line.
    assert len(re.findall(r"device \d: the wait at .*test_tpu_interpret\.py:\d+ for 1 on "
                          r"semaphore scratch 0 of device \d", str(e.value))) == 4

    def out_of_range(x_ref, o_ref, sem):
        pltpu.semaphore_signal(sem, 1, device_id=(4,))
        o_ref[...] = x_ref[...]

    with pytest.raises(pltpu.InterpretError, match=r"names device 4, but the kernel runs on 4 "
                                                   r"devices"):
        _on_devices(out_of_range, [pltpu.SemaphoreType.REGULAR])(x)


def test_barrier_semaphore_and_remote_signals_checked(devices8):
    x = jnp.arange(32 * 128, dtype=jnp.float32).reshape(32, 128)

    def barrier_kernel(x_ref, o_ref):
        me = jax.lax.axis_index("x")
        barrier = pltpu.get_barrier_semaphore()
        for other in (jax.lax.rem(me + 3, 4), jax.lax.rem(me + 1, 4)):
            pltpu.semaphore_signal(barrier, 1, device_id=(other,))
        pltpu.semaphore_wait(barrier, 2)
        o_ref[...] = x_ref[...] * 3.0

    f = _on_devices(barrier_kernel, [], compiler_params=pltpu.CompilerParams(collective_id=0))
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(x) * 3)

    def one_short(x_ref, o_ref):
        me = jax.lax.axis_index("x")
        pltpu.semaphore_signal(pltpu.get_barrier_semaphore(), 1,
                               device_id=(jax.lax.rem(me + 1, 4),))
        pltpu.semaphore_wait(pltpu.get_barrier_semaphore(), 2)
        o_ref[...] = x_ref[...]

    with pytest.raises(pltpu.InterpretError, match=r"deadlock: no device can proceed") as e:
        _on_devices(one_short, [], compiler_params=pltpu.CompilerParams(collective_id=0))(x)
    assert re.search(r"device \d: the wait at .*test_tpu_interpret\.py:\d+ for 2 on semaphore "
                     r"get_barrier_semaphore\(\) of device \d, which holds 1", str(e.value))

    def signal_kernel(x_ref, o_ref, sem):
        me = jax.lax.axis_index("x")
        pltpu.semaphore_signal(sem, me + 1, device_id={"x": jax.lax.rem(me + 1, 4)})
        pltpu.semaphore_wait(sem, jax.lax.rem(me + 3, 4) + 1)  # what the left one sends
        o_ref[...] = jnp.full(o_ref.shape, me, jnp.float32)

    got = np.asarray(_on_devices(signal_kernel, [pltpu.SemaphoreType.REGULAR])(x))[::8, 0]
    np.testing.assert_array_equal(got, [0, 1, 2, 3])
