"""ember.lax functions of _src/lax_extras.py, against NumPy/SciPy and values
recorded from JAX 0.10.2 (jax.lax on the CPU)."""

import numpy as np
import pytest
import scipy.special as sps

import ember
import ember.numpy as jnp
from ember import lax

from helpers import assert_prints_recorded

F32 = np.float32


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


# --------------------------------------------------------------------------
# special functions (JAX 0.10.2's values)
# --------------------------------------------------------------------------

A = np.array([0.5, 2.0, 5.0], F32)
X = np.array([0.3, 2.5, 3.0], F32)


def test_igamma_igammac():
    close(lax.igamma(A, X), [0.5614221, 0.7127025, 0.18473661])
    close(lax.igammac(A, X), [0.4385779, 0.2872975, 0.8152634])
    close(lax.igamma(A, X), sps.gammainc(A, X))
    close(lax.igamma(np.float32(1.0), np.float32(0.0)), 0.0)
    assert np.isnan(np.asarray(lax.igamma(np.float32(-1.0), np.float32(1.0))))


def test_igamma_grads():
    close(lax.igamma_grad_a(A, X), [-0.77057064, -0.24878295, -0.13305664], rtol=2e-5)
    close(lax.random_gamma_grad(A, X), [1.0098022, 1.2123187, 0.79185665], rtol=2e-5)
    # d/dx of igamma is the gamma density
    g = ember.grad(lambda x: lax.igamma(np.float32(2.0), x))(np.float32(1.5))
    close(g, 1.5 * np.exp(-1.5), rtol=1e-4)


def test_betainc_zeta_polygamma():
    close(lax.betainc(A, np.array([1.5, 3.0, 2.0], F32), np.array([0.2, 0.5, 0.9], F32)),
          [0.54981494, 0.6874998, 0.88573486])
    close(lax.zeta(np.array([2.0, 3.0, 4.5], F32), np.array([1.0, 2.0, 0.5], F32)),
          [1.644934, 0.20205691, 22.8106])
    close(lax.polygamma(np.array([0.0, 1.0, 2.0, 3.0], F32), np.array([0.7, 1.5, 3.0, 10.0], F32)),
          [-1.2200234, 0.93480223, -0.15411383, 0.0023199])
    close(lax.polygamma(np.float32(1.0), np.float32(2.5)), sps.polygamma(1, 2.5))
    with pytest.raises(TypeError):
        lax.zeta(np.float32(2.0), jnp.asarray(1, np.int32))


def test_special_jit_vmap():
    f = ember.jit(lambda a, x: lax.igamma(a, x))
    close(f(A, X), sps.gammainc(A, X))
    close(ember.vmap(lax.zeta, in_axes=(0, None))(np.array([2.0, 3.0], F32), np.float32(1.0)),
          sps.zeta([2.0, 3.0], 1.0))


# --------------------------------------------------------------------------
# custom_linear_solve / custom_root
# --------------------------------------------------------------------------

A0 = np.array([[4.0, 1.0, 0.0], [1.0, 5.0, 1.0], [0.5, 1.0, 4.0]], F32)
B0 = np.array([1.0, 2.0, 3.0], F32)
W = np.array([1.0, 2.0, 3.0], F32)


def _jacobi(mv, b):
    # iterative, so only the custom rules can differentiate it
    return lax.fori_loop(0, 200, lambda i, x: x + (b - mv(x)) / 4.0, jnp.zeros_like(b))


def _solve(A, b):
    return lax.custom_linear_solve(lambda v: A @ v, b, _jacobi,
                                   transpose_solve=_jacobi)


def test_custom_linear_solve_value_and_grad():
    close(_solve(A0, B0), np.linalg.solve(A0, B0))
    gA, gb = ember.grad(lambda A, b: jnp.sum(_solve(A, b) * W), argnums=(0, 1))(A0, B0)
    u = np.linalg.solve(A0.T, W)
    x = np.linalg.solve(A0, B0)
    close(gb, u)
    close(gA, -np.outer(u, x), rtol=1e-4)


