"""`jax.experimental.ode.odeint` on Ember's machinery.

The algorithm is JAX's: Dormand-Prince 5(4) Runge-Kutta steps with adaptive
step size (Hairer, Norsett & Wanner's initial step selection), the solution at
each requested time interpolated by the 4th-order polynomial fitted to the
step that covers it, and a reverse-mode derivative by the adjoint method
(Appendix C of arXiv:1806.07366): a custom VJP that integrates the augmented
system (state, state cotangent, time cotangent, argument cotangents)
backwards between consecutive requested times.
"""

import functools
import operator

import numpy as np

from . import ad, api, api_extras, control_flow, core, tree_util
from .flatten_util import ravel_pytree
from .numpy import lax_numpy as jnp

__all__ = ["odeint"]


# --------------------------------------------------------------------------
# Flattening the state


_ravel = ravel_pytree


def _ravel_first_arg(f, unravel):
    def raveled(y_flat, *args):
        return _ravel(f(unravel(y_flat), *args))[0]
    return raveled


# --------------------------------------------------------------------------
# Dormand-Prince steps


def _abs2(x):
    if jnp.iscomplexobj(x):
        return x.real ** 2 + x.imag ** 2
    return x ** 2


def _norm(x):
    return jnp.sqrt(jnp.sum(_abs2(x)))


def _polyval(p, x):
    y = jnp.zeros_like(p[0])
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def _promote_inexact(*xs):
    dtype = jnp.result_type(*xs)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(dtype, jnp.float32)
    return [jnp.asarray(x).astype(dtype) for x in xs]


def _interp_fit_dopri(y0, y1, k, dt):
    """The 4th-order polynomial through a step's results (coefficients,
    highest power first, in the step's relative time)."""
    dps_c_mid = jnp.array([
        6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
        -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
        -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2], dtype=y0.dtype)
    y_mid = y0 + dt.astype(y0.dtype) * jnp.dot(dps_c_mid, k)
    return jnp.stack(_fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def _fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
    dt = dt.astype(y0.dtype)
    a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
    b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
    c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
    d = dt * dy0
    e = y0
    return a, b, c, d, e


def _initial_step_size(fun, t0, y0, order, rtol, atol, f0):
    # E. Hairer, S. P. Norsett, G. Wanner, Solving Ordinary Differential
    # Equations I: Nonstiff Problems, Sec. II.4.
    y0, f0 = _promote_inexact(y0, f0)
    dtype = y0.dtype
    scale = atol + jnp.abs(y0) * rtol
    d0 = _norm(y0 / scale.astype(dtype))
    d1 = _norm(f0 / scale.astype(dtype))
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    y1 = y0 + h0.astype(dtype) * f0
    f1 = fun(y1, t0 + h0)
    d2 = _norm((f1 - f0) / scale.astype(dtype)) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15),
                   jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
    return jnp.minimum(100. * h0, h1)


_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0]
_BETA = [[1 / 5, 0, 0, 0, 0, 0, 0], [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_C_SOL = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERROR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085,
            125 / 192 - 451 / 720, -2187 / 6784 - -12231 / 42400,
            11 / 84 - 649 / 6300, -1. / 60.]


def _runge_kutta_step(func, y0, f0, t0, dt):
    """One Dormand-Prince step: (y1, f1, error estimate, the 7 stages)."""
    alpha = jnp.array(_ALPHA, dtype=dt.dtype)
    beta = jnp.array(_BETA, dtype=f0.dtype)
    c_sol = jnp.array(_C_SOL, dtype=f0.dtype)
    c_error = jnp.array(_C_ERROR, dtype=f0.dtype)

    def body_fun(i, k):
        ti = t0 + dt * alpha[i - 1]
        yi = y0 + dt.astype(f0.dtype) * jnp.dot(beta[i - 1, :], k)
        ft = func(yi, ti)
        return k.at[i, :].set(ft)

    k = jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
    k = control_flow.fori_loop(1, 7, body_fun, k)
    y1 = dt.astype(f0.dtype) * jnp.dot(c_sol, k) + y0
    y1_error = dt.astype(f0.dtype) * jnp.dot(c_error, k)
    f1 = k[-1]
    return y1, f1, y1_error, k


def _mean_error_ratio(error_estimate, rtol, atol, y0, y1):
    err_tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    err_ratio = error_estimate / err_tol.astype(error_estimate.dtype)
    return jnp.sqrt(jnp.mean(_abs2(err_ratio)))


def _optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0,
                       dfactor=0.2, order=5.0):
    dfactor = jnp.where(mean_error_ratio < 1, 1.0, dfactor)
    factor = jnp.minimum(ifactor,
                         jnp.maximum(mean_error_ratio ** (-1.0 / order) * safety, dfactor))
    return jnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def _clip_step(dt, hmax):
    return jnp.minimum(jnp.maximum(dt, 0.), hmax)


