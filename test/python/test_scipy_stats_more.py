"""The second batch of `ember.scipy.stats` (binomial family, Pareto, Gumbel,
gennorm, truncnorm, circular, multinomial, rankdata, sem, mode, gaussian_kde)
against SciPy (f32 inputs, f64 references), plus `jit` / `grad` checks."""


import numpy as np
import pytest

scipy_stats = pytest.importorskip("scipy.stats")

import ember  # noqa: E402
import ember.numpy as jnp  # noqa: E402
from ember.scipy import stats as es  # noqa: E402

X = np.linspace(-4.0, 4.0, 33).astype(np.float32)
U = np.linspace(0.02, 0.98, 25).astype(np.float32)
K = np.arange(-1.0, 12.0, dtype=np.float32)
PX = np.linspace(0.5, 6.0, 23).astype(np.float32)
ANG = np.linspace(-3.0, 3.0, 25).astype(np.float32)
ANG2 = np.linspace(0.0, 6.28, 25).astype(np.float32)
TX = np.linspace(-2.0, 3.0, 31).astype(np.float32)

LOC_SCALE_FNS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")

CASES = [
    ("binom", f, (K, 10.0, 0.3)) for f in ("logpmf", "pmf")
] + [("binom", "logpmf", (K, 8.0, 0.6, 1.0)), ("binom", "pmf", (K, 10.0, 0.0)),
     ("binom", "pmf", (K, 10.0, 1.0))] + [
    ("betabinom", f, (K, 10.0, 2.5, 1.5)) for f in ("logpmf", "pmf")
] + [("betabinom", "logpmf", (K, 7.0, 0.6, 3.0, 2.0))] + [
    ("nbinom", f, (K, 4.0, 0.35)) for f in ("logpmf", "pmf")
] + [("nbinom", "logpmf", (K, 2.5, 0.7, -1.0))] + [
    ("pareto", f, (PX, 2.5)) for f in LOC_SCALE_FNS
] + [("pareto", f, (PX, 1.5, 0.5, 1.2)) for f in LOC_SCALE_FNS] + [
    ("pareto", "ppf", (U, 2.5)), ("pareto", "ppf", (U, 1.5, 0.5, 1.2)),
] + [("gumbel_r", f, (X, 0.5, 1.3)) for f in LOC_SCALE_FNS] + [
    ("gumbel_l", f, (X, 0.5, 1.3)) for f in LOC_SCALE_FNS
] + [("gumbel_r", "ppf", (U, 0.5, 1.3)), ("gumbel_l", "ppf", (U, 0.5, 1.3)),
     ("gumbel_r", "logpdf", (X,)), ("gumbel_l", "cdf", (X,))] + [
    ("gennorm", f, (X, beta)) for f in ("logpdf", "pdf", "cdf") for beta in (0.7, 1.0, 2.0, 3.5)
] + [("truncnorm", f, (TX, -1.0, 2.0)) for f in LOC_SCALE_FNS] + [
    ("truncnorm", f, (TX, -0.5, 1.5, 0.3, 1.4)) for f in LOC_SCALE_FNS
] + [("vonmises", f, (ANG, kappa)) for f in ("logpdf", "pdf") for kappa in (0.0, 0.5, 2.0, 30.0)
     ] + [("wrapcauchy", f, (ANG2, c)) for f in ("logpdf", "pdf") for c in (0.1, 0.5, 0.9)]


def _ids(cases):
    return [f"{d}.{f}-{i}" for i, (d, f, _) in enumerate(cases)]


def _scipy_fn(dist, fn):
    return getattr(getattr(scipy_stats, dist), fn)


@pytest.mark.parametrize("dist,fn,args", CASES, ids=_ids(CASES))
def test_matches_scipy(dist, fn, args):
    got = np.asarray(getattr(getattr(es, dist), fn)(*args), np.float64)
    want = _scipy_fn(dist, fn)(*[np.asarray(a, np.float64) for a in args])
    np.testing.assert_allclose(got, want, rtol=3e-5, atol=1e-6)


