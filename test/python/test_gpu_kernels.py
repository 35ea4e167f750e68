"""Pallas-style kernels compiled for the GPU and run on one (#18 on a real
H200, `make gpu-check`): each kernel runs inside a `jit` program lowered
for cuda, and its result is checked against NumPy (and so against the
kernel interpreter, which the other kernel tests check against NumPy).
Without a CUDA GPU every test here skips; test_plgpu_compile.py checks the
same kernels' PTX with ptxas everywhere.

Each kernel is the one of the compile-only tests or the examples, at a size
that gives several blocks (and several pipeline steps per block)."""

import functools
import pathlib
import sys

import numpy as np
import pytest
from test_cuda_target import needs_gpu

import ember
import ember.numpy as jnp
from ember import lax
from ember.experimental import pallas as pl
from ember.experimental.pallas import mosaic_gpu as plgpu

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import pallas_gpu_kernels as examples  # noqa: E402

pytestmark = needs_gpu
SWIZZLED = (plgpu.TilingTransform((8, 64)), plgpu.SwizzleTransform(128))


def on_gpu(f, *args):
    """f's jit program lowered for cuda, run on GPU 0 (its plgpu kernels
    launched as compiled, not interpreted)."""
    return ember.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).compile()(*args)


def _bf16(*shape, seed=0):
    import ml_dtypes

    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32).astype(ml_dtypes.bfloat16)


def _matmul_ref(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)


def test_elementwise_plgpu_kernel():
    def scale(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 3.0

    k = plgpu.kernel(scale, out_shape=ember.ShapeDtypeStruct((8, 128), np.float32))
    x = np.arange(8 * 128, dtype=np.float32).reshape(8, 128)
    np.testing.assert_allclose(np.asarray(on_gpu(lambda x: k(x + 1.0) - 1.0, x)),
                               (x + 1.0) * 3.0 - 1.0)


def test_blocked_pallas_call():
    def kernel(x_ref, y_ref, o_ref):
        i = pl.program_id(0)
        o_ref[...] = jnp.maximum(x_ref[...], y_ref[...]) * (i + 1).astype(jnp.float32)

    spec = pl.BlockSpec((64, 128), lambda i, j: (i, j))
    f = pl.pallas_call(kernel, out_shape=ember.ShapeDtypeStruct((128, 256), np.float32),
                       grid=(2, 2), in_specs=[spec, spec], out_specs=spec)
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((128, 256)).astype(np.float32) for _ in range(2))
    want = np.maximum(x, y) * np.repeat([1.0, 2.0], 64)[:, None].astype(np.float32)
    np.testing.assert_allclose(np.asarray(on_gpu(f, x, y)), want)


def test_cluster_multicast_with_a_cluster_barrier():
    # Two blocks of a cluster multicast each step's tile (each loads half
    # of it for both); a ClusterBarrier orders the reuse of the buffer.
    x = np.random.default_rng(2).standard_normal((4, 8, 16)).astype(np.float32)
    k = examples.collective_smem_reuse(True)
    want = np.stack([x.sum(0), 2 * x.sum(0)])
    np.testing.assert_allclose(np.asarray(on_gpu(k, x)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m,n,k", [(256, 256, 128), (512, 1024, 1024)])
def test_hopper_matmul_tma_and_wgmma(m, n, k):
    # TMA copies into a ring of swizzled SMEM slots, mbarriers, wgmma
    # accumulating in registers, the tile written back by a TMA copy.
    a, b = _bf16(m, k, seed=3), _bf16(k, n, seed=4)
    kern = examples.hopper_matmul_kernel(m, n, k, jnp.bfloat16)
    got = np.asarray(on_gpu(lambda a, b: kern(a, b).astype(jnp.float32), a, b))
    np.testing.assert_allclose(got, _matmul_ref(a, b), rtol=1e-2, atol=0.1)


def test_emit_pipeline_matmul():
    from test_pallas_mosaic_gpu import emit_pipeline_matmul_kernel

    a, b = _bf16(256, 512, seed=5), _bf16(512, 256, seed=6)
    kern = emit_pipeline_matmul_kernel(256, 256, 512, jnp.bfloat16, 1, tile=128, tile_k=64,
                                       transforms=SWIZZLED)
    got = np.asarray(on_gpu(lambda a, b: kern(a, b).astype(jnp.float32), a, b))
    np.testing.assert_allclose(got, _matmul_ref(a, b), rtol=1e-2, atol=0.1)


def test_warp_specialized_matmul():
    # A memory warpgroup feeding two compute warpgroups through a ring of
    # slots with full/consumed barriers.
    from test_pallas_mosaic_gpu import warp_specialized_matmul_kernel

    a, b = _bf16(256, 512, seed=7), _bf16(512, 512, seed=8)
    kern = warp_specialized_matmul_kernel(256, 512, 512, jnp.bfloat16, 128, 64,
                                          transforms=SWIZZLED)
    got = np.asarray(on_gpu(lambda a, b: kern(a, b).astype(jnp.float32), a, b))
    np.testing.assert_allclose(got, _matmul_ref(a, b), rtol=1e-2, atol=0.1)


def test_attention_steps_in_register_layouts():
    # Q @ K^T (K K-major through transpose_ref), row statistics in the
    # WGMMA_ROW layout, P @ V with P in registers, carried in a fori_loop.
    from test_plgpu_compile import _attention_steps_kernel, attention_steps_case

    (q, k, v), want = attention_steps_case()
    kern = _attention_steps_kernel()
    np.testing.assert_allclose(np.asarray(on_gpu(kern, q, k, v)), want, atol=2e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_example_flash_attention(causal):
    import pallas_flash_attention as fa

    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 2, 256, 64)).astype(np.float32) for _ in range(3))
    call = fa.flash_attention_call(q.shape, q.dtype, causal=causal)
    np.testing.assert_allclose(np.asarray(on_gpu(call, q, k, v)),
                               fa.reference(q, k, v, causal), rtol=1e-4, atol=1e-4)


