"""jax.numpy.linalg on ember primitives (re-exported by `ember.numpy.linalg`):
norms, matrix power and the dense decompositions.

The decompositions are the ops `ember.cholesky`, `ember.eigh`, `ember.lu`,
`ember.qr`, `ember.svd` and `ember.triangular_solve` (`lax_linalg.py`),
which run LAPACK's potrf, syevd/heevd, getrf, geqrf + orgqr/ungqr and gesdd
and BLAS's trsm through the runtime, real and complex, with leading batch
dimensions. solve / inv / det / slogdet are built on the LU factorization;
pinv, lstsq, matrix_rank, svdvals and cond on the SVD.
"""

import functools
import math
import operator
from typing import Any, NamedTuple

import numpy as np

from .. import core, dtypes, lax_linalg
from . import lax_numpy as jnp
from .lax_numpy import _jit_outside_traces


@_jit_outside_traces("ord", "axis", "keepdims")
def norm(x, ord=None, axis=None, keepdims=False):
    x = jnp.asarray(x)
    x = x.astype(dtypes.to_inexact(x.dtype))
    if axis is None and ord is None:
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), keepdims=keepdims))
    if axis is None:
        axis = tuple(range(x.ndim))
    if isinstance(axis, (tuple, list)) and len(axis) not in (1, 2):
        raise ValueError(f"Improper number of axes for norm: axis={tuple(axis)}. Pass one "
                         "axis to compute a vector-norm, or two axes to compute a "
                         "matrix-norm.")
    if isinstance(axis, int) or (isinstance(axis, tuple) and len(axis) == 1):
        ax = axis if isinstance(axis, int) else axis[0]
        a = jnp.abs(x)
        if isinstance(ord, str):
            raise ValueError(f"Invalid order '{ord}' for vector norm.")
        if ord is None or ord == 2:
            return jnp.sqrt(jnp.sum(a * a, axis=ax, keepdims=keepdims))
        if ord == jnp.inf:
            return jnp.max(a, axis=ax, keepdims=keepdims, initial=0)
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
    if ord in (1, -1, jnp.inf, -jnp.inf):
        # (The largest norm of an empty matrix is 0, as JAX's; the smallest
        # raises, as a reduction with no identity.)
        if ord in (1, jnp.inf):
            red = functools.partial(jnp.max, initial=0)
        else:
            red = jnp.min
        inner, outer = (r, c) if ord in (1, -1) else (c, r)
        return red(jnp.sum(a, axis=inner, keepdims=True), axis=outer, keepdims=True).reshape(
            _kept(x.shape, axis, keepdims))
    if ord in (2, -2, "nuc"):
        sv = svd(jnp.moveaxis(x, (r, c), (-2, -1)), compute_uv=False)
        if ord == 2:
            out = jnp.max(sv, -1, initial=0)
        else:
            out = jnp.min(sv, -1) if ord == -2 else jnp.sum(sv, -1)
        return out.reshape(_kept(x.shape, axis, keepdims)) if keepdims else out
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def _kept(shape, axis, keepdims):
    axis = [a % len(shape) for a in axis]
    return tuple(1 if i in axis else n for i, n in enumerate(shape) if keepdims or i not in axis)


def matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring; n < 0 powers the inverse."""
    a = jnp.asarray(a)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"exponent must be an integer, got {n!r}")
    n = int(n)
    if a.ndim < 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be at least "
                        "two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise TypeError(f"Last 2 dimensions of the array must be square, got shape {a.shape}")
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
    x = x.astype(dtypes.to_inexact(x.dtype))
    axes = tuple(range(x.ndim)) if axis is None else (
        (axis,) if isinstance(axis, int) else tuple(axis))
    a = jnp.abs(x)
    if ord == jnp.inf:
        return jnp.max(a, axis=axes, keepdims=keepdims, initial=0)
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
class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


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
    """`a` as an inexact array (JAX's `to_inexact_dtype`: integers and
    bools of up to 32 bits as float32, 64-bit ones as float64)."""
    a = jnp.asarray(a)
    return a.astype(dtypes.to_inexact(a.dtype))


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
    if b.size == 0:
        return jnp.zeros(b.shape, jnp.result_type(lu, b))  # (no right-hand sides)
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
    # JAX's rule (since 0.5): a 1-D b is a vector, any other a matrix (or a
    # batch of them); its rows must match a's size.
    vec = b.ndim == 1
    m = a.shape[-1]
    if (b.shape[0] if vec else b.shape[-2] if b.ndim >= 2 else m) != m:
        sig = "(m,m),(m)->(m)" if vec else "(m,m),(m,n)->(m,n)"
        raise ValueError(f"inconsistent size for core dimension 'm': "
                         f"{b.shape[0] if vec else b.shape[-2]} vs {m} on vectorized function "
                         f"with excluded=frozenset() and signature={sig!r}")
    if vec:
        b = b[..., None]
    lu, perm, _ = _lu(a)
    x = _lu_solve(lu, perm, b)
    return x[..., 0] if vec else x


@_jit_outside_traces()
def inv(a):
    a = _float(a)
    _square(a, "inv")
    if a.size == 0:
        return a
    lu, perm, _ = _lu(a)
    return _lu_solve(lu, perm, _eye_like(a, a.shape[-1]))


@_jit_outside_traces("method")
def slogdet(a, *, method=None):
    """(sign, log|det a|) via LU with partial pivoting."""
    if method not in (None, "lu", "qr"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'.")
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
    if mode == "full":
        mode = "reduced"  # (NumPy's old name, which JAX accepts)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"qr: unsupported mode {mode!r}")
    if mode == "raw":
        # LAPACK's geqrf form, transposed as NumPy returns it: (h, tau).
        h, tau = lax_linalg._scipy_linalg()._geqrf(a)
        return QRResult(jnp.swapaxes(h, -1, -2), tau)
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


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    return eigh(a, UPLO, symmetrize_input=symmetrize_input)[0]


# ----------------------------------------------------------------------------
# eig / eigvals: general (non-symmetric) matrices
# ----------------------------------------------------------------------------
#
# Ember's runtime has no geev, so the decomposition is a host computation
# through `pure_callback`, batched under vmap by one call on the whole batch
# ("broadcast_all"): NumPy's `np.linalg.eig` / `eigvals` (LAPACK's geev, as
# JAX's CPU lowering; the same results as JAX's for float64, complex64 and
# complex128). NumPy computes float32 input in double precision, where the
# sign of a real eigenvector can come out opposite to single-precision
# sgeev's (JAX's), so float32 goes to SciPy's sgeev where SciPy is
# installed (JAX's CPU kernels call SciPy's LAPACK; in Ember's process its
# results differ from JAX's in the last bits, as its calls reach the
# OpenBLAS that `compiler._use_openblas` loads first). Eigenvectors are
# geev's: unit 2-norm columns, a complex one's largest-magnitude component
# real. A matrix that is not finite or for which geev fails gives NaNs
# (JAX's `info != 0` result). Derivatives are JAX's `eig_jvp_rule`
# (lax/linalg.py) in a custom_jvp.

def _complex_dtype(dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        return dt
    return np.dtype(np.complex128 if dt == np.float64 else np.complex64)


@functools.cache
def _scipy_lapack():
    try:
        from scipy.linalg import lapack
    except ImportError:
        return None
    return lapack


def _unpack_pairs(v, wi):
    """geev's real eigenvectors with conjugate pairs packed as (re, im)
    columns, as complex columns."""
    out = v.astype(np.result_type(v.dtype, np.complex64))
    n, j = v.shape[-1], 0
    while j < n:
        if wi[j] != 0 and j + 1 < n:
            out[:, j] = v[:, j] + 1j * v[:, j + 1]
            out[:, j + 1] = np.conj(out[:, j])
            j += 2
        else:
            j += 1
    return out


def _geev_lapack(lapack, m, left, right):
    """(w, vl or None, vr or None, ok) of one square matrix by SciPy's
    LAPACK geev (?geev for its dtype)."""
    n = m.shape[-1]
    kind = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
            np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}[m.dtype]
    work, _ = getattr(lapack, kind + "geev_lwork")(n, compute_vl=int(left),
                                                   compute_vr=int(right))
    geev = getattr(lapack, kind + "geev")
    lwork = max(int(np.real(work)), 1)
    if kind in "sd":
        wr, wi, vl, vr, info = geev(m, compute_vl=int(left), compute_vr=int(right),
                                    lwork=lwork)
        w = wr + 1j * wi
        vl = _unpack_pairs(vl, wi) if left else None
        vr = _unpack_pairs(vr, wi) if right else None
    else:
        w, vl, vr, info = geev(m, compute_vl=int(left), compute_vr=int(right), lwork=lwork)
        vl, vr = (vl if left else None), (vr if right else None)
    return w, vl, vr, info == 0


def _geev_host(a, vectors, left=False):
    """(w,) + (vl,) with `left` + (vr,) with `vectors` of the (..., n, n)
    NumPy array `a`, in its complex dtype."""
    a = np.asarray(a)
    cdt = _complex_dtype(a.dtype)
    n = a.shape[-1]
    w = np.full(a.shape[:-1], complex(np.nan, np.nan), cdt)
    vl = np.full(a.shape, complex(np.nan, np.nan), cdt) if left else None
    v = np.full(a.shape, complex(np.nan, np.nan), cdt) if vectors else None
    out = (w,) + ((vl,) if left else ()) + ((v,) if vectors else ())
    if n == 0:
        return out
    flat = a.reshape((-1, n, n))
    fw = w.reshape((-1, n))
    fvl = vl.reshape((-1, n, n)) if left else None
    fv = v.reshape((-1, n, n)) if vectors else None
    lapack = _scipy_lapack() if a.dtype == np.float32 or left else None
    if left and lapack is None:
        raise NotImplementedError("eig: left eigenvectors need SciPy's LAPACK")
    for i, m in enumerate(flat):
        if not np.all(np.isfinite(m)):
            continue
        with np.errstate(all="ignore"):
            if lapack is not None:
                ew, el, ev, ok = _geev_lapack(lapack, m, left, vectors)
                if not ok:
                    continue
            else:
                try:
                    ew, ev = np.linalg.eig(m) if vectors else (np.linalg.eigvals(m), None)
                except np.linalg.LinAlgError:
                    continue
        fw[i] = ew
        if left:
            fvl[i] = el
        if vectors:
            fv[i] = ev
    return out


def _eig_raw(a, vectors, left=False):
    """The host geev of `a` (an inexact array, (..., n, n)): [w] + [vl]
    with `left` + [vr] with `vectors`."""
    from .. import callback

    cdt = _complex_dtype(a.dtype)
    shapes = [core.ShapeDtypeStruct(a.shape[:-1], cdt)]
    shapes += [core.ShapeDtypeStruct(a.shape, cdt)] * (int(left) + int(vectors))
    if a.shape[-1] == 0:
        return [jnp.zeros(s.shape, cdt) for s in shapes]
    if not core._trace_stack and not isinstance(a, core.Tracer):
        return [jnp.asarray(x) for x in _geev_host(np.asarray(a), vectors, left)]

    def host(x):
        return tuple(_geev_host(np.asarray(x), vectors, left))

    return list(callback.pure_callback(host, tuple(shapes), a, vmap_method="broadcast_all"))


def _eig_vec_jvp(w, v, da):
    """JAX's `_eig_vec_jvp`: nondegenerate perturbation theory, with the
    eigenvector's free scale fixed by geev's normalization (unit 2-norm,
    real largest-magnitude component)."""
    n = w.shape[-1]
    eye = jnp.eye(n, dtype=w.dtype)
    fmat = 1 / (eye + w[..., None, :] - w[..., :, None]) - eye
    p = jnp.matmul(solve(v, da), v, precision="highest")
    dw = _diag(p)
    u = jnp.matmul(v, fmat * p, precision="highest")
    k = jnp.argmax(jnp.abs(v), axis=-2)
    mask = (jnp.arange(n)[:, None] == k[..., None, :]).astype(v.dtype)
    c = _complex_of(-jnp.real(jnp.sum(jnp.conj(v) * u, axis=-2)),
                    -jnp.imag(jnp.sum(mask * u, axis=-2))
                    / jnp.real(jnp.sum(mask * v, axis=-2)))
    return dw, u + v * c[..., None, :]


def _complex_of(re, im):
    return re + 1j * im.astype(re.dtype)


@functools.cache
def _eig_rules():
    """custom_jvp functions (made once, on first use): eigenvalues only, and
    eigenvalues with right eigenvectors (lax.linalg.eig's
    enable_eigvec_derivs=True)."""
    from ..ad import custom_jvp

    def eigvals_fun(a):
        return _eig_raw(a, False)[0]

    def eigvals_jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        w, v = _eig_raw(a, True)
        da = da.astype(v.dtype)
        return w, jnp.sum(solve(v, da) * _mT(v), axis=-1)

    def eig_fun(a):
        return tuple(_eig_raw(a, True))

    def eig_jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        w, v = _eig_raw(a, True)
        dw, dv = _eig_vec_jvp(w, v, da.astype(v.dtype))
        return (w, v), (dw, dv)

    ev = custom_jvp(eigvals_fun)
    ev.defjvp(eigvals_jvp)
    ef = custom_jvp(eig_fun)
    ef.defjvp(eig_jvp)
    return ev, ef


def _eig(a, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
         enable_eigvec_derivs=False):
    """`jax.lax.linalg.eig` on the host geev: [w] + [vl] + [vr]."""
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        raise TypeError(f"eig: expected a floating-point or complex array, got {a.dtype} "
                        f"(at {core.where()})")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"eig: argument must be a (..., n, n) array, got shape {a.shape} "
                         f"(at {core.where()})")
    if compute_left_eigenvectors:
        # LAPACK's geev on the host (not differentiable, as JAX's eigenvectors
        # without enable_eigvec_derivs).
        return _eig_raw(a, compute_right_eigenvectors, left=True)
    eigvals_f, eig_f = _eig_rules()
    traced = isinstance(a, core.Tracer)
    if not compute_right_eigenvectors:
        return [eigvals_f(a) if traced else _eig_raw(a, False)[0]]
    if traced and enable_eigvec_derivs:
        return list(eig_f(a))
    # Not differentiable (JAX's NotImplementedError): a plain callback, so
    # differentiating through it raises Ember's "Pure callbacks do not
    # support JVP" error, only where the matrix depends on what is
    # differentiated (JAX's symbolic-zero tangents: no error otherwise).
    return _eig_raw(a, True)


def eig(a):
    """Eigenvalues and right eigenvectors (columns) of a general square
    matrix, complex (complex64 for float32 input), as LAPACK's geev returns
    them (JAX's order and normalization). Not differentiable (as JAX's,
    which raises NotImplementedError; Ember raises its ValueError for
    differentiated pure callbacks)."""
    a = _float(a)
    _square(a, "eig")
    w, v = _eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of a general square matrix (complex); differentiable."""
    a = _float(a)
    _square(a, "eigvals")
    return _eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


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