def test_discrete_outside_support_and_dtype():
    k = np.float32([-1.0, 0.0, 10.0, 11.0])
    lp = np.asarray(es.binom.logpmf(k, 10.0, 0.3))
    assert lp[0] == -np.inf and lp[3] == -np.inf and np.isfinite(lp[1:3]).all()
    assert np.asarray(es.binom.logpmf(np.int32([0, 10]), 10, 0.0)).tolist() == [0.0, -np.inf]
    assert es.binom.pmf(2, 5, 0.3).dtype == jnp.float32
    assert np.asarray(es.betabinom.logpmf(k, 10.0, 2.0, 3.0))[[0, 3]].tolist() == [-np.inf] * 2
    assert float(es.nbinom.logpmf(-1.0, 3.0, 0.4)) == -np.inf


def test_continuous_edges():
    # Pareto: outside the support and at infinity.
    x = np.float32([-1.0, 0.5, 1.0, np.inf])
    assert np.asarray(es.pareto.logpdf(x, 2.0)).tolist()[:2] == [-np.inf, -np.inf]
    assert float(es.pareto.logpdf(np.float32(np.inf), 2.0)) == -np.inf
    np.testing.assert_allclose(np.asarray(es.pareto.cdf(x, 2.0)), [0, 0, 0, 1])
    ppf = np.asarray(es.pareto.ppf(np.float32([-0.1, 0.0, 1.0, 1.1]), 2.0))
    assert np.isnan(ppf[[0, 3]]).all() and ppf[1] == 1.0 and ppf[2] == np.inf
    # JAX returns nan from the Gumbel quantiles at 0 and 1 (and outside).
    for dist in (es.gumbel_r, es.gumbel_l):
        assert np.isnan(np.asarray(dist.ppf(np.float32([-0.1, 0.0, 1.0, 1.1])))).all()
    # Far tails of the Gumbel log-functions stay finite and accurate.
    np.testing.assert_allclose(float(es.gumbel_r.logsf(50.0, 0.5, 2.0)), -24.75, rtol=1e-6)
    np.testing.assert_allclose(float(es.gumbel_l.logcdf(-50.0, 0.5, 2.0)), -25.25, rtol=1e-6)
    # truncnorm: zero outside [a, b]; stable when [a, b] is deep in a tail.
    tx = np.float32([-3.0, 3.0])
    assert np.asarray(es.truncnorm.logpdf(tx, -1.0, 2.0)).tolist() == [-np.inf, -np.inf]
    assert np.asarray(es.truncnorm.cdf(tx, -1.0, 2.0)).tolist() == [0.0, 1.0]
    deep = np.float32([8.5, 9.0, 10.0])
    for a, b, xs in ((8.0, 12.0, deep), (-12.0, -8.0, -deep)):
        for fn in ("logpdf", "logcdf", "logsf"):
            np.testing.assert_allclose(
                np.asarray(getattr(es.truncnorm, fn)(xs, a, b)),
                getattr(scipy_stats.truncnorm, fn)(xs.astype(np.float64), a, b), rtol=2e-5)
    # Circular distributions: parameter checks and support.
    assert np.isnan(float(es.vonmises.logpdf(0.5, -1.0)))
    assert np.isnan(float(es.wrapcauchy.logpdf(0.5, 0.0)))
    assert np.asarray(es.wrapcauchy.logpdf(np.float32([-0.1, 7.0]), 0.5)).tolist() == [
        -np.inf, -np.inf]


