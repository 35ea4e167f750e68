"""`jax.scipy.sparse.linalg`: the Krylov solvers `cg`, `gmres` and `bicgstab`.

As in JAX, `A` (and the preconditioner `M`) is a square matrix, a function
computing the product `A(x)`, or an object with `__matmul__`; `b` and `x0`
may be pytrees of arrays (the operator maps trees of `b`'s structure to
trees of that structure). The solvers are `lax.while_loop`s, so they trace
under `ember.jit` and `ember.vmap`. Convergence is
`norm(residual) <= max(tol * norm(b), atol)` (for `gmres`, the
preconditioned residual `M(b - A x)`).

Reverse-mode derivatives are implicit, as JAX's (which uses
`lax.custom_linear_solve`): the solution is `x* + L(b - A(x*))` with `x*` the
solver's result under `stop_gradient` and `L` a `custom_vjp` map that is zero
in value and whose pullback is a solve with the transpose of `A`. So
gradients with respect to `b`, and to a matrix `A` or the arrays its function
closes over, are `A^-T` solves, accurate when those converge; the iterations
are never differentiated. Forward mode (`jvp`, `jacfwd`) is not supported
(Ember raises a TypeError, "can't apply forward-mode autodiff (jvp) to a
custom_vjp function"); JAX supports it.
"""

import functools

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax, tree_util

__all__ = ["bicgstab", "cg", "gmres"]


# --------------------------------------------------------------------------
# Operators and flat vectors
# --------------------------------------------------------------------------


def _normalize_matvec(f):
    """A function computing the product of the linear operator `f`."""
    if callable(f):
        return f
    if isinstance(f, np.ndarray) or (hasattr(f, "shape") and hasattr(f, "ndim")
                                     and hasattr(f, "dtype")):
        if f.ndim != 2 or f.shape[0] != f.shape[1]:
            raise ValueError(f"linear operator must be a square matrix, but has shape: "
                             f"{f.shape}")
        return functools.partial(jnp.matmul, f)
    if hasattr(f, "__matmul__"):
        if hasattr(f, "shape") and (len(f.shape) != 2 or f.shape[0] != f.shape[1]):
            raise ValueError(f"linear operator must be a square matrix, but has shape: "
                             f"{f.shape}")
        return f.__matmul__
    raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _identity(x):
    return x


class _Flat:
    """Ravels trees of `b`'s structure into one vector of their common dtype
    (and back), so the solvers work on vectors."""

    def __init__(self, b):
        leaves, self.tree = tree_util.tree_flatten(b)
        self.shapes = [x.shape for x in leaves]
        self.dtypes = [x.dtype for x in leaves]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.dtype = jnp.result_type(*self.dtypes) if leaves else jnp.result_type(float)

    def ravel(self, tree):
        leaves = tree_util.tree_leaves(tree)
        if not leaves:
            return jnp.zeros((0,), self.dtype)
        return jnp.concatenate([jnp.ravel(jnp.asarray(x)).astype(self.dtype) for x in leaves])

    def unravel(self, v):
        out, start = [], 0
        for shape, dt, n in zip(self.shapes, self.dtypes, self.sizes):
            out.append(v[start:start + n].reshape(shape).astype(dt))
            start += n
        return tree_util.tree_unflatten(self.tree, out)

    def op(self, f):
        return lambda v: self.ravel(f(self.unravel(v)))


def _vdot(a, b):
    """sum(conj(a) * b)."""
    return jnp.sum(jnp.conj(a) * b)


def _vdot_real(a, b):
    return jnp.real(_vdot(a, b))


def _norm(v):
    return jnp.sqrt(_vdot_real(v, v))


def _safe_div(a, b):
    return jnp.where(b == 0, jnp.zeros_like(a), a / jnp.where(b == 0, jnp.ones_like(b), b))


# --------------------------------------------------------------------------
# The solvers, on flat vectors
# --------------------------------------------------------------------------


def _cg_solve(A, b, x0, *, tol, atol, maxiter, M):
    bs = _vdot_real(b, b)
    atol2 = jnp.maximum(tol ** 2 * bs, atol ** 2)
    r0 = b - A(x0)
    z0 = M(r0)
    init = (x0, r0, _vdot_real(r0, z0).astype(b.dtype), z0, jnp.asarray(0))

    def cond(s):
        x, r, gamma, p, k = s
        return (_vdot_real(r, r) > atol2) & (k < maxiter)

    def body(s):
        x, r, gamma, p, k = s
        q = A(p)
        alpha = gamma / _vdot_real(p, q).astype(b.dtype)
        x = x + alpha * p
        r = r - alpha * q
        z = M(r)
        gamma_new = _vdot_real(r, z).astype(b.dtype)
        p = z + (gamma_new / gamma) * p
        return x, r, gamma_new, p, k + 1

    return lax.while_loop(cond, body, init)[0]


