"""jax.numpy.linalg on ember primitives (re-exported by `ember.numpy.linalg`):
norms, matrix power and the dense decompositions.

The decompositions are the ops `ember.cholesky`, `ember.eigh`, `ember.lu`,
`ember.qr`, `ember.svd` and `ember.triangular_solve` (`lax_linalg.py`),
which run LAPACK's potrf, syevd/heevd, getrf, geqrf + orgqr/ungqr and gesdd
and BLAS's trsm through the runtime, real and complex, with leading batch
dimensions. solve / inv / det / slogdet are built on the LU factorization;
pinv, lstsq, matrix_rank, svdvals and cond on the SVD.
"""

from typing import Any, NamedTuple

import numpy as np

from .. import lax_linalg
from . import lax_numpy as jnp
from .lax_numpy import _jit_outside_traces


@_jit_outside_traces("ord", "axis", "keepdims")
def norm(x, ord=None, axis=None, keepdims=False):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    if axis is None and ord is None:
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), keepdims=keepdims))
    if axis is None:
        axis = tuple(range(x.ndim)) if x.ndim <= 2 else None
    if isinstance(axis, int) or (isinstance(axis, tuple) and len(axis) == 1):
        ax = axis if isinstance(axis, int) else axis[0]
        a = jnp.abs(x)
        if ord is None or ord == 2:
            return jnp.sqrt(jnp.sum(a * a, axis=ax, keepdims=keepdims))
        if ord == jnp.inf:
            return jnp.max(a, axis=ax, keepdims=keepdims)
        if ord == -jnp.inf:
            return jnp.min(a, axis=ax, keepdims=keepdims)
        if ord == 0:
            return jnp.sum(a != 0, axis=ax, keepdims=keepdims).astype(a.dtype)
        if ord == 1:
            return jnp.sum(a, axis=ax, keepdims=keepdims)
        return jnp.sum(a ** ord, axis=ax, keepdims=keepdims) ** (1.0 / ord)
    r, c = axis
    a = jnp.abs(x)
    if ord in (None, "fro"):
        return jnp.sqrt(jnp.sum(a * a, axis=axis, keepdims=keepdims))
    if ord in (1, -1):
        red = jnp.max if ord == 1 else jnp.min
        return red(jnp.sum(a, axis=r, keepdims=True), axis=c, keepdims=True).reshape(
            _kept(x.shape, axis, keepdims))
    if ord in (jnp.inf, -jnp.inf):
        red = jnp.max if ord == jnp.inf else jnp.min
        return red(jnp.sum(a, axis=c, keepdims=True), axis=r, keepdims=True).reshape(
            _kept(x.shape, axis, keepdims))
    if ord in (2, -2, "nuc"):
        sv = svd(jnp.moveaxis(x, (r, c), (-2, -1)), compute_uv=False)
        out = jnp.max(sv, -1) if ord == 2 else jnp.min(sv, -1) if ord == -2 else jnp.sum(sv, -1)
        return out.reshape(_kept(x.shape, axis, keepdims)) if keepdims else out
    raise ValueError(f"Invalid norm order {ord!r} for matrices")


def _kept(shape, axis, keepdims):
    axis = [a % len(shape) for a in axis]
    return tuple(1 if i in axis else n for i, n in enumerate(shape) if keepdims or i not in axis)


def matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring; n < 0 powers the inverse."""
    a = jnp.asarray(a)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"exponent must be an integer, got {n!r}")
    n = int(n)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"matrix_power needs square matrices, got shape {a.shape}")
    if n < 0:
        a, n = inv(a), -n
    out = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    base = a
    while n:
        if n & 1:
            out = out @ base
        n >>= 1
        if n:
            base = base @ base
    return out


@_jit_outside_traces("axis", "keepdims", "ord")
def vector_norm(x, axis=None, keepdims=False, ord=2):
    """The vector norm over `axis` (None: all axes, tuple: those axes flattened)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    axes = tuple(range(x.ndim)) if axis is None else (
        (axis,) if isinstance(axis, int) else tuple(axis))
    a = jnp.abs(x)
    if ord == jnp.inf:
        return jnp.max(a, axis=axes, keepdims=keepdims)
    if ord == -jnp.inf:
        return jnp.min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(a != 0, axis=axes, keepdims=keepdims).astype(a.dtype)
    if ord == 1:
        return jnp.sum(a, axis=axes, keepdims=keepdims)
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(a * a, axis=axes, keepdims=keepdims))
    return jnp.sum(a ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


@_jit_outside_traces("ord", "keepdims")
def matrix_norm(x, ord="fro", keepdims=False):
    return norm(x, ord, axis=(-2, -1), keepdims=keepdims)


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

# JAX's (and the Array API's) result types: named tuples, so also pytrees.
class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _float(a):
    """`a` as an inexact array (integers and bools as float32)."""
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.float32)
    return a


