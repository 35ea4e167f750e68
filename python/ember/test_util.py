"""`jax.test_util`: `check_grads`, which compares derivatives from `jvp`
and `vjp` with central finite differences, to any order."""

import numpy as np

import ember
from ember import tree_util

# Default tolerances by dtype (JAX's defaults for gradient checks).
_TOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 2e-2,
        np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 2e-2,
        np.dtype(np.complex128): 1e-5}
_EPS = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
        np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3,
        np.dtype(np.complex128): 1e-5}


def _tol(xs, given):
    if given is not None:
        return given
    return max([_TOL.get(np.dtype(np.asarray(x).dtype), 1e-5) for x in xs] or [1e-5])


def _eps(xs, given):
    if given is not None:
        return given
    return max([_EPS.get(np.dtype(np.asarray(x).dtype), 1e-5) for x in xs] or [1e-5])


def _flat(tree):
    return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def _random_like(tree, rng):
    """Random values of the shapes and dtypes of `tree` (which may be
    traced: only its types are read)."""
    def one(x):
        shape, dtype = np.shape(x), np.dtype(x.dtype)
        v = rng.standard_normal(shape)
        if np.issubdtype(dtype, np.complexfloating):
            v = v + 1j * rng.standard_normal(shape)
        return ember.numpy.asarray(v.astype(dtype))
    return tree_util.tree_map(one, tree)


def _axpy(a, t, x):
    return tree_util.tree_map(lambda ti, xi: xi + a * ti, t, x)


def _check_close(what, got, want, atol, rtol):
    for g, w in zip(_flat(got), _flat(want)):
        np.testing.assert_allclose(g.astype(np.complex128), w.astype(np.complex128),
                                   atol=atol, rtol=rtol, err_msg=what)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=None, err_msg=""):
    """`f_jvp(args, tangents)` against (f(x + eps t) - f(x - eps t)) / 2 eps."""
    rng = np.random.default_rng(0)
    leaves = _flat(args)
    atol, rtol, eps = _tol(leaves, atol), _tol(leaves, rtol), _eps(leaves, eps)
    tangent = _random_like(args, rng)
    out, out_dot = f_jvp(args, tangent)
    _check_close(f"{err_msg} primal", out, f(*args), atol, rtol)
    plus, minus = f(*_axpy(eps, tangent, args)), f(*_axpy(-eps, tangent, args))
    numeric = tree_util.tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps),
                                 plus, minus)
    _check_close(f"{err_msg} tangent", out_dot, numeric, atol, rtol)


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=None, err_msg=""):
    """Re <J t, ct> from finite differences against Re <t, conj(vjp(conj(ct)))>
    (JAX's projection, which holds for complex functions, holomorphic or not,
    under JAX's convention for complex cotangents)."""
    rng = np.random.default_rng(1)
    leaves = _flat(args)
    atol, rtol, eps = _tol(leaves, atol), _tol(leaves, rtol), _eps(leaves, eps)
    out, vjp_fun = f_vjp(*args)
    ct = _random_like(out, rng)
    tangent = _random_like(args, rng)
    plus, minus = f(*_axpy(eps, tangent, args)), f(*_axpy(-eps, tangent, args))
    jt = [(p - m) / (2 * eps) for p, m in zip(_flat(plus), _flat(minus))]
    lhs = sum(np.real(np.vdot(j, c)) for c, j in zip(_flat(ct), jt))
    ct_conj = tree_util.tree_map(lambda c: ember.numpy.conj(c), ct)
    back = [np.conj(g) for g in _flat(vjp_fun(ct_conj))]
    rhs = sum(np.real(np.vdot(t, g)) for g, t in zip(back, _flat(tangent)))
    np.testing.assert_allclose(rhs, lhs, atol=atol, rtol=rtol, err_msg=f"{err_msg} vjp")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Checks the derivatives of `f` at `args` up to `order` in forward
    ("fwd") and reverse ("rev") mode; raises AssertionError on a mismatch."""
    args = tuple(tree_util.tree_map(ember.numpy.asarray, tuple(args)))
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r}")

    def check(fun, k):
        if "fwd" in modes:
            check_jvp(fun, lambda a, t: ember.jvp(fun, a, t), args, atol, rtol, eps,
                      f"order {order - k + 1} fwd")
            if k > 1:
                def pushforward(*a):
                    t = tuple(_random_like(a, np.random.default_rng(2)))
                    return ember.jvp(fun, a, t)[1]
                check(pushforward, k - 1)
        if "rev" in modes:
            check_vjp(fun, lambda *a: ember.vjp(fun, *a), args, atol, rtol, eps,
                      f"order {order - k + 1} rev")
            if k > 1:
                def pullback(*a):
                    out, back = ember.vjp(fun, *a)
                    ct = _random_like(out, np.random.default_rng(3))
                    return back(ct)
                check(pullback, k - 1)

    check(f, order)
