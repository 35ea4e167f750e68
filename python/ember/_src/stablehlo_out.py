"""StableHLO out: an `ember` module (after `ember-transforms`) as StableHLO
in MLIR's generic form, which XLA (or any StableHLO consumer) parses with
its own dialects registered.

Ember's MLIR build does not carry the StableHLO dialect (DESIGN.md: register
only what is used), so this translation writes text: each `ember` op becomes
one or a few `stablehlo` (or `chlo`, for the special functions XLA expands
itself) ops with Ember's semantics, e.g. `ember.case` clamps its index before
`stablehlo.case` (which sends out-of-range indices to the last branch),
`ember.gather` in fill mode masks the slices whose start is out of bounds,
`ember.sort` compares floats in JAX's total order, and the Threefry cipher is
written out round by round. docs/design.md ("StableHLO out") lists the ops
without a StableHLO form; they raise NotImplementedError naming the op.
"""

import itertools
import json
import math
import re
from collections import namedtuple

import numpy as np

from ember._mlir import ir

from . import dtypes

V = namedtuple("V", "name type")

_UNARY = {
    "neg": "stablehlo.negate", "abs": "stablehlo.abs", "sign": "stablehlo.sign",
    "floor": "stablehlo.floor", "ceil": "stablehlo.ceil",
    "round_nearest_afz": "stablehlo.round_nearest_afz",
    "round_nearest_even": "stablehlo.round_nearest_even", "exp": "stablehlo.exponential",
    "log": "stablehlo.log", "log1p": "stablehlo.log_plus_one",
    "expm1": "stablehlo.exponential_minus_one", "tanh": "stablehlo.tanh",
    "logistic": "stablehlo.logistic", "sin": "stablehlo.sine", "cos": "stablehlo.cosine",
    "tan": "stablehlo.tan", "sqrt": "stablehlo.sqrt", "rsqrt": "stablehlo.rsqrt",
    "cbrt": "stablehlo.cbrt", "not": "stablehlo.not", "population_count": "stablehlo.popcnt",
    "clz": "stablehlo.count_leading_zeros", "is_finite": "stablehlo.is_finite",
    "real": "stablehlo.real", "imag": "stablehlo.imag",
    "asin": "chlo.asin", "acos": "chlo.acos", "atan": "chlo.atan", "sinh": "chlo.sinh",
    "cosh": "chlo.cosh", "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh",
    "erf": "chlo.erf", "erf_inv": "chlo.erf_inv", "lgamma": "chlo.lgamma",
    "digamma": "chlo.digamma", "bessel_i1e": "chlo.bessel_i1e",
}
_BINARY = {
    "add": "stablehlo.add", "sub": "stablehlo.subtract", "mul": "stablehlo.multiply",
    "div": "stablehlo.divide", "rem": "stablehlo.remainder", "pow": "stablehlo.power",
    "max": "stablehlo.maximum", "min": "stablehlo.minimum", "atan2": "stablehlo.atan2",
    "and": "stablehlo.and", "or": "stablehlo.or", "xor": "stablehlo.xor",
    "shift_left": "stablehlo.shift_left",
    "shift_right_logical": "stablehlo.shift_right_logical",
    "shift_right_arithmetic": "stablehlo.shift_right_arithmetic",
    "complex": "stablehlo.complex", "nextafter": "chlo.next_after",
}
_SAME = {
    "select": "stablehlo.select", "clamp": "stablehlo.clamp",
    "bitcast_convert": "stablehlo.bitcast_convert", "reshape": "stablehlo.reshape",
    "optimization_barrier": "stablehlo.optimization_barrier",
}
_IDENTITY = ("stop_gradient", "checkpoint_name")
_WITHOUT = {
    "bessel_i0e": "bessel_i0e",
    "host_callback": "host callbacks", "stack_push": "run-time stacks",
    "stack_pop": "run-time stacks", "stack_free": "run-time stacks",
}
_THREEFRY_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _ints(attr):
    """The integers of a DenseI64ArrayAttr (or an integer attribute)."""
    text = str(attr)
    if text.startswith("array<"):
        body = text[len("array<i64"):-1].lstrip(":").strip()
        return [int(t) for t in body.split(",")] if body else []
    return int(text.split(":")[0])


def attr_text(op, name):
    """The text of attribute `name` of `op`. (The bindings cannot return
    some attributes as objects, e.g. complex dense constants; the op's
    generic text has them.)"""
    try:
        return str(op.attributes[name])
    except TypeError:
        text = op.get_asm(print_generic_op_form=True, large_elements_limit=None)
        start = text.index(name + " = ") + len(name) + 3
        depth, k = 0, start
        while k < len(text):
            c = text[k]
            if c in "<([{":
                depth += 1
            elif c in ">)]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                break
            k += 1
        return text[start:k].strip()


def _enum(attr):
    return str(attr).rstrip(">").split()[-1]


def _tensor(shape, elt):
    return "tensor<" + "".join(f"{'?' if d is None else d}x" for d in shape) + elt + ">"


def _split(t):
    """(shape, element type text) of a tensor type text; a dynamic
    dimension (`?`, in modules with symbolic shapes) is None."""
    body = t[len("tensor<"):-1]
    if body.startswith("complex<"):
        return (), body
    parts = body.split("x")
    dims = []
    for k, p in enumerate(parts):
        if p.isdigit() or p == "?":
            dims.append(int(p) if p != "?" else None)
        else:
            return tuple(dims), "x".join(parts[k:])
    raise ValueError(t)


def _elt(t):
    return _split(t)[1]


def _is_float(elt):
    return elt in ("f16", "bf16", "f32", "f64")


def _is_complex(elt):
    return elt.startswith("complex<")


def _is_unsigned(elt):
    return elt.startswith("ui") or elt == "i1"


def _literal(value, elt):
    """`value` as an MLIR dense element literal of element type `elt`."""
    if elt == "i1":
        return "true" if value else "false"
    if _is_complex(elt):
        part = elt[len("complex<"):-1]
        v = complex(value)
        return f"({_literal(v.real, part)}, {_literal(v.imag, part)})"
    dt = dtypes.from_mlir_name(elt)
    if _is_float(elt):
        bits = np.array(value, dt).view(f"u{dt.itemsize}").item()
        return f"0x{bits:0{2 * dt.itemsize}X}"
    return str(int(np.array(value).astype(dt)))


def _identity(kind, elt):
    """The identity of a reduction combiner on `elt`."""
    if kind in ("sum", "or", "xor"):
        return False if elt == "i1" else 0
    if kind in ("prod", "and"):
        return True if elt == "i1" else (1 if kind == "prod" else -1)
    if elt == "i1":
        return kind == "min"
    if _is_float(elt):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtypes.from_mlir_name(elt))
    return info.min if kind == "max" else info.max


class _Writer:
    def __init__(self):
        self.lines = []
        self.count = 0
        self.indent = 2

    def fresh(self):
        self.count += 1
        return f"%{self.count}"

    def op(self, name, operands, result_types, props=None, regions=None):
        """Writes one op; returns its results as `V`s."""
        res = ""
        results = []
        if result_types:
            base = self.fresh()
            if len(result_types) == 1:
                results = [V(base, result_types[0])]
            else:
                results = [V(f"{base}#{k}", t) for k, t in enumerate(result_types)]
            res = (base if len(result_types) == 1 else f"{base}:{len(result_types)}") + " = "
        args = ", ".join(v.name for v in operands)
        attr = ""
        if props:
            # (A None value: a unit property, written as its name.)
            attr = " <{" + ", ".join(k if v is None else f"{k} = {v}"
                                     for k, v in props.items()) + "}>"
        regs = ""
        if regions:
            regs = " (" + ", ".join(regions) + ")"
        ftype = "(" + ", ".join(v.type for v in operands) + ") -> "
        ftype += (result_types[0] if len(result_types) == 1
                  else "(" + ", ".join(result_types) + ")")
        self.lines.append(" " * self.indent + f'{res}"{name}"({args}){attr}{regs} : {ftype}')
        return results

    def region(self, arg_types, body, terminator="stablehlo.return"):
        """A region with one block taking `arg_types`; `body(args)` writes
        its ops and returns the values the block returns."""
        saved, self.lines = self.lines, []
        self.indent += 2
        args = [V(self.fresh(), t) for t in arg_types]
        outs = body(args)
        self.op(terminator, outs, [])
        self.indent -= 2
        inner = self.lines
        self.lines = saved
        head = ""
        if arg_types:
            head = " " * (self.indent + 1) + "^bb0(" + ", ".join(
                f"{a.name}: {a.type}" for a in args) + "):\n"
        return "{\n" + head + "\n".join(inner) + "\n" + " " * self.indent + "}"

    # Small builders.
    def const(self, value, shape, elt):
        t = _tensor(shape, elt)
        return self.op("stablehlo.constant", [], [t],
                       {"value": f"dense<{_literal(value, elt)}> : {t}"})[0]

    def un(self, name, x, t=None):
        return self.op(name, [x], [t or x.type])[0]

    def bin(self, name, a, b, t=None):
        return self.op(name, [a, b], [t or a.type])[0]

    def cmp(self, direction, a, b, total=False):
        elt = _elt(a.type)
        props = {"comparison_direction": f"#stablehlo<comparison_direction {direction}>"}
        if _is_float(elt):
            props["compare_type"] = ("#stablehlo<comparison_type TOTALORDER>" if total
                                     else "#stablehlo<comparison_type FLOAT>")
        elif not _is_complex(elt):
            kind = "UNSIGNED" if _is_unsigned(elt) else "SIGNED"
            props["compare_type"] = f"#stablehlo<comparison_type {kind}>"
        return self.op("stablehlo.compare", [a, b], [_tensor(_split(a.type)[0], "i1")],
                       props)[0]

    def select(self, p, a, b):
        return self.op("stablehlo.select", [p, a, b], [a.type])[0]

    def bcast(self, x, shape, dims):
        return self.op("stablehlo.broadcast_in_dim", [x], [_tensor(shape, _elt(x.type))],
                       {"broadcast_dimensions": _array(dims)})[0]

    def reshape(self, x, shape):
        return self.op("stablehlo.reshape", [x], [_tensor(shape, _elt(x.type))])[0]

    def convert(self, x, elt):
        return self.op("stablehlo.convert", [x], [_tensor(_split(x.type)[0], elt)])[0]

    def combine(self, kind, a, b):
        elt = _elt(a.type)
        if elt == "i1":
            kind = {"sum": "or", "prod": "and", "max": "or", "min": "and"}.get(kind, kind)
        name = {"sum": "stablehlo.add", "add": "stablehlo.add", "prod": "stablehlo.multiply",
                "mul": "stablehlo.multiply", "max": "stablehlo.maximum",
                "min": "stablehlo.minimum", "and": "stablehlo.and", "or": "stablehlo.or",
                "xor": "stablehlo.xor"}[kind]
        return self.bin(name, a, b)

    def combiner(self, kind, elt):
        t = _tensor((), elt)
        return self.region([t, t], lambda a: [self.combine(kind, a[0], a[1])])


