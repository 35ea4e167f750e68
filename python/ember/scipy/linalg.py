"""ember.scipy.linalg: the jax.scipy.linalg API.

Cholesky / triangular solves and thin wrappers over ember.numpy.linalg; the
special matrices (toeplitz, hankel, pascal, ...); LU factor / solve; the
matrix exponential (scaling and squaring with Pade approximants, Higham 2005)
and its Frechet derivative; the polar decomposition (QDWH or SVD); and a
Hessenberg reduction and Schur decomposition (Francis QR iterations written
with `lax` loops) with what builds on them: rsf2csf, sqrtm, funm and
solve_sylvester. Everything is traceable: no Python control flow depends on
array values, so all of it runs under `ember.jit`."""

import math
import operator
import sys

import numpy as np

import ember.numpy as jnp
from ember import lax
from ember._src import dtypes as _dt
from ember._src import lax_linalg
from ember._src import tree_util as _tree_util
from ember._src.ad import jvp as _jvp
from ember._src.api import jit as _jit
from ember._src.numpy import linalg as _la
from ember._src.numpy.lax_numpy import _check_arraylike
from ember.numpy.linalg import pinv as pinv

# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------


def _inexact_dtype(*xs):
    """The common dtype of `xs`, the default float when that is not inexact."""
    dt = np.dtype(jnp.result_type(*xs))
    if not _dt.is_inexact(dt):
        dt = np.dtype(_dt.default_float())
    return dt


def _real_dtype(dt):
    return np.dtype(jnp.finfo(dt).dtype)


def _complex_dtype(dt):
    dt = np.dtype(dt)
    if _dt.is_complex(dt):
        return dt
    return np.dtype(np.complex128 if dt == np.float64 else np.complex64)


def _eps(dt):
    return float(jnp.finfo(dt).eps)


def _is_half(dt):
    return np.dtype(dt) in (np.dtype(_dt.float16), np.dtype(_dt.bfloat16))


def _over_batch(f, xs, core_ndims):
    """f (of unbatched arrays, returning a pytree of arrays) over the
    broadcast leading (batch) dimensions of `xs`, one matrix at a time."""
    batch = jnp.broadcast_shapes(*(x.shape[:x.ndim - k] for x, k in zip(xs, core_ndims)))
    if not batch:
        return f(*xs)
    size = math.prod(batch)
    flat = tuple(jnp.reshape(jnp.broadcast_to(x, batch + x.shape[x.ndim - k:]),
                             (size,) + x.shape[x.ndim - k:]) for x, k in zip(xs, core_ndims))
    out = lax.map(lambda args: f(*args), flat)
    return _tree_util.tree_map(lambda y: jnp.reshape(y, batch + y.shape[1:]), out)


def _ident(n, dtype):
    return jnp.eye(n, dtype=dtype)


def _mat_shape_error(name, a):
    if a.ndim < 2:
        raise TypeError(f"Input 0 to {name} must have rank at least 2, but got shape={a.shape}")


# ----------------------------------------------------------------------------
# Cholesky, triangular solves, wrappers with scipy's signatures
# ----------------------------------------------------------------------------

def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of `a` from its `lower` (or upper) triangle alone,
    not symmetrized (as JAX's)."""
    a = _la._float(a)
    _la._square(a, "cholesky")
    L = lax_linalg.cholesky(a if lower else jnp.conj(_la._mT(a)), symmetrize_input=False)
    return L if lower else jnp.conj(_la._mT(L))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    return cholesky(a, lower=lower), lower


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False,
                     overwrite_b=False, debug=None, check_finite=True):
    a = _la._float(a)
    b = jnp.asarray(b)
    a = a.astype(jnp.result_type(a, b))
    b = b.astype(a.dtype)
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise ValueError(f"solve_triangular: bad trans {trans!r}")
    vec = b.ndim == a.ndim - 1
    if vec:
        b = b[..., None]
    x = _la._tri_solve(a, b, lower=lower, unit_diagonal=unit_diagonal,
                       transpose_a=trans in (1, 2, "T", "C"), conjugate_a=trans in (2, "C"))
    return x[..., 0] if vec else x


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solves with the factor itself (transposed solves, no transposes)."""
    c, lower = c_and_lower
    c = _la._float(c)
    b = jnp.asarray(b)
    c = c.astype(jnp.result_type(c, b))
    b = b.astype(c.dtype)
    vec = b.ndim == c.ndim - 1
    if vec:
        b = b[..., None]
    y = _la._tri_solve(c, b, lower=lower, transpose_a=not lower, conjugate_a=not lower)
    x = _la._tri_solve(c, y, lower=lower, transpose_a=lower, conjugate_a=lower)
    return x[..., 0] if vec else x


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
    """a @ x = b. assume_a="pos" solves with the Cholesky factor of `a`'s
    `lower` (or upper) triangle; "gen", "sym" and "her" (as JAX's) with LU."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of ['gen', 'sym', 'her', 'pos']; "
                         f"got {assume_a!r}")
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return _la.solve(a, b)


def det(a, overwrite_a=False, check_finite=True):
    return _la.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    return _la.inv(a)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
    """(w, v) (or w) of the Hermitian part of `a`, as JAX's (which
    symmetrizes its input). Only the standard problem: b=None, type=1,
    eigvals=None."""
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    w, v = _la.eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """(u, s, vh), or s; `lapack_driver` is ignored (as in JAX)."""
    out = _la.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


# ----------------------------------------------------------------------------
# QR (with column pivoting) and qr_multiply
# ----------------------------------------------------------------------------

def _house(alpha, xnorm):
    """LAPACK's elementary reflector (xLARFG) for a vector (alpha, x) with
    ||x|| = xnorm: (beta, tau, scale) with H = I - tau v v^H, v = (1, x * scale),
    H^H (alpha, x) = (beta, 0), beta real; tau = 0 (H = I) when x = 0 and
    alpha is real."""
    ar, ai = jnp.real(alpha), jnp.imag(alpha)
    trivial = (xnorm == 0) & (ai == 0)
    nrm = jnp.hypot(jnp.abs(alpha), xnorm)
    beta = jnp.where(ar >= 0, -nrm, nrm)
    safe_beta = jnp.where(trivial, 1, beta).astype(alpha.dtype)
    diff = jnp.where(trivial, 1, alpha - beta.astype(alpha.dtype))
    tau = jnp.where(trivial, 0, (beta.astype(alpha.dtype) - alpha) / safe_beta)
    scale = jnp.where(trivial, 0, 1 / diff)
    return jnp.where(trivial, ar, beta), tau, scale


def _householder_qr_one(a, pivoting):
    """Householder QR of one m x n matrix with LAPACK's conventions (geqrf;
    with `pivoting` geqp3, the largest remaining column first): (packed,
    taus, perm), packed holding R on and above the diagonal and the
    reflectors' vectors below it (their leading 1 implicit), with
    a[:, perm] = Q R and Q = H_0 ... H_{k-1}, H_j = I - taus[j] v_j v_j^H."""
    m, n = a.shape
    k = min(m, n)
    dt = a.dtype
    rows = jnp.arange(m)
    cols = jnp.arange(n)

    def body(j, st):
        A, V, taus, perm = st
        if pivoting:
            norms = jnp.sum(jnp.where((rows >= j)[:, None], jnp.abs(A) ** 2, 0), axis=0)
            p = jnp.argmax(jnp.where(cols >= j, norms, -1)).astype(np.int32)
            cj, cp = A[:, j], A[:, p]
            A = A.at[:, j].set(cp).at[:, p].set(cj)
            pj, pp = perm[j], perm[p]
            perm = perm.at[j].set(pp).at[p].set(pj)
        x = A[:, j]
        tail = jnp.where(rows > j, x, 0)
        beta, tau, scale = _house(x[j], jnp.sqrt(jnp.sum(jnp.abs(tail) ** 2)))
        v = jnp.where(rows == j, 1, tail * scale).astype(dt)
        A = A - jnp.conj(tau) * v[:, None] * (jnp.conj(v) @ A)[None, :]
        A = A.at[:, j].set(jnp.where(rows == j, beta.astype(dt), jnp.where(rows > j, 0, x)))
        return A, V.at[:, j].set(v), taus.at[j].set(tau), perm

    init = (a, jnp.zeros((m, k), dt), jnp.zeros((k,), dt), jnp.arange(n, dtype=np.int32))
    r, V, taus, perm = lax.fori_loop(0, k, body, init)
    below = jnp.tril(jnp.pad(V, ((0, 0), (0, n - k)))[:, :n], -1)
    return jnp.triu(r) + below, taus, perm


