"""`jax.scipy.special`: special functions on Ember's primitives.

Most are one primitive (`erf`, `gammaln`, `digamma`, `i0e`, ...) or a short
formula of them, written here (no library implements them on Ember arrays);
`log_ndtr` switches to the asymptotic series where `erfc` underflows, and
`xlogy`/`xlog1py` have JAX's derivative at x = 0 (`custom_jvp`).
"""

import math

import ember.numpy as jnp
from ember import lax
from ember._src.ad import custom_jvp
from ember._src.config import config
from ember.nn import log_softmax as log_softmax
from ember.nn import logsumexp as logsumexp
from ember.nn import softmax as softmax


def _float(*xs):
    """The arguments as arrays of their common inexact dtype."""
    xs = [jnp.asarray(x) for x in xs]
    dt = jnp.result_type(*xs)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.float64 if config.jax_enable_x64 else jnp.float32
    return [x.astype(dt) for x in xs] if len(xs) > 1 else xs[0].astype(dt)


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
    return jnp.where((x < 0) & (x == floor), jnp.nan, sign).astype(x.dtype)


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
        raise ValueError("factorial: exact=True is not supported (JAX neither)")
    n = _float(n)
    return jnp.where(n < 0, 0.0, jnp.exp(lax.lgamma(n + 1))).astype(n.dtype)


def multigammaln(a, d):
    """log of the multivariate gamma function of dimension `d` (static)."""
    a = _float(a)
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
        safe = jnp.where(x == 0, neutral, y).astype(y.dtype)
        return jnp.where(x == 0, 0.0, x * log(safe)).astype(x.dtype)

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


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below."""
    x = _float(x)
    safe = jnp.where(x > 0, x, 1.0).astype(x.dtype)
    return jnp.where(x > 0, -x * jnp.log(safe), jnp.where(x == 0, 0.0, -jnp.inf)).astype(x.dtype)


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
    x = _float(x)
    return 0.5 * lax.erfc(-x * _SQRT1_2)


def ndtri(p):
    """The inverse of `ndtr`."""
    p = _float(p)
    return math.sqrt(2) * lax.erf_inv(2 * p - 1)


def log_ndtr(x, series_order=3):
    """log(ndtr(x)) without underflow: for x below the point where `erfc`
    underflows, the asymptotic series -x²/2 - log(-x) - log(2π)/2 +
    log(1 + sum_k (-1)^k (2k-1)!! / x^(2k)); above, -ndtr(-x) for large x
    (log1p), and log(ndtr(x)) between."""
    x = _float(x)
    lower = -20.0 if x.dtype == jnp.float64 else -10.0
    upper = 8.0 if x.dtype == jnp.float64 else 5.0
    clipped = jnp.clip(x, lower, upper)
    # Above 0, log1p(-ndtr(-x)) keeps the digits log(ndtr(x)) ~ 0 loses.
    mid = jnp.where(clipped > 0, jnp.log1p(-ndtr(-jnp.abs(clipped))),
                    jnp.log(ndtr(-jnp.abs(clipped))))
    big = jnp.log1p(-ndtr(-jnp.maximum(x, upper)))
    xs = jnp.minimum(x, lower)
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
    """The rising factorial (z)_m = gamma(z + m) / gamma(z)."""
    z, m = _float(z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    return sign * jnp.exp(lax.lgamma(z + m) - lax.lgamma(z))


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
    _, total, _ = lax.fori_loop(0, _TERMS, body, (t0, t0, a))
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

    _, _, _, h = lax.fori_loop(0, _TERMS, body, (b, c, d, h))
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
    bad = (a <= 0) | (x < 0) | jnp.isnan(a) | jnp.isnan(x)
    lower = jnp.where(bad, jnp.nan, jnp.where(x == 0, 0.0, lower)).astype(x.dtype)
    upper = jnp.where(use_series, 1 - p, q)
    upper = jnp.where(bad, jnp.nan, jnp.where(x == 0, 1.0, upper)).astype(x.dtype)
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

    _, _, h = lax.fori_loop(0, _TERMS, body, (c, d, h))
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
    bad = (a <= 0) | (b <= 0) | (x < 0) | (x > 1)
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


__all__ = sorted(n for n in dir() if not n.startswith("_") and n not in (
    "math", "jnp", "lax", "config", "custom_jvp", "_dlog"))
