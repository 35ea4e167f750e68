"""`jax.scipy.stats`: densities, distribution functions and quantiles of
common distributions, with JAX's names and signatures (`norm.logpdf(x, loc,
scale)`, ...). Each distribution is a namespace of functions, written on
`ember.scipy.special` (CDFs on its incomplete gamma and beta functions)."""

import math
from types import SimpleNamespace

import ember.numpy as jnp
from ember.scipy import special as sp
from ember.scipy.special import _float


def _std(x, loc, scale):
    x, loc, scale = _float(x, loc, scale)
    return (x - loc) / scale, scale


def _dist(name, **fns):
    ns = SimpleNamespace(**fns)
    ns.__name__ = f"ember.scipy.stats.{name}"
    return ns


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _norm_logpdf(x, loc=0, scale=1):
    z, s = _std(x, loc, scale)
    return -0.5 * z * z - _LOG_SQRT_2PI - jnp.log(s)


norm = _dist(
    "norm",
    logpdf=_norm_logpdf,
    pdf=lambda x, loc=0, scale=1: jnp.exp(_norm_logpdf(x, loc, scale)),
    cdf=lambda x, loc=0, scale=1: sp.ndtr(_std(x, loc, scale)[0]),
    logcdf=lambda x, loc=0, scale=1: sp.log_ndtr(_std(x, loc, scale)[0]),
    sf=lambda x, loc=0, scale=1: sp.ndtr(-_std(x, loc, scale)[0]),
    logsf=lambda x, loc=0, scale=1: sp.log_ndtr(-_std(x, loc, scale)[0]),
    ppf=lambda q, loc=0, scale=1: _float(loc) + _float(scale) * sp.ndtri(q),
    isf=lambda q, loc=0, scale=1: _float(loc) - _float(scale) * sp.ndtri(q),
)


def _logistic_logpdf(x, loc=0, scale=1):
    z, s = _std(x, loc, scale)
    return -z - 2 * jnp.logaddexp(0.0, -z) - jnp.log(s)


logistic = _dist(
    "logistic",
    logpdf=_logistic_logpdf,
    pdf=lambda x, loc=0, scale=1: jnp.exp(_logistic_logpdf(x, loc, scale)),
    cdf=lambda x, loc=0, scale=1: sp.expit(_std(x, loc, scale)[0]),
    sf=lambda x, loc=0, scale=1: sp.expit(-_std(x, loc, scale)[0]),
    ppf=lambda q, loc=0, scale=1: _float(loc) + _float(scale) * sp.logit(q),
    isf=lambda q, loc=0, scale=1: _float(loc) - _float(scale) * sp.logit(q),
)


def _expon_logpdf(x, loc=0, scale=1):
    z, s = _std(x, loc, scale)
    return jnp.where(z < 0, -jnp.inf, -z - jnp.log(s))


expon = _dist(
    "expon",
    logpdf=_expon_logpdf,
    pdf=lambda x, loc=0, scale=1: jnp.exp(_expon_logpdf(x, loc, scale)),
    cdf=lambda x, loc=0, scale=1: -jnp.expm1(-jnp.maximum(_std(x, loc, scale)[0], 0.0)),
    logcdf=lambda x, loc=0, scale=1: jnp.log(
        -jnp.expm1(-jnp.maximum(_std(x, loc, scale)[0], 0.0))),
    sf=lambda x, loc=0, scale=1: jnp.exp(-jnp.maximum(_std(x, loc, scale)[0], 0.0)),
    logsf=lambda x, loc=0, scale=1: -jnp.maximum(_std(x, loc, scale)[0], 0.0),
    ppf=lambda q, loc=0, scale=1: jnp.where(
        (_float(q) < 0) | (_float(q) > 1), jnp.nan,
        _float(loc) - _float(scale) * jnp.log1p(-_float(q))),
)


def _laplace_logpdf(x, loc=0, scale=1):
    z, s = _std(x, loc, scale)
    return -jnp.abs(z) - jnp.log(2 * s)