def _geqp3_one(a):
    """QR with column pivoting of one m x n matrix: (q m x m, r, perm) with
    a[:, perm] = q @ r (`_householder_qr_one`)."""
    m, n = a.shape
    packed, taus, perm = _householder_qr_one(a, True)
    k = min(m, n)
    v = jnp.tril(packed[:, :k], -1) + jnp.eye(m, k, dtype=a.dtype)

    def form_q(i, q):
        j = k - 1 - i
        return q - taus[j] * v[:, j][:, None] * (jnp.conj(v[:, j]) @ q)[None, :]

    q = lax.fori_loop(0, k, form_q, _ident(m, a.dtype))
    return q, jnp.triu(packed), perm


_geqrf_jit = _jit(lambda a: _householder_qr_one(a, False)[:2])


def _geqrf(a):
    """LAPACK's geqrf form of each trailing matrix: (packed, taus)."""
    if _is_half(a.dtype):
        h, t = _geqrf(a.astype(np.float32))
        return h.astype(a.dtype), t.astype(a.dtype)
    return _over_batch(_geqrf_jit, (a,), (2,))


def _qr_pivoted(a):
    a = _la._float(a)
    if a.ndim < 2:
        raise ValueError("qr: expected an array of rank >= 2")
    if _is_half(a.dtype):
        q, r, p = _qr_pivoted(a.astype(np.float32))
        return q.astype(a.dtype), r.astype(a.dtype), p
    return _over_batch(_qr_pivoted_jit, (a,), (2,))


_qr_pivoted_jit = _jit(_geqp3_one)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR: (q, r), or (r,) for mode="r"; with `pivoting`, the column
    permutation p (int32, a[:, p] = q @ r) is returned last."""
    m = {"full": "complete", "economic": "reduced", "r": "r"}.get(mode)
    if m is None:
        raise ValueError(f"Unsupported QR decomposition mode {mode!r}")
    if pivoting:
        q, r, p = _qr_pivoted(a)
        if mode == "r":
            return r, p
        if mode == "economic":
            k = min(a.shape[-2:])
            q, r = q[..., :, :k], r[..., :k, :]
        return q, r, p
    if mode == "r":
        return (_la.qr(a, mode="complete")[1],)
    return tuple(_la.qr(a, mode=m))


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
    """(c @ q, r) (mode="right") or (q @ c, r) (mode="left"), q and r the
    economic QR factors of `a` (q conjugated with `conjugate`); with
    `pivoting`, also the permutation."""
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    a = _la._float(a)
    c = jnp.asarray(c)
    if a.ndim < 2:
        raise ValueError(f"qr_multiply: a must be (a batch of) matrices, got shape {a.shape}")
    if c.ndim < 1:
        raise ValueError("qr_multiply: c must be at least 1-dimensional, got a scalar")
    dt = _inexact_dtype(a, c)
    a, c = a.astype(dt), c.astype(dt)
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{a.shape} so Q has {m} rows, but c has {c.shape[-1]} columns "
                         f"(expected {m}).")
    rows_c = c.shape[0] if c.ndim == 1 else c.shape[-2]
    if mode == "left" and rows_c != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{a.shape} so Q has {k} columns, but c has {rows_c} rows "
                         f"(expected {k}).")
    c_batch = c.shape[:-2] if c.ndim >= 2 else ()
    a = jnp.broadcast_to(a, jnp.broadcast_shapes(a.shape[:-2], c_batch) + (m, n))
    out = qr(a, mode="economic", pivoting=pivoting)
    q, r = out[0], out[1]
    if conjugate:
        q = jnp.conj(q)
    cq = jnp.matmul(c, q) if mode == "right" else jnp.matmul(q, c)
    return (cq, r) + tuple(out[2:])


# ----------------------------------------------------------------------------
# Special matrices
# ----------------------------------------------------------------------------

def block_diag(*arrs):
    """The block diagonal matrix of the (at most 2-d) arrays, in order."""
    if not arrs:
        return jnp.zeros((1, 0), _dt.default_float())
    _check_arraylike("block_diag", *arrs)
    arrs = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    for i, a in enumerate(arrs):
        if a.ndim > 2:
            raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                             f"dimensions, got an array of shape {a.shape} at argument {i}.")
    dtype = jnp.result_type(*arrs)
    ncols = sum(a.shape[1] for a in arrs)
    rows, c0 = [], 0
    for a in arrs:
        r, c = a.shape
        if r and c:
            rows.append(jnp.pad(a.astype(dtype), ((0, 0), (c0, ncols - c0 - c))))
        elif r:
            rows.append(jnp.zeros((r, ncols), dtype))
        c0 += c
    if not rows:
        return jnp.zeros((0, ncols), dtype)
    return jnp.concatenate(rows, axis=0) if len(rows) > 1 else rows[0]


def circulant(c):
    """The circulant matrix with first column c (batched over c's leading axes)."""
    _check_arraylike("circulant", c)
    c = jnp.atleast_1d(jnp.asarray(c))
    n = c.shape[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1)
    return jnp.take(c, idx, axis=-1)


def companion(a):
    """The companion matrix of the polynomial with coefficients a (highest
    first), batched over a's leading axes."""
    _check_arraylike("companion", a)
    a = jnp.atleast_1d(jnp.asarray(a))
    n = a.shape[-1]
    if n < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got "
                         f"shape {a.shape}.")
    a = a.astype(_inexact_dtype(a))
    first = -a[..., 1:] / a[..., :1]
    rest = jnp.broadcast_to(jnp.asarray(np.eye(n - 1, k=-1)[1:], a.dtype),
                            a.shape[:-1] + (n - 2, n - 1))
    return jnp.concatenate([first[..., None, :], rest], axis=-2)


def convolution_matrix(a, n, mode="full"):
    """The matrix A with A @ v = convolve(a, v, mode) for v of length n."""
    _check_arraylike("convolution_matrix", a)
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if m == 0:
        raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    if mode == "full":
        start, rows = 0, m + n - 1
    elif mode == "same":
        start, rows = (min(m, n) - 1) // 2, max(m, n)
    elif mode == "valid":
        start, rows = min(m, n) - 1, max(m, n) - min(m, n) + 1
    else:
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    k = np.arange(start, start + rows)[:, None] - np.arange(n)[None, :]
    idx = np.where((k >= 0) & (k < m), k, m)
    padded = jnp.concatenate([a, jnp.zeros(a.shape[:-1] + (1,), a.dtype)], axis=-1)
    return jnp.take(padded, idx, axis=-1)


def dft(n, scale=None, *, dtype=None):
    """The n x n discrete Fourier transform matrix (unscaled, or scaled by
    1/sqrt(n) ("sqrtn") or 1/n ("n"))."""
    dtype = _dt.default_complex() if dtype is None else dtype
    dtype = _dt.canonicalize_dtype(dtype)
    if not _dt.is_complex(dtype):
        raise ValueError(f"dtype must be a complex floating-point type; got {np.dtype(dtype)}.")
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    n = operator.index(n)
    i = np.arange(n)
    w = np.exp(-2j * np.pi * (np.outer(i, i) % max(n, 1)) / max(n, 1))
    if scale == "sqrtn":
        w = w / math.sqrt(n)
    elif scale == "n":
        w = w / n
    return jnp.asarray(w, dtype=dtype)


def fiedler(a):
    """The symmetric matrix |a[i] - a[j]| (batched over a's leading axes)."""
    _check_arraylike("fiedler", a)
    a = jnp.atleast_1d(jnp.asarray(a))
    return jnp.abs(a[..., :, None] - a[..., None, :])


