"""jax.numpy's polynomial, set, number-theory, window, statistics and
float-decomposition functions (`ember._src.numpy.extras_math`), against NumPy;
dtypes and the places where JAX differs from NumPy were recorded from JAX
0.10.2 (x64 off)."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.errors import ConcretizationTypeError


def check(actual, expected, dtype=None, rtol=1e-5, atol=1e-6):
    if dtype is not None:
        assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def check_equal(actual, expected, dtype=None):
    if dtype is not None:
        assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))


# --------------------------------------------------------------------------
# Polynomials
# --------------------------------------------------------------------------


def test_polyval():
    p = np.array([1.0, -2, 3, 4], np.float32)
    x = np.array([0.5, 2.0, -1.5], np.float32)
    check(jnp.polyval(p, x), np.polyval(p, x), np.float32)
    check(jnp.polyval(p, x, unroll=2), np.polyval(p, x), np.float32)  # (a scan)
    check_equal(jnp.polyval(jnp.array([1, 2, 3]), 2), 11, np.int32)
    r = jnp.polyval(jnp.array([1, 2, 3]), 2.5)  # JAX: float32, not weak
    check(r, 14.25, np.float32)
    assert not r.weak_type
    # Coefficients along the first axis, broadcast against x (JAX's rule).
    check(jnp.polyval(jnp.array([[1.0, 2], [3, 4]]), jnp.array([2.0, 3.0])), [5.0, 10.0])
    check(ember.jit(jnp.polyval)(p, x), np.polyval(p, x))


def test_polyval_grad_and_vmap():
    p = jnp.array([1.0, -2, 3, 4])
    check(ember.grad(lambda x: jnp.polyval(p, x))(1.5), 3.75)  # (JAX 0.10.2)
    check(ember.grad(lambda p: jnp.polyval(p, 2.0))(jnp.array([1.0, 2, 3])), [4.0, 2.0, 1.0])
    check(ember.vmap(jnp.polyval, in_axes=(None, 0))(jnp.array([1.0, 2, 3]),
                                                    jnp.array([1.0, 2.0])), [6.0, 11.0])


def test_polyadd_polysub_polymul():
    check_equal(jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 2, 3])), [1, 3, 5], np.int32)
    check(jnp.polysub(jnp.array([1.0, 2]), jnp.array([1, 2, 3])), [-1, -1, -1], np.float32)
    # polymul is inexact in JAX, integers included.
    check(jnp.polymul(jnp.array([1, 2]), jnp.array([1, 2, 3])), [1, 4, 7, 6], np.float32)
    check(jnp.polymul(jnp.array([0, 0, 1, 2.0]), jnp.array([1, 2, 3.0]),
                      trim_leading_zeros=True), [1, 4, 7, 6])
    a, b = np.array([3.0, -1, 2]), np.array([0.5, 4])
    check(jnp.polymul(a, b), np.polymul(a, b))
    check(jnp.polysub(a, b), np.polysub(a, b))


def test_polydiv():
    q, r = jnp.polydiv(jnp.array([1.0, 2, 3, 4]), jnp.array([1.0, 1]))
    nq, nr = np.polydiv([1.0, 2, 3, 4], [1.0, 1])
    check(q, nq, np.float32)
    check(r, [0, 0, 0, nr[0]])  # JAX keeps the leading zeros
    q, r = jnp.polydiv(jnp.array([3, 5, 2]), jnp.array([1, 2]))
    check(q, [3, -1], np.float32)
    check(r, [0, 0, 4], np.float32)
    q, r = jnp.polydiv(jnp.array([1.0, 3, 2]), jnp.array([1.0, 1]), trim_leading_zeros=True)
    check(q, [1, 2])
    assert r.shape == (0,)


def test_polyder_polyint():
    check(jnp.polyder(jnp.array([1, 2, 3, 4]), 2), [6, 4], np.float32)
    check(jnp.polyder(jnp.array([5.0, 1, 2])), np.polyder([5.0, 1, 2]))
    check(jnp.polyder(jnp.array([5.0, 1, 2]), 0), [5, 1, 2])
    check(jnp.polyint(jnp.array([1, 2, 3]), 2, k=jnp.array([1.0, 2])),
          np.polyint([1, 2, 3], 2, k=[1.0, 2]), np.float32)
    check(jnp.polyint(jnp.array([3.0, 2, 1]), k=5), [1, 1, 1, 5])
    with pytest.raises(ValueError):
        jnp.polyder(jnp.array([1.0, 2]), -1)


def test_poly_and_vander():
    check(jnp.poly(jnp.array([1.0, 2, 3])), np.poly([1.0, 2, 3]), np.float32)
    check(jnp.poly(jnp.array([1, 2])), [1, -3, 2], np.float32)
    r = jnp.poly(jnp.zeros(0))
    assert r.shape == () and float(r) == 1.0
    # A matrix: its characteristic polynomial, complex (JAX: through eigvals).
    m = np.array([[1.0, 2], [3, 4]])
    check(jnp.poly(m), np.poly(m), np.complex64, rtol=1e-5, atol=1e-5)
    check(jnp.poly(m), [1, -5.0000005, -1.9999988], np.complex64, rtol=1e-6)  # JAX 0.10.2
    check_equal(jnp.vander(jnp.array([1, 2, 3]), 4), np.vander([1, 2, 3], 4), np.int32)
    check(jnp.vander(jnp.array([-1.5, 2.0]), increasing=True),
          np.vander([-1.5, 2.0], increasing=True), np.float32)
    assert jnp.vander(jnp.array([1.0, 2.0]), 0).shape == (2, 0)


def test_polyfit():
    x = np.arange(6.0, dtype=np.float32)
    y = np.array([1.0, 3, 2, 5, 4, 7], np.float32)
    check(jnp.polyfit(x, y, 2), np.polyfit(x, y, 2), np.float32, rtol=1e-4, atol=1e-5)
    c, resid, rank, s, rcond = jnp.polyfit(x, y, 2, full=True)
    nc, nresid, nrank, ns, nrcond = np.polyfit(x, y, 2, full=True)
    check(c, nc, rtol=1e-4, atol=1e-5)
    check(resid, nresid, np.float32, rtol=1e-4)
    assert resid.shape == (1,)  # (JAX 0.10.2)
    check_equal(rank, 3, np.int32)
    check(s, ns, rtol=1e-5)
    check(rcond, 7.152557373046875e-07, np.float32)  # JAX: len(x) * eps(float32)
    w = np.array([1.0, 2, 1, 2, 1, 2], np.float32)
    check(jnp.polyfit(x, y, 1, w=w), np.polyfit(x, y, 1, w=w), rtol=1e-4)
    c, v = jnp.polyfit(x, y, 1, cov=True)
    nc, nv = np.polyfit(x, y, 1, cov=True)
    check(c, nc, rtol=1e-4)
    check(v, nv, rtol=1e-4, atol=1e-6)
    y2 = np.array([[1.0, 2], [2, 3], [3, 5], [4, 4], [6, 5]], np.float32)
    c, v = jnp.polyfit(np.arange(5.0), y2, 1, cov=True)
    nc, nv = np.polyfit(np.arange(5.0), y2, 1, cov=True)
    check(c, nc, rtol=1e-4, atol=1e-5)
    assert v.shape == (2, 2, 2)
    check(v, nv, rtol=1e-4, atol=1e-6)
    check(ember.jit(lambda x, y: jnp.polyfit(x, y, 2))(x, y), np.polyfit(x, y, 2),
          rtol=1e-4, atol=1e-5)


def test_roots():
    # The eigenvalues of the companion matrix (geev), in JAX 0.10.2's order.
    r = jnp.roots(jnp.array([1.0, -6, 11, -6]))
    assert r.dtype == np.complex64
    check(r, [2.9999952, 2.0000014, 1.0000001], rtol=1e-6, atol=1e-6)
    p = np.array([2.0, 0, 1, -3, 5])  # complex pairs
    check(jnp.roots(p), [-0.8347802 + 1.181558j, -0.8347802 - 1.181558j,
                         0.8347801 + 0.7054345j, 0.8347801 - 0.7054345j], rtol=1e-5)
    check(jnp.roots(jnp.array([0, 0, 1.0, -3, 2])), [2, 1], rtol=1e-6)
    check(jnp.roots(jnp.array([1.0, 0, 0, 0, -1])), [-1, 1j, -1j, 1], rtol=1e-6, atol=1e-6)
    assert jnp.roots(jnp.array([2.0])).shape == (0,)
    # strip_zeros=False: as many NaNs as leading zeros, also under jit.
    for f in (lambda p: jnp.roots(p, strip_zeros=False),
              ember.jit(lambda p: jnp.roots(p, strip_zeros=False))):
        r = np.asarray(f(jnp.array([0.0, 1, -3, 2])))
        assert np.isnan(r[2]) and not np.isnan(r[:2]).any()
        check(r[:2], [1, 2], rtol=1e-6)  # (JAX 0.10.2: [1, 2, nan])
    with pytest.raises(ConcretizationTypeError, match="strip_zeros=False"):
        ember.jit(jnp.roots)(jnp.array([0.0, 1.0, 2.0]))


# --------------------------------------------------------------------------
# Number theory, bits
# --------------------------------------------------------------------------


def test_gcd_lcm():
    a = np.array([12, -18, 0, 7, 0, 35])
    b = np.array([8, 24, 5, 0, 0, -14])
    check_equal(jnp.gcd(a, b), np.gcd(a, b), np.int32)
    check_equal(jnp.lcm(a, b), np.lcm(a, b), np.int32)
    check_equal(jnp.gcd(jnp.array([12, 9]), 6), [6, 3], np.int32)
    check_equal(ember.jit(jnp.lcm)(a, b), np.lcm(a, b))
    check_equal(ember.vmap(jnp.gcd)(jnp.array([12, 9, 7]), jnp.array([18, 6, 0])), [6, 3, 7])
    with pytest.raises(ValueError, match="integers"):
        jnp.gcd(jnp.array([1.0]), jnp.array([2.0]))


def test_bitwise_count():
    check_equal(jnp.bitwise_count(jnp.array([0, 1, 7, -1, -8, 255])), [0, 1, 3, 1, 1, 8],
                np.uint8)  # JAX counts the bits of |x|
    check_equal(jnp.bitwise_count(jnp.array([3, 255], jnp.uint8)), [2, 8], np.uint8)
    check_equal(jnp.bitwise_count(jnp.array([True, False])), [1, 0], np.uint8)


# --------------------------------------------------------------------------
# Sets
# --------------------------------------------------------------------------

A = np.array([5, 1, 3, 3, 7, 1], np.int32)
B = np.array([3, 8, 1, 1, 10], np.int32)


@pytest.mark.parametrize("method", ["auto", "compare_all", "binary_search", "sort"])
def test_isin(method):
    e = np.array([[1, 2], [3, 4]])
    t = np.array([2, 4, 5, 4])
    check_equal(jnp.isin(e, t, method=method), np.isin(e, t), np.bool_)
    check_equal(jnp.isin(e, t, invert=True, method=method), np.isin(e, t, invert=True))
    check_equal(jnp.isin(e, np.array([], np.int32), method=method), np.zeros((2, 2), bool))


def test_isin_jit_vmap_and_errors():
    check_equal(ember.jit(jnp.isin)(A, B), np.isin(A, B))
    check_equal(ember.vmap(jnp.isin, in_axes=(0, None))(jnp.array([[1, 2], [3, 4]]),
                                                       jnp.array([2, 3])),
                [[False, True], [True, False]])
    with pytest.raises(ValueError, match="not implemented"):
        jnp.isin(A, B, method="hash")


def test_union1d():
    check_equal(jnp.union1d(A, B), np.union1d(A, B), np.int32)
    check_equal(jnp.union1d(A, B, size=9), [1, 3, 5, 7, 8, 10, 1, 1, 1])  # (JAX 0.10.2)
    check_equal(jnp.union1d(A, B, size=9, fill_value=-1), [1, 3, 5, 7, 8, 10, -1, -1, -1])
    check_equal(jnp.union1d(A, B, size=3), [1, 3, 5])
    f = ember.jit(lambda a, b: jnp.union1d(a, b, size=9))
    check_equal(f(A, B), [1, 3, 5, 7, 8, 10, 1, 1, 1])
    x = np.array([2.5, np.nan, 1.0, np.nan])
    check_equal(jnp.union1d(x, np.array([1.0])), np.union1d(x, [1.0]))
    with pytest.raises(ConcretizationTypeError, match="size"):
        ember.jit(jnp.union1d)(A, B)


def test_intersect1d():
    check_equal(jnp.intersect1d(A, B), np.intersect1d(A, B), np.int32)
    for got, want in zip(jnp.intersect1d(A, B, return_indices=True),
                         np.intersect1d(A, B, return_indices=True)):
        check_equal(got, want, np.int32)
    # size: JAX pads with the smallest value, the indices with the lengths.
    check_equal(jnp.intersect1d(A, B, size=4), [1, 3, 1, 1])
    check_equal(jnp.intersect1d(A, B, size=4, fill_value=-2), [1, 3, -2, -2])
    v, i, j = jnp.intersect1d(A, B, size=4, return_indices=True)
    check_equal(v, [1, 3, 1, 1])
    check_equal(i, [1, 2, 6, 6])
    check_equal(j, [2, 0, 5, 5])
    check_equal(jnp.intersect1d(np.array([4, 2]), np.array([5, 6]), size=3), [0, 0, 0])
    a, b = np.array([4, 2, 9]), np.array([9, 4, 1])
    for got, want in zip(jnp.intersect1d(a, b, assume_unique=True, return_indices=True),
                         np.intersect1d(a, b, assume_unique=True, return_indices=True)):
        check_equal(got, want)
    check_equal(jnp.intersect1d(np.array([1, 2]), np.array([2.0, 3.5])), [2.0], np.float32)
    f = ember.jit(lambda a, b: jnp.intersect1d(a, b, size=2, return_indices=True))
    check_equal(f(A, B)[2], [2, 0])


def test_setdiff1d_setxor1d():
    check_equal(jnp.setdiff1d(A, B), np.setdiff1d(A, B), np.int32)
    check_equal(jnp.setdiff1d(A, B, size=4), [5, 7, 0, 0])  # JAX's fill: 0
    check_equal(jnp.setdiff1d(A, B, size=4, fill_value=-1), [5, 7, -1, -1])
    a = np.array([9, 2, 4, 1])
    check_equal(jnp.setdiff1d(a, np.array([2]), assume_unique=True),
                np.setdiff1d(a, [2], assume_unique=True))
    check_equal(jnp.setxor1d(A, B), np.setxor1d(A, B), np.int32)
    check_equal(jnp.setxor1d(A, B, size=6), [5, 7, 8, 10, 5, 5])  # (JAX 0.10.2)
    check_equal(jnp.setxor1d(A, B, size=6, fill_value=0), [5, 7, 8, 10, 0, 0])
    check(jnp.setxor1d(np.array([1, 2]), np.array([2.5, 1.0])), [2.0, 2.5], np.float32)
    g = ember.jit(lambda a, b: (jnp.setdiff1d(a, b, size=3), jnp.setxor1d(a, b, size=5)))
    d, x = g(A, B)
    check_equal(d, [5, 7, 0])
    check_equal(x, [5, 7, 8, 10, 5])
    with pytest.raises(ConcretizationTypeError):
        ember.jit(jnp.setxor1d)(A, B)
    rng = np.random.default_rng(0)
    for _ in range(3):
        p, q = rng.integers(0, 12, 15), rng.integers(0, 12, 9)
        check_equal(jnp.setdiff1d(p, q), np.setdiff1d(p, q))
        check_equal(jnp.setxor1d(p, q), np.setxor1d(p, q))
        check_equal(jnp.intersect1d(p, q), np.intersect1d(p, q))
        check_equal(jnp.union1d(p, q), np.union1d(p, q))


def test_set_ops_without_size_do_not_differentiate():
    # JAX reads the values (outside jit): no derivative reaches them.
    g = ember.grad(lambda a: jnp.union1d(a, jnp.array([1.0, 2.0])).sum())(jnp.array([3.0, 1.0]))
    check(g, [0.0, 0.0])


def test_trim_zeros():
    x = np.array([0, 0, 1, 2, 0, 3, 0])
    check_equal(jnp.trim_zeros(x), np.trim_zeros(x), np.int32)
    check_equal(jnp.trim_zeros(x, "f"), np.trim_zeros(x, "f"))
    check_equal(jnp.trim_zeros(x.astype(np.float32), "b"), np.trim_zeros(x, "b"))
    assert jnp.trim_zeros(jnp.array([0, 0])).shape == (0,)
    m = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 2], [0, 0, 0]])
    check_equal(jnp.trim_zeros(m), [[1, 0], [0, 2]])
    with pytest.raises(ConcretizationTypeError):
        ember.jit(jnp.trim_zeros)(x)


# --------------------------------------------------------------------------
# Calculus and statistics
# --------------------------------------------------------------------------


def test_trapezoid():
    y = np.array([[1.0, 2, 4], [3, 1, 0]], np.float32)
    check(jnp.trapezoid(y), np.trapezoid(y), np.float32)
    check(jnp.trapezoid(y, x=np.array([0.0, 1, 3])), np.trapezoid(y, x=[0.0, 1, 3]))
    check(jnp.trapezoid(y, axis=0), np.trapezoid(y, axis=0))
    check(jnp.trapezoid(jnp.array([1, 2, 4]), dx=0.5), 2.25, np.float32)
    x2 = np.array([[0.0, 1, 3], [0, 2, 2.5]])
    check(jnp.trapezoid(y, x=x2), np.trapezoid(y, x=x2))
    check(ember.grad(lambda y: jnp.trapezoid(y, dx=0.5))(jnp.array([1.0, 2, 3])),
          [0.25, 0.5, 0.25])
    check(ember.jit(jnp.trapezoid)(y), np.trapezoid(y))


def test_gradient():
    f = np.array([1.0, 2, 4, 7, 11], np.float32)
    check(jnp.gradient(f), np.gradient(f), np.float32)
    r = jnp.gradient(jnp.array([1, 2, 4, 7, 11]), 2.0)
    check(r, np.gradient([1, 2, 4, 7, 11], 2.0), np.float32)
    assert r.weak_type  # (JAX 0.10.2: int32 array and a Python float)
    m = np.array([[1.0, 2, 6], [3, 4, 5]], np.float32)
    for got, want in zip(jnp.gradient(m), np.gradient(m)):
        check(got, want)
    check(jnp.gradient(m, axis=1), np.gradient(m, axis=1))
    x = np.array([0.0, 1, 1.5, 3.5])
    check(jnp.gradient(f[:4], x), np.gradient(f[:4], x))
    for got, want in zip(jnp.gradient(m, 2.0, x[:3]), np.gradient(m, 2.0, x[:3])):
        check(got, want)
    with pytest.raises(NotImplementedError):
        jnp.gradient(f, edge_order=1)
    with pytest.raises(ValueError):
        jnp.gradient(jnp.array([1.0]))
    check(ember.jit(jnp.gradient)(f), np.gradient(f))


def test_cov_corrcoef():
    m = np.array([[1.0, 2, 4, 7], [3, 1, 0, 2], [2, 2, 5, 1]], np.float32)
    check(jnp.cov(m), np.cov(m), np.float32)
    check(jnp.cov(m, bias=True), np.cov(m, bias=True))
    check(jnp.cov(m.T, rowvar=False), np.cov(m.T, rowvar=False))
    check(jnp.cov(m, ddof=0), np.cov(m, ddof=0))
    check(jnp.cov(np.array([[1, 2, 4], [3, 1, 0]])), np.cov([[1, 2, 4], [3, 1, 0]]), np.float32)
    check(jnp.cov(np.array([1.0, 2, 4])), np.cov([1.0, 2, 4]))
    assert jnp.cov(np.array([1.0, 2, 4])).shape == ()
    check(jnp.cov(np.array([1.0, 2, 4]), np.array([3.0, 1, 0])),
          np.cov([1.0, 2, 4], [3.0, 1, 0]))
    fw, aw = np.array([1, 2, 1, 3]), np.array([1.0, 0.5, 2, 1])
    check(jnp.cov(m, fweights=fw), np.cov(m, fweights=fw), rtol=1e-5)
    check(jnp.cov(m, aweights=aw), np.cov(m, aweights=aw), rtol=1e-5)
    check(jnp.cov(m, fweights=fw, aweights=aw, ddof=2), np.cov(m, fweights=fw, aweights=aw,
                                                                ddof=2), rtol=1e-5)
    check(jnp.corrcoef(m), np.corrcoef(m), np.float32)
    check(jnp.corrcoef(m[0], m[1]), np.corrcoef(m[0], m[1]))
    check(jnp.corrcoef(np.array([1.0, 2, 4])), 1.0)
    c = np.array([[1 + 1j, 2, 3 - 1j], [0.5, 1j, 2]], np.complex64)
    check(jnp.cov(c), np.cov(c), np.complex64, rtol=1e-5)
    check(ember.jit(jnp.corrcoef)(m), np.corrcoef(m))
    check(ember.grad(lambda m: jnp.cov(m).sum())(jnp.asarray(m)),
          [[-1.0, -5 / 3, 1.0, 5 / 3]] * 3)  # (JAX 0.10.2)


def test_unwrap():
    p = np.array([0.0, 1, 6, 7, 13, 2, -5], np.float32)
    check(jnp.unwrap(p), np.unwrap(p), np.float32, rtol=1e-5, atol=1e-5)
    check(jnp.unwrap(p, discont=4.0), np.unwrap(p, discont=4.0), atol=1e-5)
    check_equal(jnp.unwrap(jnp.array([0, 3, 9, 1, 14]), period=8), [0, 3, 1, 1, -2], np.int32)
    q = np.array([[0.0, 4, 8], [1, 6, 12]], np.float32)
    check(jnp.unwrap(q, axis=0), np.unwrap(q, axis=0), atol=1e-5)
    check(jnp.unwrap(q, period=5.0), np.unwrap(q, period=5.0), atol=1e-5)


# --------------------------------------------------------------------------
# Windows
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
    for m in (0, 1, 2, 6, 11):
        check(getattr(jnp, name)(m), getattr(np, name)(m), np.float32, atol=1e-6)


def test_kaiser():
    for m in (0, 1, 6, 9):
        check(jnp.kaiser(m, 8.6), np.kaiser(m, 8.6), np.float32, rtol=1e-5, atol=1e-6)
    check(jnp.kaiser(5, 0.0), np.kaiser(5, 0.0))


# --------------------------------------------------------------------------
# Float decomposition, sorting
# --------------------------------------------------------------------------


def test_frexp():
    x = np.array([0.0, 1, -3.5, np.inf, -np.inf, np.nan, 6e10, -0.0, 1e-30, 3e38], np.float32)
    m, e = jnp.frexp(x)
    nm, ne = np.frexp(x)
    check_equal(m, nm, np.float32)
    check_equal(e, ne, np.int32)
    m, e = jnp.frexp(jnp.array([1, 8, -6]))
    check_equal(m, [0.5, 0.5, -0.75], np.float32)
    check_equal(e, [1, 4, 3], np.int32)
    check(ember.grad(lambda x: jnp.frexp(x)[0])(6.0), 0.125)  # (JAX's rule: 2**-e)
    check_equal(ember.jit(jnp.frexp)(x)[1], ne)
    with pytest.raises(TypeError):
        jnp.frexp(jnp.array([1j]))


def test_modf_spacing():
    x = np.array([1.5, -2.25, 0.0, -0.0, 7.0, -1e-3], np.float32)
    frac, whole = jnp.modf(x)
    nfrac, nwhole = np.modf(x)
    check_equal(frac, nfrac, np.float32)
    check_equal(whole, nwhole, np.float32)
    assert np.signbit(np.asarray(whole)[3])
    f, w = jnp.modf(jnp.array([3, -4]))
    check_equal(f, [0, 0], np.float32)
    check_equal(w, [3, -4], np.float32)
    y = np.array([1.0, -1.0, 1e10, 3.5, -7e-20], np.float32)
    check_equal(jnp.spacing(y), np.spacing(y), np.float32)
    z = np.asarray(jnp.spacing(jnp.array([0.0, -0.0])))  # the smallest subnormal
    check_equal(np.abs(z), [1.401298464324817e-45] * 2)
    check(jnp.spacing(jnp.array([1, 100])), np.spacing(np.float32([1, 100])), np.float32)
    with pytest.raises(ValueError):
        jnp.spacing(jnp.array([1j]))


def test_sort_complex():
    check_equal(jnp.sort_complex(jnp.array([3, 1, 2])), [1, 2, 3], np.complex64)
    c = np.array([1 + 2j, 1 - 1j, 0.5 + 0j, -2 + 5j], np.complex64)
    check_equal(jnp.sort_complex(c), np.sort_complex(c), np.complex64)
    check_equal(jnp.sort_complex(jnp.array([3.0, 1.0])), [1, 3], np.complex64)


# --------------------------------------------------------------------------
# Histograms
# --------------------------------------------------------------------------


def test_histogram2d_histogramdd():
    rng = np.random.default_rng(1)
    xs = rng.random(40).astype(np.float32)
    ys = rng.random(40).astype(np.float32)
    edges = np.array([0.0, 0.25, 0.5, 1.0], np.float32)
    h, ex, ey = jnp.histogram2d(xs, ys, bins=edges)
    nh, nex, ney = np.histogram2d(xs, ys, bins=edges)
    check_equal(h, nh, np.int32)  # JAX counts in int32
    check(ex, nex)
    check(ey, ney)
    h, ex, ey = jnp.histogram2d(xs, ys, bins=[edges, edges[:3]], weights=np.arange(40.0),
                                density=True)
    nh, _, _ = np.histogram2d(xs, ys, bins=[edges, edges[:3]], weights=np.arange(40.0),
                              density=True)
    check(h, nh, np.float32, rtol=1e-5)
    sample = np.stack([xs, ys, xs * ys], 1)
    h, e = jnp.histogramdd(sample, bins=[edges, edges, edges[:2]])
    nh, ne = np.histogramdd(sample, bins=[edges, edges, edges[:2]])
    check_equal(h, nh, np.int32)
    assert len(e) == 3
    h, e = jnp.histogramdd(sample, bins=3, range=[(0, 1), (0, 1), (0, 1)])
    nh, ne = np.histogramdd(sample, bins=3, range=[(0, 1), (0, 1), (0, 1)])
    check_equal(h, nh)
    for got, want in zip(e, ne):
        check(got, want)
    f = ember.jit(lambda x, y: jnp.histogram2d(x, y, bins=edges)[0])
    check_equal(f(xs, ys), np.histogram2d(xs, ys, bins=edges)[0])


def test_all_names_exported():
    from ember._src.numpy import extras_math

    for name in extras_math.__all__:
        assert getattr(jnp, name) is getattr(extras_math, name), name
