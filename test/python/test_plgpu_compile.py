"""plgpu kernels compiled for NVIDIA GPUs (mosaic_gpu_compile.py), without a
GPU: the kernel form is checked op by op, the PTX by ptxas (sm_90a and
sm_100a), and what is not compiled yet is a NotImplementedError at the
kernel's line. The same kernels run in the interpreter against NumPy."""

import functools
import pathlib
import re
import sys

import numpy as np
import pytest
from test_cuda_target import PTXAS, ptxas_check
from test_pallas_mosaic_gpu import emit_pipeline_matmul_kernel, warp_specialized_matmul_kernel

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.pallas import mosaic_gpu_compile as mgc
from ember.experimental import pallas as pl
from ember.experimental.pallas import mosaic_gpu as plgpu

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import pallas_gpu_kernels as examples  # noqa: E402

needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


def test_elementwise_list_is_the_dialects():
    # The ops applied to each thread's part of an array are exactly the
    # ember ops with the Elementwise trait.
    td = (ROOT / "dialects" / "EmberOps.td").read_text()
    classes = {m.group(1) for m in re.finditer(
        r"^class (\w+)<.*?\n\s*:\s*Ember_Op<mnemonic,([^{]*)\{", td, re.M)
        if "Elementwise" in m.group(2)}
    names = {f"ember.{m.group(3)}" for m in re.finditer(
        r'^def (\w+)\s*:\s*(\w+)<"(\w+)"([^{;]*)', td, re.M)
        if m.group(2) in classes or (m.group(2) == "Ember_Op" and "Elementwise" in m.group(4))}
    assert len(names) > 50
    assert names == set(mgc.ELEMENTWISE)


def _seed_kernel():
    x = ember.ShapeDtypeStruct((4, 8, 16), np.float32)
    return examples.collective_smem_reuse(True).lower(x)


def test_collective_smem_reuse_kernel_form():
    # The seed's kernel (2-block cluster, multicast copies, a ClusterBarrier
    # between steps): each block loads half of each tile for both blocks,
    # both expect the whole tile, and the ClusterBarrier arrives on both
    # blocks' barriers.
    k = _seed_kernel()
    assert k.grid == (2, 1, 1) and k.cluster == (2,) and k.block == (128, 1, 1)
    # One descriptor: operand 0 in boxes of half a tile.
    assert [(o, b) for o, b, _, _ in k.tma_descriptors] == [(0, (1, 4, 16))]
    text = k.as_text("kernel")
    assert "gpu.launch clusters" in text
    assert text.count("ember_gpu.copy_gmem_to_smem") == 4
    assert text.count("multicast = ") == 4
    assert text.count("expect_tx = ") == 4  # 8 x 16 f32 = 512 bytes each
    assert "arith.constant 512 : i32" in text
    assert text.count("cta(") == 8  # 4 steps x 2 peers
    assert "ember_gpu.barrier_init" in text and "ember_gpu.fence_barrier_init" in text
    loops = k.as_text("loops")
    assert "nvvm.cluster_dim = array<i32: 2, 1, 1>" in loops
    assert "ember." not in loops.replace("ember_gpu.", "")  # every ember op lowered
    assert "memref.alloc(" not in loops  # no heap allocation in the kernel
    assert "scf.for" not in loops  # each thread's part unrolled (registers)


@needs_ptxas
@pytest.mark.parametrize("chip", ["sm_90a", "sm_100a"])
def test_collective_smem_reuse_compiles_for_the_gpu(chip, tmp_path):
    x = ember.ShapeDtypeStruct((4, 8, 16), np.float32)
    k = examples.collective_smem_reuse(True).lower(x, chip=chip)
    ptx = ptxas_check(k.as_text("binary"), tmp_path, chip)[k.name]
    for instr in [".reqnctapercluster 2, 1, 1", "mbarrier.init.shared.b64",
                  "fence.mbarrier_init.release.cluster", "barrier.cluster.arrive",
                  "cp.async.bulk.tensor.3d.shared::cluster.global.tile", ".multicast::cluster",
                  "mapa.shared::cluster", "mbarrier.arrive.release.cluster.shared::cluster",
                  "mbarrier.try_wait.parity.shared.b64", "__dynamic_shmem__"]:
        assert instr in ptx, instr
    assert ".local" not in ptx  # arrays stay in registers


def test_unguarded_kernel_compiles_without_cluster_barrier_arrivals():
    x = ember.ShapeDtypeStruct((4, 8, 16), np.float32)
    text = examples.collective_smem_reuse(False).lower(x).as_text("kernel")
    assert "cta(" not in text and text.count("ember_gpu.copy_gmem_to_smem") == 4


BM = 8


def _elementwise_kernel(num_threads=1):
    def body(x_ref, o_ref, x_smem, o_smem, bar):
        i = lax.axis_index("m")
        plgpu.copy_gmem_to_smem(x_ref.at[pl.ds(i * BM, BM)], x_smem, bar)
        plgpu.barrier_wait(bar)
        x = x_smem[...]
        o_smem[...] = jnp.tanh(x * 2.0 + 1.0) * x - jnp.exp(-x)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_ref.at[pl.ds(i * BM, BM)])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((64, 128), np.float32),
                        grid=(8,), grid_names=("m",), num_threads=num_threads,
                        thread_name="wg",
                        scratch_shapes=[plgpu.SMEM((BM, 128), np.float32),
                                        plgpu.SMEM((BM, 128), np.float32), plgpu.Barrier(1)])


X = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)


def test_elementwise_kernel_interprets_and_compiles(tmp_path):
    k = _elementwise_kernel()
    np.testing.assert_allclose(np.asarray(k(X)), np.tanh(X * 2 + 1) * X - np.exp(-X),
                               rtol=2e-6, atol=2e-6)
    c = k.lower(X)
    assert c.grid == (8, 1, 1) and c.cluster == ()
    # Input tiles in, output tiles out: one descriptor each.
    assert [(o, b) for o, b, _, _ in c.tma_descriptors] == [(0, (8, 128)), (1, (8, 128))]
    text = c.as_text("kernel")
    # 1024 elements over 128 threads: 8 per thread, the ops on tensor<8xf32>.
    assert re.search(r"ember\.tanh %\S+ : tensor<8xf32>", text)
    assert "ember_gpu.commit_smem" in text and "ember_gpu.wait_smem_to_gmem 0" in text
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
        assert re.search(r"cp\.async\.bulk\.wait_group\s+0;", ptx) and ".local" not in ptx


def _loop_kernel():
    def body(x_ref, o_ref, smem, bars):
        wg = lax.axis_index("wg")

        @pl.loop(0, 4)
        def _(s):
            slot = s % 2

            @pl.when(wg == 0)
            def _():
                plgpu.copy_gmem_to_smem(x_ref.at[s], smem.at[slot], bars.at[slot])

            plgpu.barrier_wait(bars.at[slot])
            o_ref[s] = smem[slot] * 2.0 + wg.astype(jnp.float32)

    return plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((4, 8, 128), np.float32),
                        num_threads=2, thread_name="wg",
                        scratch_shapes=[plgpu.SMEM((2, 8, 128), np.float32),
                                        plgpu.Barrier(1, num_barriers=2)])


def test_loops_and_when_compile(tmp_path):
    # pl.loop is an scf.for with the barriers' phases in memory; pl.when an
    # scf.if; a ring of two SMEM slots picked at run time.
    c = _loop_kernel().lower(np.zeros((4, 8, 128), np.float32))
    assert c.block == (256, 1, 1)
    text = c.as_text("kernel")
    assert "scf.for" in text and "memref.reinterpret_cast" in text
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_cluster_barrier_with_two_warpgroups_syncs_each_warpgroup(tmp_path):
    def body(x_ref, o_ref, smem, bar, cbar):
        b = lax.axis_index("cl")
        plgpu.copy_gmem_to_smem(x_ref.at[b], smem, bar)
        plgpu.barrier_wait(bar)
        o_ref[b] = smem[...] + 1.0
        plgpu.barrier_arrive(cbar)
        plgpu.barrier_wait(cbar)

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((2, 8, 16), np.float32),
                     cluster=(2,), cluster_names=("cl",), num_threads=2, thread_name="wg",
                     scratch_shapes=[plgpu.SMEM((8, 16), np.float32), plgpu.Barrier(1),
                                     plgpu.ClusterBarrier(("cl",), num_arrivals=2)])
    x = np.arange(2 * 8 * 16, dtype=np.float32).reshape(2, 8, 16)
    c = k.lower(x)
    text = c.as_text("kernel")
    # A named barrier per warpgroup (128 threads) before its arrivals.
    assert "nvvm.barrier" in text
    # An arrival on each block's barrier from both warpgroups of both blocks.
    assert "arrivals = 4" in text
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert "barrier.sync" in ptx or "bar.sync" in ptx


@pytest.mark.parametrize("what,make", [
    ("a sort", lambda ref: jnp.sort(ref[...], axis=0)),
    ("a gather", lambda ref: ref[...][jnp.array([3, 1, 2])]),
])
def test_unsupported_array_ops_raise_at_the_kernel_line(what, make):
    def body(x_ref, o_ref):
        o_ref[...] = jnp.broadcast_to(make(x_ref), o_ref.shape).astype(np.float32)

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128, 128), np.float32))
    with pytest.raises(NotImplementedError, match=r"test_plgpu_compile\.py:\d+"):
        k.lower(np.zeros((128, 128), np.float32))


def test_interpreted_only_features_raise():
    def body(a_ref, b_ref, o_ref, tmem):
        plgpu.tcgen05_mma(tmem, a_ref, b_ref, a_scale=a_ref)
        o_ref[...] = a_ref[...]

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((64, 64), np.float32),
                     scratch_shapes=[plgpu.TMEM((128, 64), np.float32)])
    a = np.zeros((64, 64), np.float32)
    with pytest.raises(NotImplementedError, match="block-scaled and sparse MMAs are not "
                                                  "compiled"):
        k.lower(a, a)

    def loop_body(x_ref, o_ref):
        o_ref[...] = lax.scan(lambda c, _: (c * 2.0, None), x_ref[...], None, length=3)[0]

    k = plgpu.kernel(loop_body, out_shape=ember.ShapeDtypeStruct((128,), np.float32))
    with pytest.raises(NotImplementedError, match="this `lax` control flow"):
        k.lower(np.zeros((128,), np.float32))


def test_large_replicated_arrays_are_refused():
    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0  # 100 x 100: not a multiple of 128

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((100, 100), np.float32))
    with pytest.raises(NotImplementedError, match="every thread would hold all of it"):
        k.lower(np.zeros((100, 100), np.float32))