def test_multinomial():
    p = np.float32([0.25, 0.25, 0.5])
    x = np.int32([[1, 2, 3], [0, 0, 6], [2, 2, 2]])
    want = scipy_stats.multinomial.logpmf(x, 6, p.astype(np.float64))
    np.testing.assert_allclose(np.asarray(es.multinomial.logpmf(x[0], 6, p)), want[0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(es.multinomial.logpmf(x, 6, p)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(es.multinomial.pmf(x, 6, p)), np.exp(want), rtol=1e-5)
    assert float(es.multinomial.logpmf(np.int32([1, 2, 2]), 6, p)) == -np.inf
    assert float(es.multinomial.logpmf(np.int32([1, -2, 7]), 6, p)) == -np.inf
    np.testing.assert_allclose(
        float(es.multinomial.logpmf(np.int32([0, 1, 5]), 6, np.float32([0, 0.5, 0.5]))),
        scipy_stats.multinomial.logpmf([0, 1, 5], 6, [0, 0.5, 0.5]), rtol=1e-5)
    assert es.multinomial.logpmf(x[0], 6, p).dtype == jnp.float32
    with pytest.raises(ValueError, match="integer"):
        es.multinomial.logpmf(np.float32([1, 2, 3]), 6.0, p)


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata(method):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, size=(4, 7)).astype(np.float32)
    for axis in (None, 0, 1, -1):
        got = es.rankdata(a, method, axis=axis)
        assert got.dtype == jnp.float32
        np.testing.assert_array_equal(np.asarray(got),
                                      scipy_stats.rankdata(a, method, axis=axis))
    np.testing.assert_array_equal(np.asarray(es.rankdata(np.int32([3, 1, 4, 1, 5]), method)),
                                  scipy_stats.rankdata([3, 1, 4, 1, 5], method))


def test_rankdata_nan_and_policies():
    a = np.float32([[3.0, np.nan, 1.0], [2.0, 1.0, 2.0]])
    got = np.asarray(es.rankdata(a, axis=1))
    assert np.isnan(got[0]).all()
    np.testing.assert_array_equal(got[1], [2.5, 1.0, 2.5])
    assert np.isnan(np.asarray(es.rankdata(a))).all()
    for policy in ("omit", "raise"):
        with pytest.raises(NotImplementedError):
            es.rankdata(a, nan_policy=policy)
    with pytest.raises(ValueError):
        es.rankdata(a, method="bogus")


def test_sem():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 4)).astype(np.float32)
    for axis in (0, 1, None):
        for ddof in (0, 1, 2):
            np.testing.assert_allclose(np.asarray(es.sem(a, axis=axis, ddof=ddof)),
                                       scipy_stats.sem(a, axis=axis, ddof=ddof), rtol=1e-5)
    for axis in (1, None, -2):
        got = es.sem(a, axis=axis, keepdims=True)
        want = scipy_stats.sem(a, axis=axis, keepdims=True)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    assert es.sem(a, axis=None, nan_policy="omit", keepdims=True).shape == (1, 1)
    b = np.float32([1.0, np.nan, 3.0, 4.0])
    assert np.isnan(float(es.sem(b)))
    np.testing.assert_allclose(float(es.sem(b, nan_policy="omit")),
                               scipy_stats.sem(b, nan_policy="omit"), rtol=1e-5)
    assert es.sem(np.int32([1, 2, 4])).dtype == jnp.float32
    with pytest.raises(ValueError):
        es.sem(a, nan_policy="raise")


def test_mode():
    a = np.int32([[1, 2, 2], [3, 3, 1], [1, 2, 1], [4, 2, 0]])
    for axis, keepdims in ((0, False), (1, False), (1, True), (None, False), (-1, True)):
        got = es.mode(a, axis=axis, keepdims=keepdims)
        want = scipy_stats.mode(a, axis=axis, keepdims=keepdims)
        assert type(got).__name__ == "ModeResult"
        np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
        np.testing.assert_array_equal(np.asarray(got.count), want.count)
        assert got.mode.dtype == jnp.int32 and got.count.dtype == jnp.int32
    m, c = es.mode(np.float32([1.5, 2.5, 2.5, 0.5]))
    assert float(m) == 2.5 and int(c) == 2
    m, c = es.mode(np.int32([3, 1, 3, 1]))  # ties: the smallest value
    assert int(m) == 1 and int(c) == 2
    assert es.mode(a, axis=None, keepdims=True).mode.shape == (1, 1)
    m, c = es.mode(np.float32(3.0))
    assert float(m) == 3.0 and int(c) == 1
    with pytest.raises(NotImplementedError):
        es.mode(a, nan_policy="omit")


