"""JAX's primitive objects of `jax.lax` (`lax.exp_p`, `lax.add_p`, ...):
what the equations of `make_jaxpr`'s view name, so that an interpreter
written against JAX's jaxprs (JAX's "Writing custom interpreters" guide)
evaluates them with `eqn.primitive.bind(*invals, **eqn.params)` and keys
its tables by them. Each binds to the `lax` function of its name, called
with JAX's parameters; Ember's own tracing then handles every
transformation."""

import numpy as np

from . import jaxpr, lax
from .core import as_value
from .primitive import Primitive


class LaxPrimitive(Primitive):
    """A primitive of the `ember` dialect: `bind` is its `lax` function."""

    def __init__(self, name, fn, multiple_results=False, bindable=True):
        super().__init__(name)
        self._fn = fn
        self.multiple_results = multiple_results
        self.bindable = bindable  # (False: an equation of Ember's own structure)

    def bind(self, *args, **params):
        return self._fn(*args, **params)


def _unary(f):
    return lambda x, accuracy=None: f(x)


def _scalars_broadcast(*xs):
    """Rank-0 operands broadcast to the others' shape (the view's equations
    take scalar literals beside arrays, as JAX's jaxprs do)."""
    xs = [as_value(x) for x in xs]
    shape = next((x.shape for x in xs if x.ndim), ())
    return [lax.broadcast_in_dim(x, shape, ()) if x.ndim == 0 and shape else x for x in xs]


def _binary(f):
    return lambda x, y: f(*_scalars_broadcast(x, y))


def _unsupported(name):
    def bind(*args, **params):
        raise NotImplementedError(
            f"the jaxpr view's '{name}' equation cannot be bound: Ember's jaxprs are a view "
            "of its traced program, and only its array primitives bind")
    return bind


_UNARY = {
    "exp": lax.exp, "exp2": lax.exp2, "log": lax.log, "log1p": lax.log1p,
    "expm1": lax.expm1, "tanh": lax.tanh, "logistic": lax.logistic, "sin": lax.sin,
    "cos": lax.cos, "tan": lax.tan, "asin": lax.asin, "acos": lax.acos, "atan": lax.atan,
    "sinh": lax.sinh, "cosh": lax.cosh, "asinh": lax.asinh, "acosh": lax.acosh,
    "atanh": lax.atanh, "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "cbrt": lax.cbrt,
    "neg": lax.neg, "sign": lax.sign, "floor": lax.floor, "ceil": lax.ceil,
    "is_finite": lax.is_finite, "not": lax.bitwise_not, "abs": lax.abs, "imag": lax.imag,
    "real": lax.real, "erf": lax.erf, "erf_inv": lax.erf_inv, "lgamma": lax.lgamma,
    "digamma": lax.digamma, "population_count": lax.population_count, "clz": lax.clz,
    "square": lax.square, "stop_gradient": lax.stop_gradient,
}
_BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "rem": lax.rem,
    "pow": lax.pow, "max": lax.max, "min": lax.min, "atan2": lax.atan2,
    "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor, "eq": lax.eq,
    "ne": lax.ne, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge,
    "nextafter": lax.nextafter, "shift_left": lax.shift_left,
    "shift_right_logical": lax.shift_right_logical,
    "shift_right_arithmetic": lax.shift_right_arithmetic, "complex": lax.complex,
}


def _reduce(f):
    return lambda x, axes, out_sharding=None: f(x, tuple(axes))


def _cumulative(f):
    return lambda x, axis=0, reverse=False: f(x, axis=axis, reverse=reverse)


def _gather(operand, indices, *, slice_sizes, dimension_numbers=None, offset_dims=(),
            collapsed_slice_dims=(), start_index_map=(), operand_batching_dims=(),
            start_indices_batching_dims=(), index_vector_dim=None, mode=None,
            fill_value=None, indices_are_sorted=False, unique_indices=False):
    """JAX's gather equation, from JAX's parameters (`dimension_numbers`) or
    the view's (its fields, and where the index vector is)."""
    idx = lax.convert_element_type(indices, np.dtype(indices.dtype))
    if dimension_numbers is None:
        if index_vector_dim is not None and index_vector_dim == idx.ndim:
            idx = lax.expand_dims(idx, (idx.ndim,))  # (scalar indices)
        elif index_vector_dim is not None and index_vector_dim != idx.ndim - 1:
            perm = [d for d in range(idx.ndim) if d != index_vector_dim] + [index_vector_dim]
            idx = lax.transpose(idx, tuple(perm))
            start_indices_batching_dims = tuple(
                d - (d > index_vector_dim) for d in start_indices_batching_dims)
        dimension_numbers = lax.GatherDimensionNumbers(
            offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
            start_indices_batching_dims)
    return lax.gather(operand, idx, dimension_numbers, tuple(slice_sizes), mode=mode,
                      fill_value=fill_value)


