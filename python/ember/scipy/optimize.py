"""`jax.scipy.optimize`: `minimize` (BFGS, and JAX's experimental L-BFGS) and
`OptimizeResults`, with JAX's names, signature, options and result fields.

Both methods are quasi-Newton iterations over `ember.value_and_grad(fun)`
with a line search for a step meeting the strong Wolfe conditions (Nocedal &
Wright, "Numerical Optimization", algorithms 3.5 and 3.6: a bracketing phase
that doubles the step, then a zoom taking safeguarded cubic, quadratic or
bisection steps). Iterations and line search are one `lax.while_loop` that
evaluates the function and its gradient once per pass (so `nfev == njev`, as
in JAX), and `minimize` traces under `ember.jit` and `ember.vmap`.

`status` (as JAX documents it): 0 converged (the gradient's `norm` below
`gtol`), 1 the iteration limit was reached, 3 the zoom found no step meeting
the Wolfe conditions, 4 the search direction is not a descent direction (for
example at a saddle point), 5 the bracketing phase used up its
`line_search_maxiter` steps. Where the line search fails, the iteration still
moves to the best point it found with sufficient decrease (if any) and stops
there; `hess_inv` is the estimate from the last successful step.

Derivatives (forward and reverse mode) of `x` and `fun` are implicit: at the
result, grad f(x*) = 0 gives dx* = -H^-1 d(grad f) with H the exact Hessian
(`ember.hessian`) and dfun = the partial derivative of f; the iterations are
never differentiated, and the other fields have no derivatives. (JAX 0.10.2
differentiates the iterations in forward mode and refuses reverse mode.)
"""

from typing import Any, NamedTuple

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax, tree_util

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """Object holding optimization results (JAX's fields).

    x: final solution; success: True if the optimization succeeded; status:
    solver-specific return code (BFGS: 0 converged, 1 max iterations, 3 zoom
    failed, 4 saddle point / no descent direction, 5 max line-search
    iterations; L-BFGS: see `minimize`); fun: final function value; jac:
    final gradient; hess_inv: final inverse-Hessian estimate (None for
    L-BFGS); nfev, njev: numbers of function and gradient evaluations; nit:
    number of iterations.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _real_dot(a, b):
    """Re(sum(a * b)) for real vectors: the slope along a direction."""
    return jnp.real(jnp.sum(a * b))


def _norm(g, ord):
    return jnp.linalg.norm(g, ord=ord)


def _safe_norm2(g):
    """The 2-norm, with a finite derivative at 0."""
    sq = jnp.sum(jnp.real(g * jnp.conj(g)))
    return jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1)), 0)


def _select(pred, new, old):
    return tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), new, old)


# --------------------------------------------------------------------------
# Strong Wolfe line search, one trial per step
# --------------------------------------------------------------------------

_BRACKET, _ZOOM, _DONE = 0, 1, 2
# Line-search outcomes (the BFGS status codes JAX documents).
_OK, _ZOOM_FAILED, _NO_DESCENT, _BRACKET_EXHAUSTED = 0, 3, 4, 5


def _cubic_min(a, fa, da, b, fb, c, fc):
    """The minimizer of the cubic through (a, fa) with slope da, (b, fb) and
    (c, fc), and whether it exists (finite, real)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    ok = denom != 0
    denom = jnp.where(ok, denom, 1)
    rb = fb - fa - da * db
    rc = fc - fa - da * dc
    A = (dc * dc * rb - db * db * rc) / denom
    B = (-dc * dc * dc * rb + db * db * db * rc) / denom
    radical = B * B - 3 * A * da
    ok = ok & (A != 0) & (radical >= 0)
    A_safe = jnp.where(A != 0, A, 1)
    root = jnp.where(radical > 0, jnp.sqrt(jnp.where(radical > 0, radical, 1)), 0)
    xmin = a + (-B + root) / (3 * A_safe)
    return xmin, ok & jnp.isfinite(xmin)