def test_small_replicated_arrays_compile(tmp_path):
    # 16 elements: every thread computes them; one thread stores them.
    def body(x_ref, o_ref):
        o_ref[...] = jnp.cumsum(x_ref[...]) * 2.0

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((16,), np.float32))
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(k(x)), np.cumsum(x) * 2)
    c = k.lower(x)
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_pipeline_runs_from_ember_opt(tmp_path):
    # The named pipeline is ember-opt's too (the kernel form as input).
    import subprocess

    path = tmp_path / "k.mlir"
    k = _seed_kernel()
    path.write_text(k.as_text("kernel"))
    opt = ROOT / "build" / "dev" / "bin" / "ember-opt"
    if not opt.exists():
        pytest.skip("ember-opt not built")
    r = subprocess.run([str(opt), str(path), "--ember-gpu-kernel"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert f"gpu.module @{k.name}" in r.stdout and "gpu.launch_func" in r.stdout


def _blocked_pallas_call():
    def kernel(x_ref, y_ref, o_ref):
        i = pl.program_id(0)
        o_ref[...] = jnp.maximum(x_ref[...], y_ref[...]) * (i + 1).astype(jnp.float32)

    spec = pl.BlockSpec((64, 128), lambda i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((128, 256), np.float32),
                          grid=(2, 2), in_specs=[spec, spec], out_specs=spec)


def test_pallas_call_compiles_for_the_gpu(tmp_path):
    # A grid point per block of 128 threads; the blocks are windows of the
    # operands in global memory, read and written by every thread's part.
    f = _blocked_pallas_call()
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 128, 256)).astype(np.float32)
    want = np.maximum(x, y) * np.repeat([1.0, 2.0], 64)[:, None]
    np.testing.assert_allclose(np.asarray(f(x, y)), want, rtol=1e-6)
    c = f.lower(x, y)
    assert c.grid == (2, 2, 1) and c.block == (128, 1, 1) and c.tma_descriptors == []
    text = c.as_text("kernel")
    # 64 x 128 elements: 64 per thread.
    assert re.search(r"ember\.max %\S+, %\S+ : tensor<64xf32>", text)
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        # Each thread's runs of 4 f32 move as 16-byte accesses.
        assert "ld.global.v4" in ptx or "ld.global.nc.v4" in ptx
        assert "st.global.v4" in ptx and ".local" not in ptx


def test_pallas_call_with_overhanging_blocks(tmp_path):
    # Rows of 96 over 200: the last block overhangs by 88 rows, so its reads
    # past the end give NaN (as the interpreter's) and its writes there are
    # dropped; a row softmax of 100 columns in blocks of 128 likewise.
    spec = pl.BlockSpec((96, 128), lambda i: (i, 0))
    f = pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * 2.0 + 1.0),
                       out_shape=ember.ShapeDtypeStruct((200, 128), np.float32),
                       grid=(3,), in_specs=[spec], out_specs=spec)
    x = np.random.default_rng(4).standard_normal((200, 128)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), 2 * x + 1, rtol=1e-6)
    c = f.lower(x)
    text = c.as_text("kernel")
    # Each access compares its row with 200 (and its column with 128).
    assert "arith.constant 200 : index" in text and "arith.select" in text
    assert "0x7FC00000" in text  # the NaN read outside
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)

    def softmax(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        o_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)

    row = pl.BlockSpec((8, 128), lambda i: (i, 0))
    g = pl.pallas_call(softmax, out_shape=ember.ShapeDtypeStruct((16, 100), np.float32),
                       grid=(2,), in_specs=[row], out_specs=row)
    y = np.random.default_rng(5).standard_normal((16, 100)).astype(np.float32)
    out = np.asarray(g(y))
    assert out.shape == (16, 100)
    # (The overhang reads NaN, so the row's max and sum are NaN, as in JAX's
    # interpreter: the kernel must mask them itself.)
    assert np.isnan(out).all()
    c = g.lower(y)
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_jit_program_lowered_for_cuda_launches_the_compiled_pallas_call(tmp_path):
    # Inside a jit program lowered for cuda, the pallas_call is a call of
    # its compiled kernel's launch; the rest of the program stays generic
    # kernels. A kernel the compiler refuses (a sort) keeps the
    # interpreter's generic kernels.
    f = _blocked_pallas_call()

    def prog(x, y):
        return jnp.tanh(f(x, y)) + 1.0

    x = np.ones((128, 256), np.float32)
    np.testing.assert_allclose(np.asarray(ember.jit(prog)(x, x)),
                               np.tanh(np.repeat([[1.0], [2.0]], 64, 0) * np.ones((1, 256))) + 1,
                               rtol=1e-6)
    low = ember.jit(prog).trace(x, x).lower(lowering_platforms=("cuda",))
    kernels = low.as_text("kernels")
    assert re.search(r"gpu\.module @pallas_kernel_\d+_gpu", kernels)
    assert re.search(r"call @pallas_kernel_\d+_gpu_host", kernels)
    assert not re.search(r"gpu\.module @pallas_kernel_\d+_kernel", kernels)
    if PTXAS is not None:
        modules = ptxas_check(low.as_text("binary"), tmp_path)
        assert any(n.endswith("_gpu") for n in modules)

    def summing(x_ref, o_ref):
        o_ref[...] = jnp.sort(x_ref[...], axis=0)

    g = pl.pallas_call(summing, out_shape=ember.ShapeDtypeStruct((128, 128), np.float32))
    low = ember.jit(lambda x: g(x) * 2.0).trace(
        np.ones((128, 128), np.float32)).lower(lowering_platforms=("cuda",))
    kernels = low.as_text("kernels")
    assert "_gpu_host" not in kernels and re.search(r"gpu\.module @pallas_summing_\d+_kernel",
                                                    kernels)


def test_whole_array_reductions_compile(tmp_path):
    # Each thread reduces its part, then gpu.all_reduce combines the
    # warpgroup's partials (max propagating NaNs: maximumf).
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = (x - jnp.max(x)) / jnp.sum(jnp.abs(x))

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((64, 128), np.float32))
    x = np.random.default_rng(2).standard_normal((64, 128)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), (x - x.max()) / np.abs(x).sum(), rtol=1e-5,
                               atol=1e-8)
    c = f.lower(x)
    text = c.as_text("kernel")
    assert re.search(r"gpu\.all_reduce\s+maximumf", text)
    assert re.search(r"gpu\.all_reduce\s+add", text)
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert "shfl.sync.bfly" in ptx


def _softmax_call(rows=64, width=128):
    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)

    spec = pl.BlockSpec((rows, width), lambda i: (i, 0))
    return pl.pallas_call(softmax_kernel,
                          out_shape=ember.ShapeDtypeStruct((4 * rows, width), np.float32),
                          grid=(4,), in_specs=[spec], out_specs=spec)


def test_row_softmax_compiles(tmp_path):
    # Reductions along rows: each thread reduces its runs, a butterfly of
    # xor shuffles within the row's lanes gives the totals, and the
    # broadcast back along the rows spreads them over the runs.
    f = _softmax_call()
    x = np.random.default_rng(3).standard_normal((256, 128)).astype(np.float32)
    want = np.exp(x - x.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5, atol=1e-7)
    c = f.lower(x)
    text = c.as_text("kernel")
    # 64 x 128: runs of 4, 16 runs per thread, rows over 32 lanes: 5 rounds.
    assert len(re.findall(r"gpu\.shuffle\s+xor", text)) == 2 * 16 * 5
    assert "scf.for" not in c.as_text("loops")
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert "shfl.sync.bfly" in ptx and ".local" not in ptx


def test_other_reductions_slices_and_long_rows_compile(tmp_path):
    # Rows longer than a warp's runs, reductions along other axes: each
    # thread loops over the reduced elements of its result elements,
    # reading them from the buffer holding the array. Slices (static and
    # dynamic, XLA's clamped starts) read through an index map.
    f = _softmax_call(rows=8, width=512)
    x = np.random.default_rng(7).standard_normal((32, 512)).astype(np.float32)
    want = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(f(x)), want / want.sum(-1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    c = f.lower(x)
    assert "gpu.shuffle" not in c.as_text("kernel")
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)

    def kernel(x_ref, o_ref, c_ref):
        x = x_ref[...]
        o_ref[...] = jnp.sum(x, axis=0, keepdims=True) + jnp.max(x[:, 2:66], axis=1).sum()
        c_ref[...] = lax.dynamic_slice(x, (0, jnp.int32(100)), (8, 64))  # clamped to 64

    g = pl.pallas_call(kernel, out_shape=(ember.ShapeDtypeStruct((1, 128), np.float32),
                                          ember.ShapeDtypeStruct((8, 64), np.float32)))
    x = np.random.default_rng(8).standard_normal((8, 128)).astype(np.float32)
    o, cl = g(x)
    np.testing.assert_allclose(np.asarray(o), x.sum(0, keepdims=True) + x[:, 2:66].max(1).sum(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(cl), x[:, 64:])
    c = g.lower(x)
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert ".local" not in ptx


def test_layer_norm_compiles(tmp_path):
    # Means along rows (a rows-layout value divided by a broadcast scalar),
    # and a (1, 128) gain broadcast over the rows: its elements belong to
    # other threads, so each thread reads the ones it needs again from the
    # (unwritten) input block.
    def ln_kernel(x_ref, g_ref, o_ref):
        x = x_ref[...]
        d = x - jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(d * d, axis=-1, keepdims=True)
        o_ref[...] = d * lax.rsqrt(var + 1e-5) * g_ref[...]

    spec = pl.BlockSpec((32, 128), lambda i: (i, 0))
    f = pl.pallas_call(ln_kernel, out_shape=ember.ShapeDtypeStruct((128, 128), np.float32),
                       grid=(4,), in_specs=[spec, pl.BlockSpec((1, 128), lambda i: (0, 0))],
                       out_specs=spec)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((128, 128)).astype(np.float32)
    g = rng.standard_normal((1, 128)).astype(np.float32)
    d = x - x.mean(-1, keepdims=True)
    want = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(np.asarray(f(x, g)), want, rtol=1e-5, atol=1e-5)
    c = f.lower(x, g)
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert ".local" not in ptx


def test_broadcast_of_a_rewritten_buffer_goes_through_a_staging_buffer(tmp_path):
    # The values a thread needs were loaded by others and the buffer has
    # been written since: not read again from it, but staged (each thread
    # writes its part to the staging area between warpgroup barriers).
    def body(x_ref, o_ref, smem):
        smem[...] = x_ref[...]
        g = smem[...]
        smem[...] = g * 2.0
        o_ref[...] = jnp.broadcast_to(g, o_ref.shape) + smem[...]

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((8, 128), np.float32),
                     scratch_shapes=[plgpu.SMEM((1, 128), np.float32)])
    x = np.arange(128, dtype=np.float32).reshape(1, 128)
    np.testing.assert_allclose(np.asarray(k(x)), np.broadcast_to(3 * x, (8, 128)))
    c = k.lower(x)
    assert "memref.view" in c.as_text("kernel")
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_compiles(causal, tmp_path):
    # The example's kernel: products on the CUDA cores (each thread its
    # output elements, a loop over the contracted dimension reading the
    # operands from their input blocks or from staging buffers in dynamic
    # shared memory), the transpose of K as an index map, the online softmax
    # with row reductions, lax.fori_loop carrying m, l and the accumulator
    # (a run-time trip count when causal), iotas for the causal mask.
    import pallas_flash_attention as fa

    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 2, 128, 64)).astype(np.float32) for _ in range(3))
    call = fa.flash_attention_call(q.shape, q.dtype, causal=causal)
    np.testing.assert_allclose(np.asarray(call(q, k, v)), fa.reference(q, k, v, causal),
                               rtol=1e-5, atol=1e-5)
    c = call.lower(q, k, v)
    text = c.as_text("kernel")
    assert "memref.view" in text
    assert "math.fma" in text and len(re.findall(r"gpu\.shuffle\s+xor", text)) > 0
    # The staging area: a view of the dynamic shared memory, of what was
    # staged; the launch asks for it.
    loops = c.as_text("loops")
    assert re.search(r"memref\.view %\w+\[%\w+\]\[\] : memref<\?xi8, "
                     r"#gpu.address_space<workgroup>> to memref<\d+xi8", loops)
    assert re.search(r"dynamic_shared_memory_size %\w+", loops)
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert "fma.rn.f32" in ptx


