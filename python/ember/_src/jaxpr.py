"""`make_jaxpr`: the traced program of a function, printed in JAX's jaxpr
form (`{ lambda consts ; args. let eqns in (outs) }`).

Ember's program is MLIR (`ember` dialect), so a jaxpr here is a readable
view of the traced module after the transformations are expanded (what
`grad`/`vmap` produced, as JAX's jaxprs show), not a separate IR: each
equation is one op, named without its `ember.` prefix, with its attributes
as parameters. Scalar constants print inline as JAX's literals; other
constants are the jaxpr's `consts`.
"""

import ast
import re

import numpy as np

from ember._mlir import ir

from . import compiler, core, dtypes, tree_util
from .api_util import flatten_args, flatten_fun

_MLIR_ELT = {"f32": "f32", "f64": "f64", "f16": "f16", "bf16": "bf16", "i1": "bool",
             "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "ui8": "u8",
             "ui16": "u16", "ui32": "u32", "ui64": "u64", "complex<f32>": "c64",
             "complex<f64>": "c128"}


# Ops whose JAX primitive has another name.
_JAX_NAMES = {"checkpoint_name": "name", "reverse": "rev"}


def _names():
    """a, b, ..., z, ba, bb, ... (JAX's variable names)."""
    n = 0
    while True:
        k, s = n, ""
        while True:
            s = chr(ord("a") + k % 26) + s
            k //= 26
            if k == 0:
                break
        n += 1
        yield s


def _type_str(t):
    text = str(t)
    m = re.fullmatch(r"tensor<(.*)>", text)
    if not m:
        return text
    parts = m.group(1).split("x")
    # complex<f32> has no 'x' inside; dims come first.
    dims, elt = [], m.group(1)
    while parts and parts[0].isdigit():
        dims.append(parts.pop(0))
        elt = "x".join(parts)
    return f"{_MLIR_ELT.get(elt, elt)}[{','.join(dims)}]"


def _param(attr):
    text = str(attr)
    m = re.fullmatch(r"array<i64(?:: (.*))?>", text)
    if m:
        return f"({m.group(1) or ''}{',' if m.group(1) and ',' not in m.group(1) else ''})"
    m = re.fullmatch(r"(-?\d+) : i64", text)
    if m:
        return m.group(1)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    m = re.fullmatch(r"#ember<\w+ (\w+)>", text)
    return m.group(1) if m else text


_DTYPE_NAMES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
                "bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
                "c64": "complex64", "c128": "complex128"}


def _dtype_name(t):
    return _DTYPE_NAMES.get(_type_str(t).split("[")[0], str(t))


def _dims(t):
    return tuple(int(d) for d in re.findall(r"(\d+)x", str(t)))


def _tuple(xs):
    xs = tuple(xs)
    return f"({xs[0]},)" if len(xs) == 1 else f"({', '.join(map(str, xs))})"


def _ints_of(op, name):
    text = str(op.attributes[name])
    m = re.fullmatch(r"array<i64(?:: (.*))?>", text)
    return tuple(int(v) for v in m.group(1).split(",")) if m and m.group(1) else ()


_ELEMENTWISE = frozenset(
    "ember." + n for n in "add sub mul div rem pow max min atan2 nextafter and or xor "
    "shift_left shift_right_logical shift_right_arithmetic compare select clamp".split())


def _only_elementwise_uses(value):
    uses = [u.owner for u in value.uses]
    return bool(uses) and all(getattr(o, "name", None) in _ELEMENTWISE for o in uses)