def _quad_min(a, fa, da, b, fb):
    """The minimizer of the quadratic through (a, fa) with slope da and
    (b, fb), and whether it is finite."""
    db = b - a
    den = db * db
    curv = (fb - fa - da * db) / jnp.where(den != 0, den, 1)
    ok = (den != 0) & (curv != 0)
    xmin = a - da / (2 * jnp.where(curv != 0, curv, 1))
    return xmin, ok & jnp.isfinite(xmin)


def _ls_start(f0, g0, d0, old_f, real):
    """A line search from a point with value f0, gradient g0 and slope d0
    along the direction. The first trial is 1, or (given the previous
    value old_f) the step repeating the last decrease to first order, at
    most 1."""
    old_known = jnp.isfinite(old_f)
    guess = 2.02 * (f0 - jnp.where(old_known, old_f, f0)) / jnp.where(d0 != 0, d0, 1)
    use_guess = old_known & (d0 != 0) & jnp.isfinite(guess)
    alpha1 = jnp.where(use_guess, jnp.minimum(1.0, guess), 1.0)
    alpha1 = jnp.where(alpha1 < 0, 1.0, alpha1).astype(real)
    descent = d0 < 0
    zero = jnp.zeros((), real)
    return dict(
        phase=jnp.where(descent, _BRACKET, _DONE), failed=~descent,
        status=jnp.where(descent, _OK, _NO_DESCENT), i=jnp.asarray(0), j=jnp.asarray(0),
        trial=alpha1, a_prev=zero, f_prev=f0, d_prev=d0,
        a_lo=zero, f_lo=f0, d_lo=d0, a_hi=zero, f_hi=f0, d_hi=d0, a_rec=zero, f_rec=f0,
        a_star=zero, f_star=f0, g_star=g0, a_best=zero, f_best=f0, g_best=g0)


def _ls_trial(s):
    """The step to evaluate next: the bracketing trial, or in the zoom a
    cubic step (from the second zoom step), else a quadratic one, else the
    midpoint, each kept away from the interval's ends."""
    lo, hi = s["a_lo"], s["a_hi"]
    width = jnp.abs(hi - lo)
    left, right = jnp.minimum(lo, hi), jnp.maximum(lo, hi)
    cub, cub_ok = _cubic_min(lo, s["f_lo"], s["d_lo"], hi, s["f_hi"], s["a_rec"], s["f_rec"])
    cub_ok = cub_ok & (s["j"] > 0) & (cub <= right - 0.2 * width) & (cub >= left + 0.2 * width)
    quad, quad_ok = _quad_min(lo, s["f_lo"], s["d_lo"], hi, s["f_hi"])
    quad_ok = quad_ok & (quad <= right - 0.1 * width) & (quad >= left + 0.1 * width)
    zoom = jnp.where(cub_ok, cub, jnp.where(quad_ok, quad, lo + 0.5 * (hi - lo)))
    return jnp.where(s["phase"] == _BRACKET, s["trial"], zoom)