def _array(vals):
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in vals) if len(vals) else "") + ">"


# StableHLO's dot algorithms of JAX's presets: (operand type, accumulation
# type, number of primitive operations).
DOT_ALGORITHMS = {
    "F16_F16_F16": ("f16", "f16", 1), "F16_F16_F32": ("f16", "f32", 1),
    "BF16_BF16_BF16": ("bf16", "bf16", 1), "BF16_BF16_F32": ("bf16", "f32", 1),
    "BF16_BF16_F32_X3": ("bf16", "f32", 3), "BF16_BF16_F32_X6": ("bf16", "f32", 6),
    "BF16_BF16_F32_X9": ("bf16", "f32", 9), "TF32_TF32_F32": ("tf32", "f32", 1),
    "TF32_TF32_F32_X3": ("tf32", "f32", 3), "F32_F32_F32": ("f32", "f32", 1),
    "F64_F64_F64": ("f64", "f64", 1)}


def _dot_algorithm(preset):
    if preset not in DOT_ALGORITHMS:  # (the float8 presets: no float8 arrays)
        raise NotImplementedError(f"StableHLO out: the dot algorithm preset {preset} "
                                  "(Ember has no float8 arrays)")
    t, acc, n = DOT_ALGORITHMS[preset]
    return (f"#stablehlo.dot_algorithm<lhs_precision_type = {t}, rhs_precision_type = {t}, "
            f"accumulation_type = {acc}, lhs_component_count = 1, rhs_component_count = 1, "
            f"num_primitive_operations = {n}, allow_imprecise_accumulation = false>")


def _list(vals):
    return "[" + ", ".join(str(int(v)) for v in vals) + "]"


def _padding(pairs):
    return (f"dense<[{', '.join(f'[{lo}, {hi}]' for lo, hi in pairs)}]> : "
            f"tensor<{len(pairs)}x2xi64>")


# Ops translated when their shapes are symbolic (`?` dimensions): those
# whose StableHLO form takes dynamic shapes as they are, and those with a
# dynamic form (`_Symbolic`).
_SYMBOLIC_OK = (set(_UNARY) | set(_BINARY) | {"select", "clamp", "bitcast_convert", "convert",
                                             "compare", "reduce", "dot_general", "transpose",
                                             "stop_gradient", "checkpoint_name", "reverse",
                                             "concatenate", "argmax", "argmin", "pad",
                                             "dynamic_slice", "dynamic_update_slice",
                                             "sort", "while", "case", "gather", "scatter",
                                             "cumulative", "integer_pow"})
_SYMBOLIC_DYNAMIC = ("broadcast_in_dim", "reshape", "iota", "constant", "slice")
# Attributes that may hold symbolic expressions (`ember.sym_attr.<name>`).
_SYMBOLIC_ATTRS = {"slice": ("start_indices", "limit_indices"),
                   # (A promise to ember-autodiff; the cond region decides.)
                   "while": ("trip_count",),
                   "gather": ("slice_sizes",)}


class _Symbolic:
    """Dimension variables and expressions of a program with symbolic
    shapes (an export's `ember.sym_*` annotations, export.py) as StableHLO
    values: each variable is read from an argument's dimension
    (`get_dimension_size`), each expression is computed from them in i32,
    as JAX's shape-polymorphic exports do."""

    def __init__(self, w, scope):
        from . import shape_poly

        self.w, self.scope, self.poly = w, scope, shape_poly
        self.values = {}  # expression text -> V (tensor<i32>)

    def dims(self, spec):
        """The dimensions (ints and DimExprs) of a `b;4` spec."""
        return [self.poly.parse_dim(d, self.scope) for d in spec.split(";")] if spec else []

    def type_of(self, spec, static_type):
        """`static_type` (the traced witness) with the spec's symbolic
        dimensions as `?`."""
        if not spec:
            return static_type
        _, elt = _split(static_type)
        return _tensor([None if self.poly.is_symbolic_dim(d) else int(d)
                        for d in self.dims(spec)], elt)

    def bind_arguments(self, args, specs):
        """Reads every variable from the arguments' dimensions, as JAX
        solves them: a dimension that is c * v + (terms of known variables)
        gives v, repeatedly until nothing more is found."""
        sizes = {}
        pending = []
        for arg, spec in zip(args, specs):
            for k, d in enumerate(self.dims(spec)):
                if self.poly.is_symbolic_dim(d):
                    pending.append((arg, k, d))
        progress = True
        while pending and progress:
            progress = False
            for item in list(pending):
                arg, k, d = item
                unknown = [(m, c) for m, c in d._terms
                           if any(not isinstance(a, str) or a not in self.values for a, _ in m)]
                if not unknown:
                    pending.remove(item)
                    continue
                (mono, coef), = unknown if len(unknown) == 1 else [(None, None)]
                if mono is None or len(mono) != 1 or mono[0][1] != 1 \
                        or not isinstance(mono[0][0], str):
                    continue
                if (id(arg), k) not in sizes:
                    sizes[id(arg), k] = self.w.op(
                        "stablehlo.get_dimension_size", [arg], [_tensor((), "i32")],
                        {"dimension": f"{k} : i64"})[0]
                size = sizes[id(arg), k]
                known = [(m, c) for m, c in d._terms if m != mono]
                if known:
                    size = self.w.bin("stablehlo.subtract", size, self._terms(known))
                if coef != 1:
                    size = self.w.bin("stablehlo.divide", size, self.w.const(coef, (), "i32"))
                self.values[mono[0][0]] = size
                pending.remove(item)
                progress = True

    def value(self, d):
        """Dimension `d` (int or DimExpr) as a tensor<i32> value."""
        w = self.w
        if not self.poly.is_symbolic_dim(d):
            return w.const(int(d), (), "i32")
        key = str(d)
        if key not in self.values:
            self.values[key] = self._terms(d._terms)
        return self.values[key]

    def _terms(self, terms):
        """The sum of `terms` ((monomial, coefficient) pairs) as a value."""
        w = self.w
        total = None
        for mono, coef in terms:
            v = w.const(coef, (), "i32") if coef != 1 or not mono else None
            for atom, power in mono:
                for _ in range(power):
                    x = self._atom(atom)
                    v = x if v is None else w.bin("stablehlo.multiply", v, x)
            total = v if total is None else w.bin("stablehlo.add", total, v)
        return total

    def _atom(self, atom):
        w = self.w
        if isinstance(atom, str):
            if atom not in self.values:
                raise NotImplementedError(
                    f"StableHLO with symbolic dimensions: the dimension variable {atom!r} is "
                    "not an argument's dimension alone (or c * v + c0)")
            return self.values[atom]
        kind, x, y = atom
        x, y = self.value(x), self.value(y)
        if kind in ("max", "min"):
            return w.bin("stablehlo.maximum" if kind == "max" else "stablehlo.minimum", x, y)
        # Floor division and modulo (the divisor is a positive constant).
        r = w.bin("stablehlo.remainder", x, y)
        r = w.bin("stablehlo.remainder", w.bin("stablehlo.add", r, y), y)
        if kind == "mod":
            return r
        return w.bin("stablehlo.divide", w.bin("stablehlo.subtract", x, r), y)

    def shape(self, dims):
        """A tensor<rank x i32> of the dimensions (ints, DimExprs or
        tensor<i32> values)."""
        w = self.w
        parts = [w.reshape(d if isinstance(d, V) else self.value(d), (1,)) for d in dims]
        if len(parts) == 1:
            return parts[0]
        return w.op("stablehlo.concatenate", parts, [_tensor((len(parts),), "i32")],
                    {"dimension": "0 : i64"})[0]

    def shape_of(self, x):
        """The shape of value `x` (static dimensions as constants, `?` ones
        read with `get_dimension_size`) as a tensor<rank x i32>."""
        dims = []
        for k, d in enumerate(_split(x.type)[0]):
            dims.append(d if d is not None else self.w.op(
                "stablehlo.get_dimension_size", [x], [_tensor((), "i32")],
                {"dimension": f"{k} : i64"})[0])
        return self.shape(dims)


