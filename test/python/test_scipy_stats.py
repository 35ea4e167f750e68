"""`ember.scipy.stats` against SciPy's distributions (f32 inputs, f64
references)."""

import numpy as np
import pytest

scipy_stats = pytest.importorskip("scipy.stats")

from ember.scipy import stats as es  # noqa: E402

X = np.linspace(-4.0, 4.0, 33).astype(np.float32)
POSX = np.linspace(0.05, 6.0, 30).astype(np.float32)
U = np.linspace(0.02, 0.98, 25).astype(np.float32)
K = np.arange(-1.0, 9.0, dtype=np.float32)

CASES = [
    ("norm", f, (X, 0.5, 1.7)) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
] + [("norm", f, (U, 0.5, 1.7)) for f in ("ppf", "isf")] + [
    ("logistic", f, (X, 0.3, 0.8)) for f in ("logpdf", "pdf", "cdf", "sf")
] + [("logistic", f, (U, 0.3, 0.8)) for f in ("ppf", "isf")] + [
    ("expon", f, (X, -1.0, 2.0)) for f in ("logpdf", "pdf", "cdf", "sf", "logsf")
] + [("expon", "logcdf", (POSX, 0.0, 2.0)), ("expon", "ppf", (U, -1.0, 2.0))] + [
    ("laplace", f, (X, 0.2, 1.5)) for f in ("logpdf", "pdf", "cdf")
] + [("cauchy", f, (X, 0.1, 0.7)) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
     ] + [("cauchy", f, (U, 0.1, 0.7)) for f in ("ppf", "isf")] + [
    ("uniform", f, (X, -1.0, 3.0)) for f in ("logpdf", "pdf", "cdf")
] + [("uniform", "ppf", (U, -1.0, 3.0)),
     ("t", "logpdf", (X, 3.5, 0.2, 1.3)), ("t", "pdf", (X, 3.5, 0.2, 1.3)),
     ("gamma", "logpdf", (POSX, 2.5, 0.0, 1.5)), ("gamma", "pdf", (X, 2.5, -1.0, 1.5)),
     ("gamma", "cdf", (X, 2.5, -1.0, 1.5)), ("gamma", "sf", (POSX, 0.7, 0.0, 2.0)),
     ("gamma", "logcdf", (POSX, 4.0)), ("chi2", "cdf", (POSX, 3.0)), ("chi2", "sf", (POSX, 5.0)),
     ("beta", "cdf", (U, 2.5, 1.5)), ("beta", "sf", (U, 0.7, 3.0)),
     ("beta", "logcdf", (U, 2.0, 2.0)), ("poisson", "cdf", (K, 3.2)),
     ("chi2", "logpdf", (POSX, 3.0)), ("chi2", "pdf", (POSX, 3.0, 0.5, 2.0)),
     ("beta", "logpdf", (U, 2.5, 1.5)), ("beta", "pdf", (U, 0.7, 3.0)),
     ("poisson", "logpmf", (K, 3.2)), ("poisson", "pmf", (K, 3.2)),
     ("bernoulli", "logpmf", (K, 0.3)), ("bernoulli", "pmf", (K, 0.3)),
     ("bernoulli", "cdf", (K, 0.3)), ("bernoulli", "ppf", (U, 0.3)),
     ("geom", "logpmf", (K, 0.3)), ("geom", "pmf", (K, 0.3))]


@pytest.mark.parametrize("dist,fn,args", CASES, ids=[f"{d}.{f}" for d, f, _ in CASES])
def test_matches_scipy(dist, fn, args):
    got = np.asarray(getattr(getattr(es, dist), fn)(*args), np.float64)
    want = getattr(getattr(scipy_stats, dist), fn)(*[np.asarray(a, np.float64) for a in args])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_multivariate_normal():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = (a @ a.T + 3 * np.eye(3)).astype(np.float32)
    mean = np.float32([0.5, -1.0, 2.0])
    x = rng.standard_normal((5, 3)).astype(np.float32)
    want = scipy_stats.multivariate_normal.logpdf(x, mean, cov)
    np.testing.assert_allclose(np.asarray(es.multivariate_normal.logpdf(x, mean, cov)), want,
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(es.multivariate_normal.logpdf(x[0], mean, cov)),
                               want[0], rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(es.multivariate_normal.pdf(x, mean, np.float32([1.0, 2.0, 0.5]))),
        scipy_stats.multivariate_normal.pdf(x, mean, np.diag([1.0, 2.0, 0.5])), rtol=1e-5)


def test_dirichlet():
    alpha = np.float32([1.5, 2.0, 3.0])
    x = np.float32([[0.25, 0.125], [0.25, 0.375], [0.5, 0.5]])
    want = scipy_stats.dirichlet.logpdf(x.astype(np.float64), alpha.astype(np.float64))
    np.testing.assert_allclose(np.asarray(es.dirichlet.logpdf(x, alpha)), want, rtol=1e-5)
    assert float(es.dirichlet.logpdf(np.float32([0.5, 0.6, 0.2]), alpha)) == -np.inf