def test_custom_linear_solve_jvp_jit_vmap():
    _, t = ember.jvp(lambda b: _solve(A0, b), (B0,), (np.ones(3, F32),))
    close(t, np.linalg.solve(A0, np.ones(3)))
    # tangent wrt the matrix: -A^-1 dA x
    dA = np.eye(3, dtype=F32)
    _, t = ember.jvp(lambda A: _solve(A, B0), (A0,), (dA,))
    close(t, -np.linalg.solve(A0, dA @ np.linalg.solve(A0, B0)), rtol=1e-4)
    close(ember.jit(_solve)(A0, B0), np.linalg.solve(A0, B0))
    bs = np.stack([B0, 2 * B0])
    close(ember.vmap(_solve, in_axes=(None, 0))(A0, bs), np.linalg.solve(A0, bs.T).T)
    g = ember.jit(ember.grad(lambda b: jnp.sum(_solve(A0, b) ** 2)))(B0)
    x = np.linalg.solve(A0, B0)
    close(g, np.linalg.solve(A0.T, 2 * x), rtol=1e-4)


def test_custom_linear_solve_symmetric_has_aux():
    S = A0 + A0.T

    def solve(mv, b):
        x = lax.fori_loop(0, 300, lambda i, x: x + (b - mv(x)) / 8.0, jnp.zeros_like(b))
        return x, jnp.sum(x)

    def f(b):
        x, aux = lax.custom_linear_solve(lambda v: S @ v, b, solve, symmetric=True,
                                         has_aux=True)
        return jnp.sum(x * W), aux

    (val, aux), g = ember.value_and_grad(f, has_aux=True)(B0)
    close(val, W @ np.linalg.solve(S, B0))
    close(aux, np.sum(np.linalg.solve(S, B0)))
    close(g, np.linalg.solve(S, W), rtol=1e-4)


def _sqrt(th):
    def newton(F, x0):
        return lax.fori_loop(0, 30, lambda i, x: x - F(x) / (2 * x), x0)

    return lax.custom_root(lambda x: x ** 2 - th, np.float32(1.0), newton,
                           lambda g, y: y / g(1.0))


def test_custom_root():
    close(_sqrt(np.float32(2.0)), np.sqrt(2.0))
    close(ember.grad(_sqrt)(np.float32(2.0)), 0.5 / np.sqrt(2.0))
    _, t = ember.jvp(_sqrt, (np.float32(4.0),), (np.float32(1.0),))
    close(t, 0.25)
    close(ember.vmap(ember.grad(_sqrt))(np.array([2.0, 4.0], F32)),
          0.5 / np.sqrt([2.0, 4.0]))
    close(ember.jit(ember.grad(_sqrt))(np.float32(9.0)), 1 / 6)
    # finite differences of the root wrt the parameter
    eps = 1e-2
    fd = (np.asarray(_sqrt(np.float32(3.0 + eps))) - np.asarray(_sqrt(np.float32(3.0 - eps))))
    close(ember.grad(_sqrt)(np.float32(3.0)), fd / (2 * eps), rtol=1e-3)


def test_custom_root_vector():
    M = np.array([[3.0, 1.0], [1.0, 2.0]], F32)

    def root(c):
        def f(x):
            return M @ x + x ** 3 / 10 - c

        def newton(F, x0):
            def step(i, x):
                J = M + np.eye(2, dtype=F32) * (3 * x ** 2 / 10)
                return x - jnp.linalg.solve(J, F(x))
            return lax.fori_loop(0, 20, step, x0)

        def tsolve(g, y):
            J = jnp.stack([g(np.array([1.0, 0.0], F32)), g(np.array([0.0, 1.0], F32))], 1)
            return jnp.linalg.solve(J, y)

        return lax.custom_root(f, jnp.zeros(2, F32), newton, tsolve)

    c = np.array([1.0, 2.0], F32)
    x = np.asarray(root(c))
    close(M @ x + x ** 3 / 10, c, atol=1e-5)
    J = M + np.diag(3 * x ** 2 / 10)
    close(ember.jacrev(root)(c), np.linalg.inv(J), rtol=1e-4)
    close(ember.jacfwd(root)(c), np.linalg.inv(J), rtol=1e-4)