def _fiedler_companion_index(n):
    """Where each entry of the n x n Fiedler companion matrix comes from:
    0 a zero, 1 a one, 2 + k minus the k-th normalized coefficient."""
    idx = np.zeros((n, n), np.int64)
    idx[0, 0] = 2
    for i in range(0, n, 2):
        if i >= 2:
            idx[i, i - 1] = 2 + i
        if i + 1 < n:
            idx[i, i + 1] = 2 + i + 1
        if i + 2 < n:
            idx[i, i + 2] = 1
    for i in range(1, n, 2):
        idx[i, max(i - 2, 0)] = 1
    return idx


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial with coefficients a
    (highest first): pentadiagonal, with the polynomial's roots as its
    eigenvalues."""
    _check_arraylike("fiedler_companion", a)
    a = jnp.atleast_1d(jnp.asarray(a))
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}.")
    a = a.astype(_inexact_dtype(a))
    c = a[..., 1:] / a[..., :1]
    n = c.shape[-1]
    if n == 0:
        return jnp.zeros(a.shape[:-1] + (0, 0), a.dtype)
    vals = jnp.concatenate([jnp.zeros(a.shape[:-1] + (1,), a.dtype),
                            jnp.ones(a.shape[:-1] + (1,), a.dtype), -c], axis=-1)
    return jnp.take(vals, _fiedler_companion_index(n), axis=-1)


def hadamard(n, dtype=int):
    """Sylvester's n x n Hadamard matrix (n a power of 2)."""
    n = operator.index(n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    dtype = _dt.canonicalize_dtype(dtype)
    if np.dtype(dtype) == np.bool_:
        raise TypeError("hadamard: dtype bool cannot hold -1; use an integer, float or complex "
                        "dtype.")
    h = np.ones((1, 1), np.int32)
    while h.shape[0] < n:
        h = np.concatenate([np.concatenate([h, h], 1), np.concatenate([h, -h], 1)], 0)
    return jnp.asarray(h).astype(dtype)


def hankel(c, r=None):
    """The Hankel matrix with first column c and last row r (r[0] ignored;
    zeros when r is None), batched over the leading axes."""
    _check_arraylike("hankel", c, r)
    c = jnp.asarray(c)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    r = jnp.zeros_like(c) if r is None else jnp.atleast_1d(jnp.asarray(r))
    dtype = jnp.result_type(c, r)
    m, n = c.shape[-1], r.shape[-1]
    batch = jnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    v = jnp.concatenate([jnp.broadcast_to(c, batch + (m,)).astype(dtype),
                         jnp.broadcast_to(r, batch + (n,))[..., 1:].astype(dtype)], axis=-1)
    idx = np.arange(m)[:, None] + np.arange(n)[None, :]
    return jnp.take(v, idx, axis=-1)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (r[0]
    ignored; conj(c) when r is None), batched over the leading axes."""
    _check_arraylike("toeplitz", c, r)
    c = jnp.atleast_1d(jnp.asarray(c))
    r = jnp.conj(c) if r is None else jnp.atleast_1d(jnp.asarray(r))
    dtype = jnp.result_type(c, r)
    m, n = c.shape[-1], r.shape[-1]
    batch = jnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    v = jnp.concatenate([jnp.flip(jnp.broadcast_to(r, batch + (n,))[..., 1:], -1).astype(dtype),
                         jnp.broadcast_to(c, batch + (m,)).astype(dtype)], axis=-1)
    idx = (n - 1) + np.arange(m)[:, None] - np.arange(n)[None, :]
    return jnp.take(v, idx, axis=-1)


def helmert(n, full=False):
    """The Helmert matrix of order n ((n - 1) x n, or n x n with `full`)."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    h = np.zeros((n, n))
    h[0] = 1 / math.sqrt(n)
    for k in range(1, n):
        s = 1 / math.sqrt(k * (k + 1))
        h[k, :k] = s
        h[k, k] = -k * s
    return jnp.asarray(h if full else h[1:], dtype=_dt.default_float())


def hilbert(n):
    """The n x n Hilbert matrix 1 / (i + j + 1)."""
    n = operator.index(n)
    i = np.arange(n)
    return jnp.asarray(1.0 / (i[:, None] + i[None, :] + 1), dtype=_dt.default_float())


def invhilbert(n):
    """The inverse of the n x n Hilbert matrix (computed exactly, rounded to
    the default float dtype)."""
    n = operator.index(n)
    comb = math.comb
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            v = ((-1) ** (i + j) * (i + j + 1) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
                 * comb(i + j, i) ** 2)
            out[i, j] = out[j, i] = float(v)
    return jnp.asarray(out, dtype=_dt.default_float())


_PASCAL_KINDS = ["symmetric", "lower", "upper"]


def _pascal_lower(n, inverse):
    out = np.zeros((n, n), object)
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = math.comb(i, j) * ((-1) ** (i - j) if inverse else 1)
    return out


def pascal(n, kind=None):
    """The n x n Pascal matrix: binomial coefficients, symmetric (the
    default), lower or upper triangular."""
    n = operator.index(n)
    kind = "symmetric" if kind is None else kind
    if kind not in _PASCAL_KINDS:
        raise ValueError(f"Expected kind to be one of: {_PASCAL_KINDS}; got {kind}")
    if kind == "symmetric":
        i = range(n)
        p = np.array([[float(math.comb(a + b, a)) for b in i] for a in i]).reshape(n, n)
    else:
        p = _pascal_lower(n, False).astype(float)
        p = p if kind == "lower" else p.T
    return jnp.asarray(p, dtype=_dt.default_float())


def invpascal(n, kind=None):
    """The inverse of `pascal(n, kind)` (computed exactly)."""
    n = operator.index(n)
    kind = "symmetric" if kind is None else kind
    if kind not in _PASCAL_KINDS:
        raise ValueError(f"Expected kind to be one of: {_PASCAL_KINDS}; got {kind}")
    li = _pascal_lower(n, True)
    if kind == "symmetric":
        p = li.T.dot(li) if n else np.zeros((0, 0), object)   # (L L^T)^-1 = L^-T L^-1
    else:
        p = li if kind == "lower" else li.T
    return jnp.asarray(np.asarray(p, dtype=float).reshape(n, n), dtype=_dt.default_float())


def leslie(f, s):
    """The Leslie matrix: fecundities f on the first row, survival rates s on
    the subdiagonal (batched over the leading axes)."""
    _check_arraylike("leslie", f, s)
    f = jnp.atleast_1d(jnp.asarray(f))
    s = jnp.atleast_1d(jnp.asarray(s))
    n = f.shape[-1]
    if n < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape "
                         f"{f.shape}.")
    if s.shape[-1] != n - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                         f"must be one less than the length of f; got f shape {f.shape} and "
                         f"s shape {s.shape}.")
    dtype = jnp.result_type(f, s)
    batch = jnp.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    f = jnp.broadcast_to(f, batch + (n,)).astype(dtype)
    s = jnp.broadcast_to(s, batch + (n - 1,)).astype(dtype)
    sub = jnp.where(np.eye(n - 1, n, dtype=bool), s[..., :, None], jnp.zeros((), dtype))
    return jnp.concatenate([f[..., None, :], sub], axis=-2)


# ----------------------------------------------------------------------------
# LU
# ----------------------------------------------------------------------------

def _lu_input(a):
    a = jnp.asarray(a)
    return a.astype(_inexact_dtype(a))


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """(p, l, u) with a = p @ l @ u (or (p @ l, u) with `permute_l`), for
    (batches of) m x n matrices."""
    a = _lu_input(a)
    lu_, _, perm = lax_linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    eye = jnp.asarray(np.eye(m, k), a.dtype)
    low = jnp.tril(lu_[..., :, :k], -1) + eye
    up = jnp.triu(lu_[..., :k, :])
    if permute_l:
        inv_perm = jnp.argsort(perm, axis=-1)
        return jnp.take_along_axis(low, inv_perm[..., :, None], axis=-2), up
    # (A real permutation matrix, also for complex a: JAX's.)
    p = (perm[..., None, :] == jnp.arange(m, dtype=perm.dtype)[:, None]).astype(
        jnp.real(a[..., :1, :1]).dtype)
    return p, low, up


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): l and u packed in lu, piv LAPACK's (0-based, int32) row swaps."""
    a = _lu_input(a)
    lu_, piv, _ = lax_linalg.lu(a)
    return lu_, piv