def _ls_update(s, a, f, g, d, f0, d0, maxiter, c1=1e-4, c2=0.9):
    """The line search after evaluating the trial `a` (value f, gradient g,
    slope d)."""
    s = dict(s)
    bracketing = s["phase"] == _BRACKET

    def armijo_fails(a, f):
        return (f > f0 + c1 * a * d0) | ~jnp.isfinite(f)

    curvature_ok = jnp.abs(d) <= -c2 * d0
    # Bracketing: the trial brackets a Wolfe point (zoom), meets the
    # conditions itself, or the step doubles.
    too_far = armijo_fails(a, f) | ((f >= s["f_prev"]) & (s["i"] > 0))
    b_done = ~too_far & curvature_ok
    b_back = ~too_far & ~curvature_ok & (d >= 0)
    b_exhausted = ~too_far & ~curvature_ok & (d < 0) & (s["i"] + 1 >= maxiter)
    # Zoom: the trial replaces an end of [lo, hi].
    z_high = armijo_fails(a, f) | (f >= s["f_lo"])
    z_done = ~z_high & curvature_ok
    z_flip = ~z_high & ~curvature_ok & (d * (s["a_hi"] - s["a_lo"]) >= 0)
    z_lo = ~z_high & ~curvature_ok
    z_exhausted = ~z_done & (s["j"] + 1 > maxiter)

    def pick(b_val, z_val):
        return jnp.where(bracketing, b_val, z_val)

    # The point dropped from the interval: the cubic's third point (alpha
    # 0 entering the zoom).
    from_hi = z_high | z_flip
    a_rec = pick(jnp.zeros_like(a), jnp.where(from_hi, s["a_hi"], s["a_lo"]))
    f_rec = pick(f0, jnp.where(from_hi, s["f_hi"], s["f_lo"]))
    trial = {"a": a, "f": f, "d": d}
    for k in ("a", "f", "d"):
        t_val, lo, hi, prev = trial[k], s[k + "_lo"], s[k + "_hi"], s[k + "_prev"]
        s[k + "_lo"] = pick(jnp.where(b_back, t_val, prev), jnp.where(z_lo, t_val, lo))
        s[k + "_hi"] = pick(jnp.where(b_back, prev, t_val),
                            jnp.where(z_high, t_val, jnp.where(z_flip, lo, hi)))
    s["a_rec"], s["f_rec"] = a_rec, f_rec

    done = pick(b_done, z_done)
    failed = pick(b_exhausted, z_exhausted)
    s["status"] = jnp.where(failed, pick(_BRACKET_EXHAUSTED, _ZOOM_FAILED), s["status"])
    s["failed"] = failed
    to_zoom = bracketing & (too_far | b_back)
    s["phase"] = jnp.where(done | failed, _DONE, jnp.where(to_zoom, _ZOOM, s["phase"]))
    s["j"] = jnp.where(bracketing, 0, s["j"] + 1)
    s["i"] = s["i"] + jnp.where(bracketing, 1, 0)
    s["a_prev"] = jnp.where(bracketing, a, s["a_prev"])
    s["f_prev"] = jnp.where(bracketing, f, s["f_prev"])
    s["d_prev"] = jnp.where(bracketing, d, s["d_prev"])
    s["trial"] = jnp.where(bracketing, 2 * a, s["trial"])
    s["a_star"] = jnp.where(done, a, s["a_star"])
    s["f_star"] = jnp.where(done, f, s["f_star"])
    s["g_star"] = jnp.where(done, g, s["g_star"])
    better = ~armijo_fails(a, f) & (f < s["f_best"])
    s["a_best"] = jnp.where(better, a, s["a_best"])
    s["f_best"] = jnp.where(better, f, s["f_best"])
    s["g_best"] = jnp.where(better, g, s["g_best"])
    return s


def _ls_result(s):
    """(alpha, f, g): the Wolfe point, or after a failure the best point
    with sufficient decrease (alpha 0 where there is none)."""
    failed = s["failed"]
    return (jnp.where(failed, s["a_best"], s["a_star"]),
            jnp.where(failed, s["f_best"], s["f_star"]),
            jnp.where(failed, s["g_best"], s["g_star"]))


# --------------------------------------------------------------------------
# The quasi-Newton driver
# --------------------------------------------------------------------------


