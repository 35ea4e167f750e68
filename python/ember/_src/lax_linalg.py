"""ember.lax.linalg: the linear algebra primitives (`ember.cholesky`,
`ember.eigh`, `ember.lu`, `ember.qr`, `ember.svd`, `ember.triangular_solve`), which
compiled code runs through the runtime's LAPACK and BLAS calls. Their JVP, transpose and
batching rules are the ops' rules in C++."""

import numpy as np

from . import core, dtypes, lax
from .core import Primitive, as_value, type_error

_LAPACK_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                             np.complex128))


def _square(x, what):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise type_error(f"{what} must be (a batch of) square matrices, got shape {x.shape}")


def _matrices(x, what):
    _square(x, what)
    if x.dtype not in _LAPACK_DTYPES:
        raise type_error(f"{what} must be float32, float64, complex64 or complex128, got "
                         f"{x.dtype}")


def _cholesky_rule(x):
    _matrices(x, "cholesky's operand")
    return x


def _cholesky_emit(trace, vals, avals):
    return trace.emit("ember.cholesky", vals, avals)


cholesky_p = Primitive("cholesky", _cholesky_rule, _cholesky_emit)


def _lu_rule(x):
    if x.ndim < 2:
        raise type_error(f"lu's operand must be (a batch of) matrices, got shape {x.shape}")
    if x.dtype not in _LAPACK_DTYPES:
        raise type_error(f"lu's operand must be float32, float64, complex64 or complex128, "
                         f"got {x.dtype}")
    m, n = x.shape[-2:]
    return [x, core.ShapedArray(x.shape[:-2] + (min(m, n),), np.dtype(np.int32)),
            core.ShapedArray(x.shape[:-2] + (m,), np.dtype(np.int32))]


def _lu_emit(trace, vals, avals):
    return trace.emit("ember.lu", vals, avals)


lu_p = Primitive("lu", _lu_rule, _lu_emit, multiple_results=True)


def _eigh_rule(x):
    _matrices(x, "eigh's operand")
    real = np.real(np.zeros((), x.dtype)).dtype
    return [x, core.ShapedArray(x.shape[:-1], real)]


def _eigh_emit(trace, vals, avals):
    return trace.emit("ember.eigh", vals, avals)


eigh_p = Primitive("eigh", _eigh_rule, _eigh_emit, multiple_results=True)


def _any_matrices(x, what):
    if x.ndim < 2:
        raise type_error(f"{what} must be (a batch of) matrices, got shape {x.shape}")
    if x.dtype not in _LAPACK_DTYPES:
        raise type_error(f"{what} must be float32, float64, complex64 or complex128, got "
                         f"{x.dtype}")


def _qr_rule(x, full_matrices):
    _any_matrices(x, "qr's operand")
    m, n = x.shape[-2:]
    c = m if full_matrices else min(m, n)
    return [core.ShapedArray(x.shape[:-2] + (m, c), x.dtype),
            core.ShapedArray(x.shape[:-2] + (c, n), x.dtype)]


def _qr_emit(trace, vals, avals, full_matrices):
    return trace.emit("ember.qr", vals, avals,
                      {"full_matrices": core.bool_attr(full_matrices)})


qr_p = Primitive("qr", _qr_rule, _qr_emit, multiple_results=True)


def _svd_rule(x, full_matrices, compute_uv):
    _any_matrices(x, "svd's operand")
    m, n = x.shape[-2:]
    k, b = min(m, n), x.shape[:-2]
    real = np.real(np.zeros((), x.dtype)).dtype
    out = [core.ShapedArray(b + (k,), real)]
    if compute_uv:
        out += [core.ShapedArray(b + (m, m if full_matrices else k), x.dtype),
                core.ShapedArray(b + (n if full_matrices else k, n), x.dtype)]
    return out


def _svd_emit(trace, vals, avals, full_matrices, compute_uv):
    return trace.emit("ember.svd", vals, avals,
                      {"full_matrices": core.bool_attr(full_matrices)})


svd_p = Primitive("svd", _svd_rule, _svd_emit, multiple_results=True)


def _solve_rule(a, b, lower, transpose_a, unit_diagonal):
    _matrices(a, "triangular_solve's a")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise type_error(f"triangular_solve: b of shape {b.shape} does not match a of "
                         f"shape {a.shape}")
    if b.dtype != a.dtype:
        raise type_error(f"triangular_solve: a and b must have one dtype, got {a.dtype} "
                         f"and {b.dtype}")
    return b.update(weak_type=False)


def _solve_emit(trace, vals, avals, lower, transpose_a, unit_diagonal):
    return trace.emit("ember.triangular_solve", vals, avals, {
        "lower": core.bool_attr(lower), "transpose_a": core.bool_attr(transpose_a),
        "unit_diagonal": core.bool_attr(unit_diagonal)})


triangular_solve_p = Primitive("triangular_solve", _solve_rule, _solve_emit)


def _conj(x):
    return lax.conj(x) if np.issubdtype(x.dtype, np.complexfloating) else x