# --------------------------------------------------------------------------
# products, shapes, indexing
# --------------------------------------------------------------------------


def test_ragged_dot():
    lhs = np.arange(12.0, dtype=F32).reshape(4, 3)
    rhs = np.arange(18.0, dtype=F32).reshape(2, 3, 3)
    out = lax.ragged_dot(lhs, rhs, np.array([1, 2], np.int32))
    close(out, [[15, 18, 21], [150, 162, 174], [258, 279, 300], [0, 0, 0]])  # JAX's
    rng = np.random.default_rng(1)
    lhs = rng.standard_normal((7, 4)).astype(F32)
    rhs = rng.standard_normal((3, 4, 5)).astype(F32)
    gs = np.array([2, 0, 5], np.int32)
    want = np.concatenate([lhs[:2] @ rhs[0], lhs[2:] @ rhs[2]])
    close(lax.ragged_dot(lhs, rhs, gs), want, rtol=1e-5)
    close(ember.jit(lax.ragged_dot)(lhs, rhs, gs), want, rtol=1e-5)
    # the same with the rhs as (k, g, n) through ragged_dot_general
    dn = lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (0,), (1,))
    close(lax.ragged_dot_general(lhs, np.moveaxis(rhs, 0, 1), gs, dn), want, rtol=1e-5)
    g = ember.grad(lambda m: jnp.sum(lax.ragged_dot(m, rhs, gs)))(lhs)
    close(g[0], rhs[0].sum(1))


def test_reduce_precision_bits():
    x = np.array([1.0, 1.1, 3.14159, 1e-40, 1e30, -65519.0, 70000.0, np.nan, np.inf, 1 / 3],
                 F32)
    # JAX 0.10.2's bits
    want = {(5, 10): [1065353216, 1066188800, 1078525952, 0, 2139095040, 3347046400,
                      2139095040, 2143289344, 2139095040, 1051369472],
            (8, 7): [1065353216, 1066205184, 1078525952, 65536, 1900675072, 3347054592,
                     1200160768, 2143289344, 2139095040, 1051394048],
            (4, 3): [1065353216, 1066401792, 1078984704, 0, 2139095040, 4286578688,
                     2139095040, 2143289344, 2139095040, 1051721728]}
    for (e, m), bits in want.items():
        got = np.asarray(lax.reduce_precision(x, e, m)).view(np.uint32)
        np.testing.assert_array_equal(got, np.array(bits, np.uint32))
    # agrees with a cast to float16 / bfloat16-like rounding
    close(lax.reduce_precision(np.float32(2.7), 5, 2), 2.5)
    close(ember.grad(lambda v: lax.reduce_precision(v, 5, 10))(np.float32(1.1)), 1.0)
    _, t = ember.jvp(lambda v: lax.reduce_precision(v, 5, 10), (np.float32(1.0),),
                     (np.float32(1.1),))
    close(t, np.float16(1.1))


def test_split_tile_stack_unstack():
    a, b = lax.split(jnp.arange(6), (2, 4))
    np.testing.assert_array_equal(a, [0, 1])
    np.testing.assert_array_equal(b, [2, 3, 4, 5])
    parts = lax.split(np.arange(12).reshape(3, 4), (1, 0, 3), axis=1)
    assert [p.shape for p in parts] == [(3, 1), (3, 0), (3, 3)]
    with pytest.raises(ValueError):
        lax.split(jnp.arange(6), (2, 3))
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(lax.tile(x, (2, 3)), np.tile(x, (2, 3)))
    with pytest.raises(ValueError, match="reps length"):
        lax.tile(x, (2,))
    np.testing.assert_array_equal(lax.stack([x, x + 1], axis=1), np.stack([x, x + 1], 1))
    us = lax.unstack(x, axis=1)
    assert len(us) == 3
    np.testing.assert_array_equal(us[2], x[:, 2])


