"""The plgpu interpreter: kernels with clusters, TMA-style copies,
barriers and wgmma run on the CPU with the GPU's results, and misuse of
barriers and shared memory is reported with the kernel's lines."""

import functools
import os
import pathlib
import re
import subprocess
import sys
import types
import typing

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember.experimental import pallas as pl
from ember.experimental.pallas import mosaic_gpu as plgpu

from helpers import load_example

_ex = load_example("pallas_gpu_kernels")
_collective_smem_reuse = _ex.collective_smem_reuse
_pipelined_matmul = _ex.pipelined_matmul
_blackwell_collective_matmul = _ex.blackwell_collective_matmul


def _sds(shape, dtype=np.float32):
    return ember.ShapeDtypeStruct(shape, dtype)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_grid_and_cluster_copy_compute_store():
    def body(x_ref, o_ref, smem, bar):
        i = lax.axis_index("x") * 2 + lax.axis_index("cl")
        plgpu.copy_gmem_to_smem(x_ref.at[pl.ds(i * 8, 8)], smem, bar)
        plgpu.barrier_wait(bar)
        smem[...] = smem[...] * 2
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(smem, o_ref.at[pl.ds(i * 8, 8)])
        plgpu.wait_smem_to_gmem(0)

    x = _rand(32, 4)
    out = plgpu.kernel(body, out_shape=_sds((32, 4)), grid=(2,), grid_names=("x",),
                       cluster=(2,), cluster_names=("cl",),
                       scratch_shapes=[plgpu.SMEM((8, 4), np.float32), plgpu.Barrier(1)])(x)
    np.testing.assert_array_equal(out, x * 2)


def test_collective_smem_reuse_guarded_by_a_cluster_barrier():
    x = _rand(4, 8, 16)
    out = _collective_smem_reuse(True)(x)
    np.testing.assert_allclose(out, np.stack([x.sum(0), 2 * x.sum(0)]), rtol=1e-5, atol=1e-6)


def test_collective_smem_reuse_without_the_cluster_barrier_is_a_race():
    with pytest.raises(plgpu.InterpretError,
                       match=r"a copy issued by block \d at .*pallas_gpu_kernels\.py:\d+ "
                             r"wrote"):
        _collective_smem_reuse(False)(_rand(4, 8, 16))


def test_reading_smem_before_its_copy_completed():
    def body(x_ref, o_ref, smem, bar):
        plgpu.copy_gmem_to_smem(x_ref, smem, bar)
        o_ref[...] = smem[...]
        plgpu.barrier_wait(bar)

    with pytest.raises(plgpu.InterpretError, match=r"before the barrier of a copy issued at "
                                                   r".*test_pallas_mosaic_gpu\.py"):
        plgpu.kernel(body, out_shape=_sds((8, 4)),
                     scratch_shapes=[plgpu.SMEM((8, 4), np.float32), plgpu.Barrier(1)])(
            _rand(8, 4))


def test_waiting_more_times_than_armed_is_a_deadlock():
    def body(x_ref, o_ref, smem, bar):
        plgpu.copy_gmem_to_smem(x_ref, smem, bar)
        plgpu.barrier_wait(bar)
        plgpu.barrier_wait(bar)

    with pytest.raises(plgpu.InterpretError, match=r"(?s)deadlock.*barrier_wait at "
                                                   r".*test_pallas_mosaic_gpu\.py:\d+ waits "
                                                   r"for phase 2"):
        plgpu.kernel(body, out_shape=_sds((8, 4)),
                     scratch_shapes=[plgpu.SMEM((8, 4), np.float32), plgpu.Barrier(1)])(
            _rand(8, 4))


def test_arrival_count_mismatch():
    def body(o_ref, bar):
        plgpu.barrier_arrive(bar)
        o_ref[...] = jnp.zeros((2,), jnp.float32)

    with pytest.raises(plgpu.InterpretError, match="got 1 of its 2 arrivals"):
        plgpu.kernel(body, out_shape=_sds((2,)), scratch_shapes=[plgpu.Barrier(2)])()