laplace = _dist(
    "laplace",
    logpdf=_laplace_logpdf,
    pdf=lambda x, loc=0, scale=1: jnp.exp(_laplace_logpdf(x, loc, scale)),
    cdf=lambda x, loc=0, scale=1: (lambda z: jnp.where(
        z < 0, 0.5 * jnp.exp(z), 1 - 0.5 * jnp.exp(-z)))(_std(x, loc, scale)[0]),
)


def _cauchy_logpdf(x, loc=0, scale=1):
    z, s = _std(x, loc, scale)
    return -math.log(math.pi) - jnp.log(s) - jnp.log1p(z * z)


def _cauchy_cdf(x, loc=0, scale=1):
    return 0.5 + jnp.arctan(_std(x, loc, scale)[0]) / math.pi


cauchy = _dist(
    "cauchy",
    logpdf=_cauchy_logpdf,
    pdf=lambda x, loc=0, scale=1: jnp.exp(_cauchy_logpdf(x, loc, scale)),
    cdf=_cauchy_cdf,
    logcdf=lambda x, loc=0, scale=1: jnp.log(_cauchy_cdf(x, loc, scale)),
    sf=lambda x, loc=0, scale=1: _cauchy_cdf(-_float(x), -_float(loc), scale),
    logsf=lambda x, loc=0, scale=1: jnp.log(_cauchy_cdf(-_float(x), -_float(loc), scale)),
    ppf=lambda q, loc=0, scale=1: _float(loc) + _float(scale) * jnp.tan(
        math.pi * (_float(q) - 0.5)),
    isf=lambda q, loc=0, scale=1: _float(loc) + _float(scale) * jnp.tan(
        math.pi * (0.5 - _float(q))),
)


