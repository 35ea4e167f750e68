"""The lax primitives: one per ember op, with shape/dtype rules in Python."""

import builtins
import enum
import math
import operator
import sys
import threading
from typing import Any, NamedTuple

import numpy as np

from ember._mlir import ir

from . import compiler, core, dtypes, sharding_rules, tree_util
from .core import Primitive, ShapedArray, as_value, type_error, value_error

# --------------------------------------------------------------------------
# Shape rules
# --------------------------------------------------------------------------


def _same(*avals, **_):
    return avals[0]


def _check_same_types(name, *avals):
    a0 = avals[0]
    for a in avals[1:]:
        if a.shape != a0.shape:
            raise type_error(f"{name} requires arguments to have the same shape, got "
                             + ", ".join(x.str_short() for x in avals))
        if a.dtype != a0.dtype:
            # JAX's text (dtype names and the tip), then the user's line.
            names = ", ".join("bfloat16" if x.dtype == dtypes.bfloat16 else x.dtype.name
                              for x in avals)
            tip = _PROMOTING.get(name)
            tip = (f" (Tip: jnp.{tip} is a similar function that does automatic type "
                   "promotion on inputs).") if tip else ""
            raise TypeError(core.below_location(
                f"lax.{name} requires arguments to have the same dtypes, got {names}.{tip}"))


# The jnp function that promotes its operands' dtypes, for each lax binary
# op (JAX 0.10.2's tip in its dtype-mismatch error; rem, the orderings and
# the bitwise ops have none).
_PROMOTING = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
              "max": "maximum", "min": "minimum", "atan2": "arctan2",
              "nextafter": "nextafter", "eq": "equal", "ne": "not_equal",
              "shift_left": "left_shift", "shift_right_logical": "right_shift",
              "shift_right_arithmetic": "right_shift"}


def _binary_rule(name):
    def rule(x, y, **_):
        _check_same_types(name, x, y)
        return x.update(weak_type=x.weak_type and y.weak_type)
    return rule


# The dtypes each primitive's op accepts (as the dialect's verifiers do),
# checked when it is applied, with JAX's wording: the Python level never
# builds an op its verifier rejects. Complex inputs of the functions whose
# op is real-only are computed from real and imaginary parts below.
_ACCEPTS = {
    "float": (lambda d: dtypes.is_inexact(d) and not dtypes.is_complex(d), "floating"),
    "inexact": (dtypes.is_inexact, "floating, complexfloating"),
    "f32f64": (lambda d: d in (dtypes.float32, dtypes.float64), "float32, float64"),
    "num": (lambda d: not dtypes.is_bool(d), "integer, floating, complexfloating"),
    "intfloat": (lambda d: not dtypes.is_bool(d) and not dtypes.is_complex(d),
                 "integer, floating"),
    "real": (lambda d: not dtypes.is_complex(d), "real"),
    "int": (lambda d: dtypes.is_int(d) or dtypes.is_bool(d), "integer or boolean"),
    "integer": (dtypes.is_int, "integer"),
}


def _check_accepts(name, kinds, *avals):
    ok, what = _ACCEPTS[kinds]
    for i, a in enumerate(avals):
        if not ok(a.dtype):
            where = f" at position {i}" if len(avals) > 1 else ""
            raise type_error(f"{name} does not accept dtype {np.dtype(a.dtype).name}{where}. "
                             f"Accepted dtypes{where} are subtypes of {what}.")


def _make_unary(name, kinds=None):
    def rule(x, **_):
        if kinds:
            _check_accepts(name, kinds, x)
        return x
    prim = Primitive(name, rule)
    return prim


_unary_float = ["exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
                "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                "sqrt", "rsqrt", "cbrt", "erf", "erf_inv", "lgamma", "digamma", "bessel_i0e",
                "bessel_i1e", "floor", "ceil", "round_nearest_afz", "round_nearest_even"]
_unary_complex = ["exp", "log", "tanh", "sin", "cos", "sqrt"]  # ops taking complex too
_prims = {}
for _n in _unary_float:
    _prims[_n] = _make_unary(_n, "inexact" if _n in _unary_complex else "float")
for _n in ["abs", "sign"]:
    _prims[_n] = _make_unary(_n, "real")
_prims["neg"] = _make_unary("neg")
_prims["not"] = _make_unary("not", "int")
for _n in ["population_count", "clz"]:
    _prims[_n] = _make_unary(_n, "integer")
_prims["conj"] = _make_unary("conj")


def _binary_kinds_rule(name, kinds):
    same = _binary_rule(name)

    def rule(x, y, **params):
        if kinds:  # (JAX checks each operand's kind first)
            _check_accepts(name, kinds, x, y)
        return same(x, y, **params)
    return rule


for _n, _k in [("add", None), ("sub", None), ("mul", None), ("div", None), ("rem", "real"),
               ("pow", None), ("max", "real"), ("min", "real"), ("atan2", "inexact"),
               ("nextafter", "float"), ("and", "int"), ("or", "int"), ("xor", "int"),
               ("shift_left", "integer"), ("shift_right_logical", "integer"),
               ("shift_right_arithmetic", "integer")]:
    _prims[_n] = Primitive(_n, _binary_kinds_rule(_n, _k))

is_finite_p = Primitive("is_finite", lambda x: x.update(dtype=dtypes.bool_, weak_type=False))


def _part_rule(x):
    if not dtypes.is_complex(x.dtype):
        raise type_error(f"real/imag need a complex input, got {x.str_short()}")
    return x.update(dtype=np.float64 if x.dtype == dtypes.complex128 else np.float32)


real_p = Primitive("real", _part_rule)
imag_p = Primitive("imag", _part_rule)


def _complex_rule(x, y):
    _check_accepts("complex", "f32f64", x, y)
    _check_same_types("complex", x, y)
    return x.update(dtype=dtypes.complex128 if x.dtype == dtypes.float64 else dtypes.complex64)


complex_p = Primitive("complex", _complex_rule)

_DIRS = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _compare_rule(x, y, direction):
    _check_same_types(direction, x, y)
    if direction not in ("eq", "ne"):
        _check_accepts(direction, "real", x, y)
    return x.update(dtype=dtypes.bool_, weak_type=False)


def _compare_emit(trace, vals, avals, direction):
    return trace.emit("ember.compare", vals, avals, {
        "comparison_direction": core.enum_attr(f"#ember<cmp {_DIRS[direction]}>")})


compare_p = Primitive("compare", _compare_rule, _compare_emit)


def _select_rule(p, t, f):
    if p.dtype != dtypes.bool_:
        raise type_error(f"select requires a boolean predicate, got {p.str_short()}")
    _check_same_types("select", t, f)
    if p.shape != t.shape:
        raise type_error(f"select predicate shape {p.shape} must match {t.shape}")
    return t.update(weak_type=t.weak_type and f.weak_type)


select_p = Primitive("select", _select_rule)


def _clamp_rule(lo, x, hi):
    _check_same_types("clamp", lo, x, hi)
    return x


clamp_p = Primitive("clamp", _clamp_rule)