def test_fori_loop_and_dot_in_a_plgpu_kernel(tmp_path):
    # A plgpu kernel: x @ w^T accumulated three times in a fori_loop carry.
    def body(x_ref, w_ref, o_ref):
        def step(i, acc):
            return acc + x_ref[...] @ w_ref[...].T

        o_ref[...] = lax.fori_loop(0, 3, step, jnp.zeros((32, 16), jnp.float32))

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((32, 16), np.float32))
    rng = np.random.default_rng(6)
    x = rng.standard_normal((32, 64)).astype(np.float32)
    w = rng.standard_normal((16, 64)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(x, w)), 3 * x @ w.T, rtol=1e-4, atol=1e-4)
    c = k.lower(x, w)
    text = c.as_text("kernel")
    assert text.count("scf.for") >= 2 and "math.fma" in text
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_loop_rewriting_a_buffer_read_through_an_earlier_load_is_refused():
    def body(x_ref, o_ref, smem):
        smem[...] = x_ref[...]
        g = smem[...]

        @pl.loop(0, 2)
        def _(i):
            o_ref[...] = jnp.broadcast_to(g, o_ref.shape)
            smem[...] = g * 2.0

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((8, 128), np.float32),
                     scratch_shapes=[plgpu.SMEM((1, 128), np.float32)])
    with pytest.raises(NotImplementedError, match="a loop that writes a buffer"):
        k.lower(np.zeros((1, 128), np.float32))


def test_jit_program_lowered_for_cuda_launches_a_plgpu_kernel(tmp_path):
    # A plgpu kernel inside jit is a host callback to the interpreter on the
    # CPU; lowered for cuda, its function launches the compiled kernel (one
    # with TMA copies after building its descriptors: test_cuda_runtime.py
    # runs that against a stand-in driver). Under vmap the
    # signature changes and the kernel is not launched: the callback to the
    # interpreter stays, which a cuda program runs on host copies of its
    # buffers (ember_cuda_host_callback: correct, not fast).
    def scale(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 3.0

    k = plgpu.kernel(scale, out_shape=ember.ShapeDtypeStruct((8, 128), np.float32))
    x = np.ones((8, 128), np.float32)

    def f(x):
        return k(x + 1.0) - 1.0

    np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), np.full((8, 128), 5.0))
    low = ember.jit(f).trace(x).lower(lowering_platforms=("cuda",))
    kernels = low.as_text("kernels")
    assert re.search(r"call @plgpu_scale_\d+_gpu_host", kernels)
    if PTXAS is not None:
        ptxas_check(low.as_text("binary"), tmp_path)
    batched = ember.jit(ember.vmap(f)).trace(np.stack([x, x])).lower(
        lowering_platforms=("cuda",))
    gpu = batched.as_text("gpu")
    assert "call @ember_cuda_host_callback" in gpu and "_gpu_host" not in gpu


def test_batched_pallas_call_keeps_its_generic_kernels(tmp_path):
    f = _blocked_pallas_call()
    x = np.ones((2, 128, 256), np.float32)
    low = ember.jit(ember.vmap(f)).trace(x, x).lower(lowering_platforms=("cuda",))
    kernels = low.as_text("kernels")
    assert "_gpu_host" not in kernels
    if PTXAS is not None:
        ptxas_check(low.as_text("binary"), tmp_path)


def test_staging_in_loops_and_per_warpgroup(tmp_path):
    # A value loaded and broadcast in the same iteration, then its buffer
    # rewritten: fine (the loop check concerns values loaded before the
    # loop). Two warpgroups stage into their own parts of the dynamic
    # shared memory.
    def body(x_ref, o_ref, smem):
        smem[...] = x_ref[...]

        @pl.loop(0, 2)
        def _(i):
            g = smem[...]
            smem[...] = g * 2.0
            o_ref[...] = jnp.broadcast_to(g, o_ref.shape).T.T

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((8, 128), np.float32),
                     scratch_shapes=[plgpu.SMEM((1, 128), np.float32)], num_threads=2,
                     thread_name="wg")
    x = np.arange(128, dtype=np.float32).reshape(1, 128)
    c = k.lower(x)
    text = c.as_text("kernel")
    assert "memref.view" in text
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_concatenate_reverse_and_cumulative_compile(tmp_path):
    def kernel(x_ref, o_ref, c_ref):
        x = x_ref[...]
        o_ref[...] = jnp.concatenate([x, x * 2.0], axis=1)
        c_ref[...] = jnp.cumsum(x, axis=0) + jnp.flip(jnp.cumsum(jnp.flip(x, 0), axis=0), 0)

    f = pl.pallas_call(kernel, out_shape=(ember.ShapeDtypeStruct((8, 128), np.float32),
                                          ember.ShapeDtypeStruct((8, 64), np.float32)))
    x = np.random.default_rng(9).standard_normal((8, 64)).astype(np.float32)
    o, cs = f(x)
    np.testing.assert_allclose(np.asarray(o), np.concatenate([x, 2 * x], 1))
    np.testing.assert_allclose(np.asarray(cs), np.cumsum(x, 0) + np.cumsum(x[::-1], 0)[::-1],
                               rtol=1e-5, atol=1e-5)
    c = f.lower(x)
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_cond_and_while_loop_compile(tmp_path):
    # scf.if and scf.while over per-thread buffers holding the results and
    # carries.
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        y = lax.cond(jnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)
        n, z = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] + 1.0),
                              (jnp.int32(0), y))
        o_ref[...] = z + n.astype(jnp.float32)

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((8, 128), np.float32))
    for sign in (1.0, -1.0):
        x = sign * np.abs(np.random.default_rng(10).standard_normal((8, 128))).astype(
            np.float32)
        want = (2 * x if x.sum() > 0 else -x) + 10
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
    c = f.lower(x)
    text = c.as_text("kernel")
    assert "scf.if" in text and "scf.while" in text
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert ".local" not in ptx


def test_switch_compiles(tmp_path):
    # lax.switch on the grid index: a chain of scf.if, the index clamped
    # into range as JAX does (block 3 takes the last branch).
    def kernel(x_ref, o_ref):
        o_ref[...] = lax.switch(pl.program_id(0), [lambda v: v + 1.0, lambda v: v * 2.0,
                                                   lambda v: -v], x_ref[...])

    spec = pl.BlockSpec((1, 128), lambda i: (i, 0))
    f = pl.pallas_call(kernel, grid=(4,), in_specs=[spec], out_specs=spec,
                       out_shape=ember.ShapeDtypeStruct((4, 128), np.float32))
    x = np.random.default_rng(3).standard_normal((4, 128)).astype(np.float32)
    want = np.stack([x[0] + 1, 2 * x[1], -x[2], -x[3]])
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
    c = f.lower(x)
    assert c.as_text("kernel").count("scf.if") >= 2
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_broadcast_that_permutes_dimensions_reads_through_an_index_map(tmp_path):
    # broadcast_in_dim may reorder dimensions: not the same per-thread part.
    def kernel(x_ref, o_ref):
        o_ref[...] = lax.broadcast_in_dim(x_ref[...], (128, 8), (1, 0))

    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((128, 8), np.float32))
    x = np.arange(8 * 128, dtype=np.float32).reshape(8, 128)
    np.testing.assert_array_equal(np.asarray(f(x)), x.T)
    c = f.lower(x)
    # Each thread's 8 elements are read once for x_ref[...] and once more,
    # transposed, for the result (reusing the first part would be wrong).
    assert c.as_text("kernel").count("memref.load") >= 16
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_emit_pipeline_compiles(tmp_path):
    # The interpreter's schedule (a ring of SMEM slots fed by TMA copies,
    # one barrier per slot, results copied back out) with the compiler's
    # buffers and barriers, allocated in the warpgroup's part of the
    # staging area (128-byte aligned) and initialized where the pipeline
    # starts.
    def body(x_ref, o_ref):
        def step(idx, x_smem, o_smem):
            o_smem[...] = x_smem[...] * 2.0 + 1.0

        spec = plgpu.BlockSpec((8, 128), lambda i: (i, 0))
        plgpu.emit_pipeline(step, grid=(4,), in_specs=[spec], out_specs=[spec],
                            max_concurrent_steps=2)(x_ref, o_ref)

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((32, 128), np.float32))
    x = np.random.default_rng(11).standard_normal((32, 128)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(x)), 2 * x + 1, rtol=1e-6)
    c = k.lower(x)
    text = c.as_text("kernel")
    assert text.count("ember_gpu.copy_gmem_to_smem") == 4
    assert text.count("ember_gpu.copy_smem_to_gmem") == 4
    assert text.count("ember_gpu.barrier_init") == 2
    assert [(o, b) for o, b, _, _ in c.tma_descriptors] == [(0, (8, 128)), (1, (8, 128))]
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert "__dynamic_shmem__" in ptx and ".local" not in ptx


