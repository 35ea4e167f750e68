"""jax.numpy functions on Ember's ops: polynomials, set operations, number
theory, window functions, statistics and float decomposition."""

import builtins
import math
import operator

import numpy as np

from .. import control_flow, core, lax
from .. import dtypes as _dt
from . import lax_numpy as jnp
from . import linalg as _linalg
from .lax_numpy import _axis, _check_arraylike, _promote_dtype, _to

__all__ = [
    "bartlett", "bitwise_count", "blackman", "corrcoef", "cov", "frexp", "gcd", "gradient",
    "hamming", "hanning", "histogram2d", "histogramdd", "intersect1d", "isin", "kaiser", "lcm",
    "ldexp",
    "modf", "poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub",
    "polyval", "roots", "setdiff1d", "setxor1d", "sort_complex", "spacing", "trapezoid",
    "trim_zeros", "union1d", "unwrap", "vander",
]

_v = core.as_value


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _inexact(*args):
    """The arguments converted to their common inexact dtype (JAX's
    `promote_dtypes_inexact`), not broadcast."""
    return _promote_dtype(*[_v(a) for a in args], to_inexact=True)


def _static_int(n, what):
    """`n` as a Python int: a traced value is JAX's concretization error."""
    return operator.index(_static_num(n, f"{what} must be a static integer"))


def _static_num(n, what):
    """`n` as a concrete number: a traced value is JAX's concretization error."""
    if isinstance(n, core.Tracer):
        c = n.concrete()
        if c is None:
            raise core.ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: "
                f"{what} (at {core.where()})")
        n = c
    return n


def _concrete_int(x, fn):
    """The Python int of a 0-d count computed from the arguments of `fn`;
    a traced one (inside `jit`, under `vmap`) is JAX's error asking for
    `size=`."""
    if isinstance(x, core.Tracer):
        c = x.concrete()
        if c is None:
            raise core.ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: "
                f"the size of the result of jnp.{fn}() depends on the values of its "
                f"arguments. The error arose in {fn}(); inside jit, pass a static size= "
                f"argument (at {core.where()})")
        x = c
    return int(np.asarray(x))


def _complex_dtype(dtype):
    if _dt.is_complex(dtype):
        return dtype
    if dtype == np.float64:
        return np.dtype(np.complex128)
    return _dt.default_complex() if not _dt.is_inexact(dtype) else np.dtype(np.complex64)


def _ravel_1d(name, *args):
    _check_arraylike(name, *args)
    return [jnp.ravel(_v(a)) for a in args]


# --------------------------------------------------------------------------
# Polynomials
# --------------------------------------------------------------------------


def poly(seq_of_zeros):
    _check_arraylike("poly", seq_of_zeros)
    z = jnp.atleast_1d(_inexact(seq_of_zeros)[0])
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        # A matrix: the polynomial of its (complex) eigenvalues, as JAX.
        z = _linalg.eigvals(z)
    if z.ndim != 1:
        raise ValueError(f"input must be 1d or non-empty square 2d array. "
                         f"(at {core.where()})")
    if z.shape[0] == 0:
        return jnp.ones((), z.dtype)
    a = jnp.ones((1,), z.dtype)
    for k in range(z.shape[0]):
        zero = jnp.zeros((1,), z.dtype)
        a = jnp.subtract(jnp.concatenate([a, zero]),
                         jnp.multiply(z[k], jnp.concatenate([zero, a])))
    return a


def polyval(p, x, *, unroll=16):
    _check_arraylike("polyval", p, x)
    p, x = _promote_dtype(_v(p), _v(x))
    shape = jnp.broadcast_shapes(p.shape[1:], x.shape)
    y = jnp.zeros(shape, x.dtype)
    n = p.shape[0]
    if n <= builtins.max(int(unroll), 1):
        for i in range(n):  # Horner's rule, unrolled
            y = jnp.add(jnp.multiply(y, x), p[i])
        return y
    y, _ = control_flow.scan(lambda y, c: (jnp.add(jnp.multiply(y, x), c), None), y, p)
    return y


def _poly_pair(name, a1, a2, inexact):
    _check_arraylike(name, a1, a2)
    return _promote_dtype(_v(a1), _v(a2), to_inexact=inexact)


def polyadd(a1, a2):
    a1, a2 = _poly_pair("polyadd", a1, a2, False)
    if a2.shape[0] > a1.shape[0]:
        a1, a2 = a2, a1
    pad = [(a1.shape[0] - a2.shape[0], 0)] + [(0, 0)] * (a2.ndim - 1)
    return jnp.add(a1, jnp.pad(a2, pad))