def _convert_rule(x, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_emit(trace, vals, avals, new_dtype, weak_type=False):
    if vals[0].type == core.mlir_type(avals[0]):
        return [core.Tracer(trace, vals[0], avals[0])]
    return trace.emit("ember.convert", vals, avals)


convert_p = Primitive("convert", _convert_rule, _convert_emit)


def _bitcast_rule(x, new_dtype):
    wi, wo = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    if wi == wo:
        return ShapedArray(x.shape, new_dtype)
    if wi > wo:  # each element splits into wi // wo parts (little-endian)
        return ShapedArray(x.shape + (wi // wo,), new_dtype)
    if not x.shape or x.shape[-1] != wo // wi:
        raise value_error(f"bitcast_convert_type from {x.dtype.name} to {np.dtype(new_dtype).name} "
                         f"needs a trailing dimension of size {wo // wi}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new_dtype)


bitcast_p = Primitive("bitcast_convert", _bitcast_rule)


def _iota_rule(*, dtype, shape, dimension):
    return ShapedArray(shape, dtype)


def _iota_emit(trace, vals, avals, dtype, shape, dimension):
    return trace.emit("ember.iota", [], avals, {"iota_dimension": core.i64_attr(dimension)})


iota_p = Primitive("iota", _iota_rule, _iota_emit)


def _bid_rule(x, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise type_error(f"broadcast_in_dim: {len(broadcast_dimensions)} dims for "
                         f"operand of rank {x.ndim}")
    for i, d in enumerate(broadcast_dimensions):
        if not (0 <= d < len(shape)) or x.shape[i] not in (1, shape[d]):
            raise type_error(f"broadcast_in_dim: cannot broadcast {x.shape} to {tuple(shape)}")
    return x.update(shape=shape)


def _bid_emit(trace, vals, avals, shape, broadcast_dimensions):
    return trace.emit("ember.broadcast_in_dim", vals, avals, {
        "broadcast_dimensions": core.i64_array_attr(broadcast_dimensions)})


broadcast_in_dim_p = Primitive("broadcast_in_dim", _bid_rule, _bid_emit)


def _reshape_rule(x, new_sizes):
    if core.shape_size(new_sizes) != x.size:
        raise type_error(f"cannot reshape array of shape {x.shape} (size {x.size}) "
                         f"into shape {tuple(new_sizes)}")
    return x.update(shape=new_sizes)


reshape_p = Primitive("reshape", _reshape_rule)


def _transpose_rule(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise type_error(f"transpose permutation isn't a permutation of operand dimensions, "
                         f"got permutation {tuple(permutation)} for operand shape {x.shape}.")
    return x.update(shape=[x.shape[p] for p in permutation])


def _transpose_emit(trace, vals, avals, permutation):
    return trace.emit("ember.transpose", vals, avals,
                      {"permutation": core.i64_array_attr(permutation)})


transpose_p = Primitive("transpose", _transpose_rule, _transpose_emit)


def _slice_rule(x, start_indices, limit_indices, strides):
    shape = []
    for s, lim, st, n in zip(start_indices, limit_indices, strides, x.shape):
        if not 0 <= s <= lim <= n:
            raise type_error(f"slice indices {start_indices}:{limit_indices} out of bounds "
                             f"for shape {x.shape}")
        shape.append(-(-(lim - s) // st))
    return x.update(shape=shape)


def _slice_emit(trace, vals, avals, start_indices, limit_indices, strides):
    return trace.emit("ember.slice", vals, avals, {
        "start_indices": core.i64_array_attr(start_indices),
        "limit_indices": core.i64_array_attr(limit_indices),
        "strides": core.i64_array_attr(strides)})


slice_p = Primitive("slice", _slice_rule, _slice_emit)


def _ds_rule(x, *idx, slice_sizes):
    if len(idx) != x.ndim:
        raise type_error(f"dynamic_slice needs {x.ndim} indices, got {len(idx)}")
    for s, n in zip(slice_sizes, x.shape):
        if not 0 <= s <= n:
            raise type_error(f"dynamic_slice size {tuple(slice_sizes)} too large for {x.shape}")
    return x.update(shape=slice_sizes)


def _ds_emit(trace, vals, avals, slice_sizes):
    return trace.emit("ember.dynamic_slice", vals, avals, {
        "slice_sizes": core.i64_array_attr(slice_sizes)})


dynamic_slice_p = Primitive("dynamic_slice", _ds_rule, _ds_emit)


def _dus_rule(x, u, *idx):
    if u.dtype != x.dtype or u.ndim != x.ndim or any(a > b for a, b in zip(u.shape, x.shape)):
        raise type_error(f"dynamic_update_slice: update {u.str_short()} does not fit "
                         f"{x.str_short()}")
    return x


def _dus_emit(trace, vals, avals):
    return trace.emit("ember.dynamic_update_slice", vals, avals)


dynamic_update_slice_p = Primitive("dynamic_update_slice", _dus_rule, _dus_emit)


def _pad_rule(x, pv, padding_config):
    if pv.shape != () or pv.dtype != x.dtype:
        raise type_error("pad value must be a scalar of the operand's dtype")
    shape = []
    for (lo, hi, it), n in zip(padding_config, x.shape):
        s = lo + hi + n + builtins.max(n - 1, 0) * it
        if s < 0 or it < 0:
            raise value_error(f"invalid padding {padding_config} for shape {x.shape}")
        shape.append(s)
    return x.update(shape=shape)


def _pad_emit(trace, vals, avals, padding_config):
    lo, hi, it = zip(*padding_config) if padding_config else ((), (), ())
    return trace.emit("ember.pad", vals, avals, {
        "edge_padding_low": core.i64_array_attr(lo),
        "edge_padding_high": core.i64_array_attr(hi),
        "interior_padding": core.i64_array_attr(it)})


pad_p = Primitive("pad", _pad_rule, _pad_emit)


def _concat_rule(*xs, dimension):
    x0 = xs[0]
    for x in xs:
        if x.ndim != x0.ndim or x.dtype != x0.dtype or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape)) if i != dimension):
            raise type_error("concatenate requires arrays of the same dtype and shape "
                             "except along the axis, got "
                             + ", ".join(y.str_short() for y in xs))
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return x0.update(shape=shape, weak_type=all(x.weak_type for x in xs))


def _concat_emit(trace, vals, avals, dimension):
    return trace.emit("ember.concatenate", vals, avals, {"dimension": core.i64_attr(dimension)})


concatenate_p = Primitive("concatenate", _concat_rule, _concat_emit)


def _rev_emit(trace, vals, avals, dimensions):
    return trace.emit("ember.reverse", vals, avals,
                      {"dimensions": core.i64_array_attr(dimensions)})


rev_p = Primitive("reverse", lambda x, dimensions: x, _rev_emit)


def _reduce_rule(x, kind, axes):
    if kind in ("max", "min"):
        _check_accepts(f"reduce_{kind}", "real", x)
    elif kind in ("and", "or", "xor"):
        _check_accepts(f"reduce_{kind}", "int", x)
    return x.update(shape=[d for i, d in enumerate(x.shape) if i not in axes])


def _reduce_emit(trace, vals, avals, kind, axes):
    return trace.emit("ember.reduce", vals, avals, {
        "kind": core.enum_attr(f"#ember<reduce {kind}>"),
        "dimensions": core.i64_array_attr(sorted(axes))})


reduce_p = Primitive("reduce", _reduce_rule, _reduce_emit)


def _argred_rule(x, axis, index_dtype):
    _check_accepts("argmax/argmin", "real", x)
    return ShapedArray([d for i, d in enumerate(x.shape) if i != axis], index_dtype)


def _argred_emit(name):
    def emit(trace, vals, avals, axis, index_dtype):
        return trace.emit(f"ember.{name}", vals, avals, {"axis": core.i64_attr(axis)})
    return emit


argmax_p = Primitive("argmax", _argred_rule, _argred_emit("argmax"))
argmin_p = Primitive("argmin", _argred_rule, _argred_emit("argmin"))


def _cum_emit(trace, vals, avals, kind, axis, reverse):
    return trace.emit("ember.cumulative", vals, avals, {
        "kind": core.enum_attr(f"#ember<reduce {kind}>"), "axis": core.i64_attr(axis),
        "reverse": core.bool_attr(reverse)})


cumulative_p = Primitive("cumulative", lambda x, kind, axis, reverse: x, _cum_emit)


def _rw_rule(x, init, kind, window_dimensions, window_strides, padding):
    shape = []
    for n, w, s, (lo, hi) in zip(x.shape, window_dimensions, window_strides, padding):
        p = n + lo + hi
        shape.append(0 if p < w else (p - w) // s + 1)
    return x.update(shape=shape)


def _rw_emit(trace, vals, avals, kind, window_dimensions, window_strides, padding):
    return trace.emit("ember.reduce_window", vals, avals, {
        "kind": core.enum_attr(f"#ember<reduce {kind}>"),
        "window_dimensions": core.i64_array_attr(window_dimensions),
        "window_strides": core.i64_array_attr(window_strides),
        "padding_low": core.i64_array_attr([p[0] for p in padding]),
        "padding_high": core.i64_array_attr([p[1] for p in padding])})


reduce_window_p = Primitive("reduce_window", _rw_rule, _rw_emit)


def _sort_rule(*xs, dimension, num_keys, is_stable):
    for x in xs:
        if x.shape != xs[0].shape:
            raise type_error("sort operands must have the same shape")
    return list(xs)


def _sort_emit(trace, vals, avals, dimension, num_keys, is_stable):
    return trace.emit("ember.sort", vals, avals, {
        "dimension": core.i64_attr(dimension), "num_keys": core.i64_attr(num_keys),
        "is_stable": core.bool_attr(is_stable)})


sort_p = Primitive("sort", _sort_rule, _sort_emit, multiple_results=True)


def _dot_rule(lhs, rhs, dimension_numbers, preferred_element_type, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise type_error(f"dot_general requires contracting dimensions to have the same "
                             f"shape, got {lhs.shape} and {rhs.shape}")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise type_error(f"dot_general requires batch dimensions to have the same "
                             f"shape, got {lhs.shape} and {rhs.shape}")
    shape = [lhs.shape[d] for d in lb]
    shape += [n for i, n in enumerate(lhs.shape) if i not in lc and i not in lb]
    shape += [n for i, n in enumerate(rhs.shape) if i not in rc and i not in rb]
    return ShapedArray(shape, preferred_element_type, lhs.weak_type and rhs.weak_type)


def _dot_emit(trace, vals, avals, dimension_numbers, preferred_element_type, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    attrs = {
        "lhs_batching_dimensions": core.i64_array_attr(lb),
        "rhs_batching_dimensions": core.i64_array_attr(rb),
        "lhs_contracting_dimensions": core.i64_array_attr(lc),
        "rhs_contracting_dimensions": core.i64_array_attr(rc)}
    if precision is not None:
        ctx = core.context()
        attrs["precision"] = ir.ArrayAttr.get([ir.StringAttr.get(p, ctx) for p in precision],
                                              context=ctx)
    return trace.emit("ember.dot_general", vals, avals, attrs)


dot_general_p = Primitive("dot_general", _dot_rule, _dot_emit)


def _gather_rule(x, idx, offset_dims, collapsed_slice_dims, start_index_map,
                 index_vector_dim, slice_sizes, mode, operand_batching_dims=(),
                 start_indices_batching_dims=()):
    batch = [n for i, n in enumerate(idx.shape) if i != index_vector_dim]
    offs = [s for i, s in enumerate(slice_sizes)
            if i not in collapsed_slice_dims and i not in operand_batching_dims]
    rank = len(batch) + len(offs)
    shape, bi, oi = [], 0, 0
    for d in range(rank):
        if d in offset_dims:
            shape.append(offs[oi])
            oi += 1
        else:
            shape.append(batch[bi])
            bi += 1
    return ShapedArray(shape, x.dtype, x.weak_type)


def _gather_emit(trace, vals, avals, offset_dims, collapsed_slice_dims, start_index_map,
                 index_vector_dim, slice_sizes, mode, operand_batching_dims=(),
                 start_indices_batching_dims=()):
    a = core.i64_array_attr
    return trace.emit("ember.gather", vals, avals, {
        "offset_dims": a(offset_dims), "collapsed_slice_dims": a(collapsed_slice_dims),
        "operand_batching_dims": a(operand_batching_dims),
        "start_indices_batching_dims": a(start_indices_batching_dims),
        "start_index_map": a(start_index_map),
        "index_vector_dim": core.i64_attr(index_vector_dim),
        "slice_sizes": a(slice_sizes), "mode": core.enum_attr(f"#ember<mode {mode}>")})


gather_p = Primitive("gather", _gather_rule, _gather_emit)


def _scatter_rule(x, idx, upd, **_):
    if upd.dtype != x.dtype:
        raise type_error(f"scatter updates dtype {upd.dtype} differs from {x.dtype}")
    return x


def _scatter_emit(trace, vals, avals, kind, update_window_dims, inserted_window_dims,
                  scatter_dims_to_operand_dims, index_vector_dim, mode,
                  operand_batching_dims=(), scatter_indices_batching_dims=()):
    a = core.i64_array_attr
    return trace.emit("ember.scatter", vals, avals, {
        "update_window_dims": a(update_window_dims),
        "inserted_window_dims": a(inserted_window_dims),
        "operand_batching_dims": a(operand_batching_dims),
        "scatter_indices_batching_dims": a(scatter_indices_batching_dims),
        "scatter_dims_to_operand_dims": a(scatter_dims_to_operand_dims),
        "index_vector_dim": core.i64_attr(index_vector_dim),
        "kind": core.enum_attr(f"#ember<scatter {kind}>"),
        "mode": core.enum_attr(f"#ember<mode {mode}>")})


scatter_p = Primitive("scatter", _scatter_rule, _scatter_emit)

threefry2x32_p = Primitive("threefry2x32", lambda *xs: [xs[0], xs[0]],
                           multiple_results=True)
philox4x32_p = Primitive("philox4x32", lambda *xs: [xs[0]] * 4, multiple_results=True)

# --------------------------------------------------------------------------
# Public lax functions
# --------------------------------------------------------------------------


def _named(fn, name):
    """`fn` under `name` (the lax function's, as JAX's: names show in
    exports and errors)."""
    fn.__name__ = fn.__qualname__ = name
    return fn


def _u(name):
    p = _prims[name]
    return _named(lambda x: p.bind(x), name)


def _b(name):
    p = _prims[name]
    return _named(lambda x, y: p.bind(*_promote_scalars(x, y)), name)


def _promote_scalars(*xs):
    """lax-level: Python scalars take the dtype of the array operands, and
    rank-0 operands broadcast to the others' shape (as in JAX)."""
    vals = [x if isinstance(x, core.Value) else None for x in xs]
    ref = next((v for v in vals if v is not None and v.shape), None)
    if ref is None:
        ref = next((v for v in vals if v is not None), None)
    out = []
    for x, v in zip(xs, vals):
        if v is None:
            x = core.asarray_concrete(x, ref.dtype if ref is not None else None)
        if ref is not None and ref.shape and not as_value(x).shape:
            x = broadcast(x, ref.shape)
        out.append(x)
    return out


neg, _abs_real, floor, ceil = (_u(n) for n in ["neg", "abs", "floor", "ceil"])


def abs(x):
    """|x|; of a complex x its modulus, a real array (as JAX's lax.abs).
    JAX's one primitive that rejects 2- and 4-bit integers."""
    dt = np.result_type(x) if not isinstance(x, core.Value) else x.dtype
    if dtypes.is_complex(dt):
        return abs_complex(as_value(x))
    if np.dtype(dt) in dtypes.NARROW_INTS:
        raise type_error(f"abs does not accept dtype {np.dtype(dt).name}. Support for "
                         "narrow-width integers is platform-dependent and limited to a few "
                         "specific operations, e.g. basic arithmetic and type casting.")
    return _abs_real(x)


abs.__name__ = "abs"
exp, log, tanh, sin, cos = (_u(n) for n in ["exp", "log", "tanh", "sin", "cos"])
sqrt, cbrt, erf, erf_inv, lgamma, digamma = (
    _u(n) for n in ["sqrt", "cbrt", "erf", "erf_inv", "lgamma", "digamma"])
bessel_i0e, bessel_i1e = _u("bessel_i0e"), _u("bessel_i1e")
bitwise_not = _named(_u("not"), "bitwise_not")
population_count, clz, _conj = _u("population_count"), _u("clz"), _u("conj")


def conj(x):
    """The complex conjugate; a real f32/f64 `x` gives a complex result
    (JAX's)."""
    x = as_value(x)
    if x.dtype in (dtypes.float32, dtypes.float64):
        return complex(x, full_like(x, 0))
    if not dtypes.is_complex(x.dtype):
        raise type_error(f"conj does not accept dtype {x.dtype.name}. Accepted dtypes are "
                         "subtypes of float32, complexfloating, float64.")
    return _conj(x)
add, sub, mul, div, rem, _pow = (_b(n) for n in ["add", "sub", "mul", "div", "rem", "pow"])


def pow(x, y):
    """x ** y; an integer exponent of a floating or complex base is taken
    in the base's type (JAX's `lax.pow` accepts it and converts it so).
    The base must be inexact, as JAX's (`jnp.power` of integers is `_pow`)."""
    xv, yv = as_value(x) if isinstance(x, core.Value) else None, \
        as_value(y) if isinstance(y, core.Value) else None
    xd = (xv if xv is not None else as_value(x)).dtype
    if not dtypes.is_inexact(xd):
        raise type_error(f"pow does not accept dtype {xd.name} at position 0. Accepted "
                         "dtypes at position 0 are subtypes of floating, complexfloating.")
    if xv is not None and yv is not None and dtypes.is_inexact(xv.dtype) and \
            (dtypes.is_int(yv.dtype) or dtypes.is_unsigned(yv.dtype)) and \
            not dtypes.is_bool(yv.dtype):
        y = convert_element_type(yv, xv.dtype, weak_type=yv.weak_type)
    return _pow(x, y)


pow.__name__ = "pow"
nextafter = _b("nextafter")
bitwise_and, bitwise_or, bitwise_xor = (_named(_b(n), f"bitwise_{n}")
                                         for n in ["and", "or", "xor"])
shift_left, shift_right_logical, shift_right_arithmetic = (
    _b(n) for n in ["shift_left", "shift_right_logical", "shift_right_arithmetic"])


def round(x, rounding_method=0):
    x = as_value(x)
    if dtypes.is_complex(x.dtype):  # each part (as JAX)
        return complex(round(real(x), rounding_method), round(imag(x), rounding_method))
    return _prims["round_nearest_even" if int(rounding_method) == 1
                  else "round_nearest_afz"].bind(x)


# --------------------------------------------------------------------------
# Complex arguments of the functions whose op is real-only: computed from
# the real and imaginary parts with formulas that keep accuracy near zero
# (log1p, expm1) and the principal branches of NumPy/JAX.
# --------------------------------------------------------------------------


def _is_complex(x):
    return isinstance(x, core.Value) and dtypes.is_complex(x.dtype)


def _times_i(z):
    """i z."""
    return complex(neg(imag(z)), real(z))


def _times_minus_i(z):
    """-i z."""
    return complex(imag(z), neg(real(z)))


def _scale(z, c):
    """z times the real number c, part by part (log2(0) stays -inf + 0j)."""
    return complex(mul(real(z), c), mul(imag(z), c))


def _complex_unary(name):
    """The primitive `name` on real operands; on complex ones the formula
    `_c_<name>` below, built from primitives that accept complex values."""
    real_fn = _u(name)

    def f(x):
        x = as_value(x)
        if dtypes.is_complex(x.dtype):
            return globals()["_c_" + name](x)
        return real_fn(x)
    f.__name__ = name
    return f


def _c_exp2(z):
    return exp(_scale(z, math.log(2.0)))


def _c_log1p(z):
    x, y = real(z), imag(z)
    # log|1 + z| = log1p(2x + x^2 + y^2) / 2 near 0, log|1 + z| elsewhere.
    small = _prims["and"].bind(lt(abs(x), 0.5), lt(abs(y), 0.5))
    zero = full_like(x, 0)
    xs, ys = select(small, x, zero), select(small, y, zero)
    near = mul(log1p(add(mul(xs, add(xs, 2.0)), mul(ys, ys))), 0.5)
    far = real(log(add(z, 1.0)))
    return complex(select(small, near, far), atan2(y, add(x, 1.0)))


def _is_inf(x):
    return eq(abs(x), float("inf"))


def sign_bit(x):
    """The sign bit of the real float x (true for -0.0 and negative NaNs)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[np.dtype(x.dtype).itemsize]
    return lt(bitcast_convert_type(x, bits), 0)


def _not_finite(x):
    return _prims["not"].bind(is_finite_p.bind(x))


def _exact_zero_part(part, other, flip=None):
    """`part` itself where it is zero (a product with an infinite or NaN
    factor would turn it into NaN), negated where `flip`: the standard's
    results for f(x + 0j) and f(0 + yj) (C99 Annex G)."""
    zero = part if flip is None else select(flip, neg(part), part)
    return select(eq(part, 0.0), zero, other)


def _c_expm1(z):
    x, y = real(z), imag(z)
    h = sin(mul(y, 0.5))
    re = sub(mul(expm1(x), cos(y)), mul(mul(h, h), 2.0))
    im = _exact_zero_part(y, mul(exp(x), sin(y)))
    # exp(-inf + yj) is 0 for every y: expm1 is -1 + 0j; exp(+inf + yj) with
    # y infinite or NaN is inf + NaN j.
    minus_inf = eq(x, float("-inf"))
    re = select(minus_inf, full_like(x, -1.0), re)
    im = select(minus_inf, full_like(x, 0.0), im)
    re = select(_prims["and"].bind(eq(x, float("inf")), _not_finite(y)), x, re)
    return complex(re, im)


def _c_sinh(z):
    x, y = real(z), imag(z)
    re, im = mul(sinh(x), cos(y)), mul(cosh(x), sin(y))
    y_bad = _not_finite(y)
    re = select(_prims["and"].bind(eq(x, 0.0), y_bad), x, re)   # +-0 + NaN j
    re = select(_prims["and"].bind(_is_inf(x), y_bad), x, re)   # +-inf + NaN j
    im = _exact_zero_part(y, im)
    return complex(re, im)


def _c_cosh(z):
    x, y = real(z), imag(z)
    re, im = mul(cosh(x), cos(y)), mul(sinh(x), sin(y))
    y_bad = _not_finite(y)
    im = select(_prims["and"].bind(eq(x, 0.0), y_bad), mul(x, 0.0), im)  # NaN + 0j
    re = select(_prims["and"].bind(_is_inf(x), y_bad), abs(x), re)      # inf + NaN j
    im = _exact_zero_part(y, im, sign_bit(x))
    return complex(re, im)


def _c_tan(z):
    return _times_minus_i(tanh(_times_i(z)))


def _large(z):
    """|z| past which the functions below take their asymptotic forms (the
    next term is below half an ulp): 1 / sqrt(eps) of the part type."""
    eps = float(np.finfo(np.dtype(real(z).dtype)).eps)
    return gt(abs_complex(z), 1.0 / math.sqrt(eps))


def _c_asinh(z):
    # Odd: computed on the half plane Re >= 0, where z + sqrt(z^2 + 1) does
    # not cancel; for large |z| (infinities included) log(2z).
    flip = sign_bit(real(z))
    w = select(flip, neg(z), z)
    ww = mul(w, w)
    t = complex(add(real(ww), full_like(real(ww), 1.0)), imag(ww))
    s = sqrt(t)
    # On the cut (w on the imaginary axis past +-i, t real and negative) the
    # root's imaginary part takes the sign of w's, the side the principal
    # branch reaches it from (arcsin(2+0j) = pi/2 + 1.317j, as NumPy's and
    # JAX's; the sign of a zero is not kept through the square).
    on_cut = _prims["and"].bind(eq(imag(t), 0.0), lt(real(t), 0.0))
    s_im = select(on_cut, select(sign_bit(imag(w)), neg(abs(imag(s))), abs(imag(s))), imag(s))
    s = complex(real(s), s_im)
    # log(w + s) as log1p(w + w^2 / (1 + s)): no cancellation for small w.
    r = _c_log1p(add(w, div(ww, add(s, 1.0))))
    # On the imaginary axis inside the cut, asinh(iy) = i asin(y) exactly
    # (the form above leaves a real part of an ulp: arcsin(0.5+0j)).
    y = imag(w)
    inside = _prims["and"].bind(eq(real(w), 0.0), le(abs(y), full_like(y, 1.0)))
    r = select(inside, complex(real(w), asin(select(inside, y, full_like(y, 0.0)))), r)
    far = log(w)
    far = complex(add(real(far), math.log(2.0)), imag(far))
    r = select(_large(w), far, r)
    return select(flip, neg(r), r)


def _c_acosh(z):
    near = log(add(z, mul(sqrt(add(z, 1.0)), sqrt(sub(z, 1.0)))))
    far = log(z)
    far = complex(add(real(far), math.log(2.0)), imag(far))
    return select(_large(z), far, near)


def _c_atanh(z):
    near = _scale(sub(_c_log1p(z), _c_log1p(neg(z))), 0.5)
    # Large |z|: 1/z + i pi/2 with the sign of Im z (the next term, 1/(3z^3),
    # is below an ulp; at infinity the parts of 1/z are +-0 whatever the
    # other part of z is).
    x, y = real(z), imag(z)
    m = abs_complex(z)
    at_inf = _is_inf(m)
    safe = select(at_inf, full_like(m, 1.0), m)
    zero = full_like(x, 0.0)
    re = select(at_inf, zero, div(div(x, safe), safe))
    half_pi = full_like(x, math.pi / 2)
    im = add(select(sign_bit(y), neg(half_pi), half_pi),
             select(at_inf, zero, neg(div(div(y, safe), safe))))
    return select(_large(z), complex(re, im), near)


def _c_asin(z):
    return _times_minus_i(_c_asinh(_times_i(z)))


def _c_acos(z):
    a = _c_asin(z)
    return complex(sub(full_like(real(a), math.pi / 2), real(a)), neg(imag(a)))


def _c_atan(z):
    return _times_minus_i(_c_atanh(_times_i(z)))


def _c_sign(z):
    m = abs_complex(z)
    zero = eq(m, 0.0)
    safe = select(zero, full_like(m, 1.0), m)
    return select(zero, full_like(z, 0), complex(div(real(z), safe), div(imag(z), safe)))


def hypot_parts(x, y):
    """sqrt(x^2 + y^2) of reals without overflow of the squares; inf when
    either is infinite (NaN or not); at the origin 0 with derivative 0 (JAX's
    `abs` of a complex number: its JVP is 0 there, not NaN)."""
    x, y = abs(x), abs(y)
    big, small = max(x, y), min(x, y)
    zero = eq(big, 0.0)
    safe = select(zero, full_like(big, 1.0), big)
    r = div(small, safe)
    out = select(zero, full_like(big, 0.0), mul(big, sqrt(add(mul(r, r), 1.0))))
    inf = _prims["or"].bind(_is_inf(x), _is_inf(y))
    return select(inf, full_like(big, float("inf")), out)


def abs_complex(z):
    """|z| (hypot of the parts: see `hypot_parts`)."""
    return hypot_parts(real(z), imag(z))


def _c_rsqrt(z):
    return div(full_like(z, 1), sqrt(z))


def _c_logistic(z):
    return div(full_like(z, 1), add(exp(neg(z)), 1.0))


(exp2, log1p, expm1, tan, sinh, cosh, asinh, acosh, atanh, asin, acos, atan, sign, rsqrt,
 logistic) = (_complex_unary(n) for n in [
     "exp2", "log1p", "expm1", "tan", "sinh", "cosh", "asinh", "acosh", "atanh", "asin",
     "acos", "atan", "sign", "rsqrt", "logistic"])


def _lex_greater(x, y):
    """x > y ordering complex numbers by real part, then imaginary part (JAX's
    order for max, min, sort and comparisons)."""
    xr, yr = real(x), real(y)
    return _prims["or"].bind(gt(xr, yr),
                             _prims["and"].bind(eq(xr, yr), gt(imag(x), imag(y))))


def _extremum(name, pick_first):
    prim = _b(name)

    def f(x, y):
        x, y = _promote_scalars(x, y)
        if not _is_complex(as_value(x)):
            return prim(x, y)
        return select(pick_first(x, y), x, y)
    f.__name__ = name
    return f


max = _extremum("max", _lex_greater)
min = _extremum("min", lambda x, y: _lex_greater(y, x))


def atan2(x, y):
    x, y = _promote_scalars(x, y)
    if not _is_complex(as_value(x)):
        return _prims["atan2"].bind(x, y)
    # -i log((y + i x) / sqrt(x^2 + y^2))
    return _times_minus_i(log(div(add(y, _times_i(x)), sqrt(add(mul(x, x), mul(y, y))))))


class RoundingMethod:
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def is_finite(x):
    x = as_value(x)
    if dtypes.is_complex(x.dtype):
        return _prims["and"].bind(is_finite_p.bind(real(x)), is_finite_p.bind(imag(x)))
    return is_finite_p.bind(x)


def real(x):
    return real_p.bind(x)


def imag(x):
    return imag_p.bind(x)


def complex(x, y):
    return complex_p.bind(*_promote_scalars(x, y))


def _cmp(direction):
    def f(x, y):
        x, y = _promote_scalars(x, y)
        if direction in ("eq", "ne") or not _is_complex(as_value(x)):
            return compare_p.bind(x, y, direction=direction)
        # Complex numbers order lexicographically (real, then imaginary).
        if direction == "gt":
            return _lex_greater(x, y)
        if direction == "lt":
            return _lex_greater(y, x)
        strict = _lex_greater(x, y) if direction == "ge" else _lex_greater(y, x)
        return _prims["or"].bind(strict, compare_p.bind(x, y, direction="eq"))
    return f


eq, ne, lt, le, gt, ge = (_cmp(d) for d in ["eq", "ne", "lt", "le", "gt", "ge"])


def select(pred, on_true, on_false):
    pred, on_true, on_false = as_value(pred), as_value(on_true), as_value(on_false)
    sharding_rules.check_select(pred, (on_false, on_true), on_true.shape,
                                sharding_rules.LAX_SELECTS)
    if pred.ndim == 0 and on_true.ndim != 0:
        pred = broadcast(pred, on_true.shape)
    return select_p.bind(pred, on_true, on_false)


def select_n(which, *cases):
    wd = as_value(which).dtype
    if not (dtypes.is_bool(wd) or dtypes.is_int(wd) or dtypes.is_unsigned(wd)):
        raise type_error(f"select `which` must be boolean or integer type, got {wd.name}.")
    if dtypes.is_bool(wd) and len(cases) > 2:
        raise type_error("select with boolean `which` cannot have > 2 cases.")
    if len(cases) == 1:
        return cases[0]
    if wd == dtypes.bool_:
        return select(which, cases[1], cases[0])
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        out = select(le(which, i), cases[i], out)
    return out


def clamp(min, x, max):
    x = as_value(x)
    lo, hi = _promote_scalars(min, x)[0], _promote_scalars(max, x)[0]
    if lo.shape != x.shape:
        lo = broadcast_in_dim(lo, x.shape, ())
    if hi.shape != x.shape:
        hi = broadcast_in_dim(hi, x.shape, ())
    return clamp_p.bind(lo, x, hi)


def convert_element_type(x, new_dtype, weak_type=False):
    x = as_value(x)
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if x.dtype == new_dtype:
        if x.weak_type == weak_type:
            return x
        if type(x) is core.Array:
            # Only the weak flag changes (a Python scalar meeting an array):
            # the same data, no kernel.
            return core.Array(x._value, weak_type=weak_type)
    if dtypes.is_bool(new_dtype) and dtypes.is_complex(x.dtype):
        x = real(x)  # (JAX's: the imaginary part is discarded, also for bool)
    return convert_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


def bitcast_convert_type(x, new_dtype):
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    old = as_value(x).dtype
    if (old in dtypes.NARROW_INTS or new_dtype in dtypes.NARROW_INTS) and \
            dtypes.itemsize_bits(old) != dtypes.itemsize_bits(new_dtype):
        raise NotImplementedError(
            f"bitcast_convert_type from {old.name} to {new_dtype.name}: Ember bit-casts 2- "
            f"and 4-bit integers only to types of their own width (at {core.where()})")
    return bitcast_p.bind(x, new_dtype=new_dtype)


_dim = core.canonicalize_dim


def iota(dtype, size):
    if isinstance(size, int) and size < 0:
        raise type_error(f"iota shape must have every element be nonnegative, got ({size},).")
    return broadcasted_iota(dtype, (_dim(size),), 0)


def broadcasted_iota(dtype, shape, dimension):
    dtype = dtypes.canonicalize_dtype(dtype)
    if dtypes.is_complex(dtype):
        # (a complex iota is the real one with zero imaginary parts; the op
        # counts in integers and floats)
        real = iota_p.bind(dtype=np.finfo(dtype).dtype, shape=tuple(shape),
                           dimension=int(dimension))
        return convert_element_type(real, dtype)
    return iota_p.bind(dtype=dtype, shape=tuple(shape), dimension=int(dimension))


def broadcast_in_dim(x, shape, broadcast_dimensions):
    x = as_value(x)
    shape, dims = core.canonicalize_shape(shape), tuple(int(d) for d in broadcast_dimensions)
    if any(isinstance(n, (int, np.integer)) and n < 0 for n in shape):
        raise type_error(f"broadcast_in_dim shape must have every element be nonnegative, "
                         f"got {shape}.")
    if x.shape == shape and dims == tuple(range(len(shape))):
        return x
    if type(x) is core.Array and not core._trace_stack and \
            all(a < b for a, b in zip(dims, dims[1:])) and core.named_sharding(x.aval) is None:
        # Outside any trace a broadcast is data movement NumPy does exactly
        # (eager `x * 2.0` broadcasts the scalar): no kernel launch.
        broadcast_in_dim_p.abstract_eval(x.aval, shape=shape, broadcast_dimensions=dims)
        expanded = [1] * len(shape)
        for d, n in zip(dims, x.shape):
            expanded[d] = n
        v = np.ascontiguousarray(np.broadcast_to(x._value.reshape(expanded), shape))
        return core.Array(v, weak_type=x.weak_type)
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast(x, sizes):
    x = as_value(x)
    sizes = tuple(sizes)
    return broadcast_in_dim(x, sizes + x.shape,
                            tuple(range(len(sizes), len(sizes) + x.ndim)))


def reshape(x, new_sizes, dimensions=None, *, out_sharding=None):
    x = as_value(x)
    if dimensions is not None:
        x = transpose(x, dimensions)
    new_sizes = core.canonicalize_shape(new_sizes)
    if out_sharding is not None:
        with sharding_rules.output_given(out_sharding):
            out = reshape(x, new_sizes)
        return core.with_out_sharding(out, out_sharding)
    if x.shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


def transpose(x, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return as_value(x)
    return transpose_p.bind(x, permutation=permutation)


def slice(x, start_indices, limit_indices, strides=None):
    x = as_value(x)
    strides = tuple(strides) if strides is not None else (1,) * x.ndim
    return slice_p.bind(x, start_indices=tuple(_dim(s) for s in start_indices),
                        limit_indices=tuple(_dim(s) for s in limit_indices),
                        strides=tuple(int(s) for s in strides))


def slice_in_dim(x, start_index, limit_index, stride=1, axis=0):
    x = as_value(x)
    n = x.shape[axis]
    if start_index is None:
        start_index = 0
    elif start_index < 0:
        start_index += n
    if limit_index is None:
        limit_index = n
    elif limit_index < 0:
        limit_index += n
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[axis], limits[axis], strides[axis] = start_index, limit_index, stride
    return slice(x, starts, limits, strides)


def index_in_dim(x, index, axis=0, keepdims=True):
    x = as_value(x)
    n = x.shape[axis]
    if isinstance(n, int) and not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    index = index + n if index < 0 else index
    r = slice_in_dim(x, index, index + 1, 1, axis)
    return r if keepdims else reshape(r, [n for i, n in enumerate(r.shape) if i != axis])


def _index_scalar(i):
    i = as_value(i)
    if i.ndim != 0:
        got = i.str_short() if hasattr(i, "str_short") else i.shape
        raise type_error(f"dynamic indices must be scalars, got {got}")
    if not dtypes.is_int(i.dtype):
        raise type_error("dynamic indices must be integers")
    return i


def _start_index(i, size):
    """A start index of a dynamic slice, negative ones counted from the end
    (JAX's rule; the slice is then clamped into the array)."""
    if isinstance(i, (bool, np.bool_)):
        return _index_scalar(i)
    if isinstance(i, (int, np.integer)):
        return _index_scalar(i + size if i < 0 and isinstance(size, int) else i)
    v = _index_scalar(i)
    if dtypes.is_unsigned(v.dtype) or not isinstance(size, int) or core.in_machinery():
        # (Ember's own row reads, a scan's, are in bounds: no wrap to trace,
        # which would also hide that the index is affine in the iteration.)
        return v
    if not isinstance(v, core.Tracer):
        n = int(np.asarray(v))
        return v if n >= 0 else convert_element_type(n + size, v.dtype)
    return select(lt(v, _const(0, v)), add(v, _const(size, v)), v)


def _const(n, like):
    return convert_element_type(n, like.dtype)


def _start_indices(x, start_indices, what):
    if len(start_indices) != x.ndim:
        raise ValueError(f"{what} start_indices must have length equal to the number of "
                        f"dimensions of the operand, got indices {tuple(start_indices)} for "
                        f"operand of shape {x.shape}")
    return [_start_index(i, n) for i, n in zip(start_indices, x.shape)]


def dynamic_slice(x, start_indices, slice_sizes):
    x = as_value(x)
    idx = _start_indices(x, start_indices, "dynamic_slice")
    return dynamic_slice_p.bind(x, *idx, slice_sizes=tuple(_dim(s) for s in slice_sizes))


def dynamic_update_slice(x, update, start_indices):
    x = as_value(x)
    idx = _start_indices(x, start_indices, "dynamic_update_slice")
    return dynamic_update_slice_p.bind(x, update, *idx)


def dynamic_slice_in_dim(x, start_index, slice_size, axis=0):
    x = as_value(x)
    starts = [0] * x.ndim
    starts[axis] = start_index
    sizes = list(x.shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(x, index, axis=0, keepdims=True):
    r = dynamic_slice_in_dim(x, index, 1, axis)
    return r if keepdims else reshape(r, [n for i, n in enumerate(r.shape) if i != axis])


def dynamic_update_slice_in_dim(x, update, start_index, axis):
    x = as_value(x)
    starts = [0] * x.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(x, update, index, axis):
    """x with `update` (x's shape without `axis`, or with it of size 1)
    written at `index` along `axis`."""
    x, update = as_value(x), as_value(update)
    if update.ndim == x.ndim - 1:
        shape = list(update.shape)
        shape.insert(axis, 1)
        update = reshape(update, shape)
    return dynamic_update_slice_in_dim(x, update, index, axis)


def pad(x, padding_value, padding_config):
    x = as_value(x)
    pv = padding_value if isinstance(padding_value, core.Value) else \
        core.asarray_concrete(padding_value, x.dtype)
    return pad_p.bind(x, pv,
                      padding_config=tuple(tuple(_dim(v) for v in c) for c in padding_config))


def concatenate(operands, dimension):
    operands = [as_value(o) for o in operands]
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))


def rev(x, dimensions):
    return rev_p.bind(x, dimensions=tuple(int(d) for d in dimensions))


def _reduce(kind):
    def f(x, axes):
        x = as_value(x)
        axes = tuple(sorted(int(a) for a in axes))
        if not axes:
            return x
        if kind in ("max", "min") and dtypes.is_complex(x.dtype):
            return _reduce_complex_extremum(kind, x, axes)
        if kind in ("sum", "prod") and x.dtype in (dtypes.float16, dtypes.bfloat16):
            # (XLA's: 16-bit floats accumulate in f32, a sum of 1000 bf16
            # ones is 1000, not 256.)
            wide = reduce_p.bind(convert_element_type(x, np.float32), kind=kind, axes=axes)
            return convert_element_type(wide, x.dtype, x.weak_type)
        return reduce_p.bind(x, kind=kind, axes=axes)
    return f


def _reduce_complex_extremum(kind, x, axes):
    """max/min of complex numbers in their lexicographic order: the extreme
    real part, then the extreme imaginary part among the elements that have
    it."""
    re, im = real(x), imag(x)
    r = reduce_p.bind(re, kind=kind, axes=axes)
    kept = [i for i in range(x.ndim) if i not in axes]
    ties = eq(re, broadcast_in_dim(r, x.shape, kept))
    worst = full_like(im, -np.inf if kind == "max" else np.inf)
    i = reduce_p.bind(select(ties, im, worst), kind=kind, axes=axes)
    return complex(r, i)


reduce_sum, reduce_prod, reduce_max, reduce_min = (
    _reduce(k) for k in ["sum", "prod", "max", "min"])
reduce_and, reduce_or, reduce_xor = (_reduce(k) for k in ["and", "or", "xor"])


def reduce(operands, init_values, computation, dimensions):
    """`lax.reduce`: reduces `operands` over `dimensions` with `computation`
    starting from `init_values`. `lax.add`, `mul`, `max`, `min` and
    `bitwise_and`/`or`/`xor` (the monoids XLA recognizes too) are Ember's
    reduction op; an init value other than the combiner's identity is
    combined with the result once (the same value for an associative
    combiner). Any other computation (on pytrees of scalars, e.g. a value
    and its index) folds the elements into the init values in order
    (`reduce_by_fold`, which lax_extras.py provides: it needs scan and
    vmap)."""
    kinds = {add: "sum", mul: "prod", max: "max", min: "min", bitwise_and: "and",
             bitwise_or: "or", bitwise_xor: "xor"}
    kind = kinds.get(getattr(computation, "_ember_lax", computation))
    flat_ops, tree = tree_util.tree_flatten(operands)
    flat_init, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree:
        raise TypeError(f"lax.reduce: operands {tree} and init_values {init_tree} must have "
                        "the same structure")
    if kind is None:
        return reduce_by_fold(flat_ops, flat_init, tree, computation, dimensions)
    outs = []
    for x, init in zip(flat_ops, flat_init):
        x = as_value(x)
        r = _reduce(kind)(x, [int(d) % builtins.max(x.ndim, 1) for d in dimensions])
        if not (isinstance(init, core.Value) and isinstance(init, core.Tracer)):
            v = np.asarray(init)
            ident = {"sum": 0, "prod": 1, "and": -1, "or": 0, "xor": 0}.get(kind)
            if kind in ("max", "min") and dtypes.is_complex(x.dtype):
                skip = False  # (combined with the init by `computation` below)
            elif kind in ("max", "min"):
                if np.issubdtype(v.dtype, np.floating) or np.issubdtype(x.dtype, np.floating):
                    ident = -np.inf if kind == "max" else np.inf
                    skip = v == ident
                else:
                    info = np.iinfo(x.dtype) if x.dtype != np.bool_ else None
                    skip = info is not None and v == (info.min if kind == "max" else info.max)
            else:
                skip = v == ident or (x.dtype == np.bool_ and kind == "and" and bool(v))
            if np.all(skip):
                outs.append(r)
                continue
        outs.append(computation(r, convert_element_type(init, r.dtype)))
    return tree_util.tree_unflatten(tree, outs)


def reduce_by_fold(flat_ops, flat_init, tree, computation, dimensions):
    raise NotImplementedError("lax.reduce with a computation of the user's needs "
                              "ember._src.lax_extras")  # (replaced when it is imported)


def reduce_window_by_fold(*args):
    raise NotImplementedError("lax.reduce_window with a computation of the user's needs "
                              "ember._src.lax_extras")  # (replaced when it is imported)


def _bool_as_uint8(x):
    # ember.argmax/argmin take numbers; False < True as 0 < 1.
    x = as_value(x)
    return convert_element_type(x, np.uint8) if x.dtype == np.bool_ else x


def _check_arg_axis(x, axis):
    x = as_value(x)
    n = x.shape[int(axis)]
    if isinstance(n, int) and n == 0:
        raise ValueError("argmin and argmax require non-empty reduced dimension. "
                         f"operand.shape={x.shape} axis={axis}")


def argmax(x, axis, index_dtype):
    _check_arg_axis(x, axis)
    return argmax_p.bind(_bool_as_uint8(x), axis=int(axis),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(x, axis, index_dtype):
    _check_arg_axis(x, axis)
    return argmin_p.bind(_bool_as_uint8(x), axis=int(axis),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


def _cumulative(kind):
    def cumulative(x, axis=0, reverse=False):
        x = as_value(x)
        axis = int(axis) + (x.ndim if axis < 0 else 0)
        return cumulative_p.bind(x, kind=kind, axis=axis, reverse=bool(reverse))
    return cumulative


cumsum, cumprod, cummax, cummin = (_cumulative(k) for k in ["sum", "prod", "max", "min"])


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """`lax.reduce_window`. `lax.add`, `max`, `min` and `mul` over undilated
    windows of one array are Ember's `reduce_window` op; any other
    computation, operand pytrees and dilations fold each window's elements
    into the init value in order (`reduce_window_by_fold`, from
    lax_extras.py)."""
    computation = getattr(computation, "_ember_lax", computation)  # (public lax's)
    kind = {add: "sum", max: "max", min: "min", mul: "prod"}.get(computation, computation)
    dilated = any(d != 1 for d in tuple(base_dilation or ()) + tuple(window_dilation or ()))
    if not isinstance(kind, str) or dilated or not isinstance(operand, (core.Value, np.ndarray)):
        return reduce_window_by_fold(operand, init_value, computation, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation)
    operand = as_value(operand)
    window_strides = tuple(window_strides or (1,) * operand.ndim)
    if any(s <= 0 for s in window_strides):
        raise type_error("reduce_window window_strides must have every element be strictly "
                         f"positive, got {window_strides}.")
    if isinstance(padding, str):
        padding = padtype_to_pads(operand.shape, window_dimensions, window_strides, padding)
    init = core.asarray_concrete(init_value, operand.dtype) if not isinstance(
        init_value, core.Value) else convert_element_type(init_value, operand.dtype)
    if kind in ("sum", "prod") and operand.dtype in (dtypes.float16, dtypes.bfloat16):
        # (Accumulated in f32, as XLA's.)
        wide = reduce_window(convert_element_type(operand, np.float32),
                             convert_element_type(init, np.float32), computation,
                             window_dimensions, window_strides, padding)
        return convert_element_type(wide, operand.dtype)
    if kind in ("sum", "prod") and (
            isinstance(init_value, core.Tracer) or
            not np.all(np.asarray(init_value) == (0 if kind == "sum" else 1))):
        # The init value enters each window once (JAX's), not once more per
        # padding element as the op's padding with it would: the windows
        # over the identity, then combined with it.
        unit = reduce_window(operand, 0 if kind == "sum" else 1, computation,
                             window_dimensions, window_strides, padding)
        return (add if kind == "sum" else mul)(unit, broadcast(init, unit.shape))
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        # Negative padding crops (XLA's): a slice, then the non-negative part.
        operand = slice(operand, [builtins.max(-lo, 0) for lo, _ in padding],
                        [n - builtins.max(-hi, 0) for n, (_, hi) in zip(operand.shape, padding)])
        padding = [(builtins.max(lo, 0), builtins.max(hi, 0)) for lo, hi in padding]
    return reduce_window_p.bind(operand, init, kind=kind,
                                window_dimensions=tuple(window_dimensions),
                                window_strides=window_strides,
                                padding=tuple(tuple(p) for p in padding))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    if padding.upper() == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = builtins.max((out - 1) * s + w - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    single = isinstance(operand, core.Value) or not isinstance(operand, (list, tuple))
    ops = [as_value(operand)] if single else [as_value(o) for o in operand]
    if not 1 <= num_keys <= len(ops):
        raise ValueError(f"num_keys={num_keys} must be between 1 and "
                         f"len(operand)={len(ops)}")
    dimension = int(dimension) + (ops[0].ndim if dimension < 0 else 0)
    if builtins.any(dtypes.is_complex(o.dtype) for o in ops):
        # ember.sort takes real operands: a complex one travels as its two
        # parts, and a complex key sorts by real part, then imaginary part
        # (as JAX).
        parts, n_keys = [], 0
        for k, o in enumerate(ops):
            split = [real(o), imag(o)] if dtypes.is_complex(o.dtype) else [o]
            parts += split
            n_keys += len(split) if k < num_keys else 0
        out = list(sort(parts, dimension, is_stable, n_keys))
        res = []
        for o in ops:
            res.append(complex(out.pop(0), out.pop(0)) if dtypes.is_complex(o.dtype)
                       else out.pop(0))
        return res[0] if single else tuple(res)
    # ember.sort has no i1 operands: sort booleans as uint8 (False < True).
    is_bool = [o.dtype == np.bool_ for o in ops]
    ops = [convert_element_type(o, np.uint8) if b else o for o, b in zip(ops, is_bool)]
    out = sort_p.bind(*ops, dimension=dimension, num_keys=int(num_keys),
                      is_stable=bool(is_stable))
    out = [convert_element_type(o, np.bool_) if b else o for o, b in zip(out, is_bool)]
    return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    return sort((keys, values), dimension, is_stable, 1)


class _KernelTracing(threading.local):
    # > 0 while a Pallas kernel is traced for a target (pallas/tpu_kernel.py):
    # JAX's kernel lowerings read a product's own precision only, not the
    # `jax_default_matmul_precision` config.
    depth = 0


kernel_tracing = _KernelTracing()

_PRECISIONS = {"default": "DEFAULT", "fastest": "DEFAULT", "bfloat16": "DEFAULT",
               "high": "HIGH", "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH",
               "highest": "HIGHEST", "float32": "HIGHEST"}


class DotAlgorithmPreset(enum.Enum):
    """JAX's named dot product algorithms (`precision=` of `dot_general`
    and the products built on it): `LHS_RHS_ACCUM` element types, `_Xn`
    the number of passes that emulate a wider type. Operands of a type the
    preset does not take are converted to the first type it takes (f64 too
    without x64: the product is computed in f64 and converted back), and the
    product keeps its result type. The CPU computes DEFAULT,
    BF16_BF16_F32(_X3, _X6), F32_F32_F32 and F64_F64_F64 products (the bf16
    ones in f32, as XLA:CPU does) and F16_F16_F16 ones in f16; the others
    are JAX's error there (`compiler.check_cpu_precisions`)."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __str__(self):
        return self.name

    @property
    def supported_lhs_types(self):
        """The operand types the preset takes (None: any)."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8"):
            return None
        if name.startswith("F16_"):
            return (np.dtype(np.float16),)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (dtypes.bfloat16, np.dtype(np.float32))
        if name == "F64_F64_F64":
            return (np.dtype(np.float64),)
        return (np.dtype(np.float32),)

    supported_rhs_types = supported_lhs_types

    @property
    def accumulation_type(self):
        name = self.name
        if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {"F16_F16_F16": np.dtype(np.float16), "BF16_BF16_BF16": dtypes.bfloat16,
                "F64_F64_F64": np.dtype(np.float64)}.get(name, np.dtype(np.float32))


class DotAlgorithm(NamedTuple):
    """JAX's `DotAlgorithm`: a product's algorithm by its operand and
    accumulation types. No Ember target computes one (JAX's CPU rejects
    them too): `dot_general` raises JAX's CPU error for it."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


def _preset(precision):
    """The DotAlgorithmPreset `precision` names (a member or its name), or
    None."""
    if isinstance(precision, DotAlgorithmPreset):
        return precision
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    return None


def canonicalize_precision(precision):
    """JAX's `precision=` of a product as the (lhs, rhs) pair of StableHLO's
    precision names, or None (the target's default). None takes the
    `jax_default_matmul_precision` config; a `lax.Precision`, its name or
    one of JAX's aliases ('float32', 'tensorfloat32', 'bfloat16', ...)
    applies to both operands; a pair, to each. What it means is the
    accelerator's: the StableHLO written for TPU carries it (XLA:TPU's
    default is one bf16 pass for f32 products); the CPU computes f32
    products in full f32 whatever it says."""
    if precision is None:
        from . import config

        if kernel_tracing.depth:
            return None
        precision = config.config.jax_default_matmul_precision
        if precision is None:
            return None
    if (preset := _preset(precision)) is not None and precision not in (
            "DEFAULT", "HIGH", "HIGHEST"):
        return (preset.name,)  # (an algorithm: one name)
    if isinstance(precision, tuple) and len(precision) == 1 and _preset(precision[0]):
        return precision  # (canonical already: a boolean product's inner one)
    if isinstance(precision, DotAlgorithm):
        raise compiler.unsupported_precision(repr(precision))

    def one(p):
        name = getattr(p, "name", p)
        if isinstance(name, str):
            if name.upper() in ("DEFAULT", "HIGH", "HIGHEST"):
                return name.upper()
            if name.lower() in _PRECISIONS:
                return _PRECISIONS[name.lower()]
        raise ValueError(f"Precision argument must be one of: None, a lax.Precision, a "
                         f"string naming one, a pair of them, a lax.DotAlgorithmPreset or "
                         f"the name of one, or a lax.DotAlgorithm; got {precision!r}")

    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(f"precision {precision!r}: a pair has two entries")
        return (one(precision[0]), one(precision[1]))
    p = one(precision)
    return (p, p)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    lhs, rhs = as_value(lhs), as_value(rhs)
    precision = canonicalize_precision(precision)
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    out = preferred_element_type or dtypes.promote_types(lhs.dtype, rhs.dtype)
    if dtypes.is_bool(lhs.dtype) and dtypes.is_bool(rhs.dtype) and dtypes.is_bool(out):
        # A product of booleans is whether any pair is true both (JAX's):
        # counted in int32, then compared with zero.
        counts = dot_general(convert_element_type(lhs, np.int32),
                             convert_element_type(rhs, np.int32), dn, precision)
        return ne(counts, full(counts.shape, 0, np.int32))
    out = dtypes.canonicalize_dtype(out)
    if precision is not None and len(precision) == 1:
        preset = DotAlgorithmPreset[precision[0]]
        if preset is DotAlgorithmPreset.DEFAULT:
            precision = None
        elif (types := preset.supported_lhs_types) is not None:
            # Operands of a type the preset does not take are converted to
            # the first it takes (f64 also without x64); the product keeps
            # its result type.
            lhs, rhs = (x if x.dtype in types else convert_p.bind(
                x, new_dtype=types[0], weak_type=False) for x in (lhs, rhs))
            acc = preset.accumulation_type or out
            res = dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                                     preferred_element_type=acc, precision=precision)
            return res if acc == out else convert_p.bind(res, new_dtype=out, weak_type=False)
    params = {} if precision is None else {"precision": precision}
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                              preferred_element_type=out, **params)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    lhs, rhs = as_value(lhs), as_value(rhs)
    if lhs.ndim > 2 or rhs.ndim > 2 or lhs.ndim == 0 or rhs.ndim == 0:
        raise type_error(f"lax.dot needs rank 1 or 2 operands, got {lhs.shape} and {rhs.shape}")
    return dot_general(lhs, rhs, (([lhs.ndim - 1], [0]), ([], [])), precision=precision,
                       preferred_element_type=preferred_element_type)


class GatherScatterMode:
    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "clip"

    @staticmethod
    def from_any(mode):
        """JAX's modes as Ember's two: None (a scatter's default), 'fill' and
        'drop' fill or drop; 'clip' and 'promise_in_bounds' clamp."""
        if mode is None:
            return "fill"
        m = str(mode).lower()
        if m in ("clip", "promise_in_bounds", "gatherscattermode.clip",
                 "gatherscattermode.promise_in_bounds"):
            return "clip"
        if m in ("fill", "drop", "gatherscattermode.fill_or_drop"):
            return "fill"
        raise ValueError(f'Unknown gather mode "{mode}"')


class GatherDimensionNumbers:
    def __init__(self, offset_dims, collapsed_slice_dims, start_index_map,
                 operand_batching_dims=(), start_indices_batching_dims=()):
        self.offset_dims = tuple(offset_dims)
        self.collapsed_slice_dims = tuple(collapsed_slice_dims)
        self.start_index_map = tuple(start_index_map)
        self.operand_batching_dims = tuple(operand_batching_dims)
        self.start_indices_batching_dims = tuple(start_indices_batching_dims)


class ScatterDimensionNumbers:
    def __init__(self, update_window_dims, inserted_window_dims,
                 scatter_dims_to_operand_dims, operand_batching_dims=(),
                 scatter_indices_batching_dims=()):
        self.update_window_dims = tuple(update_window_dims)
        self.inserted_window_dims = tuple(inserted_window_dims)
        self.scatter_dims_to_operand_dims = tuple(scatter_dims_to_operand_dims)
        self.operand_batching_dims = tuple(operand_batching_dims)
        self.scatter_indices_batching_dims = tuple(scatter_indices_batching_dims)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *,
           indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
    idx = as_value(start_indices)
    dn = dimension_numbers
    # (A gather's default is JAX's promise_in_bounds, which clamps.)
    mode = GatherScatterMode.from_any("clip" if mode is None else mode)

    def bind(x):
        return gather_p.bind(x, idx, offset_dims=dn.offset_dims,
                             collapsed_slice_dims=dn.collapsed_slice_dims,
                             start_index_map=dn.start_index_map,
                             index_vector_dim=idx.ndim - 1, slice_sizes=tuple(slice_sizes),
                             mode=mode, operand_batching_dims=dn.operand_batching_dims,
                             start_indices_batching_dims=dn.start_indices_batching_dims)

    operand = as_value(operand)
    if fill_value is None or mode != "fill":
        return bind(operand)
    if not all(isinstance(operand.shape[d], (int, np.integer)) for d in dn.start_index_map):
        # (symbolic sizes: which windows are in, by a gather of ones)
        out = bind(operand)
        valid = bind(full(operand.shape, 1, np.int8))
        fill = convert_element_type(fill_value, operand.dtype)
        return select(eq(valid, full(valid.shape, 1, np.int8)), out,
                      broadcast(fill, out.shape))
    # The op fills out-of-bounds windows with JAX's default (NaN, the least
    # signed or largest unsigned integer, True). A given fill value replaces
    # a window whose start is out of bounds (each start index outside [0,
    # operand size - slice size], as the op decides), computed from the
    # indices; the windows inside are the clamping gather's (cheaper than
    # the filling one's bounds checks).
    valid = None
    for k, d in enumerate(dn.start_index_map):
        col = index_in_dim(idx, k, axis=idx.ndim - 1, keepdims=False)
        ok = bitwise_and(ge(col, full(col.shape, 0, col.dtype)),
                         le(col, full(col.shape, operand.shape[d] - slice_sizes[d], col.dtype)))
        valid = ok if valid is None else bitwise_and(valid, ok)
    if valid is None:
        return bind(operand)
    mode = GatherScatterMode.from_any("clip")
    out = bind(operand)
    batch_dims = [i for i in range(out.ndim) if i not in dn.offset_dims]
    fill = convert_element_type(fill_value, operand.dtype)
    return select(broadcast_in_dim(valid, out.shape, batch_dims), out,
                  broadcast(fill, out.shape))


def _scatter(kind):
    def f(operand, scatter_indices, updates, dimension_numbers, *,
          indices_are_sorted=False, unique_indices=False, mode=None):
        idx = as_value(scatter_indices)
        dn = dimension_numbers
        operand = as_value(operand)
        if kind in ("min", "max") and dtypes.is_complex(operand.dtype):
            raise NotImplementedError(f"scatter_{kind} of complex numbers is not supported "
                                      "(their lexicographic order); split the real and "
                                      "imaginary parts")
        if isinstance(updates, core.Value) and as_value(updates).dtype != operand.dtype:
            raise type_error("lax.scatter requires arguments to have the same dtypes, got "
                             f"{operand.dtype.name}, {as_value(updates).dtype.name}.")
        updates = convert_element_type(updates, operand.dtype)
        return scatter_p.bind(operand, idx, updates, kind=kind,
                              update_window_dims=dn.update_window_dims,
                              inserted_window_dims=dn.inserted_window_dims,
                              scatter_dims_to_operand_dims=dn.scatter_dims_to_operand_dims,
                              index_vector_dim=idx.ndim - 1,
                              mode=GatherScatterMode.from_any(mode),
                              operand_batching_dims=dn.operand_batching_dims,
                              scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
    return f


scatter, scatter_add, scatter_mul, scatter_min, scatter_max = (
    _scatter(k) for k in ["replace", "add", "mul", "min", "max"])


def threefry2x32(k0, k1, x0, x1):
    return threefry2x32_p.bind(k0, k1, x0, x1)


def philox4x32(k0, k1, x0, x1, x2, x3):
    """Random123's Philox4x32-10 of the counter (x0, x1, x2, x3) under the
    key (k0, k1), elementwise on uint32 arrays of one shape."""
    return philox4x32_p.bind(k0, k1, x0, x1, x2, x3)


# erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), z >= 0: the Chebyshev fit
# of Press et al. ("Numerical Recipes", erfcc), relative error below 1.2e-7
# everywhere, so the tails keep their precision where 1 - erf(x) cancels to
# 0 (erfc(9) in f32 is 4e-37, not 0).
_ERFC_P = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
           -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def _erfc_f64(x):
    """erfc in f64: 1 - erf(x) for |x| < 2 (losing at most ~3 digits of
    53 where erfc(2) = 4.7e-3), and for |x| >= 2 exp(-x^2) / sqrt(pi) over
    the continued fraction x + (1/2)/(x + 1/(x + (3/2)/(x + ...))),
    evaluated from 100 terms back (converged to f64 for x >= 2), so the
    tail keeps its relative precision down to the subnormals."""
    one = full_like(x, 1)
    z = abs(x)
    zc = max(z, full_like(x, 2))  # the fraction only where it converges
    f = zc
    for k in range(100, 0, -1):
        f = add(zc, div(full_like(x, k / 2), f))
    tail = div(exp(neg(mul(zc, zc))), mul(full_like(x, math.sqrt(math.pi)), f))
    tail = select(ge(x, full_like(x, 0)), tail, sub(full_like(x, 2), tail))
    return select(lt(z, full_like(x, 2)), sub(one, erf(x)), tail)


def erfc(x):
    x = as_value(x)
    one = full_like(x, 1)
    if x.dtype == dtypes.float64:
        return _erfc_f64(x)
    if dtypes.is_complex(x.dtype):
        return sub(one, erf(x))  # the fit is single precision
    z = abs(x)
    t = div(one, add(one, mul(full_like(x, 0.5), z)))
    poly = full_like(x, _ERFC_P[-1])
    for c in reversed(_ERFC_P[:-1]):
        poly = add(full_like(x, c), mul(t, poly))
    r = mul(t, exp(sub(poly, mul(z, z))))
    tail = select(ge(x, full_like(x, 0)), r, sub(full_like(x, 2), r))
    return select(lt(z, full_like(x, 0.5)), sub(one, erf(x)), tail)


def top_k(operand, k, *, axis=-1):
    """The `k` largest entries along `axis` (the lower index first among
    equal ones) and their indices: `[values, indices]`, a list as JAX's
    primitive returns it."""
    operand = as_value(operand)
    if not isinstance(k, core.DimExpr):
        k = operator.index(k)
        if k < 0:
            raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if not -operand.ndim <= int(axis) < operand.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {operand.ndim}")
    d = int(axis) % operand.ndim
    if isinstance(k, int) and isinstance(operand.shape[d], (int, np.integer)) and \
            k > operand.shape[d]:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                         f"k={k} with shape={list(operand.shape)} and axis={d}")
    idx = broadcasted_iota(dtypes.int32, operand.shape, d)
    # JAX's order: floats by their bits' total order (NaN above inf, -NaN
    # below -inf, 0.0 above -0.0); a stable ascending sort of the key's
    # bitwise not puts the largest first, the lower index first among equal.
    key = operand
    if dtypes.is_float(operand.dtype):
        bits = bitcast_convert_type(operand, np.dtype(f"int{operand.dtype.itemsize * 8}"))
        top = np.iinfo(bits.dtype).max
        key = select(lt(bits, _const(0, bits)), bitwise_xor(bits, _const(top, bits)), bits)
    elif dtypes.is_bool(operand.dtype):
        key = convert_element_type(operand, np.int8)
    _, vals, sidx = sort((bitwise_not(key), operand, idx), d, True, 1)
    return [slice_in_dim(vals, 0, k, 1, d), slice_in_dim(sidx, 0, k, 1, d)]


_stop_gradient_p = core.Primitive("stop_gradient", lambda x: x)


def stop_gradient(x):
    def one(v):
        v = as_value(v)
        if not dtypes.is_inexact(v.dtype):
            return v
        return _stop_gradient_p.bind(v)
    return tree_util.tree_map(one, x)


_optimization_barrier_p = Primitive("optimization_barrier", lambda *avals: list(avals),
                                    multiple_results=True)


def optimization_barrier(operand):
    """`lax.optimization_barrier`: the values of `operand` (a pytree of
    arrays), which compiler optimizations do not look through: computations
    on the results are not merged with the same computations on the inputs.
    Differentiation and vmap pass through it."""
    leaves, tree = tree_util.tree_flatten(operand)
    if not leaves:
        return operand
    return tree_util.tree_unflatten(tree, _optimization_barrier_p.bind(*leaves))


def _integer_pow_rule(x, *, y):
    if dtypes.is_bool(x.dtype):
        raise type_error("integer_pow does not accept dtype bool. Accepted dtypes are "
                         "subtypes of integer, floating, complexfloating.")
    if y < 0 and dtypes.is_int(x.dtype):
        raise type_error(f"Integers cannot be raised to negative powers, got "
                         f"integer_pow({x.str_short()}, {y})")
    return x


def _integer_pow_emit(trace, vals, avals, y):
    return trace.emit("ember.integer_pow", vals, avals, {"y": core.i64_attr(y)})


integer_pow_p = Primitive("integer_pow", _integer_pow_rule, _integer_pow_emit)


def integer_pow(x, y):
    """`x ** y` for a Python int `y` (JAX's `lax.integer_pow`): the op
    `ember.integer_pow`, computed by squaring and multiplying."""
    y = builtins.int(y)
    return integer_pow_p.bind(as_value(x), y=y)


def _fill(value, dtype):
    """A fill value in `dtype`: Python ints wrap into integer types, as
    JAX's lax.full converts them."""
    if dtype is not None and isinstance(value, int) and not isinstance(value, bool):
        dt = dtypes.canonicalize_dtype(dtype)
        if np.issubdtype(dt, np.integer):
            value = np.asarray(value).astype(dt)
    return core.asarray_concrete(value, dtype)


def full_like(x, fill_value, dtype=None, shape=None):
    x = as_value(x)
    weak = dtype is None and x.weak_type  # (JAX's: a weak x gives a weak result)
    dtype = dtype or x.dtype
    shape = x.shape if shape is None else tuple(shape)
    v = _fill(fill_value, dtype) if not isinstance(fill_value, core.Value) \
        else convert_element_type(fill_value, dtype)
    if weak:
        v = convert_element_type(v, dtype, True)
    return broadcast(v, shape) if shape else v


def full(shape, fill_value, dtype=None):
    v = _fill(fill_value, dtype) if not isinstance(fill_value, core.Value) \
        else (convert_element_type(fill_value, dtype) if dtype else fill_value)
    return broadcast(v, tuple(shape))


def _square_rule(x):
    if dtypes.is_bool(x.dtype):
        raise type_error("square does not accept dtype bool. Accepted dtypes are subtypes "
                         "of integer, floating, complexfloating.")
    return x


def _square_emit(trace, vals, avals):
    # JAX's `square` primitive is `integer_pow` with y = 2 (its derivative
    # rule too); the mark names it `square` in jaxprs and checkpoint policies.
    return trace.emit("ember.integer_pow", vals, avals,
                      {"y": core.i64_attr(2),
                       "ember.jax_name": ir.StringAttr.get("square", core.context())})


square_p = Primitive("square", _square_rule, _square_emit)


def square(x):
    """`x * x` (JAX's `lax.square`)."""
    return square_p.bind(as_value(x))


def reciprocal(x):
    return div(full_like(x, 1), x)


def tanh_(x):
    return tanh(x)


def squeeze(x, dimensions):
    x = as_value(x)
    dims = {int(d) % builtins.max(x.ndim, 1) for d in dimensions}
    for d in sorted(dims):
        if x.shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one, got shape={x.shape} and dimensions={tuple(dimensions)}")
    return reshape(x, [n for i, n in enumerate(x.shape) if i not in dims])


def expand_dims(x, dimensions):
    """`x` with size-1 dimensions at `dimensions` (positions in the result;
    negative ones count from its end, as JAX's)."""
    x = as_value(x)
    ndim = x.ndim + len(dimensions)
    dims = sorted(int(d) % ndim if -ndim <= int(d) < ndim else _bad_dim(d, ndim)
                  for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dimensions)}")
    shape = list(x.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(x, shape)


def _bad_dim(d, ndim):
    raise ValueError(f"axis {d} is out of bounds for array of dimension {ndim}")


# Providers of named-axis indices (the axes of named vmaps, shard_map and
# pmap; a plgpu kernel's grid, cluster and thread names): each takes a name
# and returns its index, or None if it does not know the name.
axis_index_providers = []


def axis_index(axis_name):
    for provider in axis_index_providers:
        i = provider(axis_name)
        if i is not None:
            return i
    raise NameError(f"unbound axis name: {axis_name} (at {core.where()})")


# JAX's `jax._src.lax` is a package whose module `lax` holds these
# functions (its primitives tutorial imports `from jax._src.lax import lax`).
lax = sys.modules[__name__]