def _square(a, name):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a (..., n, n) array, got shape {a.shape}")


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _adjoint(x):
    return jnp.conj(_mT(x))


def _sym(a):
    """The Hermitian part (a + a^H) / 2."""
    return (a + jnp.conj(_mT(a))) * 0.5


def _eye_like(a, n):
    return jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), a.shape[:-2] + (n, n))


def _diag(a):
    return jnp.diagonal(a, axis1=-2, axis2=-1)


def _tri_solve(t, b, lower, unit_diagonal=False, transpose_a=False, conjugate_a=False):
    """Solve op(t) @ x = b for triangular t (..., n, n) and b (..., n, k),
    op(t) = t.T with `transpose_a`, conjugated with `conjugate_a` (batch
    dimensions broadcast)."""
    batch = jnp.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = jnp.broadcast_to(t, batch + t.shape[-2:])
    b = jnp.broadcast_to(b.astype(t.dtype), batch + b.shape[-2:])
    return lax_linalg.triangular_solve(t, b, left_side=True, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)


# ----------------------------------------------------------------------------
# Cholesky
# ----------------------------------------------------------------------------

def cholesky(a, *, upper=False, symmetrize_input=True):
    """Cholesky factor L (lower, a = L @ L.T); NaNs if `a` is not positive definite."""
    a = _float(a)
    _square(a, "cholesky")
    if symmetrize_input:
        a = _sym(a)
    L = lax_linalg.cholesky(a, symmetrize_input=False)
    return _mT(L) if upper else L


# ----------------------------------------------------------------------------
# LU with partial pivoting, solve, inv, det, slogdet
# ----------------------------------------------------------------------------

def _lu(a):
    """Returns (lu, permutation, sign): a[permutation] = L @ U, L unit-lower
    in lu's strict lower part, sign the permutation's determinant (LAPACK's
    getrf through `ember.lu`)."""
    lu, pivots, permutation = lax_linalg.lu(a)
    swaps = jnp.sum(pivots != np.arange(pivots.shape[-1], dtype=np.int32), axis=-1)
    sign = jnp.where(swaps % 2 == 0, 1, -1).astype(a.dtype)
    return lu, permutation, sign