def polysub(a1, a2):
    a1, a2 = _poly_pair("polysub", a1, a2, False)
    return polyadd(a1, jnp.negative(a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
    a1, a2 = _poly_pair("polymul", a1, a2, True)
    if trim_leading_zeros and (a1.shape[0] > 1 or a2.shape[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if a1.shape[0] == 0:
        a1 = jnp.zeros((1,), a2.dtype)
    if a2.shape[0] == 0:
        a2 = jnp.zeros((1,), a1.dtype)
    return jnp.convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    u, v = _poly_pair("polydiv", u, v, True)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = jnp.divide(_to(1, u.dtype), v[0])
    q = jnp.zeros((builtins.max(m - n + 1, 1),), u.dtype)
    for k in range(m - n + 1):
        d = jnp.multiply(scale, u[k])
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(jnp.multiply(jnp.negative(d), v))
    if trim_leading_zeros:
        tol = math.sqrt(float(jnp.finfo(u.dtype).eps))
        small = np.asarray(_concrete_abs(u)) < tol
        if small.all():
            return q, jnp.zeros((0,), u.dtype)
        u = u[int(np.argmin(small)):]
    return q, u


def _concrete_abs(u):
    a = jnp.abs(u)
    if isinstance(a, core.Tracer):
        c = a.concrete()
        if c is None:
            raise core.ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: "
                f"polydiv(trim_leading_zeros=True) needs concrete values "
                f"(at {core.where()})")
        a = c
    return a


def polyder(p, m=1):
    _check_arraylike("polyder", p)
    m = _static_int(m, "'m' argument of jnp.polyder")
    p = _inexact(p)[0]
    if m < 0:
        raise ValueError(f"Order of derivative must be positive (at {core.where()})")
    if m == 0:
        return p
    n = p.shape[0]
    if m >= n:
        return p[:0]  # (the derivative of a constant or less: no coefficients, as JAX's)
    coeff = (np.arange(m, n)[None] - np.arange(m)[:, None]).prod(0)[::-1]
    return jnp.multiply(p[:n - m], _to(np.asarray(coeff, np.float64), p.dtype))


def polyint(p, m=1, k=None):
    m = _static_int(m, "'m' argument of jnp.polyint")
    k = 0 if k is None else k
    _check_arraylike("polyint", p, k)
    p, k = _inexact(p, k)
    if m < 0:
        raise ValueError(f"Order of integral must be positive (see polyder) "
                         f"(at {core.where()})")
    k = jnp.atleast_1d(k)
    if k.shape[0] == 1:
        k = jnp.full((m,), k[0], k.dtype)
    if k.shape != (m,):
        raise ValueError(f"k must be a scalar or a rank-1 array of length 1 or m. "
                         f"(at {core.where()})")
    if m == 0:
        return p
    n = p.shape[0]
    grid = np.arange(n + m)[None] - np.arange(m)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1]
    return jnp.divide(jnp.concatenate([p, k]), _to(np.asarray(coeff, np.float64), p.dtype))


def vander(x, N=None, increasing=False):
    _check_arraylike("vander", x)
    x = _v(x)
    if x.ndim != 1:
        raise ValueError(f"x must be a one-dimensional array (at {core.where()})")
    N = x.shape[0] if N is None else _static_int(N, "'N' argument of jnp.vander()")
    if N < 0:
        raise ValueError(f"N must be nonnegative (at {core.where()})")
    powers = np.arange(N)
    if not increasing:
        powers = powers[::-1]
    cols = []
    for k in powers:  # exact integer powers, as JAX's power of an integer exponent
        cols.append(jnp.power(x, int(k)) if k else jnp.ones_like(x))
    if not cols:
        return jnp.zeros((x.shape[0], 0), x.dtype)
    return jnp.stack(cols, axis=1)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    _check_arraylike("polyfit", x, y, *([] if w is None else [w]))
    x, y = _v(x), _v(y)
    deg = int(_static_num(deg, "deg must be int"))  # (int(), as JAX's: 1.0 is 1)
    order = deg + 1
    if deg < 0:
        raise ValueError(f"expected deg >= 0 (at {core.where()})")
    if x.ndim != 1:
        raise TypeError(f"expected 1D vector for x (at {core.where()})")
    if x.shape[0] == 0:
        raise TypeError(f"expected non-empty vector for x (at {core.where()})")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError(f"expected 1D or 2D array for y (at {core.where()})")
    if x.shape[0] != y.shape[0]:
        raise TypeError(f"expected x and y to have same length (at {core.where()})")
    n = x.shape[0]
    if rcond is None:
        rcond = n * float(jnp.finfo(_inexact(x)[0].dtype).eps)
    rcond = float(rcond)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = _inexact(w)[0]
        if w.ndim != 1:
            raise TypeError(f"expected a 1-d array for weights (at {core.where()})")
        if w.shape[0] != y.shape[0]:
            raise TypeError(f"expected w and y to have the same length (at {core.where()})")
        lhs = jnp.multiply(lhs, w[:, None])
        rhs = jnp.multiply(rhs, w[:, None] if rhs.ndim == 2 else w)
    lhs, rhs = _inexact(lhs, rhs)
    scale = jnp.sqrt(jnp.sum(jnp.multiply(lhs, lhs), axis=0))
    lhs = jnp.divide(lhs, scale[None, :])
    c, resids, rank, s = _linalg.lstsq(lhs, rhs, rcond)
    c = jnp.divide(c, scale[:, None] if c.ndim > 1 else scale)
    if full:
        return c, resids, rank, s, jnp.asarray(rcond)
    if cov:
        vbase = jnp.divide(_linalg.inv(jnp.matmul(lhs.T, lhs)), jnp.outer(scale, scale))
        if cov == "unscaled":
            fac = jnp.asarray(1.0)
        else:
            if n <= order:
                raise ValueError(f"the number of data points must exceed order to scale "
                                 f"the covariance matrix (at {core.where()})")
            fac = jnp.divide(resids, n - order)
        if y.ndim == 1:
            return c, jnp.multiply(vbase, jnp.atleast_1d(fac)[None])
        return c, jnp.multiply(vbase[:, :, None], jnp.atleast_1d(fac)[None, None, :])
    return c


def _roots_no_zeros(p):
    cdt = _complex_dtype(p.dtype)
    if p.shape[0] < 2:
        return jnp.zeros((0,), cdt)
    # The eigenvalues of the companion matrix, as JAX (so in JAX's order).
    n = p.shape[0] - 1
    a = jnp.concatenate([jnp.negative(jnp.divide(p[1:], p[0]))[None, :],
                         jnp.eye(n - 1, n, dtype=p.dtype)], axis=0)
    return _linalg.eigvals(a)


def roots(p, *, strip_zeros=True):
    _check_arraylike("roots", p)
    p = jnp.atleast_1d(_inexact(p)[0])
    if p.ndim != 1:
        raise ValueError(f"Input must be a rank-1 array. (at {core.where()})")
    cdt = _complex_dtype(p.dtype)
    if p.shape[0] < 2:
        return jnp.zeros((0,), cdt)
    iszero = jnp.equal(p, 0)
    n_lead = jnp.where(jnp.all(iszero), p.shape[0], jnp.argmin(iszero))
    if strip_zeros:
        if isinstance(n_lead, core.Tracer) and n_lead.concrete() is None:
            raise core.ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected. "
                f"The error occurred in the jnp.roots() function. To use this within a "
                f"JIT-compiled context, pass strip_zeros=False, but be aware that leading "
                f"zeros will result in some returned roots being set to NaN. "
                f"(at {core.where()})")
        k = _concrete_int(n_lead, "roots")
        return _roots_no_zeros(p[k:])
    # Leading zeros: roll them to the end (roots at 0), then NaN for as many.
    n = p.shape[0]
    p = jnp.where(n_lead == n, _to(1, p.dtype), p)
    idx = jnp.remainder(jnp.add(jnp.arange(n), n_lead), n)
    r = _roots_no_zeros(jnp.take(p, idx))
    r = lax.sort_key_val(jnp.equal(r, 0), r)[1]
    return jnp.where(jnp.arange(n - 1) < n - 1 - n_lead, r, _to(complex(np.nan, np.nan), cdt))


# --------------------------------------------------------------------------
# Number theory and bits
# --------------------------------------------------------------------------


def gcd(x1, x2):
    _check_arraylike("gcd", x1, x2)
    x1, x2 = _promote_dtype(_v(x1), _v(x2))
    if not _dt.is_int(x1.dtype):
        raise ValueError(f"Arguments to jax.numpy.gcd must be integers. (at {core.where()})")
    x1, x2 = jnp.broadcast_arrays(jnp.abs(x1), jnp.abs(x2))

    def body(xs):
        a, b = xs
        nz = jnp.not_equal(b, 0)
        a, b = jnp.where(nz, b, a), jnp.where(nz, lax.rem(a, jnp.where(nz, b, 1)), 0)
        swap = jnp.less(a, b)
        return jnp.where(swap, b, a), jnp.where(swap, a, b)

    return control_flow.while_loop(lambda xs: jnp.any(jnp.not_equal(xs[1], 0)), body,
                                   (x1, x2))[0]


def lcm(x1, x2):
    _check_arraylike("lcm", x1, x2)
    x1, x2 = _promote_dtype(_v(x1), _v(x2))
    if not _dt.is_int(x1.dtype):
        raise ValueError(f"Arguments to jax.numpy.lcm must be integers. (at {core.where()})")
    x1, x2 = jnp.abs(x1), jnp.abs(x2)
    d = gcd(x1, x2)
    zero = jnp.equal(d, 0)
    return jnp.where(zero, 0, jnp.multiply(x1, jnp.floor_divide(x2, jnp.where(zero, 1, d))))


def bitwise_count(x, /):
    _check_arraylike("bitwise_count", x)
    x = _v(x)
    if not (_dt.is_int(x.dtype) or _dt.is_bool(x.dtype)):
        raise TypeError(f"bitwise_count requires integer or boolean input, got {x.dtype} "
                        f"(at {core.where()})")
    if _dt.is_bool(x.dtype):
        return _to(x, np.uint8)
    return _to(lax.population_count(jnp.abs(x)), np.uint8)


# --------------------------------------------------------------------------
# Set operations
# --------------------------------------------------------------------------


def _sorted_unique(a):
    """(u, index, count) of a 1-D array: its distinct values ascending (NaNs
    equal), the index of each one's first occurrence, and their number; the
    `len(a) - count` places after them repeat the largest value (so `u`
    stays sorted)."""
    n = a.shape[0]
    perm = jnp.argsort(a, stable=True)
    s = jnp.take(a, perm)
    new = jnp.not_equal(s[1:], s[:-1])
    if _dt.is_inexact(s.dtype):
        new = jnp.logical_and(new, jnp.logical_not(
            jnp.logical_and(jnp.isnan(s[1:]), jnp.isnan(s[:-1]))))
    first = jnp.concatenate([jnp.ones((1,), builtins.bool), new])
    count = jnp.sum(first, dtype=np.int32)
    idx = jnp.nonzero(first, size=n, fill_value=n - 1)[0]
    return jnp.take(s, idx), jnp.take(perm, idx), count


def _sorted_members(u, sorted_b):
    """Whether each entry of `u` is in the sorted 1-D `sorted_b` (equality:
    NaN in nothing), and where it first is."""
    j = jnp.searchsorted(sorted_b, u)
    jc = jnp.clip(j, 0, sorted_b.shape[0] - 1)
    return jnp.equal(jnp.take(sorted_b, jc), u), jc


def _first_valid_fill(vals, count):
    """The fill JAX gives without fill_value: the smallest result (the first),
    or 0 when there is none."""
    return jnp.where(count > 0, vals[0], _to(0, vals.dtype))


def _select(vals, keep, size, fill):
    """The `size` entries of `vals` that `keep` marks, in order, then `fill`;
    and their number."""
    count = jnp.sum(keep, dtype=np.int32)
    n = vals.shape[0]
    idx = jnp.nonzero(keep, size=size, fill_value=0)[0]
    out = jnp.take(vals, idx, mode="clip") if n else jnp.zeros((size,), vals.dtype)
    valid = jnp.arange(size) < count
    if fill is None:
        fill = _first_valid_fill(out, count) if size else _to(0, vals.dtype)
    return jnp.where(valid, out, _to(fill, vals.dtype)), idx, count


def _sized_or_concrete(fn, name, size, *args, stop=True):
    """`fn(*args, size)` -> (result, count): with `size`, the result; without
    it, the result cut to `count` (needing a concrete count: outside jit)."""
    if size is not None:
        size = _static_int(size, f"The size argument of {name}()")
        return fn(*args, size)[0]
    # As JAX's, which reads the values: no derivative flows through them.
    if stop:
        args = [lax.stop_gradient(a) for a in args]
    bound = builtins.sum(a.shape[0] for a in args)
    out, count = fn(*args, bound)
    k = _concrete_int(count, name)
    if isinstance(out, tuple):
        return tuple(o[:k] for o in out)
    return out[:k]


def _in1d(a, b, invert, method, assume_unique):
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are "
                         f"'compare_all', 'binary_search', 'sort', and 'auto' "
                         f"(at {core.where()})")
    a, b = _promote_dtype(jnp.ravel(_v(a)), jnp.ravel(_v(b)))
    if a.shape[0] == 0 or b.shape[0] == 0:
        return jnp.full(a.shape, builtins.bool(invert), builtins.bool)
    if method in ("auto", "compare_all"):
        if invert:
            return jnp.all(jnp.not_equal(a[:, None], b[None, :]), axis=-1)
        return jnp.any(jnp.equal(a[:, None], b[None, :]), axis=-1)
    hit, _ = _sorted_members(a, jnp.sort(b))
    return jnp.logical_not(hit) if invert else hit


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    _check_arraylike("isin", element, test_elements)
    element = _v(element)
    r = _in1d(element, test_elements, invert, method, assume_unique)
    return jnp.reshape(r, element.shape)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    _check_arraylike("union1d", ar1, ar2)
    both = jnp.concatenate([jnp.ravel(_v(ar1)), jnp.ravel(_v(ar2))])

    def sized(a, size):
        if a.shape[0] == 0:
            fill = 0 if fill_value is None else fill_value
            return jnp.full((size,), fill, a.dtype), jnp.asarray(0, np.int32)
        u, _, count = _sorted_unique(a)
        vals, _, count = _select(u, jnp.arange(u.shape[0]) < count, size, fill_value)
        return vals, count

    if size is None:
        vals, count = sized(lax.stop_gradient(both), both.shape[0])
        return vals[:_concrete_int(count, "union1d")]
    return sized(both, _static_int(size, "The size argument of union1d()"))[0]


