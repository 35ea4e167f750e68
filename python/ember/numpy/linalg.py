"""ember.numpy.linalg: the basics (norm, matrix power); decompositions are not yet there."""

import ember.numpy as jnp


def norm(x, ord=None, axis=None, keepdims=False):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    if axis is None and ord is None:
        return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), keepdims=keepdims))
    if axis is None:
        axis = tuple(range(x.ndim)) if x.ndim <= 2 else None
    if isinstance(axis, int) or (isinstance(axis, tuple) and len(axis) == 1):
        ax = axis if isinstance(axis, int) else axis[0]
        a = jnp.abs(x)
        if ord is None or ord == 2:
            return jnp.sqrt(jnp.sum(a * a, axis=ax, keepdims=keepdims))
        if ord == jnp.inf:
            return jnp.max(a, axis=ax, keepdims=keepdims)
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
    if ord in (1, -1):
        red = jnp.max if ord == 1 else jnp.min
        return red(jnp.sum(a, axis=r, keepdims=True), axis=c, keepdims=True).reshape(
            _kept(x.shape, axis, keepdims))
    if ord in (jnp.inf, -jnp.inf):
        red = jnp.max if ord == jnp.inf else jnp.min
        return red(jnp.sum(a, axis=c, keepdims=True), axis=r, keepdims=True).reshape(
            _kept(x.shape, axis, keepdims))
    raise NotImplementedError(f"matrix norm ord={ord!r} needs an SVD, which Ember lacks")


def _kept(shape, axis, keepdims):
    axis = [a % len(shape) for a in axis]
    return tuple(1 if i in axis else n for i, n in enumerate(shape) if keepdims or i not in axis)


def matrix_power(a, n):
    a = jnp.asarray(a)
    out = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    base = a
    while n:
        if n & 1:
            out = out @ base
        n >>= 1
        if n:
            base = base @ base
    return out


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """The vector norm over `axis` (None: all axes, tuple: those axes flattened)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    axes = tuple(range(x.ndim)) if axis is None else (
        (axis,) if isinstance(axis, int) else tuple(axis))
    a = jnp.abs(x)
    if ord == jnp.inf:
        return jnp.max(a, axis=axes, keepdims=keepdims)
    if ord == -jnp.inf:
        return jnp.min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(a != 0, axis=axes, keepdims=keepdims).astype(a.dtype)
    if ord == 1:
        return jnp.sum(a, axis=axes, keepdims=keepdims)
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(a * a, axis=axes, keepdims=keepdims))
    return jnp.sum(a ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


def matrix_norm(x, ord="fro", keepdims=False):
    return norm(x, ord, axis=(-2, -1), keepdims=keepdims)