def test_broadcast_helpers_and_batch_matmul():
    assert lax.broadcast_shapes((2, 1), (1, 3)) == (2, 3)
    assert lax.broadcast_shapes((3,)) == (3,)
    assert lax.broadcast_shapes((4, 1, 3), (5, 1)) == (4, 5, 3)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        lax.broadcast_shapes((2,), (3,))
    assert lax.broadcast_to_rank(jnp.ones(3), 3).shape == (1, 1, 3)
    assert lax.broadcast_like(np.float32(2.0), np.zeros((2, 3))).shape == (2, 3)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 4)).astype(F32)
    b = rng.standard_normal((2, 4, 5)).astype(F32)
    close(lax.batch_matmul(a, b), a @ b, rtol=1e-5)
    with pytest.raises(ValueError):
        lax.batch_matmul(a, b[0])


def test_index_take_mulhi():
    got = lax.index_take(np.arange(24).reshape(2, 3, 4), np.array([[0, 1], [1, 2]]), (0, 2))
    np.testing.assert_array_equal(got, [[1, 5, 9], [14, 18, 22]])  # JAX's
    u = lax.mulhi(np.array([0xFFFFFFFF, 123456789], np.uint32),
                  np.array([0xFFFFFFFF, 987654321], np.uint32))
    np.testing.assert_array_equal(u, np.array([4294967294, 28389652], np.uint32))
    s = lax.mulhi(np.array([-5, 123456789, -2 ** 31], np.int32),
                  np.array([7, -987654321, -2 ** 31], np.int32))
    np.testing.assert_array_equal(s, [-1, -28389653, 1073741824])
    v = np.array([200, 17, 255], np.uint8)
    np.testing.assert_array_equal(lax.mulhi(v, v), ((v.astype(int) ** 2) >> 8).astype(np.uint8))


def test_scatter_sub_apply():
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    idx = np.array([[1], [3], [1]])
    out = lax.scatter_sub(jnp.ones(4), idx, np.array([2.0, 3.0, 1.0], F32), dn)
    close(out, [1, -2, 1, -2])
    out = lax.scatter_apply(jnp.arange(4.0), idx[:2], jnp.exp, dn, update_shape=(2,))
    close(out, [0, np.e, 2, np.exp(3)])


def test_approx_top_k():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]], F32)
    v, i = lax.approx_max_k(x, 2)
    close(v, [[3, 2], [5, 0]])
    np.testing.assert_array_equal(i, [[0, 2], [1, 0]])
    v, i = lax.approx_min_k(x, 1, reduction_dimension=0)
    close(v, [[0, 1, -1]])
    np.testing.assert_array_equal(i, [[1, 0, 1]])
    v, _ = ember.jit(lambda a: lax.approx_min_k(a, 2))(x)
    close(v, [[1, 2], [-1, 0]])


def test_top_k_axis_and_errors():
    # JAX 0.10.2's results and errors; a list, as JAX's primitive returns it.
    x = np.array([[9.0, 3.0, 6.0], [4.0, 10.0, 1.0]], F32)
    out = lax.top_k(x, 1, axis=0)
    assert isinstance(out, list)
    close(out[0], [[9, 10, 6]])
    np.testing.assert_array_equal(out[1], [[0, 1, 0]])
    with pytest.raises(ValueError, match=r"no larger than size along axis; got k=4 with "
                       r"shape=\[2, 3\] and axis=1"):
        lax.top_k(x, 4)
    with pytest.raises(ValueError, match="must be nonnegative"):
        lax.top_k(x, -1)


