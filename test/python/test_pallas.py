"""Pallas kernels (`ember.experimental.pallas`) against NumPy: grids and
block specs, refs under control flow, scratch and aliasing, the Triton-style
masked loads/stores and atomics, and kernels under jit/grad/vmap."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember.experimental import pallas as pl
from ember.experimental.pallas import triton as plt

from helpers import load_example


def _sds(shape, dtype=np.float32):
    return ember.ShapeDtypeStruct(shape, dtype)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_add_without_grid_eager_and_jit():
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def add(x, y):
        return pl.pallas_call(kernel, out_shape=_sds(x.shape, x.dtype), interpret=True)(x, y)

    x, y = _rand(8), _rand(8, seed=1)
    np.testing.assert_allclose(add(x, y), x + y, rtol=1e-6)
    np.testing.assert_allclose(ember.jit(add)(x, y), x + y, rtol=1e-6)


def test_program_id_and_num_programs():
    def kernel(o_ref):
        i, j = pl.program_id(0), pl.program_id(1)
        o_ref[i, j] = i * pl.num_programs(1) + j

    out = pl.pallas_call(kernel, out_shape=_sds((3, 5), np.int32), grid=(3, 5))()
    np.testing.assert_array_equal(out, np.arange(15).reshape(3, 5))


def _blocked_matmul(x, y, bm, bk, bn):
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[...] @ y_ref[...]

    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        kernel,
        out_shape=_sds((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
    )(x, y)


def test_blocked_matmul_accumulates_over_a_revisited_output_block():
    x, y = _rand(64, 32), _rand(32, 48, seed=1)
    np.testing.assert_allclose(_blocked_matmul(x, y, 16, 8, 16), x @ y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        ember.jit(_blocked_matmul, static_argnums=(2, 3, 4))(x, y, 32, 16, 24),
        x @ y,
        rtol=1e-4,
        atol=1e-4,
    )


def test_grad_and_vmap_of_a_kernel():
    x, y = _rand(32, 16), _rand(16, 24, seed=1)
    g = ember.grad(lambda x: jnp.sum(_blocked_matmul(x, y, 16, 8, 8) ** 2))(x)
    np.testing.assert_allclose(g, 2 * (x @ y) @ y.T, rtol=1e-4, atol=1e-4)
    xs = _rand(3, 32, 16, seed=2)
    out = ember.vmap(lambda x: _blocked_matmul(x, y, 16, 8, 8))(xs)
    np.testing.assert_allclose(out, xs @ y, rtol=1e-4, atol=1e-4)


def test_custom_vjp_around_a_kernel():
    def sq_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * x_ref[...]

    @ember.custom_vjp
    def square(x):
        return pl.pallas_call(
            sq_kernel,
            out_shape=_sds(x.shape, x.dtype),
            grid=(2,),
            in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
            out_specs=pl.BlockSpec((4,), lambda i: (i,)),
        )(x)

    square.defvjp(lambda x: (square(x), x), lambda x, g: (2 * x * g,))
    x = _rand(8)
    np.testing.assert_allclose(ember.grad(lambda x: square(x).sum())(x), 2 * x, rtol=1e-6)


def test_blocks_that_overhang_the_array():
    def kernel(x_ref, o_ref, nan_ref):
        o_ref[...] = x_ref[...] * 2
        nan_ref[...] = jnp.isnan(x_ref[...]).astype(np.int32)

    x = np.arange(10, dtype=np.float32)
    spec = pl.BlockSpec((4,), lambda i: (i,))
    out, nans = pl.pallas_call(
        kernel,
        out_shape=(_sds((10,)), _sds((12,), np.int32)),
        grid=(3,),
        in_specs=[spec],
        out_specs=[spec, spec],
    )(x)
    np.testing.assert_array_equal(out, x * 2)
    # JAX's interpreter fills the overhang of an input block with NaN.
    np.testing.assert_array_equal(nans, [0] * 10 + [1] * 2)


def test_squeezed_block_dimensions():
    def kernel(x_ref, o_ref):
        assert x_ref.shape == (6,)
        o_ref[...] = jnp.cumsum(x_ref[...])

    x = _rand(4, 6)
    spec = pl.BlockSpec((None, 6), lambda i: (i, 0))
    out = pl.pallas_call(
        kernel,
        out_shape=_sds((4, 6)),
        grid=(4,),
        in_specs=[spec],
        out_specs=pl.BlockSpec((pl.squeezed, 6), lambda i: (i, 0)),
    )(x)
    np.testing.assert_allclose(out, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-6)


def test_element_indexed_blocks_with_padding():
    # A sliding window: block i sees x[i : i + 3] of x padded by one on both sides.
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.sum(x_ref[...], keepdims=True)

    x = np.arange(1, 7, dtype=np.float32)
    out = pl.pallas_call(
        kernel,
        out_shape=_sds((6,)),
        grid=(6,),
        in_specs=[pl.BlockSpec((pl.Element(3, (1, 1)),), lambda i: (i,))],
        out_specs=pl.BlockSpec((1,), lambda i: (i,)),
    )(x)
    xp = np.concatenate([[np.nan], x, [np.nan]])
    np.testing.assert_allclose(out, [xp[i : i + 3].sum() for i in range(6)])


def test_refs_under_fori_loop_while_loop_and_pl_loop():
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)

        def body(i, c):
            o_ref[i] = x_ref[i] * c
            return c + 1.0

        c = lax.fori_loop(0, 4, body, 1.0)

        @pl.loop(4, 8, step=2)
        def _(i):
            o_ref[pl.ds(i, 2)] = x_ref[pl.ds(i, 2)] + c

        def cond(k):
            return o_ref[7] < 100.0

        def grow(k):
            o_ref[7] = o_ref[7] * 2.0
            return k + 1

        o_ref[0] = lax.while_loop(cond, grow, 0).astype(np.float32)

    x = np.arange(1, 9, dtype=np.float32)
    out = pl.pallas_call(kernel, out_shape=_sds((8,)))(x)
    expect = x.copy()
    expect[:4] = x[:4] * np.arange(1, 5)
    expect[4:] = x[4:] + 5.0
    k = 0
    while expect[7] < 100:
        expect[7] *= 2
        k += 1
    expect[0] = k
    np.testing.assert_allclose(out, expect)


def test_lax_cond_inside_a_kernel_writes_refs():
    def kernel(x_ref, o_ref):
        def pos():
            o_ref[...] = x_ref[...]

        def neg():
            o_ref[...] = -x_ref[...]

        lax.cond(x_ref[0] > 0, pos, neg)

    for x in (np.array([1.0, -2.0], np.float32), np.array([-1.0, 2.0], np.float32)):
        out = pl.pallas_call(kernel, out_shape=_sds((2,)))(x)
        np.testing.assert_array_equal(out, x if x[0] > 0 else -x)


def test_scratch_persists_across_the_grid():
    # A sequential reduction: the scratch accumulator survives grid steps.
    def kernel(x_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += x_ref[...]

        @pl.when(pl.program_id(0) == pl.num_programs(0) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    x = _rand(5, 3)
    out = pl.pallas_call(
        kernel,
        out_shape=_sds((3,)),
        grid=(5,),
        in_specs=[pl.BlockSpec((None, 3), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((3,), lambda i: (0,)),
        scratch_shapes=[pl.MemoryRef((3,), np.float32)],
    )(x)
    np.testing.assert_allclose(out, x.sum(0), rtol=1e-5)


def test_run_scoped_and_input_output_aliases():
    def kernel(x_ref, o_ref):
        def scoped(tmp_ref):
            tmp_ref[...] = o_ref[...] * 3.0
            o_ref[...] = tmp_ref[...] + 1.0

        pl.run_scoped(scoped, pl.MemoryRef((4,), np.float32))

    x = np.arange(4, dtype=np.float32)
    out = pl.pallas_call(kernel, out_shape=_sds((4,)), input_output_aliases={0: 0})(x)
    np.testing.assert_array_equal(out, x * 3 + 1)


def test_strided_and_integer_array_indexing():
    def kernel(x_ref, o_ref, p_ref):
        o_ref[...] = x_ref[pl.ds(1, 4, stride=2)]
        p_ref[jnp.array([3, 0, 1, 2])] = x_ref[jnp.array([0, 1, 2, 3])]

    x = np.arange(10, dtype=np.float32)
    out, perm = pl.pallas_call(kernel, out_shape=(_sds((4,)), _sds((4,))))(x)
    np.testing.assert_array_equal(out, x[1:9:2])
    np.testing.assert_array_equal(perm, [1, 2, 3, 0])


def test_triton_masked_load_store_at_the_edge():
    block = 8

    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        offs = i * block + jnp.arange(block)
        mask = offs < x_ref.shape[0]
        v = plt.load(x_ref.at[pl.ds(i * block, block)], mask=mask, other=0.0)
        plt.store(o_ref.at[pl.ds(i * block, block)], jnp.exp(v), mask=mask)

    x = _rand(13)
    out = pl.pallas_call(kernel, out_shape=_sds((13,)), grid=(pl.cdiv(13, block),))(x)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)


def test_triton_atomic_add_histogram():
    def kernel(x_ref, h_ref):
        i = pl.program_id(0)

        @pl.when(i == 0)
        def _():
            h_ref[...] = jnp.zeros_like(h_ref)

        old = plt.atomic_add(h_ref, (x_ref[i],), 1)
        del old

    x = np.array([0, 2, 2, 1, 3, 2, 0], np.int32)
    h = pl.pallas_call(kernel, out_shape=_sds((4,), np.int32), grid=(7,))(x)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=4))


def test_row_softmax_kernel_matches_numpy():
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)

    x = _rand(16, 32)
    out = ember.jit(
        lambda x: pl.pallas_call(
            kernel,
            out_shape=_sds(x.shape),
            grid=(4,),
            in_specs=[pl.BlockSpec((4, 32), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((4, 32), lambda i: (i, 0)),
        )(x)
    )(x)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_run_state():
    def f(refs):
        a, b = refs
        b[...] = a[...] * 2
        a[0] = 7.0

    a, b = pl.run_state(f)((jnp.ones(3), jnp.zeros(3)))
    np.testing.assert_array_equal(a, [7, 1, 1])
    np.testing.assert_array_equal(b, [2, 2, 2])


def test_errors_name_the_users_line():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    with pytest.raises(ValueError, match=r"rank.*test_pallas\.py"):
        pl.pallas_call(
            kernel, out_shape=_sds((4,)), in_specs=[pl.BlockSpec((2, 2), lambda: (0, 0))]
        )(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="inside a Pallas kernel"):
        pl.program_id(0)

    def bad_dtype(x_ref, o_ref):
        o_ref[...] = x_ref[...].astype(np.int32)

    with pytest.raises(TypeError, match=r"dtype.*test_pallas\.py"):
        pl.pallas_call(bad_dtype, out_shape=_sds((4,)))(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="out_shape"):
        pl.pallas_call(kernel, out_shape=(4,))(np.zeros(4, np.float32))

    def oob(x_ref, o_ref):
        o_ref[...] = x_ref[5]

    with pytest.raises(IndexError, match="out of bounds"):
        pl.pallas_call(oob, out_shape=_sds(()))(np.zeros(4, np.float32))


def _flash():
    return load_example("pallas_flash_attention")


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_example(causal):
    fa = _flash()
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 128, 32)).astype(np.float32) for _ in range(3))
    out = ember.jit(lambda q, k, v: fa.flash_attention(q, k, v, block_q=32, block_k=32,
                                                       causal=causal))(q, k, v)
    np.testing.assert_allclose(out, fa.reference(q, k, v, causal), rtol=1e-5, atol=1e-5)


def test_grad_through_flash_attention():
    fa = _flash()
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 1, 64, 16)).astype(np.float32) for _ in range(3))

    def plain(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(16)
        return jnp.einsum("bhqk,bhkd->bhqd", ember.nn.softmax(s, axis=-1), v)

    g = ember.grad(lambda q: jnp.sum(fa.flash_attention(q, k, v, block_q=16,
                                                        block_k=16) ** 2))(q)
    g_ref = ember.grad(lambda q: jnp.sum(plain(q, k, v) ** 2))(q)
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-5)


def test_tpu_scalar_prefetch_and_manual_dma():
    from ember.experimental.pallas import tpu as pltpu

    # Gather rows chosen by a prefetched index vector through the index map.
    def gather_kernel(idx_ref, x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    x = _rand(6, 8)
    idx = np.array([4, 0, 5], np.int32)
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(3,),
        in_specs=[pl.BlockSpec((None, 8), lambda i, idx_ref: (idx_ref[i], 0))],
        out_specs=pl.BlockSpec((None, 8), lambda i, idx_ref: (i, 0)))
    out = pl.pallas_call(gather_kernel, out_shape=_sds((3, 8)), grid_spec=spec,
                         compiler_params=pltpu.CompilerParams(
                             dimension_semantics=("parallel",)))(idx, x)
    np.testing.assert_allclose(out, x[idx] * 2)

    # A kernel that copies its HBM input by DMA into VMEM scratch.
    def dma_kernel(x_hbm, o_ref, buf, sem):
        copy = pltpu.make_async_copy(x_hbm.at[pl.ds(2, 4)], buf, sem.at[0])
        copy.start()
        copy.wait()
        o_ref[...] = buf[...] + 1

    out = pl.pallas_call(dma_kernel, out_shape=_sds((4, 8)),
                         in_specs=[pl.BlockSpec(memory_space=pltpu.ANY)],
                         scratch_shapes=[pltpu.VMEM((4, 8), np.float32),
                                         pltpu.SemaphoreType.DMA((1,))])(x)
    np.testing.assert_allclose(out, x[2:6] + 1)


def test_shape_dtype_struct_like():
    s = ember.ShapeDtypeStruct.like(jnp.ones((2, 3), jnp.int32))
    assert s.shape == (2, 3) and s.dtype == np.int32