def _unique_or_sorted(a, assume_unique):
    if assume_unique:
        perm = jnp.argsort(a, stable=True)
        return jnp.take(a, perm), perm, jnp.asarray(a.shape[0], np.int32)
    return _sorted_unique(a)


def _intersect_sized(a1, a2, assume_unique, return_indices, fill_value, size):
    n1, n2 = a1.shape[0], a2.shape[0]
    if n1 == 0 or n2 == 0:
        vals = jnp.full((size,), 0 if fill_value is None else fill_value, a1.dtype)
        count = jnp.asarray(0, np.int32)
        if return_indices:
            return (vals, jnp.full((size,), n1, np.int32), jnp.full((size,), n2, np.int32)), count
        return vals, count
    u1, i1, c1 = _unique_or_sorted(a1, assume_unique)
    u2, i2, c2 = _unique_or_sorted(a2, assume_unique)
    hit, j = _sorted_members(u1, u2)
    keep = jnp.logical_and(hit, jnp.arange(n1) < c1)
    vals, idx, count = _select(u1, keep, size, fill_value)
    if not return_indices:
        return vals, count
    valid = jnp.arange(size) < count
    ind1 = jnp.where(valid, jnp.take(i1, idx, mode="clip"), n1)
    ind2 = jnp.where(valid, jnp.take(i2, jnp.take(j, idx, mode="clip"), mode="clip"), n2)
    return (vals, _to(ind1, np.int32), _to(ind2, np.int32)), count


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    a1, a2 = _ravel_1d("intersect1d", ar1, ar2)
    a1, a2 = _promote_dtype(a1, a2)
    return _sized_or_concrete(
        lambda x, y, n: _intersect_sized(x, y, assume_unique, return_indices, fill_value, n),
        "intersect1d", size, a1, a2, stop=not assume_unique)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a1, a2 = _ravel_1d("setdiff1d", ar1, ar2)
    fill = 0 if fill_value is None else fill_value

    def sized(a1, a2, size):
        n1 = a1.shape[0]
        if n1 == 0:
            return jnp.full((size,), fill, a1.dtype), jnp.asarray(0, np.int32)
        if assume_unique:
            u1, c1 = a1, n1
        else:
            u1, _, c1 = _sorted_unique(a1)
        keep = jnp.logical_and(_in1d(u1, a2, True, "auto", assume_unique),
                               jnp.arange(n1) < c1)
        vals, _, count = _select(u1, keep, size, fill)
        return vals, count

    if size is None:
        vals, count = sized(a1 if assume_unique else lax.stop_gradient(a1), a2, a1.shape[0])
        return vals[:_concrete_int(count, "setdiff1d")]
    return sized(a1, a2, _static_int(size, "The size argument of setdiff1d()"))[0]


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a1, a2 = _ravel_1d("setxor1d", ar1, ar2)
    a1, a2 = _promote_dtype(a1, a2)

    def sized(a1, a2, size):
        n1, n2 = a1.shape[0], a2.shape[0]
        if n1 + n2 == 0:
            return jnp.zeros((size,), a1.dtype), jnp.asarray(0, np.int32)
        u1, _, c1 = _unique_or_sorted(a1, assume_unique)
        u2, _, c2 = _unique_or_sorted(a2, assume_unique)
        keep1 = jnp.arange(n1) < c1
        keep2 = jnp.arange(n2) < c2
        if n1 and n2:
            keep1 = jnp.logical_and(keep1, jnp.logical_not(_sorted_members(u1, u2)[0]))
            keep2 = jnp.logical_and(keep2, jnp.logical_not(_sorted_members(u2, u1)[0]))
        keep = jnp.concatenate([keep1, keep2])
        both = jnp.concatenate([u1, u2])
        # The kept values first, ascending; then the rest.
        _, vals = lax.sort((_to(jnp.logical_not(keep), np.int32), both), 0, True, 2)
        count = jnp.sum(keep, dtype=np.int32)
        vals, _, count = _select(vals, jnp.arange(n1 + n2) < count, size, fill_value)
        return vals, count

    return _sized_or_concrete(sized, "setxor1d", size, a1, a2, stop=not assume_unique)


