"""`jax.scipy.special`: special functions on Ember's primitives.

Most are one primitive (`erf`, `gammaln`, `digamma`, `i0e`, ...) or a short
formula of them, written here (no library implements them on Ember arrays);
`log_ndtr` switches to the asymptotic series where `erfc` underflows, and
`xlogy`/`xlog1py` have JAX's derivative at x = 0 (`custom_jvp`). The rest
of JAX's set (spence, the exponential integrals, erfcx, dawsn, bessel_jn,
loggamma, sici, fresnel, the hypergeometric functions, owens_t, wofz,
sph_harm_y, ...) is built further down from series, continued fractions,
asymptotic expansions and quadrature (see the comment there).
"""

import functools
import math

import numpy as np

from . import control_flow, core, lax
from .ad import custom_jvp
from .config import config
from .numpy import lax_numpy as jnp


def _float(*xs):
    """The arguments as arrays of their common inexact dtype, weakly typed
    where they all are (JAX's `promote_args_inexact`)."""
    xs = jnp._promote_dtype(*xs, to_inexact=True)
    return xs if len(xs) > 1 else xs[0]


def _strong(x):
    """`x` as an array of its own inexact dtype, not weakly typed (the
    functions JAX writes on `jnp.asarray` and a dtype check)."""
    x = _float(x)
    return lax.convert_element_type(x, x.dtype)


def erf(x):
    return lax.erf(_float(x))


def erfc(x):
    return lax.erfc(_float(x))


def erfinv(x):
    return lax.erf_inv(_float(x))


def gammaln(x):
    return lax.lgamma(_float(x))


def gammasgn(x):
    """The sign of the gamma function: -1 between the negative integers
    -2k-1 and -2k, else 1; the sign of zero at 0 (gamma(-0.) = -inf) and
    NaN at the negative integers (as JAX)."""
    x = _float(x)
    floor = jnp.floor(x)
    neg = (x < 0) & (jnp.fmod(floor, 2) != 0)
    sign = jnp.where(neg, -1.0, 1.0).astype(x.dtype)
    sign = jnp.where(x == 0, jnp.copysign(jnp.ones_like(x), x), sign)
    return jnp.where(((x < 0) & (x == floor)) | jnp.isnan(x), jnp.nan, sign).astype(x.dtype)