def test_fori_loop_and_dot():
    def body(x_ref, w_ref, o_ref):
        def step(i, acc):
            return acc + x_ref[...] @ w_ref[...].T
        o_ref[...] = lax.fori_loop(0, 3, step, jnp.zeros(o_ref.shape, jnp.float32))

    x = np.random.default_rng(9).standard_normal((64, 32)).astype(np.float32)
    w = np.random.default_rng(10).standard_normal((128, 32)).astype(np.float32)
    k = plgpu.kernel(body, out_shape=ember.ShapeDtypeStruct((64, 128), np.float32))
    np.testing.assert_allclose(np.asarray(on_gpu(k, x, w)), 3 * (x @ w.T), rtol=1e-4,
                               atol=1e-4)


def _fa3():
    from test_pallas_mosaic_gpu import _jax_attention_module

    return _jax_attention_module()


@pytest.mark.parametrize("causal", [False, True])
def test_jax_flash_attention3_forward(causal):
    # JAX's FlashAttention-3 (attention_mgpu.py, as written; read from a
    # jax-ml/jax snapshot where one is given), compiled and run.
    from test_pallas_mosaic_gpu import _attention_inputs, _attention_numpy

    fa3 = _fa3()
    q, k, v = (np.asarray(t) for t in _attention_inputs())
    config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2, causal=causal)
    out = on_gpu(functools.partial(fa3["attention"], config=config), q, k, v)
    np.testing.assert_allclose(np.asarray(out, np.float32), _attention_numpy(q, k, v, causal),
                               atol=4e-3, rtol=0)


def test_jax_flash_attention3_pipeline_emitter_variant():
    # Its SMEM transforms inferred (LoweringSemantics.Warpgroup), lse in
    # base 2 as the kernel keeps it.
    from test_pallas_mosaic_gpu import _attention_inputs, _attention_numpy

    fa3 = _fa3()
    q, k, v = (np.asarray(t) for t in _attention_inputs(b=1))
    config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2)
    out, (lse,) = on_gpu(lambda q, k, v: fa3["attention_with_pipeline_emitter"](
        q, k, v, config, save_residuals=True), q, k, v)
    np.testing.assert_allclose(np.asarray(out, np.float32), _attention_numpy(q, k, v),
                               atol=4e-3, rtol=0)
    s = np.einsum("bqhd,bkhd->bhqk", *(x.astype(np.float32) for x in (q, k)))
    np.testing.assert_allclose(np.asarray(lse), np.log2(np.exp(s).sum(-1)), rtol=1e-4)


def test_jax_flash_attention3_backward_kernels():
    # The dQ and dK/dV kernels under grad, against the plain formula's
    # gradients.
    from test_pallas_mosaic_gpu import _attention_inputs

    fa3 = _fa3()
    q, k, v = (np.asarray(t) for t in _attention_inputs(b=1))
    config = fa3["TuningConfig"](block_q=64, block_kv=64, max_concurrent_steps=2,
                                 block_q_dkv=64, block_kv_dkv=64, block_q_dq=64, block_kv_dq=64)
    w = np.random.default_rng(1).standard_normal(q.shape).astype(np.float32)

    def loss(attention):
        return lambda q, k, v: (attention(q, k, v).astype(jnp.float32) * w).sum()

    grads = on_gpu(ember.grad(loss(lambda q, k, v: fa3["attention"](q, k, v, config)),
                              argnums=(0, 1, 2)), q, k, v)

    def plain(q, k, v):
        p = ember.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k), axis=-1)
        return jnp.einsum("bhqk,bkhd->bqhd", p, v)

    ref = ember.grad(loss(plain), argnums=(0, 1, 2))(*(x.astype(np.float32) for x in (q, k, v)))
    for g, r in zip(grads, ref):
        r = np.asarray(r)
        np.testing.assert_allclose(np.asarray(g, np.float32), r, atol=1e-2 * np.abs(r).max(),
                                   rtol=0)

