"""`jax.scipy.interpolate`: `RegularGridInterpolator` (linear and nearest)."""

import itertools

import ember.numpy as jnp
from ember import tree_util

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _points_array(xi, ndim):
    """Sample points as an array (..., ndim): a tuple of coordinate arrays
    is broadcast and stacked; a 1-D array is read as points of `ndim`."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        xi = jnp.stack(jnp.broadcast_arrays(*[jnp.asarray(x) for x in xi]), axis=-1)
    else:
        xi = jnp.asarray(xi)
        if xi.ndim == 1:
            xi = xi.reshape(-1, ndim)
    return xi


@tree_util.register_pytree_node_class
class RegularGridInterpolator:
    """Interpolation on a regular (rectilinear) grid, as JAX's
    `jax.scipy.interpolate.RegularGridInterpolator`.

    points: N arrays, each axis' grid coordinates, strictly increasing;
    values: array whose first N dimensions follow the grid (integers become
    floats); method: "linear" or "nearest"; bounds_error: must be False (True
    raises NotImplementedError, as in JAX); fill_value: the value for points
    outside the grid (default NaN), or None to extrapolate. Calling it on
    points xi (..., N) gives values of shape xi.shape[:-1] + values.shape[N:].
    The object is a pytree (grid, values and fill_value are its leaves)."""

    def __init__(self, points, values, method="linear", bounds_error=False,
                 fill_value=jnp.nan):
        if method not in _METHODS:
            raise ValueError(f"method {method!r} is not defined")
        self.method = method
        self.bounds_error = bounds_error
        if self.bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        values = jnp.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        if not jnp.issubdtype(values.dtype, jnp.inexact):
            values = values.astype(jnp.result_type(float))
        self.fill_value = None if fill_value is None else jnp.asarray(fill_value)
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        if method not in _METHODS:
            raise ValueError(f"method {method!r} is not defined")
        ndim = len(self.grid)
        xi = _points_array(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        if not jnp.issubdtype(xi.dtype, jnp.inexact):
            xi = xi.astype(jnp.result_type(float))
        lead = xi.shape[:-1]
        xi = xi.reshape(-1, ndim)
        cells, fractions, outside = self._find_cells(xi)
        trailing = (1,) * (self.values.ndim - ndim)
        if method == "linear":
            result = None
            for corner in itertools.product((0, 1), repeat=ndim):
                weight = None
                for bit, f in zip(corner, fractions):
                    w = f if bit else 1 - f
                    weight = w if weight is None else weight * w
                idx = tuple(c + bit for c, bit in zip(cells, corner))
                term = self.values[idx] * weight.reshape(weight.shape + trailing)
                result = term if result is None else result + term
        else:
            idx = tuple(jnp.where(f <= 0.5, c, c + 1) for c, f in zip(cells, fractions))
            result = self.values[idx]
        if self.fill_value is not None:
            result = jnp.where(outside.reshape(outside.shape + trailing), self.fill_value,
                               result)
        return result.reshape(lead + self.values.shape[ndim:])

    def _find_cells(self, xi):
        """Per axis: the grid cell left of each point (clipped to the grid's
        cells), the point's fractional position in it, and whether any
        coordinate lies outside the grid."""
        cells, fractions = [], []
        outside = jnp.zeros(xi.shape[:1], bool)
        for axis, grid in enumerate(self.grid):
            x = xi[:, axis]
            i = jnp.clip(jnp.searchsorted(grid, x) - 1, 0, grid.shape[0] - 2)
            lo, hi = grid[i], grid[i + 1]
            cells.append(i)
            fractions.append((x - lo) / (hi - lo))
            outside = outside | (x < grid[0]) | (x > grid[-1])
        return cells, fractions, outside

    def tree_flatten(self):
        return (self.grid, self.values, self.fill_value), (self.method, self.bounds_error)

    @classmethod
    def tree_unflatten(cls, aux, children):
        grid, values, fill_value = children
        obj = object.__new__(cls)
        obj.method, obj.bounds_error = aux
        obj.grid, obj.values, obj.fill_value = grid, values, fill_value
        return obj