def matrix_rank(M, rtol=None, *, tol=None, hermitian=False):
    """The number of singular values above a threshold: by default the
    largest times max(m, n) times epsilon; a given `rtol` (or `tol`) is
    the threshold itself, per matrix of a batch, as JAX 0.10.2 uses it."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    M = _float(M)
    if M.ndim < 2:
        return jnp.any(M != 0).astype(jnp.int32)
    s = svd(M, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = jnp.max(s, axis=-1) * (max(M.shape[-2:]) * jnp.finfo(s.dtype).eps)
    rtol = jnp.asarray(rtol, s.dtype)
    return jnp.sum(s > rtol[..., None], axis=-1)  # (the default int, as JAX's)


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    a = _float(a)
    m, n = a.shape[-2:]
    if rcond is not None:
        rtol = rcond
    if rtol is None:
        rtol = 10.0 * max(m, n) * jnp.finfo(a.dtype).eps
    if m == 0 or n == 0:
        return jnp.zeros(a.shape[:-2] + (n, m), a.dtype)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = jnp.asarray(rtol, s.dtype)[..., None] * jnp.max(s, axis=-1, keepdims=True)
    big = s > cutoff
    sinv = jnp.where(big, 1 / jnp.where(big, s, 1), 0).astype(a.dtype)
    return _adjoint(vh) @ (sinv[..., :, None] * _adjoint(u))


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """Least squares via the SVD: returns (x, residuals, rank, s). As JAX's:
    singular values at least `rcond` times the largest count (a negative
    rcond is machine epsilon), and the residuals are always computed unless
    `numpy_resid` asks for NumPy's empty ones (rank < n or m <= n)."""
    a = _float(a)
    b = jnp.asarray(b).astype(a.dtype)
    if a.ndim != 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if a.shape[0] != b.shape[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    vec = b.ndim == 1
    if vec:
        b = b[:, None]
    if b.ndim != 2:
        raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or "
                        "two-dimensional")
    m, n = a.shape
    if a.size == 0:
        s = jnp.zeros((0,), jnp.real(jnp.zeros((), a.dtype)).dtype)
        rank = jnp.sum(jnp.zeros((0,), bool))
        x = jnp.zeros((n,) + b.shape[1:], a.dtype)
    else:
        u, s, vh = svd(a, full_matrices=False)
        eps = jnp.finfo(a.dtype).eps
        rcond = eps * max(m, n) if rcond is None else jnp.where(rcond < 0, eps, rcond)
        big = (s > 0) & (s >= jnp.asarray(rcond, s.dtype) * s[0])
        sinv = jnp.where(big, 1 / jnp.where(big, s, 1), 0).astype(a.dtype)
        rank = jnp.sum(big)  # (the default int: int64 with x64, as JAX's)
        x = _adjoint(vh) @ (sinv[:, None] * (_adjoint(u) @ b))
    if numpy_resid and (rank < n or m <= n):
        resid = jnp.zeros((0,), s.dtype)
    else:
        resid = jnp.sum(jnp.abs(b - a @ x) ** 2, axis=0)
    if vec:
        x = x[:, 0]  # (the residuals keep their axis: shape (1,), as JAX's)
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


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    return jnp.vecdot(x1, x2, axis=axis, precision=precision,
                      preferred_element_type=preferred_element_type)


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


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    return jnp.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def matrix_transpose(x, /):
    return jnp.matrix_transpose(x)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
    return jnp.tensordot(x1, x2, axes, precision=precision,
                         preferred_element_type=preferred_element_type, out_sharding=out_sharding)


