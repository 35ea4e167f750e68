"""`jax.scipy.ndimage`: `map_coordinates` (nearest and linear interpolation).

The boundary modes are JAX's: 'constant' (SciPy's 'grid-constant': each
neighbour outside the input counts as `cval`), 'nearest', 'mirror', 'wrap'
(SciPy's 'grid-wrap') and 'reflect'."""

import itertools

import ember.numpy as jnp

__all__ = ["map_coordinates"]

_MODES = ("constant", "nearest", "mirror", "wrap", "reflect")


def _round_half_away(x):
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def _in_range(index, size, mode):
    """`index` (integer array) mapped into [0, size) by the boundary mode,
    and where it was inside (for 'constant')."""
    valid = (index >= 0) & (index < size)
    if mode == "constant" or mode == "nearest":
        return jnp.clip(index, 0, size - 1), valid
    if mode == "wrap":
        return jnp.remainder(index, size), valid
    if mode == "mirror":
        if size == 1:
            return jnp.zeros_like(index), valid
        period = 2 * size - 2
        j = jnp.remainder(index, period)
        return jnp.where(j >= size, period - j, j), valid
    period = 2 * size  # reflect
    j = jnp.remainder(index, period)
    return jnp.where(j >= size, period - 1 - j, j), valid


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
    """The values of `input` interpolated at `coordinates` (a sequence of
    `input.ndim` arrays of one shape), with `order` 0 (nearest: the
    coordinate rounded half away from zero) or 1 (linear). Points outside
    the input follow `mode`; `cval` fills for 'constant'. The result has
    `input`'s dtype (integer results rounded half away from zero)."""
    input = jnp.asarray(input)
    coordinates = [jnp.asarray(c) for c in coordinates]
    if len(coordinates) != input.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coordinates)} != {input.ndim}")
    if mode not in _MODES:
        raise NotImplementedError(
            f"ember.scipy.ndimage.map_coordinates does not yet support mode {mode}. "
            f"Currently supported modes are {{{', '.join(map(repr, sorted(_MODES)))}}}.")
    if order > 1:
        raise NotImplementedError(
            "ember.scipy.ndimage.map_coordinates currently requires order<=1")
    if order < 0:
        raise ValueError(f"map_coordinates: order must be 0 or 1, got {order}")
    cval = jnp.asarray(cval).astype(input.dtype)
    coordinates = jnp.broadcast_arrays(*coordinates) if coordinates else []
    ctype = jnp.result_type(*coordinates) if coordinates else jnp.result_type(float)
    if not jnp.issubdtype(ctype, jnp.inexact):
        ctype = jnp.result_type(float)
    coordinates = [c.astype(ctype) for c in coordinates]
    vtype = input.dtype if jnp.issubdtype(input.dtype, jnp.inexact) else ctype

    # Per dimension: the (index, weight) pairs of the neighbours used.
    taps = []
    for c in coordinates:
        if order == 0:
            taps.append([(_round_half_away(c).astype(jnp.int32), None)])
        else:
            lo = jnp.floor(c)
            frac = c - lo
            lo = lo.astype(jnp.int32)
            taps.append([(lo, 1 - frac), (lo + 1, frac)])

    total = None
    for combo in itertools.product(*taps):
        indices, valid, weight = [], None, None
        for size, (index, w) in zip(input.shape, combo):
            i, ok = _in_range(index, size, mode)
            indices.append(i)
            valid = ok if valid is None else valid & ok
            if w is not None:
                weight = w if weight is None else weight * w
        value = input[tuple(indices)] if indices else input
        if mode == "constant" and valid is not None:
            value = jnp.where(valid, value, cval)
        value = value.astype(vtype)
        term = value if weight is None else value * weight.astype(vtype)
        total = term if total is None else total + term
    if jnp.issubdtype(input.dtype, jnp.integer):
        total = _round_half_away(total)
    return total.astype(input.dtype)
