"""`pl.core_map` and `pl.kernel` over a TPU device's TensorCores
(`pltpu.create_tensorcore_mesh`), run by the interpreter with the cores as
lanes: per-core programs, remote copies and barrier signals between cores,
`emit_pipeline` split over the cores (`core_axis_name`), shared memory
behind the refs the cores close over. JAX 0.10.2 cannot run these on a CPU
(its TPU interpret mode has no TensorCore mesh there), so the checks are
against NumPy, as JAX's core_map guide checks itself."""

import os
import subprocess
from functools import partial

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember.experimental import pallas as pl
from ember.experimental.pallas import tpu as pltpu
from ember.sharding import NamedSharding


def _tc(n=2):
    return pltpu.create_tensorcore_mesh("core", num_cores=n)


def test_mesh_as_jax_prints_it():
    mesh = _tc()
    assert repr(mesh) == ("TensorCoreMesh(devices=array([TensorCore(id=0), TensorCore(id=1)], "
                          "dtype=object), axis_names=('core',))")
    assert mesh.shape == {"core": 2} and mesh.size == 2 and len(mesh.devices) == 2
    with pytest.raises(ValueError, match="both devices and num_cores"):
        pltpu.create_tensorcore_mesh("core", devices=jax.devices(), num_cores=2)
    # A CPU device has no TensorCores to count.
    with pytest.raises(ValueError, match="num_cores="):
        pltpu.create_tensorcore_mesh("core")