def test_nd_loop_compiles(tmp_path):
    # A persistent kernel's loop: each block walks the flat tile space from
    # its position in steps of the grid's size, carrying a per-block count.
    def body(x_ref, o_ref, n_ref):
        @plgpu.nd_loop((4, 2), collective_axes="sm", init_carry=jnp.int32(0))
        def count(info, carry):
            i, j = info.index
            o_ref[pl.ds(i * 8, 8), pl.ds(j * 128, 128)] = (
                x_ref[pl.ds(i * 8, 8), pl.ds(j * 128, 128)] + 1.0)
            return carry + 1

        n_ref[lax.axis_index("sm")] = count

    k = plgpu.kernel(body, out_shape=(ember.ShapeDtypeStruct((32, 256), np.float32),
                                      ember.ShapeDtypeStruct((3,), np.int32)),
                     grid=(3,), grid_names=("sm",))
    x = np.random.default_rng(12).standard_normal((32, 256)).astype(np.float32)
    o, n = k(x)
    np.testing.assert_allclose(np.asarray(o), x + 1)
    np.testing.assert_array_equal(np.asarray(n), [3, 3, 2])
    c = k.lower(x)
    assert "scf.for" in c.as_text("kernel")
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path)


def test_value_leaving_its_loop_is_a_clear_error():
    def body(x_ref, o_ref):
        out = []

        @pl.loop(0, 2)
        def _(i):
            out.append(x_ref[...] * 2.0)

        o_ref[...] = out[0]

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((8, 128), np.float32))
    with pytest.raises(ValueError, match=r"used outside it .*test_plgpu_compile\.py"):
        k.lower(np.ones((8, 128), np.float32))


# -- wgmma: tensor-core products from swizzled SMEM --------------------------


def _tma_byte(sw, r, c):
    """Where a TMA copy of a column strip (box rows x `cols`, swizzled)
    puts element (r, c) of the matrix: strips one after the other, a strip's
    rows `swizzle` bytes apart, then CuTe's Swizzle<log2(W), 4, 3> of the
    byte address (W = swizzle / 16 chunks per row), as PTX's TMA and wgmma
    sections define it."""
    isz = sw.itemsize
    addr = (c // sw.cols) * sw.rows * sw.swizzle + r * sw.swizzle + (c % sw.cols) * isz
    w = sw.swizzle // 16
    return addr ^ (((addr >> 7) & (w - 1)) << 4)


def _canonical_byte(start, swizzle, isz, lbo, sbo, row, col, k_major):
    """The byte a wgmma reads for element (row, col) of its operand tile
    (A: row in M, col in K; B: row in K, col in N), from PTX's canonical
    layouts (T elements per 16 bytes, W chunks per swizzled row):
    K-major ((8,m),(T,2k)):((W T, SBO),(1, T)); MN-major
    ((T,W,m),(8,k)):((1, T, LBO),(W T, SBO)); then the swizzle."""
    t, w = 16 // isz, swizzle // 16
    if k_major:
        e = (row % 8) * w * t + (row // 8) * (sbo // isz) + col
    else:
        e = (col % t + (col // t) % w * t + col // (t * w) * (lbo // isz)
             + (row % 8) * w * t + (row // 8) * (sbo // isz))
    addr = start + e * isz
    return addr ^ (((addr >> 7) & (w - 1)) << 4)


@pytest.mark.parametrize("swizzle", [32, 64, 128])
@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_wgmma_descriptors_read_what_tma_wrote(swizzle, dtype):
    # For every 64 x 16 slice of A (128 x 128) and 16 x N slice of B (64 x
    # 256) that wgmma reads, the canonical layout its descriptor describes
    # (start, leading and stride offsets as the compiler computes them)
    # lands on the bytes where TMA put those elements.
    a = mgc._Swizzled((128, 128), dtype, swizzle)
    b = mgc._Swizzled((64, 256), dtype, swizzle)
    isz = a.itemsize
    lbo, sbo = a.k_major_offsets()
    for mt in range(2):
        for kk in range(0, 128, 16):
            start = a.offset(64 * mt, kk) * isz
            for i in range(64):
                for j in range(16):
                    assert _canonical_byte(start, swizzle, isz, lbo, sbo, i, j, True) == \
                        _tma_byte(a, 64 * mt + i, kk + j)
    lbo, sbo = b.mn_major_offsets()
    for kk in range(0, 64, 16):
        start = b.offset(kk, 0) * isz
        for k in range(16):
            for n in range(256):
                assert _canonical_byte(start, swizzle, isz, lbo, sbo, k, n, False) == \
                    _tma_byte(b, kk + k, n)
    # Register reads and writes find each element where TMA put it.
    for r, c in [(0, 0), (3, 5), (7, 63), (9, 64), (63, 127), (100, 17)]:
        assert a.swizzle_element(a.offset(r, c)) * isz == _tma_byte(a, r, c)


def test_swizzled_smem_indexing_folds_to_the_tma_layout():
    # A register write of one element of a swizzled buffer stores at the
    # swizzled offset (constant indices fold).
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(x_ref, o_ref, smem):
        smem[pl.ds(13, 1), pl.ds(77, 1)] = jnp.full((1, 1), 2.0, jnp.bfloat16)
        o_ref[...] = x_ref[...]

    x = np.zeros((128,), np.float32)
    text = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128,), np.float32),
                        scratch_shapes=[plgpu.SMEM((64, 128), jnp.bfloat16, transforms=tf)]
                        ).lower(x).as_text("loops")
    sw = mgc._Swizzled((64, 128), jnp.bfloat16, 128)
    e = sw.swizzle_element(sw.offset(13, 77))
    assert e != sw.offset(13, 77)
    stores = re.findall(r"memref.store %\S+, %\S+\[%c(\d+)\] : memref<8192xbf16, #gpu", text)
    assert stores == [str(e)]


def _hopper_inputs(m=256, n=256, k=256, dtype=jnp.bfloat16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


def test_hopper_matmul_interprets():
    a, b = _hopper_inputs()
    ref = a.astype(np.float32) @ b.astype(np.float32)
    out = np.asarray(examples.hopper_matmul_kernel(256, 256, 256, jnp.bfloat16)(a, b))
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=1e-2, atol=0.1)


def test_hopper_matmul_kernel_form():
    # Per K step: for each 64-row tile of the 128 x 128 accumulator, four
    # 64 x 128 x 16 wgmmas reading A (K-major) and B (N-major) through
    # descriptors of 128-byte swizzled SMEM; TMA copies one 64-column strip
    # each (A: 1, B: 2, the output: 2), with 128-byte swizzle descriptors.
    a, b = _hopper_inputs()
    c = examples.hopper_matmul_kernel(256, 256, 256, jnp.bfloat16).lower(a, b)
    text = c.as_text("kernel")
    assert text.count("ember_gpu.wgmma %") == 8
    assert text.count("n = 128, bf16 transpose_b") == 8
    assert text.count("ember_gpu.wgmma_descriptor") == 16
    assert "swizzle = 128, leading = 16, stride = 1024" in text  # A
    assert "swizzle = 128, leading = 8192, stride = 1024" in text  # B: strips of 64 x 128 bytes
    assert text.count("ember_gpu.wgmma_fence") == 1 and text.count("ember_gpu.wgmma_commit") == 1
    assert "ember_gpu.wgmma_wait 0" in text
    assert [(o, b, s) for o, b, _, s in c.tma_descriptors] == [
        (0, (128, 64), 128), (1, (64, 64), 128), (2, (128, 64), 128)]
    assert text.count("ember_gpu.copy_gmem_to_smem") == 9  # 3 fetches of 3 strips
    assert text.count("ember_gpu.copy_smem_to_gmem") == 2


@needs_ptxas
def test_hopper_matmul_compiles_for_sm90a(tmp_path):
    a, b = _hopper_inputs()
    c = examples.hopper_matmul_kernel(256, 256, 256, jnp.bfloat16).lower(a, b, chip="sm_90a")
    ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 8
    for instr in ["wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                  "wgmma.wait_group.sync.aligned", "cp.async.bulk.tensor.2d",
                  "__dynamic_shmem__"]:
        assert instr in ptx, instr
    # The accumulator stays in registers: the only stack is the barriers'
    # phase words (indexed by the slot).
    depot = re.findall(r"__local_depot\d+\[(\d+)\]", ptx)
    assert all(int(d) <= 16 for d in depot), depot


def test_wgmma_wide_and_tall_accumulators_and_epilogue_ops(tmp_path):
    # A 128 x 512 accumulator: two 64-row tiles, each two 256-column parts
    # (n = 256, the largest wgmma); the epilogue scales it (elementwise, in
    # wgmma's layout). A smaller one is reduced (through a staging buffer).
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
    bf = jnp.bfloat16

    def make(n, reduce):
        def body(a_ref, b_ref, o_ref, a_smem, b_smem, bar, acc):
            plgpu.copy_gmem_to_smem(a_ref, a_smem, bar.at[0])
            plgpu.copy_gmem_to_smem(b_ref, b_smem, bar.at[0])
            plgpu.barrier_wait(bar.at[0])
            plgpu.wgmma(acc, a_smem, b_smem)
            plgpu.wgmma_wait(0)
            y = acc[...] * 0.5 + 1.0
            o_ref[...] = jnp.sum(y, axis=0) if reduce else y

        m = 128 if n > 256 else 64
        return plgpu.kernel(
            body, out_shape=ember.ShapeDtypeStruct((n,) if reduce else (m, n), np.float32),
            scratch_shapes=[plgpu.SMEM((m, 32), bf, transforms=(
                plgpu.TilingTransform((8, 32)), plgpu.SwizzleTransform(64))),
                plgpu.SMEM((32, n), bf, transforms=tf), plgpu.Barrier(2),
                plgpu.ACC((m, n), np.float32)]), np.ones((m, 32), bf), np.ones((32, n), bf)

    k, a, b = make(512, False)
    np.testing.assert_allclose(np.asarray(k(a, b)), np.full((128, 512), 17.0))
    text = k.lower(a, b).as_text("kernel")
    assert text.count("n = 256, bf16 transpose_b") == 2 * 2 * 2  # m tiles x n parts x k steps
    assert "swizzle = 64, leading = 16, stride = 512" in text  # A: 64-byte swizzle
    k, a, b = make(64, True)
    np.testing.assert_allclose(np.asarray(k(a, b)), np.full((64,), 17.0 * 64))
    c = k.lower(a, b)
    assert c.as_text("kernel").count("n = 64, bf16 transpose_b") == 2
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")


def test_wgmma_misuse_raises_at_the_kernel_line():
    bf = jnp.bfloat16
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def lower(a_t, b_t, a_shape=(64, 64), b_shape=(64, 64), dtype=bf, acc=(64, 64),
              b_window=None):
        def body(a_ref, b_ref, o_ref, a_smem, b_smem, acc_ref):
            b = b_smem if b_window is None else b_smem.at[:, pl.ds(0, b_window)]
            plgpu.wgmma(acc_ref, a_smem, b)
            o_ref[...] = acc_ref[...]

        x = np.zeros((64, 64), dtype)
        return plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct(acc, np.float32),
                            scratch_shapes=[plgpu.SMEM(a_shape, dtype, transforms=a_t),
                                            plgpu.SMEM(b_shape, dtype, transforms=b_t),
                                            plgpu.ACC(acc, np.float32)]).lower(x, x)

    with pytest.raises(NotImplementedError, match=r"without a swizzle: give it transforms=.*"
                                                  r"test_plgpu_compile\.py:\d+"):
        lower((), tf)
    with pytest.raises(NotImplementedError, match="int16 and int16 operands"):
        lower((plgpu.SwizzleTransform(128),), (plgpu.SwizzleTransform(128),), dtype=np.int16)
    # f32 operands are read as tf32, K-major only.
    with pytest.raises(ValueError, match="float32 operands K-major only"):
        lower((plgpu.SwizzleTransform(128),), (plgpu.SwizzleTransform(128),), dtype=np.float32)
    with pytest.raises(ValueError, match=r"do not accumulate into \(64, 32\)"):
        lower(tf, tf, acc=(64, 32))
    with pytest.raises(ValueError, match="tiles of bfloat16 must be 64 elements wide"):
        lower((plgpu.TilingTransform((8, 32)), plgpu.SwizzleTransform(128)), tf)
    with pytest.raises(NotImplementedError, match="whole swizzle atoms of 64"):
        lower(tf, tf, b_shape=(64, 128), acc=(64, 96), b_window=96)


def test_tutorial_pipeline_matmul_interprets_and_compiles(tmp_path):
    # The kernel of JAX's Mosaic GPU pipelining tutorial in bf16, its tiles
    # swizzled.
    a, b = _hopper_inputs(256, 256, 512, seed=3)
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
    k = emit_pipeline_matmul_kernel(256, 256, 512, jnp.bfloat16, 1, tile=128, tile_k=64,
                                    transforms=tf)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(a, b)).astype(np.float32), ref, rtol=1e-2, atol=0.1)
    c = k.lower(a, b)
    text = c.as_text("kernel")
    # 8 pipeline steps x 2 row tiles x 4 slices of 16.
    assert text.count("ember_gpu.wgmma %") == 64
    assert text.count("ember_gpu.wgmma_wait 1") == 8
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
        assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 64
        assert ".local" not in ptx