# --------------------------------------------------------------------------
# Calculus and statistics
# --------------------------------------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis=-1):
    if x is None:
        _check_arraylike("trapezoid", y)
        y = _inexact(y)[0]
        d = jnp.asarray(dx)
        if d.ndim > 0:
            d = jnp.moveaxis(jnp.expand_dims(d, tuple(range(y.ndim - d.ndim))), axis, -1)
    else:
        _check_arraylike("trapezoid", y, x)
        y, x = _inexact(y, x)
        d = jnp.diff(x) if x.ndim == 1 else jnp.moveaxis(jnp.diff(x, axis=axis), axis, -1)
    if y.ndim == 0:  # (JAX's error: a 0-d y has no axis to integrate along)
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    y = jnp.moveaxis(y, axis, -1)
    if d.ndim == 0 or d.shape[-1] == 1:
        d0 = d if d.ndim == 0 else d[..., 0]
        ends = jnp.multiply(0.5, jnp.add(y[..., 0], y[..., -1]))
        return jnp.multiply(d0, jnp.subtract(jnp.sum(y, axis=-1), ends))
    return jnp.multiply(0.5, jnp.sum(jnp.multiply(d, jnp.add(y[..., 1:], y[..., :-1])), -1))


def _gradient_along(a, h, axis):
    def sl(arr, lo, hi):
        n = arr.shape[axis]
        lo, hi = lo % n if lo < 0 else lo, n + hi if hi is not None and hi < 0 else hi
        return lax.slice_in_dim(arr, lo, n if hi is None else hi, 1, axis)

    upper = jnp.subtract(sl(a, 1, 2), sl(a, 0, 1))
    lower = jnp.subtract(sl(a, -1, None), sl(a, -2, -1))
    if h.ndim == 0:
        inner = jnp.divide(jnp.multiply(jnp.subtract(sl(a, 2, None), sl(a, 0, -2)), 0.5), h)
        lower, upper = jnp.divide(lower, h), jnp.divide(upper, h)
    elif h.ndim == 1:
        if h.shape[0] != a.shape[axis]:
            raise ValueError(f"Spacing arrays must have the same length as the dimension "
                             f"along which the gradient is calculated. (at {core.where()})")
        shape = [1] * a.ndim
        shape[axis] = h.shape[0]
        h = jnp.reshape(h, shape)
        upper = jnp.divide(upper, jnp.subtract(sl(h, 1, 2), sl(h, 0, 1)))
        lower = jnp.divide(lower, jnp.subtract(sl(h, -1, None), sl(h, -2, -1)))
        dx1 = jnp.subtract(sl(h, 1, -1), sl(h, 0, -2))
        dx2 = jnp.subtract(sl(h, 2, None), sl(h, 1, -1))
        ca = jnp.divide(jnp.negative(dx2), jnp.multiply(dx1, jnp.add(dx1, dx2)))
        cb = jnp.divide(jnp.subtract(dx2, dx1), jnp.multiply(dx1, dx2))
        cc = jnp.divide(dx1, jnp.multiply(dx2, jnp.add(dx1, dx2)))
        inner = jnp.add(jnp.add(jnp.multiply(ca, sl(a, 0, -2)), jnp.multiply(cb, sl(a, 1, -1))),
                        jnp.multiply(cc, sl(a, 2, None)))
    else:
        raise ValueError(f"Spacing arrays must be 1D arrays or scalars. (at {core.where()})")
    return jnp.concatenate([upper, inner, lower], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not "
                                  f"supported. (at {core.where()})")
    _check_arraylike("gradient", f, *varargs)
    a, *spacing = _inexact(f, *varargs)
    if axis is None:
        axes = tuple(range(a.ndim))
    else:
        axes = tuple(_axis(i, a.ndim) for i in (axis if isinstance(axis, (tuple, list))
                                                 else (axis,)))
    if not axes:
        return []
    if builtins.min(a.shape[i] for i in axes) < 2:
        raise ValueError(f"Shape of array too small to calculate a numerical gradient, at "
                         f"least 2 elements are required. (at {core.where()})")
    if not spacing:
        dx = [_to(1.0, a.dtype)] * len(axes)
    elif len(spacing) == 1:
        dx = spacing * len(axes)
    elif len(spacing) == len(axes):
        dx = spacing
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for "
                        f"axis={axis!r} (at {core.where()})")
    out = [_gradient_along(a, h, ax) for ax, h in zip(axes, dx)]
    return out[0] if len(axes) == 1 else out


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    _check_arraylike("cov", m, *([] if y is None else [y]))
    if y is not None:
        m, y = _inexact(m, y)
        if y.ndim > 2:
            raise ValueError(f"y has more than 2 dimensions (at {core.where()})")
    else:
        m = _inexact(m)[0]
    if m.ndim > 2:
        raise ValueError(f"m has more than 2 dimensions (at {core.where()})")
    if dtype is not None and not jnp.issubdtype(dtype, np.inexact):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype} (at {core.where()})")
    X = jnp.atleast_2d(m)
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return jnp.zeros((0, 0), _dt.default_float())
    if y is not None:
        yy = jnp.atleast_2d(y)
        if not rowvar and yy.shape[0] != 1:
            yy = yy.T
        X = jnp.concatenate([X, yy], axis=0)
    if X.shape[1] == 0:
        shape = () if X.shape[0] == 1 else (X.shape[0], X.shape[0])
        return jnp.full(shape, np.nan, X.dtype)
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        _check_arraylike("cov", fweights)
        fweights = _v(fweights)
        if fweights.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if fweights.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not _dt.is_int(fweights.dtype):
            raise TypeError(f"fweights must be integer. (at {core.where()})")
        w = jnp.abs(fweights)
    if aweights is not None:
        _check_arraylike("cov", aweights)
        aweights = _v(aweights)
        if aweights.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if aweights.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aweights = jnp.abs(aweights)
        w = aweights if w is None else jnp.multiply(w, aweights)
    if dtype is not None:
        X = _to(X, np.dtype(dtype))
        w = None if w is None else _to(w, np.dtype(dtype))
    avg, w_sum = jnp.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        f = X.shape[1] - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = jnp.subtract(w_sum, ddof)
    else:
        f = jnp.subtract(w_sum, jnp.divide(jnp.multiply(ddof, jnp.sum(
            jnp.multiply(w, aweights))), w_sum))
    X = jnp.subtract(X, avg[:, None])
    XT = X.T if w is None else jnp.multiply(X, w[None, :]).T
    return jnp.squeeze(jnp.divide(jnp.dot(X, jnp.conj(XT)), f))


