"""More of `jax.scipy.stats`: discrete (binomial family, multinomial),
extreme-value, circular and truncated distributions, and the rank / mode /
standard-error helpers. Same namespaces and signatures as JAX's; everything is
written on `ember.numpy` and `ember.scipy.special`, so it traces under `jit`
and differentiates under `grad`."""

import math
from typing import NamedTuple

import ember.numpy as jnp
from ember import lax, random, tree_util
from ember.scipy import special as sp
from ember.scipy.special import _float
from ember.scipy.stats import _LOG_SQRT_2PI, _dist, _std

_LOG_2PI = math.log(2 * math.pi)
_LOG_2 = math.log(2.0)


def _log_choose(n, k):
    val = sp.gammaln(n + 1) - sp.gammaln(k + 1) - sp.gammaln(n - k + 1)
    return jnp.where((k == 0) | (k == n), 0.0, val)  # exact at the ends


# --- binomial family ------------------------------------------------------


def _binom_logpmf(k, n, p, loc=0):
    k, n, p, loc = _float(k, n, p, loc)
    x = k - loc
    ok = (x >= 0) & (x <= n)
    xs = jnp.where(ok, x, 0.0)
    val = _log_choose(n, xs) + sp.xlogy(xs, p) + sp.xlog1py(n - xs, -p)
    return jnp.where(ok, val, -jnp.inf)


binom = _dist("binom", logpmf=_binom_logpmf,
              pmf=lambda k, n, p, loc=0: jnp.exp(_binom_logpmf(k, n, p, loc)))


def _betabinom_logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = _float(k, n, a, b, loc)
    x = k - loc
    ok = (x >= 0) & (x <= n)
    xs = jnp.where(ok, x, 0.0)
    val = _log_choose(n, xs) + sp.betaln(xs + a, n - xs + b) - sp.betaln(a, b)
    return jnp.where(ok, val, -jnp.inf)


betabinom = _dist("betabinom", logpmf=_betabinom_logpmf,
                  pmf=lambda k, n, a, b, loc=0: jnp.exp(_betabinom_logpmf(k, n, a, b, loc)))


def _nbinom_logpmf(k, n, p, loc=0):
    k, n, p, loc = _float(k, n, p, loc)
    x = k - loc
    ok = x >= 0
    xs = jnp.where(ok, x, 0.0)
    val = (sp.gammaln(xs + n) - sp.gammaln(xs + 1) - sp.gammaln(n)
           + sp.xlogy(n, p) + sp.xlog1py(xs, -p))
    return jnp.where(ok, val, -jnp.inf)


nbinom = _dist("nbinom", logpmf=_nbinom_logpmf,
               pmf=lambda k, n, p, loc=0: jnp.exp(_nbinom_logpmf(k, n, p, loc)))


# --- Pareto ---------------------------------------------------------------


def _pareto_parts(x, b, loc, scale):
    x, b, loc, scale = _float(x, b, loc, scale)
    z = (x - loc) / scale
    inside = z >= 1
    logz = jnp.log(jnp.where(inside, z, 1.0))
    return b, scale, inside, logz


def _pareto_logpdf(x, b, loc=0, scale=1):
    b, scale, inside, logz = _pareto_parts(x, b, loc, scale)
    return jnp.where(inside, jnp.log(b) - (b + 1) * logz - jnp.log(scale), -jnp.inf)


def _pareto_logsf(x, b, loc=0, scale=1):
    b, _, inside, logz = _pareto_parts(x, b, loc, scale)
    return jnp.where(inside, -b * logz, 0.0)


def _pareto_logcdf(x, b, loc=0, scale=1):
    b, _, inside, logz = _pareto_parts(x, b, loc, scale)
    return jnp.where(inside, jnp.log1p(-jnp.exp(-b * logz)), -jnp.inf)


def _pareto_cdf(x, b, loc=0, scale=1):
    b, _, inside, logz = _pareto_parts(x, b, loc, scale)
    return jnp.where(inside, -jnp.expm1(-b * logz), 0.0)


def _pareto_ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = _float(q, b, loc, scale)
    ok = (q >= 0) & (q <= 1)
    val = loc + scale * jnp.exp(-jnp.log1p(-jnp.where(ok, q, 0.0)) / b)
    return jnp.where(ok, val, jnp.nan)


pareto = _dist(
    "pareto", logpdf=_pareto_logpdf,
    pdf=lambda x, b, loc=0, scale=1: jnp.exp(_pareto_logpdf(x, b, loc, scale)),
    cdf=_pareto_cdf, logcdf=_pareto_logcdf,
    sf=lambda x, b, loc=0, scale=1: jnp.exp(_pareto_logsf(x, b, loc, scale)),
    logsf=_pareto_logsf, ppf=_pareto_ppf)


