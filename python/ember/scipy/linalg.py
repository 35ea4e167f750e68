"""ember.scipy.linalg: Cholesky / triangular solves and thin wrappers over ember.numpy.linalg."""

import ember.numpy as jnp
from ember._src import lax_linalg
from ember._src.numpy import linalg as _la
from ember.numpy.linalg import det as det
from ember.numpy.linalg import eigh as eigh
from ember.numpy.linalg import inv as inv
from ember.numpy.linalg import pinv as pinv
from ember.numpy.linalg import svd as svd


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
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=True), b)
    return _la.solve(a, b)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    if pivoting:
        raise NotImplementedError("qr: pivoting is not supported")
    m = {"full": "complete", "economic": "reduced", "r": "r"}.get(mode)
    if m is None:
        raise ValueError(f"qr: unsupported mode {mode!r}")
    if mode == "r":
        return (_la.qr(a, mode="complete")[1],)
    return _la.qr(a, mode=m)
