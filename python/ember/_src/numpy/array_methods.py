"""The operators and methods of arrays and tracers (`x + y`, `x[i]`, `x.at`,
`x.sum()`, ...): `install` sets them on `core.Value` from the numpy functions.
`ember.numpy` calls it once imported; layers under the numpy implementation
use operators on values only at run time, after that."""

import numpy as np

from .. import dtypes, lax
from ..core import Value
from . import lax_numpy as jnp
from .indexing import _IndexUpdateHelper, getitem_method


def _view(self, dtype=None):
    """NumPy's `view`: the same bytes as `dtype`; a narrower or wider type
    changes the size of the last axis (JAX's `Array.view`)."""
    if dtype is None:
        return self
    new = np.dtype(dtype)
    old = np.dtype(self.dtype)
    if new.itemsize == old.itemsize:
        return lax.bitcast_convert_type(self, new)
    if self.ndim == 0:
        raise ValueError("view() of a 0-d array needs a dtype of the same size "
                         f"({old} is {old.itemsize} bytes, {new} {new.itemsize})")
    *lead, n = self.shape
    if new.itemsize < old.itemsize:
        parts = lax.bitcast_convert_type(self, new)  # (..., n, k)
        return jnp.reshape(parts, (*lead, n * (old.itemsize // new.itemsize)))
    k = new.itemsize // old.itemsize
    if new.itemsize % old.itemsize or n % k:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                         "total size in bytes of the last axis of the array.")
    return lax.bitcast_convert_type(jnp.reshape(self, (*lead, n // k, k)), new)


def install():
    """Sets the operators and methods of `Value` (so of `Array` and `Tracer`)."""

    from ..shape_poly import DimExpr

    accepted = (Value, np.ndarray, np.generic, int, float, complex, list, tuple, DimExpr)

    def binop(fn, reflected=False):
        # An operand of another kind defers to its own operator (JAX's
        # NotImplemented): `x == None` is False, a user class's __radd__ runs.
        def op(self, other):
            if not isinstance(other, accepted) and not hasattr(other, "__jax_array__"):
                return NotImplemented
            return fn(other, self) if reflected else fn(self, other)
        return op

    ops = {
        "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "truediv": jnp.true_divide,
        "floordiv": jnp.floor_divide, "mod": jnp.remainder, "pow": jnp.power,
        "matmul": jnp.matmul, "and": jnp.bitwise_and, "or": jnp.bitwise_or,
        "xor": jnp.bitwise_xor, "lshift": jnp.left_shift, "rshift": jnp.right_shift,
        "divmod": jnp.divmod,
    }
    for name, fn in ops.items():
        setattr(Value, f"__{name}__", binop(fn))
        setattr(Value, f"__r{name}__", binop(fn, True))
    for name, fn in {"eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less, "le": jnp.less_equal,
                     "gt": jnp.greater, "ge": jnp.greater_equal}.items():
        setattr(Value, f"__{name}__", binop(fn))
    # (JAX's: round(x) is an integer array, round(x, n) jnp.round.)
    Value.__round__ = lambda self, ndigits=None: (
        jnp.round(self).astype(dtypes.default_int())
        if ndigits is None else jnp.round(self, ndigits))
    Value.__neg__ = lambda self: jnp.negative(self)
    Value.__pos__ = lambda self: self
    Value.__abs__ = lambda self: jnp.abs(self)
    Value.__invert__ = lambda self: jnp.invert(self)
    Value.__getitem__ = getitem_method
    Value.__iter__ = lambda self: (getitem_method(self, i) for i in range(len(self)))
    Value.at = property(lambda self: _IndexUpdateHelper(self))
    Value.T = property(lambda self: jnp.transpose(self))
    Value.mT = property(lambda self: jnp.matrix_transpose(self))
    Value.real = property(lambda self: jnp.real(self))
    Value.itemsize = property(lambda self: self.dtype.itemsize)
    Value.nbytes = property(lambda self: self.size * self.dtype.itemsize)
    Value.imag = property(lambda self: jnp.imag(self))

    def method(fn):
        return lambda self, *a, **k: fn(self, *a, **k)

    for name in ["sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all",
                 "any", "cumsum", "cumprod", "ravel", "transpose", "squeeze", "clip", "round",
                 "sort", "argsort", "conj", "conjugate", "dot", "take", "nonzero", "ptp",
                 "trace", "diagonal", "repeat", "swapaxes", "flatten", "astype", "nansum",
                 "searchsorted"]:
        if name == "flatten":
            setattr(Value, name, method(jnp.ravel))
        elif name == "transpose":
            setattr(Value, name, lambda self, *axes: jnp.transpose(
                self, axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list))
                else (axes or None)))
        else:
            setattr(Value, name, method(getattr(jnp, name)))
    Value.reshape = lambda self, *shape, order="C", out_sharding=None: jnp.reshape(
        self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape,
        order, out_sharding=out_sharding)
    Value.copy = lambda self: self

    def argpartition(self, kth, axis=-1):
        from .extras_array import argpartition as f  # (above this module's layer)
        return f(self, kth, axis)

    Value.argpartition = argpartition
    # (NumPy's method order: the condition first, the array is self.)
    Value.compress = lambda self, condition, axis=None, *, out=None, size=None, \
        fill_value=0: jnp.compress(condition, self, axis, size=size, fill_value=fill_value)
    Value.view = _view