# --------------------------------------------------------------------------
# odeint


def _valid_arg(x):
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
        return True
    return isinstance(x, core.Value) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
    """Adaptive stepsize (Dormand-Prince) Runge-Kutta integration of
    `dy/dt = func(y, t, *args)` from `y0` (a pytree of arrays) at `t[0]`,
    returning the solution at each time in `t` (strictly increasing floats)
    with a new leading axis of length `len(t)`. Differentiable in reverse
    mode (adjoint method) with respect to `y0`, `t`, `args` and the values
    `func` closes over."""
    for arg in tree_util.tree_leaves(args):
        if not _valid_arg(arg):
            raise TypeError("The contents of odeint *args must be arrays or scalars, but got "
                            f"{arg}. (at {core.where()})")
    if not hasattr(t, "dtype"):
        t = jnp.asarray(t)
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}. (at {core.where()})")
    converted, consts = api_extras.closure_convert(func, y0, t[0], *args)
    if not consts:
        # Nothing differentiable is closed over: `func` itself (the converted
        # function is a call of a traced body, which `vmap` cannot batch).
        converted = _Plain(func)
    return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


class _Plain:
    """`func` as a static argument (hashed by identity)."""

    def __init__(self, func):
        self.func = func

    def __call__(self, *args):
        return self.func(*args)

    def __hash__(self):
        return hash(id(self.func))

    def __eq__(self, other):
        return isinstance(other, _Plain) and other.func is self.func


@functools.partial(api.jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    y0, unravel = _ravel(y0)
    func = _ravel_first_arg(func, unravel)
    out = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return unravel(out, lead=(out.shape[0],))


def _odeint_impl(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    def func_(y, t):
        return func(y, t, *args)

    def scan_fun(carry, target_t):
        def cond_fun(state):
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def body_fun(state):
            i, y, f, t, dt, last_t, interp_coeff = state
            next_y, next_f, next_y_error, k = _runge_kutta_step(func_, y, f, t, dt)
            next_t = t + dt
            error_ratio = _mean_error_ratio(next_y_error, rtol, atol, y, next_y)
            new_interp_coeff = _interp_fit_dopri(y, next_y, k, dt)
            dt = _clip_step(_optimal_step_size(dt, error_ratio), hmax)
            new = [i + 1, next_y, next_f, next_t, dt, t, new_interp_coeff]
            old = [i + 1, y, f, t, dt, last_t, interp_coeff]
            accept = error_ratio <= 1.
            return [jnp.where(accept, a, b) for a, b in zip(new, old)]

        state = control_flow.while_loop(cond_fun, body_fun,
                                        [jnp.zeros((), jnp.int32)] + list(carry))
        carry = state[1:]
        _, _, t, _, last_t, interp_coeff = carry
        relative_output_time = (target_t - last_t) / (t - last_t)
        y_target = _polyval(interp_coeff, relative_output_time.astype(interp_coeff.dtype))
        return carry, y_target

    f0 = func_(y0, ts[0])
    dt = _clip_step(_initial_step_size(func_, ts[0], y0, 4, rtol, atol, f0), hmax)
    interp_coeff = jnp.stack([y0] * 5)
    init_carry = [y0, f0, ts[0], dt, ts[0], interp_coeff]
    _, ys = control_flow.scan(scan_fun, init_carry, ts[1:])
    return jnp.concatenate((y0[None], ys))


_odeint = ad.custom_vjp(_odeint_impl, nondiff_argnums=(0, 1, 2, 3, 4))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
    ys, ts, args = res

    def aug_dynamics(augmented_state, t, *args):
        """The system augmented with the cotangents of y, t and args; `t` is
        negated time (the backward integration runs forward in -t)."""
        y, y_bar, *_ = augmented_state
        y_dot, vjpfun = ad.vjp(func, y, -t, *args)
        return (-y_dot, *vjpfun(y_bar))

    def scan_fun(carry, i):
        y_bar, t0_bar, args_bar = carry
        # the effect of moving the measurement time (real: it is a time)
        t_bar = jnp.real(jnp.dot(func(ys[i], ts[i], *args), g[i]))
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(
            aug_dynamics, (ys[i], y_bar, t0_bar, args_bar),
            jnp.stack([-ts[i], -ts[i - 1]]),
            *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
        y_bar, t0_bar, args_bar = tree_util.tree_map(
            operator.itemgetter(1), (y_bar, t0_bar, args_bar))
        y_bar = y_bar + g[i - 1]
        return (y_bar, t0_bar, args_bar), t_bar

    init_carry = (g[-1], jnp.zeros((), ts.dtype),
                  tree_util.tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = control_flow.scan(
        scan_fun, init_carry, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([jnp.reshape(t0_bar, (1,)).astype(ts.dtype),
                              rev_ts_bar[::-1].astype(ts.dtype)])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