class _Translator:
    def __init__(self, functions, tpu_kernels=None, scope=None, platform="cpu"):
        self.w = _Writer()
        # The platform the module is for: decompositions are LAPACK custom
        # calls on the CPU and XLA:TPU's own on the TPU (as JAX lowers them).
        self.platform = platform
        self.env = {}
        self.functions = functions
        self.sym = _Symbolic(self.w, scope) if scope is not None else None
        self.extra_functions = {}  # name -> text (extra_function)
        # shard_map/pmap: the device axis (name, size) of the mesh the
        # program's manual computations run over, and the axis of the one
        # being written (collectives name it).
        self.mesh = None        # [(axis, size)], outermost first
        self.manual = []        # the axes of the manual computations being written
        self.channels = 0
        # callee name -> (backend config, kernel name) for Pallas TPU
        # kernels, None for other callees (targets/tpu.py).
        self.tpu_kernels = tpu_kernels
        # The precision written on products (None: XLA's default, which on
        # a TPU is one bf16 pass for f32).
        self.dot_precision = None
        # A module for several platforms whose TPU form differs (Pallas
        # kernels, decompositions): the i32 branch index (1 on the TPU, 0
        # elsewhere) that `stablehlo.case`s of those ops take.
        self.tpu_branch = None

    def _tpu_custom_call(self, ins, rtypes, config, kname, aliases=()):
        """A Mosaic kernel as XLA:TPU takes it: `tpu_custom_call` with the
        serialized kernel in its backend config, row-major layouts, and the
        outputs that reuse an operand's buffer (`aliases`: (operand,
        output) pairs)."""
        def layout(t):
            r = len(_split(t)[0])
            return (f"dense<{_list(range(r - 1, -1, -1)) if r else ''}> : "
                    f"tensor<{r}xindex>")

        props = {
            "backend_config": _string(config),
            "call_target_name": '"tpu_custom_call"',
            "operand_layouts": "[" + ", ".join(layout(v.type) for v in ins) + "]",
            "result_layouts": "[" + ", ".join(layout(t) for t in rtypes) + "]",
        }
        if aliases:
            props["output_operand_aliases"] = "[" + ", ".join(
                f"#stablehlo.output_operand_alias<output_tuple_indices = "
                f"{_list([o]) if len(rtypes) > 1 else '[]'}, operand_index = {i}, "
                f"operand_tuple_indices = []>" for i, o in aliases) + "]"
        outs = self.w.op("stablehlo.custom_call", ins, rtypes, props)
        # Under shard_map, the kernel's mesh axes (JAX's metadata text).
        metadata = ("{\n\"mesh_axes\":" + json.dumps(json.dumps(self.manual)) + "\n}"
                    if self.manual else "{}")
        self.w.lines[-1] = self.w.lines[-1].replace(
            "}> : (", "}> {kernel_name = " + _string(kname) + ", mhlo.frontend_attributes = "
            "{kernel_metadata = " + _string(metadata) + "}} : (", 1)
        return outs

    def value(self, v):
        return self.env[v]

    def block(self, block, arg_values=None):
        """Translates the ops of `block`; returns the translated operands of
        its terminator."""
        if arg_values is not None:
            for a, v in zip(block.arguments, arg_values):
                self.env[a] = v
        for op in block.operations:
            op = op.operation
            if op.name in ("func.return", "ember.yield"):
                return [self.value(o) for o in op.operands]
            outs = self.translate(op)
            for r, v in zip(op.results, outs):
                self.env[r] = v
        return []

    # The ops whose StableHLO differs on the TPU (XLA:TPU's decompositions).
    _TPU_FORMS = frozenset(("eigh", "svd", "qr", "lu"))

    def translate(self, op):
        if self.tpu_branch is not None and (
                op.name.split(".", 1)[1] in self._TPU_FORMS or op.name == "func.call"
                and self.tpu_kernels(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
                is not None):
            return self._per_platform(op)
        return self._translate(op)

    def _per_platform(self, op):
        """An op whose form differs on the TPU, in a module for several
        platforms: a `stablehlo.case` on the branch index, the other
        platforms' form first (a kernel's calls inlined, LAPACK's
        decompositions), then the TPU's (Mosaic's custom call, XLA:TPU's)."""
        saved = self.platform, self.tpu_kernels, self.tpu_branch
        branches = []
        try:
            self.tpu_branch = None
            for platform, kernels in (("cpu", None), ("tpu", saved[1])):
                self.platform, self.tpu_kernels = platform, kernels
                branches.append(self.w.region([], lambda args: self._translate(op)))
        finally:
            self.platform, self.tpu_kernels, self.tpu_branch = saved
        return self.w.op("stablehlo.case", [self.tpu_branch],
                         [str(r.type) for r in op.results], regions=branches)

    def _translate(self, op):
        w = self.w
        kind = op.name.split(".", 1)[1]
        ins = [self.value(o) for o in op.operands]
        rtypes = [str(r.type) for r in op.results]
        a = op.attributes
        if self.sym is not None:
            out = self.symbolic(op, kind, ins, rtypes, a)
            if out is not None:
                return out
            rtypes = [self.sym.type_of(ir.StringAttr(s).value, t) for s, t in zip(
                a["ember.sym_results"], rtypes)] if "ember.sym_results" in a else rtypes
        if op.name == "func.call":
            name = ir.FlatSymbolRefAttr(a["callee"]).value
            kernel = self.tpu_kernels(name) if self.tpu_kernels else None
            if kernel is not None:
                return self._tpu_custom_call(ins, rtypes, *kernel)
            # Private callees are inlined (Ember's programs do not recurse).
            callee = self.functions[name]
            return self.block(callee.regions[0].blocks[0], ins)
        if kind in _WITHOUT:
            raise NotImplementedError(
                f"StableHLO export: ember.{kind} ({_WITHOUT[kind]}) has no StableHLO form "
                "in Ember yet")
        if kind in _UNARY:
            return [w.un(_UNARY[kind], ins[0], rtypes[0])]
        if kind in _BINARY:
            return [w.bin(_BINARY[kind], ins[0], ins[1], rtypes[0])]
        if kind in _SAME:
            return w.op(_SAME[kind], ins, rtypes)
        if kind in _IDENTITY:
            return [ins[0]]
        method = getattr(self, "t_" + kind, None)
        if method is None:
            raise NotImplementedError(
                f"StableHLO export: ember.{kind} has no StableHLO form in Ember yet")
        return method(op, ins, rtypes, a)

    def symbolic(self, op, kind, ins, rtypes, a):
        """An op of a program with symbolic shapes: its dynamic form when it
        needs one, None when the static translation (with `?` result
        types) is right, NotImplementedError when neither is built."""
        sym = self.sym
        specs = ([ir.StringAttr(s).value for s in a["ember.sym_results"]]
                 if "ember.sym_results" in a else [""] * len(rtypes))
        dynamic = (any(specs) or "ember.sym_value" in a or op.regions and kind != "reduce"
                   or any("?" in v.type for v in ins))
        if not dynamic:
            return None
        sym_attrs = {n[len("ember.sym_attr."):]: ir.StringAttr(a[n]).value
                     for n in map(str, a) if n.startswith("ember.sym_attr.")}
        if any(n not in _SYMBOLIC_ATTRS.get(kind, ()) for n in sym_attrs) or (
                kind not in _SYMBOLIC_OK and kind not in _SYMBOLIC_DYNAMIC):
            raise NotImplementedError(
                f"StableHLO with symbolic dimensions: ember.{kind} is not supported yet "
                "(elementwise ops, broadcasts, reshapes, iotas, slices, pads, reductions, "
                "products, transposes, concatenations and dimension values are)")
        if kind == "constant":
            if "ember.sym_value" not in a:
                if not specs[0]:
                    return None
                # A splat of a symbolic shape: the scalar, broadcast.
                _, elt = _split(rtypes[0])
                literal = attr_text(op, "value").split(":")[0].strip()
                scalar = self.w.op("stablehlo.constant", [], [_tensor((), elt)],
                                   {"value": f"{literal} : {_tensor((), elt)}"})[0]
                return self.w.op("stablehlo.dynamic_broadcast_in_dim",
                                 [scalar, sym.shape(sym.dims(specs[0]))],
                                 [sym.type_of(specs[0], rtypes[0])],
                                 {"broadcast_dimensions": _array([])})
            d = sym.poly.parse_dim(ir.StringAttr(a["ember.sym_value"]).value, sym.scope)
            v = sym.value(d)
            return [self.w.convert(v, _elt(rtypes[0])) if _elt(rtypes[0]) != "i32" else v]
        if kind == "slice":
            # Bounds that may be expressions: a real_dynamic_slice.
            bounds = [sym.shape(sym.dims(sym_attrs[n]) if n in sym_attrs else _ints(a[n]))
                      for n in ("start_indices", "limit_indices")]
            return self.w.op("stablehlo.real_dynamic_slice",
                             [ins[0], *bounds, sym.shape(_ints(a["strides"]))],
                             [sym.type_of(specs[0], rtypes[0])])
        if kind not in _SYMBOLIC_DYNAMIC or not specs[0]:
            return None
        dims = sym.dims(specs[0])
        rtype = sym.type_of(specs[0], rtypes[0])
        shape = sym.shape(dims)
        if kind == "broadcast_in_dim":
            return self.w.op("stablehlo.dynamic_broadcast_in_dim", [ins[0], shape], [rtype], {
                "broadcast_dimensions": _array(_ints(a["broadcast_dimensions"]))})
        if kind == "reshape":
            return self.w.op("stablehlo.dynamic_reshape", [ins[0], shape], [rtype])
        return self.w.op("stablehlo.dynamic_iota", [shape], [rtype],
                         {"iota_dimension": f"{_ints(a['iota_dimension'])} : i64"})

    # -- elementwise ------------------------------------------------------
    def t_constant(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.constant", [], rtypes, {"value": attr_text(op, "value")})

    def t_iota(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.iota", [], rtypes,
                         {"iota_dimension": f"{_ints(a['iota_dimension'])} : i64"})

    def t_exp2(self, op, ins, rtypes, a):
        x = ins[0]
        shape, elt = _split(x.type)
        ln2 = self.w.const(np.log(2.0), shape, elt)
        return [self.w.un("stablehlo.exponential", self.w.bin("stablehlo.multiply", x, ln2))]

    def t_integer_pow(self, op, ins, rtypes, a):
        # Squaring and multiplying, as JAX lowers integer_pow.
        w, base, acc = self.w, ins[0], None
        y = int(_ints(a["y"]))
        n = abs(y)
        while n:
            if n & 1:
                acc = base if acc is None else w.bin("stablehlo.multiply", acc, base)
            n >>= 1
            if n:
                base = w.bin("stablehlo.multiply", base, base)
        if acc is not None and y > 0:
            return [acc]
        shape, elt = _split(ins[0].type)
        if "?" in ins[0].type:
            # Ones of the operand's symbolic shape: a scalar, broadcast.
            spec = ir.StringAttr(a["ember.sym_results"][0]).value
            one = w.const(1, (), elt)
            ones = w.op("stablehlo.dynamic_broadcast_in_dim",
                        [one, self.sym.shape(self.sym.dims(spec))], [ins[0].type],
                        {"broadcast_dimensions": _array([])})[0]
        else:
            ones = w.const(1, shape, elt)
        return [ones if acc is None else w.bin("stablehlo.divide", ones, acc)]

    def t_conj(self, op, ins, rtypes, a):
        w, x = self.w, ins[0]
        shape, elt = _split(x.type)
        part = _tensor(shape, elt[len("complex<"):-1])
        re = w.un("stablehlo.real", x, part)
        im = w.un("stablehlo.negate", w.un("stablehlo.imag", x, part))
        return [w.bin("stablehlo.complex", re, im, x.type)]

    def t_compare(self, op, ins, rtypes, a):
        return [self.w.cmp(_enum(a["comparison_direction"]), ins[0], ins[1])]

    def t_convert(self, op, ins, rtypes, a):
        x = ins[0]
        src, dst = _elt(x.type), _elt(rtypes[0])
        if _is_complex(src) and not _is_complex(dst):
            x = self.w.un("stablehlo.real", x,
                          _tensor(_split(x.type)[0], src[len("complex<"):-1]))
        return self.w.op("stablehlo.convert", [x], rtypes)

    def t_threefry2x32(self, op, ins, rtypes, a):
        w = self.w
        k0, k1, x0, x1 = ins
        shape, elt = _split(k0.type)

        def c(v):
            return w.const(v, shape, elt)

        def add(p, q):
            return w.bin("stablehlo.add", p, q)

        def rotl(v, r):
            left = w.bin("stablehlo.shift_left", v, c(r))
            return w.bin("stablehlo.or", left, w.bin("stablehlo.shift_right_logical", v, c(32 - r)))

        ks = [k0, k1, w.bin("stablehlo.xor", w.bin("stablehlo.xor", k0, k1), c(0x1BD11BDA))]
        x0, x1 = add(x0, ks[0]), add(x1, ks[1])
        for i in range(5):
            rots = _THREEFRY_ROTATIONS[:4] if i % 2 == 0 else _THREEFRY_ROTATIONS[4:]
            for r in rots:
                x0 = add(x0, x1)
                x1 = w.bin("stablehlo.xor", rotl(x1, r), x0)
            x0 = add(x0, ks[(i + 1) % 3])
            x1 = add(add(x1, ks[(i + 2) % 3]), c(i + 1))
        return [x0, x1]

    def t_philox4x32(self, op, ins, rtypes, a):
        w = self.w
        k0, k1, *x = ins
        shape, elt = _split(k0.type)
        wide = _tensor(shape, "ui64")

        def mul_wide(v, m):  # (high, low) words of the 64-bit product
            p = w.bin("stablehlo.multiply", w.un("stablehlo.convert", v, wide),
                      w.const(m, shape, "ui64"))
            hi = w.bin("stablehlo.shift_right_logical", p, w.const(32, shape, "ui64"))
            return (w.un("stablehlo.convert", hi, k0.type), w.un("stablehlo.convert", p, k0.type))

        for r in range(10):
            if r:
                k0 = w.bin("stablehlo.add", k0, w.const(0x9E3779B9, shape, elt))
                k1 = w.bin("stablehlo.add", k1, w.const(0xBB67AE85, shape, elt))
            hi0, lo0 = mul_wide(x[0], 0xD2511F53)
            hi1, lo1 = mul_wide(x[2], 0xCD9E8D57)
            x = [w.bin("stablehlo.xor", w.bin("stablehlo.xor", hi1, x[1]), k0), lo1,
                 w.bin("stablehlo.xor", w.bin("stablehlo.xor", hi0, x[3]), k1), lo0]
        return x

    # -- structural -------------------------------------------------------
    def t_broadcast_in_dim(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.broadcast_in_dim", ins, rtypes,
                         {"broadcast_dimensions": _array(_ints(a["broadcast_dimensions"]))})

    def t_transpose(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.transpose", ins, rtypes,
                         {"permutation": _array(_ints(a["permutation"]))})

    def t_slice(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.slice", ins, rtypes, {
            "start_indices": _array(_ints(a["start_indices"])),
            "limit_indices": _array(_ints(a["limit_indices"])),
            "strides": _array(_ints(a["strides"]))})

    def t_dynamic_slice(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.dynamic_slice", ins, rtypes,
                         {"slice_sizes": _array(_ints(a["slice_sizes"]))})

    def t_dynamic_update_slice(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.dynamic_update_slice", ins, rtypes)

    def t_pad(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.pad", ins, rtypes, {
            k: _array(_ints(a[k])) for k in
            ("edge_padding_low", "edge_padding_high", "interior_padding")})

    def t_concatenate(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.concatenate", ins, rtypes,
                         {"dimension": f"{_ints(a['dimension'])} : i64"})

    def t_reverse(self, op, ins, rtypes, a):
        return self.w.op("stablehlo.reverse", ins, rtypes,
                         {"dimensions": _array(_ints(a["dimensions"]))})

    # -- reductions -------------------------------------------------------
    def t_reduce(self, op, ins, rtypes, a):
        w, x = self.w, ins[0]
        kind, elt = _enum(a["kind"]), _elt(x.type)
        init = w.const(_identity(kind, elt), (), elt)
        return w.op("stablehlo.reduce", [x, init], rtypes,
                    {"dimensions": _array(_ints(a["dimensions"]))},
                    [w.combiner(kind, elt)])

    def _arg(self, op, ins, rtypes, a, direction):
        w, x = self.w, ins[0]
        axis = _ints(a["axis"])
        shape, elt = _split(x.type)
        ielt = _elt(rtypes[0])
        if None in shape:  # symbolic dimensions
            idx = w.op("stablehlo.dynamic_iota", [self.sym.shape_of(x)], [_tensor(shape, ielt)],
                       {"iota_dimension": f"{axis} : i64"})[0]
        else:
            idx = w.op("stablehlo.iota", [], [_tensor(shape, ielt)],
                       {"iota_dimension": f"{axis} : i64"})[0]
        extreme = "max" if direction == "GT" else "min"
        init_v = w.const(_identity(extreme, elt), (), elt)
        init_i = w.const(0, (), ielt)
        st, it = _tensor((), elt), _tensor((), ielt)

        def body(args):
            av, ai, bv, bi = args
            better = w.cmp(direction, av, bv)
            tie = w.cmp("EQ", av, bv)
            if _is_float(elt):
                anan, bnan = w.cmp("NE", av, av), w.cmp("NE", bv, bv)
                nb = w.un("stablehlo.not", bnan)
                better = w.bin("stablehlo.or", better, w.bin("stablehlo.and", anan, nb))
                tie = w.bin("stablehlo.or", tie, w.bin("stablehlo.and", anan, bnan))
            low = w.bin("stablehlo.minimum", ai, bi)
            return [w.select(better, av, bv), w.select(better, ai, w.select(tie, low, bi))]

        outs = w.op("stablehlo.reduce", [x, idx, init_v, init_i],
                    [_tensor(_split(rtypes[0])[0], elt), rtypes[0]],
                    {"dimensions": _array([axis])}, [w.region([st, it, st, it], body)])
        return [outs[1]]

    def t_argmax(self, op, ins, rtypes, a):
        return self._arg(op, ins, rtypes, a, "GT")

    def t_argmin(self, op, ins, rtypes, a):
        return self._arg(op, ins, rtypes, a, "LT")

    def _window(self, x, init, kind, window, strides, pads, rtype):
        w = self.w
        return w.op("stablehlo.reduce_window", [x, init], [rtype], {
            "window_dimensions": _array(window), "window_strides": _array(strides),
            "padding": _padding(pads)}, [w.combiner(kind, _elt(x.type))])

    def t_cumulative(self, op, ins, rtypes, a):
        x = ins[0]
        kind, axis = _enum(a["kind"]), _ints(a["axis"])
        reverse = str(a["reverse"]) == "true" if "reverse" in a else False
        shape, elt = _split(x.type)
        n = shape[axis]
        if n is None:
            return [self._cumulative_symbolic(x, kind, axis, reverse)]
        window = [n if d == axis else 1 for d in range(len(shape))]
        pads = [((0, n - 1) if reverse else (n - 1, 0)) if d == axis else (0, 0)
                for d in range(len(shape))]
        init = self.w.const(_identity(kind, elt), (), elt)
        return self._window(x, init, kind, window, [1] * len(shape), pads, rtypes[0])

    def _cumulative_symbolic(self, x, kind, axis, reverse):
        """A cumulative op along an axis of symbolic length n: a window of n
        is not static, so it is the `stablehlo.dynamic_reduce_window` custom
        call (as JAX's shape-polymorphic lowering writes it: windows, strides,
        dilations and padding as i32 tensors, the combiner a function of the
        module), which shape refinement makes a reduce_window."""
        w, sym = self.w, self.sym
        shape, elt = _split(x.type)
        rank = len(shape)
        n = self._dim(x, axis)
        n1 = w.bin("stablehlo.subtract", n, w.const(1, (), "i32"))
        window = sym.shape([n if d == axis else 1 for d in range(rank)])
        ones = sym.shape([1] * rank)
        pads = sym.shape([p for d in range(rank) for p in (
            ((0, n1) if reverse else (n1, 0)) if d == axis else (0, 0))])
        pads = w.reshape(pads, (rank, 2))
        reducer = self.extra_function(f"cumulative_{kind}_{elt}", [_tensor((), elt)] * 2,
                                      lambda args: [w.combine(kind, *args)])
        init = w.const(_identity(kind, elt), (), elt)
        return w.op("stablehlo.custom_call", [x, init, window, ones, ones, ones, pads],
                    [x.type], {"call_target_name": '"stablehlo.dynamic_reduce_window"',
                               "api_version": "2 : i32",
                               "called_computations": f"[@{reducer}]"})[0]

    def extra_function(self, name, arg_types, body):
        """A private function of the module (a custom call's computation),
        written once per name; returns its name."""
        if name not in self.extra_functions:
            w = self.w
            saved, saved_indent = w.lines, w.indent
            w.lines, w.indent = [], 4
            args = [V(w.fresh(), t) for t in arg_types]
            outs = body(args)
            lines = w.lines + ["    return " + ", ".join(v.name for v in outs) + " : "
                               + ", ".join(v.type for v in outs)]
            w.lines, w.indent = saved, saved_indent
            self.extra_functions[name] = (
                f"  func.func private @{name}(" + ", ".join(f"{a.name}: {a.type}" for a in args)
                + ") -> (" + ", ".join(v.type for v in outs) + ") {\n"
                + "\n".join(lines) + "\n  }\n")
        return name

    def t_reduce_window(self, op, ins, rtypes, a):
        lo, hi = _ints(a["padding_low"]), _ints(a["padding_high"])
        return self._window(ins[0], ins[1], _enum(a["kind"]), _ints(a["window_dimensions"]),
                            _ints(a["window_strides"]), list(zip(lo, hi)), rtypes[0])

    def t_sort(self, op, ins, rtypes, a):
        w = self.w
        nkeys = _ints(a["num_keys"])
        scalar = [_tensor((), _elt(v.type)) for v in ins]
        arg_types = [t for t in scalar for _ in (0, 1)]

        def canon(x):
            elt = _elt(x.type)
            if not _is_float(elt):
                return x
            zero, nan = w.const(0.0, (), elt), w.const(np.nan, (), elt)
            x = w.select(w.cmp("EQ", x, zero), zero, x)
            return w.select(w.cmp("NE", x, x), nan, x)

        def body(args):
            keys = [(canon(args[2 * k]), canon(args[2 * k + 1])) for k in range(nkeys)]
            lt = w.cmp("LT", *keys[-1], total=True)
            for p, q in reversed(keys[:-1]):
                eq = w.cmp("EQ", p, q, total=True)
                lt = w.bin("stablehlo.or", w.cmp("LT", p, q, total=True),
                           w.bin("stablehlo.and", eq, lt))
            return [lt]

        return w.op("stablehlo.sort", ins, rtypes, {
            "dimension": f"{_ints(a['dimension'])} : i64", "is_stable": "true"},
            [w.region(arg_types, body)])

    # -- linear algebra ---------------------------------------------------
    def t_dot_general(self, op, ins, rtypes, a):
        relt = _elt(rtypes[0])
        ins = [x if _elt(x.type) == relt else self.w.convert(x, relt) for x in ins]
        fields = []
        for k in ("lhs_batching_dimensions", "rhs_batching_dimensions",
                  "lhs_contracting_dimensions", "rhs_contracting_dimensions"):
            vals = _ints(a[k])
            if vals:
                fields.append(f"{k} = {_list(vals)}")
        props = {"dot_dimension_numbers": "#stablehlo.dot<" + ", ".join(fields) + ">"}
        # (The product's own precision, or the one asked of the program
        # being written: _svd_by_polar's.)
        names = ([self.dot_precision] * 2 if self.dot_precision is not None else
                 [ir.StringAttr(p).value for p in a["precision"]] if "precision" in a else None)
        if names is not None and len(names) == 1:
            # An algorithm preset (JAX's DotAlgorithmPreset), as JAX writes it.
            props["algorithm"] = _dot_algorithm(names[0])
            names = ["DEFAULT", "DEFAULT"]
        if names is not None:
            props["precision_config"] = "[" + ", ".join(
                f"#stablehlo<precision {p}>" for p in names) + "]"
        return self.w.op("stablehlo.dot_general", ins, rtypes, props)

    def t_cholesky(self, op, ins, rtypes, a):
        w = self.w
        l_ = w.op("stablehlo.cholesky", ins, rtypes, {"lower": "true"})[0]
        shape = _split(rtypes[0])[0]
        r = len(shape)
        it = _tensor(shape, "i32")
        rows = w.op("stablehlo.iota", [], [it], {"iota_dimension": f"{r - 2} : i64"})[0]
        cols = w.op("stablehlo.iota", [], [it], {"iota_dimension": f"{r - 1} : i64"})[0]
        zero = w.const(0, shape, _elt(rtypes[0]))
        return [w.select(w.cmp("GE", rows, cols), l_, zero)]

    def t_fft(self, op, ins, rtypes, a):
        kind = ir.StringAttr(a["fft_type"]).value
        return self.w.op("stablehlo.fft", ins, rtypes, {
            "fft_length": _array(list(ir.DenseI64ArrayAttr(a["fft_lengths"]))),
            "fft_type": f"#stablehlo<fft_type {kind}>"})

    def t_triangular_solve(self, op, ins, rtypes, a):
        trans = "TRANSPOSE" if str(a["transpose_a"]) == "true" else "NO_TRANSPOSE"
        return self.w.op("stablehlo.triangular_solve", ins, rtypes, {
            "left_side": "true", "lower": str(a["lower"]),
            "unit_diagonal": str(a["unit_diagonal"]),
            "transpose_a": f"#stablehlo<transpose {trans}>"})

    # LAPACK through jaxlib's CPU custom calls, written as JAX 0.10.2 writes
    # them (column-major matrices, batch dimensions major, the factored
    # operand aliased to the first result).
    def _lapack(self, routine, elt, operands, rtypes, config=None, alias=True):
        prefix = {"f32": "s", "f64": "d", "complex<f32>": "c", "complex<f64>": "z"}[elt]
        if _is_complex(elt):
            routine = {"syevd": "heevd", "orgqr": "ungqr"}.get(routine, routine)

        def layout(t, matrix):
            r = len(_split(t)[0])
            dims = [r - 2, r - 1] + list(range(r - 3, -1, -1)) if matrix and r >= 2 \
                else list(range(r - 1, -1, -1))
            return f"dense<{_list(dims) if dims else ''}> : tensor<{len(dims)}xindex>"

        def is_matrix(t, nbatch):
            return len(_split(t)[0]) - nbatch == 2

        nbatch = len(_split(operands[0].type)[0]) - 2
        out_idx = "[0]" if len(rtypes) > 1 else "[]"
        props = {
            "call_target_name": f'"lapack_{prefix}{routine}_ffi"',
            "operand_layouts": "[" + ", ".join(layout(v.type, is_matrix(v.type, nbatch))
                                               for v in operands) + "]",
            "output_operand_aliases": (f"[#stablehlo.output_operand_alias<output_tuple_indices = "
                                       f"{out_idx}, operand_index = 0, operand_tuple_indices = "
                                       "[]>]") if alias else "[]",
            "result_layouts": "[" + ", ".join(layout(t, is_matrix(t, nbatch))
                                              for t in rtypes) + "]",
        }
        cfg = ", ".join(f"{k} = {ord(v)} : ui8" for k, v in (config or {}).items())
        w = self.w
        outs = w.op("stablehlo.custom_call", operands, rtypes, props)
        # The backend config and batch count are discardable attributes.
        w.lines[-1] = w.lines[-1].replace(
            "}> : (", "}> {mhlo.backend_config = {" + cfg + "}, mhlo.frontend_attributes = "
            "{num_batch_dims = \"" + str(nbatch) + "\"}} : (", 1)
        return outs

    def _xla_tpu(self, target, operands, rtypes, config="", api_version=None):
        """A decomposition XLA:TPU implements itself (`Qr`,
        `ProductOfElementaryHouseholderReflectors`, `Eigh`,
        `LuDecomposition`), written as JAX 0.10.2 writes it for TPU."""
        props = {"backend_config": _string(config), "call_target_name": f'"{target}"'}
        if api_version is not None:
            props["api_version"] = f"{api_version} : i32"
        return self.w.op("stablehlo.custom_call", operands, rtypes, props)

    def _triangle(self, x, upper):
        """x with the other triangle of each trailing matrix zeroed."""
        w = self.w
        shape, elt = _split(x.type)
        r = len(shape)
        it = _tensor(shape, "i32")
        rows = w.op("stablehlo.iota", [], [it], {"iota_dimension": f"{r - 2} : i64"})[0]
        cols = w.op("stablehlo.iota", [], [it], {"iota_dimension": f"{r - 1} : i64"})[0]
        keep = w.cmp("LE" if upper else "GE", rows, cols)
        return w.select(keep, x, w.const(0, shape, elt))

    def _info_type(self, t):
        return _tensor(_split(t)[0][:-2], "i32")

    def _slice_last2(self, x, rows, cols):
        shape = _split(x.type)[0]
        new = shape[:-2] + (rows, cols)
        return self.w.op("stablehlo.slice", [x], [_tensor(new, _elt(x.type))], {
            "start_indices": _array([0] * len(shape)), "limit_indices": _array(new),
            "strides": _array([1] * len(shape))})[0]

    def t_eigh(self, op, ins, rtypes, a):
        if self.platform == "tpu":
            # (lower, sorted eigenvalues, at most 100 sweeps, tolerance: JAX's.)
            return self._xla_tpu("Eigh", ins, [rtypes[0], rtypes[1]], "1,1,100,1e-6")
        v, w_, _ = self._lapack("syevd", _elt(ins[0].type), ins,
                                [rtypes[0], rtypes[1], self._info_type(ins[0].type)],
                                {"mode": "V", "uplo": "L"})
        return [v, w_]

    def t_svd(self, op, ins, rtypes, a):
        if self.platform == "tpu":
            return self._svd_by_polar(ins[0], str(a["full_matrices"]) == "true",
                                      len(rtypes) == 3)
        x = ins[0]
        shape, elt = _split(x.type)
        m, n = shape[-2:]
        batch = shape[:-2]
        k = min(m, n)
        info = self._info_type(x.type)
        svals = rtypes[0]
        if len(rtypes) == 1:
            outs = self._lapack("gesdd", elt, [x], [x.type, svals, _tensor(batch + (m, m), elt),
                                                   _tensor(batch + (n, n), elt), info],
                                {"mode": "N"})
            return [outs[1]]
        full = str(a["full_matrices"]) == "true"
        outs = self._lapack("gesdd", elt, [x], [x.type, svals, rtypes[1], rtypes[2], info],
                            {"mode": "A" if full else "S"})
        assert full or _split(rtypes[1])[0][-1] == k
        return [outs[1], outs[2], outs[3]]

    def _svd_by_polar(self, x, full, compute_uv):
        """XLA:TPU has no SVD: as JAX does there, the SVD is computed from a
        polar decomposition (`lax_linalg.svd_by_polar`: QDWH iterations,
        then an eigh, which is XLA:TPU's `Eigh`), batched by `vmap`. Ember
        traces that function for the operand's type and writes its
        program here."""
        shape, elt = _split(x.type)
        functions, main = _svd_program(tuple(shape), elt, full, compute_uv)
        # (Its products in full f32, as JAX's TPU SVD asks for.)
        saved = self.functions, self.dot_precision
        self.functions, self.dot_precision = functions, "HIGHEST"
        try:
            return self.block(main.regions[0].blocks[0], [x])
        finally:
            self.functions, self.dot_precision = saved

    def t_qr(self, op, ins, rtypes, a):
        w = self.w
        x = ins[0]
        shape, elt = _split(x.type)
        m, n = shape[-2:]
        batch = shape[:-2]
        k = min(m, n)
        full = str(a["full_matrices"]) == "true"
        tpu = self.platform == "tpu"
        fac, tau = (self._xla_tpu("Qr", [x], [x.type, _tensor(batch + (k,), elt)]) if tpu else
                    self._lapack("geqrf", elt, [x], [x.type, _tensor(batch + (k,), elt)]))
        if m > n and full:
            pads = [0] * len(shape)
            high = pads[:-1] + [m - n]
            basis = w.op("stablehlo.pad", [fac, w.const(0, (), elt)],
                         [_tensor(batch + (m, m), elt)], {
                             "edge_padding_low": _array(pads), "edge_padding_high": _array(high),
                             "interior_padding": _array(pads)})[0]
        elif m < n:
            basis = self._slice_last2(fac, m, m)
        else:
            basis = fac
        q = (self._xla_tpu("ProductOfElementaryHouseholderReflectors", [basis, tau],
                           [rtypes[0]]) if tpu else
             self._lapack("orgqr", elt, [basis, tau], [rtypes[0]]))[0]
        r = fac if (full or m <= n) else self._slice_last2(fac, n, n)
        return [q, self._triangle(r, upper=True)]

    def t_lu(self, op, ins, rtypes, a):
        w = self.w
        x = ins[0]
        shape, elt = _split(x.type)
        m = shape[-2]
        batch = shape[:-2]
        if self.platform == "tpu":  # (0-based pivots and the permutation)
            return self._xla_tpu("LuDecomposition", [x], [x.type, rtypes[1], rtypes[2]],
                                 api_version=2)
        lu, ipiv, _ = self._lapack("getrf", elt, [x], [x.type, rtypes[1],
                                                        self._info_type(x.type)])
        pivots = w.bin("stablehlo.subtract", ipiv, w.const(1, _split(ipiv.type)[0], "i32"))
        # The permutation: the row swaps applied to 0..m-1 in order.
        k = _split(ipiv.type)[0][-1]
        pshape = batch + (m,)
        pt = _tensor(pshape, "i32")
        last = len(pshape) - 1
        perm0 = w.op("stablehlo.iota", [], [pt], {"iota_dimension": f"{last} : i64"})[0]
        i0 = w.const(0, (), "i32")
        scalar = _tensor((), "i32")

        def cond(args):
            return [w.cmp("LT", args[0], w.const(k, (), "i32"))]

        def body(args):
            i, perm = args
            iota = w.op("stablehlo.iota", [], [pt], {"iota_dimension": f"{last} : i64"})[0]
            zeros = [w.const(0, (), "i32") for _ in batch]
            bt = _tensor(batch + (1,), "i32")
            pj = w.op("stablehlo.dynamic_slice", [pivots] + zeros + [i], [bt],
                      {"slice_sizes": _array(batch + (1,))})[0]
            pi = w.op("stablehlo.dynamic_slice", [perm] + zeros + [i], [bt],
                      {"slice_sizes": _array(batch + (1,))})[0]
            dims = list(range(len(pshape)))
            onehot_j = w.cmp("EQ", iota, w.bcast(pj, pshape, dims))
            at_i = w.cmp("EQ", iota, w.bcast(i, pshape, []))
            zero = w.const(0, pshape, "i32")
            pvj = w.op("stablehlo.reduce", [w.select(onehot_j, perm, zero), i0],
                       [_tensor(batch, "i32")], {"dimensions": _array([last])},
                       [w.combiner("sum", "i32")])[0]
            swapped = w.select(onehot_j, w.bcast(pi, pshape, dims), perm)
            perm = w.select(at_i, w.bcast(pvj, pshape, list(range(len(batch)))), swapped)
            return [w.bin("stablehlo.add", i, w.const(1, (), "i32")), perm]

        loop = w.op("stablehlo.while", [i0, perm0], [scalar, pt],
                    regions=[w.region([scalar, pt], cond), w.region([scalar, pt], body)])
        return [lu, pivots, loop[1]]

    # -- gather / scatter -------------------------------------------------
    def _index_vectors(self, idx, ivd):
        """`idx` with its index vectors along an explicit dimension `ivd`."""
        shape, elt = _split(idx.type)
        if ivd == len(shape):
            if None in shape:  # symbolic dimensions
                return self.w.op("stablehlo.dynamic_reshape", [idx, self.sym.shape(
                    [self._dim(idx, k) for k in range(len(shape))] + [1])],
                    [_tensor(shape + (1,), elt)])[0]
            idx = self.w.reshape(idx, shape + (1,))
        return idx

    def _dim(self, x, k):
        """Dimension k of `x`: an int, or a tensor<i32> when it is `?`."""
        d = _split(x.type)[0][k]
        return d if d is not None else self.w.op(
            "stablehlo.get_dimension_size", [x], [_tensor((), "i32")],
            {"dimension": f"{k} : i64"})[0]

    def _like(self, x, like, dims):
        """`x` broadcast to the shape of `like` (dims: where x's go)."""
        shape = _split(like.type)[0]
        if None not in shape:
            return self.w.bcast(x, shape, dims)
        return self.w.op("stablehlo.dynamic_broadcast_in_dim", [x, self.sym.shape_of(like)],
                         [_tensor(shape, _elt(x.type))],
                         {"broadcast_dimensions": _array(dims)})[0]

    def _const_like(self, value, like, elt=None):
        return self._like(self.w.const(value, (), elt or _elt(like.type)), like, [])

    def _bounds(self, idx, ivd, bounds):
        """The upper bounds of the index vector entries (ints, or tensor<i32>
        values of symbolic sizes), shaped like `idx`."""
        shape, elt = _split(idx.type)
        t = _tensor((len(bounds),), elt)
        if all(isinstance(b, (int, np.integer)) for b in bounds):
            vec = self.w.op("stablehlo.constant", [], [t], {
                "value": f"dense<[{', '.join(_literal(b, elt) for b in bounds)}]> : {t}"})[0]
        else:
            vec = self.sym.shape(bounds)
            if elt != "i32":
                vec = self.w.convert(vec, elt)
        return self._like(vec, idx, [ivd])

    def _extent(self, x, d, minus):
        """Dimension d of `x` minus `minus` (ints, or tensor<i32> values
        where sizes are symbolic)."""
        n = self._dim(x, d)
        if isinstance(n, int) and isinstance(minus, int):
            return n - minus
        if isinstance(n, int):
            n = self.w.const(n, (), "i32")
        if isinstance(minus, int):
            minus = self.w.const(minus, (), "i32")
        return self.w.bin("stablehlo.subtract", n, minus)

    def t_gather(self, op, ins, rtypes, a):
        w = self.w
        operand, idx = ins
        ivd = _ints(a["index_vector_dim"])
        sizes = _ints(a["slice_sizes"])
        smap = _ints(a["start_index_map"])
        offset = _ints(a["offset_dims"])
        fields = []
        for k in ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                  "start_indices_batching_dims", "start_index_map"):
            vals = _ints(a[k])
            if vals:
                fields.append(f"{k} = {_list(vals)}")
        fields.append(f"index_vector_dim = {ivd}")
        numbers = "#stablehlo.gather<" + ", ".join(fields) + ">"
        spec = (ir.StringAttr(a["ember.sym_attr.slice_sizes"]).value
                if "ember.sym_attr.slice_sizes" in a else "")
        if spec:
            # Slice sizes that are expressions of the dimension variables:
            # dynamic_gather takes them as a tensor.
            dims = self.sym.dims(spec)
            sizes = [d if self.sym.poly.is_symbolic_dim(d) else int(d) for d in dims]
            out = w.op("stablehlo.dynamic_gather", [operand, idx, self.sym.shape(dims)], rtypes,
                       {"dimension_numbers": numbers, "indices_are_sorted": "false"})[0]
        else:
            out = w.op("stablehlo.gather", [operand, idx], rtypes, {
                "dimension_numbers": numbers, "slice_sizes": _array(sizes),
                "indices_are_sorted": "false"})[0]
        if _enum(a["mode"]) != "fill":
            return [out]
        # Fill: a slice whose start is out of bounds gives NaN (floats) or 0.
        full = self._index_vectors(idx, ivd)
        fshape, ielt = _split(full.type)
        upper = self._bounds(full, ivd, [self._extent(
            operand, d, sizes[d] if isinstance(sizes[d], int) else self.sym.value(sizes[d]))
            for d in smap])
        ok = w.bin("stablehlo.and", w.cmp("GE", full, self._const_like(0, full)),
                   w.cmp("LE", full, upper))
        batch_shape = tuple(d for k, d in enumerate(fshape) if k != ivd)
        ok = w.op("stablehlo.reduce", [ok, w.const(True, (), "i1")],
                  [_tensor(batch_shape, "i1")], {"dimensions": _array([ivd])},
                  [w.combiner("and", "i1")])[0]
        rshape, relt = _split(rtypes[0])
        batch_dims = [d for d in range(len(rshape)) if d not in offset]
        mask = self._like(ok, out, batch_dims)
        fill = np.nan if (_is_float(relt) or _is_complex(relt)) else 0
        if _is_complex(relt):
            fill = complex(np.nan, np.nan)
        return [w.select(mask, out, self._const_like(fill, out))]

    def t_scatter(self, op, ins, rtypes, a):
        w = self.w
        operand, idx, upd = ins
        ivd = _ints(a["index_vector_dim"])
        kind = _enum(a["kind"])
        if _enum(a["mode"]) == "clip":
            # Clamp each window start into bounds (XLA drops out-of-bounds
            # windows, which is Ember's fill mode).
            oshape = _split(operand.type)[0]
            window = _ints(a["update_window_dims"])
            skipped = set(_ints(a["inserted_window_dims"])) | set(_ints(a["operand_batching_dims"]))
            size, k = {}, 0
            for d in range(len(oshape)):
                if d in skipped:
                    size[d] = 1
                else:
                    # (A symbolic window size is read from the updates.)
                    size[d] = self._dim(upd, window[k])
                    k += 1
            idx = self._index_vectors(idx, ivd)
            upper = self._bounds(idx, ivd, [self._extent(operand, d, size[d])
                                            for d in _ints(a["scatter_dims_to_operand_dims"])])
            idx = w.op("stablehlo.clamp", [self._const_like(0, idx), idx, upper],
                       [idx.type])[0]
        fields = []
        for k in ("update_window_dims", "inserted_window_dims"):
            vals = _ints(a[k])
            if vals:
                fields.append(f"{k} = {_list(vals)}")
        if _ints(a["operand_batching_dims"]):
            fields.append(f"input_batching_dims = {_list(_ints(a['operand_batching_dims']))}")
            fields.append("scatter_indices_batching_dims = "
                          f"{_list(_ints(a['scatter_indices_batching_dims']))}")
        fields.append("scatter_dims_to_operand_dims = "
                      f"{_list(_ints(a['scatter_dims_to_operand_dims']))}")
        fields.append(f"index_vector_dim = {ivd}")
        elt = _elt(operand.type)
        t = _tensor((), elt)
        if kind == "replace":
            region = w.region([t, t], lambda args: [args[1]])
        else:
            region = w.combiner(kind, elt)
        return w.op("stablehlo.scatter", [operand, idx, upd], rtypes, {
            "scatter_dimension_numbers": "#stablehlo.scatter<" + ", ".join(fields) + ">",
            "indices_are_sorted": "false", "unique_indices": "false"}, [region])

    # -- control flow -----------------------------------------------------
    def t_while(self, op, ins, rtypes, a):
        w = self.w
        types = [v.type for v in ins]
        cond = w.region(types, lambda args: self.block(op.regions[0].blocks[0], args))
        body = w.region(types, lambda args: self.block(op.regions[1].blocks[0], args))
        return w.op("stablehlo.while", ins, rtypes, regions=[cond, body])

    # -- shard_map / pmap: manual computations over the devices ------------
    def device_mesh(self, main):
        """The mesh of the program's device vmaps (shard_map, pmap): their
        axes, outermost first, following nested ones into their callees;
        None without any. Every device vmap must use these axes in this
        order (NotImplementedError otherwise)."""
        chains = []

        def visit(block, chain):
            for op in block.operations:
                op = op.operation
                a = op.attributes
                if op.name == "ember.vmap" and "ember.device_axis" in a:
                    here = chain + [(ir.StringAttr(a["axis_name"]).value,
                                     _ints(a["batch_size"]))]
                    chains.append(here)
                    callee = self.functions[ir.FlatSymbolRefAttr(a["callee"]).value]
                    visit(callee.regions[0].blocks[0], here)
                    continue
                if op.name == "func.call":
                    callee = self.functions.get(ir.FlatSymbolRefAttr(a["callee"]).value)
                    if callee is not None and not (self.tpu_kernels and self.tpu_kernels(
                            ir.FlatSymbolRefAttr(a["callee"]).value)):
                        visit(callee.regions[0].blocks[0], chain)
                for region in op.regions:
                    for b in region.blocks:
                        visit(b, chain)

        visit(main.regions[0].blocks[0], [])
        if not chains:
            return None
        mesh = max(chains, key=len)
        if any(c != mesh[:len(c)] for c in chains) or len({n for n, _ in mesh}) != len(mesh):
            raise NotImplementedError(
                "StableHLO export: shard_maps over different meshes (or mesh axes in "
                "different orders) in one program")
        return mesh

    def t_vmap(self, op, ins, rtypes, a):
        """A vmap whose lanes are devices (`ember.device_axis`: shard_map,
        pmap) as Shardy's `sdy.manual_computation` over that mesh axis: its
        batched operands split along their first dimension, the others
        replicated, the callee written once for one device. A shard_map over
        several mesh axes is one vmap per axis, nested: nested manual
        computations."""
        if "ember.device_axis" not in a:
            raise NotImplementedError(
                "StableHLO export: an ember.vmap left unexpanded (only shard_map's and "
                "pmap's device vmaps are written, as manual computations)")
        axis = ir.StringAttr(a["axis_name"]).value
        if self.mesh is None or axis in self.manual or axis not in dict(self.mesh):
            raise NotImplementedError(
                f"StableHLO export: a device vmap over axis {axis!r} outside the program's "
                "mesh")
        flags = [bool(b) for b in ir.DenseBoolArrayAttr(a["batched"])]

        def sharding(t, split):
            rank = len(_split(t)[0])
            dims = ['{"' + axis + '"}'] + ["{}"] * (rank - 1) if split else ["{}"] * rank
            return "<@mesh, [" + ", ".join(dims) + "]>"

        def local(t, split):
            shape, elt = _split(t)
            return _tensor((1,) + tuple(shape[1:]), elt) if split else t

        callee = self.functions[ir.FlatSymbolRefAttr(a["callee"]).value]
        w = self.w

        def body(args):
            vals = []
            for v, split in zip(args, flags):
                if split:
                    v = w.reshape(v, _split(v.type)[0][1:])
                vals.append(v)
            self.manual.append(axis)
            try:
                outs = self.block(callee.regions[0].blocks[0], vals)
            finally:
                self.manual.pop()
            return [w.reshape(o, (1,) + tuple(_split(o.type)[0])) for o in outs]

        region = w.region([local(v.type, f) for v, f in zip(ins, flags)], body,
                          terminator="sdy.return")
        props = {
            "in_shardings": "#sdy.sharding_per_value<[" + ", ".join(
                sharding(v.type, f) for v, f in zip(ins, flags)) + "]>",
            "manual_axes": '#sdy<manual_axes{"' + axis + '"}>',
            "out_shardings": "#sdy.sharding_per_value<[" + ", ".join(
                sharding(t, True) for t in rtypes) + "]>",
        }
        return w.op("sdy.manual_computation", ins, rtypes, props, regions=[region])

    def _axis_groups(self, axis):
        """The partitions along `axis`, one group per position on the other
        axes (partitions numbered row-major over the mesh's axes)."""
        names = [n for n, _ in self.mesh]
        sizes = [k for _, k in self.mesh]
        d = names.index(axis)
        others = [range(k) for i, k in enumerate(sizes) if i != d]
        groups = []
        for rest in itertools.product(*others):
            group = []
            for j in range(sizes[d]):
                coords = list(rest[:d]) + [j] + list(rest[d:])
                pid = 0
                for c, k in zip(coords, sizes):
                    pid = pid * k + c
                group.append(pid)
            groups.append(group)
        return groups

    def _collective(self, op, a):
        """(replica groups, channel handle) of a collective over a device
        axis of the manual computations being written."""
        axis = ir.StringAttr(a["axis"]).value
        if axis not in self.manual:
            raise NotImplementedError(
                f"StableHLO export: {op.name} over axis {axis!r} outside a shard_map or "
                "pmap over it (a vmap's named axis is expanded, not written)")
        self.channels += 1
        groups = self._axis_groups(axis)
        text = (f"dense<[{', '.join(_list(g) for g in groups)}]> : "
                f"tensor<{len(groups)}x{len(groups[0])}xi64>")
        return text, f"#stablehlo.channel_handle<handle = {self.channels}, type = 1>"

    def _all_reduce(self, op, ins, rtypes, a, kind):
        groups, channel = self._collective(op, a)
        elt = _elt(rtypes[0])
        return self.w.op("stablehlo.all_reduce", ins, rtypes, {
            "channel_handle": channel, "replica_groups": groups,
            "use_global_device_ids": None}, regions=[self.w.combiner(kind, elt)])

    def t_psum(self, op, ins, rtypes, a):
        return self._all_reduce(op, ins, rtypes, a, "sum")

    def t_pmax(self, op, ins, rtypes, a):
        return self._all_reduce(op, ins, rtypes, a, "max")

    def t_pmin(self, op, ins, rtypes, a):
        return self._all_reduce(op, ins, rtypes, a, "min")

    def t_pvary(self, op, ins, rtypes, a):
        self._collective(op, a)
        return [ins[0]]

    def t_axis_index(self, op, ins, rtypes, a):
        # The partition's coordinate along the axis (partitions row-major
        # over the mesh's axes), as JAX computes it.
        self._collective(op, a)
        axis = ir.StringAttr(a["axis"]).value
        names = [n for n, _ in self.mesh]
        sizes = [k for _, k in self.mesh]
        d = names.index(axis)
        stride = math.prod(sizes[d + 1:])
        w = self.w
        pid = w.op("stablehlo.partition_id", [], ["tensor<ui32>"])[0]
        if stride > 1:
            pid = w.bin("stablehlo.divide", pid, w.const(stride, (), "ui32"))
        if d > 0:
            pid = w.bin("stablehlo.remainder", pid, w.const(sizes[d], (), "ui32"))
        return [w.convert(pid, "i32")]

    def t_all_gather(self, op, ins, rtypes, a):
        groups, channel = self._collective(op, a)
        d = _ints(a["dimension"])
        x = ins[0]
        if "tiled" not in a:  # the lanes' values stacked at d: each a unit slice
            shape = list(_split(x.type)[0])
            x = self.w.reshape(x, shape[:d] + [1] + shape[d:])
        return self.w.op("stablehlo.all_gather", [x], rtypes, {
            "all_gather_dim": f"{d} : i64", "channel_handle": channel,
            "replica_groups": groups, "use_global_device_ids": None})

    def t_reduce_scatter(self, op, ins, rtypes, a):
        groups, channel = self._collective(op, a)
        d = _ints(a["dimension"])
        shape, elt = _split(rtypes[0])
        tiled = "tiled" in a
        rt = rtypes[0] if tiled else _tensor(tuple(shape[:d]) + (1,) + tuple(shape[d:]), elt)
        out = self.w.op("stablehlo.reduce_scatter", ins, [rt], {
            "channel_handle": channel, "replica_groups": groups,
            "scatter_dimension": f"{d} : i64", "use_global_device_ids": None},
            regions=[self.w.combiner("sum", elt)])[0]
        return [out if tiled else self.w.reshape(out, shape)]

    def t_ppermute(self, op, ins, rtypes, a):
        _, channel = self._collective(op, a)
        flat = _ints(a["pairs"])
        # The lanes' pairs within each group of partitions along the axis.
        pairs = [[g[flat[k]], g[flat[k + 1]]]
                 for g in self._axis_groups(ir.StringAttr(a["axis"]).value)
                 for k in range(0, len(flat), 2)]
        text = ("dense<[" + ", ".join(_list(p) for p in pairs) + f"]> : tensor<{len(pairs)}x2xi64>"
                if pairs else "dense<> : tensor<0x2xi64>")
        return self.w.op("stablehlo.collective_permute", ins, rtypes, {
            "channel_handle": channel, "source_target_pairs": text})

    def t_all_to_all(self, op, ins, rtypes, a):
        groups, channel = self._collective(op, a)
        n = _ints(a["axis_size"])
        s, c = _ints(a["split"]), _ints(a["concat"])
        x = ins[0]
        shape, elt = _split(x.type)
        shape = list(shape)

        def exchange(v, split, concat, rt):
            return self.w.op("stablehlo.all_to_all", [v], [rt], {
                "channel_handle": channel, "concat_dimension": f"{concat} : i64",
                "replica_groups": groups, "split_count": f"{n} : i64",
                "split_dimension": f"{split} : i64"})[0]

        if "tiled" in a:
            return [exchange(x, s, c, rtypes[0])]
        # A unit dimension where the result's new one goes; the exchange
        # moves the split dimension's entries into it; the split dimension
        # (now of size 1) goes.
        q = c if c <= s else c + 1
        s1 = s if q > s else s + 1
        yshape = shape[:q] + [1] + shape[q:]
        y = self.w.reshape(x, yshape)
        yshape[q], yshape[s1] = n, 1
        z = exchange(y, s1, q, _tensor(tuple(yshape), elt))
        return [self.w.reshape(z, list(_split(rtypes[0])[0]))]

    def t_case(self, op, ins, rtypes, a):
        w = self.w
        n = len(op.regions)
        index = w.op("stablehlo.clamp", [w.const(0, (), "i32"), ins[0],
                                         w.const(n - 1, (), "i32")], [ins[0].type])[0]
        branches = [w.region([], lambda args, r=r: self.block(r.blocks[0], []))
                    for r in op.regions]
        return w.op("stablehlo.case", [index], rtypes, regions=branches)