def corrcoef(x, y=None, rowvar=True, dtype=None):
    _check_arraylike("corrcoef", x)
    if dtype is not None and not jnp.issubdtype(dtype, np.inexact):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype} (at {core.where()})")
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return jnp.divide(c, c)
    d = jnp.diag(c)
    sd = _to(jnp.sqrt(jnp.real(d)), c.dtype)
    c = jnp.divide(jnp.divide(c, sd[:, None]), sd[None, :])
    re = jnp.clip(jnp.real(c), -1, 1)
    if jnp.iscomplexobj(c):
        return lax.complex(re, jnp.clip(jnp.imag(c), -1, 1))
    return re


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    _check_arraylike("unwrap", p)
    p, period = _promote_dtype(_v(p), _v(period))
    if _dt.is_complex(p.dtype):
        raise ValueError(f"jnp.unwrap does not support complex inputs. (at {core.where()})")
    axis = _axis(axis, p.ndim)
    if p.shape[axis] == 0:
        return p
    if discont is None:
        discont = jnp.divide(period, 2)
    half = jnp.floor_divide(period, 2) if _dt.is_int(p.dtype) else jnp.divide(period, 2)
    dd = jnp.diff(p, axis=axis)
    ddmod = jnp.subtract(jnp.remainder(jnp.add(dd, half), period), half)
    ddmod = jnp.where(jnp.logical_and(jnp.equal(ddmod, jnp.negative(half)), dd > 0), half, ddmod)
    correct = jnp.where(jnp.abs(dd) < discont, 0, jnp.subtract(ddmod, dd))
    n = p.shape[axis]
    return jnp.concatenate([lax.slice_in_dim(p, 0, 1, 1, axis),
                            jnp.add(lax.slice_in_dim(p, 1, n, 1, axis),
                                    jnp.cumsum(correct, axis=axis))], axis=axis)