def _load_kernels():
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "..", "data", "tpu", "kernels.py")
    spec = importlib.util.spec_from_file_location("tpu_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._build(jax, jnp, pl, pltpu)[1]


# JAX's core_map guide's kernel (test/data/tpu/kernels.py, also run on a
# TPU): each core takes its column block, meets the other core at the
# barrier, sends its block to it, and writes twice what it received.
_swap_kernel = _load_kernels()["exchange_kernel"]


def _swapped(x):
    half = x.shape[1] // 2
    return np.concatenate([x[:, half:], x[:, :half]], axis=1) * 2


def test_cores_swap_blocks_under_shard_map(devices8):
    mesh = jax.make_mesh((8,), ("device",))
    tc = _tc()
    spec = jax.P("device", None)
    block = (32 // 8, 256 // 2)
    scratch = [pltpu.VMEM(block, jnp.float32)] * 3 + [pltpu.SemaphoreType.DMA] * 3

    # core_map over refs made in the shard_map body.
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
    def with_core_map(x):
        x_ref = jax.new_ref(x)
        o_ref = jax.new_ref(lax.empty(x.shape, x.dtype))

        @pl.core_map(tc, compiler_params=pltpu.CompilerParams(collective_id=0))
        def _():
            pl.run_scoped(partial(_swap_kernel, x_ref, o_ref), *scratch)

        return o_ref[...]

    # The same through pl.kernel.
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
    def with_kernel(x):
        return pl.kernel(_swap_kernel, out_type=x, mesh=tc, scratch_types=scratch,
                         compiler_params=pltpu.CompilerParams(collective_id=0))(x)

    x = jax.device_put(jax.random.normal(jax.random.key(0), (32, 256)), NamedSharding(mesh, spec))
    want = np.concatenate([_swapped(b) for b in np.split(np.asarray(x), 8)])
    np.testing.assert_array_equal(np.asarray(with_core_map(x)), want)
    np.testing.assert_array_equal(np.asarray(with_kernel(x)), want)


def test_kernel_outside_jit_with_a_decorator_and_pytrees():
    tc = _tc()

    # Outputs as a sequence (one ref each), a dict of scratch as keywords,
    # a pytree of inputs.
    @pl.kernel(out_type=(jax.ShapeDtypeStruct((2, 8), jnp.float32),
                         jax.ShapeDtypeStruct((2,), jnp.int32)), mesh=tc,
               scratch_types={"tmp": pltpu.VMEM((8,), jnp.float32)})
    def k(inputs, total_ref, who_ref, *, tmp):
        x_ref, scale_ref = inputs
        c = lax.axis_index("core")
        tmp[...] = x_ref[c] * scale_ref[...]
        total_ref[pl.ds(c, 1), :] = tmp[...][None]
        who_ref[pl.ds(c, 1)] = jnp.full((1,), c + 10, jnp.int32)

    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    total, who = k((jnp.asarray(x), jnp.float32(3.0)))
    np.testing.assert_array_equal(np.asarray(total), x * 3)
    np.testing.assert_array_equal(np.asarray(who), [10, 11])


def test_ref_arguments_are_updated_in_place():
    tc = _tc()
    acc = jax.new_ref(jnp.zeros((2, 4), jnp.float32))

    def k(acc_ref):
        c = lax.axis_index("core")
        acc_ref[pl.ds(c, 1), :] += (c + 1).astype(jnp.float32)

    pl.kernel(k, out_type=(), mesh=tc)(acc)
    pl.kernel(k, out_type=(), mesh=tc)(acc)
    np.testing.assert_array_equal(np.asarray(acc[...]), [[2] * 4, [4] * 4])
    with pytest.raises(NotImplementedError, match="same ref"):
        pl.kernel(lambda a, b: None, mesh=tc)(acc, acc)


def test_shared_memory_keeps_what_no_core_wrote():
    # Each core writes its own elements of the closed-over ref; the rest
    # keep their values, and a write is seen even when it only flips the
    # sign of a zero.
    tc = _tc(4)
    ref = jax.new_ref(jnp.asarray([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], jnp.float32))

    @jax.jit
    def run():
        @pl.core_map(tc)
        def _():
            c = lax.axis_index("core")

            @pl.when(c == 0)
            def _():
                ref[0] = jnp.float32(-0.0)

            @pl.when(c > 0)
            def _():
                ref[pl.ds(2 * c, 1)] = jnp.full((1,), 100.0, jnp.float32) * c

    run()
    got = np.asarray(ref[...])
    np.testing.assert_array_equal(got, [0, 1, 100, 3, 200, 5, 300, 7])
    assert np.signbit(got[0])


def _pipeline_kernel(x_hbm, o_hbm, *, semantics=(pltpu.PARALLEL, pltpu.ARBITRARY), rows=8):
    def body(x_blk, o_blk):
        # Which core ran the block, and the block's local grid row.
        o_blk[...] = (x_blk[...] + 1) * 0 + lax.axis_index("core") * 100 + pl.program_id(0)

    pltpu.emit_pipeline(
        body, grid=(x_hbm.shape[0] // rows, x_hbm.shape[1] // 128),
        in_specs=[pl.BlockSpec((rows, 128), lambda i, j: (i, j))],
        out_specs=[pl.BlockSpec((rows, 128), lambda i, j: (i, j))],
        core_axis_name="core", dimension_semantics=semantics)(x_hbm, o_hbm)


def test_emit_pipeline_split_over_cores():
    tc = _tc()
    x = jnp.zeros((64, 256), jnp.float32)
    y = np.asarray(jax.jit(lambda x: pl.kernel(_pipeline_kernel, out_type=x, mesh=tc)(x))(x))
    # 8 block rows: core 0 the first four, core 1 the last four, each
    # numbering its own rows from 0 (JAX's split).
    want = np.repeat([0, 1, 2, 3, 100, 101, 102, 103], 8)[:, None] * np.ones((1, 256))
    np.testing.assert_array_equal(y, want)

    def add_one(x_hbm, o_hbm):
        pltpu.emit_pipeline(
            lambda a, b: b.__setitem__(Ellipsis, a[...] + 1), grid=(8, 2),
            in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
            out_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
            core_axis_name="core", dimension_semantics=(pltpu.PARALLEL, pltpu.ARBITRARY),
        )(x_hbm, o_hbm)

    x = jax.random.normal(jax.random.key(1), (64, 256))
    np.testing.assert_array_equal(np.asarray(pl.kernel(add_one, out_type=x, mesh=tc)(x)),
                                  np.asarray(x) + 1)


def test_emit_pipeline_split_errors():
    tc = _tc()
    x = jnp.zeros((64, 256), jnp.float32)
    with pytest.raises(NotImplementedError, match="without parallel grid dimensions"):
        pl.kernel(partial(_pipeline_kernel, semantics=(pltpu.ARBITRARY, pltpu.ARBITRARY)),
                  out_type=x, mesh=tc)(x)
    with pytest.raises(NotImplementedError, match=r"\(3, 2\) divides into 2 cores"):
        x = jnp.zeros((24, 256), jnp.float32)
        pl.kernel(_pipeline_kernel, out_type=x, mesh=tc)(x)
    with pytest.raises(ValueError, match="cannot both be provided"):
        pltpu.emit_pipeline(lambda *a: None, grid=(2,), core_axis=0, core_axis_name="core")


def test_remote_copy_to_an_axis_that_is_not_there():
    tc = _tc()

    def k(o_ref, sem):
        pl.semaphore_signal(sem, 1, device_id={"cores": 0})

    with pytest.raises(NameError, match="'cores'"):
        pl.kernel(k, out_type=jax.ShapeDtypeStruct((2,), jnp.float32), mesh=tc,
                  scratch_types=[pltpu.SemaphoreType.REGULAR])()


_GUIDE = "/work/.mirror/jax-ml+jax/repo"


@pytest.mark.skipif(not os.path.isdir(_GUIDE), reason="no jax-ml/jax snapshot here")
def test_jax_core_map_guide_runs(tmp_path):
    # JAX's docs/pallas/tpu/core_map.md, TensorCore part, with the import
    # changed; its own assertions check the values. On a CPU the core count
    # is given (JAX asks the TPU), and the SparseCore part is left out
    # (`pltpu.get_tpu_info`, `tpu_sc` are not in Ember).
    import re

    text = subprocess.run(["git", "--git-dir", _GUIDE, "show", "HEAD:docs/pallas/tpu/core_map.md"],
                          capture_output=True, text=True).stdout
    if not text:
        pytest.skip("the snapshot has no core_map guide")
    cells = re.findall(r"```python\n(.*?)```", text, re.S)
    cells = [c for c in cells if "sc_" not in c]
    src = "\n".join(cells)
    src = src.replace("from jax.experimental.pallas import tpu_sc as plsc\n", "")
    src = src.replace("tpu_info = pltpu.get_tpu_info()", "tpu_info = None")
    src = src.replace("{tpu_info.chip_version}", "(interpreted)")
    src = src.replace("create_tensorcore_mesh('core')",
                      "create_tensorcore_mesh('core', num_cores=2)")
    src = re.sub(r"\bjax\b", "ember", src)
    script = tmp_path / "core_map_guide.py"
    script.write_text(src + "\nprint('guide ok')\n")
    import sys

    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "EMBER_NUM_CPU_DEVICES": "4",
                                           "EMBER_PLATFORMS": "cpu"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "There are 4 devices, and 2 cores each." in run.stdout
    assert "guide ok" in run.stdout


def _lower_tpu(f, *args, view="mosaic"):
    return jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)).as_text(view)


def _slices_kernel(x_hbm, o_hbm, buf, sem):
    c = lax.axis_index("core")
    w = x_hbm.shape[1] // lax.axis_size("core")
    pltpu.async_copy(x_hbm.at[:, pl.ds(c * w, w)], buf, sem).wait()
    buf[...] = buf[...] * 2 + c.astype(jnp.float32)
    pltpu.async_copy(buf, o_hbm.at[:, pl.ds(c * w, w)], sem).wait()


def test_core_map_lowers_for_tpu_as_a_kernel_over_the_cores():
    # As JAX lowers a core_map over TensorCores: a kernel whose grid is the
    # cores (lax.axis_index is the grid index), every ref an operand in
    # HBM, the written ones outputs aliased to them. The CPU runs the same
    # program with the cores as lanes.
    tc = _tc(2)

    def f(x):
        x_ref, o_ref = jax.new_ref(x), jax.new_ref(jnp.zeros_like(x))

        @pl.core_map(tc)
        def slices():
            pl.run_scoped(partial(_slices_kernel, x_ref, o_ref),
                          pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA)
        return o_ref[...]

    x = jnp.arange(8 * 256, dtype=jnp.float32).reshape(8, 256)
    want = np.asarray(x) * 2
    want[:, 128:] += 1
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x)), want)
    mosaic = _lower_tpu(f, x)
    assert "func.func @slices(%arg0: i32, %arg1: memref<8x256xf32, " \
           "#ember_tpu.memory_space<any>>, %arg2: memref<8x256xf32, " \
           "#ember_tpu.memory_space<any>>, %arg3: memref<8x256xf32, " \
           "#ember_tpu.memory_space<any>>)" in mosaic, mosaic
    assert "iteration_bounds = array<i64: 2>" in mosaic
    assert "dimension_semantics = [#ember_tpu.dimension_semantics<parallel>]" in mosaic
    # The core's column offset is the grid index times 128.
    assert "arith.muli %arg0, %c128_i32" in mosaic
    hlo = _lower_tpu(f, x, view="stablehlo")
    assert hlo.count('"tpu_custom_call"') == 1 and 'kernel_name = "slices"' in hlo
    # o_ref (operand 1) is written: the kernel's one output, aliased to it.
    assert "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = " \
           "[], operand_index = 1, operand_tuple_indices = []>]" in hlo, hlo