def _pivots_to_permutation(piv, m):
    """The permutation the row swaps `piv` (applied in order) make of range(m)."""
    k = piv.shape[-1]
    idx = jnp.arange(m, dtype=np.int32)
    perm = jnp.broadcast_to(idx, piv.shape[:-1] + (m,))

    def body(i, perm):
        p = lax.dynamic_index_in_dim(piv, i, axis=piv.ndim - 1, keepdims=True)
        at_i = lax.dynamic_index_in_dim(perm, i, axis=perm.ndim - 1, keepdims=True)
        at_p = jnp.take_along_axis(perm, p, axis=-1)
        perm = jnp.where(idx == i, at_p, perm)
        return jnp.where(idx == p, at_i, perm)

    return lax.fori_loop(0, k, body, perm)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solves a x = b (trans=0), a^T x = b (1) or a^H x = b (2) from
    `lu_factor(a)`. b is a vector when b.ndim == lu.ndim - 1 and its last
    axis has lu's size, else (a batch of) matrices."""
    lu_, piv = lu_and_piv
    lu_ = jnp.asarray(lu_)
    piv = jnp.asarray(piv)
    b = jnp.asarray(b)
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    if lu_.ndim < 2 or lu_.shape[-1] != lu_.shape[-2]:
        raise ValueError(f"lu_solve: lu must be (a batch of) square matrices, got shape "
                         f"{lu_.shape}")
    m = lu_.shape[-1]
    dt = _inexact_dtype(lu_, b)
    lu_, b = lu_.astype(dt), b.astype(dt)
    vec = b.ndim == lu_.ndim - 1 and b.shape[-1] == m
    if vec:
        b = b[..., None]
    if b.ndim < 2 or b.shape[-2] != m:
        raise ValueError(f"lu_solve: b of shape {b.shape} does not match lu of shape "
                         f"{lu_.shape}")
    batch = jnp.broadcast_shapes(lu_.shape[:-2], piv.shape[:-1], b.shape[:-2])
    lu_ = jnp.broadcast_to(lu_, batch + (m, m))
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    perm = _pivots_to_permutation(jnp.broadcast_to(piv, batch + piv.shape[-1:]), m)
    if trans == 0 or b.size == 0:
        x = _la._lu_solve(lu_, perm, b)
    else:
        conj = trans == 2
        y = _la._tri_solve(lu_, b, lower=False, transpose_a=True, conjugate_a=conj)
        z = _la._tri_solve(lu_, y, lower=True, unit_diagonal=True, transpose_a=True,
                           conjugate_a=conj)
        x = jnp.take_along_axis(z, jnp.argsort(perm, axis=-1)[..., :, None], axis=-2)
    return x[..., 0] if vec else x


# ----------------------------------------------------------------------------
# Matrix exponential: scaling and squaring with Pade approximants
# (Higham, SIAM J. Matrix Anal. Appl. 26(4), 2005)
# ----------------------------------------------------------------------------

# (degree m, theta_m): the largest 1-norm for which the [m/m] Pade
# approximant meets the unit roundoff of single / double precision.
_EXPM_THETA = {
    32: ((3, 4.258730016922831e-01), (5, 1.880152677804762e+00), (7, 3.925724783138660e+00)),
    64: ((3, 1.495585217958292e-02), (5, 2.539398330063230e-01), (7, 9.504178996162932e-01),
         (9, 2.097847961257068e+00), (13, 5.371920351148152e+00)),
}


def _mm(x, y):
    """x @ y; a product of a value with itself goes through an optimization
    barrier, as Ember's autodiff mishandles dot_general(x, x) (a wrong JVP,
    no transpose)."""
    return x @ (lax.optimization_barrier(y) if x is y else y)


def _pade_coefficients(m):
    """b_j of the [m/m] Pade approximant of exp: p(x) = sum_j b_j x^j, b_0 = 1."""
    f = math.factorial
    return [f(2 * m - j) * f(m) / (f(2 * m) * f(j) * f(m - j)) for j in range(m + 1)]