# --------------------------------------------------------------------------
# Window functions
# --------------------------------------------------------------------------


def _window(name, M):
    """(n, M): the float sample positions 0..M-1, or (None, M) when M <= 1."""
    M = _static_int(M, f"M argument of jnp.{name}")
    if M <= 1:
        return None, M
    return jnp.arange(M, dtype=_dt.default_float()), M


def _ones_window(M):
    return jnp.ones((builtins.max(M, 0),), _dt.default_float())


def bartlett(M):
    n, M = _window("bartlett", M)
    if n is None:
        return _ones_window(M)
    return jnp.subtract(1, jnp.divide(jnp.abs(jnp.add(jnp.multiply(2, n), 1 - M)), M - 1))


def blackman(M):
    n, M = _window("blackman", M)
    if n is None:
        return _ones_window(M)
    t = jnp.divide(jnp.multiply(2 * np.pi, n), M - 1)
    return jnp.add(jnp.subtract(0.42, jnp.multiply(0.5, jnp.cos(t))),
                   jnp.multiply(0.08, jnp.cos(jnp.multiply(2, t))))


def hamming(M):
    n, M = _window("hamming", M)
    if n is None:
        return _ones_window(M)
    return jnp.subtract(0.54, jnp.multiply(0.46, jnp.cos(jnp.divide(
        jnp.multiply(2 * np.pi, n), M - 1))))