def test_kernel_outputs_are_results_and_ref_arguments_aliased():
    tc = _tc(2)

    def body(x_hbm, acc_hbm, o_hbm, buf, sem):
        _slices_kernel(x_hbm, o_hbm, buf, sem)
        pltpu.sync_copy(acc_hbm, buf)  # (acc is read and written back)
        pltpu.sync_copy(buf, acc_hbm)

    def f(x, acc):
        acc_ref = jax.new_ref(acc)
        out = pl.kernel(body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), mesh=tc,
                        scratch_types=[pltpu.VMEM((8, 128), jnp.float32),
                                       pltpu.SemaphoreType.DMA])(x, acc_ref)
        return out, acc_ref[...]

    x = jnp.arange(8 * 256, dtype=jnp.float32).reshape(8, 256)
    acc = jnp.ones((8, 128), jnp.float32)
    out, acc_out = jax.jit(f)(x, acc)
    want = np.asarray(x) * 2
    want[:, 128:] += 1
    np.testing.assert_array_equal(np.asarray(out), want)
    np.testing.assert_array_equal(np.asarray(acc_out), np.ones((8, 128)))
    mosaic = _lower_tpu(f, x, acc)
    # Operands x and acc; outputs the result and acc; scratch operands the
    # VMEM buffer and the semaphore (pl.kernel's scratch_types, as JAX).
    assert "func.func @body(%arg0: i32, %arg1: memref<8x256xf32, #ember_tpu.memory_space<any>>," \
           " %arg2: memref<8x128xf32, #ember_tpu.memory_space<any>>, %arg3: memref<8x256xf32, " \
           "#ember_tpu.memory_space<any>>, %arg4: memref<8x128xf32, " \
           "#ember_tpu.memory_space<any>>, %arg5: memref<8x128xf32, " \
           "#ember_tpu.memory_space<vmem>>, %arg6: memref<!ember_tpu.dma_semaphore, " \
           "#ember_tpu.memory_space<semaphore_mem>>)" in mosaic, mosaic
    assert "scratch_operands = 2" in mosaic
    hlo = _lower_tpu(f, x, acc, view="stablehlo")
    assert "output_tuple_indices = [1], operand_index = 1" in hlo, hlo