def test_store_to_gmem_needs_commit_smem_and_wait_before_reuse():
    def no_commit(o_ref, smem):
        smem[...] = jnp.ones((8, 4), jnp.float32)
        plgpu.copy_smem_to_gmem(smem, o_ref)
        plgpu.wait_smem_to_gmem(0)

    with pytest.raises(plgpu.InterpretError, match="without commit_smem"):
        plgpu.kernel(no_commit, out_shape=_sds((8, 4)),
                     scratch_shapes=[plgpu.SMEM((8, 4), np.float32)])()

    def no_wait(o_ref, smem):
        smem[...] = jnp.ones((8, 4), jnp.float32)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(smem, o_ref)
        smem[...] = jnp.zeros((8, 4), jnp.float32)

    with pytest.raises(plgpu.InterpretError, match="may still be reading"):
        plgpu.kernel(no_wait, out_shape=_sds((8, 4)),
                     scratch_shapes=[plgpu.SMEM((8, 4), np.float32)])()


def test_pipelined_wgmma_matmul():
    a, b = _rand(128, 128), _rand(128, 128, seed=1)
    np.testing.assert_allclose(_pipelined_matmul(a, b), a @ b, rtol=1e-4, atol=1e-3)


def test_overwriting_an_operand_before_wgmma_wait_is_a_race():
    def body(a_ref, o_ref, smem, bar, acc):
        plgpu.copy_gmem_to_smem(a_ref, smem, bar)
        plgpu.barrier_wait(bar)
        plgpu.wgmma(acc, smem, smem)
        smem[...] = jnp.zeros((16, 16), jnp.float32)
        plgpu.wgmma_wait(0)
        o_ref[...] = acc[...]

    with pytest.raises(plgpu.InterpretError, match="wgmma"):
        plgpu.kernel(body, out_shape=_sds((16, 16)),
                     scratch_shapes=[plgpu.SMEM((16, 16), np.float32), plgpu.Barrier(1),
                                     plgpu.ACC((16, 16))])(_rand(16, 16))


def test_blackwell_collective_mma_with_tmem_reuse_guard():
    a, b = _rand(256, 64), _rand(64, 128, seed=1)
    np.testing.assert_allclose(_blackwell_collective_matmul(a, b, True), a @ b,
                               rtol=1e-4, atol=1e-4)


def test_tmem_reuse_without_the_cluster_barrier_is_a_race():
    a, b = _rand(256, 64), _rand(64, 128, seed=1)
    with pytest.raises(plgpu.InterpretError,
                       match=r"overwrites TMEM .* of block \d .* tmem-load#\d+ may still be "
                             r"reading it"):
        _blackwell_collective_matmul(a, b, False)


def test_tmem_allocation_limits():
    with pytest.raises(ValueError, match="512"):
        plgpu.TMEM((128, 1024), np.float32)
    with pytest.raises(ValueError, match="lanes"):
        plgpu.TMEM((32, 64), np.float32)