def _quasi_newton(fun, x0, *, memory, direction, update, maxiter, norm, gtol, ls_maxiter,
                  use_previous_value, extra_stop=None):
    """Iterates x <- x + alpha p, p = direction(memory, g), alpha from the
    line search, memory <- update(memory, s, y) after each successful search;
    one while_loop pass per evaluation of `fun`.

    Returns the final state: x, f, g, memory, k (steps taken), nfev,
    converged, failed (a line search failed), ls_status, stop (the code
    `extra_stop(state, progress)` gave, 0 for none)."""
    dtype = x0.dtype
    real = jnp.real(jnp.zeros((), dtype)).dtype
    vg = ember.value_and_grad(fun)
    f0, g0 = vg(x0)
    f0 = jnp.asarray(f0).astype(real)
    zero = jnp.zeros((), real)
    inf = jnp.asarray(np.inf, real)
    ls0 = _ls_start(f0, g0, zero, inf, real)
    init = dict(
        x=x0, f=f0, g=g0, mem=memory, k=jnp.asarray(0), nfev=jnp.asarray(1),
        converged=_norm(g0, norm) < gtol, failed=jnp.asarray(False),
        ls_status=jnp.asarray(_OK), stop=jnp.asarray(0),
        old_f=(f0 + _safe_norm2(g0) / 2) if use_previous_value else inf,
        fresh=jnp.asarray(True), p=jnp.zeros_like(x0), d0=zero, ls=ls0)

    def cond(s):
        return ~s["converged"] & ~s["failed"] & (s["k"] < maxiter) & (s["stop"] == 0)

    def body(s):
        s = dict(s)
        fresh = s["fresh"]
        # A new line search along a new direction, or the current one.
        p_new = direction(s["mem"], s["g"]).astype(dtype)
        d_new = _real_dot(s["g"], p_new).astype(real)
        p = jnp.where(fresh, p_new, s["p"])
        d0 = jnp.where(fresh, d_new, s["d0"])
        ls = _select(fresh, _ls_start(s["f"], s["g"], d_new, s["old_f"], real), s["ls"])
        active = ls["phase"] != _DONE
        a = _ls_trial(ls)
        f, g = vg(s["x"] + a.astype(dtype) * p)
        f = jnp.asarray(f).astype(real)
        d = _real_dot(g, p).astype(real)
        ls = _select(active, _ls_update(ls, a, f, g, d, s["f"], d0, ls_maxiter), ls)
        s["nfev"] = s["nfev"] + jnp.where(active, 1, 0)
        finished = ls["phase"] == _DONE

        # A finished search: take the step, update the memory.
        alpha, f_new, g_new = _ls_result(ls)
        ok = ~ls["failed"]
        moved = alpha > 0
        step = alpha.astype(dtype) * p
        y = g_new - s["g"]
        mem = update(s["mem"], step, y)
        progress = jnp.where(moved, s["f"] - f_new, 0)
        new = dict(s)
        new["k"] = s["k"] + jnp.where(moved, 1, 0)
        if use_previous_value:
            new["old_f"] = jnp.where(moved, s["f"], s["old_f"])
        new["x"] = jnp.where(moved, s["x"] + step, s["x"])
        new["f"] = jnp.where(moved, f_new, s["f"])
        new["g"] = jnp.where(moved, g_new, s["g"])
        new["mem"] = _select(ok, mem, s["mem"])
        new["failed"] = ls["failed"]
        new["ls_status"] = ls["status"]
        new["converged"] = moved & (_norm(g_new, norm) < gtol)
        if extra_stop is not None:
            new["stop"] = jnp.asarray(extra_stop(new, progress))
        s = _select(finished, new, s)
        s["fresh"] = finished
        s["p"], s["d0"], s["ls"] = p, d0, ls
        return s

    return lax.while_loop(cond, body, init)


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """BFGS (Nocedal & Wright algorithm 6.1); the inverse Hessian estimate
    starts at the identity."""
    n = x0.shape[0]
    if maxiter is None:
        maxiter = 200 * n
    dtype = x0.dtype
    eye = jnp.eye(n, dtype=dtype)

    def direction(H, g):
        return -(H @ g)

    def update(H, step, y):
        curv = _real_dot(y, step)
        rho = jnp.where(curv == 0, 1000.0, 1 / jnp.where(curv == 0, 1, curv)).astype(dtype)
        left = eye - rho * jnp.outer(step, y)
        right = eye - rho * jnp.outer(y, step)
        return left @ H @ right + rho * jnp.outer(step, step)

    s = _quasi_newton(fun, x0, memory=eye, direction=direction, update=update,
                      maxiter=maxiter, norm=norm, gtol=gtol, ls_maxiter=line_search_maxiter,
                      use_previous_value=True)
    status = jnp.where(s["converged"], 0, jnp.where(
        s["failed"], s["ls_status"], jnp.where(s["k"] >= maxiter, 1, -1)))
    return OptimizeResults(x=s["x"], success=s["converged"] & ~s["failed"], status=status,
                           fun=s["f"], jac=s["g"], hess_inv=s["mem"], nfev=s["nfev"],
                           njev=s["nfev"], nit=s["k"])