# --- Gumbel (right- and left-skewed) --------------------------------------
# With z = (x - loc) / scale, gumbel_r has log-CDF -exp(-z); gumbel_l is its
# mirror image, gumbel_l(x; loc) = gumbel_r(-x; -loc).


def _gumbel_r_logpdf(x, loc=0, scale=1):
    z, s = _std(x, loc, scale)
    return -z - jnp.exp(-z) - jnp.log(s)


def _gumbel_r_logcdf(x, loc=0, scale=1):
    return -jnp.exp(-_std(x, loc, scale)[0])


def _gumbel_r_sf(x, loc=0, scale=1):
    return -jnp.expm1(_gumbel_r_logcdf(x, loc, scale))


def _gumbel_ppf(p, loc, scale, left):
    p, loc, scale = _float(p, loc, scale)
    ok = (p > 0) & (p < 1)
    ps = jnp.where(ok, p, 0.5)
    val = (loc + scale * jnp.log(-jnp.log1p(-ps))) if left else (
        loc - scale * jnp.log(-jnp.log(ps)))
    return jnp.where(ok, val, jnp.nan)


def _mirror(x, loc):
    x, loc = _float(x, loc)
    return -x, -loc


gumbel_r = _dist(
    "gumbel_r", logpdf=_gumbel_r_logpdf,
    pdf=lambda x, loc=0, scale=1: jnp.exp(_gumbel_r_logpdf(x, loc, scale)),
    cdf=lambda x, loc=0, scale=1: jnp.exp(_gumbel_r_logcdf(x, loc, scale)),
    logcdf=_gumbel_r_logcdf, sf=_gumbel_r_sf,
    logsf=lambda x, loc=0, scale=1: jnp.log(_gumbel_r_sf(x, loc, scale)),
    ppf=lambda p, loc=0, scale=1: _gumbel_ppf(p, loc, scale, False))

gumbel_l = _dist(
    "gumbel_l",
    logpdf=lambda x, loc=0, scale=1: _gumbel_r_logpdf(*_mirror(x, loc), scale),
    pdf=lambda x, loc=0, scale=1: jnp.exp(_gumbel_r_logpdf(*_mirror(x, loc), scale)),
    cdf=lambda x, loc=0, scale=1: _gumbel_r_sf(*_mirror(x, loc), scale),
    logcdf=lambda x, loc=0, scale=1: jnp.log(_gumbel_r_sf(*_mirror(x, loc), scale)),
    sf=lambda x, loc=0, scale=1: jnp.exp(_gumbel_r_logcdf(*_mirror(x, loc), scale)),
    logsf=lambda x, loc=0, scale=1: _gumbel_r_logcdf(*_mirror(x, loc), scale),
    ppf=lambda p, loc=0, scale=1: _gumbel_ppf(p, loc, scale, True))


# --- generalized normal ---------------------------------------------------


def _gennorm_logpdf(x, beta):
    x, beta = _float(x, beta)
    return jnp.log(beta) - _LOG_2 - sp.gammaln(1 / beta) - jnp.abs(x) ** beta


def _gennorm_cdf(x, beta):
    x, beta = _float(x, beta)
    return 0.5 + 0.5 * jnp.sign(x) * sp.gammainc(1 / beta, jnp.abs(x) ** beta)


gennorm = _dist("gennorm", logpdf=_gennorm_logpdf,
                pdf=lambda x, beta: jnp.exp(_gennorm_logpdf(x, beta)), cdf=_gennorm_cdf)


# --- truncated normal -----------------------------------------------------


def _log1mexp(d):
    """log(1 - exp(d)) for d <= 0, accurate at both ends."""
    return jnp.where(d > -_LOG_2, jnp.log(-jnp.expm1(d)), jnp.log1p(-jnp.exp(d)))


def _log_mass(lo, hi):
    """log(ndtr(hi) - ndtr(lo)) for lo <= hi, computed in the lighter tail
    (the upper one when lo > 0, by symmetry) so it does not cancel."""
    upper = lo > 0
    a = jnp.where(upper, -hi, lo)
    b = jnp.where(upper, -lo, hi)
    lb = sp.log_ndtr(b)
    return lb + _log1mexp(sp.log_ndtr(a) - lb)