def gamma(x):
    x = _float(x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


def digamma(x):
    return lax.digamma(_float(x))


psi = digamma


def betaln(a, b):
    a, b = _float(a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


def beta(a, b):
    a, b = _float(a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * jnp.exp(betaln(a, b))


def factorial(n, exact=False):
    if exact:
        raise NotImplementedError("factorial with exact=True")
    n = _float(n)
    return jnp.where(n < 0, 0.0, jnp.exp(lax.lgamma(n + 1))).astype(n.dtype)


def multigammaln(a, d):
    """log of the multivariate gamma function of dimension `d` (static)."""
    a = _strong(a)
    d = int(d)
    terms = sum(lax.lgamma(a - 0.5 * j) for j in range(d))
    return terms + 0.25 * d * (d - 1) * math.log(math.pi)


def expit(x):
    x = _float(x)
    return lax.logistic(x)


def logit(x):
    x = _float(x)
    return jnp.log(x / (1 - x))


def log_expit(x):
    x = _float(x)
    return -jnp.logaddexp(0.0, -x)


def _x_times(log, neutral, name, doc):
    """x * log(y) for `log` in (log, log1p): 0 where x == 0 whatever y is,
    with JAX's derivative there (`custom_jvp`, linear in the tangents, which
    reverse mode transposes). `neutral`: a y where `log` is finite."""

    @custom_jvp
    def f(x, y):
        x, y = _float(x, y)
        # (A NaN y stays NaN where x == 0, as SciPy's and JAX's.)
        zero = (x == 0) & ~jnp.isnan(y)
        safe = jnp.where(zero, neutral, y).astype(y.dtype)
        return jnp.where(zero, 0.0, x * log(safe)).astype(x.dtype)

    @f.defjvp
    def _jvp(primals, tangents):
        x, y = _float(*primals)
        x_dot, y_dot = tangents
        safe = jnp.where(x == 0, neutral, y).astype(y.dtype)
        d_log = _dlog(log, safe)
        return f(x, y), x_dot * log(y) + y_dot * jnp.where(x == 0, 0.0, x * d_log)

    f.__name__, f.__doc__ = name, doc
    return f


def _dlog(log, y):
    """d/dy log(y) or log1p(y)."""
    return 1 / y if log is jnp.log else 1 / (1 + y)


xlogy = _x_times(jnp.log, 1.0, "xlogy", "x * log(y), 0 where x == 0 (also for y == 0).")
xlog1py = _x_times(jnp.log1p, 0.0, "xlog1py", "x * log1p(y), 0 where x == 0.")


@custom_jvp
def _xlogx(x):
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (jnp.log(x) + 1)


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below; its derivative -(log x + 1)
    (+inf at 0, as JAX's)."""
    x = _float(x)
    return lax.select(x < 0, jnp.full_like(x, -jnp.inf), -_xlogx(x))


def rel_entr(p, q):
    p, q = _float(p, q)
    both = (p > 0) & (q > 0)
    safe_p = jnp.where(both, p, 1.0).astype(p.dtype)
    safe_q = jnp.where(both, q, 1.0).astype(q.dtype)
    val = jnp.where(both, safe_p * jnp.log(safe_p / safe_q), jnp.inf)
    return jnp.where((p == 0) & (q >= 0), 0.0, val).astype(p.dtype)


def kl_div(p, q):
    p, q = _float(p, q)
    return (rel_entr(p, q) - p + q).astype(p.dtype)


_SQRT1_2 = 1 / math.sqrt(2)


def ndtr(x):
    """The standard normal CDF."""
    x = _strong(x)
    return 0.5 * lax.erfc(-x * _SQRT1_2)


def ndtri(p):
    """The inverse of `ndtr`. In the middle, sqrt(2) erfinv(2p - 1); in
    the tails (q = min(p, 1 - p) below e^-2, where 2p - 1 keeps too few
    digits or rounds to -1), Abramowitz and Stegun's 26.2.23 in
    t = sqrt(-2 log q) refined by Newton steps on log_ndtr(x) = log q,
    which `log_ndtr`'s asymptotic series keeps accurate far out."""
    p = _float(p)
    dt = p.dtype
    q = jnp.where(p > 0.5, 1 - p, p)  # (exact for p above one half)
    in_tail = q < math.exp(-2)
    # (Each branch sees only its own inputs, so neither's derivative is NaN.)
    mid = math.sqrt(2) * lax.erf_inv(2 * jnp.where(in_tail, 0.5, p).astype(dt) - 1)
    tiny = jnp.where(q > 0, q, 1).astype(dt)  # (log of a positive q only)
    log_q = jnp.log(tiny)
    t = jnp.sqrt(-2 * log_q)
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    for _ in range(3 if dt == jnp.float64 else 2):
        log_cdf = log_ndtr(x)
        # d log_ndtr / dx = pdf / cdf, both from logs (no underflow).
        slope = jnp.exp(-0.5 * x * x - half_log_2pi - log_cdf)
        x = x - (log_cdf - log_q) / slope
    tail = jnp.where(p > 0.5, -x, x)
    out = jnp.where(in_tail, tail, mid)
    out = jnp.where(p == 0, -jnp.inf, jnp.where(p == 1, jnp.inf, out))
    return jnp.where((p < 0) | (p > 1), jnp.nan, out).astype(dt)


def log_ndtr(x, series_order=3):
    """log(ndtr(x)) without underflow: for x below the point where `erfc`
    underflows, the asymptotic series -x²/2 - log(-x) - log(2π)/2 +
    log(1 + sum_k (-1)^k (2k-1)!! / x^(2k)); above, -ndtr(-x) for large x
    (log1p), and log(ndtr(x)) between."""
    x = _strong(x)
    lower = -20.0 if x.dtype == jnp.float64 else -10.0
    upper = 8.0 if x.dtype == jnp.float64 else 5.0
    # Each branch sees only its own inputs (selects, not clip/abs/max, whose
    # derivatives at the joins, 0 and the segment ends, would be split or
    # take the other branch's sign).
    c = jnp.where((x >= lower) & (x <= upper), x, 0.0).astype(x.dtype)
    # Above 0, log1p(-ndtr(-x)) keeps the digits log(ndtr(x)) ~ 0 loses.
    mid = jnp.where(c > 0, jnp.log1p(-ndtr(-jnp.where(c > 0, c, 0.0).astype(x.dtype))),
                    jnp.log(ndtr(jnp.where(c > 0, 0.0, c).astype(x.dtype))))
    big = jnp.log1p(-ndtr(-jnp.where(x > upper, x, upper).astype(x.dtype)))
    xs = jnp.where(x < lower, x, lower).astype(x.dtype)
    x2 = xs * xs
    series, term = jnp.ones_like(xs), jnp.ones_like(xs)
    for k in range(1, int(series_order) + 1):
        term = term * -(2 * k - 1) / x2
        series = series + term
    small = -0.5 * x2 - jnp.log(-xs) - 0.5 * math.log(2 * math.pi) + jnp.log(series)
    return jnp.where(x < lower, small, jnp.where(x > upper, big, mid)).astype(x.dtype)


def i0e(x):
    return lax.bessel_i0e(_float(x))


def i1e(x):
    return lax.bessel_i1e(_float(x))


def i0(x):
    x = _float(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


def i1(x):
    x = _float(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


def poch(z, m):
    """The rising factorial (z)_m = gamma(z + m) / gamma(z); 1 for m = 0
    (also at the poles of gamma(z), as SciPy's and JAX's)."""
    z, m = _float(z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    return jnp.where(m == 0, 1.0, sign * jnp.exp(lax.lgamma(z + m) - lax.lgamma(z))).astype(
        z.dtype)


def exprel(x):
    """(exp(x) - 1) / x, 1 at 0."""
    x = _float(x)
    small = jnp.abs(x) < 1e-5
    safe = jnp.where(small, 1.0, x).astype(x.dtype)
    return jnp.where(small, 1.0 + x / 2, jnp.expm1(safe) / safe).astype(x.dtype)


def sinc(x):
    return jnp.sinc(x)


# Incomplete gamma and beta functions: power series and Lentz's continued
# fractions (Numerical Recipes' split), with a fixed number of terms in a
# counted loop, enough for f32 and f64 over the arguments' usual range.
_TERMS = 200
_TINY = 1e-30


def _gamma_series(a, x):
    """P(a, x) by its power series (x < a + 1)."""
    def body(i, c):
        term, total, ap = c
        ap = ap + 1
        term = term * x / ap
        return term, total + term, ap

    t0 = 1 / a
    _, total, _ = control_flow.fori_loop(0, _TERMS, body, (t0, t0, a))
    return total * jnp.exp(-x + a * jnp.log(x) - lax.lgamma(a))


def _gamma_cfrac(a, x):
    """Q(a, x) by its continued fraction (x >= a + 1)."""
    tiny = jnp.asarray(_TINY, x.dtype)
    b = x + 1 - a
    c = jnp.full_like(x, 1 / _TINY)
    d = 1 / b
    h = d

    def body(i, carry):
        b, c, d, h = carry
        an = -(i + 1.0) * (i + 1.0 - a)
        b = b + 2
        d = an * d + b
        d = jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        d = 1 / d
        return b, c, d, h * d * c

    _, _, _, h = control_flow.fori_loop(0, _TERMS, body, (b, c, d, h))
    return jnp.exp(-x + a * jnp.log(x) - lax.lgamma(a)) * h


def _gammainc_pair(a, x):
    a, x = _float(a, x)
    a, x = jnp.broadcast_arrays(a, x)
    use_series = x < a + 1
    # Each branch on safe arguments (the other one's values are not used).
    xs = jnp.where(use_series, x, 0.5).astype(x.dtype)
    xc = jnp.where(use_series, a + 2, x).astype(x.dtype)
    pos = jnp.maximum(xs, jnp.asarray(_TINY, x.dtype))
    p = jnp.where(xs > 0, _gamma_series(a, pos), 0.0)
    q = _gamma_cfrac(a, xc)
    lower = jnp.where(use_series, p, 1 - q)
    upper = jnp.where(use_series, 1 - p, q)
    # a = 0 is the limit a -> 0+: all the mass at 0 (P = 1, Q = 0 for x > 0;
    # SciPy's and JAX's values), undefined at x = 0.
    bad = (a < 0) | ((a == 0) & (x == 0)) | (x < 0) | jnp.isnan(a) | jnp.isnan(x)
    # (At x = inf all the mass is below x.)
    lower = jnp.where((a == 0) | (x == jnp.inf), 1.0, jnp.where(x == 0, 0.0, lower))
    upper = jnp.where((a == 0) | (x == jnp.inf), 0.0, jnp.where(x == 0, 1.0, upper))
    lower = jnp.where(bad, jnp.nan, lower).astype(x.dtype)
    upper = jnp.where(bad, jnp.nan, upper).astype(x.dtype)
    return lower, upper


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return _gammainc_pair(a, x)[0]


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x),
    computed directly where it is small."""
    return _gammainc_pair(a, x)[1]


def _beta_cfrac(a, b, x):
    tiny = jnp.asarray(_TINY, x.dtype)
    qab, qap, qam = a + b, a + 1, a - 1
    c = jnp.ones_like(x)
    d = 1 - qab * x / qap
    d = jnp.where(jnp.abs(d) < tiny, tiny, d)
    d = 1 / d
    h = d

    def body(i, carry):
        c, d, h = carry
        m = i + 1.0
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = 1 + aa / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        h = h * d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = 1 + aa / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        return c, d, h * d * c

    _, _, h = control_flow.fori_loop(0, _TERMS, body, (c, d, h))
    return h


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    a, b, x = _float(a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    # The fraction converges fast below (a + 1) / (a + b + 2); above it, by
    # symmetry I_x(a, b) = 1 - I_(1-x)(b, a).
    flip = x > (a + 1) / (a + b + 2)
    aa, bb = jnp.where(flip, b, a), jnp.where(flip, a, b)
    xx = jnp.where(flip, 1 - x, x)
    inner = jnp.clip(xx, _TINY, 1 - 1e-7)
    front = jnp.exp(lax.lgamma(aa + bb) - lax.lgamma(aa) - lax.lgamma(bb)
                    + aa * jnp.log(inner) + bb * jnp.log1p(-inner)) / aa
    val = front * _beta_cfrac(aa, bb, inner)
    val = jnp.where(xx <= 0, 0.0, val)
    out = jnp.where(flip, 1 - val, val)
    # The limits at a = 0 (1 for x > 0) and b = 0 (0 for x < 1), as JAX's
    # and SciPy's; both 0 is NaN.
    out = jnp.where(a == 0, jnp.where(x > 0, 1.0, 0.0), out)
    out = jnp.where(b == 0, jnp.where(x >= 1, 1.0, 0.0), out)
    bad = (a < 0) | (b < 0) | ((a == 0) & (b == 0)) | (x < 0) | (x > 1)
    return jnp.where(bad, jnp.nan, out).astype(x.dtype)


# Euler-Maclaurin: B_2j / (2j)! = 1 / _ZETA_A[j - 1] (Cephes' table).
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (q + k)^-x, x > 1 (JAX's, with `q`
    required): nine terms of the sum, then the Euler-Maclaurin tail with
    twelve Bernoulli terms (Cephes' method). Differentiable in x and q
    through the formula."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None "
                                  "to compute the Hurwitz Zeta function.")
    x, q = _float(x, q)
    n = 9
    s = sum((q + k) ** -x for k in range(n))
    w = q + n
    b = w ** -x
    s = s + w * b / (x - 1) + 0.5 * b
    fac = x * b / w  # (x)_{2j-1} w^(-x-2j+1), j = 1
    for j, a in enumerate(_ZETA_A):
        s = s + fac / a
        fac = fac * (x + 2 * j + 1) * (x + 2 * j + 2) / (w * w)
    pole = (x == 1) | ((q <= 0) & (q == jnp.floor(q)))
    nan = (x < 1) | ((q < 0) & (x != jnp.floor(x)))
    return jnp.where(pole, jnp.inf, jnp.where(nan, jnp.nan, s))


def polygamma(n, x):
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x) for n
    >= 1, digamma for n = 0; `n` must be integers (as JAX)."""
    n = jnp.asarray(n)
    if not jnp.issubdtype(n.dtype, jnp.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{n.dtype}.")
    nf, x = _float(n, x)
    sign = jnp.where(n % 2 == 0, -1.0, 1.0).astype(x.dtype)
    higher = sign * jnp.exp(lax.lgamma(nf + 1)) * zeta(nf + 1, x)
    return jnp.where(n == 0, lax.digamma(x), higher)



# ---------------------------------------------------------------------------
# More of `jax.scipy.special`, written from the mathematics: power series,
# continued fractions (evaluated backward to a fixed depth, so the work is
# static and every element takes the same path), asymptotic expansions and
# quadrature, each on the range where it is accurate, chosen per element with
# `where` (the other ranges get safe stand-in arguments, so no NaN reaches a
# derivative). Depths and switch points are set per dtype: float32 stops at
# float32's precision, float64 goes on to float64's. Derivatives are given by
# `custom_jvp` rules where the function's derivative has a closed form.

_EULER = 0.57721566490153286061
_SQRT_PI = math.sqrt(math.pi)
_PI2_6 = math.pi ** 2 / 6


def _is64(x):
    return x.dtype in (jnp.float64, jnp.complex128)


def _w(cond, a, b, like):
    """`where`, in the dtype of `like`."""
    return jnp.where(cond, a, b).astype(like.dtype)


def _log1p(x):
    """log1p; in float64 by log(u) x / (u - 1), u = 1 + x (Goldberg), which
    keeps float64's digits for tiny x."""
    if not _is64(x):
        return jnp.log1p(x)
    u = 1 + x
    lu = jnp.log(u)
    mid = lu * (x / _w(u == 1, 1.0, u - 1, x))
    return _w(u == 1, x, _w(jnp.isinf(u), lu, mid, x), x)


def _expm1(x):
    """expm1; in float64 by (u - 1) x / log(u), u = exp(x) (Kahan)."""
    if not _is64(x):
        return jnp.expm1(x)
    u = jnp.exp(x)
    um1 = u - 1
    lu = jnp.log(_w(u == 1, 2.0, u, x))
    mid = um1 * (x / lu)
    return _w(u == 1, x, _w(jnp.isinf(u) | (um1 == -1), um1, mid, x), x)


def _horner(coeffs, x):
    """sum_k coeffs[k] x^k (coeffs lowest first, static)."""
    acc = jnp.zeros_like(x) + coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = acc * x + c
    return acc


def _bernoulli_fractions(n):
    """B_0..B_n as exact fractions (B_1 = -1/2), from sum_{k<=m} C(m+1, k) B_k = 0."""
    from fractions import Fraction
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


def _cdiv(ar, ai, br, bi):
    """(ar + i ai) / (br + i bi) on real pairs (Smith's scaling)."""
    big = jnp.abs(br) >= jnp.abs(bi)
    r = _w(big, bi / _w(big, br, 1.0, br), br / _w(big, 1.0, bi, bi), br)
    d = _w(big, br + bi * r, bi + br * r, br)
    re = _w(big, ar + ai * r, ar * r + ai, ar) / d
    im = _w(big, ai - ar * r, ai * r - ar, ar) / d
    return re, im


def bernoulli(n):
    """The Bernoulli numbers B_0..B_n (B_1 = -1/2), exact to rounding."""
    n = int(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer")
    dt = jnp.float64 if config.jax_enable_x64 else jnp.float32
    return jnp.asarray([float(b) for b in _bernoulli_fractions(n)], dt)


# spence(x) = Li2(1 - x). Near x = 1 the series Li2(1 - s) = sum_n B_n
# u^(n+1) / (n+1)! in u = -log(s) converges like (u / 2 pi)^n; the rest of
# [0, inf) is brought to s in [0.5, 1.5] by spence(1/x) = -log(x)^2/2 -
# spence(x) and spence(x) + spence(1 - x) = pi^2/6 - log(x) log(1 - x).
_LI2_C = [float(b) / math.factorial(2 * k + 1)
          for k, b in enumerate(_bernoulli_fractions(24)[::2]) if k > 0]


def _spence_near1(s):
    u = 0.0 - jnp.log(s)
    u2 = u * u
    return u - 0.25 * u2 + u * u2 * _horner(_LI2_C, u2)


@custom_jvp
def spence(x):
    """Spence's function int_1^x log(t) / (1 - t) dt for x >= 0 (NaN below
    0, as JAX)."""
    x = _float(x)
    inv = x > 1.5
    t = _w(inv, 1 / _w(inv, x, 1.0, x), x, x)
    refl = t < 0.5
    s = _w(refl, 1 - t, t, x)
    core = _spence_near1(_w((s >= 0.5) & (s <= 1.5), s, 1.0, x))
    tp = _w(t > 0, t, 0.5, x)
    lg = _w(t > 0, jnp.log(tp) * jnp.log1p(-tp), 0.0, x)
    r = _w(refl, _PI2_6 - lg - core, core, x)
    lx = jnp.log(_w(inv, x, 1.0, x))
    r = _w(inv, -0.5 * lx * lx - r, r, x)
    return _w((x < 0) | jnp.isnan(x) | (x == jnp.inf), jnp.nan, r, x)


@spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    x = _float(x)
    safe = _w(x == 1, 2.0, x, x)
    d = _w(x == 1, -1.0, jnp.log(safe) / (1 - safe), x)
    return spence(x), d * x_dot


# Exponential integrals. E_n(x) for x <= 1 by its series (A&S 5.1.12), with
# the term k = n - 1 carrying log(x) and psi(n); above 1 by the continued
# fraction e^-x / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...))).

def _expn_pos(n, x):
    """E_n(x) for integer-valued n >= 1 and finite x > 0."""
    big = _is64(x)
    low = x <= 1
    xs = _w(low, x, 0.5, x)
    nm1 = n - 1
    lx = jnp.log(xs)
    psi = lax.digamma(jnp.maximum(n, 1.0))
    total = _w(nm1 == 0, -lx - _EULER, 1 / _w(nm1 == 0, 1.0, nm1, x), x)
    fact = jnp.ones_like(xs)
    for i in range(1, 26 if big else 14):
        fact = fact * (-xs / i)
        hit = nm1 == i
        total = total + _w(hit, fact * (psi - lx), -fact / _w(hit, 1.0, i - nm1, x), x)
    # Continued fraction, evaluated backward from a fixed depth.
    xc = _w(low, 2.0, x, x)
    depth = 130 if big else 40

    def body(j, t):
        k = (depth - j).astype(x.dtype)
        return xc + n + 2 * (k - 1) - k * (nm1 + k) / t

    t = control_flow.fori_loop(0, depth, body, xc + n + 2.0 * depth)
    return _w(low, total, jnp.exp(-xc) / t, x)


def _expn_impl(n, x):
    n, x = _float(n, x)
    n, x = jnp.broadcast_arrays(n, x)
    ok_n = (n >= 0) & (n == jnp.floor(n))
    pos = (x > 0) & (x < jnp.inf)
    xp = _w(pos, x, 1.0, x)
    np_ = _w(ok_n & (n >= 1), n, 1.0, x)
    val = _w(n == 0, jnp.exp(-xp) / xp, _expn_pos(np_, xp), x)
    at0 = _w(n > 1, 1 / _w(n > 1, n - 1, 1.0, x), jnp.inf, x)
    val = _w(x == 0, at0, _w(x == jnp.inf, 0.0, val, x), x)
    return _w(~ok_n | (x < 0) | jnp.isnan(x) | jnp.isnan(n), jnp.nan, val, x)


@custom_jvp
def expn(n, x):
    """The generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n
    dt, for integers n >= 0 and x >= 0 (NaN elsewhere, as JAX); E_n(0) =
    1 / (n - 1) for n > 1."""
    return _expn_impl(n, x)


@expn.defjvp
def _expn_jvp(primals, tangents):
    n, x = _float(*primals)
    _, x_dot = tangents
    # d/dx E_n = -E_(n-1); E_(-1)(x) = e^-x (1 + 1 / x) / x.
    xs = _w(x > 0, x, 1.0, x)
    em1 = _w(n >= 1, _expn_impl(n - 1, x), jnp.exp(-xs) * (1 + 1 / xs) / xs, x)
    return expn(n, x), -em1 * x_dot


@custom_jvp
def exp1(x):
    """The exponential integral E_1(x) = int_x^inf e^-t / t dt, x >= 0."""
    x = _float(x)
    return _expn_impl(jnp.ones_like(x), x)


@exp1.defjvp
def _exp1_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    x = _float(x)
    return exp1(x), -jnp.exp(-x) / x * x_dot


def _ei_pos(x):
    """Ei(x) for x > 0: the series gamma + log x + sum x^k / (k k!) up to a
    switch point, above it the asymptotic e^x / x sum k! / x^k."""
    big = _is64(x)
    split = 40.0 if big else 20.0
    low = x <= split
    xs = _w(low, x, 1.0, x)

    def body(k, c):
        term, total = c
        k = (k + 1).astype(x.dtype)
        term = term * xs / k
        return term, total + term / k

    zero = jnp.zeros_like(xs)
    _, total = control_flow.fori_loop(0, 110 if big else 60, body, (zero + 1, zero))
    series = _EULER + jnp.log(xs) + total
    xa = _w(low, 2 * split, x, x)
    asym = jnp.ones_like(xa)
    term = jnp.ones_like(xa)
    for k in range(1, int(split)):
        term = term * (k / xa)
        asym = asym + term
    half = jnp.exp(0.5 * xa)
    return _w(low, series, half * (half / xa) * asym, x)


# Ei's positive zero, log of the Ramanujan-Soldner constant.
_EI_ROOT = "0.37250741078136663446199186658011913353568949777"


def _ei_near_root(x):
    """Ei(x) near its zero x0 with relative accuracy: log(x / x0) + sum_k
    (x^k - x0^k) / (k k!), with d = x - x0 (x0 split in two) factored out of
    each term: x^k - x0^k = d q_k, q_k = x q_(k-1) + x0^(k-1)."""
    from decimal import Decimal
    x0 = Decimal(_EI_ROOT)
    if _is64(x):
        hi = float(x0)
    else:
        import numpy as np
        hi = float(np.float32(float(x0)))
    lo = float(x0 - Decimal(hi))
    d = (x - hi) - lo
    r0 = float(x0)
    total, q, p, fact = jnp.zeros_like(x), jnp.ones_like(x), 1.0, 1.0
    for k in range(1, 20):
        fact *= k
        total = total + q / (k * fact)
        p *= r0
        q = x * q + p
    return _log1p(d / r0) + d * total


@custom_jvp
def expi(x):
    """The exponential integral Ei(x) = PV int_-inf^x e^t / t dt; -E_1(-x)
    for x < 0 and -inf at 0."""
    x = _float(x)
    pos = _ei_pos(_w(x > 0, x, 1.0, x))
    near = (x > 0.25) & (x < 0.55)
    pos = _w(near, _ei_near_root(_w(near, x, 0.375, x)), pos, x)
    neg = -exp1(_w(x < 0, -x, 1.0, x))
    out = _w(x > 0, pos, _w(x < 0, neg, -jnp.inf, x), x)
    out = _w(jnp.isinf(x), jnp.where(x > 0, jnp.inf, 0.0), out, x)
    return _w(jnp.isnan(x), jnp.nan, out, x)


@expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    x = _float(x)
    return expi(x), jnp.exp(x) / x * x_dot


def _exp_x2(x, c=1.0):
    """exp(c x^2) (c a power of 2) without the rounding of x^2: x = h + l
    with h on a grid fine enough that h^2 is exact, exp(c h^2) exp(c l (x + h))."""
    scale = 2.0 ** (20 if _is64(x) else 8)
    h = jnp.round(x * scale) / scale
    low = _w(jnp.isinf(x), 0.0, (x - h) * (x + h), x)
    return jnp.exp(c * (h * h)) * jnp.exp(c * low)


def _ndtr_upper(h):
    """Q(h) = erfc(h / sqrt 2) / 2 for h >= 0, as exp(-h^2 / 2) erfcx(h / sqrt 2) / 2
    (keeps its relative accuracy in the tail)."""
    return 0.5 * _exp_x2(h, -0.5) * _erfcx_pos(h * _SQRT1_2)


def _erfcx_pos(x):
    """erfcx for x >= 0: exp(x^2) erfc(x) below 2, above it the continued
    fraction (2x / sqrt(pi)) / (2x^2 + 1 - 1*2 / (2x^2 + 5 - 3*4 / ...))."""
    big = _is64(x)
    low = x < 2
    xl = _w(low, x, 0.0, x)
    near = _exp_x2(xl) * lax.erfc(xl)
    huge = x > (1e8 if big else 1e4)
    xc = _w(low | huge, 2.0, x, x)
    y = 2 * xc * xc
    depth = 64 if big else 14
    t = y + 1 + 4 * depth
    for j in range(depth, 0, -1):
        t = y + 1 + 4 * (j - 1) - (2 * j - 1) * (2 * j) / t
    far = 2 * xc / _SQRT_PI / t
    xh = _w(huge, x, 1.0, x)
    tail = (1 - 0.5 / (xh * xh)) / (_SQRT_PI * xh)
    return _w(low, near, _w(huge, tail, far, x), x)


@custom_jvp
def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    x = _float(x)
    ax = jnp.abs(x)
    pos = _erfcx_pos(_w(jnp.isnan(ax), 0.0, ax, x))
    neg = 2 * _exp_x2(_w(x < 0, x, 0.0, x)) - pos
    return _w(jnp.isnan(x), jnp.nan, _w(x < 0, neg, pos, x), x)


@erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    x = _float(x)
    y = erfcx(x)
    return y, (2 * x * y - 2 / _SQRT_PI) * x_dot


# Dawson's integral: Rybicki's sum D(x) = lim_(h->0) pi^(-1/2) sum_(n odd)
# exp(-(x - n h)^2) / n (h = 1/4, error ~ exp(-(pi / 2h)^2)), its Taylor
# series near 0 and its asymptotic series sum (2k-1)!! / (2x^2)^k / (2x) far out.
_DAWSN_H = 0.25


def _dawsn_pos(x):
    big = _is64(x)
    h = _DAWSN_H
    mid = (x >= 0.2) & (x <= 50)
    xm = _w(mid, x, 1.0, x)
    n0 = 2 * jnp.round(xm / (2 * h))
    xp = xm - n0 * h
    e1 = jnp.exp(2 * xp * h)
    e2 = e1 * e1
    total = jnp.zeros_like(xm)
    for i in range(1, (15 if big else 10) + 1):
        c = math.exp(-(((2 * i - 1) * h) ** 2))
        total = total + c * (e1 / (n0 + (2 * i - 1)) + 1 / ((n0 - (2 * i - 1)) * e1))
        e1 = e1 * e2
    ryb = jnp.exp(-xp * xp) * total / _SQRT_PI
    # Taylor: D(x) = sum_k (-2)^k x^(2k+1) / (2k+1)!!
    xs = _w(x < 0.2, x, 0.0, x)
    x2 = xs * xs
    coef, c = [], 1.0
    for k in range(13 if big else 7):
        coef.append(c)
        c = c * -2 / (2 * k + 3)
    small = xs * _horner(coef, x2)
    xa = _w(x > 50, x, 100.0, x)
    inv = 1 / (2 * xa * xa)
    coef, c = [], 1.0
    for k in range(8):
        coef.append(c)
        c = c * (2 * k + 1)
    far = _horner(coef, inv) / (2 * xa)
    return _w(x < 0.2, small, _w(x > 50, far, ryb, x), x)


@custom_jvp
def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt."""
    x = _float(x)
    ax = jnp.abs(x)
    d = _dawsn_pos(_w(jnp.isnan(ax), 0.0, ax, x))
    d = _w(ax == jnp.inf, 0.0, d, x)
    return _w(jnp.isnan(x), jnp.nan, jnp.where(x < 0, -d, d), x)


@dawsn.defjvp
def _dawsn_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    x = _float(x)
    d = dawsn(x)
    return d, (1 - 2 * x * d) * x_dot



# Bessel functions J_0..J_v: Miller's backward recurrence J_(k-1) = (2k / x)
# J_k - J_(k+1) from an order far above x and v, normalized by J_0 + 2 (J_2
# + J_4 + ...) = 1; beyond a switch point, Hankel's asymptotic J_0 and J_1
# and the forward recurrence, which is stable for orders below x.

def _hankel_coeffs(nu, count):
    mu = 4.0 * nu * nu
    a = [1.0]
    for k in range(1, count):
        a.append(a[-1] * (mu - (2 * k - 1) ** 2) / (8.0 * k))
    return a


def _bessel_j01_far(x):
    """J_0 and J_1 by their asymptotic expansions (x large)."""
    count = 22 if _is64(x) else 10
    inv = 1 / x
    inv2 = inv * inv
    c, s = jnp.cos(x), jnp.sin(x)
    amp = jnp.sqrt(2 / (math.pi * x)) * _SQRT1_2
    out = []
    for nu in (0, 1):
        a = _hankel_coeffs(nu, count)
        p = _horner([(-1) ** k * a[2 * k] for k in range(count // 2)], inv2)
        q = inv * _horner([(-1) ** k * a[2 * k + 1] for k in range(count // 2)], inv2)
        if nu == 0:  # chi = x - pi/4
            cos_chi, sin_chi = c + s, s - c
        else:  # chi = x - 3 pi/4
            cos_chi, sin_chi = s - c, -(s + c)
        out.append(amp * (p * cos_chi - q * sin_chi))
    return out


def _bessel_jn_all(z, v, n_iter):
    """J_0(z)..J_v(z), stacked on a new first axis."""
    x = jnp.abs(z)
    big = _is64(z)
    switch = 25.0 if big else 12.0
    # Miller's start: far enough above max(v, x) that J_top / J_k is below
    # the precision for every order k <= v (the margin grows like v^(1/3)).
    top = max(v, int(switch)) + int(n_iter) + math.ceil(8 * v ** (1 / 3))
    top += top % 2
    tiny = x < 1e-4
    xm = _w(tiny | jnp.isinf(x) | jnp.isnan(x), 1.0, x, z)
    scale = 2.0 ** (200 if big else 40)
    shape = (v + 1,) + x.shape

    def body(i, c):
        jp, j, out, even = c
        k = top - i
        jm = (2.0 * k).astype(z.dtype) / xm * j - jp
        jp, j = j, jm
        over = jnp.abs(j) > scale
        f = _w(over, 1 / scale, 1.0, z)
        jp, j, out, even = jp * f, j * f, out * f, even * f
        order = k - 1
        even = even + _w((order % 2 == 0) & (order > 0), j, 0.0, z)
        slot = jnp.minimum(order, v)
        out = out.at[slot].set(jnp.where(order <= v, j, out[slot]))
        return jp, j, out, even

    zero = jnp.zeros_like(xm)
    init = (zero, zero + 1, jnp.zeros(shape, z.dtype), zero)
    _, _, out, even = control_flow.fori_loop(0, top, body, init)
    miller = out / (out[0] + 2 * even)
    # Far out: asymptotic J_0, J_1, then forward.
    far = x > switch
    xf = _w(far & ~jnp.isinf(x), x, 2 * switch, z)
    j0, j1 = _bessel_j01_far(xf)
    fwd = [j0, j1]
    for k in range(1, v):
        fwd.append((2.0 * k) / xf * fwd[k] - fwd[k - 1])
    # Near 0: (x/2)^k / k! (1 - (x/2)^2 / (k + 1)).
    xt = _w(tiny, x, 0.0, z) * 0.5
    rows, p = [], jnp.ones_like(xt)
    for k in range(v + 1):
        rows.append(p * (1 - xt * xt / (k + 1)))
        p = p * xt / (k + 1)
    res = []
    for k in range(v + 1):
        r = _w(far & (k < x), fwd[k], miller[k], z)
        r = _w(tiny, rows[k], r, z)
        r = _w(jnp.isinf(x), 0.0, r, z)
        if k % 2:
            r = _w(z < 0, -r, r, z)
        res.append(_w(jnp.isnan(z), jnp.nan, r, z))
    return jnp.stack(res)


_BESSEL_JN = {}


def _bessel_jn_fn(v, n_iter):
    key = (v, n_iter)
    if key not in _BESSEL_JN:
        @custom_jvp
        def f(z):
            return _bessel_jn_all(z, v, n_iter)

        @f.defjvp
        def _jvp(primals, tangents):
            (z,), (z_dot,) = primals, tangents
            allj = _bessel_jn_all(z, v + 1, n_iter)
            # J_0' = -J_1, J_k' = (J_(k-1) - J_(k+1)) / 2.
            d = [-allj[1]] + [0.5 * (allj[k - 1] - allj[k + 1]) for k in range(1, v + 1)]
            return allj[:v + 1], jnp.stack(d) * z_dot

        _BESSEL_JN[key] = f
    return _BESSEL_JN[key]


def bessel_jn(z, *, v, n_iter=50):
    """Bessel functions of the first kind of integer orders 0..v at real z,
    shape (v + 1, *z.shape). `n_iter`: how many orders above max(v, 12 or
    25) and a margin growing like v^(1/3) the backward recurrence starts
    (the default is ample)."""
    z = jnp.asarray(z)
    if not isinstance(v, int) or isinstance(v, bool):
        import operator
        try:
            v = operator.index(v)
        except TypeError:
            raise TypeError(f"Argument `v` must be of integer type. Got {v!r}.") from None
    if v < 0:
        raise ValueError("Argument `v` must be non-negative.")
    if not jnp.issubdtype(z.dtype, jnp.floating):
        raise ValueError(f"Argument `z` must be of float type. Got dtype {z.dtype}.")
    return _bessel_jn_fn(v, int(n_iter))(z)


def comb(N, k, *, repetition=False):
    """The binomial coefficient N choose k (0 where N < 0, k < 0 or k > N);
    with `repetition`, (N + k - 1) choose k. Small integer k (<= 64, or N - k
    for integer N) by the exact product, else through gammaln."""
    N, k = _float(N, k)
    N, k = jnp.broadcast_arrays(N, k)
    if repetition:  # (0 choose 0) with repetition: one empty multiset
        return _w((N == 0) & (k == 0), 1.0, comb(N + k - 1, k), N)
    bad = (N < 0) | (k < 0) | (k > N)
    n_int = N == jnp.floor(N)
    kk = _w(n_int & (N - k < k), N - k, k, N)
    small = (kk == jnp.floor(kk)) & (kk <= 64) & ~bad

    def body(i, prod):
        i = (i + 1).astype(N.dtype)
        return _w(i <= kk, prod * (N - kk + i) / i, prod, N)

    prod = control_flow.fori_loop(0, 64, body, jnp.ones_like(N))
    big = jnp.exp(lax.lgamma(N + 1) - lax.lgamma(k + 1) - lax.lgamma(N - k + 1))
    out = _w(small, prod, big, N)
    out = _w(bad, 0.0, out, N)
    return _w(jnp.isnan(N) | jnp.isnan(k), jnp.nan, out, N)


def _boxcox_of(log, x, lmbda):
    x, lmbda = _float(x, lmbda)
    lx = (jnp.log if log is jnp.log else _log1p)(x)
    zero = lmbda == 0
    safe = _w(zero, 1.0, lmbda, lmbda)
    # expm1 where lmbda log(x) is small; elsewhere pow, which does not
    # carry log's rounding error times lmbda log(x).
    base = x if log is jnp.log else 1 + x
    near = (jnp.abs(safe * lx) < 1) | ~(base > 0)
    far = (jnp.power(base, safe) - 1) / safe
    # At lmbda = 0, log x + lmbda log(x)^2 / 2: the value, and the derivative
    # in lmbda (JAX's is 0 there).
    at0 = lx + lmbda * _w(jnp.isfinite(lx), lx * lx, 0.0, lx) / 2
    return _w(zero, at0, _w(near, _expm1(safe * lx) / safe, far, lx), lx)


def boxcox(x, lmbda):
    """The Box-Cox transformation (x^lmbda - 1) / lmbda, log(x) at lmbda = 0
    (through expm1, accurate for small lmbda)."""
    return _boxcox_of(jnp.log, x, lmbda)


def boxcox1p(x, lmbda):
    """boxcox(1 + x, lmbda), through log1p."""
    return _boxcox_of(jnp.log1p, x, lmbda)


# log Gamma on the principal branch. Real arguments: gammaln where x > 0,
# +inf at 0 and NaN below. Complex ones: Stirling's series where |z| is
# large, the recurrence log Gamma(z) = log Gamma(z + n) - sum log(z + k)
# (exact on the principal branch) to get there, and for Re z < 1/2 the
# reflection log Gamma(z) = log pi - L(z) - log Gamma(1 - z), with L the
# branch of log sin(pi z) analytic in the upper half plane, -i pi z +
# log(1 - e^(2 pi i z)) - log 2 + i pi / 2 (conjugated below the axis).
_STIRLING = [float(b) / ((2 * k) * (2 * k - 1))
             for k, b in enumerate(_bernoulli_fractions(20)[::2]) if k > 0]


def _loggamma_right(z):
    """Principal log Gamma for Re z >= 1/2."""
    big = z.dtype == jnp.complex128
    r = 10 if big else 7
    n = jnp.clip(jnp.ceil(r - z.real), 0, r)
    shift = jnp.zeros_like(z)
    for k in range(r):
        use = k < n
        shift = shift + jnp.where(use, jnp.log(jnp.where(use, z + k, 1.0)), 0.0)
    w = z + n
    inv = 1 / w
    terms = 9 if big else 5
    series = inv * _horner(_STIRLING[:terms], inv * inv)
    return (w - 0.5) * jnp.log(w) - w + 0.5 * math.log(2 * math.pi) + series - shift


def _loggamma_complex(z):
    lower = z.imag < 0
    z = jnp.where(lower, jnp.conj(z), z)  # upper half plane (and the real axis)
    left = z.real < 0.5
    zr = jnp.where(left, 1 - z, z)
    right = _loggamma_right(zr)
    zl = jnp.where(left, z, 0.5 + 1j)
    frac = zl - jnp.round(zl.real)  # e^(2 pi i z) with Re z reduced exactly
    lsin = (-1j * math.pi * zl + jnp.log(1 - jnp.exp(2j * math.pi * frac))
            - math.log(2) + 0.5j * math.pi)
    out = jnp.where(left, math.log(math.pi) - lsin - right, right)
    out = jnp.where(lower, jnp.conj(out), out)
    out = jnp.where((z == 1) | (z == 2), 0.0, out)
    pole = (z.imag == 0) & (z.real <= 0) & (z.real == jnp.floor(z.real))
    return jnp.where(pole, complex(math.nan, math.nan), out).astype(z.dtype)


def loggamma(x):
    """The principal branch of log Gamma: gammaln(x) for real x > 0 (inf at
    0, NaN below); for complex x, analytic off the negative real axis."""
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return _loggamma_complex(x)
    x = _float(x)
    safe = _w(x > 0, x, 1.0, x)
    out = _w((x == 1) | (x == 2), 0.0, lax.lgamma(safe), x)
    return _w(x > 0, out, _w(x == 0, jnp.inf, jnp.nan, x), x)



def _cfrac_back(depth, b, a, init):
    """Backward evaluation of a complex continued fraction on real pairs:
    t_depth = init, t_(j-1) = b(j - 1) + a(j) / t_j, returns t_0; `b(j)` a
    pair, `a(j)` real, j a float array (a counted loop)."""
    def body(i, t):
        j = (depth - i).astype(init[0].dtype)
        r, q = _cdiv(jnp.ones_like(t[0]), jnp.zeros_like(t[1]), t[0], t[1])
        br, bi = b(j - 1)
        aj = a(j)
        return br + aj * r, bi + aj * q

    return control_flow.fori_loop(0, depth, body, init)


# Sine and cosine integrals: power series near 0, else the continued
# fraction E_1(ix) = e^(-ix) / (ix + 1 - 1 / (ix + 3 - 4 / (ix + 5 - ...))),
# with Ci(x) = -Re E_1(ix) and Si(x) = pi/2 + Im E_1(ix).

def _sici_pos(x):
    """(Si, Ci) for finite x > 0."""
    big = _is64(x)
    split = 4.0 if big else 2.0
    low = x <= split
    xs = _w(low, x, 1.0, x)
    x2 = xs * xs
    terms = 18 if big else 10
    si_c = [(-1) ** k / ((2 * k + 1) * math.factorial(2 * k + 1)) for k in range(terms)]
    ci_c = [(-1) ** k / ((2 * k) * math.factorial(2 * k)) for k in range(1, terms)]
    si_low = xs * _horner(si_c, x2)
    ci_low = _EULER + jnp.log(xs) + x2 * _horner(ci_c, x2)
    xc = _w(low, 2 * split, x, x)
    depth = 70 if big else 32
    tr, ti = _cfrac_back(depth, lambda j: (2 * j + 1, xc), lambda j: -j * j,
                         (jnp.zeros_like(xc) + 2 * depth + 1, xc))
    gr, gi = _cdiv(jnp.ones_like(tr), jnp.zeros_like(ti), tr, ti)
    c, s = jnp.cos(xc), jnp.sin(xc)
    ci_far = -(c * gr + s * gi)
    si_far = math.pi / 2 + (c * gi - s * gr)
    return _w(low, si_low, si_far, x), _w(low, ci_low, ci_far, x)


@custom_jvp
def sici(x):
    """The sine and cosine integrals (Si(x), Ci(x)), Si = int_0^x sin(t)/t dt,
    Ci = gamma + log x + int_0^x (cos t - 1)/t dt; Ci(-x) = Ci(x) (the real
    part, as JAX and SciPy)."""
    x = _float(x)
    ax = jnp.abs(x)
    fin = (ax > 0) & (ax < jnp.inf)
    si, ci = _sici_pos(_w(fin, ax, 1.0, x))
    si = _w(ax == jnp.inf, math.pi / 2, _w(ax == 0, 0.0, si, x), x)
    ci = _w(x == jnp.inf, 0.0, _w(ax == 0, -jnp.inf, ci, x), x)
    ci = _w(x == -jnp.inf, jnp.nan, ci, x)
    si = jnp.where(x < 0, -si, si)
    nan = jnp.isnan(x)
    return _w(nan, jnp.nan, si, x), _w(nan, jnp.nan, ci, x)


@sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    x = _float(x)
    safe = _w(x == 0, 1.0, x, x)
    dsi = _w(x == 0, 1.0, jnp.sin(safe) / safe, x)
    return sici(x), (dsi * x_dot, jnp.cos(x) / x * x_dot)


# Fresnel integrals: power series near 0, else C + iS = (1 + i)/2 - x e^(i pi
# x^2 / 2) / K with K the continued fraction of erfc at (1 - i) x sqrt(pi)/2,
# (1 - i pi x^2) - 1*2 / ((5 - i pi x^2) - 3*4 / ((9 - i pi x^2) - ...)).
# The phase pi x^2 / 2 is reduced modulo 2 pi exactly (x split so that its
# square is a sum of exact products).

def _x2_mod4(x):
    """x^2 - 4 round(x^2 / 4), without the rounding of x^2."""
    c = (2.0 ** (27 if _is64(x) else 12) + 1) * x
    hi = c - (c - x)
    lo = x - hi

    def red(p):
        return p - 4 * jnp.round(p / 4)

    r = red(hi * hi) + red(2 * hi * lo) + lo * lo
    return red(r)


def _fresnel_pos(x):
    """(S, C) for 0 <= x < 1e8 (float32) or 1e16 (float64)."""
    big = _is64(x)
    split = 1.5
    low = x <= split
    xs = _w(low, x, 1.0, x)
    x4 = (xs * xs) * (xs * xs)
    h = math.pi / 2
    terms = 16 if big else 10
    s_c = [(-1) ** k * h ** (2 * k + 1) / (math.factorial(2 * k + 1) * (4 * k + 3))
           for k in range(terms)]
    c_c = [(-1) ** k * h ** (2 * k) / (math.factorial(2 * k) * (4 * k + 1)) for k in range(terms)]
    s_low = xs * xs * xs * _horner(s_c, x4)
    c_low = xs * _horner(c_c, x4)
    xc = _w(low, 2.0, x, x)
    px2 = -math.pi * xc * xc
    depth = 48 if big else 16
    tr, ti = _cfrac_back(depth, lambda j: (1 + 4 * j, px2),
                         lambda j: -(2 * j - 1) * (2 * j), (1 + 4.0 * depth + 0 * xc, px2))
    gr, gi = _cdiv(xc, jnp.zeros_like(xc), tr, ti)
    ang = (0.5 * math.pi) * _x2_mod4(xc)
    c, s = jnp.cos(ang), jnp.sin(ang)
    c_far = 0.5 - (c * gr - s * gi)
    s_far = 0.5 - (c * gi + s * gr)
    return _w(low, s_low, s_far, x), _w(low, c_low, c_far, x)


@custom_jvp
def fresnel(x):
    """The Fresnel integrals (S(x), C(x)) = int_0^x (sin, cos)(pi t^2 / 2) dt."""
    x = _float(x)
    ax = jnp.abs(x)
    far = ax >= (1e16 if _is64(x) else 1e8)
    s, c = _fresnel_pos(_w(far | jnp.isnan(ax), 1.0, ax, x))
    s = _w(far, 0.5, s, x)
    c = _w(far, 0.5, c, x)
    s = _w(jnp.isnan(x), jnp.nan, jnp.where(x < 0, -s, s), x)
    c = _w(jnp.isnan(x), jnp.nan, jnp.where(x < 0, -c, c), x)
    return s, c


@fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    x = _float(x)
    ang = (0.5 * math.pi) * _x2_mod4(_w(jnp.abs(x) < (1e16 if _is64(x) else 1e8), x, 0.0, x))
    return fresnel(x), (jnp.sin(ang) * x_dot, jnp.cos(ang) * x_dot)


# Owen's T function. For |a| <= 1, Gauss-Legendre quadrature of
# T(h, a) = (1 / 2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt over
# [0, min(a, S / h)], beyond which exp(-h^2 t^2 / 2) < exp(-S^2 / 2)
# relative to its peak; for |a| > 1, T(h, a) = (Q(h) + Q(ah)) / 2 - Q(h)
# Q(ah) - T(ah, 1/a) (h >= 0, Q the normal upper tail).
_GAUSS = {}


def _gauss_half(m):
    """The m positive nodes and weights of the 2m-point Gauss-Legendre rule."""
    if m not in _GAUSS:
        import numpy as np
        nodes, weights = np.polynomial.legendre.leggauss(2 * m)
        _GAUSS[m] = [float(v) for v in nodes[m:]], [float(v) for v in weights[m:]]
    return _GAUSS[m]


def _owens_t_small(h, a):
    """T(h, a) for h >= 0 and 0 <= a <= 1."""
    big = _is64(h)
    nodes, weights = _gauss_half(24 if big else 12)
    cut = 9.5 if big else 6.5
    ae = jnp.minimum(a, cut / jnp.maximum(h, 1e-30))
    h2 = -0.5 * h * h
    total = jnp.zeros_like(h)
    for u, wt in zip(nodes, weights):
        t2 = (ae * u) ** 2
        total = total + wt * jnp.exp(h2 * (1 + t2)) / (1 + t2)
    return ae * total / (2 * math.pi)


def _owens_t_impl(h, a):
    h, a = _float(h, a)
    h, a = jnp.broadcast_arrays(h, a)
    ah_, aa = jnp.abs(h), jnp.abs(a)
    over = aa > 1
    ha = _w(ah_ == 0, 0.0, ah_ * aa, h)
    hi = _w(over, ha, ah_, h)
    ai = _w(over, 1 / _w(over, aa, 1.0, a), aa, a)
    t = _owens_t_small(_w(jnp.isinf(hi), 0.0, hi, h), ai)
    t = _w(jnp.isinf(hi), 0.0, t, h)
    q1 = _ndtr_upper(_w(jnp.isnan(ah_), 0.0, ah_, h))
    q2 = _ndtr_upper(_w(jnp.isnan(ha), 0.0, ha, h))
    out = _w(over, 0.5 * (q1 + q2) - q1 * q2 - t, t, h)
    out = jnp.where(a < 0, -out, out)
    return _w(jnp.isnan(h) | jnp.isnan(a), jnp.nan, out, h)


@custom_jvp
def owens_t(h, a):
    """Owen's T function (1 / 2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx."""
    return _owens_t_impl(h, a)


@owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    h, a = _float(*primals)
    h_dot, a_dot = tangents
    # dT/dh = -phi(h) erf(a h / sqrt 2) / 2; dT/da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2)).
    dh = -jnp.exp(-0.5 * h * h) / math.sqrt(2 * math.pi) * lax.erf(a * h * _SQRT1_2) / 2
    da = jnp.exp(-0.5 * h * h * (1 + a * a)) / (2 * math.pi * (1 + a * a))
    return owens_t(h, a), dh * h_dot + da * a_dot


# The Faddeeva function w(z) = exp(-z^2) erfc(-iz): Weideman's rational
# approximation (SIAM J. Numer. Anal. 31, 1994) for Im z >= 0,
# w(z) = 2 p(Z) / (L - iz)^2 + pi^(-1/2) / (L - iz), Z = (L + iz) / (L - iz),
# with p's coefficients the Fourier coefficients of (L^2 + t^2) exp(-t^2) at
# t = L tan(theta / 2) (computed here by the trapezoidal rule);
# w(z) = 2 exp(-z^2) - w(-z) below the axis, and exp(-x^2) + 2i D(x) /
# sqrt(pi) on it.
_WEIDEMAN = {}


def _weideman(n):
    if n not in _WEIDEMAN:
        import numpy as np
        big_l = math.sqrt(n / math.sqrt(2))
        m = 8192
        theta = (np.arange(m) + 0.5) * (2 * np.pi / m) - np.pi
        t = big_l * np.tan(theta / 2)
        f = (big_l ** 2 + t * t) * np.exp(-t * t)
        coef = [float(np.mean(f * np.cos(k * theta))) for k in range(1, n + 1)]
        _WEIDEMAN[n] = big_l, coef
    return _WEIDEMAN[n]


def _wofz_upper(z):
    big_l, coef = _weideman(40 if z.dtype == jnp.complex128 else 24)
    den = big_l - 1j * z
    zz = (big_l + 1j * z) / den
    p = jnp.zeros_like(z) + coef[-1]
    for c in reversed(coef[:-1]):
        p = p * zz + c
    return 2 * p / (den * den) + (1 / _SQRT_PI) / den


def wofz(z):
    """The Faddeeva function exp(-z^2) erfc(-iz), complex."""
    z = jnp.asarray(z)
    if not jnp.issubdtype(z.dtype, jnp.complexfloating):
        z = _float(z)
        z = lax.complex(z, jnp.zeros_like(z))
    x, y = z.real, z.imag
    lower = y < 0
    zu = jnp.where(lower, -z, z)
    huge = jnp.abs(zu) > (1e15 if z.dtype == jnp.complex128 else 1e7)
    zs = jnp.where(huge, 1j, zu)
    zh = jnp.where(huge, zu, 1j)
    w = jnp.where(huge, 1j / (_SQRT_PI * zh) * (1 + 0.5 / (zh * zh)), _wofz_upper(zs))
    w = jnp.where(lower, 2 * jnp.exp(-z * z) - w, w)
    xr = jnp.where(y == 0, x, 0.0)
    real_axis = lax.complex(jnp.exp(-xr * xr), (2 / _SQRT_PI) * dawsn(xr))
    w = jnp.where((y == 0) & jnp.isfinite(x), real_axis, w)
    return w.astype(z.dtype)



# Spherical harmonics from the fully normalized associated Legendre
# functions (Condon-Shortley phase): Pbar_m^m = -sqrt((2m + 1) / 2m) sin(theta)
# Pbar_(m-1)^(m-1) from Pbar_0^0 = 1 / sqrt(4 pi), then up in degree with
# Pbar_l^m = a_l (cos(theta) Pbar_(l-1)^m - Pbar_(l-2)^m / a_(l-1)),
# a_l = sqrt((4 l^2 - 1) / (l^2 - m^2)); counted loops to n_max, each element
# taking its own steps.

def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonic Y_n^m(theta, phi) (theta the polar angle, phi
    the azimuth), complex; 0 where |m| > n. `n_max`: the largest degree
    (static; required under tracing); larger `n` are clipped to it, as JAX."""
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to ember.scipy.special.sph_harm_y is not supported.")
    n, m = jnp.asarray(n), jnp.asarray(m)
    if n_max is None:
        try:
            n_max = int(jnp.max(n))
        except TypeError:
            from .errors import ConcretizationTypeError
            raise ConcretizationTypeError(
                "The `n_max` argument of `ember.scipy.special.sph_harm_y` must be "
                "statically specified to use it under tracing.") from None
    n_max = max(int(n_max), 0)
    theta, phi = _float(theta, phi)
    nf, mf, theta, phi = jnp.broadcast_arrays(
        jnp.minimum(n, n_max).astype(theta.dtype), m.astype(theta.dtype), theta, phi)
    am = jnp.abs(mf)
    x, s = jnp.cos(theta), jnp.sin(theta)

    def diag(k, p):
        k = (k + 1).astype(x.dtype)
        return _w(k <= am, -jnp.sqrt((2 * k + 1) / (2 * k)) * s * p, p, x)

    pmm = control_flow.fori_loop(0, n_max, diag, jnp.zeros_like(x) + 1 / math.sqrt(4 * math.pi))

    def up(i, c):
        p0, p1, a_prev = c
        l_ = am + (i + 1).astype(x.dtype)
        a_l = jnp.sqrt((4 * l_ * l_ - 1) / ((l_ - am) * (l_ + am)))
        p2 = a_l * (x * p1 - _w(i == 0, 0.0, p0 / a_prev, x))
        use = l_ <= nf
        return _w(use, p1, p0, x), _w(use, p2, p1, x), _w(use, a_l, a_prev, x)

    one = jnp.ones_like(x)
    _, p, _ = control_flow.fori_loop(0, n_max, up, (0 * one, pmm, one))
    p = _w((am > nf) | (nf < 0), 0.0, p, x)
    # Y_n^-m = (-1)^m conj(Y_n^m).
    sign = _w((mf < 0) & (jnp.fmod(am, 2) == 1), -1.0, 1.0, x)
    ang = mf * phi
    return lax.complex(sign * p * jnp.cos(ang), sign * p * jnp.sin(ang))



# Confluent hypergeometric 1F1(a; b; x). Kummer's transformation 1F1(a; b;
# x) = e^x 1F1(b - a; b; -x) makes the argument x' = |x| >= 0. Up to a
# switch point, the power series (counted terms, scaled by e^(-x'/2) so that
# neither it nor e^x overflows before they meet); beyond it the asymptotic
# expansion (DLMF 13.7.2, its two series, on the real axis) Gamma(b) [e^x'
# x'^(a' - b) / Gamma(a') sum_k (b - a')_k (1 - a')_k / (k! x'^k) + cos(pi
# a') x'^(-a') / Gamma(b - a') sum_k (a')_k (a' - b + 1)_k / (k! (-x')^k)].
# Differentiable in a, b and x through the sums.

def hyp1f1(a, b, x):
    """The confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k /
    (b)_k x^k / k!, for real a, b, x; 1 where a = 0 (also for b = 0, as JAX),
    inf at b = 0, -1, -2, ... otherwise."""
    a, b, x = _float(a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    big = _is64(x)
    switch, terms, asym_terms = (150.0, 500, 40) if big else (80.0, 300, 25)
    neg = x < 0
    ap = _w(neg, b - a, a, x)
    xp = jnp.abs(x)
    poly = (ap <= 0) & (ap == jnp.floor(ap))
    use_series = (xp <= switch) | poly | jnp.isnan(xp)
    xs = _w(use_series, xp, 0.0, x)

    def body(k, c):
        term, total = c
        k = k.astype(x.dtype)
        term = term * (ap + k) * xs / ((b + k) * (k + 1))
        return term, total + term

    scale = jnp.exp(-0.5 * xs)
    _, series = control_flow.fori_loop(0, terms, body, (scale, scale))
    series = series * jnp.exp(_w(neg, x, 0.0, x) + 0.5 * xs)
    # Asymptotic, x' > switch and a' not a non-positive integer.
    xa = _w(use_series, switch, xp, x)
    aa = _w(use_series, 0.5, ap, x)
    inv = 1 / xa
    one = jnp.ones_like(x)
    s1, s2, t1, t2 = one, one, one, one
    for k in range(asym_terms):
        t1 = t1 * (b - aa + k) * (1 - aa + k) / (k + 1) * inv
        t2 = t2 * (aa + k) * (aa - b + 1 + k) / (k + 1) * -inv
        s1, s2 = s1 + t1, s2 + t2
    lx = jnp.log(xa)
    first = gammasgn(b) * gammasgn(aa) * jnp.exp(
        _w(neg, x, 0.0, x) + xa + (aa - b) * lx + lax.lgamma(b) - lax.lgamma(aa)) * s1
    bma = b - aa
    second = gammasgn(b) * gammasgn(bma) * jnp.cos(math.pi * aa) * jnp.exp(
        _w(neg, x, 0.0, x) - aa * lx + lax.lgamma(b) - lax.lgamma(bma)) * s2
    second = _w((bma <= 0) & (bma == jnp.floor(bma)), 0.0, second, x)
    out = _w(use_series, series, first + second, x)
    pole = (b <= 0) & (b == jnp.floor(b))
    out = _w(pole, jnp.inf, out, x)
    return _w(a == 0, 1.0, out, x)


# Gauss hypergeometric 2F1(a, b; c; x). For |x| <= 1/2 the power series;
# below -1/2 Pfaff's transformation 2F1(a, b; c; x) = (1 - x)^-a 2F1(a, c -
# b; c; x / (x - 1)) moves the argument into (1/3, 1); on (1/2, 1) the
# function is continued from 1/2 along its differential equation
# z (1 - z) F'' + (c - (a + b + 1) z) F' - a b F = 0 by Taylor steps, each
# halving the distance to the singular point 1 (its coefficients obey
# f_(k+2) = ((k + a)(k + b) f_k - ((1 - 2 z0) k + c - (a + b + 1) z0)(k + 1)
# f_(k+1)) / (z0 (1 - z0)(k + 1)(k + 2))), which needs no special case for
# integer c - a - b. At 1, Gauss's sum where c > a + b.

def _hyp2f1_series(a, b, c, z, terms):
    """(F, F') at z by the power series."""
    def body(k, carry):
        t, f, d = carry
        k = k.astype(z.dtype)
        r = (a + k) * (b + k) / ((c + k) * (k + 1))
        d = d + (k + 1) * r * t
        t = t * r * z
        return t, f + t, d

    one = jnp.ones_like(z)
    _, f, d = control_flow.fori_loop(0, terms, body, (one, one, 0 * one))
    return f, d


def _hyp2f1_continue(a, b, c, f, d, z, steps, terms):
    """(F, F') carried from 1/2 to z in (1/2, 1) by Taylor steps."""
    def step(i, carry):
        z0, f, d = carry
        h = jnp.minimum(0.5 * (1 - z0), z - z0)
        live = h > 0
        hs = _w(live, h, 0.5 * (1 - z0), z)
        q = z0 * (1 - z0)
        lin = c - (a + b + 1) * z0
        slope = 1 - 2 * z0

        def term(k, c2):
            g0, g1, tot, dtot = c2
            k = k.astype(z.dtype)
            g2 = ((k + a) * (k + b) * g0 * hs * hs
                  - (slope * k + lin) * (k + 1) * g1 * hs) / (q * (k + 1) * (k + 2))
            return g1, g2, tot + g2, dtot + (k + 2) * g2

        g1 = d * hs
        _, _, tot, dtot = control_flow.fori_loop(0, terms, term, (f, g1, f + g1, g1))
        f = _w(live, tot, f, z)
        d = _w(live, dtot / hs, d, z)
        return _w(live, z0 + h, z0, z), f, d

    _, f, d = control_flow.fori_loop(0, steps, step, (jnp.full_like(z, 0.5), f, d))
    return f, d


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k /
    (c)_k x^k / k!, for real arguments and x <= 1 (inf above 1 unless it is a
    polynomial, as JAX and SciPy); inf at c = 0, -1, -2, ... and at x = 1
    where c <= a + b."""
    a, b, c, x = _float(a, b, c, x)
    a, b, c, x = jnp.broadcast_arrays(a, b, c, x)
    big = _is64(x)
    series_terms, steps, step_terms = (400, 56, 90) if big else (200, 26, 50)
    pfaff = x < -0.5
    bb = _w(pfaff, c - b, b, x)
    xm = _w(pfaff | (x == 1), 0.0, x, x)
    z = _w(pfaff, x / (x - 1), xm, x)
    near = z <= 0.5
    zs = _w(near, z, 0.5, x)
    zs = _w(zs > 1, 0.0, zs, x)
    f, d = _hyp2f1_series(a, bb, c, zs, series_terms)
    zc = _w(near | (z >= 1), 0.5, z, x)
    fc, _ = _hyp2f1_continue(a, bb, c, f, d, zc, steps, step_terms)
    val = _w(near, f, fc, x)
    pref = jnp.exp(-a * jnp.log(_w(pfaff, 1 - x, 1.0, x)))
    val = val * pref
    # Polynomials (a or b a non-positive integer), valid for every x.
    nonpos = (a <= 0) & (a == jnp.floor(a)) | (b <= 0) & (b == jnp.floor(b))
    poly_x = _w(nonpos & (x > 1), x, 0.0, x)
    poly, _ = _hyp2f1_series(a, b, c, poly_x, series_terms)
    # x = 1: Gauss's sum.
    cab = c - a - b
    ca, cb = c - a, c - b
    gauss = (gammasgn(c) * gammasgn(_w(cab > 0, cab, 1.0, x)) * gammasgn(ca) * gammasgn(cb)
             * jnp.exp(lax.lgamma(c) + lax.lgamma(_w(cab > 0, cab, 1.0, x))
                       - lax.lgamma(ca) - lax.lgamma(cb)))
    gauss = _w(cab > 0, gauss, jnp.inf, x)
    out = _w(x == 1, gauss, _w(x > 1, _w(nonpos, poly, jnp.inf, x), val, x), x)
    pole = (c <= 0) & (c == jnp.floor(c))
    out = _w(pole, jnp.inf, out, x)
    return _w(jnp.isnan(x), jnp.nan, out, x)



def _weak_of_args(fn):
    """`fn` whose result is weakly typed where every argument is (a Python
    number or a weak array), as JAX's functions written on
    `promote_args_inexact` and elementwise ops are."""
    def weak(a):
        if isinstance(a, (int, float, complex)):
            return not isinstance(a, (bool, np.generic))
        return bool(getattr(a, "weak_type", False))

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        if args and all(weak(a) for a in args) and isinstance(out, core.Value) \
                and not out.weak_type:
            out = lax.convert_element_type(out, out.dtype, True)
        return out
    return wrapped


for _name in ("entr", "factorial", "xlogy", "xlog1py", "rel_entr", "kl_div", "betainc",
              "gammainc", "gammaincc", "polygamma"):
    globals()[_name] = _weak_of_args(globals()[_name])
del _name


__all__ = sorted(n for n in dir() if not n.startswith("_") and n not in (
    "math", "jnp", "lax", "config", "custom_jvp", "_dlog"))


__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb",
    "dawsn", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit",
    "expn", "exprel", "factorial", "fresnel", "gamma", "gammainc", "gammaincc", "gammaln",
    "gammasgn", "hyp1f1", "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div", "log_expit", "log_ndtr",
    "loggamma", "logit", "multigammaln", "ndtr", "ndtri", "owens_t", "poch", "polygamma", "psi",
    "rel_entr", "sici", "sinc", "spence", "sph_harm_y", "wofz", "xlog1py", "xlogy", "zeta",
]