def _lu_solve(lu, permutation, b):
    # b's rows in the permutation's order: a gather, not a product with the
    # permutation matrix (n^2 k multiplications, n^3 for inv).
    batch = jnp.broadcast_shapes(permutation.shape[:-1], b.shape[:-2])
    p = jnp.broadcast_to(permutation, batch + permutation.shape[-1:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    pb = jnp.take_along_axis(b, p[..., :, None], axis=-2)
    y = _tri_solve(lu, pb, lower=True, unit_diagonal=True)
    return _tri_solve(lu, y, lower=False)


@_jit_outside_traces()
def solve(a, b):
    """Solve a @ x = b.  b of shape (n,) or a.shape[:-1] is a (batch of) vector(s)."""
    a = _float(a)
    _square(a, "solve")
    b = jnp.asarray(b)
    dt = jnp.result_type(a, b)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.float32
    a = a.astype(dt)
    b = b.astype(dt)
    vec = b.ndim == 1 or b.ndim == a.ndim - 1
    if vec:
        b = b[..., None]
    lu, perm, _ = _lu(a)
    x = _lu_solve(lu, perm, b)
    return x[..., 0] if vec else x


@_jit_outside_traces()
def inv(a):
    a = _float(a)
    _square(a, "inv")
    lu, perm, _ = _lu(a)
    return _lu_solve(lu, perm, _eye_like(a, a.shape[-1]))


@_jit_outside_traces("method")
def slogdet(a, *, method=None):
    """(sign, log|det a|) via LU with partial pivoting."""
    a = _float(a)
    _square(a, "slogdet")
    if a.shape[-1] == 0:
        return SlogdetResult(jnp.ones(a.shape[:-2], a.dtype),
                             jnp.zeros(a.shape[:-2], jnp.real(jnp.zeros((), a.dtype)).dtype))
    lu, _, sign = _lu(a)
    d = _diag(lu)
    sign = sign * jnp.prod(jnp.sign(d), axis=-1)
    logdet = jnp.sum(jnp.log(jnp.abs(d)), axis=-1)
    return SlogdetResult(sign, logdet)


@_jit_outside_traces()
def det(a):
    a = _float(a)
    _square(a, "det")
    if a.shape[-1] == 0:
        return jnp.ones(a.shape[:-2], a.dtype)
    lu, _, sign = _lu(a)
    return sign * jnp.prod(_diag(lu), axis=-1)


# ----------------------------------------------------------------------------
# QR, eigh, SVD
# ----------------------------------------------------------------------------

def qr(a, mode="reduced"):
    """a = Q R (LAPACK's geqrf and orgqr/ungqr through `ember.qr`)."""
    a = _float(a)
    if a.ndim < 2:
        raise ValueError("qr: expected an array of rank >= 2")
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"qr: unsupported mode {mode!r}")
    if mode == "raw":
        raise NotImplementedError("qr: mode='raw' is not supported")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric
    (Hermitian) matrix: LAPACK's syevd/heevd through `ember.eigh`."""
    a = _float(a)
    _square(a, "eigh")
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    if not symmetrize_input and UPLO == "U":
        a = jnp.conj(_mT(a))  # the op reads the lower triangle
    v, w = lax_linalg.eigh(a, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    return eigh(a, UPLO)[0]


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """Singular values descending, and (U, S, Vh) with `compute_uv` (LAPACK's
    gesdd through `ember.svd`; with `hermitian`, from `eigh`)."""
    a = _float(a)
    if a.ndim < 2:
        raise ValueError("svd: expected an array of rank >= 2")
    if hermitian:
        _square(a, "svd")
        w, v = eigh(a)
        s = jnp.abs(w)
        order = jnp.argsort(-s, axis=-1)
        s = jnp.take_along_axis(s, order, axis=-1)
        if not compute_uv:
            return s
        u = jnp.take_along_axis(v, order[..., None, :], axis=-1)
        sign = jnp.take_along_axis(jnp.sign(w), order, axis=-1).astype(a.dtype)
        return SVDResult(u, s, jnp.conj(_mT(u * sign[..., None, :])))
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def svdvals(x):
    return svd(x, compute_uv=False)


# ----------------------------------------------------------------------------
# derived: matrix_rank, pinv, lstsq, cond
# ----------------------------------------------------------------------------

def matrix_rank(M, rtol=None, *, tol=None):
    M = _float(M)
    if M.ndim < 2:
        return jnp.any(M != 0).astype(jnp.int32)
    s = svd(M, compute_uv=False)
    if tol is None:
        if rtol is None:
            rtol = max(M.shape[-2:]) * jnp.finfo(M.dtype).eps
        tol = jnp.max(s, axis=-1, keepdims=True) * jnp.asarray(rtol, s.dtype)
    else:
        tol = jnp.asarray(tol, s.dtype)
    return jnp.sum(s > tol, axis=-1).astype(jnp.int32)


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    a = _float(a)
    m, n = a.shape[-2:]
    if rcond is not None:
        rtol = rcond
    if rtol is None:
        rtol = 10.0 * max(m, n) * jnp.finfo(a.dtype).eps
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = jnp.asarray(rtol, s.dtype)[..., None] * jnp.max(s, axis=-1, keepdims=True)
    big = s > cutoff
    sinv = jnp.where(big, 1 / jnp.where(big, s, 1), 0).astype(a.dtype)
    return _adjoint(vh) @ (sinv[..., :, None] * _adjoint(u))


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """Least squares via the SVD: returns (x, residuals, rank, s)."""
    a = _float(a)
    b = jnp.asarray(b).astype(a.dtype)
    if a.ndim != 2:
        raise ValueError("lstsq: a must be 2-D")
    m, n = a.shape
    vec = b.ndim == 1
    if vec:
        b = b[:, None]
    u, s, vh = svd(a, full_matrices=False)
    if rcond is None:
        rcond = jnp.finfo(a.dtype).eps * max(m, n)
    cutoff = jnp.asarray(rcond, s.dtype) * (s[0] if s.shape[0] else 0)
    big = s > cutoff
    sinv = jnp.where(big, 1 / jnp.where(big, s, 1), 0).astype(a.dtype)
    rank = jnp.sum(big).astype(jnp.int32)
    x = _adjoint(vh) @ (sinv[:, None] * (_adjoint(u) @ b))
    resid = jnp.sum(jnp.abs(b - a @ x) ** 2, axis=0)
    if numpy_resid and not (m > n):
        resid = jnp.zeros((0,), s.dtype)
    if vec:
        x = x[:, 0]
        resid = resid[0] if not numpy_resid else resid.reshape(-1)
    return x, resid, rank, s


def cond(x, p=None):
    x = _float(x)
    if p is None or p == 2:
        s = svd(x, compute_uv=False)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svd(x, compute_uv=False)
        return s[..., -1] / s[..., 0]
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


# The Array API's linalg names that act on the last axes (stacks of vectors
# and matrices), where jnp's counterparts default to the first ones.


def diagonal(x, /, *, offset=0):
    return jnp.diagonal(x, offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    return jnp.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def vecdot(x1, x2, /, *, axis=-1):
    return jnp.vecdot(x1, x2, axis=axis)


def outer(x1, x2, /):
    x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"linalg.outer takes 1-D arrays, got shapes {x1.shape} and {x2.shape}")
    return jnp.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("linalg.cross requires vectors of size 3 along the axis")
    return jnp.cross(x1, x2, axis=axis)


def matmul(x1, x2, /):
    return jnp.matmul(x1, x2)


def matrix_transpose(x, /):
    return jnp.matrix_transpose(x)


def tensordot(x1, x2, /, *, axes=2):
    return jnp.tensordot(x1, x2, axes)