def _jax_form(op, name, params, operands):
    """The equation as JAX names its primitive and parameters, where Ember's
    op differs only in spelling: (name, params, operands)."""
    if name == "compare":
        direction = str(op.attributes["comparison_direction"]).split()[-1].rstrip(">")
        return direction.lower(), [], operands
    if name == "select":  # JAX's select_n(pred, on_false, on_true)
        return "select_n", [], [operands[0], operands[2], operands[1]]
    if name == "reduce":
        kind = str(op.attributes["kind"]).split()[-1].rstrip(">")
        axes = f"axes={_tuple(_ints_of(op, 'dimensions'))}"
        return f"reduce_{kind}", [axes] + (["out_sharding=None"] if kind == "sum" else []), \
            operands
    if name == "cumulative":  # JAX's cumsum, cumprod, cummax, ...
        kind = _param(op.attributes["kind"])
        reverse = "reverse" in op.attributes and str(op.attributes["reverse"]) == "true"
        return f"cum{kind}", [f"axis={_param(op.attributes['axis'])}",
                              f"reverse={reverse}"], operands
    if name == "convert":
        return "convert_element_type", [f"new_dtype={_dtype_name(op.results[0].type)}",
                                        "weak_type=False"], operands
    if name == "reshape":
        src, dst = _dims(op.operands[0].type), _dims(op.results[0].type)
        kept = [d for d in src if d != 1]
        if len(dst) < len(src) and [d for d in dst if d != 1] == kept:
            # Only unit dimensions removed: JAX's squeeze (`x[0]`).
            gone, j = [], 0
            for i, d in enumerate(src):
                if j < len(dst) and dst[j] == d and (d != 1 or len(src) - i == len(dst) - j):
                    j += 1
                else:
                    gone.append(i)
            if j == len(dst):
                return "squeeze", [f"dimensions={_tuple(gone)}"], operands
        if len(dst) > len(src) and [d for d in dst if d != 1] == kept:
            # Only unit dimensions added: JAX's broadcast_in_dim (expand_dims).
            where, i = [], 0
            for k, d in enumerate(dst):
                if i < len(src) and d == src[i] and (d != 1 or len(dst) - k == len(src) - i):
                    where.append(k)
                    i += 1
            if i == len(src):
                return "broadcast_in_dim", (
                    [f"broadcast_dimensions={_tuple(where)}"] if where else []), operands
        return "reshape", ["dimensions=None", f"new_sizes={_tuple(dst)}", "sharding=None"], \
            operands
    if name == "broadcast_in_dim":  # (JAX shows the dimensions only, and only some)
        dims = _ints_of(op, "broadcast_dimensions")
        return name, [f"broadcast_dimensions={_tuple(dims)}"] if dims else [], operands
    if name == "iota":
        return "iota", [f"dimension={_param(op.attributes['iota_dimension'])}",
                        f"dtype={_dtype_name(op.results[0].type)}",
                        f"shape={_tuple(_dims(op.results[0].type))}", "sharding=None"], operands
    if name == "dot_general":
        def lst(k):
            return "[" + ", ".join(map(str, _ints_of(op, k))) + "]"
        dn = (f"(({lst('lhs_contracting_dimensions')}, {lst('rhs_contracting_dimensions')}), "
              f"({lst('lhs_batching_dimensions')}, {lst('rhs_batching_dimensions')}))")
        shown = [f"dimension_numbers={dn}"]
        if "precision" in op.attributes:  # (JAX's Precision names)
            names = [ir.StringAttr(p).value for p in op.attributes["precision"]]
            shown.append(f"precision={names[0]}" if len(names) == 1 else  # (a preset)
                         "precision=(" + ", ".join(f"Precision.{n}" for n in names) + ")")
        return "dot_general", shown + [
            f"preferred_element_type={_dtype_name(op.results[0].type)}"], operands
    if name == "slice" and set(_ints_of(op, "strides")) <= {1}:
        return "slice", [p if not p.startswith("strides=") else "strides=None"
                         for p in params], operands
    return name, params, operands


def _scalar_literal(op):
    """The literal text of a rank-0 constant, or None."""
    t = op.results[0].type
    if not str(t).startswith("tensor<") or "x" in str(t)[7:-1].split("complex")[0]:
        return None
    m = re.match(r"dense<([^>]*)>", _value_text(op))
    if not m:
        return None
    v = m.group(1)
    elt = _type_str(t)[:-2]
    if v in ("true", "false"):
        v = "True" if v == "true" else "False"
    elif (pair := re.fullmatch(r"\(([^,()]+),([^,()]+)\)", v)) and elt.startswith("c"):
        try:  # (JAX's `(1+2j)`)
            v = repr(complex(float(pair.group(1)), float(pair.group(2))))
        except ValueError:
            pass
    elif v.startswith("0x") and elt.startswith(("f", "bf")):
        # (MLIR prints infinities and NaNs by their bits; JAX `inf`, `nan`)
        bits = {"f16": (np.uint16, np.float16), "bf16": (np.uint16, dtypes.bfloat16),
                "f32": (np.uint32, np.float32), "f64": (np.uint64, np.float64)}.get(elt)
        if bits is not None:
            v = repr(float(np.array(int(v, 16), bits[0]).view(bits[1])))
    else:
        try:
            x = float(v) if elt.startswith(("f", "bf")) else int(v)
            v = repr(x) if isinstance(x, float) else str(x)
        except ValueError:
            pass
    return f"{v}:{elt}[]"


def _is_literal(x):
    return isinstance(x, Literal)


