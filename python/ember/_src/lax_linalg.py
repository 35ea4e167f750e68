"""ember.lax.linalg: the linear algebra primitives (`ember.cholesky`,
`ember.eigh`, `ember.lu`, `ember.qr`, `ember.svd`, `ember.triangular_solve`), which
compiled code runs through the runtime's LAPACK and BLAS calls, and the DFT
(`ember.fft`, the runtime's FFT call). Their JVP, transpose and
batching rules are the ops' rules in C++."""

import enum
import math
import operator

import numpy as np

from ember._mlir import ir

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
    `full_matrices`, else m x k and k x n, k = min(m, n). With `pivoting`
    (LAPACK's geqp3: the largest remaining column first), (q, r, p) with
    x[..., :, p] = q @ r. `use_magma` is a GPU option and ignored."""
    del use_magma
    x = as_value(x)
    if pivoting:
        if x.ndim < 2:
            raise ValueError(f"qr: expected a batch of matrices, got shape {x.shape}")
        q, r, p = _scipy_linalg()._qr_pivoted(x)
        if not full_matrices:
            k = min(x.shape[-2:])
            q, r = q[..., :, :k], r[..., :k, :]
        return q, r, p
    return _in_lapack_dtype(lambda a: qr_p.bind(a, full_matrices=bool(full_matrices)), x)


def ormqr(a, taus, c, *, left=True, transpose=False):
    """JAX's `lax.linalg.ormqr`: Q @ c, Q^H @ c (`transpose`), c @ Q or
    c @ Q^H (`left=False`) for Q = H_0 ... H_{k-1} given by the reflectors
    below the diagonal of `a` (LAPACK's geqrf form, as `jnp.linalg.qr(...,
    mode="raw")` gives them transposed) and `taus`, without forming Q
    (LAPACK's ormqr/unmqr)."""
    jnp = _jnp()
    a, taus, c = jnp.asarray(a), jnp.asarray(taus), jnp.asarray(c)
    m, k = a.shape[-2], taus.shape[-1]
    if a.ndim < 2 or taus.shape[:-1] != a.shape[:-2] or k > min(a.shape[-2:]):
        raise ValueError(f"ormqr: expected a (..., m, n) and taus (..., k) with k <= "
                         f"min(m, n), got {a.shape} and {taus.shape}")
    if c.shape[-2 if left else -1] != m:
        raise ValueError(f"ormqr: c of shape {c.shape} does not match Q of order {m} "
                         f"(left={left})")
    dtype = jnp.result_type(a, taus, c)
    a, taus, c = a.astype(dtype), taus.astype(dtype), c.astype(dtype)
    row = jnp.arange(m)
    order = range(k) if left == transpose else reversed(range(k))
    for i in order:
        v = jnp.where(row[:, None] > i, a[..., :, i:i + 1],
                      (row[:, None] == i).astype(dtype))             # (..., m, 1)
        t = taus[..., i, None, None]
        t = jnp.conj(t) if transpose else t
        vh = jnp.conj(jnp.swapaxes(v, -1, -2))
        if left:
            c = c - t * jnp.matmul(v, jnp.matmul(vh, c, precision="highest"),
                                   precision="highest")
        else:
            c = c - t * jnp.matmul(jnp.matmul(c, v, precision="highest"), vh,
                                   precision="highest")
    return c


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


def svd_by_polar(x, *, full_matrices, compute_uv, max_iterations=10):
    """The SVD of one matrix from its polar decomposition, as XLA:TPU runs
    JAX's (which has no SVD of its own): the StableHLO export for TPU
    writes `ember.svd` this way (stablehlo_out.py). A wide matrix is
    decomposed as its conjugate transpose; a tall one is first reduced to
    its square R factor (always for full_matrices, whose extra columns of u
    are the rest of that Q; otherwise when over 15% taller than wide).
    With x = u_p h (`qdwh`) and h = v diag(s) v^H (`eigh`), x = (u_p v)
    diag(s) v^H: the singular values are h's eigenvalues (clipped at
    zero), sorted descending with their vectors. When the smallest is
    negligible next to the largest (rank deficiency), u_p v loses
    orthogonality and is re-orthonormalized by a QR step, its column
    signs kept. A matrix with a non-finite entry gives NaNs.
    Returns s, or (u, s, vh)."""
    jnp = _jnp()
    x = as_value(x)
    m, n = x.shape
    flip = m < n
    if flip:
        x = jnp.conj(x.T)
        m, n = n, m
    q = rest = None
    if full_matrices and m > n:
        q_full, r_full = qr(x, full_matrices=True)
        q, rest, a = q_full[:, :n], q_full[:, n:], r_full[:n, :]
    elif m > 1.15 * n:
        q, a = qr(x, full_matrices=False)
    else:
        a = x
    u_p, h, _, _ = qdwh(a, max_iterations=max_iterations)
    v, w = eigh(h, sort_eigenvalues=False)
    w = jnp.maximum(w, 0.0)
    order = jnp.argsort(-w, stable=True)
    s = w[order]
    if not compute_uv:
        return s
    v = v[:, order]
    u = u_p @ v
    eps = float(dtypes.finfo(x.dtype).eps)

    def orthonormalize(state):
        uu, _ = state
        qq, rr = qr(uu, full_matrices=False)
        sign = jnp.where(jnp.real(jnp.diagonal(rr)) >= 0, 1, -1).astype(qq.dtype)
        return qq * sign, jnp.asarray(False)

    deficient = s[-1] <= n * eps * s[0]
    u, _ = _control_flow().while_loop(lambda st: st[1], orthonormalize, (u, deficient))
    if q is not None:
        u = q @ u
    if rest is not None:
        u = jnp.concatenate([u, rest], axis=1)
    finite = jnp.all(jnp.isfinite(a))
    u = jnp.where(finite, u, jnp.nan)
    s = jnp.where(finite, s, jnp.nan)
    v = jnp.where(finite, v, jnp.nan)
    if flip:
        return v, s, jnp.conj(u.T)
    return u, s, jnp.conj(v.T)


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
    """x with op(a) @ x = b (`left_side`) or x @ op(a) = b, op(a) being `a`
    or its transpose, conjugated with `conjugate_a`; only `a`'s triangle
    `lower` names is read."""
    a, b = as_value(a), as_value(b)
    if conjugate_a:
        a = _conj(a)
    if b.ndim == a.ndim - 1:
        # A vector right-hand side: one column (or row) of a matrix, as JAX's.
        x = triangular_solve(a, lax.expand_dims(b, (b.ndim if left_side else b.ndim - 1,)),
                             left_side=left_side, lower=lower, transpose_a=transpose_a,
                             unit_diagonal=unit_diagonal)
        return x[..., 0] if left_side else x[..., 0, :]

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


# --------------------------------------------------------------------------
# More of jax.lax.linalg, on jnp ops (no primitives of their own)
# --------------------------------------------------------------------------

class EigImplementation(enum.Enum):
    """JAX's choice of eig backend (Ember always uses the host's geev)."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """JAX's choice of eigh algorithm (Ember always uses LAPACK's)."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """JAX's choice of SVD algorithm (`svd(algorithm=...)`, ignored by Ember)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


# `jnp.linalg`'s eig (`numpy/linalg.py`, a layer above this module), set by
# `api_extras.py` when ember is imported.
_eig_impl = None


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
    """[w] + [vl] + [vr]: the eigenvalues of each trailing square matrix and,
    if asked, its eigenvectors (columns), from the host's geev as
    `jnp.linalg.eig` (left eigenvectors by LAPACK's geev too: vl^H a =
    w vl^H). `implementation` and `use_magma` choose GPU backends in JAX and
    are ignored."""
    del implementation, use_magma
    return _eig_impl(x, compute_left_eigenvectors=compute_left_eigenvectors,
                     compute_right_eigenvectors=compute_right_eigenvectors,
                     enable_eigvec_derivs=enable_eigvec_derivs)


def _jnp():
    from .numpy import lax_numpy
    return lax_numpy


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """X with A X = B for each tridiagonal A given by its lower (dl, dl[0]
    = 0), main (d) and upper (du, du[m-1] = 0) diagonals, shapes (..., m), and
    b (..., m, n): the Thomas algorithm (no pivoting) as a scan. With
    `perturb_singular`, zero pivots become eps * max|d| so the result is
    finite."""
    from .control_flow import scan
    jnp = _jnp()
    dl, d, du, b = (jnp.asarray(t) for t in (dl, d, du, b))
    # (JAX's checks and words: one dtype, inexact, b of rank >= 2 matching.)
    if len({t.dtype for t in (dl, d, du, b)}) != 1:
        raise TypeError("lax.tridiagonal_solve requires arguments to have the same dtypes, "
                        f"got {', '.join(str(t.dtype) for t in (dl, d, du, b))}.")
    dtype = d.dtype
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(f"tridiagonal_solve does not accept dtype {dtype} at position 0. "
                        "Accepted dtypes at position 0 are subtypes of floating, "
                        "complexfloating.")
    if not (dl.ndim >= 1 and dl.shape == d.shape == du.shape):
        raise TypeError(f"tridiagonal_solve: dl, d and du must have the same shape, got "
                        f"{dl.shape}, {d.shape} and {du.shape}")
    if b.ndim < 2:
        raise TypeError(f"Input 3 to tridiagonal_solve must have rank at least 2, but got "
                        f"{b.ndim}")
    if b.ndim != d.ndim + 1 or b.shape[:-1] != d.shape:
        raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                        "equal the dimensions of the diagonal arguments.")
    m = d.shape[-1]
    if m == 0:
        return b
    tiny = None
    if perturb_singular:
        eps = jnp.finfo(dtype).eps
        tiny = (eps * jnp.max(jnp.abs(d), axis=-1, keepdims=True)).astype(dtype)[..., 0]
        tiny = jnp.where(tiny == 0, jnp.finfo(dtype).tiny, tiny).astype(dtype)

    def pivot(p):
        return p if tiny is None else jnp.where(p == 0, tiny, p)

    # Scan over the rows: move the row axis to the front.
    rows = [jnp.moveaxis(t, -1, 0) for t in (dl, d, du)]
    bl = jnp.moveaxis(b, -2, 0)
    p0 = pivot(rows[1][0])
    c0 = rows[2][0] / p0
    y0 = bl[0] / p0[..., None]

    def fwd(carry, row):
        cp, yp = carry
        a, dd, c, bb = row
        p = pivot(dd - a * cp)
        cn = c / p
        yn = (bb - a[..., None] * yp) / p[..., None]
        return (cn, yn), (cp, yp)

    (_, ylast), (cs, ys) = scan(fwd, (c0, y0), (rows[0][1:], rows[1][1:], rows[2][1:],
                                                 bl[1:]))

    def bwd(xn, row):
        c, y = row
        x = y - c[..., None] * xn
        return x, x

    _, xs = scan(bwd, ylast, (cs, ys), reverse=True)
    x = jnp.concatenate([xs, ylast[None]], axis=0)
    return jnp.moveaxis(x, 0, -2)


def householder_product(a, taus):
    """The first n columns of Q = H_0 H_1 ... H_{k-1} for each trailing
    m x n matrix `a` (m >= n) holding the reflectors' vectors below its
    diagonal (LAPACK's geqrf layout) and `taus` (..., k), k <= n:
    H_i = I - tau_i v_i v_i^H with v_i[i] = 1 (LAPACK's orgqr/ungqr)."""
    jnp = _jnp()
    a, taus = jnp.asarray(a), jnp.asarray(taus)
    if a.ndim < 2:
        raise ValueError(f"householder_product: a must be (a batch of) matrices, got shape "
                         f"{a.shape}")
    m, n = a.shape[-2:]
    k = taus.shape[-1] if taus.ndim else 0
    if taus.ndim != a.ndim - 1 or taus.shape[:-1] != a.shape[:-2] or m < n or k > n:
        raise ValueError(f"householder_product: expected a (..., m, n) with m >= n and taus "
                         f"(..., k) with k <= n, got {a.shape} and {taus.shape}")
    dtype = jnp.result_type(a, taus)
    a, taus = a.astype(dtype), taus.astype(dtype)
    q = jnp.broadcast_to(jnp.eye(m, n, dtype=dtype), a.shape)
    row = jnp.arange(m)
    for i in reversed(range(k)):
        v = jnp.where(row[:, None] > i, a[..., :, i:i + 1],
                      (row[:, None] == i).astype(dtype))          # (..., m, 1)
        w = jnp.matmul(jnp.conj(jnp.swapaxes(v, -1, -2)), q, precision="highest")
        q = q - taus[..., i, None, None] * jnp.matmul(v, w, precision="highest")
    return q


def lu_pivots_to_permutation(pivots, permutation_size):
    """The permutation (..., permutation_size) int32 that the row swaps
    `pivots` (..., k), k <= permutation_size, make of the identity: swap i
    with pivots[i] for i = 0 .. k-1 in order."""
    jnp = _jnp()
    pivots = jnp.asarray(pivots)
    size = operator.index(permutation_size)
    if pivots.ndim < 1 or not jnp.issubdtype(pivots.dtype, jnp.integer):
        raise ValueError(f"lu_pivots_to_permutation: pivots must be an integer array of "
                         f"shape (..., k), got {pivots.dtype}{list(pivots.shape)}")
    k = pivots.shape[-1]
    if k > size:
        raise ValueError(f"Output permutation size {size} has to exceed the trailing "
                         f"dimension of the pivots. Got pivots size {k}")
    pivots = pivots.astype(np.int32)
    idx = jnp.arange(size, dtype=np.int32)
    perm = jnp.broadcast_to(idx, pivots.shape[:-1] + (size,))
    for i in range(k):
        j = pivots[..., i:i + 1]
        pi = perm[..., i:i + 1]
        pj = jnp.take_along_axis(perm, j, axis=-1)
        perm = jnp.where(idx == i, pj, jnp.where(idx == j, pi, perm))
    return perm


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """alpha * A A^T + beta * C for A (..., m, n) and C (..., m, m); with
    `symmetrize_output` the upper triangle is the transpose of the lower one
    (JAX only guarantees the lower triangle otherwise; Ember's is the full
    product)."""
    jnp = _jnp()
    a, c = jnp.asarray(a_matrix), jnp.asarray(c_matrix)
    out = alpha * jnp.matmul(a, jnp.swapaxes(a, -1, -2), precision="highest") + beta * c
    out = out.astype(jnp.result_type(a, c))
    if symmetrize_output:
        out = jnp.tril(out) + jnp.swapaxes(jnp.tril(out, -1), -1, -2)
    return out


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of A + w w^T given A's, R (A = R^T R), by
    Givens rotations in O(n^2) (JAX's algorithm; real n x n R and n-vector w)."""
    jnp = _jnp()
    r, z = jnp.asarray(r_matrix), jnp.asarray(w_vector)
    if r.ndim != 2 or r.shape[0] != r.shape[1] or z.shape != r.shape[:1]:
        raise ValueError(f"cholesky_update: expected an n x n matrix and an n-vector, got "
                         f"shapes {r.shape} and {z.shape}")
    dtype = jnp.result_type(r, z)
    r, z = r.astype(dtype), z.astype(dtype)
    for k in range(z.shape[0]):
        x, y = r[k, k], z[k]
        den = jnp.maximum(jnp.abs(x), jnp.abs(y))
        safe = jnp.where(y == 0, jnp.ones_like(den), den)
        xs, ys = x / safe, y / safe
        rh = 1 / jnp.sqrt(xs * xs + ys * ys)
        c = jnp.where(y == 0, jnp.ones_like(x), xs * rh)
        s = jnp.where(y == 0, jnp.zeros_like(y), -ys * rh)
        row = r[k, :]
        r = r.at[k, :].set(c * row - s * z)
        z = c * z + s * row
    return r


def _control_flow():
    from . import control_flow

    return control_flow


# Hessenberg and Schur reductions live with scipy.linalg's (one piece of
# code for both APIs): `ember.scipy.linalg`, loaded with ember, registers
# itself here (`_hessenberg_reflectors`, `_schur`, `_over_batch`).
householder_reductions = None


def _scipy_linalg():
    return householder_reductions


def _square_inexact(a, name):
    jnp = _jnp()
    a = jnp.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a batch of square matrices, got shape {a.shape}")
    if not dtypes.is_inexact(a.dtype):
        raise TypeError(f"{name}: expected a floating or complex matrix, got {a.dtype}")
    return a


def hessenberg(a):
    """JAX's `lax.linalg.hessenberg`: (a, taus), LAPACK's xGEHRD form: the
    upper Hessenberg matrix in the upper triangle and first subdiagonal,
    the Householder vectors below it (their leading 1 implicit) with the
    scalar factors `taus` (..., n - 1), so that A = Q H Q^H with Q the
    product of the reflectors."""
    jnp = _jnp()
    a = _square_inexact(a, "hessenberg")
    sl = _scipy_linalg()
    n = a.shape[-1]

    def one(m):
        h, _, v, taus = sl._hessenberg_reflectors(m)
        return h + jnp.tril(jnp.pad(v, ((0, 0), (0, 1)))[:, :n], -2), taus

    if n == 0:
        return a, jnp.zeros(a.shape[:-1], a.dtype)
    return sl._over_batch(one, (a,), (2,))


def tridiagonal(a, *, lower=True):
    """JAX's `lax.linalg.tridiagonal` of Hermitian matrices: (a, d, e, taus),
    LAPACK's xSYTRD/xHETRD form: with `lower`, the Householder vectors below
    the first subdiagonal of `a` (the rest of `a` as given), d the diagonal
    and e the subdiagonal of the real tridiagonal matrix T = Q^H A Q. Only
    `a`'s lower (upper) triangle is read. The reflectors are those of the
    Hessenberg reduction (for a Hermitian matrix it is tridiagonal); the
    upper form is the lower form of the matrix with its rows and columns
    reversed, read back reversed (LAPACK's upper variant reduces from the
    last column with the same reflectors)."""
    jnp = _jnp()
    a = _square_inexact(a, "tridiagonal")
    sl = _scipy_linalg()
    n = a.shape[-1]
    real = dtypes.finfo(a.dtype).dtype if dtypes.is_complex(a.dtype) else a.dtype

    def one(m):
        if not lower:
            m = m[::-1, ::-1]
        # The Hermitian matrix the stored triangle describes.
        low = jnp.tril(m, -1)
        full = low + jnp.conj(low.T) + jnp.diag(jnp.real(jnp.diagonal(m)).astype(m.dtype))
        h, _, v, taus = sl._hessenberg_reflectors(full)
        d = jnp.real(jnp.diagonal(h)).astype(real)
        e = jnp.real(jnp.diagonal(h, -1)).astype(real)
        vs = jnp.tril(jnp.pad(v, ((0, 0), (0, 1)))[:, :n], -2)
        packed = jnp.triu(m) + jnp.diag(jnp.diagonal(h, -1), -1) + vs
        packed = packed - jnp.diag(jnp.diagonal(packed)) + jnp.diag(d.astype(m.dtype))
        if not lower:
            packed, d, e, taus = packed[::-1, ::-1], d[::-1], e[::-1], taus[::-1]
            pass
        return packed, d, e, taus

    if n == 0:
        return (a, jnp.zeros(a.shape[:-1], real), jnp.zeros(a.shape[:-1], real),
                jnp.zeros(a.shape[:-1], a.dtype))
    return sl._over_batch(one, (a,), (2,))


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    """JAX's `lax.linalg.schur`: [T] or [T, vs] with x = vs T vs^H, T
    quasi-upper-triangular for real x (LAPACK's real Schur form) or upper
    triangular for complex x (scipy.linalg.schur's algorithm: Hessenberg
    reduction and shifted QR). Sorting the eigenvalues is not built."""
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("lax.linalg.schur: sort_eig_vals and select_callable are "
                                  f"not supported (at {core.where()})")
    x = _square_inexact(x, "schur")
    t, vs = _scipy_linalg()._schur(x, "complex" if dtypes.is_complex(x.dtype) else "real")
    return [t, vs] if compute_schur_vectors else [t]


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
    """JAX's `lax.linalg.qdwh`: the polar decomposition x = u h (u with
    orthonormal columns, h Hermitian positive semidefinite) of an m x n
    matrix, m >= n, by the QR-based dynamically weighted Halley iteration
    (Nakatsukasa, Bai and Gygi 2010): (u, h, num_iters, is_converged). The
    weights follow the bound on the smallest singular value, known in
    advance; the early iterations (large weights) take a QR step, the later
    a Cholesky step, then Halley steps until u stops changing (at most
    `max_iterations`, default 10, in all). `is_hermitian` and
    `dynamic_shape` are accepted (the result is the same)."""
    del is_hermitian
    jnp = _jnp()
    x = jnp.asarray(x)
    if dynamic_shape is not None:
        raise NotImplementedError("lax.linalg.qdwh: dynamic_shape is not supported")
    if x.ndim != 2:
        raise ValueError(f"qdwh: expected a matrix, got shape {x.shape}")
    m, n = x.shape
    if m < n:
        raise ValueError(f"The input matrix of shape M x N must have M >= N. Got {x.shape}")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    eps = float(dtypes.finfo(x.dtype).eps) if eps is None else float(eps)
    one_norm = jnp.max(jnp.sum(jnp.abs(x), axis=0))
    inf_norm = jnp.max(jnp.sum(jnp.abs(x), axis=1))
    scale = jnp.where(one_norm == 0, 1, lax.rsqrt(one_norm) * lax.rsqrt(inf_norm))
    u0 = x * scale.astype(x.dtype)
    tol_l = 10.0 * eps / 2.0
    tol_norm = tol_l ** (1 / 3)
    eye = jnp.eye(n, dtype=x.dtype)

    # The weights (a, b, c) of each step from the bound l on the smallest
    # singular value of u (eps at first), computed ahead as JAX does.
    steps, l_ = [], eps
    while l_ + tol_l < 1 and len(steps) < max_iterations:
        l2 = l_ * l_
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + 0.5 * (8.0 - 4.0 * dd + 8.0 * (2.0 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1.0) ** 2 / 4.0
        c = a + b - 1.0
        l_ = l_ * (a + b * l2) / (1.0 + c * l2)
        steps.append((a, b, c))

    def qr_step(u, a, b, c):
        # u (I + c u^H u)^{-1} = Q1 Q2^H / sqrt(c), [sqrt(c) u; I] = [Q1; Q2] R.
        q, _ = qr(jnp.concatenate([c ** 0.5 * u, eye]), full_matrices=False)
        return (b / c) * u + ((a - b / c) / c ** 0.5) * (q[:m] @ jnp.conj(q[m:].T))

    def cholesky_step(u, a, b, c):
        y = cholesky(c * (jnp.conj(u.T) @ u) + eye, symmetrize_input=False)
        # z = u (I + c u^H u)^{-1}, by two triangular solves with y y^H.
        z = triangular_solve(y, u, left_side=False, lower=True, transpose_a=True,
                             conjugate_a=True)
        z = triangular_solve(y, z, left_side=False, lower=True)
        return (b / c) * u + (a - b / c) * z

    def norm(d):
        return jnp.sqrt(jnp.sum(jnp.abs(d) ** 2))

    # The QR steps (large weights) all run; then the Cholesky steps with
    # their weights while u changes, then Halley's (the weights' limit,
    # a, b, c = 3, 1, 3) while u changes, `max_iterations` steps in all.
    u = u0
    qr_steps = [w for w in steps if w[2] > 100]
    for a, b, c in qr_steps:
        u = qr_step(u, a, b, c)
    weights = jnp.asarray(np.array([w for w in steps if w[2] <= 100] + [(3.0, 1.0, 3.0)],
                                   dtype=dtypes.finfo(x.dtype).dtype))
    last = weights.shape[0] - 1

    def cond(st):
        u, k, done = st
        return (~done) & (k < max_iterations)

    def body(st):
        u, k, _ = st
        w = weights[jnp.minimum(k - len(qr_steps), last)]
        new = cholesky_step(u, w[0], w[1], w[2])
        return new, k + 1, norm(new - u) <= tol_norm

    u, k, converged = _control_flow().while_loop(
        cond, body, (u, jnp.int32(len(qr_steps)), jnp.asarray(False)))
    h = jnp.conj(u.T) @ x
    h = (h + jnp.conj(h.T)) / 2
    return u, h, k, converged


# The discrete Fourier transform (`ember.fft`), a runtime call as the
# decompositions are (SciPy's pocketfft where registered; compiler.py).
_FFT_KINDS = ("FFT", "IFFT", "RFFT", "IRFFT")


def _fft_rule(x, fft_type, fft_lengths):
    k = len(fft_lengths)
    real = np.dtype(np.float64 if x.dtype in (np.float64, np.complex128) else np.float32)
    cplx = np.dtype(np.complex128 if real == np.float64 else np.complex64)
    lengths = tuple(fft_lengths)
    if fft_type == "RFFT":
        return core.ShapedArray(x.shape[:-1] + (lengths[-1] // 2 + 1,), cplx)
    if fft_type == "IRFFT":
        return core.ShapedArray(x.shape[:-k] + lengths, real)
    return core.ShapedArray(x.shape, cplx)


def _fft_emit(trace, vals, avals, fft_type, fft_lengths):
    return trace.emit("ember.fft", vals, avals, {
        "fft_type": ir.StringAttr.get(fft_type, core.context()),
        "fft_lengths": core.i64_array_attr(fft_lengths)})


fft_p = Primitive("fft", _fft_rule, _fft_emit)


def fft(x, fft_type, fft_lengths):
    """`ember.fft` of `x` (checked and typed by the caller: a complex operand
    for FFT, IFFT and IRFFT, a real f32/f64 one for RFFT); `fft_type` one of
    FFT, IFFT, RFFT, IRFFT."""
    assert fft_type in _FFT_KINDS
    lengths = tuple(int(n) for n in fft_lengths)
    if math.prod(lengths) == 0:
        # (No points: zeros of the result's type, as JAX's; the op always has
        # points.)
        out = _fft_rule(as_value(x).aval, fft_type, lengths)
        return lax.full(out.shape, 0, out.dtype)
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=lengths)