def test_shared_memory_beyond_a_block_is_refused():
    # Two pipeline slots of 256 x 256 bf16 (256 KiB) and a 256 KiB scratch
    # buffer: more than a block's 227 KiB.
    bf = jnp.bfloat16

    def body(a_ref, o_ref, big):
        def step(_, a_smem):
            pass

        plgpu.emit_pipeline(step, grid=(2,), max_concurrent_steps=2,
                            in_specs=[plgpu.BlockSpec((256, 256), lambda kk: (0, kk))])(a_ref)
        o_ref[...] = a_ref[0, :128]

    a = np.zeros((256, 512), bf)
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128,), bf),
                     scratch_shapes=[plgpu.SMEM((256, 256), np.float32)])
    with pytest.raises(NotImplementedError, match=r"bytes of shared memory .* a block has"):
        k.lower(a)


def test_warp_specialized_matmul_interprets_and_compiles(tmp_path):
    # JAX's warp-specialized tutorial kernel in bf16: warpgroup 2 streams
    # swizzled tiles into the block's ring of slots, warpgroups 0 and 1
    # each run wgmma on their half of B's columns with the accumulator
    # carried in registers, and write their half back.
    a, b = _hopper_inputs(256, 512, 512, seed=5)
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))
    k = warp_specialized_matmul_kernel(256, 512, 512, jnp.bfloat16, 128, 64, transforms=tf)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(a, b)).astype(np.float32), ref, rtol=1e-2, atol=0.1)
    c = k.lower(a, b)
    assert c.block == (384, 1, 1)
    text = c.as_text("kernel")
    # One traced body for the three warpgroups: 8 steps x 2 row tiles x 4
    # slices of 16, B's window starting at the warpgroup's columns.
    assert text.count("ember_gpu.wgmma %") == 64
    assert text.count("ember_gpu.copy_gmem_to_smem") == 8 * 5  # A: 1 strip, B: 4
    # The block's barriers (full, consumed, done) are initialized by one
    # thread before a block-wide barrier.
    assert text.count("arrivals = 2") == 4 and text.count("arrivals = 3") == 1
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
        assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 64
        assert ".local" not in ptx
        # memory_registers=40: the memory warpgroup gives registers up, the
        # two compute warpgroups take (512 - 40) / 2, rounded down to 8.
        assert re.search(r"setmaxnreg.dec.sync.aligned.u32\s+40;", ptx)
        assert re.search(r"setmaxnreg.inc.sync.aligned.u32\s+232;", ptx)


def test_run_scoped_accumulator(tmp_path):
    # JAX's quickstart style: a zero accumulator from pl.run_scoped; reading
    # it completes the wgmma (a wgmma_wait 0 before the read).
    bf = jnp.bfloat16
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(a_ref, b_ref, o_ref, a_smem, b_smem, bar):
        plgpu.copy_gmem_to_smem(a_ref, a_smem, bar.at[0])
        plgpu.copy_gmem_to_smem(b_ref, b_smem, bar.at[0])
        plgpu.barrier_wait(bar.at[0])

        def scope(acc_ref):
            plgpu.wgmma(acc_ref, a_smem, b_smem)
            return acc_ref[...]

        o_ref[...] = pl.run_scoped(scope, plgpu.ACC((64, 64), jnp.float32)) * 2.0

    a, b = _hopper_inputs(64, 64, 64, seed=7)
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((64, 64), np.float32),
                     scratch_shapes=[plgpu.SMEM((64, 64), bf, transforms=tf),
                                     plgpu.SMEM((64, 64), bf, transforms=tf), plgpu.Barrier(2)])
    ref = 2 * a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(a, b)), ref, rtol=1e-5, atol=1e-4)
    c = k.lower(a, b)
    text = c.as_text("kernel")
    assert text.count("ember_gpu.wgmma %") == 4
    assert text.index("ember_gpu.wgmma_commit") < text.index("ember_gpu.wgmma_wait 0")
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")


def _two_products_kernel(m=64, d=64, n=128):
    """Attention's two products: S = Q @ Kt into one accumulator, then
    P = (S / 8) in bf16, kept in registers as wgmma's A, and O = P @ V."""
    bf = jnp.bfloat16
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(q_ref, kt_ref, v_ref, o_ref, q_smem, kt_smem, v_smem, bar):
        for src, dst in ((q_ref, q_smem), (kt_ref, kt_smem), (v_ref, v_smem)):
            plgpu.copy_gmem_to_smem(src, dst, bar.at[0])
        plgpu.barrier_wait(bar.at[0])

        def scores(s_acc):
            plgpu.wgmma(s_acc, q_smem, kt_smem)
            return s_acc[...]

        p = (pl.run_scoped(scores, plgpu.ACC((m, n), jnp.float32)) * 0.125).astype(bf)

        def output(o_acc):
            plgpu.wgmma(o_acc, p, v_smem)  # A: p, in registers
            return o_acc[...]

        o_ref[...] = pl.run_scoped(output, plgpu.ACC((m, d), jnp.float32))

    return plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((m, d), np.float32),
                        scratch_shapes=[plgpu.SMEM((m, d), bf, transforms=tf),
                                        plgpu.SMEM((d, n), bf, transforms=tf),
                                        plgpu.SMEM((n, d), bf, transforms=tf),
                                        plgpu.Barrier(3)])


def test_wgmma_with_a_in_registers(tmp_path):
    # The second product reads A from registers: each thread's part of P in
    # the accumulator layout is its fragment of A, packed two per register.
    rng = np.random.default_rng(8)
    bf = jnp.bfloat16
    q, kt, v = (rng.standard_normal(s).astype(bf) for s in ((64, 64), (64, 128), (128, 64)))
    k = _two_products_kernel()
    f = [x.astype(np.float32) for x in (q, kt, v)]
    p = np.asarray(jnp.asarray((f[0] @ f[1]) * 0.125).astype(bf)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(q, kt, v)), p @ f[2], rtol=2e-2, atol=0.15)
    c = k.lower(q, kt, v)
    text = c.as_text("kernel")
    # S: 4 slices of K = 64 over 128 columns; O: 8 slices of K = 128 with A
    # as 4 x i32 registers.
    assert text.count("ember_gpu.wgmma %") == 12
    assert len(re.findall(r"ember_gpu.wgmma .*: vector<32xf32>, vector<4xi32> ->", text)) == 8
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
        # Register A: the operand is a brace list of four registers.
        regs = re.findall(r"wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                          r"\{[^}]*\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}", ptx)
        assert len(regs) == 8
        assert ".local" not in ptx


@pytest.mark.parametrize("swizzle", [32, 64, 128])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_k_major_b_descriptors_read_what_tma_wrote(swizzle, dtype):
    # B stored N x K (transpose_ref(b, (1, 0))): the k-deep slices wgmma
    # reads K-major (32 bytes: 16 f16, 8 f32 read as tf32), for every 8-row
    # group of N, land where TMA put them.
    b = mgc._Swizzled((256, 64), dtype, swizzle)
    isz = b.itemsize
    depth = 32 // isz
    lbo, sbo = b.k_major_offsets()
    for kk in range(0, 64, depth):
        start = b.offset(0, kk) * isz
        for n in range(256):
            for k in range(depth):
                assert _canonical_byte(start, swizzle, isz, lbo, sbo, n, k, True) == \
                    _tma_byte(b, n, kk + k)


