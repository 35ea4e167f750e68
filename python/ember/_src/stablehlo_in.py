"""StableHLO in: a StableHLO module (MLIR's generic form, e.g. what JAX's
`jax.export` gives after `mlir_module()`) as an Ember function.

The module is parsed with the `stablehlo`/`chlo` dialects unregistered
(Ember's MLIR does not carry them; every op in generic form still parses and
keeps its attributes), then each op is emitted through Ember's `lax`, so the
result is an `ember` program that Ember compiles, differentiates and batches
with its own passes. `from_stablehlo` returns an `Exported` (traced once for
the module's argument types). The ops Ember reads are listed in
docs/design.md ("StableHLO in"); others raise NotImplementedError naming the op.
"""

import re

import numpy as np

from ember._mlir import ir

from . import control_flow, convolution, core, dtypes, lax_linalg, shape_poly
from . import lax as L
from .config import config
from .stablehlo_out import _enum, _is_complex, _is_float, _split, attr_text, module_functions
from .stablehlo_out import _ints as _attr_ints

_UNARY = {
    "negate": L.neg, "abs": L.abs, "sign": L.sign, "floor": L.floor, "ceil": L.ceil,
    "round_nearest_afz": lambda x: L.round(x, L.RoundingMethod.AWAY_FROM_ZERO),
    "round_nearest_even": lambda x: L.round(x, L.RoundingMethod.TO_NEAREST_EVEN),
    "exponential": L.exp, "exponential_minus_one": L.expm1, "log": L.log,
    "log_plus_one": L.log1p, "logistic": L.logistic, "tanh": L.tanh, "sine": L.sin,
    "cosine": L.cos, "tan": L.tan, "sqrt": L.sqrt, "rsqrt": L.rsqrt, "cbrt": L.cbrt,
    "is_finite": L.is_finite, "popcnt": L.population_count, "count_leading_zeros": L.clz,
    "not": L.bitwise_not, "real": L.real, "imag": L.imag,
    # chlo (also the names of `stablehlo.composite` ops)
    "erf": L.erf, "erf_inv": L.erf_inv, "lgamma": L.lgamma, "digamma": L.digamma,
    "bessel_i1e": L.bessel_i1e, "asin": L.asin, "acos": L.acos, "atan": L.atan,
    "sinh": L.sinh, "cosh": L.cosh, "asinh": L.asinh, "acosh": L.acosh, "atanh": L.atanh,
    "conj": L.conj,
}
_BINARY = {
    "add": L.add, "subtract": L.sub, "multiply": L.mul, "divide": L.div,
    "remainder": L.rem, "power": L.pow, "maximum": L.max, "minimum": L.min,
    "atan2": L.atan2, "and": L.bitwise_and, "or": L.bitwise_or, "xor": L.bitwise_xor,
    "shift_left": L.shift_left, "shift_right_logical": L.shift_right_logical,
    "shift_right_arithmetic": L.shift_right_arithmetic, "complex": L.complex,
    "next_after": L.nextafter,
}
_COMBINERS = {"add": L.add, "multiply": L.mul, "maximum": L.max, "minimum": L.min,
              "and": L.bitwise_and, "or": L.bitwise_or, "xor": L.bitwise_xor}
_COMPARE = {"EQ": L.eq, "NE": L.ne, "LT": L.lt, "LE": L.le, "GT": L.gt, "GE": L.ge}


def _dtype(type_text):
    return dtypes.from_mlir_name(_split(type_text)[1])


def _attr(op, name, default=None):
    try:
        return op.attributes[name]
    except (KeyError, IndexError, ValueError):
        return default


def _ints(attr):
    """The integers of an array, integer or dense attribute."""
    if str(attr).startswith("dense<"):
        return np.asarray(_dense(attr)).astype(int).ravel().tolist()
    return _attr_ints(attr)


def _fields(attr):
    """The `name = value` fields of an opaque `#stablehlo.x<...>` attribute:
    lists of ints as lists, numbers as ints."""
    text = str(attr)
    body = text[text.index("<") + 1:text.rindex(">")]
    out = {}
    for name, value in re.findall(r"(\w+)\s*=\s*(\[[^\]]*\]|-?\d+)", body):
        out[name] = ([int(v) for v in value[1:-1].split(",") if v.strip()]
                     if value.startswith("[") else int(value))
    return out


def _dense(attr):
    """A DenseElementsAttr as a NumPy array (parsed from its text: dense
    literals are decimal, hexadecimal or booleans)."""
    text = str(attr)
    m = re.match(r"dense<(.*)>\s*:\s*(tensor<.*>)$", text, re.S)
    if not m:
        raise NotImplementedError(f"StableHLO import: constant {text[:80]!r}")
    body, ttype = m.group(1).strip(), m.group(2)
    shape, elt = _split(ttype)
    dt = _dtype(ttype)
    if body.startswith('"0x') or (body.startswith("0x") and "," not in body
                                  and len(body) - 2 > 2 * dt.itemsize):
        raw = bytes.fromhex(body.strip('"')[2:])
        return np.frombuffer(raw, dt).reshape(shape) if len(raw) > dt.itemsize else \
            np.full(shape, np.frombuffer(raw, dt)[0])
    vals = re.findall(r"\(\s*[^()]*\)|true|false|0x[0-9A-Fa-f]+"
                      r"|[-+]?(?:inf|nan|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", body)

    def scalar(tok, elt):
        if tok == "true":
            return True
        if tok == "false":
            return False
        if tok.startswith("("):
            re_, im = tok[1:-1].split(",")
            part = elt[len("complex<"):-1]
            return complex(scalar(re_.strip(), part), scalar(im.strip(), part))
        if tok.startswith("0x"):
            pdt = dtypes.from_mlir_name(elt)
            if _is_float(elt):
                return np.array(int(tok, 16), f"u{pdt.itemsize}").view(pdt).item()
            return int(tok, 16)
        if tok in ("inf", "+inf"):
            return np.inf
        if tok == "-inf":
            return -np.inf
        if tok == "nan":
            return np.nan
        return float(tok) if (_is_float(elt) or "." in tok or "e" in tok) else int(tok)

    flat = [scalar(t, elt) for t in vals]
    if _is_float(elt):
        arr = np.array(flat, np.float64).astype(dt)
    elif _is_complex(elt):
        arr = np.array(flat, np.complex128).astype(dt)
    elif elt.startswith("ui") or elt.startswith("i") and elt != "i1":
        bits = int(elt.lstrip("ui"))
        arr = np.array([v & ((1 << bits) - 1) if isinstance(v, int) and v < 0
                        and elt.startswith("ui") else v for v in flat], dtype=np.int64
                       if not elt.startswith("ui") else np.uint64).astype(dt)
    else:
        arr = np.array(flat, dt)
    size = int(np.prod(shape)) if shape else 1
    return np.full(shape, arr[0]) if arr.size == 1 and size != 1 else arr.reshape(shape)