def emit_pipeline_matmul_kernel(m, n, k, dtype, delay_release, tile=64, tile_k=32,
                                transforms=()):
    """The structure of JAX's Mosaic GPU pipelining tutorial: emit_pipeline
    streams A/B tiles into SMEM, the body issues a wgmma and leaves it in
    flight (`wgmma_wait(1)`), so a slot may be refilled only one step later
    (`delay_release=1`); the result leaves through SMEM. (Compiled in
    test_plgpu_compile.py with swizzled bf16 tiles.)"""

    def kernel(a_gmem, b_gmem, o_gmem, o_smem, acc):
        def step(_, a_smem, b_smem):
            plgpu.wgmma(acc, a_smem, b_smem)
            plgpu.wgmma_wait(1)

        pid_m, pid_n = pl.program_id(0), pl.program_id(1)
        pipeline = plgpu.emit_pipeline(
            step, grid=(k // tile_k,), max_concurrent_steps=2, delay_release=delay_release,
            in_specs=[plgpu.BlockSpec((tile, tile_k), lambda kk: (pid_m, kk),
                                      transforms=transforms),
                      plgpu.BlockSpec((tile_k, tile), lambda kk: (kk, pid_n),
                                      transforms=transforms)])
        pipeline(a_gmem, b_gmem)
        plgpu.wgmma_wait(0)
        o_smem[...] = acc[...].astype(o_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem.at[pl.ds(pid_m * tile, tile),
                                                 pl.ds(pid_n * tile, tile)])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        kernel, out_shape=_sds((m, n), dtype), grid=(m // tile, n // tile),
        grid_names=("m", "n"),
        scratch_shapes=dict(o_smem=plgpu.SMEM((tile, tile), dtype, transforms=transforms),
                            acc=plgpu.ACC((tile, tile), np.float32)))


def _emit_pipeline_matmul(a, b, delay_release):
    return emit_pipeline_matmul_kernel(a.shape[0], b.shape[1], a.shape[1], a.dtype,
                                       delay_release)(a, b)


def test_emit_pipeline_matmul_with_delayed_release():
    a, b = _rand(128, 128), _rand(128, 128, seed=1)
    np.testing.assert_allclose(_emit_pipeline_matmul(a, b, 1), a @ b, rtol=1e-4, atol=1e-3)


def test_emit_pipeline_releasing_a_slot_wgmma_still_reads_is_a_race():
    a, b = _rand(128, 128), _rand(128, 128, seed=1)
    with pytest.raises(plgpu.InterpretError, match=r"overwrites SMEM pipeline input .* wgmma#"):
        _emit_pipeline_matmul(a, b, 0)


def warp_specialized_matmul_kernel(m, n, k, dtype, tile, tile_k, transforms=()):
    """The structure of JAX's warp-specialized tutorial kernel: two compute
    thread groups, each owning half of the output columns (its own SMEM
    tile, written back by its own TMA copy), and a memory thread group
    feeding a ring of SMEM slots; the accumulator is carried from step to
    step in registers (`run_state` over `ACC.init`). (Compiled in
    test_plgpu_compile.py with swizzled bf16 tiles.)"""

    def kernel(a_gmem, b_gmem, o_gmem, o_smem):
        wg = lax.axis_index("wg")
        cols = pl.ds(wg * tile, tile)
        pid_m, pid_n = pl.program_id(0), pl.program_id(1)

        def compute(pipeline):
            acc = plgpu.layout_cast(jnp.zeros((tile, tile), jnp.float32), plgpu.Layout.WGMMA)
            o_smem[wg] = pipeline(acc).astype(dtype)
            plgpu.commit_smem()
            plgpu.copy_smem_to_gmem(o_smem.at[wg], o_gmem.at[
                pl.ds(pid_m * tile, tile), pl.ds((pid_n * 2 + wg) * tile, tile)])
            plgpu.wait_smem_to_gmem(0)

        def step(_, a_smem, b_smem, acc):
            def mma(acc_ref):
                plgpu.wgmma(acc_ref, a_smem, b_smem.at[:, cols])
            return pl.run_state(mma)(plgpu.ACC.init(acc))

        pipeline = plgpu.emit_pipeline_warp_specialized(
            step, grid=(k // tile_k,), max_concurrent_steps=2, num_compute_wgs=2,
            memory_registers=40, wg_axis="wg", compute_context=compute,
            in_specs=[plgpu.BlockSpec((tile, tile_k), lambda kk: (pid_m, kk),
                                      transforms=transforms),
                      plgpu.BlockSpec((tile_k, 2 * tile), lambda kk: (kk, pid_n),
                                      transforms=transforms)])
        pipeline(a_gmem, b_gmem)

    return plgpu.kernel(kernel, out_shape=_sds((m, n), dtype), grid=(m // tile, n // (2 * tile)),
                        grid_names=("m", "n"), num_threads=3, thread_name="wg",
                        scratch_shapes=dict(o_smem=plgpu.SMEM((2, tile, tile), dtype,
                                                              transforms=transforms)))


def test_warp_specialized_pipeline_matmul():
    a, b = _rand(64, 64), _rand(64, 128, seed=1)
    out = warp_specialized_matmul_kernel(64, 128, 64, np.float32, 32, 16)(a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)


# JAX's own Blackwell matmul tutorial (docs/pallas/gpu/blackwell_matmul.md),
# read from a jax-ml/jax snapshot where one exists (the `search` tool's
# fetch puts it under /work/.mirror): its final kernel (persistent nd_loop,
# warp-specialized with core_map, leader-tracked partitioned copies, 2-CTA
# collective tcgen05 MMA, double-buffered TMEM whose reuse a ClusterBarrier
# guards) runs as written.
_JAX_SNAPSHOT = os.environ.get("EMBER_JAX_SNAPSHOT", "/work/.mirror/jax-ml+jax/repo")


def _jax_source(path):
    """The text of `path` in the jax-ml/jax snapshot (a git directory), or
    in a plain copy of the repository's files where EMBER_JAX_SNAPSHOT names
    one (the GPU machine of `make gpu-check` has no git snapshot); skips the
    test where neither has it."""
    if os.path.isfile(os.path.join(_JAX_SNAPSHOT, path)):
        with open(os.path.join(_JAX_SNAPSHOT, path)) as f:
            return f.read()
    if not os.path.isdir(_JAX_SNAPSHOT):
        pytest.skip("no jax-ml/jax snapshot on this machine")
    text = subprocess.run(["git", "-C", _JAX_SNAPSHOT, "show", f"HEAD:{path}"],
                          capture_output=True, text=True)
    if text.returncode:
        pytest.skip(f"{path} is not in the snapshot")
    return text.stdout


def _tutorial_cells(path):
    return re.findall(r"```python[^\n]*\n(.*?)```", _jax_source(path), re.S)


def _blackwell_tutorial(guarded):
    cells = _tutorial_cells("docs/pallas/gpu/blackwell_matmul.md")
    code = next(c for c in cells if c.lstrip().startswith("def matmul6"))
    if not guarded:
        code = code.replace("plgpu.barrier_wait(store_done_barrier.at[acc_slot])", "pass")
    device = types.SimpleNamespace(core_count=2)
    # The tutorial's imports, aliased; its TuningConfig grows fields over the
    # text, so a namespace stands in for it.
    ns = dict(jax=ember, jnp=jnp, lax=lax, pl=pl, plgpu=plgpu, TuningConfig=object,
              backend=types.SimpleNamespace(get_default_device=lambda: device))
    exec(compile(code, "blackwell_matmul.md", "exec"), ns)
    config = types.SimpleNamespace(tile_m=128, tile_n=64, tile_k=64, max_concurrent_steps=2,
                                   epilogue_tile_n=32, grid_minor_dim=0, grid_tile_width=2)
    a = jnp.asarray(_rand(512, 256), jnp.bfloat16)
    b = jnp.asarray(_rand(256, 512, seed=1), jnp.bfloat16)
    return ns["matmul6"](a, b, config), a, b


def test_jax_blackwell_tutorial_matmul_runs_as_written():
    out, a, b = _blackwell_tutorial(True)
    ref = np.asarray(a.astype(jnp.float32)) @ np.asarray(b.astype(jnp.float32))
    # bf16 output: half an ulp of the largest values.
    np.testing.assert_allclose(np.asarray(out.astype(jnp.float32)), ref, rtol=2 ** -8, atol=0.5)


def test_jax_blackwell_tutorial_without_its_cluster_barrier_wait_is_a_race():
    with pytest.raises(plgpu.InterpretError, match=r"overwrites TMEM .* tmem-load#\d+ may "
                                                   r"still be reading it"):
        _blackwell_tutorial(False)


def test_kernels_compose_with_jit_and_vmap():
    # Inside jit the interpreter runs on the host when the compiled program
    # reaches the kernel (vmap: one example at a time); its race checks too.
    x = _rand(4, 8, 16)
    k = _collective_smem_reuse(True)
    out = ember.jit(lambda x: k(x * 2.0) + 1.0)(x)
    np.testing.assert_allclose(np.asarray(out), np.stack([2 * x.sum(0), 4 * x.sum(0)]) + 1,
                               rtol=1e-5, atol=1e-5)
    batched = ember.vmap(k)(np.stack([x, -x]))
    np.testing.assert_allclose(np.asarray(batched[1]), -np.stack([x.sum(0), 2 * x.sum(0)]),
                               rtol=1e-5, atol=1e-5)
    # The report names the example's line that reads the SMEM tile.
    lines = pathlib.Path(_ex.__file__).read_text().splitlines()
    read = next(i for i, line in enumerate(lines, 1) if "smem[...] * (b + 1)" in line)
    with pytest.raises(plgpu.InterpretError, match=f"pallas_gpu_kernels.py:{read}"):
        ember.jit(_collective_smem_reuse(False))(x)


# JAX's FlashAttention-3 for Hopper (jax/experimental/pallas/ops/gpu/
# attention_mgpu.py), read from a jax-ml/jax snapshot where one exists: its
# forward kernel (two compute warpgroups and a memory warpgroup, K through
# transpose_ref, P @ V with P in registers, set_max_registers, a schedule
# barrier), the causal variant (broadcasted_iota masks), the variant built
# on emit_pipeline_warp_specialized with manual consumed barriers, and the
# backward kernels (dq and dk/dv) run as written, with the import changed.
def _jax_attention_module():
    src = _jax_source("jax/experimental/pallas/ops/gpu/attention_mgpu.py")
    # The three imports of JAX internals it makes (test utilities, the CUDA
    # version, the profiler) have no Ember counterpart: a stand-in reports
    # CUDA 12.9.1 (the version its causal check accepts).
    for internal in ("from jax._src import test_util", "from jax._src.lib import cuda_versions",
                     "from jax.experimental.mosaic.gpu import profiler"):
        src = re.sub(rf"^{re.escape(internal)}.*$", "", src, flags=re.M)
    src = src.replace("import jax\n", "import ember as jax\n").replace("from jax ", "from ember ")
    src = src.replace("import jax.", "import ember.")
    if sys.version_info < (3, 12):  # PEP 695's generic class, as 3.11 spells it
        src = src.replace("class PipelineCallback[T](Protocol):",
                          "T = typing.TypeVar('T')\nclass PipelineCallback(Protocol[T]):")
    ns = {"__name__": "attention_mgpu", "typing": typing,
          "cuda_versions": types.SimpleNamespace(cuda_runtime_get_version=lambda: 12091)}
    exec(compile(src, "attention_mgpu.py", "exec"), ns)
    return ns


def _attention_numpy(q, k, v, causal=False):
    q, k, v = (np.asarray(x, np.float32) for x in (q, k, v))
    s = np.einsum("bqhd,bkhd->bhqk", q, k)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, v)


def _attention_inputs(b=2, t=256, h=2, d=64):
    rng = np.random.default_rng(0)
    return [jnp.asarray(rng.standard_normal((b, t, h, d)).astype(np.float16)) for _ in range(3)]


@pytest.mark.parametrize("causal", [False, True])
def test_jax_flash_attention3_forward_runs_as_written(causal):
    fa3 = _jax_attention_module()
    q, k, v = _attention_inputs()
    config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2, causal=causal)
    out = fa3["attention"](q, k, v, config)
    assert out.dtype == jnp.float16 and out.shape == q.shape
    # f16 output: a few ulps of values below 4.
    np.testing.assert_allclose(np.asarray(out, np.float32), _attention_numpy(q, k, v, causal),
                               atol=4e-3, rtol=0)


def test_jax_flash_attention3_pipeline_emitter_variant():
    fa3 = _jax_attention_module()
    q, k, v = _attention_inputs(b=1)
    config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2)
    out, (lse,) = fa3["attention_with_pipeline_emitter"](q, k, v, config, save_residuals=True)
    np.testing.assert_allclose(np.asarray(out, np.float32), _attention_numpy(q, k, v),
                               atol=4e-3, rtol=0)
    s = np.einsum("bqhd,bkhd->bhqk", *(np.asarray(x, np.float32) for x in (q, k)))
    # lse is kept in base 2, as the kernel computes it.
    np.testing.assert_allclose(np.asarray(lse), np.log2(np.exp(s).sum(-1)), rtol=1e-4)