def test_tf32_wgmma_reads_both_operands_k_major(tmp_path):
    # f32 operands are read as tf32, 8 deep per instruction, both K-major:
    # B stored N x K and given through transpose_ref (an N-major f32 B is
    # refused, as PTX has no transposed tf32 operand).
    tf = (plgpu.TilingTransform((8, 32)), plgpu.SwizzleTransform(128))

    def body(transposed, a_ref, b_ref, o_ref, a_smem, b_smem, bar):
        plgpu.copy_gmem_to_smem(a_ref, a_smem, bar)
        plgpu.copy_gmem_to_smem(b_ref, b_smem, bar)
        plgpu.barrier_wait(bar)

        def product(acc):
            plgpu.wgmma(acc, a_smem, plgpu.transpose_ref(b_smem, (1, 0)) if transposed
                        else b_smem)
            return acc[...]

        o_ref[...] = pl.run_scoped(product, plgpu.ACC((64, 64), jnp.float32))

    def kernel(transposed):
        return plgpu.kernel(functools.partial(body, transposed),
                            out_type=ember.ShapeDtypeStruct((64, 64), np.float32),
                            scratch_types=[plgpu.SMEM((64, 64), np.float32, transforms=tf),
                                           plgpu.SMEM((64, 64), np.float32, transforms=tf),
                                           plgpu.Barrier(num_arrivals=2)])

    rng = np.random.default_rng(5)
    a, bt = rng.standard_normal((2, 64, 64)).astype(np.float32)
    # (The interpreter multiplies in f32; the tensor cores round to tf32.)
    np.testing.assert_allclose(np.asarray(kernel(True)(a, bt)), a @ bt.T, rtol=1e-5, atol=1e-4)
    c = kernel(True).lower(a, bt)
    wg = re.findall(r"ember_gpu.wgmma [^\n]*", c.as_text("kernel"))
    assert len(wg) == 8 and all(", tf32 :" in w for w in wg)  # K = 64 in slices of 8
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
        assert len(re.findall(r"wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", ptx)) == 8
    with pytest.raises(ValueError, match=r"K-major only: store B as N x K"):
        kernel(False).lower(a, bt)


def _attention_steps_kernel(m=64, d=64, bk=64, steps=2):
    """Online-softmax attention over `steps` key blocks, as FlashAttention
    writes it: S = Q @ K^T with K stored (keys x d) and read K-major through
    transpose_ref, row maxima and sums reduced in the WGMMA_ROW layout, the
    accumulator rescaled by a broadcast of them, P @ V with P in registers;
    the accumulator and the row statistics carried through a fori_loop in
    their layouts."""
    f16 = jnp.float16
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(q_ref, k_ref, v_ref, o_ref, q_smem, k_smem, v_smem, q_bar, kv_bar):
        plgpu.copy_gmem_to_smem(q_ref, q_smem, q_bar)
        for i in range(steps):
            plgpu.copy_gmem_to_smem(k_ref.at[pl.ds(i * bk, bk)], k_smem.at[i], kv_bar.at[i])
            plgpu.copy_gmem_to_smem(v_ref.at[pl.ds(i * bk, bk)], v_smem.at[i], kv_bar.at[i])
        plgpu.barrier_wait(q_bar)
        row = plgpu.Layout.WGMMA.reduce(1)

        def step(i, carry):
            acc, m_i, l_i = carry
            plgpu.barrier_wait(kv_bar.at[i])

            def scores(s_acc):
                plgpu.wgmma(s_acc, q_smem, plgpu.transpose_ref(k_smem.at[i], (1, 0)))
                return s_acc[...]

            s = pl.run_scoped(scores, plgpu.ACC((m, bk), jnp.float32))
            m_new = jnp.maximum(m_i, s.max(axis=1))
            p = jnp.exp(s - lax.broadcast_in_dim(m_new, s.shape, [0]))
            alpha = jnp.exp(m_i - m_new)
            l_i = l_i * alpha + p.sum(axis=1)
            acc = acc * lax.broadcast_in_dim(alpha, acc.shape, [0])

            def update(acc_ref):
                plgpu.wgmma(acc_ref, p.astype(f16), v_smem.at[i])

            return pl.run_state(update)(plgpu.ACC.init(acc)), m_new, l_i

        init = (plgpu.layout_cast(jnp.zeros((m, d), jnp.float32), plgpu.Layout.WGMMA),
                plgpu.layout_cast(jnp.full((m,), -jnp.inf, jnp.float32), row),
                plgpu.layout_cast(jnp.zeros((m,), jnp.float32), row))
        acc, _, l_i = lax.fori_loop(0, steps, step, init)
        o_ref[...] = acc / lax.broadcast_in_dim(l_i, acc.shape, [0])

    return plgpu.kernel(body, out_type=ember.ShapeDtypeStruct((m, d), np.float32),
                        scratch_types=[plgpu.SMEM((m, d), f16, transforms=tf),
                                       plgpu.SMEM((steps, bk, d), f16, transforms=tf),
                                       plgpu.SMEM((steps, bk, d), f16, transforms=tf),
                                       plgpu.Barrier(),
                                       plgpu.Barrier(num_arrivals=2, num_barriers=steps)])