def test_reduce_window_general():
    # Values from JAX 0.10.2: a computation of the user's (folded in order,
    # padding skipped), dilations, SAME padding of a dilated window, and a
    # pytree of operands.
    x = jnp.arange(12.0).reshape(3, 4)
    close(lax.reduce_window(x, 0.0, lambda a, b: a + 2 * b, (2, 2), (1, 1), "VALID"),
          [[20, 28, 36], [52, 60, 68]])
    close(lax.reduce_window(x, 1.0, lambda a, b: a * b - 1, (2, 3), (2, 1), ((1, 0), (0, 1)))[0],
          [-5, -4, 2])
    close(lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID",
                            base_dilation=(2, 1), window_dilation=(1, 2)),
          [[2, 3], [6, 7], [6, 7], [10, 11]])
    close(lax.reduce_window(x, 1.0, lambda a, b: a * b - 1, (2, 2), (1, 1), "SAME",
                            base_dilation=(2, 1), window_dilation=(1, 2)),
          [[0, -3, -1, 1], [4, 17, 27, 5], [4, 17, 27, 5], [8, 69, 87, 9], [8, 69, 87, 9]])
    close(lax.reduce_window(x, 0.5, lambda a, b: a + 2 * b, (3, 1), (1, 1), ((2, 1), (0, 0)),
                            base_dilation=(1, 2))[0], [0.5, 0.5, 2.5, 0.5, 4.5, 0.5, 6.5])
    s, m = lax.reduce_window((x, x * 2), (0.0, 0.0),
                             lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])),
                             (1, 2), (1, 1), "VALID")
    close(s, [[1, 3, 5], [9, 11, 13], [17, 19, 21]])
    close(m, [[2, 4, 6], [10, 12, 14], [18, 20, 22]])


# --------------------------------------------------------------------------
# convolution patches, fft
# --------------------------------------------------------------------------


def _patches_ref(lhs, fh, fw, sh, sw):
    n, c, h, w = lhs.shape
    oh, ow = (h - fh) // sh + 1, (w - fw) // sw + 1
    out = np.zeros((n, c * fh * fw, oh, ow), lhs.dtype)
    for ci in range(c):
        for kh in range(fh):
            for kw in range(fw):
                out[:, ci * fh * fw + kh * fw + kw] = \
                    lhs[:, ci, kh:kh + sh * oh:sh, kw:kw + sw * ow:sw]
    return out