def _expm_pade(A, m, upper_triangular):
    """r_m(A) = q_m(A)^-1 p_m(A), p = V + U and q = V - U with U the odd and V
    the even part."""
    b = _pade_coefficients(m)
    ident = _ident(A.shape[-1], A.dtype)
    A2 = _mm(A, A)
    if m == 13:
        A4 = _mm(A2, A2)
        A6 = A4 @ A2
        U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2)
                 + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
        V = (A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2)
             + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * ident)
    else:
        pows = [ident, A2]
        while len(pows) <= m // 2:
            pows.append(_mm(pows[-1], A2))
        U = A @ sum(b[2 * k + 1] * pows[k] for k in range(m // 2 + 1))
        V = sum(b[2 * k] * pows[k] for k in range(m // 2 + 1))
    P, Q = V + U, V - U
    if upper_triangular:
        return _la._tri_solve(Q, P, lower=False)
    return _la.solve(Q, P)


def _expm_one(A, upper_triangular, max_squarings):
    bits = 32 if _real_dtype(A.dtype) == np.float32 else 64
    table = _EXPM_THETA[bits]
    m_max, theta_max = table[-1]
    norm = jnp.max(jnp.sum(jnp.abs(A), axis=0))
    idx = sum((norm > th).astype(np.int32) for _, th in table[:-1])
    s = jnp.where(norm > theta_max, jnp.ceil(jnp.log2(norm / theta_max)), 0)
    s = jnp.where(jnp.isnan(s), 0, jnp.clip(s, 0, max_squarings + 1)).astype(np.int32)

    def scaled(A, s):
        R = _expm_pade(A * jnp.ldexp(jnp.ones((), _real_dtype(A.dtype)), -s).astype(A.dtype),
                       m_max, upper_triangular)
        return lax.fori_loop(0, s, lambda i, X: _mm(X, X), R)

    branches = [lambda A, s, m=m: _expm_pade(A, m, upper_triangular) for m, _ in table[:-1]]
    R = lax.switch(idx, branches + [scaled], A, s)
    bad = (s > max_squarings) | ~jnp.isfinite(norm)
    return jnp.where(bad, jnp.asarray(np.nan, A.dtype), R)


def _expm_impl(A, upper_triangular, max_squarings):
    return _over_batch(lambda a: _expm_one(a, upper_triangular, max_squarings), (A,), (2,))


_expm_jit = _jit(_expm_impl, static_argnums=(1, 2))


def _expm_input(A, name="A"):
    A = jnp.asarray(A)
    if _is_half(A.dtype):
        raise TypeError(f"{name}.dtype={A.dtype} is not supported.")
    return A.astype(_inexact_dtype(A))


def expm(A, *, upper_triangular=False, max_squarings=16):
    """The matrix exponential of (a batch of) square matrices: scaling and
    squaring with Pade approximants of degree 3..7 (single precision) or
    3..13 (double), Higham (2005). NaN where more than `max_squarings`
    squarings would be needed. `upper_triangular` solves with the triangle
    of q(A)."""
    A = _expm_input(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={A.shape}.")
    if A.shape[-1] == 0:
        return A
    return _expm_jit(A, bool(upper_triangular), operator.index(max_squarings))


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """(expm(A), L(A, E)), L the Frechet derivative of expm at A in the
    direction E (the JVP of `expm`); only L when compute_expm is False.
    `method` is accepted and ignored (as in JAX)."""
    A, E = jnp.asarray(A), jnp.asarray(E)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={A.shape}")
    if E.ndim < 2 or E.shape[-1] != E.shape[-2]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={E.shape}")
    if A.shape != E.shape:
        raise ValueError(f"expected A and E to be the same shape, got A.shape={A.shape} "
                         f"E.shape={E.shape}")
    A, E = _expm_input(A), _expm_input(E, "E")
    dt = _inexact_dtype(A, E)
    A, E = A.astype(dt), E.astype(dt)
    expm_a, frechet = _jvp(expm, (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet


# ----------------------------------------------------------------------------
# Polar decomposition
# ----------------------------------------------------------------------------

def _qdwh(x, eps, max_iterations):
    """The unitary polar factor of (a batch of) m x n matrices, m >= n, by
    the QR-based dynamically weighted Halley iteration (Nakatsukasa, Bai and
    Gygi, 2010), from the lower bound eps for the smallest singular value of
    a / ||a||_F, until successive iterates differ by less than (4 eps)^(1/3)
    relative (with that bound near 1), or after max_iterations steps."""
    m, n = x.shape[-2:]
    if x.size == 0:
        return x
    rdt = _real_dtype(x.dtype)
    ueps = _eps(rdt)
    tol = (4.0 * (ueps if eps is None else float(eps))) ** (1.0 / 3.0)
    alpha = jnp.sqrt(jnp.sum(jnp.abs(x) ** 2, axis=(-2, -1)))
    alpha = jnp.where(alpha == 0, 1, alpha)
    X = x / alpha[..., None, None].astype(x.dtype)
    low = jnp.full(x.shape[:-2], ueps, rdt)   # a lower bound of X's smallest singular value
    eye = jnp.broadcast_to(_ident(n, x.dtype), x.shape[:-2] + (n, n))

    def fro(y):
        return jnp.sqrt(jnp.sum(jnp.abs(y) ** 2, axis=(-2, -1)))

    def body(st):
        k, X, low, _ = st
        l2 = low * low
        d = jnp.cbrt(4 * jnp.maximum(1 - l2, 0) / (l2 * l2))
        sq = jnp.sqrt(1 + d)
        a = sq + 0.5 * jnp.sqrt(8 - 4 * d + 8 * (2 - l2) / (l2 * sq))
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        stacked = jnp.concatenate([jnp.sqrt(c)[..., None, None].astype(x.dtype) * X, eye],
                                  axis=-2)
        q, _ = lax_linalg.qr(stacked, full_matrices=False)
        q1, q2 = q[..., :m, :], q[..., m:, :]
        w1 = (b / c)[..., None, None].astype(x.dtype)
        w2 = ((a - b / c) / jnp.sqrt(c))[..., None, None].astype(x.dtype)
        Xn = w1 * X + w2 * (q1 @ _la._adjoint(q2))
        low = jnp.minimum(low * (a + b * l2) / (1 + c * l2), 1)
        diff = jnp.max(fro(Xn - X) / jnp.maximum(fro(Xn), jnp.finfo(rdt).tiny))
        return k + 1, Xn, low, diff

    def cond(st):
        # Until the iterates settle once the weights have become Halley's
        # (the lower bound near 1): early steps with tiny weights move little.
        k, _, low, diff = st
        return (k < max_iterations) & ((diff >= tol) | jnp.any(1 - low > 10 * ueps))

    init = (jnp.int32(0), X, low, jnp.asarray(np.inf, rdt))
    return lax.while_loop(cond, body, init)[1]


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """(u, p) with a = u @ p (side="right", p n x n) or a = p @ u
    (side="left", p m x m), p Hermitian positive semidefinite. method="qdwh"
    (as JAX's: m >= n for side="right", m < n for side="left") or "svd"."""
    a = jnp.asarray(a)
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    if a.ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if not _dt.is_inexact(a.dtype):
        raise ValueError(f"data type {a.dtype} not inexact")
    m, n = a.shape[-2:]
    if method == "qdwh":
        if (side == "right" and m < n) or (side == "left" and m >= n):
            raise NotImplementedError(
                "method='qdwh' only supports mxn matrices where m >= n with side='right' "
                f"and m < n with side='left', got {a.shape} with side={side!r}")
        iters = 10 if max_iterations is None else operator.index(max_iterations)
        if side == "right":
            u = _qdwh(a, eps, iters)
            p = _la._adjoint(u) @ a
        else:
            u = _la._adjoint(_qdwh(_la._adjoint(a), eps, iters))
            p = a @ _la._adjoint(u)
        return u, (p + _la._adjoint(p)) / 2
    if method == "svd":
        w, s, vh = _la.svd(a, full_matrices=False)
        u = w @ vh
        s = s.astype(a.dtype)
        if side == "right":
            p = (_la._adjoint(vh) * s[..., None, :]) @ vh
        else:
            p = (w * s[..., None, :]) @ _la._adjoint(w)
        return u, p
    raise ValueError(f"Unknown polar decomposition method {method}.")


# ----------------------------------------------------------------------------
# Symmetric tridiagonal eigenproblem (bisection on Sturm counts)
# ----------------------------------------------------------------------------

def _sturm_count(d, e2, x, pivmin):
    """How many eigenvalues of the tridiagonal matrix (diagonal d, squared
    off-diagonal e2) lie below each point of x."""
    def step(carry, de):
        q, count = carry
        di, ei2 = de
        q = (di - x) - ei2 / q
        q = jnp.where(jnp.abs(q) < pivmin, -pivmin, q)
        return (q, count + (q < 0).astype(np.int32)), None

    q0 = d[0] - x
    q0 = jnp.where(jnp.abs(q0) < pivmin, -pivmin, q0)
    init = (q0, (q0 < 0).astype(np.int32))
    (_, count), _ = lax.scan(step, init, (d[1:], e2))
    return count


def _tridiag_bisect(d, e, lo, hi, tol):
    n = d.shape[0]
    rdt = d.dtype
    eps = _eps(rdt)
    ae = jnp.abs(e)
    e2 = ae * ae
    zero = jnp.zeros((1,), rdt)
    radius = jnp.concatenate([zero, ae]) + jnp.concatenate([ae, zero])
    gl = jnp.min(d - radius)
    gu = jnp.max(d + radius)
    bnorm = jnp.maximum(jnp.abs(gl), jnp.abs(gu))
    gl = gl - 2 * eps * bnorm * n
    gu = gu + 2 * eps * bnorm * n
    pivmin = float(jnp.finfo(rdt).tiny) * jnp.maximum(1, jnp.max(jnp.concatenate([e2, zero])))
    atol = eps * bnorm if tol is None else jnp.asarray(tol, rdt)
    k = jnp.arange(lo, hi + 1, dtype=np.int32)
    lower = jnp.full(k.shape, gl, rdt)
    upper = jnp.full(k.shape, gu, rdt)
    info = np.finfo(np.float32 if rdt == np.float32 else np.float64)
    max_iter = int(info.nmant) + 2 * int(info.maxexp) + 8

    def cond(st):
        it, lower, upper = st
        width = upper - lower
        need = atol + eps * jnp.maximum(jnp.abs(lower), jnp.abs(upper))
        return (it < max_iter) & jnp.any(width > need)

    def body(st):
        it, lower, upper = st
        mid = lower + (upper - lower) / 2
        below = _sturm_count(d, e2, mid, pivmin) <= k
        return it + 1, jnp.where(below, mid, lower), jnp.where(below, upper, mid)

    _, lower, upper = lax.while_loop(cond, body, (jnp.int32(0), lower, upper))
    return lower + (upper - lower) / 2


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
    """Eigenvalues (ascending; by bisection, to absolute tolerance `tol`) and,
    unless eigvals_only, eigenvectors (columns, from a dense Hermitian
    eigensolver) of the Hermitian tridiagonal matrix with diagonal d (its
    real part) and superdiagonal e. select="i" keeps the eigenvalues with
    indices select_range[0] <= i <= select_range[1]; select="v" is not
    implemented (as in JAX). `key` is accepted and unused."""
    d, e = jnp.asarray(d), jnp.asarray(e)
    if d.dtype != e.dtype:
        raise TypeError("diagonal and off-diagonal values must have same dtype, got "
                        f"{d.dtype} and {e.dtype}")
    if d.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"jax.scipy.linalg.eigh_tridiagonal, got {d.dtype} and {e.dtype}")
    if d.ndim != 1 or e.shape != (max(d.shape[0] - 1, 0),):
        raise TypeError(f"eigh_tridiagonal: d of shape (n,) and e of shape (n - 1,) expected, "
                        f"got {d.shape} and {e.shape}")
    if select not in ("a", "i", "v"):
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    n = d.shape[0]
    if select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        lo, hi = (operator.index(i) for i in select_range)
        if not 0 <= lo <= hi < n:
            raise ValueError(f"select_range {tuple(select_range)} is out of range for {n} "
                             "eigenvalues")
    else:
        lo, hi = 0, n - 1
    rdt = _real_dtype(d.dtype)
    if n == 0:
        w = jnp.zeros((0,), rdt)
        return w if eigvals_only else (w, jnp.zeros((0, 0), d.dtype))
    w = _tridiag_bisect(jnp.real(d), e, lo, hi, tol)
    if eigvals_only:
        return w
    t = (jnp.diag(jnp.real(d).astype(d.dtype)) + jnp.diag(e, 1) + jnp.diag(jnp.conj(e), -1))
    v = _la.eigh(t, symmetrize_input=False)[1]
    return w, v[:, lo:hi + 1]


# ----------------------------------------------------------------------------
# Hessenberg reduction and Schur decomposition
# ----------------------------------------------------------------------------

def _hessenberg_reflectors(A):
    """(H, Q, V, taus) with A = Q H Q^H, H upper Hessenberg, by Householder
    reflectors with LAPACK's xGEHRD conventions: reflector j is I - taus[j]
    v v^H, v = V[:, j] (1 at row j + 1, zero above). `lax.linalg`'s
    `hessenberg` and `tridiagonal` give LAPACK's packed form of them."""
    n = A.shape[-1]
    dt = A.dtype
    rows = jnp.arange(n)

    def body(j, st):
        A, Q, V, taus = st
        x = A[:, j]
        tail = jnp.where(rows > j + 1, x, 0)
        beta, tau, scale = _house(x[j + 1], jnp.sqrt(jnp.sum(jnp.abs(tail) ** 2)))
        v = jnp.where(rows == j + 1, 1, tail * scale).astype(dt)
        A = A - jnp.conj(tau) * v[:, None] * (jnp.conj(v) @ A)[None, :]
        A = A - tau * (A @ v)[:, None] * jnp.conj(v)[None, :]
        A = A.at[:, j].set(jnp.where(rows == j + 1, beta.astype(dt),
                                     jnp.where(rows > j + 1, 0, x)))
        Q = Q - tau * (Q @ v)[:, None] * jnp.conj(v)[None, :]
        return A, Q, V.at[:, j].set(v), taus.at[j].set(tau.astype(dt))

    steps = max(n - 1, 0)
    H, Q, V, taus = lax.fori_loop(0, steps, body, (A, _ident(n, dt), jnp.zeros((n, steps), dt),
                                                   jnp.zeros((steps,), dt)))
    return jnp.triu(H, -1), Q, V, taus


def _hessenberg_one(A):
    """(H, Q) with A = Q H Q^H, H upper Hessenberg (Householder reflectors
    with LAPACK's xGEHRD conventions)."""
    H, Q, _, _ = _hessenberg_reflectors(A)
    return H, Q


def _chase(H, Z, lo, hi, first, r):
    """One implicit QR sweep on the active block [lo, hi] of the (padded)
    Hessenberg H: reflectors of size r (2: one shift, 3: a double shift)
    from `first`, the first column of the shift polynomial, chasing the
    bulge down; applied to all of H's rows and columns and to Z."""
    N = H.shape[0]
    nz = Z.shape[0]
    dt = H.dtype

    def step(q, st):
        H, Z = st
        row = lo + q
        col = jnp.maximum(row - 1, 0)
        below = lax.dynamic_slice(H, (row, col), (r, 1))[:, 0]
        x = jnp.where(q == 0, first, below)
        beta, tau, scale = _house(x[0], jnp.sqrt(jnp.sum(jnp.abs(x[1:]) ** 2)))
        v = jnp.concatenate([jnp.ones((1,), dt), (x[1:] * scale).astype(dt)])
        blk = lax.dynamic_slice(H, (row, 0), (r, N))
        blk = blk - jnp.conj(tau) * v[:, None] * (jnp.conj(v) @ blk)[None, :]
        H = lax.dynamic_update_slice(H, blk, (row, 0))
        blk = lax.dynamic_slice(H, (0, row), (N, r))
        blk = blk - tau * (blk @ v)[:, None] * jnp.conj(v)[None, :]
        H = lax.dynamic_update_slice(H, blk, (0, row))
        blk = lax.dynamic_slice(Z, (0, row), (nz, r))
        blk = blk - tau * (blk @ v)[:, None] * jnp.conj(v)[None, :]
        Z = lax.dynamic_update_slice(Z, blk, (0, row))
        clean = jnp.concatenate([beta[None].astype(dt), jnp.zeros((r - 1,), dt)])
        cur = lax.dynamic_slice(H, (row, col), (r, 1))[:, 0]
        H = lax.dynamic_update_slice(H, jnp.where(q >= 1, clean, cur)[:, None], (row, col))
        return H, Z

    return lax.fori_loop(0, hi - lo, step, (H, Z))


def _zero_negligible(H, eps):
    """H with its negligible subdiagonal entries set to zero: h[k, k-1]
    small next to its diagonal neighbours, and by Ahues and Tisseur's (1997)
    finer test on the 2 x 2 block (magnitudes |re| + |im|, as LAPACK's)."""
    def mag(x):
        return jnp.abs(jnp.real(x)) + jnp.abs(jnp.imag(x)) if _dt.is_complex(x.dtype) \
            else jnp.abs(x)

    dg = jnp.diagonal(H)
    sub, sup = mag(jnp.diagonal(H, -1)), mag(jnp.diagonal(H, 1))
    h11, h22 = dg[:-1], dg[1:]
    zero = jnp.zeros((1,), sub.dtype)
    tst = mag(h11) + mag(h22)
    tst = jnp.where(tst == 0, jnp.concatenate([zero, sub[:-1]]) + jnp.concatenate([sub[1:], zero]),
                    tst)
    ab, ba = jnp.maximum(sub, sup), jnp.minimum(sub, sup)
    aa = jnp.maximum(mag(h22), mag(h11 - h22))
    bb = jnp.minimum(mag(h22), mag(h11 - h22))
    s = jnp.where(aa + ab == 0, 1, aa + ab)
    tiny = float(jnp.finfo(_real_dtype(H.dtype)).tiny)
    fine = ba * (ab / s) <= jnp.maximum(tiny, eps * (bb * (aa / s)))
    neg = (sub <= tiny) | ((sub <= eps * tst) & fine)
    negm = jnp.concatenate([neg, jnp.zeros((1,), bool)])
    N = H.shape[0]
    mask = (np.arange(N)[:, None] == np.arange(N)[None, :] + 1) & negm[None, :]
    return jnp.where(mask, jnp.zeros((), H.dtype), H)


def _block_start(H, hi):
    """The first row of the unreduced block of H that ends at row hi."""
    N = H.shape[0]
    i = jnp.arange(N)
    split = jnp.concatenate([jnp.ones((1,), bool), jnp.diagonal(H, -1) == 0])
    return jnp.max(jnp.where(split & (i <= hi), i, 0))


def _schur_iterate(H, Z, n, real):
    """Drives the padded Hessenberg H to (quasi-)triangular form: single
    Wilkinson shifts (complex H) or Francis double shifts (real H), with
    exceptional shifts every 10 iterations without deflation."""
    eps = _eps(_real_dtype(H.dtype))
    maxit = 30 * max(10, n)

    def entry(H, i, j):
        return H[jnp.maximum(i, 0), jnp.maximum(j, 0)]

    def single_step(H, Z, hi, since):
        lo = _block_start(H, hi)
        a, b = entry(H, hi - 1, hi - 1), entry(H, hi - 1, hi)
        c, d = entry(H, hi, hi - 1), entry(H, hi, hi)
        p = (a - d) / 2
        r = jnp.sqrt(p * p + b * c)
        den = jnp.where(jnp.abs(p + r) >= jnp.abs(p - r), p + r, p - r)
        mu = jnp.where(den == 0, d, d - b * c / jnp.where(den == 0, 1, den))
        mu = jnp.where(since % 10 == 9, d + (0.75 + 0.5j) * jnp.abs(c), mu)
        first = jnp.stack([entry(H, lo, lo) - mu, entry(H, lo + 1, lo)])
        H, Z = _chase(H, Z, lo, hi, first, 2)
        # a real H[hi, hi-1] again, by a unitary diagonal similarity
        temp = entry(H, hi, hi - 1)
        r = jnp.abs(temp)
        u = jnp.where(jnp.imag(temp) == 0, 1, temp / jnp.where(r == 0, 1, r)).astype(H.dtype)
        rows, cols = np.arange(H.shape[0])[:, None], np.arange(H.shape[1])[None, :]
        H = H * jnp.where((rows == hi) & (cols > hi), jnp.conj(u),
                          jnp.where((cols == hi) & (rows < hi), u, 1))
        H = H.at[hi, hi - 1].set(jnp.where(jnp.imag(temp) == 0, temp, r.astype(H.dtype)))
        Z = Z * jnp.where(np.arange(Z.shape[1]) == hi, u, 1)
        return H, Z

    def double_step(H, Z, hi, since):
        lo = _block_start(H, hi)
        a, b = entry(H, hi - 1, hi - 1), entry(H, hi - 1, hi)
        c, d = entry(H, hi, hi - 1), entry(H, hi, hi)
        s, t = a + d, a * d - b * c
        # real eigenvalues of the trailing block: the one nearer H[hi, hi], twice
        p = (a - d) / 2
        disc = p * p + b * c
        root = jnp.sqrt(jnp.maximum(disc, 0))
        lam = d + p + jnp.where(jnp.abs(p + root) <= jnp.abs(p - root), root, -root)
        s = jnp.where(disc >= 0, 2 * lam, s)
        t = jnp.where(disc >= 0, lam * lam, t)
        w = jnp.abs(c) + jnp.abs(entry(H, hi - 1, hi - 2))
        h = d + 0.75 * w
        exceptional = since % 10 == 9
        s = jnp.where(exceptional, 2 * h, s)
        t = jnp.where(exceptional, h * h + 0.4375 * w * w, t)
        h00, h01 = entry(H, lo, lo), entry(H, lo, lo + 1)
        h10, h11 = entry(H, lo + 1, lo), entry(H, lo + 1, lo + 1)
        h21 = entry(H, lo + 2, lo + 1)
        first = jnp.stack([h00 * h00 + h01 * h10 - s * h00 + t, h10 * (h00 + h11 - s),
                           h10 * h21])
        size = jnp.sum(jnp.abs(first))
        first = first / jnp.where(size == 0, 1, size)
        return _chase(H, Z, lo, hi, first, 3)

    def cond(st):
        it, _, hi, H, _ = st
        return (hi > 0) & (it < maxit) & jnp.all(jnp.isfinite(jnp.diagonal(H)))

    def body(st):
        it, since, hi, H, Z = st
        H = _zero_negligible(H, eps)
        one = entry(H, hi, hi - 1) == 0
        if real:
            two = (hi == 1) | (entry(H, hi - 1, hi - 2) == 0)
            action = jnp.where(one, 0, jnp.where(two, 1, 2))
        else:
            action = jnp.where(one, 0, 2)

        def deflate(k):
            return lambda H, Z: (hi - k, jnp.int32(0), H, Z)

        def iterate(H, Z):
            H, Z = (double_step if real else single_step)(H, Z, hi, since)
            return hi, since + 1, H, Z

        hi, since, H, Z = lax.switch(action, [deflate(1), deflate(2), iterate], H, Z)
        return it + 1, since, hi, H, Z

    init = (jnp.int32(0), jnp.int32(0), jnp.int32(n - 1), H, Z)
    _, _, _, H, Z = lax.while_loop(cond, body, init)
    return _zero_negligible(H, eps), Z


def _standardize_blocks(T, Z):
    """Real Schur form: the 2 x 2 diagonal blocks with real eigenvalues made
    triangular, those with complex ones given equal diagonal entries."""
    n = T.shape[0]

    def body(k, st):
        T, Z = st
        a, b = T[k, k], T[k, k + 1]
        c, d = T[k + 1, k], T[k + 1, k + 1]
        prev = jnp.where(k > 0, T[k, jnp.maximum(k - 1, 0)], 0)
        active = (c != 0) & (prev == 0)
        p = (a - d) / 2
        disc = p * p + b * c
        real_ev = disc >= 0
        z = p + jnp.where(p >= 0, 1, -1) * jnp.sqrt(jnp.maximum(disc, 0))
        hr = jnp.hypot(z, c)
        hr = jnp.where(hr == 0, 1, hr)
        # complex pair: the rotation by th with cos(2 th) >= 0 equalizing the diagonal
        sgn = jnp.where(b + c >= 0, 1, -1)
        th = 0.5 * jnp.arctan2((d - a) * sgn, jnp.abs(b + c))
        cs = jnp.where(real_ev, z / hr, jnp.cos(th))
        sn = jnp.where(real_ev, c / hr, jnp.sin(th))
        # a lower triangular block: swap (LAPACK's xLANV2 conventions)
        cs, sn = jnp.where(b == 0, 0, cs), jnp.where(b == 0, 1, sn)
        cs, sn = jnp.where(active, cs, 1), jnp.where(active, sn, 0)
        g = jnp.stack([jnp.stack([cs, -sn]), jnp.stack([sn, cs])]).astype(T.dtype)
        rows = lax.dynamic_slice(T, (k, 0), (2, n))
        T = lax.dynamic_update_slice(T, g.T @ rows, (k, 0))
        cols = lax.dynamic_slice(T, (0, k), (n, 2))
        T = lax.dynamic_update_slice(T, cols @ g, (0, k))
        zc = lax.dynamic_slice(Z, (0, k), (Z.shape[0], 2))
        Z = lax.dynamic_update_slice(Z, zc @ g, (0, k))
        avg = (T[k, k] + T[k + 1, k + 1]) / 2
        T = T.at[k + 1, k].set(jnp.where(active & real_ev, 0, T[k + 1, k]))
        T = T.at[k, k].set(jnp.where(active & ~real_ev, avg, T[k, k]))
        T = T.at[k + 1, k + 1].set(jnp.where(active & ~real_ev, avg, T[k + 1, k + 1]))
        return T, Z

    return lax.fori_loop(0, n - 1, body, (T, Z))


def _schur_one(A, real):
    """(T, Z) with A = Z T Z^H for one n x n matrix: T upper triangular, or
    quasi-triangular with standardized 2 x 2 blocks when `real`."""
    n = A.shape[-1]
    H, Q = _hessenberg_one(A)
    if n <= 1:
        return H, Q
    pad = 3
    Hp = jnp.pad(H, ((0, pad), (0, pad)))
    Zp = jnp.pad(Q, ((0, 0), (0, pad)))
    Hp, Zp = _schur_iterate(Hp, Zp, n, real)
    T, Z = Hp[:n, :n], Zp[:, :n]
    if real:
        T, Z = _standardize_blocks(T, Z)
        sub = jnp.diagonal(T, -1)
        T = jnp.triu(T) + jnp.diag(sub, -1)
    else:
        T = jnp.triu(T)
    return T, Z


_schur_one_jit = _jit(_schur_one, static_argnums=(1,))
_hessenberg_one_jit = _jit(_hessenberg_one)


def _schur_input(a, name):
    a = jnp.asarray(a)
    _mat_shape_error(name, a)
    if not _dt.is_inexact(a.dtype):
        raise TypeError(f"{name} does not accept dtype {a.dtype} at position 0. Accepted dtypes "
                        "at position 0 are subtypes of floating, complexfloating.")
    return a


def _schur(a, output):
    """schur of a checked (batch of) square inexact matrices."""
    dt = a.dtype
    if _is_half(dt):     # computed in float32; a complex form stays complex64
        t, z = _schur(a.astype(np.float32), output)
        return (t, z) if _dt.is_complex(t.dtype) else (t.astype(dt), z.astype(dt))
    real = output == "real" and not _dt.is_complex(dt)
    if not real:
        a = a.astype(_complex_dtype(dt))
    if a.shape[-1] == 0:
        return a, a
    return _over_batch(lambda x: _schur_one_jit(x, real), (a,), (2,))


def schur(a, output="real"):
    """(T, Z) with a = Z @ T @ Z^H, Z unitary: T upper triangular
    (output="complex", or any complex `a`) or, for real `a` and
    output="real", quasi-upper-triangular with standardized 2 x 2 blocks for
    the complex conjugate eigenvalue pairs (LAPACK's form). Computed by
    Hessenberg reduction and shifted QR iterations; the order of the
    eigenvalues on T's diagonal may differ from LAPACK's."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                         f"output={output!r}.")
    a = _schur_input(a, "schur")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {a.shape}.")
    return _schur(a, output)


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """H, upper Hessenberg, with a = Q H Q^H; (H, Q) with `calc_q`
    (Householder reduction as LAPACK's xGEHRD)."""
    a = _schur_input(a, "hessenberg")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got "
                         f"shape {a.shape}")
    if _is_half(a.dtype):
        out = hessenberg(a.astype(np.float32), calc_q=calc_q)
        return tuple(o.astype(a.dtype) for o in out) if calc_q else out.astype(a.dtype)
    if a.shape[-1] == 0:
        return (a, a) if calc_q else a
    h, q = _over_batch(_hessenberg_one_jit, (a,), (2,))
    return (h, q) if calc_q else h


def _rsf2csf_one(T, Z):
    n = T.shape[-1]
    eps = _eps(_real_dtype(T.dtype))

    def body(i, st):
        T, Z = st
        m = n - 1 - i
        a, b = T[m - 1, m - 1], T[m - 1, m]
        c, d = T[m, m - 1], T[m, m]
        act = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
        p = (a - d) / 2
        disc = jnp.sqrt(p * p + b * c)
        disc = jnp.where(jnp.imag(disc) < 0, -disc, disc)
        mu = p + disc        # the eigenvalue (a + d) / 2 + disc of the block, minus d
        r = jnp.sqrt(jnp.abs(mu) ** 2 + jnp.abs(c) ** 2)
        r = jnp.where(r == 0, 1, r)
        cs = jnp.where(act, mu / r, 1)
        sn = jnp.where(act, c / r, 0)
        g = jnp.stack([jnp.stack([jnp.conj(cs), sn]), jnp.stack([-sn, cs])])
        rows = lax.dynamic_slice(T, (m - 1, 0), (2, n))
        T = lax.dynamic_update_slice(T, g @ rows, (m - 1, 0))
        gh = _la._adjoint(g)
        cols = lax.dynamic_slice(T, (0, m - 1), (n, 2))
        T = lax.dynamic_update_slice(T, cols @ gh, (0, m - 1))
        zc = lax.dynamic_slice(Z, (0, m - 1), (Z.shape[0], 2))
        Z = lax.dynamic_update_slice(Z, zc @ gh, (0, m - 1))
        T = T.at[m, m - 1].set(0)
        return T, Z

    return lax.fori_loop(0, max(n - 1, 0), body, (T, Z))


_rsf2csf_jit = _jit(lambda T, Z: _over_batch(_rsf2csf_one, (T, Z), (2, 2)))


def rsf2csf(T, Z, check_finite=True):
    """The complex Schur form (T, Z) of a real Schur form (T, Z): each 2 x 2
    block triangularized by a complex rotation."""
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if T.shape[-1] != Z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
    dt = _complex_dtype(_inexact_dtype(T, Z))
    T, Z = T.astype(dt), Z.astype(dt)
    if T.shape[-1] <= 1:
        return jnp.broadcast_to(T, jnp.broadcast_shapes(T.shape, Z.shape)), Z
    return _rsf2csf_jit(T, Z)


def _superdiagonals(F, update):
    """F with its superdiagonals 1, 2, ... filled in turn with `update(F)`
    (which may read F's entries on the lower superdiagonals)."""
    n = F.shape[-1]
    offset = np.arange(n)[None, :] - np.arange(n)[:, None]

    def body(k, F):
        return jnp.where(offset == k, update(F), F)

    return lax.fori_loop(1, n, body, F)


def _sqrtm_tri(T, real_input):
    """The upper triangular square root R of an upper triangular T (R @ R =
    T, principal branch on the diagonal), by superdiagonals. For a real
    input, eigenvalues whose imaginary part is rounding noise count as real:
    a negative one gets the root with positive imaginary part (as scipy's)."""
    t = jnp.diagonal(T, axis1=-2, axis2=-1)
    if real_input:
        noise = 8 * _eps(_real_dtype(T.dtype)) * jnp.max(jnp.abs(T), axis=(-2, -1),
                                                         keepdims=True)[..., 0]
        t = jnp.where(jnp.abs(jnp.imag(t)) <= noise, jnp.real(t).astype(t.dtype), t)
    r = jnp.sqrt(t)
    den = r[..., :, None] + r[..., None, :]

    def update(R):
        return (T - R @ R) / den

    return _superdiagonals(r[..., :, None] * _ident(T.shape[-1], T.dtype), update)


def sqrtm(A, blocksize=1):
    """The principal square root of A (complex, as JAX's), by the Schur
    method (Bjorck and Hammarling)."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    A = jnp.asarray(A)
    if not jnp.issubdtype(A.dtype, jnp.inexact):
        A = A.astype(_dt.to_inexact(A.dtype))  # (integers promote, as JAX's)
    A = _schur_input(A, "schur")
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {A.shape}.")
    T, Z = _schur(A, "complex")
    if A.shape[-1] == 0:
        return T
    R = _sqrtm_tri_jit(T, not _dt.is_complex(A.dtype))
    return Z @ R @ _la._adjoint(Z)


_sqrtm_tri_jit = _jit(_sqrtm_tri, static_argnums=(1,))


def _parlett(T, fd):
    """f(T) for upper triangular T given f on T's diagonal (Parlett's
    recurrence, by superdiagonals; entries whose eigenvalues coincide keep
    the undivided value)."""
    t = jnp.diagonal(T)
    den = t[None, :] - t[:, None]
    safe = jnp.where(den == 0, 1, den)

    def update(F):
        num = T @ F - F @ T
        return jnp.where(den == 0, num, num / safe)

    return _superdiagonals(fd[:, None] * _ident(T.shape[-1], T.dtype), update)


_parlett_jit = _jit(_parlett)


def funm(A, func, disp=True):
    """f(A) for a scalar function `func` (applied elementwise to the
    eigenvalues): Schur decomposition and Parlett's recurrence. Complex
    result (as JAX's); with disp=False, (f(A), errest), errest estimating
    the relative error as scipy's."""
    A = jnp.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("expected square array_like input")
    A = _schur_input(A, "schur")
    T, Z = _schur(A, "complex")
    fd = jnp.asarray(func(jnp.diagonal(T))).astype(T.dtype)
    F = Z @ _parlett_jit(T, fd) @ _la._adjoint(Z) if A.shape[0] else T
    if disp:
        return F
    n = T.shape[-1]
    rdt = _real_dtype(T.dtype)
    tol = _eps(rdt)
    t = jnp.diagonal(T)
    upper = np.arange(n)[:, None] < np.arange(n)[None, :]
    gaps = jnp.where(upper, jnp.abs(t[None, :] - t[:, None]), np.inf)
    minden = jnp.minimum(jnp.abs(T[0, 0]), jnp.min(gaps)) if n else jnp.asarray(tol, rdt)
    minden = jnp.where(minden == 0, tol, minden)
    tnorm = jnp.max(jnp.sum(jnp.abs(jnp.triu(T, 1)), axis=0)) if n else 0
    err = jnp.minimum(1, jnp.maximum(tol, tol / minden * tnorm)).astype(rdt)
    err = jnp.where(jnp.all(jnp.isfinite(F)), err, np.inf)
    return F, err


def _tri_eigenvectors(R):
    """W, unit upper triangular, with R @ W = W @ diag(R) for upper
    triangular R (back substitution for each eigenvalue; pivots below
    eps ||R|| are raised to that, as LAPACK's xTREVC, so that coinciding
    eigenvalues of a diagonalizable R give independent vectors)."""
    n = R.shape[-1]
    lam = jnp.diagonal(R)
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    rdt = _real_dtype(R.dtype)
    smin = _eps(rdt) * jnp.maximum(jnp.max(jnp.abs(R)), float(jnp.finfo(rdt).tiny) / _eps(rdt))

    def body(k, W):
        shifted = R - lam[k] * _ident(n, R.dtype)
        piv = jnp.diagonal(shifted)
        piv = jnp.where(jnp.abs(piv) < smin, smin.astype(R.dtype), piv)
        shifted = jnp.where(i == j, piv[:, None], shifted)
        M = jnp.where((i < k) & (j < k), shifted, jnp.asarray(i == j, R.dtype))
        rhs = jnp.where(i[:, 0] < k, -R[:, k], jnp.asarray(i[:, 0] == k, R.dtype))
        w = _la._tri_solve(M, rhs[:, None], lower=False)[:, 0]
        return W.at[:, k].set(w)

    return lax.fori_loop(0, n, body, jnp.zeros_like(R))


def _sylvester_one(A, B, C, method, tol):
    RA, U = _schur_one(A, False)
    RB, V = _schur_one(B, False)
    lam, mu = jnp.diagonal(RA), jnp.diagonal(RB)
    m, n = C.shape
    if method == "schur":
        F = _la._adjoint(U) @ C @ V

        def body(j, Y):
            rhs = F[:, j] - Y @ RB[:, j]
            y = _la._tri_solve(RA + RB[j, j] * _ident(m, A.dtype), rhs[:, None], lower=False)
            return Y.at[:, j].set(y[:, 0])

        Y = lax.fori_loop(0, n, body, jnp.zeros_like(C))
        X = U @ Y @ _la._adjoint(V)
    else:
        WA, WB = _tri_eigenvectors(RA), _tri_eigenvectors(RB)
        P, Q = U @ WA, V @ WB
        Pinv = _la._tri_solve(WA, _la._adjoint(U), lower=False)   # (U WA)^-1 = WA^-1 U^H
        Qinv = _la._tri_solve(WB, _la._adjoint(V), lower=False)
        G = (Pinv @ C @ Q) / (lam[:, None] + mu[None, :])
        X = P @ G @ Qinv
    close = jnp.min(jnp.abs(lam[:, None] + mu[None, :])) < tol
    return jnp.where(close, jnp.asarray(np.nan, X.dtype), X)


_sylvester_jit = _jit(
    lambda A, B, C, method, tol: _over_batch(
        lambda a, b, c: _sylvester_one(a, b, c, method, tol), (A, B, C), (2, 2, 2)),
    static_argnums=(3, 4))


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
    """X with A X + X B = C: Bartels-Stewart on the complex Schur forms of A
    and B (method="schur"), or from their eigendecompositions
    (method="eigen"). NaNs when some eigenvalues of A and B sum to less than
    `tol` in magnitude. Batch dimensions broadcast."""
    if method not in ("schur", "eigen"):
        raise ValueError(f'Unrecognized method {method}. The two valid methods are either '
                         f'"schur" or "eigen".')
    A, B, C = jnp.asarray(A), jnp.asarray(B), jnp.asarray(C)
    if (A.ndim < 2 or B.ndim < 2 or C.ndim < 2 or A.shape[-1] != A.shape[-2]
            or B.shape[-1] != B.shape[-2] or C.shape[-2:] != (A.shape[-1], B.shape[-1])):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\n"
                         f"B: {B.shape}\nC: {C.shape}")
    dt = _inexact_dtype(A, B, C)
    if _is_half(dt):
        return solve_sylvester(A.astype(np.float32), B.astype(np.float32),
                               C.astype(np.float32), method=method, tol=tol).astype(dt)
    ct = _complex_dtype(dt)
    if 0 in C.shape[-2:]:
        batch = jnp.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
        return jnp.zeros(batch + C.shape[-2:], dt)
    X = _sylvester_jit(A.astype(ct), B.astype(ct), C.astype(ct), method, float(tol))
    return X if _dt.is_complex(dt) else jnp.real(X).astype(dt)


# `lax.linalg`'s hessenberg, tridiagonal and schur are these reductions.
lax_linalg.householder_reductions = sys.modules[__name__]