_OTHERS = {
    "gather": _gather,
    "integer_pow": lambda x, y: lax.integer_pow(x, y),
    "select_n": lambda which, *cases: lax.select_n(*_scalars_broadcast(which, *cases)),
    "clamp": lambda lo, x, hi: lax.clamp(lo, x, hi),
    "convert_element_type": lambda x, new_dtype, weak_type=False, sharding=None:
        lax.convert_element_type(x, np.dtype(new_dtype)),
    "broadcast_in_dim": lambda x, shape, broadcast_dimensions=(), sharding=None:
        lax.broadcast_in_dim(x, tuple(shape), tuple(broadcast_dimensions)),
    "reshape": lambda x, new_sizes, dimensions=None, sharding=None:
        lax.reshape(x, tuple(new_sizes)),
    "squeeze": lambda x, dimensions: lax.squeeze(x, tuple(dimensions)),
    "transpose": lambda x, permutation: lax.transpose(x, tuple(permutation)),
    "rev": lambda x, dimensions: lax.rev(x, tuple(dimensions)),
    "dot_general": lambda a, b, dimension_numbers, precision=None,
        preferred_element_type=None, out_sharding=None: lax.dot_general(
            a, b, tuple(tuple(tuple(d) for d in p) for p in dimension_numbers),
            preferred_element_type=preferred_element_type),
    "reduce_sum": _reduce(lax.reduce_sum), "reduce_max": _reduce(lax.reduce_max),
    "reduce_min": _reduce(lax.reduce_min), "reduce_prod": _reduce(lax.reduce_prod),
    "reduce_and": _reduce(lax.reduce_and), "reduce_or": _reduce(lax.reduce_or),
    "argmax": lambda x, axes, index_dtype: lax.argmax(x, axes[0], np.dtype(index_dtype)),
    "argmin": lambda x, axes, index_dtype: lax.argmin(x, axes[0], np.dtype(index_dtype)),
    "iota": lambda dtype, shape, dimension, sharding=None:
        lax.broadcasted_iota(np.dtype(dtype), tuple(shape), dimension),
    "concatenate": lambda *xs, dimension: lax.concatenate(list(xs), dimension),
    "slice": lambda x, start_indices, limit_indices, strides=None:
        lax.slice(x, tuple(start_indices), tuple(limit_indices),
                  None if strides is None else tuple(strides)),
    "pad": lambda x, padding_value, padding_config: lax.pad(
        x, padding_value, [tuple(c) for c in padding_config]),
    "dynamic_slice": lambda x, *idx, slice_sizes: lax.dynamic_slice(
        x, list(idx), tuple(slice_sizes)),
    "dynamic_update_slice": lambda x, update, *idx: lax.dynamic_update_slice(
        x, update, list(idx)),
    "cumsum": _cumulative(lax.cumsum), "cumprod": _cumulative(lax.cumprod),
    "cummax": _cumulative(lax.cummax), "cummin": _cumulative(lax.cummin),
}

PRIMITIVES = {}
for _name, _f in _UNARY.items():
    PRIMITIVES[_name] = LaxPrimitive(_name, _unary(_f))
for _name, _f in _BINARY.items():
    PRIMITIVES[_name] = LaxPrimitive(_name, _binary(_f))
for _name, _f in _OTHERS.items():
    PRIMITIVES[_name] = LaxPrimitive(_name, _f)


def primitive(name):
    """The primitive object of an equation named `name` (one that cannot be
    bound for a name without a `lax` function here: loops, calls, ...)."""
    p = PRIMITIVES.get(name)
    if p is None:
        p = PRIMITIVES[name] = LaxPrimitive(name, _unsupported(name), bindable=False)
    return p


# `lax.exp_p` and the others, as JAX names them.
NAMES = {f"{n}_p": p for n, p in list(PRIMITIVES.items())}

jaxpr.primitive_of = primitive