def test_core_map_kernels_tpu_cannot_run_are_lowering_errors():
    tc = _tc(2)
    x = jnp.ones((8, 256), jnp.float32)

    def closes_over_array(x):
        o_ref = jax.new_ref(jnp.zeros_like(x))

        @pl.core_map(tc)
        def k():
            pl.run_scoped(lambda buf, sem: (buf.__setitem__(Ellipsis, x[:, :128]),
                                            pltpu.async_copy(buf, o_ref.at[:, :128], sem).wait()),
                          pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA)
        return o_ref[...]

    # The CPU runs it; TPU kernels take refs only.
    np.testing.assert_array_equal(np.asarray(jax.jit(closes_over_array)(x))[:, :128], 1)
    with pytest.raises(NotImplementedError, match="closes over an array value"):
        _lower_tpu(closes_over_array, x)

    def reads_hbm(x):
        x_ref, o_ref = jax.new_ref(x), jax.new_ref(x)

        @pl.core_map(tc)
        def k():
            o_ref[...] = x_ref[...] + 1
        return o_ref[...]

    np.testing.assert_array_equal(np.asarray(jax.jit(reads_hbm)(x)), 2)
    with pytest.raises(NotImplementedError, match=r"test_pallas_core_map.py\":\d+:\d+\)\): "
                       r".*reads or writes a buffer in HBM \(pl.ANY\)"):
        _lower_tpu(reads_hbm, x)

    def with_semantics(x):
        o_ref = jax.new_ref(x)

        @pl.core_map(tc, compiler_params=pltpu.CompilerParams(
            dimension_semantics=(pltpu.PARALLEL,)))
        def k():
            pass
        return o_ref[...]

    # (JAX's error, when the program is traced.)
    with pytest.raises(ValueError, match="dimension_semantics must be None for TensorCoreMesh"):
        jax.jit(with_semantics)(x)


def test_exchange_between_cores_lowers_with_core_ids():
    # `device_id={'core': c}` in a kernel lowered for TPU: Mosaic's core_id
    # on the barrier signal, the remote copy's start and its receive wait
    # (no device_id: this device), as JAX lowers it; no has_communication
    # (JAX's config for copies between the cores of one device).
    tc = _tc(2)
    scratch = [pltpu.VMEM((8, 128), jnp.float32)] * 3 + [pltpu.SemaphoreType.DMA] * 3

    def f(x):
        return pl.kernel(_swap_kernel, out_type=x, mesh=tc, scratch_types=scratch,
                         compiler_params=pltpu.CompilerParams(collective_id=0))(x)

    x = jnp.arange(8 * 256, dtype=jnp.float32).reshape(8, 256)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x)), _swapped(np.asarray(x)))
    mosaic = _lower_tpu(f, x)
    assert "ember_tpu.sem_barrier" in mosaic
    signal = [ln for ln in mosaic.splitlines() if "ember_tpu.sem_signal" in ln]
    assert len(signal) == 1 and "core_id" in signal[0] and "device_id" not in signal[0], signal
    start = [ln for ln in mosaic.splitlines() if "enqueue_dma" in ln and "source_semaphore" in ln]
    assert len(start) == 1 and "core_id(" in start[0] and "device_id" not in start[0], start
    waits = [ln for ln in mosaic.splitlines() if "wait_dma2" in ln and "core_id" in ln]
    # The send wait (JAX's placeholder device and core) and the receive wait.
    assert len(waits) == 2, waits
    hlo = _lower_tpu(f, x, view="stablehlo")
    assert "collective_id" in hlo and "has_communication" not in hlo