def test_gaussian_kde():
    rng = np.random.default_rng(2)
    data1 = rng.standard_normal(20).astype(np.float32)
    pts1 = np.linspace(-3, 3, 7).astype(np.float32)
    w = rng.uniform(0.5, 2.0, 20).astype(np.float32)
    for bw in (None, "scott", "silverman", 0.6):
        for weights in (None, w):
            ek = es.gaussian_kde(data1, bw_method=bw, weights=weights)
            sk = scipy_stats.gaussian_kde(data1.astype(np.float64), bw_method=bw,
                                          weights=weights)
            np.testing.assert_allclose(np.asarray(ek.covariance), sk.covariance, rtol=1e-5)
            np.testing.assert_allclose(float(ek.neff), sk.neff, rtol=1e-5)
            np.testing.assert_allclose(np.asarray(ek.evaluate(pts1)), sk.evaluate(pts1),
                                       rtol=1e-5)
            np.testing.assert_allclose(np.asarray(ek(pts1)), sk(pts1), rtol=1e-5)
            np.testing.assert_allclose(np.asarray(ek.logpdf(pts1)), sk.logpdf(pts1), rtol=1e-5)
            np.testing.assert_allclose(float(ek.integrate_box_1d(-0.5, 1.0)),
                                       sk.integrate_box_1d(-0.5, 1.0), rtol=1e-5)
            np.testing.assert_allclose(float(ek.integrate_gaussian(0.3, 0.8)),
                                       sk.integrate_gaussian(0.3, 0.8), rtol=1e-5)
    ek = es.gaussian_kde(data1, bw_method=lambda k: 0.5)
    np.testing.assert_allclose(np.asarray(ek.covariance),
                               scipy_stats.gaussian_kde(data1, lambda k: 0.5).covariance,
                               rtol=1e-5)
    assert (ek.d, ek.n) == (1, 20)

    data2 = rng.standard_normal((2, 15)).astype(np.float32)
    pts2 = rng.standard_normal((2, 4)).astype(np.float32)
    ek, sk = es.gaussian_kde(data2), scipy_stats.gaussian_kde(data2.astype(np.float64))
    np.testing.assert_allclose(np.asarray(ek.covariance), sk.covariance, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ek.inv_cov), sk.inv_cov, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(ek.pdf(pts2)), sk.pdf(pts2), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ek.logpdf(pts2[:, 0])), sk.logpdf(pts2[:, 0]),
                               rtol=1e-5)
    mean, cov = np.float32([0.2, -0.1]), np.float32([[1.0, 0.3], [0.3, 0.5]])
    np.testing.assert_allclose(float(ek.integrate_gaussian(mean, cov)),
                               sk.integrate_gaussian(mean, cov), rtol=1e-5)
    other = rng.standard_normal((2, 9)).astype(np.float32) + 0.5
    np.testing.assert_allclose(
        float(ek.integrate_kde(es.gaussian_kde(other, 0.8))),
        sk.integrate_kde(scipy_stats.gaussian_kde(other.astype(np.float64), 0.8)), rtol=1e-5)

    draws = ek.resample(ember.random.key(0), (2000,))
    assert draws.shape == (2, 2000)
    np.testing.assert_allclose(np.asarray(draws).mean(axis=1), data2.mean(axis=1), atol=0.15)
    assert ek.resample(ember.random.key(1)).shape == (2,)
    with pytest.raises(NotImplementedError):
        ek.integrate_box([0, 0], [1, 1])
    with pytest.raises(NotImplementedError):
        ek.set_bandwidth(0.5)

    # A pytree: through jit, and the log-density differentiates in its points.
    f = ember.jit(lambda d, x: es.gaussian_kde(d).logpdf(x))
    np.testing.assert_allclose(np.asarray(f(data1, pts1)),
                               scipy_stats.gaussian_kde(data1).logpdf(pts1), rtol=1e-5)
    g = ember.jit(lambda k, x: k.logpdf(x))(es.gaussian_kde(data1), pts1)
    np.testing.assert_allclose(np.asarray(g), scipy_stats.gaussian_kde(data1).logpdf(pts1),
                               rtol=1e-5)
    dx = ember.grad(lambda x: es.gaussian_kde(data1).logpdf(x)[0])(np.float32([0.4]))
    h = 1e-3
    kd = scipy_stats.gaussian_kde(data1.astype(np.float64))
    np.testing.assert_allclose(float(dx[0]), (kd.logpdf(0.4 + h)[0] - kd.logpdf(0.4 - h)[0])
                               / (2 * h), rtol=1e-3)


JIT_CASES = [
    ("binom", "logpmf", (K, 10.0, 0.3)), ("betabinom", "logpmf", (K, 10.0, 2.5, 1.5)),
    ("nbinom", "logpmf", (K, 4.0, 0.35)), ("pareto", "logsf", (PX, 1.5, 0.5, 1.2)),
    ("gumbel_r", "logcdf", (X, 0.5, 1.3)), ("gumbel_l", "logpdf", (X, 0.5, 1.3)),
    ("gennorm", "cdf", (X, 1.5)), ("truncnorm", "logcdf", (TX, -1.0, 2.0, 0.2, 1.1)),
    ("vonmises", "logpdf", (ANG, 2.0)), ("wrapcauchy", "pdf", (ANG2, 0.4)),
]