# ----------------------------------------------------------------------------
# multi_dot, tensorinv, tensorsolve
# ----------------------------------------------------------------------------

def _chain_order(dims):
    """NumPy's `_multi_dot_matrix_chain_order`: s[i][j] the split of the
    cheapest product of matrices i..j, matrix k of shape dims[k], dims[k+1]."""
    n = len(dims) - 1
    m = [[0] * n for _ in range(n)]
    s = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            m[i][j] = math.inf
            for k in range(i, j):
                q = m[i][k] + m[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if q < m[i][j]:
                    m[i][j] = q
                    s[i][j] = k
    return s


def multi_dot(arrays, *, precision=None):
    """The product of the matrices `arrays` (the first and last may be
    vectors) in the cheapest order (NumPy's dynamic program)."""
    arrs = [jnp.asarray(x) for x in arrays]
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)} "
                         f"(at {core.where()})")
    shapes = [a.shape for a in arrs]
    if not (arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2)
            and all(a.ndim == 2 for a in arrs[1:-1])):
        raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                         "first and last array which may be 1 or 2 dimensional. Got array "
                         f"shapes {shapes} (at {core.where()})")
    if any(a.shape[-1] != b.shape[0] for a, b in zip(arrs[:-1], arrs[1:])):
        raise ValueError("multi_dot: last dimension of each array must match first dimension "
                         f"of following array. Got array shapes {shapes} "
                         f"(at {core.where()})")
    first_vec, last_vec = arrs[0].ndim == 1, arrs[-1].ndim == 1
    if first_vec:
        arrs[0] = arrs[0][None, :]
    if last_vec:
        arrs[-1] = arrs[-1][:, None]
    dims = [a.shape[0] for a in arrs] + [arrs[-1].shape[1]]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return arrs[i]
        k = split[i][j]
        return jnp.matmul(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, len(arrs) - 1)
    if first_vec and last_vec:
        return out[0, 0]
    if first_vec:
        return out[0]
    if last_vec:
        return out[:, 0]
    return out


