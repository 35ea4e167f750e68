"""`jax.scipy.integrate`: the composite trapezoidal rule."""

import ember.numpy as jnp

__all__ = ["trapezoid"]


def _inexact_dtype(*args):
    dt = jnp.result_type(*args)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.result_type(float)
    return dt


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integrate `y` along `axis` with the composite trapezoidal rule, at the
    sample points `x` (1-D along `axis`, or broadcastable to `y`) or at even
    spacing `dx`. Integer and boolean inputs integrate as floats."""
    y = jnp.asarray(y)
    if x is None:
        dt = _inexact_dtype(y, dx)
        y = jnp.moveaxis(y.astype(dt), axis, -1)
        spacing = jnp.asarray(dx).astype(dt)
    else:
        x = jnp.asarray(x)
        dt = _inexact_dtype(y, x)
        y = jnp.moveaxis(y.astype(dt), axis, -1)
        x = x.astype(dt)
        if x.ndim == 1:
            spacing = jnp.diff(x)
        else:
            spacing = jnp.moveaxis(jnp.diff(x, axis=axis), axis, -1)
    return 0.5 * jnp.sum(spacing * (y[..., 1:] + y[..., :-1]), axis=-1)
