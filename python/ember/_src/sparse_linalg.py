"""`ember.experimental.sparse.linalg`: JAX's sparse linear algebra,
`spsolve` (a direct solve of a CSR system) and `lobpcg_standard` (the top
eigenpairs of a symmetric operator).

`spsolve` solves on the host with SciPy's `scipy.sparse.linalg.spsolve` (as
JAX does on a CPU) through `pure_callback`, inside `lax.custom_linear_solve`
with the CSR product as its matrix: so it is differentiable in both modes
with respect to `b` and to the matrix's values (JAX's has no reverse mode
for the values), and maps over `vmap` one system at a time.

`lobpcg_standard` is Ember's own LOBPCG (Knyazev's locally optimal block
preconditioned conjugate gradient, without a preconditioner), written with
`ember.numpy` and run as one jitted `while_loop`. docs/design.md ("Sparse
linear algebra") gives its steps; its eigenpairs agree with JAX's to the
tolerance, its iteration count need not.
"""

import functools

import numpy as np

from . import core
from .api import jit
from .callback import pure_callback
from .control_flow import while_loop
from .lax import rsqrt
from .lax_extras import custom_linear_solve
from .numpy import lax_numpy as jnp
from .numpy import linalg as jnp_linalg
from .ops import segment_sum

__all__ = ["lobpcg_standard", "spsolve"]


# ----------------------------------------------------------------- spsolve

def _check_csr_system(data, indices, indptr, b, reorder):
    # (JAX's checks and texts.)
    if data.dtype != b.dtype:
        raise ValueError(f"data types do not match: data.dtype={data.dtype!r} "
                         f"b.dtype={b.dtype!r}")
    if not (jnp.issubdtype(indices.dtype, jnp.integer)
            and jnp.issubdtype(indptr.dtype, jnp.integer)):
        raise ValueError("index arrays must be integer typed; got "
                         f"indices.dtype={indices.dtype!r} indptr.dtype={indptr.dtype!r}")
    if not data.ndim == indices.ndim == indptr.ndim == b.ndim == 1:
        raise ValueError("Arrays must be one-dimensional. Got "
                         f"data.shape={data.shape} indices.shape={indices.shape} "
                         f"indptr.shape={indptr.shape} b.shape={b.shape}")
    if indptr.size != b.size + 1 or data.shape != indices.shape:
        raise ValueError(f"Invalid CSR buffer sizes: data.shape={data.shape} "
                         f"indices.shape={indices.shape} indptr.shape={indptr.shape}")
    if reorder not in (0, 1, 2, 3):
        raise ValueError(f"reorder={reorder!r} not valid, must be one of [1, 2, 3, 4]")


def _host_solve(data, indices, indptr, b, transpose):
    import scipy.sparse
    import scipy.sparse.linalg

    data, indices, indptr, b = (np.asarray(v) for v in (data, indices, indptr, b))
    n = b.size
    a = scipy.sparse.csr_matrix((data, indices, indptr), shape=(n, n))
    if transpose:
        a = a.T
    # (SciPy's SuperLU wants CSC; a singular matrix gives NaNs and a
    # MatrixRankWarning, as JAX's CPU solve.)
    return np.asarray(scipy.sparse.linalg.spsolve(a.tocsc(), b)).astype(b.dtype).reshape(b.shape)


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
    """x with A x = b, for the `(n, n)` CSR matrix A given by `data`,
    `indices` and `indptr` and a vector `b` of size n: a sparse direct
    solve (SciPy's on the host). `tol` and `reorder` are cuSOLVER's
    options in JAX, accepted and checked here."""
    data, indices, indptr, b = (jnp.asarray(v) for v in (data, indices, indptr, b))
    _check_csr_system(data, indices, indptr, b, reorder)
    del tol
    n = b.shape[0]
    nnz = data.shape[0]
    # The row of each stored value (padding past indptr[-1] gets row n,
    # which segment_sum drops).
    rows = jnp.searchsorted(indptr[1:], jnp.arange(nnz, dtype=indptr.dtype), side="right")

    def matvec(x):
        return segment_sum(data * x[indices], rows, num_segments=n)

    def solver(transpose):
        def solve(_matvec, rhs):
            return pure_callback(
                functools.partial(_host_solve, transpose=transpose),
                core.ShapeDtypeStruct(rhs.shape, rhs.dtype), data, indices, indptr, rhs,
                vmap_method="sequential")
        return solve

    return custom_linear_solve(matvec, b, solver(False), solver(True))


# --------------------------------------------------------- lobpcg_standard

def _check_operator(A, X):
    # (JAX's checks and texts.)
    n, k = X.shape
    if k == 0:
        raise ValueError(f"must have search dim > 0, got {k}")
    if k * 5 >= n:
        raise ValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})")
    out = A(jnp.zeros((n, 1), X.dtype))
    if out.dtype != X.dtype:
        raise ValueError(f"A, X must have same dtypes (were {out.dtype}, {X.dtype})")
    if out.shape != (n, 1):
        raise ValueError(f"A must be ({n}, {n}) matrix A, got output {out.shape}")


def _dot(a, b):
    return jnp.matmul(a, b, precision="highest")


