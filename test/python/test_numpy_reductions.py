"""Reductions, scans, sorting statistics of ember.numpy against NumPy."""

import numpy as np
import pytest

import ember

from helpers import assert_close, jnp, rand

AXES = [None, 0, 1, -1, (0, 1)]


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_basic_reductions(name, axis, dtype):
    x = rand((3, 4), dtype, seed=1, low=-2, high=2)
    ref = getattr(np, name)(x, axis=axis)
    if name == "mean":
        ref = ref.astype(np.float32)
    assert_close(getattr(jnp, name)(x, axis=axis), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["sum", "max", "mean", "prod"])
def test_reductions_keepdims_and_3d(name):
    x = rand((2, 3, 4), np.float32, seed=2)
    for axis in [None, 1, (0, 2)]:
        assert_close(getattr(jnp, name)(x, axis=axis, keepdims=True),
                     getattr(np, name)(x, axis=axis, keepdims=True), rtol=1e-5, atol=1e-5)


def test_reduction_dtypes():
    b = rand((3, 4), np.bool_)
    assert_close(jnp.sum(b), np.sum(b).astype(np.int32))
    assert_close(jnp.sum(b, axis=0), np.sum(b, axis=0).astype(np.int32))
    assert_close(jnp.max(b, axis=1), np.max(b, axis=1))
    i8 = np.arange(5, dtype=np.int8)
    assert jnp.sum(i8).dtype == np.int32
    assert jnp.sum(i8, dtype=jnp.int8).dtype == np.int8
    assert jnp.sum(np.arange(4, dtype=np.uint8)).dtype == np.uint32
    h = np.linspace(0, 1, 8).astype(np.float16)
    assert jnp.sum(h).dtype == np.float16
    assert_close(jnp.sum(h), np.sum(h))
    assert_close(jnp.mean(h), np.mean(h))
    assert jnp.mean(np.arange(4, dtype=np.int32)).dtype == np.float32
    assert jnp.sum(jnp.ones(4, jnp.bfloat16)).dtype == jnp.bfloat16
    assert float(jnp.sum(jnp.ones(4, jnp.bfloat16))) == 4.0


def test_reduction_initial_and_where():
    x = rand((3, 4), np.float32, seed=3)
    m = rand((3, 4), np.bool_, seed=4)
    assert_close(jnp.sum(x, initial=10.0), np.sum(x, initial=10.0))
    assert_close(jnp.sum(x, axis=1, where=m), np.sum(x, axis=1, where=m))
    assert_close(jnp.max(x, axis=0, initial=-100.0, where=m),
                 np.max(x, axis=0, initial=-100.0, where=m))
    assert_close(jnp.max(x, initial=5.0), np.max(x, initial=5.0))
    assert_close(jnp.mean(x, axis=1, where=m | np.eye(3, 4, dtype=bool)),
                 np.mean(x, axis=1, where=m | np.eye(3, 4, dtype=bool)))


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std(name, axis, ddof):
    x = rand((3, 4), np.float32, seed=5)
    assert_close(getattr(jnp, name)(x, axis=axis, ddof=ddof),
                 getattr(np, name)(x, axis=axis, ddof=ddof), rtol=1e-5, atol=1e-5)
    xi = rand((3, 4), np.int32, seed=5)
    assert_close(getattr(jnp, name)(xi, axis=axis, ddof=ddof),
                 getattr(np, name)(xi, axis=axis, ddof=ddof).astype(np.float32), rtol=1e-5)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_argmax_argmin(name, axis, dtype):
    x = rand((3, 4), dtype, seed=6, low=-2, high=2)
    assert_close(getattr(jnp, name)(x, axis=axis), getattr(np, name)(x, axis=axis).astype(np.int32))
    assert_close(getattr(jnp, name)(x, axis=axis, keepdims=True),
                 getattr(np, name)(x, axis=axis, keepdims=True).astype(np.int32))