def test_conv_general_dilated_patches():
    rng = np.random.default_rng(3)
    lhs = rng.standard_normal((2, 3, 5, 6)).astype(F32)
    got = lax.conv_general_dilated_patches(lhs, (2, 3), (1, 2), "VALID")
    close(got, _patches_ref(lhs, 2, 3, 1, 2))
    nhwc = lax.conv_general_dilated_patches(np.moveaxis(lhs, 1, 3), (2, 3), (1, 2), "VALID",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
    close(nhwc, np.moveaxis(_patches_ref(lhs, 2, 3, 1, 2), 1, 3))
    # locally connected: one kernel per output position
    p = _patches_ref(lhs, 2, 3, 1, 2)
    rhs = rng.standard_normal((4, p.shape[1]) + p.shape[2:]).astype(F32)
    got = lax.conv_general_dilated_local(lhs, rhs, (1, 2), "VALID", (2, 3))
    close(got, np.einsum("nihw,oihw->nohw", p, rhs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [8, 100, 128])
def test_fft(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n)).astype(F32)
    z = (x + 1j * rng.standard_normal((2, n))).astype(np.complex64)
    tol = dict(rtol=1e-4, atol=1e-4)
    close(lax.fft(z, lax.FftType.FFT, (n,)), np.fft.fft(z), **tol)
    close(lax.fft(z, "ifft", (n,)), np.fft.ifft(z), **tol)
    close(lax.fft(x, lax.FftType.RFFT, (n,)), np.fft.rfft(x), **tol)
    close(lax.fft(np.fft.rfft(x).astype(np.complex64), lax.FftType.IRFFT, (n,)), x, **tol)
    close(lax.fft(z, lax.FftType.FFT, (2, n)), np.fft.fft2(z), **tol)


def test_fft_jit_grad():
    x = np.arange(6.0, dtype=F32)
    f = ember.jit(lambda v: lax.fft(v, lax.FftType.RFFT, (6,)))
    close(f(x), np.fft.rfft(x), atol=1e-4)
    # sum(real(fft(x))) = n x[0]: gradient (n, 0, ...)
    g = ember.grad(lambda v: jnp.sum(jnp.real(lax.fft(v.astype(np.complex64), "fft", (6,)))))(x)
    close(g, [6, 0, 0, 0, 0, 0], atol=1e-5)


# --------------------------------------------------------------------------
# random bits, misc
# --------------------------------------------------------------------------


def test_rng_bit_generator_bits_equal_xla():
    # XLA:CPU's Philox (RNG_DEFAULT) and Threefry bit for bit: 8-, 16-, 32-
    # and 64-bit results, scalar to 3-d shapes, a counter that carries, jit,
    # chained keys and JAX's vmap rule (the first key draws for the batch)
    # against JAX 0.10.2's recorded output (test/data/random).
    assert_prints_recorded("random", "rng_bit_generator", set())


def test_rng_bit_generator_shapes():
    key = np.array([1, 2, 3, 4], np.uint32)
    k2, bits = lax.rng_bit_generator(key, (2, 3))
    assert k2.shape == (4,) and k2.dtype == np.uint32
    assert bits.shape == (2, 3) and bits.dtype == np.uint32
    _, again = lax.rng_bit_generator(key, (2, 3))
    np.testing.assert_array_equal(bits, again)
    _, other = lax.rng_bit_generator(k2, (2, 3))
    assert not np.array_equal(np.asarray(bits), np.asarray(other))
    _, b8 = lax.rng_bit_generator(key, (5,), dtype=np.uint8)
    assert b8.dtype == np.uint8 and b8.shape == (5,)
    _, tf = lax.rng_bit_generator(key, (3,), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
    assert tf.shape == (3,)
    with pytest.raises(TypeError, match="key must be uint32 of shape"):
        lax.rng_bit_generator(np.array([1, 2], np.uint32), (3,))
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        lax.rng_bit_generator(key, (3,), np.int32)
    u = np.asarray(lax.rng_uniform(np.float32(2.0), np.float32(3.0), (100,)))
    assert u.shape == (100,) and u.min() >= 2.0 and u.max() < 3.0


def test_misc():
    e = lax.empty((2, 3), np.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    assert lax.dtype(1.0) == np.float32 and lax.dtype(np.arange(3)) == np.int32
    np.testing.assert_array_equal(lax.shape_as_value((2, 3)), [2, 3])
    out = lax.platform_dependent(np.float32(1.0), cpu=lambda v: v + 1, default=lambda v: v)
    close(out, 2.0)
    close(lax.platform_dependent(np.float32(1.0), tpu=lambda v: v + 1, default=lambda v: v), 1.0)
    close(lax.composite(lambda v: v * 2, name="my.double")(np.float32(3.0)), 6.0)
    t = lax.after_all(lax.create_token(), lax.create_token())
    assert t is not None
    assert lax.reduce_window_shape_tuple((5, 6), (2, 3), (1, 2), ((0, 0), (1, 1))) == (4, 3)


def test_type_names():
    assert lax.FftType.RFFT == 2 and lax.FftType.IRFFT == 3
    assert lax.RandomAlgorithm.RNG_DEFAULT == 0 and lax.RandomAlgorithm.RNG_PHILOX == 2
    assert lax.AccuracyMode.HIGHEST.value == 1
    assert lax.DotAlgorithmPreset.F32_F32_F32 in list(lax.DotAlgorithmPreset)
    alg = lax.DotAlgorithm(np.float32, np.float32, np.float32)
    assert alg.lhs_component_count == 1
    assert lax.Tolerance(atol=1e-3).atol == 1e-3
    dn = lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    assert dn.lhs_ragged_dimensions == (0,)
    for name in ["DotDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "PrecisionLike"]:
        assert hasattr(lax, name)


def test_pbroadcast_pswapaxes():
    got = ember.vmap(lambda v: lax.pbroadcast(v, "i", 1), axis_name="i")(jnp.arange(3.0))
    close(got, [1, 1, 1])
    x = np.arange(9.0, dtype=F32).reshape(3, 3)
    got = ember.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)
    close(got, x.T)  # JAX's