def _converted_literal(text, mlir_type):
    """The literal `text` (`2:i32[]`) as a literal of the rank-0 type
    `mlir_type`, or None."""
    elt = _type_str(mlir_type)
    if not elt.endswith("[]"):
        return None
    elt = elt[:-2]
    v = text.rsplit(":", 1)[0]
    try:
        if elt == "bool":
            return f"{v not in ('0', '0.0', 'False', '-0.0')}:bool[]"
        if elt.startswith(("f", "bf")):
            return f"{float(v)!r}:{elt}[]"
        if elt.startswith(("i", "u")):
            return f"{int(float(v))}:{elt}[]"
    except ValueError:
        return None
    return None


def _value_text(op):
    """A constant op's `value` attribute as text (the bindings cannot hand
    out every element type's attribute, complex ones among them)."""
    try:
        return str(op.attributes["value"])
    except TypeError:
        m = re.search(r"(dense<[^>]*>)", str(op))
        return m.group(1) if m else ""


def _const_value(op):
    """A constant op's value as a NumPy array."""
    aval = _aval(op.results[0].type)
    if aval is not None and np.dtype(aval.dtype).kind == "c":
        # (complex elements print as `(re,im)` pairs; a splat as one)
        pairs = re.findall(r"\(([^,()]+),([^,()]+)\)", _value_text(op))
        vals = [complex(float(a), float(b)) for a, b in pairs]
        if vals:
            return (np.full(aval.shape, vals[0], aval.dtype) if len(vals) == 1 else
                    np.array(vals, aval.dtype).reshape(aval.shape))
    try:
        return np.array(ir.DenseElementsAttr(op.attributes["value"]))
    except (TypeError, ValueError, RuntimeError):
        pass
    text = _value_text(op)
    m = re.match(r"dense<([^>]*)>", text)
    shape = [int(d) for d in re.findall(r"(\d+)x", str(op.results[0].type))]
    try:
        return np.full(shape, float(m.group(1)) if m else np.nan)
    except ValueError:
        return text


_WIDTH = 80  # (JAX's pretty printer's)


def _eqn_text(eqn, indent):
    """An equation (its text `(lhs, prim, params, args, regions)`) as JAX
    lays it out: on one line when it fits, else its parameters one per
    line."""
    lhs, prim, params, args, regions = eqn.text
    args = f" {args}"  # (JAX's printer leaves the space before no operands too)
    one = f"{lhs} = {prim}{f'[{chr(32).join(params)}]' if params else ''}{args}"
    if not regions and (not params or indent + len(one) <= _WIDTH):
        return one
    pad = " " * indent
    lines = [f"{lhs} = {prim}["] + [f"{pad}  {p}" for p in params] + \
        [f"{pad}  {r.lstrip()}" for r in regions] + [f"{pad}]{args}"]
    return "\n".join(lines)


def _aval(t):
    """The ShapedArray of an MLIR tensor type (None for other types)."""
    try:
        rt = ir.RankedTensorType(t)
        return core.ShapedArray(tuple(rt.shape), dtypes.from_mlir_name(rt.element_type))
    except (ValueError, KeyError):
        return None


class Var:
    """A variable of a jaxpr (JAX's `Var`): its `aval`; it prints as its
    name."""

    __slots__ = ("name", "aval", "_type")

    def __init__(self, name, mlir_type):
        self.name, self._type, self.aval = name, _type_str(mlir_type), _aval(mlir_type)

    def typed(self):
        return f"{self.name}:{self._type}"

    def __str__(self):
        return self.name

    def __repr__(self):
        return self.typed()


class Literal:
    """A constant an equation takes inline (JAX's `Literal`): `val`,
    `aval`; it prints as JAX prints it (`1.0:f32[]`)."""

    __slots__ = ("val", "aval", "_text")

    def __init__(self, val, text):
        self.val, self._text = val, text
        self.aval = core.ShapedArray((), np.asarray(val).dtype) if not isinstance(val, str) \
            else None

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"Literal({getattr(self.val, 'item', lambda: self.val)()!r})"


def _literal(text):
    """The Literal of JAX's literal text (`2:i32[]`, `True:bool[]`)."""
    v, elt = text.rsplit(":", 1)
    try:
        dtype = dtypes.bfloat16 if elt[:-2] == "bf16" else \
            np.dtype(_DTYPE_NAMES.get(elt[:-2], elt[:-2]))
        if dtype == np.bool_:
            val = v == "True"
        elif dtype.kind in "iu":
            val = int(v)
        else:
            val = complex(v) if dtype.kind == "c" else float(v)
        return Literal(np.asarray(val).astype(dtype)[()], text)
    except (TypeError, ValueError, OverflowError):
        return Literal(text, text)  # (a value the view cannot read back)