@pytest.mark.parametrize("dist,fn,args", JIT_CASES, ids=_ids(JIT_CASES))
def test_jit(dist, fn, args):
    f = getattr(getattr(es, dist), fn)
    got = np.asarray(ember.jit(f)(*args), np.float64)
    np.testing.assert_allclose(got, np.asarray(f(*args), np.float64), rtol=1e-6, atol=1e-7)


def test_jit_multinomial_rank_sem_mode():
    p = np.float32([0.2, 0.3, 0.5])
    x = np.int32([1, 2, 3])
    np.testing.assert_allclose(float(ember.jit(es.multinomial.logpmf)(x, 6, p)),
                               scipy_stats.multinomial.logpmf(x, 6, p), rtol=1e-5)
    a = np.float32([[3, 1, 4, 1], [5, 9, 2, 6]])
    np.testing.assert_array_equal(
        np.asarray(ember.jit(lambda v: es.rankdata(v, "average", axis=1))(a)),
        scipy_stats.rankdata(a, axis=1))
    np.testing.assert_allclose(np.asarray(ember.jit(es.sem)(a)), scipy_stats.sem(a), rtol=1e-5)
    m, c = ember.jit(lambda v: es.mode(v, axis=1))(np.int32([[1, 2, 2], [3, 3, 1]]))
    assert np.asarray(m).tolist() == [2, 3] and np.asarray(c).tolist() == [2, 2]


def _num_grad(fn, arg_index, args, h=1e-5):
    args64 = [np.asarray(a, np.float64) for a in args]

    def at(v):
        a = list(args64)
        a[arg_index] = np.float64(v)
        return fn(*a)

    v = args64[arg_index]
    return (at(v + h) - at(v - h)) / (2 * h)


# (ember fn, scipy fn, args, index of the differentiated argument)
GRAD_CASES = [
    ("binom", "logpmf", (3.0, 10.0, 0.3), 2), ("betabinom", "logpmf", (3.0, 10.0, 2.5, 1.5), 2),
    ("betabinom", "logpmf", (3.0, 10.0, 2.5, 1.5), 3), ("nbinom", "logpmf", (3.0, 4.0, 0.35), 2),
    ("nbinom", "logpmf", (3.0, 4.0, 0.35), 1), ("pareto", "logpdf", (2.0, 2.5, 0.0, 1.2), 1),
    ("pareto", "cdf", (2.0, 2.5), 0), ("gumbel_r", "logpdf", (0.7, 0.5, 1.3), 0),
    ("gumbel_r", "logsf", (0.7, 0.5, 1.3), 2), ("gumbel_l", "logcdf", (0.7, 0.5, 1.3), 1),
    ("gumbel_l", "ppf", (0.3, 0.5, 1.3), 0), ("gennorm", "logpdf", (0.7, 1.5), 1),
    ("gennorm", "cdf", (0.7, 1.5), 0), ("truncnorm", "logpdf", (0.5, -1.0, 2.0), 1),
    ("truncnorm", "logcdf", (0.5, -1.0, 2.0, 0.1, 1.2), 0),
    ("truncnorm", "logsf", (9.0, 8.0, 12.0), 0), ("vonmises", "logpdf", (0.5, 2.0), 1),
    ("wrapcauchy", "logpdf", (1.0, 0.4), 1),
]


@pytest.mark.parametrize("dist,fn,args,i", GRAD_CASES,
                         ids=[f"{d}.{f}-d{i}" for d, f, _, i in GRAD_CASES])
def test_grad(dist, fn, args, i):
    f = getattr(getattr(es, dist), fn)
    got = ember.grad(lambda v: f(*[v if j == i else a for j, a in enumerate(args)]))(
        np.float32(args[i]))
    want = _num_grad(_scipy_fn(dist, fn), i, args)
    np.testing.assert_allclose(float(got), want, rtol=2e-3, atol=1e-5)


def test_grad_sem():
    a = np.float32([1.0, 2.0, 4.0, 7.0])
    got = np.asarray(ember.grad(lambda v: es.sem(v))(a))
    h = 1e-6
    want = [(scipy_stats.sem(a + h * e) - scipy_stats.sem(a - h * e)) / (2 * h)
            for e in np.eye(4)]
    np.testing.assert_allclose(got, want, rtol=1e-3)