_SVD_PROGRAMS = {}
# (shape, dtype, full_matrices, compute_uv) -> the traced program's text of
# `lax_linalg.svd_by_polar` on that operand, vmapped over its batch
# dimensions, results (s, u, vh) or s: registered by export.py, a layer
# that can trace (this one cannot import the tracer).
svd_tracer = None


def _svd_program(shape, elt, full, compute_uv):
    """(functions, main) of the traced program of `svd_by_polar` on one
    operand type, its results ember.svd's (s, then u and vh), with its
    transformations expanded; kept per type (the module with them)."""
    key = (shape, elt, full, compute_uv)
    if key not in _SVD_PROGRAMS:
        if svd_tracer is None:
            raise NotImplementedError("StableHLO export for TPU: ember.svd needs "
                                      "ember._src.export (import ember)")
        module = ir.Module.parse(svd_tracer(shape, dtypes.from_mlir_name(elt), full,
                                            compute_uv))
        keep_device_vmaps(module)
        functions, main, _ = module_functions(module, "svd for TPU")
        _SVD_PROGRAMS[key] = (module, functions, main)
    return _SVD_PROGRAMS[key][1:]


def keep_device_vmaps(module):
    """`ember-transforms` on `module` (an ir.Module) with the device vmaps of
    shard_map and pmap kept, which `to_stablehlo` writes as manual
    computations; a transformation of a shard_map cannot be expanded so:
    NotImplementedError."""
    from ember._mlir.passmanager import PassManager

    from .context import compile_lock

    try:
        with compile_lock:  # (pipelines run one at a time: context.py)
            PassManager.parse("builtin.module(ember-expand-transforms{keep-device-vmaps=true},"
                              "symbol-dce,canonicalize,cse)").run(module.operation)
    except ir.MLIRError as e:
        notes = "; ".join(d.message for d in e.error_diagnostics)
        raise NotImplementedError(f"StableHLO export: {notes}") from None