def _orthonormal_columns(U):
    """U's columns made orthonormal by the eigenvectors of its Gram matrix
    (Stathopoulos and Wu's SVQB), twice; directions whose Gram eigenvalue
    is at rounding level become zero columns instead of noise."""
    eps = jnp.finfo(U.dtype).eps
    for _ in range(2):
        norms = jnp_linalg.norm(U, axis=0)
        U = U / jnp.where(norms > 0, norms, 1)
        d, V = jnp_linalg.eigh(_dot(U.T, U))
        keep = d > eps * U.shape[1] * jnp.max(d)
        U = _dot(U, V) * jnp.where(keep, rsqrt(jnp.where(keep, d, 1)), 0)
    return U


def _orthogonal_to(basis, U):
    """U's columns orthonormal and orthogonal to `basis` (orthonormal, zero
    columns allowed); a column that loses most of its norm to the
    projection is dropped (zero), so that rounding does not bring
    `basis` back into the search space."""
    for _ in range(2):
        U = U - _dot(basis, _dot(basis.T, U))
    U = _orthonormal_columns(U)
    for _ in range(2):
        U = U - _dot(basis, _dot(basis.T, U))
    norms = jnp_linalg.norm(U, axis=0)
    return U * (norms > 0.9).astype(U.dtype)


def _top_ritz_pairs(A, S, k):
    """The k largest Ritz values of A on the span of S (orthonormal, zero
    columns allowed) and their coefficient vectors, largest first. Zero
    columns get a Ritz value below every real one, so they are never
    chosen."""
    AS = A(S)
    H = _dot(S.T, AS)
    H = (H + H.T) / 2
    empty = jnp_linalg.norm(S, axis=0) == 0
    floor = -2 * (jnp.max(jnp.abs(H)) + 1)
    H = H + jnp.diag(jnp.where(empty, floor, 0).astype(H.dtype))
    w, V = jnp_linalg.eigh(H)
    return w[::-1][:k], V[:, ::-1][:, :k]


def _lobpcg(A, X, m, tol):
    n, k = X.shape
    X = _orthonormal_columns(X)
    theta, C = _top_ritz_pairs(A, X, k)
    X = _dot(X, C)
    AX = A(X)
    P = jnp.zeros_like(X)

    def residuals(X, AX, theta):
        R = AX - X * theta
        # Converged: the residual within what rounding in computing it
        # could give (JAX's test: |A x - t x| < tol 10 n (|A x| + t)).
        bound = tol * 10 * n * (jnp_linalg.norm(AX, axis=0) + theta)
        return R, jnp.sum(jnp_linalg.norm(R, axis=0) < bound)

    R, done = residuals(X, AX, theta)

    def cond(state):
        i, _, _, _, _, done = state
        return (i < m) & (done < k)

    def body(state):
        i, X, P, R, theta, _ = state
        # The search space: the current vectors, the previous direction
        # and the residuals, orthonormal (the direction and residuals
        # against what precedes them).
        P = _orthogonal_to(X, P)
        R = _orthogonal_to(jnp.concatenate([X, P], axis=1), R)
        S = jnp.concatenate([X, P, R], axis=1)
        theta, C = _top_ritz_pairs(A, S, k)
        X_new = _dot(S, C)
        # The new direction: the part of the step outside the old vectors.
        P = _dot(S[:, k:], C[k:])
        AX = A(X_new)
        R, done = residuals(X_new, AX, theta)
        return i + 1, X_new, P, R, theta, done

    i, X, _, _, theta, _ = while_loop(
        cond, body, (jnp.int32(0), X, P, R, theta, done))
    return theta, X, i


@functools.lru_cache(maxsize=32)
def _jitted_callable(A, m):
    return jit(lambda X, tol: _lobpcg(A, X, m, tol))


@functools.partial(jit, static_argnames=("m",))
def _lobpcg_matrix(A, X, m, tol):
    return _lobpcg(lambda v: _dot(A, v), X, m, tol)


def lobpcg_standard(A, X, m=100, tol=None):
    """The top k eigenvalues and eigenvectors of the symmetric (Hermitian)
    `(n, n)` matrix `A` (or the callable giving its action on `(n, k)`
    blocks), by LOBPCG from the `(n, k)` initial directions `X`
    (independent, not necessarily orthogonal; `5 k < n`), at most `m`
    iterations; an eigenpair has converged when its residual is below
    `tol * 10 * n * (|A v| + lambda)` (`tol` the dtype's epsilon by
    default). Returns `(theta, U, i)`: the eigenvalues, largest first, the
    eigenvectors as columns, and the iterations run."""
    X = jnp.asarray(X)
    matrix = isinstance(A, (core.Value, np.ndarray))
    if matrix:
        A = jnp.asarray(A)
        _check_operator(lambda v: _dot(A, v), X)
    else:
        if not callable(A):
            raise TypeError(f"lobpcg_standard: A must be an array or a callable, got {A!r}")
        _check_operator(A, X)
    tol = jnp.asarray(jnp.finfo(X.dtype).eps if tol is None else tol, X.dtype)
    if matrix:
        return _lobpcg_matrix(A, X, m, tol)
    try:
        run = _jitted_callable(A, m)
    except TypeError:  # (an unhashable callable: traced anew)
        run = jit(lambda X, tol: _lobpcg(A, X, m, tol))
    return run(X, tol)