def _minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                    gtol=1e-5, maxfun=None, maxgrad=None, maxls=20):
    """L-BFGS (Nocedal & Wright algorithm 7.5: the two-loop recursion over
    the last `maxcor` steps, initial scaling s.y / y.y). Complex `x0` is
    optimized as its real and imaginary parts.

    status: 0 converged, 1 max iterations, 2 max function evaluations, 3 max
    gradient evaluations, 4 insufficient progress (decrease below `ftol`),
    5 line search failed. As in JAX, the limits `maxiter`, `maxfun` and
    `maxgrad` stop the iterations once exceeded."""
    if jnp.iscomplexobj(x0):
        n = x0.shape[0]

        def real_fun(v):
            return fun(lax.complex(v[:n], v[n:]))

        r = _minimize_lbfgs(real_fun, jnp.concatenate([jnp.real(x0), jnp.imag(x0)]),
                            maxiter=maxiter, norm=norm, maxcor=maxcor, ftol=ftol, gtol=gtol,
                            maxfun=maxfun, maxgrad=maxgrad, maxls=maxls)
        # The gradient in JAX's convention for a real function of complex z.
        return r._replace(x=lax.complex(r.x[:n], r.x[n:]),
                          jac=lax.complex(r.jac[:n], -r.jac[n:]))

    def limit(v):
        return np.inf if v is None else v

    maxiter, maxfun, maxgrad = limit(maxiter), limit(maxfun), limit(maxgrad)
    n = x0.shape[0]
    dtype = x0.dtype
    memory = dict(S=jnp.zeros((maxcor, n), dtype), Y=jnp.zeros((maxcor, n), dtype),
                  rho=jnp.zeros((maxcor,), dtype), gamma=jnp.ones((), dtype))

    def direction(m, g):
        # Newest pair last; pairs never filled have rho = 0 and drop out.
        q, alphas = g, [None] * maxcor
        for i in reversed(range(maxcor)):
            alphas[i] = m["rho"][i] * _real_dot(m["S"][i], q)
            q = q - alphas[i] * m["Y"][i]
        r = m["gamma"] * q
        for i in range(maxcor):
            beta = m["rho"][i] * _real_dot(m["Y"][i], r)
            r = r + (alphas[i] - beta) * m["S"][i]
        return -r

    def update(m, step, y):
        sy = _real_dot(step, y)
        yy = _real_dot(y, y)
        rho = jnp.where(sy == 0, 0, 1 / jnp.where(sy == 0, 1, sy)).astype(dtype)
        gamma = jnp.where(yy == 0, 1, sy / jnp.where(yy == 0, 1, yy)).astype(dtype)
        return dict(S=jnp.concatenate([m["S"][1:], step[None]]),
                    Y=jnp.concatenate([m["Y"][1:], y[None]]),
                    rho=jnp.concatenate([m["rho"][1:], rho[None]]), gamma=gamma)

    def extra_stop(s, progress):
        # As JAX's: a limit stops the iterations once exceeded (so up to
        # maxiter + 1 steps).
        code = jnp.where(s["failed"], 5, jnp.where(
            s["k"] > maxiter, 1, jnp.where(
                s["nfev"] > maxfun, 2, jnp.where(
                    s["nfev"] > maxgrad, 3, jnp.where(progress < ftol, 4, 0)))))
        return jnp.where(s["converged"], 0, code)

    s = _quasi_newton(fun, x0, memory=memory, direction=direction, update=update,
                      maxiter=np.inf, norm=norm, gtol=gtol, ls_maxiter=maxls,
                      use_previous_value=False, extra_stop=extra_stop)
    return OptimizeResults(x=s["x"], success=s["converged"], status=s["stop"], fun=s["f"],
                           jac=s["g"], hess_inv=None, nfev=s["nfev"], njev=s["nfev"],
                           nit=s["k"])


