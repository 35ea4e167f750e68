"""`ember.scipy.special` against SciPy (f32 inputs, f64 references), and the
derivatives JAX documents (xlogy at 0, the log_ndtr tail)."""

import numpy as np
import pytest

scipy_special = pytest.importorskip("scipy.special")

import ember  # noqa: E402
from ember.scipy import special as es  # noqa: E402

X = np.linspace(-3.7, 3.7, 41).astype(np.float32)
POS = np.linspace(0.05, 6, 40).astype(np.float32)
P01 = np.linspace(0.01, 0.99, 40).astype(np.float32)
TAIL = np.array([-60, -30, -12, -9, -5, -1, 0, 3, 6, 9], np.float32)

CASES = [
    ("erf", (X,), 2e-6), ("erfc", (X,), 2e-6), ("erfc", (np.abs(X) * 2.5,), 2e-5),
    ("erfinv", (P01 * 2 - 1,), 1e-5), ("gammaln", (POS,), 1e-5), ("gamma", (X + 0.05,), 1e-4),
    ("digamma", (POS,), 1e-4), ("psi", (POS,), 1e-4), ("betaln", (POS, POS[::-1]), 1e-5),
    ("beta", (POS, POS[::-1]), 1e-4), ("factorial", (np.arange(8.0, dtype=np.float32),), 1e-5),
    ("expit", (X,), 1e-6), ("logit", (P01,), 1e-5), ("log_expit", (X,), 1e-6),
    ("xlogy", (np.float32([0, 1, 2]), np.float32([0, 2, 3])), 1e-6),
    ("xlog1py", (np.float32([0, 1, 2]), np.float32([-1, 2, 3])), 1e-6),
    ("entr", (np.float32([-1, 0, 0.5, 2]),), 1e-6),
    ("rel_entr", (P01, P01[::-1]), 1e-5), ("kl_div", (P01, P01[::-1]), 1e-5),
    ("ndtr", (X,), 2e-6), ("ndtr", (TAIL[2:],), 2e-5), ("ndtri", (P01,), 1e-4),
    ("log_ndtr", (TAIL,), 1e-5), ("log_ndtr", (X,), 1e-5),
    ("i0e", (X,), 1e-6), ("i1e", (X,), 1e-6), ("i0", (X,), 1e-5), ("i1", (X,), 1e-5),
    ("poch", (POS, np.float32(2.5)), 1e-4), ("exprel", (X,), 1e-5),
    ("gammainc", (POS, POS[::-1]), 2e-5), ("gammaincc", (POS, POS[::-1] * 0.5), 2e-5),
    ("betainc", (POS, POS[::-1], P01[:40]), 2e-5),
    ("logsumexp", (X,), 1e-6), ("softmax", (X,), 1e-5), ("log_softmax", (X,), 1e-5),
]


@pytest.mark.parametrize("name,args,rtol", CASES, ids=[c[0] for c in CASES])
def test_matches_scipy(name, args, rtol):
    got = np.asarray(getattr(es, name)(*args), np.float64)
    want = getattr(scipy_special, name)(*[np.asarray(a, np.float64) for a in args])
    # An absolute floor for results near zero (f32 inputs), except in the
    # tails, where the relative error is what the functions promise.
    tails = args[0] is TAIL or name == "erfc"
    # Results below f32's smallest normal number are flushed to zero, as
    # JAX's (XLA's CPU code) are.
    want = np.where(np.abs(want) < np.finfo(np.float32).tiny, 0.0, want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0 if tails else 2e-6)


def test_multigammaln():
    np.testing.assert_allclose(np.asarray(es.multigammaln(POS + 3, 3)),
                               scipy_special.multigammaln(POS.astype(np.float64) + 3, 3),
                               rtol=1e-5)


def test_gamma_poles_as_jax():
    out = np.asarray(es.gamma(np.float32([0.0, -1.0, -2.5, -0.0])))
    assert out[0] == np.inf and np.isnan(out[1]) and out[3] == -np.inf
    np.testing.assert_allclose(out[2], -0.9453087, rtol=1e-5)


def test_derivatives():
    assert float(ember.grad(lambda v: es.xlogy(v, 2.0))(0.0)) == pytest.approx(np.log(2.0))
    assert float(ember.grad(lambda v: es.xlogy(0.0, v))(2.0)) == 0.0
    # d/dx log ndtr(x) = pdf(x) / ndtr(x): finite in the tail, where the
    # naive log(ndtr(x)) is not.
    for v in (-30.0, -12.0, -9.0, 2.0):
        want = np.exp(-v * v / 2 - scipy_special.log_ndtr(v)) / np.sqrt(2 * np.pi)
        assert float(ember.grad(es.log_ndtr)(v)) == pytest.approx(want, rel=1e-4)
    g = float(ember.grad(es.erfc)(3.0))
    assert g == pytest.approx(-2 / np.sqrt(np.pi) * np.exp(-9.0), rel=1e-4)
    # ndtri' = 1 / pdf(ndtri(p)).
    want = np.sqrt(2 * np.pi) * np.exp(scipy_special.ndtri(0.3) ** 2 / 2)
    assert float(ember.grad(es.ndtri)(0.3)) == pytest.approx(want, rel=1e-4)


def test_zeta_and_polygamma_against_scipy(x64):
    """Hurwitz zeta (x > 1; poles at x = 1 and at q = 0, -1, ...; NaN for
    x < 1 and for a negative q with a fractional x) and polygamma, against
    SciPy, with derivatives in both arguments against SciPy's sums."""
    import scipy.special as ss

    import ember as jax
    import ember.scipy.special as esp

    x = np.array([2., 3., 1.5, 1., 0.5, 2., 2., 2., 4.5, 30., 1.01, 50., 2.5, 2.5])
    q = np.array([1., 2., 0.5, 1., 1., -1., -1.5, 0., 3.3, 0.2, 1., 1., 1e-3, -0.5])
    want = ss.zeta(x, q)
    got = np.asarray(esp.zeta(x.astype(np.float32), q.astype(np.float32)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-6)
    # float64 (the x64 fixture)
    np.testing.assert_allclose(np.asarray(esp.zeta(x, q)), want, rtol=1e-14)
    n = np.array([0, 1, 2, 3, 1, 4])
    z = np.array([0.7, 2., 0.5, 3.3, -1.5, 1e-2])
    np.testing.assert_allclose(np.asarray(esp.polygamma(n, z)), ss.polygamma(n, z),
                               rtol=1e-13)
    k = np.arange(2, 200000, dtype=np.float64)
    np.testing.assert_allclose(float(jax.grad(lambda x: esp.zeta(x, 2.))(2.)),
                               -np.sum(np.log(k) / k ** 2), rtol=1e-4)
    np.testing.assert_allclose(float(jax.grad(lambda q: esp.zeta(2., q))(2.)),
                               -2 * ss.zeta(3., 2.), rtol=1e-13)
    np.testing.assert_allclose(float(jax.grad(lambda x: esp.polygamma(1, x))(2.)),
                               ss.polygamma(2, 2.), rtol=1e-13)
    with pytest.raises(ValueError, match="must be of integer type"):
        esp.polygamma(1.5, 2.)
    with pytest.raises(NotImplementedError, match="Riemann zeta"):
        esp.zeta(2.)