def _body_ops(region):
    return [o.operation for o in region.blocks[0].operations]


def _single_combiner(region):
    """The op name when a region is `return op(arg0, arg1)`, 'replace' when
    it returns its second argument; else None."""
    block = region.blocks[0]
    ops = _body_ops(region)
    args = list(block.arguments)
    if len(ops) == 1 and len(args) == 2 and ops[0].operands[0] == args[1]:
        return "replace"
    if len(ops) == 2 and len(args) == 2:
        op = ops[0]
        kind = op.name.split(".", 1)[1]
        if kind in _COMBINERS and set(op.operands) == set(args) and \
                ops[1].operands[0] == op.results[0]:
            return kind
    return None



def _preset_of(algorithm):
    """JAX's DotAlgorithmPreset name of a StableHLO dot algorithm."""
    from .stablehlo_out import DOT_ALGORITHMS

    f = dict(re.findall(r"(\w+) = (\w+)", algorithm))
    key = (f.get("lhs_precision_type"), f.get("accumulation_type"),
           int(f.get("num_primitive_operations", 1)))
    for name, spec in DOT_ALGORITHMS.items():
        if spec == key and f.get("rhs_precision_type") == spec[0]:
            return name
    raise NotImplementedError(f"StableHLO in: the dot algorithm {algorithm} is not one of "
                              "JAX's presets")

class _Dims:
    """An integer tensor of dimension values (ints and symbolic `DimExpr`s):
    what `get_dimension_size` gives in a module with symbolic shapes, and the
    shape arithmetic on it, computed while importing (as JAX's shape
    refinement does) so that `dynamic_broadcast_in_dim`, `dynamic_reshape`,
    `dynamic_iota`, ... get shapes. Used as data it becomes a traced value."""

    def __init__(self, values, dtype):
        self.v = np.empty(np.shape(values), dtype=object)
        self.v[...] = values
        self.dtype = np.dtype(dtype)

    @property
    def shape(self):
        return self.v.shape

    def dims(self):
        return [d if isinstance(d, shape_poly.DimExpr) else int(d) for d in self.v.ravel()]


def _trunc_div(a, b):
    """StableHLO's integer division (towards zero); floor division for a
    symbolic dimension (>= 0) by a positive constant."""
    if isinstance(a, shape_poly.DimExpr) or isinstance(b, shape_poly.DimExpr):
        return a // b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_rem(a, b):
    if isinstance(a, shape_poly.DimExpr) or isinstance(b, shape_poly.DimExpr):
        return a % b
    return a - b * _trunc_div(a, b)


def _dim_sign(a):
    if not isinstance(a, shape_poly.DimExpr):
        return (a > 0) - (a < 0)
    if a >= 1:
        return 1
    raise shape_poly.InconclusiveDimensionOperation(f"sign of {a}")


_DIM_BINARY = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b, "divide": _trunc_div, "remainder": _trunc_rem,
    "maximum": shape_poly.dim_max, "minimum": shape_poly.dim_min,
    "and": lambda a, b: a and b if isinstance(a, bool) else a & b,
    "or": lambda a, b: a or b if isinstance(a, bool) else a | b,
}
_DIM_COMPARE = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a != b,
                "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b,
                "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b}
# Ops that take shapes as operands: they read `_Dims` themselves.
_SHAPE_CONSUMERS = {"dynamic_iota", "dynamic_broadcast_in_dim", "dynamic_reshape",
                    "dynamic_gather", "real_dynamic_slice", "dynamic_pad", "custom_call"}