def primitive_of(name):
    """The primitive object of equations named `name`: `lax_primitives`
    (the layer above) registers its table here."""
    raise NotImplementedError(f"no primitive object for {name!r}")


class JaxprEqn:
    """An equation (JAX's `JaxprEqn`): `invars` (Vars and Literals),
    `outvars`, `primitive` (JAX's primitive object, which `bind`s to the
    `lax` function of its name) and `params` (JAX's parameters as values).
    It prints as JAX prints it."""

    def __init__(self, invars, outvars, primitive, params, text):
        self.invars, self.outvars = invars, outvars
        self.primitive, self.params, self.text = primitive, params, text

    def __repr__(self):
        return _eqn_text(self, 0)


def _param_value(text):
    """A printed parameter's value (`(0, 1)`, `float32`, `None`)."""
    def tuples(x):
        return tuple(map(tuples, x)) if isinstance(x, (list, tuple)) else x

    try:
        return tuples(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if re.fullmatch(r"[a-z]+[0-9]*", text):
        try:
            return np.dtype(text)
        except TypeError:
            pass
    return text


def _params(op, name, printed):
    """JAX's parameters of an equation as values: the printed ones, and
    those JAX keeps that the view does not print."""
    params = {}
    for p in printed:
        k, _, v = p.partition("=")
        params[k] = _param_value(v)
    if name == "broadcast_in_dim":
        params.setdefault("broadcast_dimensions", ())
        params["shape"] = tuple(_dims(op.results[0].type))
    return params


class Jaxpr:
    """The program (JAX's `Jaxpr`): `constvars`, `invars` (Vars), `eqns`
    (JaxprEqns) and `outvars` (Vars and Literals)."""

    def __init__(self, constvars, invars, eqns, outvars):
        self.constvars, self.invars, self.eqns, self.outvars = constvars, invars, eqns, outvars

    def pretty(self, indent=0):
        """JAX's layout: on one line when it fits in 80 columns (equations
        separated by `; `), else one equation per line."""
        pad = " " * indent
        head = (f"{{ lambda {' '.join(v.typed() for v in self.constvars)}; "
                f"{' '.join(v.typed() for v in self.invars)}. let")
        outs = ", ".join(map(str, self.outvars)) + ("," if len(self.outvars) == 1 else "")
        if not self.eqns:
            return f"{pad}{head}  in ({outs}) }}"
        eqns = [_eqn_text(e, indent + 4) for e in self.eqns]
        if not any("\n" in e for e in eqns):
            line = f"{pad}{head} {'; '.join(eqns)} in ({outs}) }}"
            if len(line) <= _WIDTH:
                return line
        body = "\n".join(f"{pad}    {e}" for e in eqns)
        return f"{pad}{head}\n{body}\n{pad}  in ({outs}) }}"

    def __str__(self):
        return self.pretty()


class ClosedJaxpr:
    """What `make_jaxpr` returns: `jaxpr`, `consts`, `in_avals`, `out_avals`."""

    def __init__(self, jaxpr, consts, in_avals, out_avals):
        self.jaxpr, self.consts = jaxpr, consts
        self.in_avals, self.out_avals = in_avals, out_avals

    @property
    def eqns(self):
        return self.jaxpr.eqns

    @property
    def literals(self):
        return self.consts

    def __str__(self):
        return str(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, **_):
        return str(self.jaxpr)


class _Printer:
    def __init__(self):
        self.names = _names()
        self.of = {}
        self.consts, self.constvars = [], []

    def var(self, v):
        """The Var of the value `v` (named when first seen)."""
        var = self.of.get(v)
        if var is None:
            var = self.of[v] = Var(next(self.names), v.type)
        return var

    def use(self, v):
        return self.of.get(v) or self.var(v)

    def block(self, block, indent):
        eqns, outs = [], []
        for op in block.operations:
            op = op.operation
            name = op.name
            if name in ("func.return", "ember.yield", "ember.return"):
                outs = [self.use(v) for v in op.operands]
                continue
            if name == "ember.constant":
                lit = _scalar_literal(op)
                if lit is not None:
                    self.of[op.results[0]] = _literal(lit)
                    continue
                if op.results[0] not in self.of:
                    self.constvars.append(self.var(op.results[0]))
                    self.consts.append(_const_value(op))
                continue
            if name == "ember.convert" and _is_literal(self.of.get(op.operands[0])):
                # A Python scalar converted to the operation's type: JAX's
                # literal of that type (`mul 2.0:f32[] a`).
                lit = _converted_literal(str(self.of[op.operands[0]]), op.results[0].type)
                if lit is not None:
                    self.of[op.results[0]] = _literal(lit)
                    continue
            if name == "ember.broadcast_in_dim" and _is_literal(self.of.get(op.operands[0])) \
                    and _only_elementwise_uses(op.results[0]):
                # A scalar literal broadcast for elementwise ops: JAX's
                # equations take the literal (`gt a 1.0:f32[]`).
                self.of[op.results[0]] = self.of[op.operands[0]]
                continue
            # (Discardable `ember.*` attributes are marks for the passes.)
            params = [f"{k}={_param(op.attributes[k])}" for k in op.attributes
                      if k != "operandSegmentSizes" and not k.startswith("ember.")]
            outvars = [self.var(r) for r in op.results]
            lhs = " ".join(v.typed() for v in outvars) or "_"
            short = name[len("ember."):] if name.startswith("ember.") else name
            short = _JAX_NAMES.get(short, short)
            operands = list(op.operands)
            short, params, operands = _jax_form(op, short, params, operands)
            if "ember.jax_name" in op.attributes:  # (JAX's primitive this op is)
                short, params = ir.StringAttr(op.attributes["ember.jax_name"]).value, []
            invars = [self.use(v) for v in operands]
            args = " ".join(map(str, invars))
            regions = [_Printer.region(self, b, indent + 6)
                       for region in op.regions for b in region.blocks]
            eqns.append(JaxprEqn(invars, outvars, primitive_of(short),
                                 _params(op, short, params), (lhs, short, params, args, regions)))
        return eqns, outs

    def region(self, block, indent):
        invars = [self.var(a) for a in block.arguments]
        eqns, outs = self.block(block, indent)
        return Jaxpr([], invars, eqns, outs).pretty(indent)


def _main(module):
    for op in module.body.operations:
        attrs = op.operation.attributes
        if "sym_name" in attrs and ir.StringAttr(attrs["sym_name"]).value == "main":
            return op.operation
    return module.body.operations[0].operation


def closed_jaxpr_of(text, in_avals, out_avals):
    """The jaxpr view of a traced module's text: as traced (JAX's jaxpr is
    the trace: no op merged or reordered), or, when it holds
    transformations, after the `transforms` stage expanded them (and
    cleaned up what expanding them leaves)."""
    from .stablehlo_out import transformation_ops

    with core.context():
        module = ir.Module.parse(text)
        if transformation_ops(module):
            compiler.run_pipeline(module, upto="transforms")
    p = _Printer()
    block = _main(module).regions[0].blocks[0]
    # JAX names the constants first, then the arguments.
    for op in block.operations:
        op = op.operation
        if op.name == "ember.constant" and _scalar_literal(op) is None:
            p.constvars.append(p.var(op.results[0]))
            p.consts.append(_const_value(op))
    invars = [p.var(a) for a in block.arguments]
    eqns, outs = p.block(block, 0)
    return ClosedJaxpr(Jaxpr(p.constvars, invars, eqns, outs), p.consts, in_avals, out_avals)


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
    """JAX's `eval_jaxpr`: the equations evaluated in order, each by its
    primitive's `bind` (so under any transformation); the outputs' values."""
    env = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: {len(args)} arguments for a jaxpr of "
                        f"{len(jaxpr.invars)} inputs (at {core.where()})")
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        out = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        for v, x in zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]):
            env[v] = x
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed_jaxpr):
    """JAX's `jaxpr_as_fun`: the closed jaxpr as a function of its inputs
    (a list of its outputs)."""
    return lambda *args: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
    """JAX's `make_jaxpr`: `make_jaxpr(f)(*args)` is the program `f` traces
    to on arguments of these types (transformations expanded)."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    def wrapped(*args, **kwargs):
        st = [(i, a) for i, a in enumerate(args) if i in static]
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, treedef = flatten_args(dyn, kwargs)
        avals = [core.as_value(x).aval for x in leaves]
        flat, out_tree = flatten_fun(fun, treedef, st)
        module, out_avals = core.trace_function(flat, avals, lifted=[])
        closed = closed_jaxpr_of(str(module), avals, out_avals)
        if return_shape:
            shapes = tree_util.tree_unflatten(
                out_tree(), [core.ShapeDtypeStruct(a.shape, a.dtype) for a in out_avals])
            return closed, shapes
        return closed

    return wrapped


__all__ = ["ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Var", "eval_jaxpr", "jaxpr_as_fun",
           "make_jaxpr"]