TRANSFORM_OPS = ("ember.jvp", "ember.vjp", "ember.vmap", "ember.custom_jvp_call",
                 "ember.custom_vjp_call", "ember.remat", "ember.linear_call")


def transformation_ops(module):
    """The names of the transformation ops left in `module` (an ir.Module),
    in walk order."""
    found = []

    def find(op):
        if op.name in TRANSFORM_OPS:
            found.append(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(find)
    return found


def module_functions(module, who):
    """(functions by name, `main`, main's FunctionType) of a module."""
    functions = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func":
            functions[ir.StringAttr(op.attributes["sym_name"]).value] = op
    main = functions.get("main")
    if main is None:
        raise ValueError(f"{who}: the module has no main function")
    return functions, main, ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)


def _string(s):
    """`s` as an MLIR string literal."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\{ord(c):02X}"
                         for c in s) + '"'


def to_stablehlo(module, name="jit_main", tpu_kernels=None, scope=None, arg_names=None,
                 result_names=None, platform="cpu", platform_index=False, platforms=None):
    """The `ember` module `module` (an ir.Module whose `main` has no
    transformation ops left) as StableHLO text in generic form;
    `tpu_kernels` (see `_Translator`) makes Pallas kernels Mosaic calls.
    With `scope` (a symbolic export's SymbolicScope), the `ember.sym_*`
    annotations make the shapes symbolic: `?` dimensions, the variables read
    from the arguments, dynamic ops where the shapes are computed.
    `arg_names`/`result_names` (an export's: JAX's argument paths and
    `result...` paths) become the arguments' locations and the results'
    `jax.result_info`, as in JAX's exported modules. `platform` "tpu" writes
    decompositions as XLA:TPU's custom calls instead of LAPACK's. With
    `platform_index`, the first argument is JAX's platform index (an export
    for several platforms) and `arg_names` name the others; `platforms`,
    the export's, makes the ops whose form differs on the TPU (kernels
    given by `tpu_kernels`, decompositions) a case on that index: one
    module for all of them, as JAX's multi-platform modules."""
    functions, main, ftype = module_functions(module, "StableHLO export")
    t = _Translator(functions, tpu_kernels, scope, platform)
    multi = platform_index and platforms is not None and "tpu" in platforms
    if multi and scope is not None:
        raise NotImplementedError("StableHLO with symbolic dimensions for several platforms "
                                  "whose TPU form differs")
    t.mesh = t.device_mesh(main)
    block = main.regions[0].blocks[0]
    arg_types = [str(x) for x in ftype.inputs]
    results = [str(x) for x in ftype.results]
    t.w.indent = 4
    if t.sym is not None:
        specs = ([ir.StringAttr(s).value for s in main.attributes["ember.sym_args"]]
                 if "ember.sym_args" in main.attributes else [""] * len(arg_types))
        arg_types = [t.sym.type_of(s, x) for s, x in zip(specs, arg_types)]
        args = [V(f"%arg{i}", x) for i, x in enumerate(arg_types)]  # (JAX's names)
        t.sym.bind_arguments(args, specs)
        outs = t.block(block, args)
        results = [v.type for v in outs]
    else:
        args = [V(f"%arg{i}", x) for i, x in enumerate(arg_types)]  # (JAX's names)
        if multi:
            w = t.w
            on_tpu = w.cmp("EQ", args[0], w.const(list(platforms).index("tpu"), (), "i32"))
            t.tpu_branch = w.convert(on_tpu, "i32")
            if t.tpu_kernels is None:
                t.tpu_kernels = lambda callee: None
        outs = t.block(block, args)
    # The module and function in their custom form (as JAX prints them; the
    # builtin and func dialects are registered wherever StableHLO is), the
    # StableHLO ops in generic form.
    ret = "    return"
    if outs:
        ret += (" " + ", ".join(v.name for v in outs) + " : "
                + ", ".join(v.type for v in outs))
    name = re.sub(r"[^A-Za-z0-9_$.]", "_", name)  # a bare symbol name, as JAX's
    poly = "jax.uses_shape_polymorphism = true, " if t.sym is not None else ""
    def quoted(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    first = args[:1] if platform_index else []
    rest = args[len(first):]
    if arg_names is not None and len(arg_names) == len(rest):
        params = [f"{a.name}: {a.type} loc({quoted(n)})" for a, n in zip(rest, arg_names)]
    else:
        params = [f"{a.name}: {a.type}" for a in rest]
    params = [f'{a.name}: {a.type} {{jax.global_constant = "_platform_index"}}'
              for a in first] + params
    if result_names is not None and len(result_names) == len(results):
        results = [f"{r} {{jax.result_info = {quoted(n)}}}"
                   for r, n in zip(results, result_names)]
    partitions, mesh = 1, ""
    if t.mesh is not None:
        # shard_map/pmap: one partition per device of the mesh (Shardy's).
        partitions = math.prod(k for _, k in t.mesh)
        mesh = ('  "sdy.mesh"() <{mesh = #sdy.mesh<[' + ", ".join(
            f'"{n}"={k}' for n, k in t.mesh) + ']>, sym_name = "mesh"}> : () -> ()\n')
    head = (f"module @{name} attributes {{{poly}mhlo.num_partitions = {partitions} : i32, "
            "mhlo.num_replicas = 1 : i32} {\n" + mesh +
            "  func.func public @main(" + ", ".join(params)
            + ") -> (" + ", ".join(results) + ") {\n")
    return (head + "\n".join(t.w.lines + [ret]) + "\n  }\n"
            + "".join(t.extra_functions.values()) + "}\n")