def _bicgstab_solve(A, b, x0, *, tol, atol, maxiter, M):
    bs = _vdot_real(b, b)
    atol2 = jnp.maximum(tol ** 2 * bs, atol ** 2)
    r0 = b - A(x0)
    one = jnp.ones((), b.dtype)
    zeros = jnp.zeros_like(b)
    # k < 0 flags a breakdown: -10 (rho == 0), -11 (omega or alpha == 0).
    init = (x0, r0, r0, one, one, one, zeros, zeros, jnp.asarray(0))

    def cond(s):
        x, r, rhat, alpha, omega, rho, p, v, k = s
        return (_vdot_real(r, r) > atol2) & (k < maxiter) & (k >= 0)

    def body(s):
        x, r, rhat, alpha, omega, rho, p, v, k = s
        rho_new = _vdot(rhat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        phat = M(p)
        v = A(phat)
        alpha = rho_new / _vdot(rhat, v)
        s_ = r - alpha * v
        early = _vdot_real(s_, s_) <= atol2
        shat = M(s_)
        t = A(shat)
        omega = _vdot(t, s_) / _vdot(t, t)
        x = jnp.where(early, x + alpha * phat, x + alpha * phat + omega * shat)
        r = jnp.where(early, s_, s_ - omega * t)
        k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = jnp.where(rho_new == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_new, p, v, k

    return lax.while_loop(cond, body, init)[0]


def _givens(a, b):
    """(c, s, r) with c real, [[c, s], [-conj(s), c]] @ [a, b] = [r, 0]."""
    absa = jnp.abs(a)
    r = jnp.sqrt(absa * absa + jnp.abs(b) ** 2)
    phase = jnp.where(absa == 0, jnp.ones_like(a), a / jnp.where(absa == 0, 1, absa))
    both_zero = r == 0
    r_safe = jnp.where(both_zero, 1, r)
    c = jnp.where(both_zero, 1, absa / r_safe)
    s = jnp.where(both_zero, 0, phase * jnp.conj(b) / r_safe)
    return c.astype(a.dtype), s.astype(a.dtype), (phase * r).astype(a.dtype)


def _gmres_cycle(A, M, b, x, ptol, restart, incremental):
    """One GMRES cycle from `x`: Arnoldi on M A (classical Gram-Schmidt,
    twice) from the preconditioned residual, its Hessenberg matrix reduced
    by Givens rotations as it grows, then x + V y for the least-squares y.
    With `incremental`, the cycle stops early once the residual estimate is
    within `ptol`."""
    n = b.shape[0]
    dtype = b.dtype
    r = M(b - A(x))
    beta = _norm(r)
    V = jnp.zeros((restart + 1, n), dtype).at[0].set(_safe_div(r, beta.astype(dtype)))
    R = jnp.zeros((restart, restart), dtype)
    cs = jnp.zeros((restart,), dtype)
    sn = jnp.zeros((restart,), dtype)
    g = jnp.zeros((restart + 1,), dtype).at[0].set(beta.astype(dtype))
    rows = jnp.arange(restart + 1)

    def cond(st):
        V, R, cs, sn, g, j = st
        going = j < restart
        if incremental:
            going = going & (jnp.abs(g[j]) > ptol)
        return going

    def body(st):
        V, R, cs, sn, g, j = st
        w = M(A(V[j]))
        mask = (rows <= j).astype(dtype)
        h = jnp.zeros((restart + 1,), dtype)
        for _ in range(2):
            c = mask * (jnp.conj(V) @ w)
            w = w - c @ V
            h = h + c
        hn = _norm(w)
        V = V.at[j + 1].set(_safe_div(w, hn.astype(dtype)))
        h = h.at[j + 1].set(hn.astype(dtype))

        # Apply the earlier rotations to the new column, then its own.
        def rotate(i, h):
            hi, hi1 = h[i], h[i + 1]
            return h.at[i].set(cs[i] * hi + sn[i] * hi1).at[i + 1].set(
                -jnp.conj(sn[i]) * hi + cs[i] * hi1)

        h = lax.fori_loop(0, j, rotate, h)
        c, s, top = _givens(h[j], h[j + 1])
        h = h.at[j].set(top).at[j + 1].set(0)
        cs, sn = cs.at[j].set(c), sn.at[j].set(s)
        gj = g[j]
        g = g.at[j].set(c * gj).at[j + 1].set(-jnp.conj(s) * gj)
        R = R.at[:, j].set(h[:restart])
        return V, R, cs, sn, g, j + 1

    V, R, cs, sn, g, m = lax.while_loop(cond, body, (V, R, cs, sn, g, jnp.asarray(0)))
    # Back substitution on the first m columns (a zero pivot, after a lucky
    # breakdown, contributes nothing).
    def back(k, y):
        i = restart - 1 - k
        used = i < m
        rest = jnp.sum(R[i] * y) - R[i, i] * y[i]
        yi = _safe_div(g[i] - rest, R[i, i])
        return y.at[i].set(jnp.where(used, yi, 0))

    y = lax.fori_loop(0, restart, back, jnp.zeros((restart,), dtype))
    return x + y @ V[:restart]


def _gmres_solve(A, b, x0, *, tol, atol, maxiter, M, restart, incremental):
    ptol = jnp.maximum(tol * _norm(b), atol)

    def cond(s):
        x, res, k = s
        return (res > ptol) & (k < maxiter)

    def body(s):
        x, res, k = s
        x = _gmres_cycle(A, M, b, x, ptol, restart, incremental)
        return x, _norm(M(b - A(x))), k + 1

    return lax.while_loop(cond, body, (x0, _norm(M(b - A(x0))), jnp.asarray(0)))[0]


# --------------------------------------------------------------------------
# Implicit differentiation
# --------------------------------------------------------------------------


def _transpose(f, x):
    """The transpose of the linear map `f` (a function of vectors like `x`)."""
    def ft(ct):
        _, pullback = ember.vjp(f, jnp.zeros_like(x))
        return pullback(ct)[0]
    return ft


def _with_implicit_derivatives(solve, A, M, b, x0, symmetric):
    """solve(A, M, b, x0) with JAX's linear-solve derivatives (see the
    module docstring)."""
    x = lax.stop_gradient(solve(A, M, lax.stop_gradient(b), lax.stop_gradient(x0)))

    @ember.custom_vjp
    def correction(r):
        return jnp.zeros_like(r)

    def fwd(r):
        return jnp.zeros_like(r), None

    def bwd(_, ct):
        if symmetric:
            return (solve(A, M, ct, jnp.zeros_like(ct)),)
        return (solve(_transpose(A, ct), _transpose(M, ct), ct, jnp.zeros_like(ct)),)

    correction.defvjp(fwd, bwd)
    return x + correction(b - A(x))


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def _isolve(name, solve, A, b, x0, *, tol, atol, maxiter, M, symmetric):
    if x0 is None:
        x0 = tree_util.tree_map(jnp.zeros_like, b)
    b, x0 = tree_util.tree_map(jnp.asarray, (b, x0))
    if tree_util.tree_structure(x0) != tree_util.tree_structure(b):
        raise ValueError(f"x0 and b must have matching tree structure: "
                         f"{tree_util.tree_structure(x0)} vs {tree_util.tree_structure(b)}")
    b_shapes = [x.shape for x in tree_util.tree_leaves(b)]
    x0_shapes = [x.shape for x in tree_util.tree_leaves(x0)]
    if b_shapes != x0_shapes:
        raise ValueError(f"arrays in x0 and b must have matching shapes: {x0_shapes} vs "
                         f"{b_shapes}")
    for leaf in tree_util.tree_leaves(b) + tree_util.tree_leaves(x0):
        if not jnp.issubdtype(leaf.dtype, jnp.inexact):
            raise TypeError(f"ember.scipy.sparse.linalg.{name} needs floating-point or complex "
                            f"b and x0, got {leaf.dtype}")
    size = sum(int(np.prod(s)) for s in b_shapes)
    if maxiter is None:
        maxiter = 10 * size  # as SciPy and JAX
    A = _normalize_matvec(A)
    M = _identity if M is None else _normalize_matvec(M)
    flat = _Flat(b)
    bv = flat.ravel(b)
    x0v = flat.ravel(x0).astype(bv.dtype)
    Av, Mv = flat.op(A), flat.op(M)

    def run(Aop, Mop, rhs, start):
        return solve(Aop, rhs, start, tol=tol, atol=atol, maxiter=maxiter, M=Mop)

    xv = _with_implicit_derivatives(run, Av, Mv, bv, x0v, symmetric)
    return flat.unravel(xv)


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve `A x = b` for Hermitian positive definite `A` by (preconditioned)
    conjugate gradients. Returns (x, None) (JAX's `info` placeholder).
    `maxiter` defaults to 10 * size(b)."""
    x = _isolve("cg", _cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                symmetric=True)
    return x, None


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve `A x = b` for a general `A` by (preconditioned) BiCGSTAB.
    Returns (x, None) (JAX's `info` placeholder). `maxiter` defaults to
    10 * size(b)."""
    x = _isolve("bicgstab", _bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter,
                M=M, symmetric=False)
    return x, None


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Solve `A x = b` by restarted GMRES, left-preconditioned by `M`.

    restart: the Krylov subspace size per cycle (at most size(b)); maxiter:
    the number of cycles (default 10 * size(b)); solve_method: "batched"
    builds the whole subspace each cycle, "incremental" stops a cycle once
    its residual estimate meets the tolerance. Returns (x, info), info 0, or
    -1 where x is NaN (as JAX)."""
    if solve_method not in ("incremental", "batched"):
        raise ValueError(f"invalid solve_method {solve_method}, must be either "
                         "'incremental' or 'batched'")
    size = sum(int(np.prod(jnp.shape(x))) for x in tree_util.tree_leaves(b))
    restart = max(1, min(int(restart), size))
    solve = functools.partial(_gmres_solve, restart=restart,
                              incremental=solve_method == "incremental")
    x = _isolve("gmres", solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                symmetric=False)
    leaves = tree_util.tree_leaves(x)
    total = sum(jnp.sum(jnp.real(jnp.conj(v) * v)) for v in leaves) if leaves else 0.0
    info = jnp.where(jnp.isnan(total), -1, 0)
    return x, info