def _swap(x):
    return lax.transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _in_lapack_dtype(f, *xs):
    """f on xs in float32 when they are half precision, its float results
    cast back (a list of results stays a tuple)."""
    dt = xs[0].dtype
    if dt not in (dtypes.float16, dtypes.bfloat16):
        out = f(*xs)  # (the primitive's rule rejects what it cannot take)
        return tuple(out) if isinstance(out, list) else out
    out = f(*(lax.convert_element_type(x, np.float32) for x in xs))
    back = [lax.convert_element_type(r, dt) if r.dtype == np.float32 else r
            for r in (out if isinstance(out, list) else [out])]
    return tuple(back) if isinstance(out, list) else back[0]


def cholesky(x, *, symmetrize_input=True):
    """The lower Cholesky factor of each trailing matrix of `x` (NaNs where
    it is not positive definite). With `symmetrize_input`, of (x + x^H) / 2."""
    x = as_value(x)
    _square(x, "cholesky's operand")
    if symmetrize_input:  # the Hermitian part
        x = (x + _conj(_swap(x))) * np.array(0.5, x.dtype)
    return _in_lapack_dtype(cholesky_p.bind, x)


def lu(x):
    """LU with partial pivoting of each trailing matrix: (lu, pivots,
    permutation) as JAX's `lax.linalg.lu` (LAPACK's getrf): `P x = L U`
    packed in lu, pivots the 0-based row swaps, permutation the row of x
    each row of `P x` is."""
    return _in_lapack_dtype(lu_p.bind, as_value(x))


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True,
         subset_by_index=None):
    """(v, w): eigenvectors (columns of v) and ascending eigenvalues of each
    trailing Hermitian matrix of `x`, read from its `lower` (or upper)
    triangle, of (x + x^H) / 2 with `symmetrize_input` (JAX's
    `lax.linalg.eigh`, LAPACK's syevd/heevd). The eigenvalues always ascend:
    `sort_eigenvalues=False` lets JAX return any order, so sorted is one.
    `subset_by_index` is not supported."""
    if subset_by_index is not None:
        raise NotImplementedError("eigh: subset_by_index is not supported")
    x = as_value(x)
    _square(x, "eigh's operand")
    if symmetrize_input:
        x = (x + _conj(_swap(x))) * np.array(0.5, x.dtype)
    elif not lower:
        x = _conj(_swap(x))
    return _in_lapack_dtype(eigh_p.bind, x)


def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
    """(q, r) with x = q @ r for each trailing m x n matrix of `x` (LAPACK's
    geqrf and orgqr/ungqr, JAX's `lax.linalg.qr`): q m x m and r m x n with
    `full_matrices`, else m x k and k x n, k = min(m, n). `use_magma` is a
    GPU option and ignored; `pivoting` (geqp3) is not supported."""
    del use_magma
    if pivoting:
        raise NotImplementedError("qr: pivoting=True is not supported")
    return _in_lapack_dtype(lambda a: qr_p.bind(a, full_matrices=bool(full_matrices)),
                            as_value(x))


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """The singular values of each trailing matrix of `x`, descending, and
    with `compute_uv` (u, s, vh), x = u @ diag(s) @ vh (LAPACK's gesdd, JAX's
    `lax.linalg.svd`). `subset_by_index=(start, end)` keeps those singular
    values (and vectors; full_matrices=False then). `algorithm` chooses among
    GPU algorithms in JAX and is ignored."""
    del algorithm
    x = as_value(x)
    if subset_by_index is not None:
        start, end = (int(i) for i in subset_by_index)
        k = min(x.shape[-2:]) if x.ndim >= 2 else 0
        if not 0 <= start <= end <= k:
            raise ValueError(f"svd: subset_by_index {subset_by_index!r} out of range for "
                             f"{k} singular values")
        if full_matrices and compute_uv and (start, end) != (0, k):
            raise ValueError("svd: subset_by_index needs full_matrices=False")
    out = _in_lapack_dtype(lambda a: svd_p.bind(a, full_matrices=bool(full_matrices),
                                                compute_uv=bool(compute_uv)), x)
    s = out[0]
    if subset_by_index is not None and (start, end) != (0, k):
        s = lax.slice_in_dim(s, start, end, axis=s.ndim - 1)
        if compute_uv:
            u = lax.slice_in_dim(out[1], start, end, axis=x.ndim - 1)
            vh = lax.slice_in_dim(out[2], start, end, axis=x.ndim - 2)
            return u, s, vh
    if not compute_uv:
        return s
    return out[1], s, out[2]


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
    """x with op(a) @ x = b (`left_side`) or x @ op(a) = b, op(a) being `a`
    or its transpose, conjugated with `conjugate_a`; only `a`'s triangle
    `lower` names is read."""
    a, b = as_value(a), as_value(b)
    if conjugate_a:
        a = _conj(a)

    def solve(a, b):
        if left_side:
            return triangular_solve_p.bind(a, b, lower=bool(lower),
                                           transpose_a=bool(transpose_a),
                                           unit_diagonal=bool(unit_diagonal))
        # x op(a) = b  <=>  op(a)^T x^T = b^T
        return _swap(triangular_solve_p.bind(a, _swap(b), lower=bool(lower),
                                             transpose_a=not transpose_a,
                                             unit_diagonal=bool(unit_diagonal)))
    return _in_lapack_dtype(solve, a, b)