def test_argmax_nan_first_occurrence():
    x = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    assert int(jnp.argmax(x)) == 1
    assert int(jnp.argmin(x)) == 1
    y = np.array([3, 1, 3, 1], np.int32)
    assert int(jnp.argmax(y)) == 0 and int(jnp.argmin(y)) == 1


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int32])
def test_all_any(name, axis, dtype):
    x = rand((3, 4), dtype, seed=7, low=0, high=1)
    assert_close(getattr(jnp, name)(x, axis=axis), getattr(np, name)(x, axis=axis))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_cumulative(name, axis, dtype):
    x = rand((3, 4), dtype, seed=8, low=-2, high=2)
    ref = getattr(np, name)(x, axis=axis)
    assert_close(getattr(jnp, name)(x, axis=axis), ref, rtol=1e-5, atol=1e-5)


def test_cumsum_dtype_arg():
    x = np.arange(5, dtype=np.int32)
    assert_close(jnp.cumsum(x, dtype=jnp.float32), np.cumsum(x, dtype=np.float32))


NAN_DATA = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, 5.0, 0.5, 2.0], [4.0, 1.0, np.nan, 6.0]],
                    np.float32)


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
                                  "nanstd", "nanargmax", "nanargmin", "nancumsum", "nancumprod",
                                  "nanmedian"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions(name, axis):
    ref = getattr(np, name)(NAN_DATA, axis=axis)
    if name.startswith("nanarg"):
        ref = np.asarray(ref).astype(np.int32)
    assert_close(getattr(jnp, name)(NAN_DATA, axis=axis), np.asarray(ref, np.float32)
                 if not name.startswith("nanarg") else ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_median(axis):
    x = rand((3, 4), np.float32, seed=9)
    assert_close(jnp.median(x, axis=axis), np.median(x, axis=axis))
    assert_close(jnp.median(x, axis=axis, keepdims=True), np.median(x, axis=axis, keepdims=True))
    xi = rand((5,), np.int32, seed=9)
    assert_close(jnp.median(xi), np.median(xi).astype(np.float32))


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_methods(method):
    x = rand((3, 5), np.float32, seed=10)
    q = np.array([0.0, 0.3, 0.5, 1.0], np.float32)

    def ref(x, q, **kw):
        if method != "nearest":
            return np.quantile(x, q, method=method, **kw)
        # JAX's 'nearest' takes the lower element at a tie (NumPy's the even
        # one): position p -> ceil(p - 0.5).
        s = np.sort(x, axis=kw.get("axis"))
        n = s.shape[kw.get("axis", 0)] if kw else s.size
        idx = np.ceil(np.asarray(q) * (n - 1) - 0.5).astype(int)
        return np.take(s, idx, axis=kw["axis"]) if kw else np.take(s.ravel(), idx)

    want = ref(x, q, axis=1)
    assert_close(jnp.quantile(x, q, axis=1, method=method),
                 np.moveaxis(want, -1, 0) if method == "nearest" else want)
    assert_close(jnp.quantile(x, 0.25, method=method),
                 np.asarray(ref(x, 0.25)).astype(np.float32))


def test_percentile():
    x = rand((4, 3), np.float32, seed=11)
    assert_close(jnp.percentile(x, 40), np.percentile(x, 40).astype(np.float32))
    assert_close(jnp.percentile(x, jnp.array([10, 90]), axis=0),
                 np.percentile(x, [10, 90], axis=0).astype(np.float32))
    assert_close(jnp.percentile(x, 50, axis=1, keepdims=True),
                 np.percentile(x, 50, axis=1, keepdims=True).astype(np.float32))
    y = NAN_DATA
    assert_close(jnp.nanpercentile(y, 50, axis=1),
                 np.nanpercentile(y, 50, axis=1).astype(np.float32))
    assert_close(jnp.nanquantile(y, 0.5, axis=0), np.nanquantile(y, 0.5, axis=0).astype(np.float32))


def test_misc_statistics():
    x = rand((3, 4), np.float32, seed=12)
    w = np.abs(rand((4,), np.float32, seed=13)) + 0.1
    assert_close(jnp.average(x, axis=1, weights=w), np.average(x, axis=1, weights=w))
    assert_close(jnp.average(x), np.average(x).astype(np.float32))
    assert_close(jnp.ptp(x, axis=0), np.ptp(x, axis=0))
    assert_close(jnp.count_nonzero(x > 0, axis=1), np.count_nonzero(x > 0, axis=1).astype(np.int32))
    assert_close(jnp.diff(x, axis=1), np.diff(x, axis=1))
    assert_close(jnp.diff(x, n=2, axis=0), np.diff(x, n=2, axis=0))
    assert_close(jnp.cumulative_sum(x, axis=1), np.cumulative_sum(x, axis=1))


def test_empty_reductions():
    z = np.zeros((0, 3), np.float32)
    assert_close(jnp.sum(z, axis=0), np.sum(z, axis=0))
    assert_close(jnp.prod(z, axis=0), np.prod(z, axis=0))
    assert_close(jnp.any(z, axis=0), np.any(z, axis=0))
    assert_close(jnp.all(z, axis=0), np.all(z, axis=0))


def test_cumulative_sum_prod_include_initial():
    x = np.arange(1, 5, dtype=np.int32)
    assert_close(jnp.cumulative_sum(x, include_initial=True),
                 np.cumulative_sum(x, include_initial=True))
    m = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    assert_close(jnp.cumulative_prod(m, axis=1, include_initial=True),
                 np.cumulative_prod(m, axis=1, include_initial=True))
    with pytest.raises(ValueError):
        jnp.cumulative_sum(m)


def test_long_column_sums_are_accurate():
    """Sums over a long outer dimension run in blocks (as XLA's tree
    reduction rewriter does): a column mean of 10,000 float32 values in
    [0, 1) is within a few ulp of the float64 result (a sequential sum was
    about 40 ulp off; JAX's about 1), under `jit` and outside it, for the
    quantities JAX's "thinking in JAX" tutorial compares."""
    rng = np.random.default_rng(0)
    x = rng.random((10000, 10)).astype(np.float32)
    x64 = x.astype(np.float64)
    eps = np.finfo(np.float32).eps
    for f in (lambda a: a.mean(0), lambda a: a.sum(0), lambda a: a.std(0),
              lambda a: a.sum(-2)):
        want = f(x64)
        for g in (f, ember.jit(f)):
            got = np.asarray(g(jnp.asarray(x))).astype(np.float64)
            assert np.max(np.abs(got - want) / np.abs(want)) < 4 * eps
    norm = lambda a: (a - a.mean(0)) / a.std(0)  # noqa: E731
    assert np.allclose(norm(jnp.asarray(x)), ember.jit(norm)(x), atol=1e-6)


def test_lax_reduce_monoids_and_init_values():
    from ember import lax

    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    i = np.arange(12, dtype=np.int32).reshape(3, 4) * 7
    np.testing.assert_allclose(np.asarray(lax.reduce(x, 0.0, lax.add, (0,))), x.sum(0))
    np.testing.assert_allclose(np.asarray(lax.reduce(x, 10.0, lax.add, (1,))), x.sum(1) + 10)
    np.testing.assert_allclose(np.asarray(lax.reduce(x, -np.inf, lax.max, (0, 1))), x.max())
    np.testing.assert_allclose(np.asarray(lax.reduce(x, 100.0, lax.min, (1,))), x.min(1))
    np.testing.assert_array_equal(np.asarray(lax.reduce(i, 0, lax.bitwise_xor, (0,))),
                                  np.bitwise_xor.reduce(i, 0))
    a, b = lax.reduce((x, i), (1.0, 1), lax.mul, (1,))
    np.testing.assert_allclose(np.asarray(a), x.prod(1))
    np.testing.assert_array_equal(np.asarray(b), i.prod(1, dtype=np.int32))
    g = ember.grad(lambda v: lax.reduce(v, 0.0, lax.add, (0, 1)))(x)
    np.testing.assert_allclose(np.asarray(g), np.ones_like(x))


def test_lax_reduce_with_a_users_computation():
    # Values from JAX 0.10.2: a value-and-index argmax over pytrees of
    # scalars, and a computation that is not associative, which XLA's CPU
    # backend folds into the init value in order.
    from ember import lax

    x = jnp.array([[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0]])
    idx = jnp.broadcast_to(jnp.arange(4), x.shape)

    def amax(a, b):
        (av, ai), (bv, bi) = a, b
        pick = (av > bv) | ((av == bv) & (ai < bi))
        assert av.shape == ()  # the computation sees scalars
        return lax.select(pick, av, bv), lax.select(pick, ai, bi)
    v, i = lax.reduce((x, idx), (-jnp.inf, 0), amax, (1,))
    assert v.tolist() == [4.0, 9.0] and i.tolist() == [2, 1] and i.dtype == np.int32
    fold = lambda a, b: a + 2 * b  # noqa: E731
    assert lax.reduce(x, 0.0, fold, (0,)).tolist() == [16.0, 20.0, 12.0, 14.0]
    assert ember.jit(lambda x: lax.reduce(x, 0.0, fold, (0,)))(x).tolist() == [
        16.0, 20.0, 12.0, 14.0]
    assert float(lax.reduce(x, 1.0, lambda a, b: a * b, (0, 1))) == 6480.0
    assert lax.reduce(jnp.zeros((3, 0)), 7.0, lambda a, b: a - b, (1,)).tolist() == [7.0] * 3
    g = ember.grad(lambda x: lax.reduce(x, 0.0, jnp.maximum, (1,)).sum())(x)
    assert g.tolist() == [[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    out = ember.vmap(lambda x: lax.reduce(x, 0.0, fold, (0,)))(jnp.stack([x, x * 2]))
    assert out.tolist() == [[16.0, 20.0, 12.0, 14.0], [32.0, 40.0, 24.0, 28.0]]


def test_argmax_argmin_of_booleans():
    b = np.array([[False, True, True], [False, False, False], [True, False, True]])
    np.testing.assert_array_equal(np.asarray(jnp.argmax(b, axis=1)), np.argmax(b, axis=1))
    np.testing.assert_array_equal(np.asarray(jnp.argmin(b, axis=0)), np.argmin(b, axis=0))
    np.testing.assert_array_equal(np.asarray(ember.jit(jnp.argmax)(b)), np.argmax(b))


def test_weighted_inverted_cdf_quantiles():
    # `method="inverted_cdf"` with and without `weights=` (NumPy's values;
    # JAX's checks and NaNs: a NaN datum weighs nothing, and makes the
    # result NaN unless nan-quantiles; a negative weight makes it NaN).
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 7)).astype(np.float32)
    w = rng.uniform(0, 2, size=7).astype(np.float32)
    w2 = rng.uniform(0, 2, size=(3, 7)).astype(np.float32)
    qs = np.array([0.0, 0.1, 0.25, 0.5, 0.9, 1.0], np.float32)
    kw = {"method": "inverted_cdf"}
    assert_close(jnp.quantile(x, qs, axis=1, **kw), np.quantile(x, qs, axis=1, **kw))
    assert_close(jnp.quantile(x, qs, axis=1, weights=w, **kw),
                 np.quantile(x, qs, axis=1, weights=np.broadcast_to(w, x.shape), **kw))
    assert_close(jnp.quantile(x, 0.3, axis=1, weights=w2, keepdims=True, **kw),
                 np.quantile(x, 0.3, axis=1, weights=w2, keepdims=True, **kw))
    assert_close(jnp.quantile(x, qs, weights=w2, **kw), np.quantile(x, qs, weights=w2, **kw))
    assert_close(jnp.percentile(x, 40, axis=1, weights=w, **kw),
                 np.percentile(x, 40, axis=1, weights=np.broadcast_to(w, x.shape), **kw))
    assert_close(ember.jit(lambda a, b: jnp.quantile(a, 0.7, axis=1, weights=b, **kw))(x, w),
                 np.quantile(x, 0.7, axis=1, weights=np.broadcast_to(w, x.shape), **kw))
    xn = x.copy()
    xn[1, 2] = np.nan
    got = np.asarray(jnp.quantile(xn, 0.5, axis=1, weights=w, **kw))
    assert np.isnan(got[1]) and not np.isnan(got[[0, 2]]).any()
    assert_close(jnp.nanquantile(xn, qs, axis=1, **kw), np.nanquantile(xn, qs, axis=1, **kw))
    neg = np.asarray(jnp.quantile(x, 0.5, axis=1, weights=w * np.where(np.arange(7) == 3, -1, 1),
                                  **kw))
    assert np.isnan(neg).all()
    with pytest.raises(ValueError, match=r"Weights shape \(3,\) must match reduction axes"):
        jnp.quantile(x, 0.5, axis=1, weights=np.ones(3), **kw)
    with pytest.raises(NotImplementedError, match="linear doesn't support weights"):
        jnp.quantile(x, 0.5, axis=1, weights=w)
    with pytest.raises(ValueError, match="Weights cannot be complex"):
        jnp.quantile(x, 0.5, axis=1, weights=w * 1j, **kw)