def hanning(M):
    n, M = _window("hanning", M)
    if n is None:
        return _ones_window(M)
    return jnp.multiply(0.5, jnp.subtract(1, jnp.cos(jnp.divide(
        jnp.multiply(2 * np.pi, n), M - 1))))


def kaiser(M, beta):
    n, M = _window("kaiser", M)
    if n is None:
        return _ones_window(M)
    alpha = 0.5 * (M - 1)
    r = jnp.divide(jnp.subtract(n, alpha), alpha)
    arg = jnp.multiply(beta, jnp.sqrt(jnp.subtract(1, jnp.square(r))))
    return jnp.divide(jnp.i0(arg), jnp.i0(beta))


# --------------------------------------------------------------------------
# Floating point decomposition
# --------------------------------------------------------------------------

_INT_OF = {2: np.int16, 4: np.int32, 8: np.int64}


def _float_arg(name, x):
    _check_arraylike(name, x)
    x = _inexact(x)[0]
    if _dt.is_complex(x.dtype):
        raise TypeError(f"{name} does not support complex-valued inputs "
                        f"(at {core.where()})")
    return x


def frexp(x, /):
    x = _float_arg("frexp", x)
    info = jnp.finfo(x.dtype)
    nmant, nexp = int(info.nmant), int(info.nexp)
    width = 8 * x.dtype.itemsize
    itype = _INT_OF[x.dtype.itemsize]
    bias = 1 - int(info.minexp)
    mask = (1 << nexp) - 1
    fmask = (1 << nmant) - 1
    xs = lax.stop_gradient(x)
    # On the bits alone, so that subnormals (which compiled code may flush
    # to zero in float arithmetic) give NumPy's exact mantissa and exponent.
    def c(v):
        return _to(v, itype)

    bits = lax.bitcast_convert_type(xs, itype)
    sign = jnp.bitwise_and(bits, c(-(1 << (width - 1))))
    field = jnp.bitwise_and(lax.shift_right_arithmetic(bits, c(nmant)), c(mask))
    frac = jnp.bitwise_and(bits, c(fmask))
    sub = jnp.logical_and(jnp.equal(field, 0), jnp.not_equal(frac, 0))
    special = jnp.logical_or(jnp.equal(field, mask),
                             jnp.logical_and(jnp.equal(field, 0), jnp.equal(frac, 0)))
    lz = jnp.subtract(lax.clz(frac), c(width - nmant))  # zeros above frac's top bit
    frac = jnp.where(sub, jnp.bitwise_and(lax.shift_left(frac, jnp.add(lz, c(1))), c(fmask)),
                     frac)
    e = jnp.where(sub, jnp.subtract(c(int(info.minexp)), lz), jnp.subtract(field, c(bias - 1)))
    mbits = jnp.bitwise_or(jnp.bitwise_or(sign, c((bias - 1) << nmant)), frac)
    mant = lax.bitcast_convert_type(mbits, x.dtype)
    e = jnp.where(special, c(0), e)
    # The mantissa's derivative is 2**-e (JAX's rule): x's tangent scaled (in
    # at least f32, where 2**-e of a half's subnormal is finite; a
    # subnormal's scale clipped to the largest finite power).
    wide = np.dtype(np.float64) if x.dtype.itemsize == 8 else np.dtype(np.float32)
    top = int(jnp.finfo(wide).maxexp) - 1
    scale = jnp.exp2(_to(jnp.clip(jnp.negative(e), -top, top), wide))
    step = _to(jnp.multiply(_to(jnp.subtract(x, xs), wide), scale), x.dtype)
    mant = jnp.where(special, x, jnp.add(mant, step))
    return mant, _to(e, np.int32)