def _truncnorm_parts(x, a, b, loc, scale):
    x, a, b, loc, scale = _float(x, a, b, loc, scale)
    z = (x - loc) / scale
    return z, a, b, scale, _log_mass(a, b)


def _truncnorm_logpdf(x, a, b, loc=0, scale=1):
    z, a, b, scale, logz = _truncnorm_parts(x, a, b, loc, scale)
    val = -0.5 * z * z - _LOG_SQRT_2PI - jnp.log(scale) - logz
    return jnp.where((z >= a) & (z <= b), val, -jnp.inf)


def _truncnorm_logcdf_logsf(x, a, b, loc, scale):
    z, a, b, _, logz = _truncnorm_parts(x, a, b, loc, scale)
    zc = jnp.clip(z, a, b)
    lc = _log_mass(a, zc) - logz
    ls = _log_mass(zc, b) - logz
    # Near 1 take the complement of the other (small, accurate) probability.
    lc, ls = (jnp.where(ls < -_LOG_2, jnp.log1p(-jnp.exp(ls)), lc),
              jnp.where(lc < -_LOG_2, jnp.log1p(-jnp.exp(lc)), ls))
    return lc, ls


def _truncnorm_logcdf(x, a, b, loc=0, scale=1):
    return _truncnorm_logcdf_logsf(x, a, b, loc, scale)[0]


def _truncnorm_logsf(x, a, b, loc=0, scale=1):
    return _truncnorm_logcdf_logsf(x, a, b, loc, scale)[1]


truncnorm = _dist(
    "truncnorm", logpdf=_truncnorm_logpdf,
    pdf=lambda x, a, b, loc=0, scale=1: jnp.exp(_truncnorm_logpdf(x, a, b, loc, scale)),
    logcdf=_truncnorm_logcdf,
    cdf=lambda x, a, b, loc=0, scale=1: jnp.exp(_truncnorm_logcdf(x, a, b, loc, scale)),
    logsf=_truncnorm_logsf,
    sf=lambda x, a, b, loc=0, scale=1: jnp.exp(_truncnorm_logsf(x, a, b, loc, scale)))


# --- circular distributions -----------------------------------------------


def _vonmises_logpdf(x, kappa):
    x, kappa = _float(x, kappa)
    # log(exp(kappa cos x) / (2 pi I0(kappa))) with I0 scaled: I0 = i0e * e^kappa.
    val = kappa * (jnp.cos(x) - 1) - _LOG_2PI - jnp.log(sp.i0e(kappa))
    return jnp.where(kappa >= 0, val, jnp.nan)


vonmises = _dist("vonmises", logpdf=_vonmises_logpdf,
                 pdf=lambda x, kappa: jnp.exp(_vonmises_logpdf(x, kappa)))


def _wrapcauchy_logpdf(x, c):
    x, c = _float(x, c)
    val = (jnp.log1p(-c * c) - _LOG_2PI
           - jnp.log(1 + c * c - 2 * c * jnp.cos(x)))
    val = jnp.where((x >= 0) & (x <= 2 * math.pi), val, -jnp.inf)
    return jnp.where((c > 0) & (c < 1), val, jnp.nan)


wrapcauchy = _dist("wrapcauchy", logpdf=_wrapcauchy_logpdf,
                   pdf=lambda x, c: jnp.exp(_wrapcauchy_logpdf(x, c)))


# --- multinomial ----------------------------------------------------------


def _multinomial_logpmf(x, n, p):
    x, n = jnp.asarray(x), jnp.asarray(n)
    if not (jnp.issubdtype(x.dtype, jnp.integer) and jnp.issubdtype(n.dtype, jnp.integer)):
        raise ValueError(
            f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}")
    xf, nf, p = _float(x, n, p)
    val = (sp.gammaln(nf + 1) - jnp.sum(sp.gammaln(xf + 1), axis=-1)
           + jnp.sum(sp.xlogy(xf, p), axis=-1))
    ok = jnp.all(x >= 0, axis=-1) & (jnp.sum(x, axis=-1) == n)
    return jnp.where(ok, val, -jnp.inf)


multinomial = _dist("multinomial", logpmf=_multinomial_logpmf,
                    pmf=lambda x, n, p: jnp.exp(_multinomial_logpmf(x, n, p)))


# --- ranks, standard error, mode ------------------------------------------


def _check_nan_policy(nan_policy):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"nan_policy must be 'propagate', 'omit' or 'raise'; got {nan_policy!r}")