def tensorinv(a, ind=2):
    """The inverse of `a` for `tensordot` over `ind` axes: shape
    a.shape[ind:] + a.shape[:ind]."""
    a = jnp.asarray(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind} (at {core.where()})")
    contracting, batch = a.shape[:ind], a.shape[ind:]
    rows, cols = math.prod(contracting), math.prod(batch)
    if rows != cols:
        raise ValueError("tensorinv is only possible when the product of the first `ind` "
                         "dimensions equals that of the remaining dimensions. got "
                         f"arr.shape={a.shape} with ind={ind}. (at {core.where()})")
    return inv(a.reshape((rows, cols))).reshape(batch + contracting)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) == b (after moving `axes` of a to its end)."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    if axes is not None:
        a = jnp.moveaxis(a, axes, len(axes) * (a.ndim - 1,))
    out_shape = a.shape[b.ndim:]
    if a.shape[:b.ndim] != b.shape:
        raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                         f"got a.shape={a.shape}, b.shape={b.shape} (at {core.where()})")
    if b.size != math.prod(out_shape):
        raise ValueError("Input arrays must have prod(a.shape[:b.ndim]) == "
                         f"prod(a.shape[b.ndim:]); got a.shape={a.shape}, b.ndim={b.ndim}. "
                         f"(at {core.where()})")
    a = a.reshape((b.size, math.prod(out_shape)))
    return solve(a, b.ravel()).reshape(out_shape)