def ldexp(x1, x2, /):
    x1_dtype, x2 = core.as_value(x1).dtype, core.as_value(x2)
    if not (_dt.is_int(x2.dtype) or _dt.is_bool(x2.dtype)) or _dt.is_complex(x1_dtype):
        raise core.value_error(f"ldexp not supported for input types "
                               f"({x1_dtype!r}, {x2.dtype!r})")
    x1 = jnp._promote(x1, to_inexact=True)[0]
    if _dt.is_bool(x2.dtype):
        x2 = _to(x2, np.int32)  # (a boolean exponent counts as 0 or 1)
    # The exponent is added to x1's own (frexp), so that neither 2**x2 nor
    # the product overflows or underflows on the way (1e-30 * 2**200 is
    # finite); one factor of 2 moves into the mantissa for a positive sum.
    m, e = frexp(x1)
    e = _to(jnp.add(_to(e, x2.dtype), x2), x1.dtype)
    up = jnp.greater(e, _to(0, e.dtype))
    m = jnp.where(up, jnp.multiply(m, _to(2, m.dtype)), m)
    e = jnp.where(up, jnp.subtract(e, _to(1, e.dtype)), e)
    x = jnp.multiply(m, jnp.power(_to(2, m.dtype), e))
    return jnp.where(jnp.logical_or(jnp.isinf(x1), jnp.equal(x1, _to(0, x1.dtype))), x1, x)


def modf(x, /, out=None):
    x = _float_arg("modf", x)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    whole = jnp.where(x >= 0, jnp.floor(x), jnp.ceil(x))
    return jnp.subtract(x, whole), whole


def spacing(x, /):
    _check_arraylike("spacing", x)
    x = _inexact(x)[0]
    if _dt.is_complex(x.dtype):
        raise ValueError(f"jnp.spacing is not defined for complex inputs. (at {core.where()})")
    inf = _to(np.inf, x.dtype)
    if x.dtype == np.float16:
        return jnp.subtract(lax.nextafter(x, jnp.broadcast_to(inf, x.shape)), x)
    r = jnp.subtract(lax.nextafter(x, jnp.copysign(jnp.broadcast_to(inf, x.shape), x)), x)
    tiny = float(jnp.finfo(x.dtype).smallest_subnormal)
    return jnp.where(jnp.equal(r, 0), jnp.copysign(_to(tiny, x.dtype), x), r)


def sort_complex(a):
    _check_arraylike("sort_complex", a)
    a = _v(a)
    return _to(jnp.sort(a, axis=-1), _complex_dtype(a.dtype))


def trim_zeros(filt, trim="fb", axis=None):
    _check_arraylike("trim_zeros", filt)
    filt = _v(filt)
    if axis is None:
        axes = set(range(filt.ndim))
    else:
        axes = {_axis(a, filt.ndim) for a in (axis if isinstance(axis, (tuple, list))
                                              else (axis,))}
    t = trim.lower()
    if not axes or ("f" not in t and "b" not in t):
        return filt
    nz = jnp.not_equal(filt, 0)
    if isinstance(nz, core.Tracer):
        c = nz.concrete()
        if c is None:
            raise core.ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: "
                f"Error arose in the `filt` argument of trim_zeros() (at {core.where()})")
        nz = c
    nz = np.asarray(nz)
    index = []
    for ax in range(filt.ndim):
        if ax not in axes:
            index.append(slice(None))
            continue
        mask = nz.any(axis=tuple(i for i in range(filt.ndim) if i != ax))
        if not mask.any():
            index.append(slice(0, 0))
            continue
        start = int(mask.argmax()) if "f" in t else None
        stop = filt.shape[ax] - int(mask[::-1].argmax()) if "b" in t else None
        index.append(slice(start, stop))
    return filt[tuple(index)]


# --------------------------------------------------------------------------
# Histograms
# --------------------------------------------------------------------------


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    if weights is None:
        _check_arraylike("histogramdd", sample)
        sample = _inexact(sample)[0]
    else:
        _check_arraylike("histogramdd", sample, weights)
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = _inexact(sample, weights)
    N, D = sample.shape
    if range is not None and (len(range) != D or builtins.any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs "
                         f"or Nones; got range={range!r}")
    try:
        per_dim = list(bins)
    except TypeError:
        per_dim = [bins] * D
    else:
        if len(per_dim) != D:
            raise ValueError("should be a bin for each dimension.")
    edges_all, flat = [], None
    nbins = []
    for i in builtins.range(D):
        r = None if range is None else range[i]
        col = sample[:, i]
        edges = jnp.histogram_bin_edges(col, per_dim[i], r)
        idx = jnp.searchsorted(edges, col, side="right")
        idx = jnp.where(jnp.equal(col, edges[-1]), jnp.subtract(idx, 1), idx)
        nb = edges.shape[0] + 1
        idx = jnp.clip(idx, 0, nb - 1)
        flat = idx if flat is None else jnp.add(jnp.multiply(flat, nb), idx)
        edges_all.append(edges)
        nbins.append(nb)
    hist = jnp.bincount(flat, weights, length=math.prod(nbins))
    hist = jnp.reshape(hist, nbins)[(builtins.slice(1, -1),) * D]
    if density:
        hist = _to(hist, sample.dtype)
        hist = jnp.divide(hist, jnp.sum(hist))
        for i, e in enumerate(edges_all):
            shape = [1] * D
            shape[i] = e.shape[0] - 1
            hist = jnp.divide(hist, jnp.reshape(jnp.diff(e), shape))
    return hist, edges_all


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    _check_arraylike("histogram2d", x, y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        e = jnp.asarray(bins)
        bins = [e, e]
    x, y = _promote_dtype(_v(x), _v(y))
    hist, edges = histogramdd(jnp.stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]