def attention_steps_case():
    """Inputs of `_attention_steps_kernel` and the softmax attention it
    computes (NumPy)."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal(s).astype(np.float16) for s in ((64, 64), (128, 64),
                                                                   (128, 64)))
    s = q.astype(np.float32) @ k.astype(np.float32).T
    p = np.exp(s - s.max(1, keepdims=True))
    return (q, k, v), (p / p.sum(1, keepdims=True)) @ v.astype(np.float32)


def test_attention_steps_compile_in_register_layouts(tmp_path):
    (q, k, v), ref = attention_steps_case()
    kern = _attention_steps_kernel()
    np.testing.assert_allclose(np.asarray(kern(q, k, v)), ref, atol=2e-3)
    c = kern.lower(q, k, v)
    text = c.as_text("kernel")
    # S reads K K-major (no transpose_b), P @ V reads V N-major.
    wg = re.findall(r"ember_gpu.wgmma [^\n]*", text)
    assert len(wg) == 8
    assert sum("transpose_b" in w for w in wg) == 4
    # Row maxima and sums: two shuffles (within the quad) per row a thread
    # holds (2), per reduction (2); nothing staged through shared memory.
    assert len(re.findall(r"gpu.shuffle +xor", text)) == 8
    # Shared memory: Q, K, V, the two barrier groups' words, and a staging
    # area of the minimum 16 bytes (nothing staged).
    views = re.findall(r"memref.view [^\n]* to (memref<.*>)", text)
    assert sorted(views) == sorted(
        ["memref<4096xf16, #gpu.address_space<workgroup>>"] +
        ["memref<8192xf16, #gpu.address_space<workgroup>>"] * 2 +
        ["memref<1xi64, #gpu.address_space<workgroup>>",
         "memref<2xi64, #gpu.address_space<workgroup>>",
         "memref<16xi8, #gpu.address_space<workgroup>>"]), views
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
        assert len(re.findall(r"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", ptx)) == 8


def test_wgmma_register_a_errors():
    bf = jnp.bfloat16
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(x_ref, o_ref, b_smem):
        def scope(acc):
            plgpu.wgmma(acc, x_ref[...], b_smem)
            return acc[...]

        o_ref[...] = pl.run_scoped(scope, plgpu.ACC((64, 64), jnp.float32))

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((64, 64), np.float32),
                     scratch_shapes=[plgpu.SMEM((64, 64), bf, transforms=tf)])
    with pytest.raises(NotImplementedError, match=r"float32 registers and bfloat16 SMEM"):
        k.lower(np.zeros((64, 64), np.float32))
    with pytest.raises(ValueError, match=r"shapes \(64, 32\) @ \(64, 64\)"):
        k.lower(np.zeros((64, 32), bf))


# -- tcgen05 (Blackwell): MMAs into TMEM --------------------------------------


def test_tcgen05_instruction_descriptor_fields():
    # PTX's instruction descriptor for .kind::f16, field by field.
    d = mgc.tcgen05_instruction(128, 256, jnp.bfloat16)
    assert (d >> 4) & 3 == 1  # D: f32
    assert (d >> 7) & 7 == 1 and (d >> 10) & 7 == 1  # A, B: bf16
    assert (d >> 15) & 1 == 0 and (d >> 16) & 1 == 1  # A K-major, B N-major
    assert (d >> 17) & 63 == 256 >> 3 and (d >> 24) & 31 == 128 >> 4
    assert d & 0b1111 == 0 and (d >> 13) & 3 == 0 and (d >> 23) & 1 == 0 and d >> 29 == 0
    f = mgc.tcgen05_instruction(128, 64, np.float16)
    assert (f >> 7) & 7 == 0 and (f >> 10) & 7 == 0 and (f >> 17) & 63 == 8


def test_blackwell_matmul_interprets_and_compiles(tmp_path):
    a, b = _hopper_inputs(seed=11)
    k = examples.blackwell_matmul_kernel(256, 256, 256, jnp.bfloat16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(a, b)).astype(np.float32), ref, rtol=1e-2, atol=0.1)
    c = k.lower(a, b, chip="sm_100a")
    text = c.as_text("kernel")
    # One warp allocates 128 TMEM columns and frees them at the end; per
    # step one thread issues 4 MMAs (K = 64) on Blackwell descriptors,
    # then commits to the slot's barrier.
    assert "ember_gpu.tmem_alloc" in text and "columns = 128" in text
    assert text.count("ember_gpu.tmem_dealloc") == 1
    assert text.count("ember_gpu.tcgen05_mma") == 4
    assert text.count("stride = 1024 tcgen05") == 8  # A and B per MMA
    assert text.count("ember_gpu.tcgen05_commit") == 2  # consumed, done
    # The accumulator's 128 columns in one 32x32b load per warp.
    assert text.count("ember_gpu.tmem_load") == 1 and "vector<128xi32>" in text
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_100a")[c.name]
        for instr in ["tcgen05.alloc.cta_group::1", "tcgen05.mma.cta_group::1.kind::f16",
                      "tcgen05.commit.cta_group::1", "tcgen05.ld.sync.aligned.32x32b.x128.b32",
                      "tcgen05.wait::ld", "tcgen05.dealloc.cta_group::1",
                      "tcgen05.relinquish_alloc_permit"]:
            assert instr in ptx, instr


PAIR_PTX = ["tcgen05.alloc.cta_group::2", "tcgen05.relinquish_alloc_permit.cta_group::2",
            "tcgen05.mma.cta_group::2.kind::f16",
            "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster",
            "mapa.shared::cluster.u32",
            "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes"
            ".cta_group::2", "tcgen05.dealloc.cta_group::2"]


def test_blackwell_pair_matmul_interprets_and_compiles(tmp_path):
    # A 2-CTA pair: leader-tracked copies, the leader's cta_group::2 MMAs
    # into both blocks' collective TMEM, commits multicast to both.
    a, b = _hopper_inputs(512, 256, 256, seed=12)
    k = examples.blackwell_pair_matmul_kernel(512, 256, 256, jnp.bfloat16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(a, b)).astype(np.float32), ref, rtol=1e-2, atol=0.1)
    c = k.lower(a, b, chip="sm_100a")
    text = c.as_text("kernel")
    assert "columns = 128 collective" in text  # both blocks allocate together
    assert text.count("ember_gpu.tmem_relinquish collective") == 1
    assert "columns = 128 collective" in text.split("ember_gpu.tmem_dealloc")[1]
    # 4 MMAs (K = 64) of 256 x 128 (M = 256 >> 4 in bits 24-28, N = 128 >> 3
    # in 17-22) issued by the leader only.
    assert text.count("ember_gpu.tcgen05_mma") == 4
    assert all(line.endswith("collective") for line in text.splitlines()
               if "ember_gpu.tcgen05_mma" in line)
    idesc = mgc.tcgen05_instruction(256, 128, jnp.bfloat16)
    assert idesc >> 24 == 16 and (idesc >> 17) & 63 == 16 and f"{idesc} : i32" in text
    # Two commits (consumed, done), each to both blocks of the pair.
    assert len(re.findall(r"ember_gpu.tcgen05_commit .*multicast = .* collective", text)) == 2
    # Each fetch: A's 128 rows and B's 64 columns of this block, both
    # counted on the leader's barrier (block rank 0 of the pair).
    assert text.count("tracked_by = ") == 6
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_100a")[c.name]
        for instr in PAIR_PTX:
            assert instr in ptx, instr


def _tutorial_kernel_lowered(chip):
    """JAX's Blackwell tutorial's final kernel (matmul6, read from a jax-ml/jax
    snapshot) with plgpu.kernel(...) lowered for `chip` instead of run."""
    import types

    from test_pallas_mosaic_gpu import _tutorial_cells

    cells = _tutorial_cells("docs/pallas/gpu/blackwell_matmul.md")
    code = next(c for c in cells if c.lstrip().startswith("def matmul6"))
    lowered = []

    def kernel(*args, **kw):
        k = plgpu.kernel(*args, **kw)
        return lambda *xs: lowered.append(k.lower(*xs, chip=chip))

    gpu = types.SimpleNamespace(**{n: getattr(plgpu, n) for n in dir(plgpu)
                                   if not n.startswith("_")})
    gpu.kernel = kernel
    device = types.SimpleNamespace(core_count=148)  # a B200's SMs
    ns = dict(jax=ember, jnp=jnp, lax=lax, pl=pl, plgpu=gpu, TuningConfig=object,
              backend=types.SimpleNamespace(get_default_device=lambda: device))
    exec(compile(code, "blackwell_matmul.md", "exec"), ns)
    # The tutorial's best configuration for 4096^3 (its last table), at 1024^3.
    config = types.SimpleNamespace(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4,
                                   epilogue_tile_n=64, grid_minor_dim=0, grid_tile_width=4)
    a = jnp.zeros((1024, 512), jnp.bfloat16)
    b = jnp.zeros((512, 1024), jnp.bfloat16)
    ns["matmul6"](a, b, config)
    return lowered[0]


def test_jax_blackwell_tutorial_matmul_compiles(tmp_path):
    # The final kernel of JAX's Blackwell matmul tutorial, as written:
    # persistent nd_loop over a planar snake, warps by core_map(WarpMesh),
    # leader-tracked partitioned copies, 2-CTA MMAs into double-buffered
    # collective TMEM (a dynamic column window), ClusterBarrier-guarded
    # reuse, a TMA epilogue through swizzled SMEM.
    c = _tutorial_kernel_lowered("sm_100a")
    text = c.as_text("kernel")
    assert "columns = 512 collective" in text
    assert text.count("ember_gpu.tcgen05_mma") == 4  # K = 64 per step, in the k loop
    assert text.count("tracked_by = ") == 3  # A (1 strip) + B (2 strips) per step
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_100a")[c.name]
        for instr in PAIR_PTX + ["tcgen05.ld.sync.aligned.32x32b.x64.b32"]:
            assert instr in ptx, instr


def _jax_flash_attention3_lowered(run):
    """The kernels JAX's FlashAttention-3 (attention_mgpu.py, from a
    jax-ml/jax snapshot where present) launches in `run(module)`, as
    written, with plgpu.kernel(...) lowered for sm_90a instead of run."""
    import types

    from test_pallas_mosaic_gpu import _jax_attention_module

    fa3 = _jax_attention_module()
    lowered = []

    def kernel(*args, out_type=None, **kw):
        k = plgpu.kernel(*args, out_type=out_type, **kw)

        def call(*xs):
            lowered.append(k.lower(*xs, chip="sm_90a"))
            return ember.tree_util.tree_map(lambda t: jnp.zeros(t.shape, t.dtype), out_type)

        return call

    gpu = types.SimpleNamespace(**{n: getattr(plgpu, n) for n in dir(plgpu)
                                   if not n.startswith("_")})
    gpu.kernel = kernel
    fa3["plgpu"] = gpu
    run(fa3)
    return lowered


@pytest.mark.parametrize("causal", [False, True])
def test_jax_flash_attention3_forward_compiles(causal, tmp_path):
    # The forward kernel: two compute warpgroups and a memory warpgroup
    # (setmaxnreg), Q @ K^T with K K-major through transpose_ref, the
    # softmax statistics in the WGMMA_ROW layout (quad shuffles, nothing
    # staged through shared memory), causal masks from broadcasted_iota in
    # wgmma's layout, P @ V with P in registers.
    def run(fa3):
        config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2,
                                     causal=causal)
        q = jnp.zeros((1, 256, 2, 64), jnp.float16)
        fa3["_attention_forward"](q, q, q, config)

    [c] = _jax_flash_attention3_lowered(run)
    text = c.as_text("kernel")
    assert len(re.findall(r"ember_gpu.wgmma ", text)) == (16 if causal else 8)
    # The staging area holds the block's run_scoped buffers only (Q/O, K and
    # V slots, 16 KB each, and the barriers' words, 1 KB aligned): nothing
    # is staged per warpgroup.
    assert "memref<50176xi8, #gpu.address_space<workgroup>>" in text
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
        assert ptx.count("setmaxnreg") == 2
        assert len(re.findall(r"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", ptx)) == \
            (16 if causal else 8)


def test_jax_flash_attention3_pipeline_emitter_variant_compiles(tmp_path):
    # attention_with_pipeline_emitter asks for LoweringSemantics.Warpgroup
    # and gives its SMEM no transforms: they are inferred (the widest
    # swizzle a buffer's rows fill), as JAX infers them.
    def run(fa3):
        config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2)
        q = jnp.zeros((1, 256, 2, 64), jnp.float16)
        fa3["attention_with_pipeline_emitter"].__wrapped__(q, q, q, config)

    [c] = _jax_flash_attention3_lowered(run)
    # 4 pipeline steps, two products of K = 64 each.
    assert len(re.findall(r"ember_gpu.wgmma ", c.as_text("kernel"))) == 4 * 2 * 4
    if PTXAS is not None:
        ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")


def test_warpgroup_semantics_infer_smem_transforms():
    f16 = jnp.float16

    def body(a_ref, o_ref, a_smem, bar):
        plgpu.copy_gmem_to_smem(a_ref, a_smem, bar)
        plgpu.barrier_wait(bar)

        def product(acc):
            plgpu.wgmma(acc, a_smem, a_smem)
            return acc[...]

        o_ref[...] = pl.run_scoped(product, plgpu.ACC((64, 64), jnp.float32))

    def kernel(params):
        return plgpu.kernel(body, out_type=ember.ShapeDtypeStruct((64, 64), np.float32),
                            scratch_types=[plgpu.SMEM((64, 64), f16), plgpu.Barrier()],
                            compiler_params=params)

    a = np.zeros((64, 64), f16)
    with pytest.raises(NotImplementedError, match=r"SwizzleTransform\(128\)"):
        kernel(None).lower(a)
    c = kernel(plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
               ).lower(a)
    text = c.as_text("kernel")
    assert text.count("ember_gpu.wgmma ") == 4
    assert "swizzle = 128" in text


def test_jax_flash_attention3_backward_kernels_compile(tmp_path):
    # The dQ and dK/dV kernels: warp-specialized pipelines with manual
    # consumed barriers, the statistics loaded in the WGMMA_ROW and
    # WGMMA_COL layouts (plgpu.load(..., layout=WGMMA.reduce(0 or 1))) and
    # broadcast along rows and columns of the accumulators.
    def run(fa3):
        config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2,
                                     block_q_dkv=64, block_kv_dkv=64, block_q_dq=64,
                                     block_kv_dq=64)
        q = jnp.zeros((1, 256, 2, 64), jnp.float16)
        lse = jnp.zeros((1, 2, 256), jnp.float32)
        fa3["_attention_bwd"](config, False, (q, q, q, q, lse), q)

    dq, dkv = _jax_flash_attention3_lowered(run)
    # The pipelines' 4 steps (256 / 64 tiles) unrolled; per step dQ's three
    # products (S, dP, dQ) and dK/dV's four, each K = 64 as 4 wgmmas.
    assert len(re.findall(r"ember_gpu.wgmma ", dq.as_text("kernel"))) == 4 * 3 * 4
    assert len(re.findall(r"ember_gpu.wgmma ", dkv.as_text("kernel"))) == 4 * 4 * 4
    if PTXAS is not None:
        for c in (dq, dkv):
            ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")


def _collective_kernel(body, scratch, cluster=(2,)):
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128,), np.float32),
                     scratch_shapes=scratch, cluster=cluster, cluster_names=("c",)[:len(cluster)])
    return lambda: k.lower(np.zeros((128,), np.float32), chip="sm_100a")


def test_collective_tcgen05_errors():
    def copy(x_ref, o_ref, *scratch):
        o_ref[...] = x_ref[...]

    # A pair's TMEM needs a pair.
    with pytest.raises(ValueError, match=r"a cluster of 2 blocks .*test_plgpu_compile\.py:\d+"):
        _collective_kernel(copy, [plgpu.TMEM((128, 64), np.float32, collective=True)],
                           cluster=(4,))()
    with pytest.raises(NotImplementedError, match="collective and non-collective TMEM"):
        _collective_kernel(copy, [plgpu.TMEM((128, 64), np.float32, collective=True),
                                  plgpu.TMEM((128, 64), np.float32)])()

    # A collective MMA into a block's own TMEM.
    def mma(x_ref, o_ref, a, b, acc):
        plgpu.tcgen05_mma(acc, a, b, collective_axis="c")

    smem = [plgpu.SMEM((128, 64), jnp.bfloat16), plgpu.SMEM((64, 64), jnp.bfloat16)]
    with pytest.raises(ValueError, match=r"needs collective TMEM .*test_plgpu_compile\.py:\d+"):
        _collective_kernel(mma, smem + [plgpu.TMEM((128, 128), np.float32)])()

    # A replicated leader-tracked copy is not compiled yet.
    def replicated(x_ref, o_ref, smem, bar):
        plgpu.copy_gmem_to_smem(x_ref, smem, bar, collective_axes="c",
                                leader_tracked=plgpu.CopyPartition.REPLICATED)

    with pytest.raises(NotImplementedError, match=r"REPLICATED .*test_plgpu_compile\.py:\d+"):
        _collective_kernel(replicated, [plgpu.SMEM((128,), np.float32), plgpu.Barrier()])()

    # Arrays belong to a warpgroup, not to one warp of core_map(WarpMesh).
    def per_warp(x_ref, o_ref):
        @pl.core_map(plgpu.WarpMesh(axis_name="w"))
        def _():
            o_ref[...] = x_ref[...]

    with pytest.raises(NotImplementedError, match=r"WarpMesh.*test_plgpu_compile\.py:\d+"):
        _collective_kernel(per_warp, [], cluster=())()


def test_leader_tracked_copy_of_a_plain_buffer(tmp_path):
    # Block i of the pair copies half i of a 2 x 64 window into its own SMEM;
    # the leader expects both halves' bytes (2 x 64 x 4) on its barrier.
    def body(x_ref, o_ref, smem, bar):
        p = lax.axis_index("c")
        plgpu.copy_gmem_to_smem(x_ref.at[pl.ds(0, 2), :], smem, bar, collective_axes="c",
                                leader_tracked=plgpu.CopyPartition.PARTITIONED(0))

        @pl.when(p == 0)
        def _():
            plgpu.barrier_wait(bar)

    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((2, 64), np.float32),
                     scratch_shapes=[plgpu.SMEM((1, 64), np.float32), plgpu.Barrier()],
                     cluster=(2,), cluster_names=("c",))
    c = k.lower(np.zeros((4, 64), np.float32), chip="sm_100a")
    text = c.as_text("kernel")
    assert text.count("tracked_by = ") == 1 and "arith.constant 512 : i32" in text
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_100a")[c.name]
        assert PAIR_PTX[5] in ptx


def test_warp_mesh_issues_per_warp(tmp_path):
    # core_map(WarpMesh): warp 0 copies, warp 1 waits and arrives; each
    # warp's first thread issues, and an arrival syncs the warp only.
    def body(x_ref, o_ref, smem, bar, done):
        @pl.core_map(plgpu.WarpMesh(axis_name="w"))
        def _():
            w = lax.axis_index("w")

            @pl.when(w == 0)
            def _():
                plgpu.copy_gmem_to_smem(x_ref, smem, bar)

            @pl.when(w == 1)
            def _():
                plgpu.barrier_wait(bar)
                plgpu.barrier_arrive(done)

        plgpu.barrier_wait(done)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(smem, o_ref)
        plgpu.wait_smem_to_gmem(0)

    x = np.arange(128, dtype=np.float32)
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128,), np.float32),
                     scratch_shapes=[plgpu.SMEM((128,), np.float32), plgpu.Barrier(),
                                     plgpu.Barrier()])
    np.testing.assert_array_equal(np.asarray(k(x)), x)
    c = k.lower(x, chip="sm_90a")
    text = c.as_text("kernel")
    assert "nvvm.bar.warp.sync" in text  # the arrival syncs warp 1 only
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_90a")[c.name]
        assert "bar.warp.sync" in ptx


def test_tmem_store_and_load(tmp_path):
    # A value through TMEM and back: each thread writes its row (tcgen05.st
    # 32x32b, 96 columns as 64 + 32), commits, and reads it back.
    def body(x_ref, o_ref, tmem):
        plgpu.async_store_tmem(tmem, x_ref[...] * 2.0)
        plgpu.commit_tmem()
        o_ref[...] = plgpu.async_load_tmem(tmem) + 1.0
        plgpu.wait_load_tmem()

    x = np.random.default_rng(3).standard_normal((128, 96)).astype(np.float32)
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128, 96), np.float32),
                     scratch_shapes=[plgpu.TMEM((128, 96), np.float32)])
    np.testing.assert_allclose(np.asarray(k(x)), 2 * x + 1, rtol=1e-6)
    c = k.lower(x, chip="sm_100a")
    text = c.as_text("kernel")
    assert text.count("ember_gpu.tmem_store") == 2 and "vector<64xi32>" in text
    assert "ember_gpu.tmem_wait store" in text and "columns = 128" in text
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path, "sm_100a")[c.name]
        for instr in ["tcgen05.st.sync.aligned.32x32b.x64.b32",
                      "tcgen05.st.sync.aligned.32x32b.x32.b32", "tcgen05.wait::st",
                      "tcgen05.ld.sync.aligned.32x32b.x64.b32"]:
            assert instr in ptx, instr


def test_collective_copy_into_swizzled_smem(tmp_path):
    # Two blocks of a cluster multicast a 128 x 64 bf16 tile into swizzled
    # SMEM: each loads 64 rows of the strip for both; both expect all of it.
    bf = jnp.bfloat16
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(x_ref, o_ref, smem, bar):
        c = lax.axis_index("c")
        plgpu.copy_gmem_to_smem(x_ref, smem, bar.at[0], collective_axes="c")
        plgpu.barrier_wait(bar.at[0])
        o_ref[c] = smem[...].astype(jnp.float32) * (c + 1).astype(jnp.float32)

    x = np.random.default_rng(5).standard_normal((128, 64)).astype(bf)
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((2, 128, 64), np.float32),
                     cluster=(2,), cluster_names=("c",),
                     scratch_shapes=[plgpu.SMEM((128, 64), bf, transforms=tf), plgpu.Barrier(1)])
    ref = x.astype(np.float32)
    np.testing.assert_allclose(np.asarray(k(x)), np.stack([ref, 2 * ref]))
    c = k.lower(x)
    text = c.as_text("kernel")
    assert text.count("ember_gpu.copy_gmem_to_smem") == 1 and "multicast" in text
    assert [(o, b, s) for o, b, _, s in c.tma_descriptors] == [(0, (64, 64), 128)]
    assert "expect_tx = " in text and "arith.constant 16384 : i32" in text  # the whole tile
    if PTXAS is not None:
        ptx = ptxas_check(c.as_text("binary"), tmp_path)[c.name]
        assert ".multicast::cluster" in ptx


def test_run_state_with_an_accumulator_and_a_plain_ref():
    # pl.run_state over (ACC.init(x), y): the accumulator in registers, the
    # other value an ordinary ref (a small one: every thread holds it); both
    # final values come back.
    bf = jnp.bfloat16
    tf = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))

    def body(a_ref, b_ref, o_ref, s_ref, a_smem, b_smem, bar):
        plgpu.copy_gmem_to_smem(a_ref, a_smem, bar.at[0])
        plgpu.copy_gmem_to_smem(b_ref, b_smem, bar.at[0])
        plgpu.barrier_wait(bar.at[0])

        def step(refs):
            acc, total = refs
            plgpu.wgmma(acc, a_smem, b_smem)
            total[...] = total[...] + 1.0

        acc, total = pl.run_state(step)((plgpu.ACC.init(jnp.ones((64, 64), jnp.float32)),
                                         jnp.zeros((8,), jnp.float32)))
        o_ref[...] = acc
        s_ref[...] = total

    a, b = _hopper_inputs(64, 64, 64, seed=9)
    k = plgpu.kernel(body, out_shape=(ember.ShapeDtypeStruct((64, 64), np.float32),
                                      ember.ShapeDtypeStruct((8,), np.float32)),
                     scratch_shapes=[plgpu.SMEM((64, 64), bf, transforms=tf),
                                     plgpu.SMEM((64, 64), bf, transforms=tf), plgpu.Barrier(2)])
    out, total = k(a, b)
    np.testing.assert_allclose(np.asarray(out), 1 + a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(total), np.ones(8))
    text = k.lower(a, b).as_text("kernel")
    assert text.count("ember_gpu.wgmma %") == 4 and "ember_gpu.wgmma_wait 0" in text


def test_jit_program_for_cuda_launches_a_tma_kernel(tmp_path):
    """A tensor-core kernel with TMA copies inside a jit program lowered for
    cuda: its launch is preceded by host code building its three
    descriptors (ember_cuda_tensor_map) into a device buffer; ptxas accepts
    every kernel of the program."""
    import ml_dtypes

    kern = examples.hopper_matmul_kernel(256, 256, 128, jnp.bfloat16)
    a = np.ones((256, 128), ml_dtypes.bfloat16)
    b = np.ones((128, 256), ml_dtypes.bfloat16)
    low = ember.jit(lambda a, b: kern(a, b) * 2.0).trace(a, b).lower(
        lowering_platforms=("cuda",))
    kernels = low.as_text("kernels")
    assert re.search(r"call @plgpu_body_\d+_gpu_host", kernels)
    assert kernels.count("call @ember_cuda_tensor_map") == 3
    assert "gpu.memcpy" in kernels
    if PTXAS is not None:
        ptxas_check(low.as_text("binary"), tmp_path)


def test_shared_memory_limit_counts_alignment():
    """Buffers that fit the block's shared memory only without their 1024-byte
    alignment (and the slack for aligning the region at run time) are refused
    at compile time, not at launch."""
    n = (mgc.SMEM_LIMIT - 1024) // 4

    def body(x_ref, o_ref, big):
        big[0:128] = x_ref[...]
        o_ref[...] = big[0:128]

    x = np.zeros((128,), np.float32)
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128,), np.float32),
                     scratch_shapes=[plgpu.SMEM((n,), np.float32)])
    with pytest.raises(NotImplementedError, match=r"bytes of shared memory \(its buffers each "
                                                  r"aligned to 1024 bytes"):
        k.lower(x)
    small = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((128,), np.float32),
                         scratch_shapes=[plgpu.SMEM((n - 512,), np.float32)])
    small.lower(x)