def test_jax_flash_attention3_backward_kernels():
    fa3 = _jax_attention_module()
    q, k, v = _attention_inputs(b=1)
    config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2,
                                 block_q_dkv=64, block_kv_dkv=64, block_q_dq=64, block_kv_dq=64)
    w = np.random.default_rng(1).standard_normal(q.shape).astype(np.float32)

    def loss(attention):
        return lambda q, k, v: (attention(q, k, v).astype(jnp.float32) * w).sum()

    grads = ember.grad(loss(lambda q, k, v: fa3["attention"](q, k, v, config)),
                       argnums=(0, 1, 2))(q, k, v)
    f32 = [x.astype(jnp.float32) for x in (q, k, v)]

    def plain(q, k, v):
        p = ember.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k), axis=-1)
        return jnp.einsum("bhqk,bkhd->bqhd", p, v)

    ref = ember.grad(loss(plain), argnums=(0, 1, 2))(*f32)
    for g, r in zip(grads, ref):
        assert g.dtype == jnp.float16
        r = np.asarray(r)
        np.testing.assert_allclose(np.asarray(g, np.float32), r, atol=1e-2 * np.abs(r).max(),
                                   rtol=0)


def test_transpose_ref_reads_writes_and_k_major_wgmma_operand():
    # B stored N x K (K-major, as a K tile of attention is) and given to
    # wgmma through transpose_ref; a transposed view reads and writes the
    # buffer it views.
    def body(a_ref, bt_ref, o_ref, t_ref, a_smem, bt_smem, bar, acc):
        plgpu.copy_gmem_to_smem(a_ref, a_smem, bar)
        plgpu.copy_gmem_to_smem(bt_ref, bt_smem, bar)
        plgpu.barrier_wait(bar)
        plgpu.wgmma(acc, a_smem, plgpu.transpose_ref(bt_smem, (1, 0)))
        o_ref[...] = acc[...]
        view = plgpu.transpose_ref(bt_smem, (1, 0))
        assert view.shape == (32, 48)
        view[0:2, :] = jnp.zeros((2, 48), jnp.float32)  # bt_smem[:, 0:2]
        t_ref[...] = view[:, 4]

    a, bt = _rand(64, 32), _rand(48, 32, seed=1)
    out, t = plgpu.kernel(body, out_type=(_sds((64, 48)), _sds((32,))),
                          scratch_types=[plgpu.SMEM((64, 32), np.float32),
                                         plgpu.SMEM((48, 32), np.float32),
                                         plgpu.Barrier(2), plgpu.ACC((64, 48))])(a, bt)
    np.testing.assert_allclose(out, a @ bt.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(t, np.concatenate([[0, 0], bt[4, 2:]]))
    with pytest.raises(ValueError, match="not a permutation"):
        plgpu.kernel(lambda x, o: plgpu.transpose_ref(x, (0, 0)), out_type=_sds((2,)))(
            np.zeros((2, 2), np.float32))


def test_run_scoped_collective_axes_shares_buffers_between_warpgroups():
    # With collective_axes naming the thread axis, both warpgroups get the
    # same SMEM buffer and barrier: each writes half, both read all.
    def body(o_ref):
        wg = lax.axis_index("wg")

        def shared(buf, bar):
            buf[pl.ds(wg * 4, 4)] = jnp.full((4,), wg + 1, jnp.float32)
            plgpu.barrier_arrive(bar)
            plgpu.barrier_wait(bar)
            o_ref[wg] = buf[...]

        pl.run_scoped(shared, plgpu.SMEM((8,), jnp.float32), plgpu.Barrier(num_arrivals=2),
                      collective_axes="wg")

    out = plgpu.kernel(body, out_type=_sds((2, 8)), num_threads=2, thread_name="wg")()
    np.testing.assert_array_equal(out, [[1] * 4 + [2] * 4] * 2)

    # Without it each warpgroup has its own buffer (and barrier).
    def own(o_ref):
        wg = lax.axis_index("wg")

        def scoped(buf):
            buf[...] = jnp.full((8,), wg + 1, jnp.float32)
            o_ref[wg] = buf[...]

        pl.run_scoped(scoped, plgpu.SMEM((8,), jnp.float32))

    out = plgpu.kernel(own, out_type=_sds((2, 8)), num_threads=2, thread_name="wg")()
    np.testing.assert_array_equal(out, [[1] * 8, [2] * 8])


def test_pytree_operands_outputs_and_scratch():
    # As in JAX: one body argument per operand and per element of out_type,
    # each a pytree of refs (None where an output is None); scratch types
    # may be pytrees too.
    def body(xy, o_ref, none_ref, scratch):
        (buf, bar), nothing = scratch
        assert none_ref is None and nothing is None
        x_ref, y_ref = xy
        plgpu.copy_gmem_to_smem(x_ref, buf, bar)
        plgpu.barrier_wait(bar)
        o_ref[...] = buf[...] + y_ref[...]

    x, y = _rand(8), _rand(8, seed=1)
    out, none = plgpu.kernel(body, out_type=[_sds((8,)), None],
                             scratch_types=[((plgpu.SMEM((8,), jnp.float32), plgpu.Barrier()),
                                             None)])((x, y))
    assert none is None
    np.testing.assert_allclose(out, x + y)


def test_set_max_registers_broadcasted_iota_and_load():
    def body(x_ref, o_ref):
        plgpu.set_max_registers(232, action="increase")
        rows = plgpu.broadcasted_iota(jnp.int32, (4, 8), 0, layout=plgpu.Layout.WGMMA)
        x = plgpu.load(x_ref, layout=plgpu.Layout.WGMMA.reduce(1))
        o_ref[...] = rows.astype(jnp.float32) + x[:, None] + plgpu.load(x_ref, 1)

    x = _rand(4)
    out = plgpu.kernel(body, out_type=_sds((4, 8)))(x)
    np.testing.assert_allclose(out, np.broadcast_to(np.arange(4)[:, None] + x[:, None] + x[1],
                                                    (4, 8)))
    assert repr(plgpu.Layout.WGMMA.reduce(1)) == "Layout.WGMMA_ROW"
    with pytest.raises(ValueError, match="action must be"):
        plgpu.kernel(lambda o: plgpu.set_max_registers(232, action="more"),
                     out_type=_sds((1,)))()
    with pytest.raises(ValueError, match="multiple of 8 from 24 to 256"):
        plgpu.kernel(lambda o: plgpu.set_max_registers(20, action="decrease"),
                     out_type=_sds((1,)))()


def _manual_barrier_pipeline(release_b):
    """Sums the rows of two inputs through a warp-specialized pipeline with
    manual consumed barriers (each input's slot released by the body)."""
    def kernel(a_gmem, b_gmem, o_gmem):
        def compute(pipeline):
            o_gmem[...] = pipeline(jnp.zeros((8,), jnp.float32))

        def step(_, a_smem, b_smem, a_consumed, b_consumed, carry):
            carry = carry + a_smem[0] + b_smem[0]
            plgpu.barrier_arrive(a_consumed)
            if release_b:
                plgpu.barrier_arrive(b_consumed)
            return carry

        plgpu.emit_pipeline_warp_specialized(
            step, grid=(4,), max_concurrent_steps=2, num_compute_wgs=1, wg_axis="wg",
            manual_consumed_barriers=True, compute_context=compute,
            in_specs=[plgpu.BlockSpec((1, 8), lambda i: (i, 0)),
                      plgpu.BlockSpec((1, 8), lambda i: (i, 0))])(a_gmem, b_gmem)

    return plgpu.kernel(kernel, out_type=_sds((8,)), num_threads=2, thread_name="wg")


def test_warp_specialized_pipeline_with_manual_consumed_barriers():
    a, b = _rand(4, 8), _rand(4, 8, seed=1)
    np.testing.assert_allclose(_manual_barrier_pipeline(True)(a, b), (a + b).sum(0), rtol=1e-5)
    # A slot of B never released: the memory group waits forever.
    with pytest.raises(plgpu.InterpretError, match="deadlock"):
        _manual_barrier_pipeline(False)(a, b)


def test_reading_the_accumulator_waits_for_its_wgmma():
    # acc[...] completes the wgmmas in flight (JAX's accumulator
    # dereference), so overwriting an operand after it is no race;
    # wgmma_accumulator_load(wait_n=None) does not wait.
    def body(wait, a_ref, o_ref, smem, bar, acc):
        plgpu.copy_gmem_to_smem(a_ref, smem, bar)
        plgpu.barrier_wait(bar)
        plgpu.wgmma(acc, smem, smem)
        o_ref[...] = acc[...] if wait else plgpu.wgmma_accumulator_load(acc, wait_n=None)
        smem[...] = jnp.zeros((16, 16), jnp.float32)

    a = _rand(16, 16)
    scratch = [plgpu.SMEM((16, 16), np.float32), plgpu.Barrier(1), plgpu.ACC((16, 16))]
    out = plgpu.kernel(functools.partial(body, True), out_type=_sds((16, 16)),
                       scratch_types=scratch)(a)
    np.testing.assert_allclose(out, a @ a, rtol=1e-4, atol=1e-4)
    with pytest.raises(plgpu.InterpretError, match="wgmma"):
        plgpu.kernel(functools.partial(body, False), out_type=_sds((16, 16)),
                     scratch_types=scratch)(a)


def test_run_scoped_inside_warps_gives_each_warp_its_buffer():
    def body(o_ref):
        @pl.core_map(plgpu.WarpMesh(axis_name="warp"))
        def _():
            w = lax.axis_index("warp")

            def scoped(buf):
                buf[...] = jnp.full((4,), w, jnp.float32)
                o_ref[w] = buf[...]

            pl.run_scoped(scoped, plgpu.SMEM((4,), jnp.float32))

    out = plgpu.kernel(body, out_type=_sds((4, 4)))()
    np.testing.assert_array_equal(out, np.repeat(np.arange(4.0)[:, None], 4, 1))