# --------------------------------------------------------------------------
# Implicit derivatives of the result
# --------------------------------------------------------------------------


def _with_implicit_derivatives(fun, r):
    """`r` with the implicit derivatives of `x` and `fun` (module docstring)
    and none of the other fields; the values are `r`'s."""
    sg = lax.stop_gradient
    x = sg(r.x)
    f, g = ember.value_and_grad(fun)(x)

    @ember.custom_jvp
    def newton_step(g):
        return jnp.zeros_like(g)

    @newton_step.defjvp
    def _(primals, tangents):
        H = ember.hessian(fun)(x)
        return jnp.zeros_like(primals[0]), -jnp.linalg.solve(H, tangents[0])

    return r._replace(
        x=x + newton_step(g), fun=sg(r.fun) + (f - sg(f)).astype(r.fun.dtype),
        jac=sg(r.jac), hess_inv=None if r.hess_inv is None else sg(r.hess_inv),
        success=sg(r.success), status=sg(r.status), nfev=sg(r.nfev), njev=sg(r.njev),
        nit=sg(r.nit))


# --------------------------------------------------------------------------
# minimize
# --------------------------------------------------------------------------


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
    """Minimization of a scalar function of one or more variables (JAX's
    `jax.scipy.optimize.minimize`).

    fun(x, *args) -> scalar, with `x` a 1-D array; gradients come from
    `ember.value_and_grad`. `method` is required (case-insensitive): "BFGS"
    (options `maxiter` (default 200 * n), `norm` (inf), `gtol` (1e-5),
    `line_search_maxiter` (10)) or "l-bfgs-experimental-do-not-rely-on-this"
    (options `maxiter`, `norm`, `maxcor` (10), `ftol`, `gtol`, `maxfun`,
    `maxgrad`, `maxls` (20); status 0 converged, 1 max iterations, 2 max
    function evaluations, 3 max gradient evaluations, 4 insufficient
    progress, 5 line search failed). `tol` is accepted and, as in JAX,
    unused: pass `gtol` in `options`. Works under `ember.jit`; returns an
    `OptimizeResults`."""
    if options is None:
        options = {}
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to ember.scipy.optimize.minimize must be a tuple, "
                        f"got {args}")
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise TypeError(f"ember.scipy.optimize.minimize: x0 must be a 1-D array, got shape "
                        f"{x0.shape}")

    def fun_with_args(x):
        return fun(x, *args)

    name = method.lower()
    if name == "bfgs":
        if jnp.issubdtype(x0.dtype, jnp.complexfloating):
            raise NotImplementedError(
                "ember.scipy.optimize.minimize(method='BFGS') does not support complex x0 "
                "(JAX's BFGS does not handle it correctly either); use method="
                "'l-bfgs-experimental-do-not-rely-on-this', or optimize the real and "
                "imaginary parts as a real vector")
        if not jnp.issubdtype(x0.dtype, jnp.floating):
            raise TypeError(f"minimize(method='BFGS') requires a floating-point x0, got "
                            f"{x0.dtype}")
        return _with_implicit_derivatives(fun_with_args,
                                          _minimize_bfgs(fun_with_args, x0, **options))
    if name == "l-bfgs-experimental-do-not-rely-on-this":
        if not jnp.issubdtype(x0.dtype, jnp.inexact):
            raise TypeError(f"minimize(method={method!r}) requires a floating-point or "
                            f"complex x0, got {x0.dtype}")
        r = _minimize_lbfgs(fun_with_args, x0, **options)
        if jnp.issubdtype(x0.dtype, jnp.complexfloating):
            return r
        return _with_implicit_derivatives(fun_with_args, r)
    raise ValueError(f"Method {method} not recognized")