def _tie_groups(s, nan_equal=False):
    """For values sorted along the last axis: for each position, the first and
    last position of its run of equal values, and the run's 1-based index
    (with `nan_equal`, NaNs are one run)."""
    n = s.shape[-1]
    idx = lax.broadcasted_iota(jnp.int32, s.shape, s.ndim - 1)
    differ = s[..., 1:] != s[..., :-1]
    if nan_equal:
        differ = differ & ~(jnp.isnan(s[..., 1:]) & jnp.isnan(s[..., :-1]))
    new = jnp.concatenate([jnp.ones(s.shape[:-1] + (1,), bool), differ], axis=-1)
    last = jnp.concatenate([new[..., 1:], jnp.ones(s.shape[:-1] + (1,), bool)], axis=-1)
    start = lax.cummax(jnp.where(new, idx, 0), axis=s.ndim - 1)
    end = lax.cummin(jnp.where(last, idx, n - 1), axis=s.ndim - 1, reverse=True)
    dense = jnp.cumsum(new.astype(jnp.int32), axis=-1)
    return start, end, dense


def _only_propagate(nan_policy, name):
    """JAX's errors for the nan policies `rankdata` and `mode` do not take."""
    _check_nan_policy(nan_policy)
    if nan_policy == "omit":
        raise NotImplementedError("Logic for `nan_policy` of omit is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains "
            f"nans. Please check if nans exist in `x` outside of the `{name}` function.")


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of `a` (1-based) along `axis` (of the flattened array when None),
    ties resolved by `method`: 'average', 'min', 'max', 'dense' or 'ordinal'."""
    _only_propagate(nan_policy, "rankdata")
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    a = jnp.asarray(a)
    if axis is None:
        return rankdata(a.ravel(), method, axis=0)
    a = jnp.moveaxis(a, axis, -1)
    order = jnp.argsort(a, axis=-1, stable=True)
    inv = jnp.argsort(order, axis=-1, stable=True)
    s = jnp.take_along_axis(a, order, axis=-1)
    start, end, dense = _tie_groups(s)
    ft = _float(jnp.zeros((), jnp.int32)).dtype
    if method == "ordinal":
        r = (inv + 1).astype(ft)
    else:
        by_pos = {"min": start + 1.0, "max": end + 1.0, "dense": dense.astype(ft),
                  "average": (start + end) / 2.0 + 1.0}[method].astype(ft)
        r = jnp.take_along_axis(by_pos, inv, axis=-1)
    if jnp.issubdtype(a.dtype, jnp.inexact):
        r = jnp.where(jnp.any(jnp.isnan(a), axis=-1, keepdims=True), jnp.nan, r)
    return jnp.moveaxis(r, -1, axis)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """Standard error of the mean: std(a, ddof) / sqrt(count) along `axis`."""
    _check_nan_policy(nan_policy)
    if nan_policy == "raise":
        raise ValueError("raise is not supported")
    a = _float(a)
    if nan_policy == "omit":
        count = jnp.sum(~jnp.isnan(a), axis=axis, keepdims=keepdims)
        return jnp.nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count)
    count = a.size if axis is None else a.shape[axis]
    return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / math.sqrt(count)


class ModeResult(NamedTuple):
    mode: object
    count: object


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """Most common value along `axis` (the smallest among equally common ones)
    and its count, as `ModeResult(mode, count)`."""
    _only_propagate(nan_policy, "mode")
    a = jnp.asarray(a)
    if axis is None or a.ndim == 0:
        out_nd = a.ndim
        a, axis = a.ravel(), 0
    else:
        out_nd = None
        axis = axis % a.ndim
    s = jnp.sort(jnp.moveaxis(a, axis, -1), axis=-1)
    start, end, _ = _tie_groups(s, nan_equal=jnp.issubdtype(s.dtype, jnp.inexact))
    counts = end - start + 1
    best = jnp.argmax(counts, axis=-1)[..., None]
    m = jnp.take_along_axis(s, best, axis=-1)[..., 0]
    c = jnp.take_along_axis(counts, best, axis=-1)[..., 0].astype(jnp.int32)
    if keepdims:
        if out_nd is None:
            m, c = jnp.expand_dims(m, axis), jnp.expand_dims(c, axis)
        else:
            m, c = m.reshape((1,) * out_nd), c.reshape((1,) * out_nd)
    return ModeResult(m, c)


# --- Gaussian kernel density estimate -------------------------------------


@tree_util.register_pytree_node_class
class gaussian_kde:
    """Gaussian kernel density estimate of `dataset` (shape (d, n), or (n,)
    for d = 1), with optional `weights`; the bandwidth factor is Scott's rule
    (default, or "scott"), Silverman's ("silverman"), a scalar, or a callable
    of the estimator. A pytree, so it passes through `jit` and `grad`."""

    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = jnp.atleast_2d(_float(dataset))
        d, n = dataset.shape
        if weights is None:
            weights = jnp.full((n,), 1.0 / n, dataset.dtype)
        else:
            weights = _float(weights).astype(dataset.dtype)
            weights = weights / jnp.sum(weights)
        self.dataset, self.weights = dataset, weights
        self.neff = 1 / jnp.sum(weights * weights)
        if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
            factor = self.neff ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str):
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, "
                             "or a callable.")
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            factor = bw_method
        mean = jnp.sum(dataset * weights, axis=1, keepdims=True)
        dev = dataset - mean
        data_cov = (dev * weights) @ dev.T / (1 - jnp.sum(weights * weights))
        self.covariance = data_cov * jnp.asarray(factor, dataset.dtype) ** 2
        self.inv_cov = jnp.linalg.inv(self.covariance)

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.neff, obj.dataset, obj.weights, obj.covariance, obj.inv_cov = children
        return obj

    def _reshape_points(self, points):
        points = jnp.asarray(points, self.dataset.dtype)
        if points.ndim > 2:
            raise ValueError("points must be at most two-dimensional")
        if points.ndim < 2:
            points = points.reshape((self.d, -1)) if points.size == self.d else (
                points.reshape((1, -1)))
        if points.shape[0] != self.d:
            raise ValueError(f"points have dimension {points.shape[0]}, "
                             f"dataset has dimension {self.d}")
        return points

    def _log_kernel_sums(self, points, cov):
        """log sum_i w_i N(points_j; dataset_i, cov) for each point j."""
        chol = jnp.linalg.cholesky(cov)
        diff = self.dataset[:, :, None] - points[:, None, :]  # (d, n, m)
        y = jnp.linalg.solve(chol, diff.reshape((self.d, -1))).reshape(diff.shape)
        logdet = jnp.sum(jnp.log(jnp.diagonal(chol)))
        log_k = -0.5 * jnp.sum(y * y, axis=0) - logdet - self.d * _LOG_SQRT_2PI
        return sp.logsumexp(log_k, axis=0, b=self.weights[:, None])

    def evaluate(self, points):
        """Density at `points` (shape (d, m))."""
        return jnp.exp(self.logpdf(points))

    __call__ = evaluate

    def pdf(self, x):
        return self.evaluate(x)

    def logpdf(self, x):
        return self._log_kernel_sums(self._reshape_points(x), self.covariance)

    def integrate_gaussian(self, mean, cov):
        """Integral of the estimate times the Gaussian N(mean, cov)."""
        mean = jnp.asarray(mean, self.dataset.dtype).reshape((self.d, 1))
        cov = jnp.asarray(cov, self.dataset.dtype).reshape((self.d, self.d))
        return jnp.exp(self._log_kernel_sums(mean, self.covariance + cov))[0]

    def integrate_box_1d(self, low, high):
        """Mass of a one-dimensional estimate between `low` and `high`."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        sd = jnp.sqrt(self.covariance[0, 0])
        lo = (jnp.asarray(low, self.dataset.dtype) - self.dataset[0]) / sd
        hi = (jnp.asarray(high, self.dataset.dtype) - self.dataset[0]) / sd
        return jnp.sum(self.weights * (sp.ndtr(hi) - sp.ndtr(lo)))

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError(
            "only 1D box integrations are supported; use `integrate_box_1d`")

    def integrate_kde(self, other):
        """Integral of the product of this estimate and `other`."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        dense = self._log_kernel_sums(other.dataset, self.covariance + other.covariance)
        return jnp.sum(other.weights * jnp.exp(dense))

    def resample(self, key, shape=()):
        """Draws of shape (d, *shape) from the estimate."""
        shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        k_idx, k_eps = random.split(key)
        idx = random.choice(k_idx, self.n, shape, p=self.weights)
        eps = random.multivariate_normal(k_eps, jnp.zeros((self.d,), self.dataset.dtype),
                                         self.covariance, shape, dtype=self.dataset.dtype)
        return self.dataset[:, idx] + jnp.moveaxis(eps, -1, 0)

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError(
            "dynamically changing the bandwidth method is not supported")


__all__ = ["betabinom", "binom", "gaussian_kde", "gennorm", "gumbel_l", "gumbel_r", "mode",
           "multinomial", "nbinom", "pareto", "rankdata", "sem", "truncnorm", "vonmises",
           "wrapcauchy"]