def _uniform_logpdf(x, loc=0, scale=1):
    x, loc, scale = _float(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return jnp.where(inside, -jnp.log(scale), -jnp.inf)


uniform = _dist(
    "uniform",
    logpdf=_uniform_logpdf,
    pdf=lambda x, loc=0, scale=1: jnp.exp(_uniform_logpdf(x, loc, scale)),
    cdf=lambda x, loc=0, scale=1: jnp.clip(_std(x, loc, scale)[0], 0.0, 1.0),
    ppf=lambda q, loc=0, scale=1: (lambda q, lo, s: jnp.where(
        (q >= 0) & (q <= 1), lo + q * s, jnp.nan))(*_float(q, loc, scale)),
)


def _t_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _float(x, df, loc, scale)
    z = (x - loc) / scale
    return (sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * jnp.log(df * math.pi)
            - jnp.log(scale) - (df + 1) / 2 * jnp.log1p(z * z / df))


t = _dist("t", logpdf=_t_logpdf,
          pdf=lambda x, df, loc=0, scale=1: jnp.exp(_t_logpdf(x, df, loc, scale)))


def _gamma_logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _float(x, a, loc, scale)
    z = (x - loc) / scale
    safe = jnp.where(z > 0, z, 1.0)
    val = sp.xlogy(a - 1, safe) - safe - sp.gammaln(a) - jnp.log(scale)
    return jnp.where(z < 0, -jnp.inf, jnp.where(z == 0, sp.xlogy(a - 1, z) - sp.gammaln(a)
                                                 - jnp.log(scale), val))


def _gamma_cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _float(x, a, loc, scale)
    return sp.gammainc(a, jnp.maximum((x - loc) / scale, 0.0))


def _gamma_sf(x, a, loc=0, scale=1):
    x, a, loc, scale = _float(x, a, loc, scale)
    return sp.gammaincc(a, jnp.maximum((x - loc) / scale, 0.0))


gamma = _dist("gamma", logpdf=_gamma_logpdf,
              pdf=lambda x, a, loc=0, scale=1: jnp.exp(_gamma_logpdf(x, a, loc, scale)),
              cdf=_gamma_cdf, sf=_gamma_sf,
              logcdf=lambda x, a, loc=0, scale=1: jnp.log(_gamma_cdf(x, a, loc, scale)),
              logsf=lambda x, a, loc=0, scale=1: jnp.log(_gamma_sf(x, a, loc, scale)))


def _chi2_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _float(x, df, loc, scale)
    return _gamma_logpdf(x, df / 2, loc, 2 * scale)


def _chi2_cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _float(x, df, loc, scale)
    return _gamma_cdf(x, df / 2, loc, 2 * scale)


def _chi2_sf(x, df, loc=0, scale=1):
    x, df, loc, scale = _float(x, df, loc, scale)
    return _gamma_sf(x, df / 2, loc, 2 * scale)


chi2 = _dist("chi2", logpdf=_chi2_logpdf,
             pdf=lambda x, df, loc=0, scale=1: jnp.exp(_chi2_logpdf(x, df, loc, scale)),
             cdf=_chi2_cdf, sf=_chi2_sf,
             logcdf=lambda x, df, loc=0, scale=1: jnp.log(_chi2_cdf(x, df, loc, scale)),
             logsf=lambda x, df, loc=0, scale=1: jnp.log(_chi2_sf(x, df, loc, scale)))


def _beta_logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _float(x, a, b, loc, scale)
    z = (x - loc) / scale
    val = sp.xlogy(a - 1, z) + sp.xlog1py(b - 1, -z) - sp.betaln(a, b) - jnp.log(scale)
    return jnp.where((z < 0) | (z > 1), -jnp.inf, val)


def _beta_cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _float(x, a, b, loc, scale)
    return sp.betainc(a, b, jnp.clip((x - loc) / scale, 0.0, 1.0))


def _beta_sf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _float(x, a, b, loc, scale)
    return sp.betainc(b, a, jnp.clip(1 - (x - loc) / scale, 0.0, 1.0))


beta = _dist("beta", logpdf=_beta_logpdf,
             pdf=lambda x, a, b, loc=0, scale=1: jnp.exp(_beta_logpdf(x, a, b, loc, scale)),
             cdf=_beta_cdf, sf=_beta_sf,
             logcdf=lambda x, a, b, loc=0, scale=1: jnp.log(_beta_cdf(x, a, b, loc, scale)),
             logsf=lambda x, a, b, loc=0, scale=1: jnp.log(_beta_sf(x, a, b, loc, scale)))


def _poisson_logpmf(k, mu, loc=0):
    k, mu, loc = _float(k, mu, loc)
    x = k - loc
    val = sp.xlogy(x, mu) - sp.gammaln(x + 1) - mu
    return jnp.where((x < 0) | (x != jnp.round(x)), -jnp.inf, val)


def _poisson_cdf(k, mu, loc=0):
    k, mu, loc = _float(k, mu, loc)
    x = jnp.floor(k - loc)
    return jnp.where(x < 0, 0.0, sp.gammaincc(jnp.maximum(x, 0.0) + 1, mu)).astype(k.dtype)


def _poisson_entropy(mu, loc=0):
    """-sum_k p(k) log p(k): summed over k < 220 (beyond mu + 10 sqrt(mu) + 20
    for mu < 100, where the terms vanish), and for mu >= 100 Stirling's
    1/2 log(2 pi e mu) - 1/(12 mu) (JAX's regimes); NaN for mu < 0."""
    mu, loc = _float(mu, loc)
    mu = jnp.broadcast_to(mu, jnp.broadcast_shapes(mu.shape, loc.shape))
    k = jnp.arange(220, dtype=mu.dtype)
    m = mu[..., None]
    logp = sp.xlogy(k, m) - m - sp.gammaln(k + 1)
    p = jnp.exp(logp)
    direct = jnp.sum(jnp.where(p > 0, -p * logp, 0.0), axis=-1)
    big = jnp.where(mu >= 100, mu, 100.0)
    stirling = 0.5 * jnp.log(2 * math.pi * math.e * big) - 1 / (12 * big)
    out = jnp.where(mu >= 100, stirling, direct)
    return jnp.where(mu < 0, jnp.nan, out).astype(mu.dtype)


poisson = _dist("poisson", logpmf=_poisson_logpmf,
                pmf=lambda k, mu, loc=0: jnp.exp(_poisson_logpmf(k, mu, loc)),
                cdf=_poisson_cdf, entropy=_poisson_entropy)


def _bernoulli_logpmf(k, p, loc=0):
    k, p, loc = _float(k, p, loc)
    x = k - loc
    val = sp.xlogy(x, p) + sp.xlog1py(1 - x, -p)
    return jnp.where((x == 0) | (x == 1), val, -jnp.inf)


def _bernoulli_cdf(k, p):
    k, p = _float(k, p)
    return jnp.where(k < 0, 0.0, jnp.where(k < 1, 1 - p, 1.0)).astype(k.dtype)


def _bernoulli_ppf(q, p):
    q, p = _float(q, p)
    out = jnp.where(q > 1 - p, 1.0, 0.0)
    return jnp.where((q < 0) | (q > 1), jnp.nan, out).astype(q.dtype)


bernoulli = _dist("bernoulli", logpmf=_bernoulli_logpmf,
                  pmf=lambda k, p, loc=0: jnp.exp(_bernoulli_logpmf(k, p, loc)),
                  cdf=_bernoulli_cdf, ppf=_bernoulli_ppf)


def _geom_logpmf(k, p, loc=0):
    k, p, loc = _float(k, p, loc)
    x = k - loc
    val = sp.xlog1py(x - 1, -p) + jnp.log(p)
    return jnp.where(x < 1, -jnp.inf, val)


geom = _dist("geom", logpmf=_geom_logpmf,
             pmf=lambda k, p, loc=0: jnp.exp(_geom_logpmf(k, p, loc)))


def _mvn_logpdf(x, mean, cov, allow_singular=None):
    x, mean, cov = _float(x, mean, cov)
    if not mean.shape:
        # A scalar mean: univariate normals, elementwise (JAX's).
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (math.log(2 * math.pi) + jnp.log(cov))
    if cov.ndim < 2:
        # A scalar or a vector of variances: a diagonal covariance.
        var = jnp.broadcast_to(cov, mean.shape[-1:])
        d = x - mean
        n = mean.shape[-1]
        return (-0.5 * jnp.sum(d * d / var, axis=-1) - 0.5 * jnp.sum(jnp.log(var))
                - n * _LOG_SQRT_2PI)
    n = cov.shape[-1]
    chol = jnp.linalg.cholesky(cov)
    d = x - mean
    y = jnp.linalg.solve(chol, d[..., None])[..., 0] if d.ndim == 1 else jnp.swapaxes(
        jnp.linalg.solve(chol, jnp.swapaxes(d, -1, -2)), -1, -2)
    logdet = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(y * y, axis=-1) - logdet - n * _LOG_SQRT_2PI


multivariate_normal = _dist(
    "multivariate_normal", logpdf=_mvn_logpdf,
    pdf=lambda x, mean, cov, allow_singular=None: jnp.exp(_mvn_logpdf(x, mean, cov)))


def _dirichlet_logpdf(x, alpha):
    x, alpha = _float(x, alpha)
    norm_const = jnp.sum(sp.gammaln(alpha), axis=0) - sp.gammaln(jnp.sum(alpha, axis=0))
    if x.ndim > alpha.ndim:
        alpha = alpha.reshape(alpha.shape + (1,) * (x.ndim - alpha.ndim))
    val = jnp.sum(sp.xlogy(alpha - 1, x), axis=0) - norm_const
    ok = jnp.all(x >= 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6 * x.shape[0] + 1e-6)
    return jnp.where(ok, val, -jnp.inf)


dirichlet = _dist("dirichlet", logpdf=_dirichlet_logpdf,
                  pdf=lambda x, alpha: jnp.exp(_dirichlet_logpdf(x, alpha)))

from ember.scipy.stats._more import *  # noqa: E402,F401,F403
from ember.scipy.stats._more import __all__ as _more_all  # noqa: E402

__all__ = ["bernoulli", "beta", "cauchy", "chi2", "dirichlet", "expon", "gamma", "geom",
           "laplace", "logistic", "multivariate_normal", "norm", "poisson", "t", "uniform"]
__all__ += _more_all