class _Importer:
    def __init__(self, functions):
        self.functions = functions
        # QR read by meaning: the matrix each geqrf's `tau` result came from
        # (by the result object), so that the orgqr/ungqr given that tau
        # returns the Q of that matrix. Householder vectors are not exposed
        # by Ember's `qr`, so geqrf's factored matrix holds R alone (zeros
        # below it), which is what JAX reads of it.
        self._qr_sources = {}

    def call(self, fn, args):
        """A function's results (dimension values stay `_Dims` between
        functions)."""
        return self.block(fn.regions[0].blocks[0], args, {}, keep_dims=True)

    def block(self, block, args, outer, keep_dims=False):
        env = dict(outer)
        for a, v in zip(block.arguments, args):
            env[a] = v
        for op in block.operations:
            op = op.operation
            if op.name in ("func.return", "stablehlo.return"):
                outs = [env[o] for o in op.operands]
                return outs if keep_dims else [self._val(v) for v in outs]
            outs = self.op(op, [env[o] for o in op.operands], env)
            for r, v in zip(op.results, outs):
                env[r] = v
        return []

    def op(self, op, ins, env):
        name = op.name
        dialect, kind = name.split(".", 1)
        rtypes = [str(r.type) for r in op.results]
        if name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            return self.call(self.functions[callee], ins)
        # Shape arithmetic (on dimension sizes, or on small integer constants,
        # which shape operands are built from) is computed here.
        if kind not in _SHAPE_CONSUMERS and ins and (
                any(isinstance(v, _Dims) for v in ins) or
                all(type(v) is core.Array and v.size <= 64 and dtypes.is_int(v.dtype)
                    for v in ins)):
            out = self._dims_op(op, kind, ins, rtypes)
            if out is not None:
                return out
            ins = [self._val(v) for v in ins]
        if dialect in ("stablehlo", "chlo"):
            if kind in _UNARY and len(ins) == 1:
                return [_UNARY[kind](ins[0])]
            if kind in _BINARY and len(ins) == 2:
                return [_BINARY[kind](ins[0], ins[1])]
            method = getattr(self, "s_" + kind, None)
            if method is not None:
                out = method(op, ins, rtypes, env)
                return out if isinstance(out, (list, tuple)) else [out]
        raise NotImplementedError(f"StableHLO import: Ember does not read {name!r} yet")

    # -- shapes as values (symbolic dimensions) ---------------------------
    def _dims_op(self, op, kind, ins, rtypes):
        """`op` computed on dimension values in Python, or None when it cannot
        be (a traced operand, a float result, an undecidable comparison)."""
        vals = []
        for v in ins:
            if isinstance(v, _Dims):
                vals.append(v.v)
            elif isinstance(v, core.Array) and (dtypes.is_int(v.dtype) or
                                                dtypes.is_bool(v.dtype)):
                arr = np.empty(v.shape, dtype=object)
                arr[...] = np.asarray(v._value).tolist()
                vals.append(arr)
            else:
                return None
        out_dt = _dtype(rtypes[0]) if len(rtypes) == 1 else None
        if out_dt is None or not (dtypes.is_int(out_dt) or dtypes.is_bool(out_dt)):
            return None
        shape = _split(rtypes[0])[0]
        if None in shape:
            return None
        try:
            if kind in _DIM_BINARY and len(vals) == 2:
                a, b = np.broadcast_arrays(*vals)
                r = [_DIM_BINARY[kind](x, y) for x, y in zip(a.ravel(), b.ravel())]
            elif kind == "compare":
                a, b = np.broadcast_arrays(*vals)
                f = _DIM_COMPARE[_enum(op.attributes["comparison_direction"])]
                r = [bool(f(x, y)) for x, y in zip(a.ravel(), b.ravel())]
            elif kind == "select":
                p, a, b = np.broadcast_arrays(*vals)
                r = [x if bool(c) else y for c, x, y in zip(p.ravel(), a.ravel(), b.ravel())]
            elif kind == "sign":
                r = [_dim_sign(x) for x in vals[0].ravel()]
            elif kind == "negate":
                r = [-x for x in vals[0].ravel()]
            elif kind in ("convert", "reshape"):
                r = list(vals[0].ravel())
                if dtypes.is_bool(out_dt):
                    r = [x != 0 for x in r]
            elif kind == "broadcast_in_dim":
                dims = _ints(op.attributes["broadcast_dimensions"])
                expanded = [1] * len(shape)
                for d, n in zip(dims, vals[0].shape):
                    expanded[d] = n
                r = list(np.broadcast_to(vals[0].reshape(expanded), shape).ravel())
            elif kind == "concatenate":
                r = list(np.concatenate(vals, _ints(op.attributes["dimension"])).ravel())
            elif kind == "slice":
                sl = tuple(slice(a, b, c) for a, b, c in zip(
                    _ints(op.attributes["start_indices"]),
                    _ints(op.attributes["limit_indices"]), _ints(op.attributes["strides"])))
                r = list(vals[0][sl].ravel())
            else:
                return None
        except (shape_poly.InconclusiveDimensionOperation, ZeroDivisionError):
            return None
        if dtypes.is_int(out_dt):
            info = np.iinfo(out_dt)
            if any(isinstance(x, int) and not info.min <= x <= info.max for x in r):
                return None  # wraps around: computed by the program instead
        res = np.empty(len(r), dtype=object)
        res[:] = r
        return [_Dims(res.reshape(shape), out_dt)]

    def _val(self, v):
        """A `_Dims` as an Ember value (a constant, or traced dimension values)."""
        if not isinstance(v, _Dims):
            return v
        dims = v.dims()
        if not any(isinstance(d, shape_poly.DimExpr) for d in dims):
            return core.Array(np.asarray(dims, dtype=v.dtype).reshape(v.shape))
        parts = [L.convert_element_type(core.as_value(d), v.dtype) for d in dims]
        flat = L.concatenate([L.reshape(p, (1,)) for p in parts], 0)
        return L.reshape(flat, v.shape)

    def _shape(self, v, what):
        if isinstance(v, _Dims):
            return v.dims()
        if isinstance(v, core.Array):
            return [int(d) for d in np.asarray(v._value).ravel()]
        raise NotImplementedError(f"StableHLO import: the {what} of a dynamic op is "
                                  "computed from array data (Ember reads shapes computed "
                                  "from dimension sizes)")

    def s_get_dimension_size(self, op, ins, rtypes, env):
        d = _ints(op.attributes["dimension"])
        return _Dims(ins[0].shape[d], _dtype(rtypes[0]))

    def s_dynamic_iota(self, op, ins, rtypes, env):
        return L.broadcasted_iota(_dtype(rtypes[0]), tuple(self._shape(ins[0], "shape")),
                                  _ints(op.attributes["iota_dimension"]))

    def s_dynamic_broadcast_in_dim(self, op, ins, rtypes, env):
        return L.broadcast_in_dim(self._val(ins[0]), tuple(self._shape(ins[1], "shape")),
                                  tuple(_ints(op.attributes["broadcast_dimensions"])))

    def s_dynamic_reshape(self, op, ins, rtypes, env):
        return L.reshape(self._val(ins[0]), tuple(self._shape(ins[1], "shape")))

    def s_real_dynamic_slice(self, op, ins, rtypes, env):
        return L.slice(self._val(ins[0]), self._shape(ins[1], "start"),
                       self._shape(ins[2], "limit"), self._shape(ins[3], "strides"))

    def s_dynamic_pad(self, op, ins, rtypes, env):
        lo, hi, it = (self._shape(v, "padding") for v in ins[2:5])
        return L.pad(self._val(ins[0]), self._val(ins[1]), list(zip(lo, hi, it)))

    def s_dynamic_gather(self, op, ins, rtypes, env):
        return self._gather(op, self._val(ins[0]), self._val(ins[1]),
                            tuple(self._shape(ins[2], "slice sizes")))

    def _shape_assertion(self, op, ins):
        """JAX's `shape_assertion`: checked here when the dimensions decide
        it (Ember's `Exported.call` checks the arguments' shapes itself)."""
        pred = ins[0]
        if isinstance(pred, _Dims) and not all(bool(x) for x in pred.v.ravel()):
            msg = ir.StringAttr(op.attributes["error_message"]).value
            vals = [v.dims()[0] if isinstance(v, _Dims) else "?" for v in ins[1:]]
            raise ValueError(msg.format(*vals))
        return []

    # -- elementwise ------------------------------------------------------
    def s_constant(self, op, ins, rtypes, env):
        return core.Array(_dense(attr_text(op, "value")))

    def s_compare(self, op, ins, rtypes, env):
        a, b = ins
        direction = _enum(op.attributes["comparison_direction"])
        ctype = _attr(op, "compare_type")
        if ctype is not None and _enum(ctype) == "TOTALORDER":
            a, b = _total_order_key(a), _total_order_key(b)
        return _COMPARE[direction](a, b)

    def s_select(self, op, ins, rtypes, env):
        p, a, b = ins
        if p.ndim == 0 and a.ndim:
            p = L.broadcast_in_dim(p, a.shape, ())
        return L.select(p, a, b)

    def s_clamp(self, op, ins, rtypes, env):
        lo, x, hi = ins
        lo = L.broadcast_in_dim(lo, x.shape, ()) if lo.ndim == 0 and x.ndim else lo
        hi = L.broadcast_in_dim(hi, x.shape, ()) if hi.ndim == 0 and x.ndim else hi
        return L.clamp(lo, x, hi)

    def s_convert(self, op, ins, rtypes, env):
        x = ins[0]
        dt = _dtype(rtypes[0])
        if dtypes.is_complex(x.dtype) and not np.issubdtype(dt, np.complexfloating):
            x = L.real(x)
        return L.convert_element_type(x, dt)

    def s_bitcast_convert(self, op, ins, rtypes, env):
        return L.bitcast_convert_type(ins[0], _dtype(rtypes[0]))

    def s_iota(self, op, ins, rtypes, env):
        shape = _split(rtypes[0])[0]
        return L.broadcasted_iota(_dtype(rtypes[0]), shape,
                                  _ints(op.attributes["iota_dimension"]))

    # -- structural -------------------------------------------------------
    def s_broadcast_in_dim(self, op, ins, rtypes, env):
        return L.broadcast_in_dim(ins[0], _split(rtypes[0])[0],
                                  tuple(_ints(op.attributes["broadcast_dimensions"])))

    def s_reshape(self, op, ins, rtypes, env):
        return L.reshape(ins[0], _split(rtypes[0])[0])

    def s_transpose(self, op, ins, rtypes, env):
        return L.transpose(ins[0], tuple(_ints(op.attributes["permutation"])))

    def s_slice(self, op, ins, rtypes, env):
        return L.slice(ins[0], _ints(op.attributes["start_indices"]),
                       _ints(op.attributes["limit_indices"]), _ints(op.attributes["strides"]))

    def s_dynamic_slice(self, op, ins, rtypes, env):
        return L.dynamic_slice(ins[0], ins[1:], _ints(op.attributes["slice_sizes"]))

    def s_dynamic_update_slice(self, op, ins, rtypes, env):
        return L.dynamic_update_slice(ins[0], ins[1], ins[2:])

    def s_pad(self, op, ins, rtypes, env):
        lo, hi, inner = (_ints(op.attributes[k]) for k in
                         ("edge_padding_low", "edge_padding_high", "interior_padding"))
        return L.pad(ins[0], ins[1], list(zip(lo, hi, inner)))

    def s_concatenate(self, op, ins, rtypes, env):
        return L.concatenate(ins, _ints(op.attributes["dimension"]))

    def s_reverse(self, op, ins, rtypes, env):
        return L.rev(ins[0], _ints(op.attributes["dimensions"]))

    def s_optimization_barrier(self, op, ins, rtypes, env):
        return list(L.optimization_barrier(tuple(ins)))

    # -- reductions -------------------------------------------------------
    def s_reduce(self, op, ins, rtypes, env):
        dims = _ints(op.attributes["dimensions"])
        n = len(ins) // 2
        region = op.regions[0]
        kind = _single_combiner(region)
        if n == 1 and kind in _COMBINERS:
            return L.reduce(ins[0], ins[1], _COMBINERS[kind], dims)
        if n == 2 and len(dims) == 1:
            arg = self._arg_reduce(op, region, dims[0])
            if arg is not None:
                x = ins[0]
                idx = (L.argmax if arg == "GT" else L.argmin)(x, dims[0], _dtype(rtypes[1]))
                val = (L.reduce_max if arg == "GT" else L.reduce_min)(x, dims)
                return [val, idx]
        raise NotImplementedError(
            "StableHLO import: a stablehlo.reduce whose body is not a single add, multiply, "
            "maximum, minimum, and, or or xor (or JAX's argmax/argmin)")

    def _arg_reduce(self, op, region, dim):
        """'GT' or 'LT' when the reduce is JAX's argmax / argmin: (values, an
        iota along the reduced dimension) compared by value."""
        src = op.operands[1].owner
        if getattr(src, "name", None) not in ("stablehlo.iota", "stablehlo.dynamic_iota") or \
                _ints(src.attributes["iota_dimension"]) != dim:
            return None
        args = list(region.blocks[0].arguments)
        for o in _body_ops(region):
            if o.name == "stablehlo.compare" and set(o.operands) == {args[0], args[2]}:
                d = _enum(o.attributes["comparison_direction"])
                if d in ("GT", "LT"):
                    return d if o.operands[0] == args[0] else {"GT": "LT", "LT": "GT"}[d]
        return None

    def s_reduce_window(self, op, ins, rtypes, env):
        if len(ins) != 2:
            raise NotImplementedError("StableHLO import: variadic stablehlo.reduce_window")
        kind = _single_combiner(op.regions[0])
        if kind not in _COMBINERS:
            raise NotImplementedError("StableHLO import: a stablehlo.reduce_window whose body "
                                      "is not a single add, multiply, maximum or minimum")
        rank = ins[0].ndim
        for k in ("base_dilations", "window_dilations"):
            d = _attr(op, k)
            if d is not None and any(v != 1 for v in _ints(d)):
                raise NotImplementedError(f"StableHLO import: reduce_window with {k}")
        window = _ints(op.attributes["window_dimensions"])
        strides = _ints(op.attributes["window_strides"]) if _attr(op, "window_strides") \
            is not None else [1] * rank
        pads = np.asarray(_dense(op.attributes["padding"])).reshape(rank, 2).tolist() \
            if _attr(op, "padding") is not None else [(0, 0)] * rank
        return L.reduce_window(ins[0], ins[1], _COMBINERS[kind], window, strides,
                               [tuple(p) for p in pads])

    def _dynamic_reduce_window(self, op, ins):
        """JAX's `stablehlo.dynamic_reduce_window` custom call (a reduce_window
        whose window, strides, dilations and padding are operands)."""
        reducer = ir.ArrayAttr(op.attributes["called_computations"])
        fn = self.functions[ir.FlatSymbolRefAttr(reducer[0]).value]
        kind = _single_combiner(fn.regions[0])
        if len(ins) != 7 or kind not in _COMBINERS:
            raise NotImplementedError("StableHLO import: a dynamic_reduce_window that is not "
                                      "one add, multiply, maximum or minimum")
        window, strides, base, wdil = (self._shape(v, "window") for v in ins[2:6])
        if any(d != 1 for d in base + wdil):
            raise NotImplementedError("StableHLO import: dynamic_reduce_window with dilations")
        pads = self._shape(ins[6], "padding")
        return [L.reduce_window(self._val(ins[0]), self._val(ins[1]), _COMBINERS[kind],
                                window, strides, list(zip(pads[0::2], pads[1::2])))]

    def s_sort(self, op, ins, rtypes, env):
        region = op.regions[0]
        args = list(region.blocks[0].arguments)
        # The keys are the operands the comparator reads (JAX compares them in
        # order, in its total order); the direction is that of its compares.
        used, directions = set(), set()
        derived = {}
        for o in _body_ops(region):
            srcs = set()
            for v in o.operands:
                if v in args:
                    srcs.add(args.index(v))
                srcs |= derived.get(v, set())
            used |= {k // 2 for k in srcs}
            for r in o.results:
                derived[r] = srcs
            if o.name == "stablehlo.compare" and len(o.operands) == 2:
                a, b = (derived.get(v, {args.index(v)} if v in args else set())
                        for v in o.operands)
                d = _enum(o.attributes["comparison_direction"])
                if a and b and d in ("LT", "GT") and len({k // 2 for k in a | b}) == 1:
                    first = min(a) % 2 == 0
                    directions.add(d if first else {"LT": "GT", "GT": "LT"}[d])
        num_keys = max(used) + 1 if used else 1
        dim = _ints(op.attributes["dimension"])
        if directions == {"GT"}:
            # Stable descending: reverse, sort ascending, reverse.
            rev = [L.rev(x, (dim,)) for x in ins]
            return [L.rev(x, (dim,)) for x in L.sort(tuple(rev), dim, True, num_keys)]
        if directions - {"LT"}:
            raise NotImplementedError("StableHLO import: a stablehlo.sort whose comparator "
                                      "mixes directions")
        return list(L.sort(tuple(ins), dim, True, num_keys))

    # -- contraction, gather, scatter -------------------------------------
    def s_dot_general(self, op, ins, rtypes, env):
        f = _fields(op.attributes["dot_dimension_numbers"])
        dn = ((f.get("lhs_contracting_dimensions", []), f.get("rhs_contracting_dimensions", [])),
              (f.get("lhs_batching_dimensions", []), f.get("rhs_batching_dimensions", [])))
        # (JAX writes precision_config = [DEFAULT, DEFAULT] on every
        # product; kept as the product's precision.)
        precision = None
        if "precision_config" in op.attributes:
            names = re.findall(r"precision (\w+)", str(op.attributes["precision_config"]))
            precision = tuple(names) if len(names) == 2 else None
        if "algorithm" in op.attributes:  # (JAX's DotAlgorithmPreset)
            precision = _preset_of(str(op.attributes["algorithm"]))
        return L.dot_general(ins[0], ins[1], dn, precision=precision,
                             preferred_element_type=_dtype(rtypes[0]))

    def s_gather(self, op, ins, rtypes, env):
        return self._gather(op, ins[0], ins[1], tuple(_ints(op.attributes["slice_sizes"])))

    def _gather(self, op, operand, idx, slice_sizes):
        f = _fields(op.attributes["dimension_numbers"])
        ivd = f.get("index_vector_dim", 0)
        idx = _index_vectors_last(idx, ivd)
        dn = L.GatherDimensionNumbers(
            offset_dims=tuple(f.get("offset_dims", [])),
            collapsed_slice_dims=tuple(f.get("collapsed_slice_dims", [])),
            start_index_map=tuple(f.get("start_index_map", [])),
            operand_batching_dims=tuple(f.get("operand_batching_dims", [])),
            start_indices_batching_dims=tuple(_moved(f.get("start_indices_batching_dims", []),
                                                     ivd, idx.ndim)))
        return L.gather(operand, idx, dn, slice_sizes, mode=L.GatherScatterMode.CLIP)

    def s_scatter(self, op, ins, rtypes, env):
        if len(ins) != 3:
            raise NotImplementedError("StableHLO import: variadic stablehlo.scatter")
        operand, idx, upd = ins
        f = _fields(op.attributes["scatter_dimension_numbers"])
        ivd = f.get("index_vector_dim", 0)
        idx = _index_vectors_last(idx, ivd)
        kind = _single_combiner(op.regions[0])
        fn = {"replace": L.scatter, "add": L.scatter_add, "multiply": L.scatter_mul,
              "minimum": L.scatter_min, "maximum": L.scatter_max}.get(kind)
        if fn is None:
            raise NotImplementedError("StableHLO import: a stablehlo.scatter whose body is not "
                                      "a replacement, add, multiply, minimum or maximum")
        dn = L.ScatterDimensionNumbers(
            update_window_dims=tuple(f.get("update_window_dims", [])),
            inserted_window_dims=tuple(f.get("inserted_window_dims", [])),
            scatter_dims_to_operand_dims=tuple(f.get("scatter_dims_to_operand_dims", [])),
            operand_batching_dims=tuple(f.get("input_batching_dims", [])),
            scatter_indices_batching_dims=tuple(_moved(
                f.get("scatter_indices_batching_dims", []), ivd, idx.ndim)))
        return fn(operand, idx, upd, dn, mode=L.GatherScatterMode.FILL_OR_DROP)

    # -- control flow -----------------------------------------------------
    def s_while(self, op, ins, rtypes, env):
        cond_b, body_b = op.regions[0].blocks[0], op.regions[1].blocks[0]

        def cond(carry):
            return self.block(cond_b, list(carry), env)[0]

        def body(carry):
            return tuple(self.block(body_b, list(carry), env))

        return list(control_flow.while_loop(cond, body, tuple(ins)))

    def s_case(self, op, ins, rtypes, env):
        n = len(op.regions)
        index = ins[0]
        # StableHLO runs the last branch for an index out of [0, n).
        index = L.select(L.bitwise_or(L.lt(index, L.full_like(index, 0)),
                                      L.ge(index, L.full_like(index, n))),
                         L.full_like(index, n - 1), index)
        branches = [lambda r=r: tuple(self.block(r.blocks[0], [], env)) for r in op.regions]
        return list(control_flow.switch(index, branches))

    # -- linear algebra, convolution, composites --------------------------
    def s_cholesky(self, op, ins, rtypes, env):
        return self.s_cholesky_like(ins[0], str(_attr(op, "lower", "false")) == "true")

    def s_triangular_solve(self, op, ins, rtypes, env):
        trans = _enum(op.attributes["transpose_a"])
        return lax_linalg.triangular_solve(
            ins[0], ins[1], left_side=str(op.attributes["left_side"]) == "true",
            lower=str(op.attributes["lower"]) == "true",
            unit_diagonal=str(op.attributes["unit_diagonal"]) == "true",
            transpose_a=trans in ("TRANSPOSE", "ADJOINT"), conjugate_a=trans == "ADJOINT")

    def s_fft(self, op, ins, rtypes, env):
        from . import lax_extras

        kind, lengths = _attr(op, "fft_type"), _attr(op, "fft_length")
        if kind is None or lengths is None:
            raise ValueError("StableHLO import: stablehlo.fft needs its fft_type and "
                             "fft_length attributes")
        return lax_extras.fft(ins[0], _enum(kind), _ints(lengths))

    def s_convolution(self, op, ins, rtypes, env):
        lhs_spec, rhs_spec, out_spec = _conv_dims(str(op.attributes["dimension_numbers"]))
        rank = ins[0].ndim - 2

        def get(k, default):
            v = _attr(op, k)
            return default if v is None else _ints(v)

        padding = _attr(op, "padding")
        pads = (np.asarray(_dense(padding)).reshape(rank, 2).tolist() if padding is not None
                else [(0, 0)] * rank)
        return convolution.conv_general_dilated(
            ins[0], ins[1], get("window_strides", [1] * rank), [tuple(p) for p in pads],
            lhs_dilation=get("lhs_dilation", [1] * rank),
            rhs_dilation=get("rhs_dilation", [1] * rank),
            dimension_numbers=convolution.ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec),
            feature_group_count=_ints(op.attributes["feature_group_count"]),
            batch_group_count=_ints(op.attributes["batch_group_count"]),
            preferred_element_type=_dtype(rtypes[0]))

    def s_composite(self, op, ins, rtypes, env):
        name = ir.StringAttr(op.attributes["name"]).value
        short = name.split(".", 1)[1] if "." in name else name
        if name.startswith("chlo.") and short in _UNARY and len(ins) == 1:
            return [_UNARY[short](ins[0])]
        callee = ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value
        return self.call(self.functions[callee], ins)

    def s_custom_call(self, op, ins, rtypes, env):
        """The LAPACK calls of JAX's CPU lowering (`lapack_?potrf_ffi`, `trsm`,
        `getrf`, `syevd`, `gesdd`), read as Ember's linear algebra ops."""
        target = ir.StringAttr(op.attributes["call_target_name"]).value
        if target == "shape_assertion":
            return self._shape_assertion(op, ins)
        if target == "stablehlo.dynamic_reduce_window":
            return self._dynamic_reduce_window(op, ins)
        ins = [self._val(v) for v in ins]
        m = re.fullmatch(
            r"lapack_[sdcz](potrf|trsm|getrf|syevd|heevd|gesdd|geqrf|orgqr|ungqr)_ffi", target)
        if m is None:
            raise NotImplementedError(
                f"StableHLO import: Ember does not read the custom call {target!r} yet")
        cfg = {}
        conf = _attr(op, "mhlo.backend_config")
        if conf is not None:
            for named in ir.DictAttr(conf):
                cfg[named.name] = chr(_ints(named.attr)) if "ui8" in str(named.attr) else \
                    str(named.attr)
        kind = m.group(1)
        if kind == "geqrf":
            a = ins[0]
            rows, cols = a.shape[-2:]
            _, r = lax_linalg.qr(a, full_matrices=True)  # R: (..., m, n)
            tau = L.full(_split(rtypes[1])[0], 0, _dtype(rtypes[1]))
            self._qr_sources[id(tau)] = (a, tau)
            return [r, tau]
        if kind in ("orgqr", "ungqr"):
            src = self._qr_sources.get(id(ins[1]))
            if src is None:
                raise NotImplementedError(
                    f"StableHLO import: {target!r} on Householder vectors that do not come "
                    "from a geqrf in the same module (Ember's qr does not expose them)")
            a = src[0]
            rows, cols = a.shape[-2:]
            qcols = _split(rtypes[0])[0][-1]
            q, _ = lax_linalg.qr(a, full_matrices=qcols == rows and rows > cols)
            if q.shape[-1] != qcols:
                raise NotImplementedError(f"StableHLO import: {target!r} with {qcols} columns "
                                          f"for a {rows}x{cols} matrix")
            return [q]
        info_t = rtypes[-1]
        zero_info = L.full(_split(info_t)[0], 0, _dtype(info_t))
        if kind == "potrf":
            lower = cfg.get("uplo", "L") == "L"
            out = self.s_cholesky_like(ins[0], lower)
            bad = L.reduce_or(L.ne(out, out), tuple(range(out.ndim - 2, out.ndim)))
            return [out, L.convert_element_type(bad, _dtype(info_t))]
        if kind == "trsm":
            trans = cfg.get("trans_x", "N")
            return [lax_linalg.triangular_solve(
                ins[0], ins[1], left_side=cfg.get("side", "L") == "L",
                lower=cfg.get("uplo", "L") == "L", unit_diagonal=cfg.get("diag", "N") == "U",
                transpose_a=trans in ("T", "C"), conjugate_a=trans == "C")]
        if kind == "getrf":
            lu, pivots, _ = lax_linalg.lu(ins[0])
            return [lu, L.add(pivots, L.full_like(pivots, 1)), zero_info]
        if kind in ("syevd", "heevd"):
            v, w = lax_linalg.eigh(ins[0], lower=cfg.get("uplo", "L") == "L",
                                 symmetrize_input=False)
            return [v, w, zero_info]
        mode = cfg.get("mode", "S")
        if mode == "N":
            s_ = lax_linalg.svd(ins[0], full_matrices=False, compute_uv=False)
            unused = [L.full(_split(t)[0], 0, _dtype(t)) for t in rtypes[2:4]]
            return [ins[0], s_, *unused, zero_info]
        u, s_, vt = lax_linalg.svd(ins[0], full_matrices=mode == "A")
        return [ins[0], s_, u, vt, zero_info]

    def s_cholesky_like(self, a, lower):
        if not lower:
            a = _swap_last(a)
        lo = lax_linalg.cholesky(a, symmetrize_input=False)
        return lo if lower else _swap_last(lo)

    def s_top_k(self, op, ins, rtypes, env):
        return list(L.top_k(ins[0], _ints(op.attributes["k"])))


def _swap_last(a):
    perm = list(range(a.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return L.transpose(a, tuple(perm))


def _total_order_key(x):
    """Floats as signed integers in IEEE total order (for TOTALORDER
    compares); other types unchanged."""
    if not np.issubdtype(x.dtype, np.floating):
        return x
    width = np.dtype(x.dtype).itemsize * 8
    it = {16: np.int16, 32: np.int32, 64: np.int64}[width]
    i = L.bitcast_convert_type(x, it)
    sign = L.shift_right_arithmetic(i, L.full_like(i, width - 1))
    return L.bitwise_xor(i, L.bitwise_and(sign, L.full_like(i, np.iinfo(it).max)))


def _index_vectors_last(idx, ivd):
    """Indices with the index vector dimension last (JAX's convention)."""
    if ivd == idx.ndim:
        return L.reshape(idx, tuple(idx.shape) + (1,))
    if ivd != idx.ndim - 1:
        perm = [d for d in range(idx.ndim) if d != ivd] + [ivd]
        return L.transpose(idx, tuple(perm))
    return idx


def _moved(dims, ivd, rank):
    """Index batching dimensions renumbered after moving `ivd` last."""
    if ivd >= rank - 1:
        return list(dims)
    return [d - 1 if d > ivd else d for d in dims]


def _conv_dims(text):
    """(lhs, rhs, out) specs of `#stablehlo.conv<[b, 0, f]x[o, i, 0]->[b, 0, f]>`
    as ConvDimensionNumbers tuples (batch/out-feature, feature/in-feature,
    spatial dimensions in order)."""
    m = re.search(r"\[([^\]]*)\]x\[([^\]]*)\]->\[([^\]]*)\]", text)
    if not m:
        raise NotImplementedError(f"StableHLO import: convolution dimensions {text!r}")

    def spec(part, first, second):
        roles = [r.strip() for r in part.split(",")]
        spatial = sorted((int(r), k) for k, r in enumerate(roles) if r.isdigit())
        return (roles.index(first), roles.index(second)) + tuple(k for _, k in spatial)

    return (spec(m.group(1), "b", "f"), spec(m.group(2), "o", "i"), spec(m.group(3), "b", "f"))


_SPECS = "Using the following polymorphic shapes specifications: "


def _parse_specs(message):
    """The shape specs a JAX shape-assertion message names, in the order of
    the flattened arguments (`args[1]['w'].shape = (b, 4)`, ...)."""
    text = message[message.index(_SPECS) + len(_SPECS):]
    out = {}
    out = []
    for m in re.finditer(r"args(?:\[[^\]]*\])+\.shape = \(", text):
        depth, k = 1, m.end()
        while depth and k < len(text):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
        out.append(text[m.end():k - 1])
    return out


def _symbolic_entry(main, functions, in_types, first):
    """For a JAX export with symbolic dimensions: the arguments' specs (with
    the dimension variables of JAX's wrapped function, `jax.global_constant`,
    and the shapes JAX's shape assertions name) and how to call the wrapped
    function: per argument, a dimension variable (`_Dims`), the index of
    one of the data arguments (`in_types`: `main`'s after the platform
    index, if it takes one), or `first[0]`, the platform index. `main`'s own
    code (computing the variables from the argument sizes and asserting
    them) is not replayed: `Exported.call` solves and checks the variables
    itself."""
    block = main.regions[0].blocks[0]
    call, messages = None, []
    for op in block.operations:
        op = op.operation
        if "error_message" in op.attributes:
            msg = ir.StringAttr(op.attributes["error_message"]).value
            if _SPECS in msg:
                messages.append(msg)
        if op.name == "func.call":
            callee = functions[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
            if "jax.global_constant" in str(_attr(callee, "arg_attrs", "")):
                call = op
    if call is None or not messages:
        raise NotImplementedError(
            "from_stablehlo: a module with dynamic dimensions that is not a JAX "
            "shape-polymorphic export (no dimension variables or shape assertions found)")
    callee = functions[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
    arg_attrs = ir.ArrayAttr(callee.attributes["arg_attrs"])
    scope = shape_poly.SymbolicScope()
    call_args = []
    args = list(block.arguments)[len(first):]
    for k, operand in enumerate(call.operands):
        attrs = ir.DictAttr(arg_attrs[k])
        var = ir.StringAttr(attrs["jax.global_constant"]).value \
            if "jax.global_constant" in attrs else ""
        if var == "_platform_index" and first and operand == block.arguments[0]:
            call_args.append(first[0])
        elif var:
            call_args.append(_Dims(scope._var(var), _dtype(str(operand.type))))
        elif operand in args:
            call_args.append(args.index(operand))
        else:
            raise NotImplementedError("from_stablehlo: the wrapped function takes a value "
                                      "computed in main (platform index or token)")
    ret = list(block.operations)[-1].operation
    if [str(v) for v in ret.operands] != [str(r) for r in call.results]:
        raise NotImplementedError("from_stablehlo: main does more than call the wrapped "
                                  "function")
    texts = _parse_specs(messages[0])
    dynamic = [i for i, t in enumerate(in_types) if None in _split(t)[0]]
    # JAX names every argument's spec, or (usually) only the symbolic ones.
    by_arg = (dict(enumerate(texts)) if len(texts) == len(in_types) else
              dict(zip(dynamic, texts)) if len(texts) == len(dynamic) else None)
    if by_arg is None:
        raise NotImplementedError(f"from_stablehlo: {len(texts)} shape specifications for "
                                  f"{len(dynamic)} arguments with dynamic dimensions")
    specs = []
    for i, t in enumerate(in_types):
        shape = _split(t)[0]
        if None in shape:
            dims = shape_poly.parse_shape(by_arg[i], scope)
            if len(dims) != len(shape) or any(
                    s is not None and d != s for d, s in zip(dims, shape)):
                raise ValueError(f"from_stablehlo: specification ({by_arg[i]}) does not "
                                 f"match argument {i}'s type {t}")
            shape = dims
        specs.append(core.ShapeDtypeStruct(shape, _dtype(t)))
    return specs, (callee, call_args)


def _platform_index_arg(main):
    """Whether `main`'s first argument is JAX's platform index (an export
    for several platforms: `jax.global_constant = "_platform_index"`)."""
    attrs = _attr(main, "arg_attrs")
    if attrs is None or not len(ir.ArrayAttr(attrs)):
        return False
    first = ir.DictAttr(ir.ArrayAttr(attrs)[0])
    return ("jax.global_constant" in first
            and ir.StringAttr(first["jax.global_constant"]).value == "_platform_index")


def from_stablehlo(text, name, export_flat, platforms=None):
    """The StableHLO module `text` (generic form) traced into the `ember`
    dialect by `export_flat(fun, specs, name, platforms)` (export.py's). A
    module for several platforms (JAX's platform index first) needs the
    export's `platforms`: the program runs as on "cpu"."""
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise ValueError(f"from_stablehlo: the module does not parse: {e}") from None
        functions, main, ftype = module_functions(module, "from_stablehlo")
        in_types = [str(t) for t in ftype.inputs]
        for t in in_types:
            if not t.startswith("tensor<"):
                raise NotImplementedError(f"from_stablehlo: argument type {t} (Ember reads "
                                          "tensors)")
        importer = _Importer(functions)
        if name is None:
            sym = module.operation.attributes
            name = str(ir.StringAttr(sym["sym_name"]).value) if "sym_name" in sym else "main"
        first = []
        if _platform_index_arg(main):
            if platforms is None or "cpu" not in platforms:
                raise ValueError(
                    "from_stablehlo: the module takes JAX's platform index (an export "
                    "for several platforms): pass platforms=, the export's platforms, "
                    f"which must include 'cpu' (got {platforms!r})")
            first = [np.int32(list(platforms).index("cpu"))]
            in_types = in_types[1:]
        if any(None in _split(t)[0] for t in in_types):
            specs, (callee, call_args) = _symbolic_entry(main, functions, in_types, first)

            def fun(*args):
                vals = [core.as_value(a) for a in args]
                outs = importer.call(callee, [
                    vals[a] if isinstance(a, int) else
                    a if isinstance(a, _Dims) else core.as_value(a) for a in call_args])
                return tuple(importer._val(v) for v in outs)
        else:
            specs = [core.ShapeDtypeStruct(_split(t)[0], _dtype(t)) for t in in_types]

            def fun(*args):
                outs = importer.call(main, [core.as_value(a) for a in first + list(args)])
                return tuple(importer._val(v) for v in outs)

        # A module with 64-bit types is traced with them (JAX exports them
        # whether or not x64 is on in the reader); the option is set for the
        # trace only, without clearing the compiled-code caches.
        wide = re.search(r"tensor<[^>]*(?:f64|i64)>", text) and not config.jax_enable_x64
        if wide:
            config.jax_enable_x64 = True
        try:
            return export_flat(fun, specs, name, ("cpu",))
        finally:
            if wide:
                config.jax_enable_x64 = False
