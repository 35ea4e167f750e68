"""`jax.export` for Ember: a jitted function traced for given argument types,
as a self-contained `ember` module with its calling convention, which can be
serialized, loaded in another process (or a later Ember) and called, also
inside `jit` and under transformations.

Serialized form (docs/design.md, "Export"): the 8 bytes `EMBEREXP`, the
SHA-256 of everything after it (32 bytes), a little-endian uint32 header
length, the header (UTF-8 JSON: format version, Ember version, argument and
result trees and avals, platforms, devices, effects), then the module as MLIR
bytecode. The digest is checked before anything is parsed: MLIR's bytecode
reader aborts the process on some corrupt inputs, so a damaged or truncated
file must never reach it. The module is the traced program
after `ember-transforms` (no transformation ops or private callees remain),
so a reader needs only the `ember` dialect of the same or a later format.
"""

import hashlib
import io
import json
import struct

import numpy as np

from ember._mlir import ir

from . import compiler, core, dtypes, tree_util
from .api_util import flatten_args, flatten_fun

FORMAT_VERSION = 1
CALLING_CONVENTION_VERSION = 9  # JAX's current one; Ember's has one form
minimum_supported_calling_convention_version = CALLING_CONVENTION_VERSION
maximum_supported_calling_convention_version = CALLING_CONVENTION_VERSION


def default_export_platform():
    """The platform `export` targets by default: Ember exports for the CPU."""
    return "cpu"
_MAGIC = b"EMBEREXP"


def _tree_to_json(t):
    if t.kind is None:
        return "*"
    kids = [_tree_to_json(c) for c in t.children]
    if t.kind is tuple:
        return {"tuple": kids}
    if t.kind is list:
        return {"list": kids}
    if t.kind is dict:
        if not all(isinstance(k, (str, int)) for k in t.aux):
            raise TypeError("export: dict keys must be strings or integers to serialize")
        return {"dict": kids, "keys": [[type(k).__name__, k] for k in t.aux]}
    if t.kind is type(None):
        return None
    raise TypeError(f"export: a pytree node of type {getattr(t.kind, '__name__', t.kind)} "
                    "cannot be serialized (only tuples, lists, dicts and None)")


def _tree_from_json(j):
    if j == "*":
        return tree_util.PyTreeDef(None, None, ())
    if j is None:
        return tree_util.PyTreeDef(type(None), None, ())
    if "tuple" in j:
        return tree_util.PyTreeDef(tuple, None, [_tree_from_json(c) for c in j["tuple"]])
    if "list" in j:
        return tree_util.PyTreeDef(list, None, [_tree_from_json(c) for c in j["list"]])
    keys = tuple(int(v) if k == "int" else str(v) for k, v in j["keys"])
    return tree_util.PyTreeDef(dict, keys, [_tree_from_json(c) for c in j["dict"]])


def _aval_json(a):
    return [list(a.shape), np.dtype(a.dtype).name, bool(a.weak_type)]


def _aval_from(j):
    shape, dtype, weak = j
    return core.ShapedArray(tuple(int(d) for d in shape), dtypes.canonicalize_dtype(
        np.dtype(dtype) if dtype != "bfloat16" else dtypes.bfloat16), bool(weak))


class Exported:
    """An exported function: `in_avals`, `out_avals`, `in_tree`, `out_tree`,
    `platforms`, `nr_devices`, `calling_convention_version`; `call(*args)`,
    `mlir_module()`, `serialize()`, `vjp()`."""

    def __init__(self, fun_name, module_text, in_tree, in_avals, out_tree, out_avals,
                 platforms=("cpu",)):
        self.fun_name = fun_name
        self._text = module_text
        self.in_tree, self.out_tree = in_tree, out_tree
        self.in_avals, self.out_avals = tuple(in_avals), tuple(out_avals)
        self.platforms = tuple(platforms)
        self.nr_devices = 1
        self.calling_convention_version = CALLING_CONVENTION_VERSION
        self.ordered_effects = self.unordered_effects = ()
        self.disabled_safety_checks = ()
        self._exe = None

    def __repr__(self):
        return (f"Exported(fun_name={self.fun_name!r}, in_avals={self.in_avals}, "
                f"out_avals={self.out_avals}, platforms={self.platforms})")

    def mlir_module(self):
        """The exported program as StableHLO (MLIR's generic form), which
        XLA compiles; `ember_module()` is Ember's own form."""
        from .stablehlo_out import to_stablehlo

        with core.context():
            return to_stablehlo(ir.Module.parse(self._text), f"jit_{self.fun_name}")

    def ember_module(self):
        """The exported program in the `ember` dialect (what `serialize`
        stores and `call` compiles)."""
        return self._text

    def serialize(self, vjp_order=0):
        if vjp_order:
            raise ValueError("serialize: vjp_order > 0 is not supported; serialize "
                             "exp.vjp() instead")
        header = {
            "format_version": FORMAT_VERSION, "ember_version": _version(),
            "fun_name": self.fun_name, "in_tree": _tree_to_json(self.in_tree),
            "out_tree": _tree_to_json(self.out_tree),
            "in_avals": [_aval_json(a) for a in self.in_avals],
            "out_avals": [_aval_json(a) for a in self.out_avals],
            "platforms": list(self.platforms), "nr_devices": self.nr_devices,
            "calling_convention_version": self.calling_convention_version, "effects": [],
        }
        head = json.dumps(header).encode()
        buf = io.BytesIO()
        with core.context():
            ir.Module.parse(self._text).operation.write_bytecode(buf)
        rest = struct.pack("<I", len(head)) + head + buf.getvalue()
        return bytearray(_MAGIC + hashlib.sha256(rest).digest() + rest)

    def _check(self, args, kwargs):
        leaves, tree = flatten_args(args, kwargs)
        if tree != self.in_tree:
            raise TypeError(f"Exported.call: the arguments' structure {tree} does not match "
                            f"the exported {self.in_tree} (at {core.where()})")
        vals = [core.as_value(x) for x in leaves]
        for i, (v, a) in enumerate(zip(vals, self.in_avals)):
            if tuple(v.shape) != a.shape or v.dtype != a.dtype:
                raise ValueError(
                    f"Exported.call: argument {i} has type {v.aval.str_short()}, the exported "
                    f"function takes {a.str_short()} (at {core.where()})")
        return vals

    def call(self, *args, **kwargs):
        """Runs the exported function (compiled once; inside a trace its ops
        join the traced program, so `jit`, `grad` and `vmap` apply)."""
        vals = self._check(args, kwargs)
        if core._trace_stack or any(isinstance(v, core.Tracer) for v in vals):
            outs = _inline(self._text, vals)
        else:
            if self._exe is None:
                with core.context():
                    module = ir.Module.parse(self._text)
                self._exe = compiler.Executable(module, self.in_avals, self.out_avals,
                                                text=self._text)
            raw = self._exe([v._value for v in vals])
            outs = [core.Array(o, a.weak_type) for o, a in zip(raw, self.out_avals)]
        return tree_util.tree_unflatten(self.out_tree, outs)

    def vjp(self):
        """The exported VJP: takes the primal arguments and the output
        cotangents, returns the cotangents of the arguments."""
        from .ad import vjp as _vjp

        n = len(self.in_avals)
        in_tree, out_tree = self.in_tree, self.out_tree

        def bwd(*flat):
            primals = tree_util.tree_unflatten(in_tree, list(flat[:n]))
            args, kwargs = primals
            cts = tree_util.tree_unflatten(out_tree, list(flat[n:]))
            _, pullback = _vjp(lambda *a: self.call(*a, **kwargs), *args)
            return pullback(cts)

        ct_avals = [a.update(weak_type=False) for a in self.out_avals]
        specs = [core.ShapeDtypeStruct(a.shape, a.dtype) for a in
                 list(self.in_avals) + ct_avals]
        return _export_flat(bwd, specs, f"{self.fun_name}_vjp", self.platforms)


def _version():
    import importlib

    return importlib.import_module("ember").__version__


def _inline(text, vals):
    """Emits the ops of the module's `main` into the current trace on
    `vals`; returns its results as tracers. (The module is a fresh copy:
    its ops are re-created here and its regions moved.)"""
    trace = core.current_trace() or core.find_trace(vals)
    with core.context():
        module = ir.Module.parse(text)
    main = module.body.operations[0].operation
    block = main.regions[0].blocks[0]
    args = [trace.to_value(v) for v in vals]
    for old, new in zip(block.arguments, args):
        old.replace_all_uses_with(new)
    outs = None
    for op in list(block.operations):
        op = op.operation
        if op.name == "func.return":
            outs = list(op.operands)
            break
        with trace.ctx, trace.location():
            new = ir.Operation.create(
                op.name, results=[r.type for r in op.results], operands=list(op.operands),
                attributes={k: op.attributes[k] for k in op.attributes},
                regions=len(op.regions), ip=ir.InsertionPoint(trace.block))
        for k, region in enumerate(op.regions):
            for b in list(region.blocks):
                b.append_to(new.regions[k])
        for old_r, new_r in zip(op.results, new.results):
            old_r.replace_all_uses_with(new_r)
    return [core.Tracer(trace, v, _aval_of(v)) for v in outs]


def _aval_of(v):
    t = ir.RankedTensorType(v.type)
    return core.ShapedArray(tuple(t.shape), dtypes.from_mlir_name(t.element_type))


def _export_flat(fun, specs, name, platforms):
    leaves, in_tree = flatten_args(list(specs), {})
    avals = [core.ShapedArray(tuple(s.shape), dtypes.canonicalize_dtype(s.dtype),
                              bool(getattr(s, "weak_type", False))) for s in leaves]
    flat, out_tree = flatten_fun(fun, in_tree)
    module, out_avals = core.trace_function(flat, avals, lifted=[])
    with core.context():
        module = ir.Module.parse(str(module))
        compiler.run_pipeline(module, upto="transforms")
    return Exported(name, str(module), in_tree, avals, out_tree(), out_avals, platforms)


def export(fun_jit, *, platforms=None, disabled_checks=()):
    """`export(jax.jit(f))(*arg_specs)`: `f` traced for arguments of these
    types (ShapeDtypeStructs or arrays) as an `Exported`."""
    fun = getattr(fun_jit, "fun", None)
    if fun is None or not hasattr(fun_jit, "lower"):
        raise TypeError("export: the function must be the result of jax.jit")
    platforms = tuple(platforms) if platforms is not None else ("cpu",)
    for p in platforms:
        if p != "cpu":
            raise NotImplementedError(
                f"export: platform {p!r}; Ember exports for the CPU only (a CUDA "
                "runtime is not built yet)")

    def do_export(*args, **kwargs):
        static = set(fun_jit.static_argnums)
        if static or fun_jit.static_argnames:
            raise NotImplementedError("export of a function with static arguments")
        leaves, in_tree = flatten_args(args, kwargs)
        for x in leaves:
            if isinstance(getattr(x, "shape", None), tuple) and any(
                    not isinstance(d, (int, np.integer)) for d in x.shape):
                raise NotImplementedError("export with symbolic dimensions is not "
                                          "supported (every dimension must be an int)")
        avals = []
        for x in leaves:
            if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, core.Value):
                avals.append(core.ShapedArray(tuple(x.shape),
                                              dtypes.canonicalize_dtype(x.dtype)))
            else:
                avals.append(core.as_value(x).aval)
        flat, out_tree = flatten_fun(fun, in_tree)
        module, out_avals = core.trace_function(flat, avals, lifted=[])
        with core.context():
            module = ir.Module.parse(str(module))
            compiler.run_pipeline(module, upto="transforms")
        return Exported(getattr(fun, "__name__", "fun"), str(module), in_tree, avals,
                        out_tree(), out_avals, platforms)

    return do_export


def deserialize(blob):
    """An `Exported` from `Exported.serialize()`'s bytes; a clear ValueError
    for anything else (not Ember's, a newer format, truncated, corrupt)."""
    data = bytes(blob)
    if len(data) < 8 or data[:8] != _MAGIC:
        raise ValueError("deserialize: not an Ember export (bad magic bytes)")
    if len(data) < 44 or hashlib.sha256(data[40:]).digest() != data[8:40]:
        raise ValueError("deserialize: the export is truncated or corrupt (its checksum does "
                         "not match)")
    data = data[:8] + data[40:]
    (n,) = struct.unpack("<I", data[8:12])
    if 12 + n > len(data):
        raise ValueError("deserialize: the export is truncated (its header is incomplete)")
    try:
        header = json.loads(data[12:12 + n].decode())
        version = int(header["format_version"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ValueError(f"deserialize: the export's header is corrupt ({e})") from None
    if version > FORMAT_VERSION:
        raise ValueError(
            f"deserialize: the export has format version {version}, written by Ember "
            f"{header.get('ember_version')}; this Ember ({_version()}) reads versions up to "
            f"{FORMAT_VERSION}")
    try:
        in_tree = _tree_from_json(header["in_tree"])
        out_tree = _tree_from_json(header["out_tree"])
        in_avals = [_aval_from(a) for a in header["in_avals"]]
        out_avals = [_aval_from(a) for a in header["out_avals"]]
        platforms = tuple(header["platforms"])
        name = str(header["fun_name"])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"deserialize: the export's header is corrupt ({e!r})") from None
    try:
        with core.context():
            module = ir.Module.parse(data[12 + n:])
            module.operation.verify()
            text = str(module)
    except (ir.MLIRError, ValueError, RuntimeError) as e:
        raise ValueError(f"deserialize: the export's module is corrupt: {e}") from None
    main = module.body.operations[0].operation if len(module.body.operations) else None
    if main is None or main.name != "func.func":
        raise ValueError("deserialize: the export's module has no main function")
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    if len(ftype.inputs) != len(in_avals) or len(ftype.results) != len(out_avals):
        raise ValueError("deserialize: the export's header and module disagree on the "
                         "number of arguments or results")
    if in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        raise ValueError("deserialize: the export's trees and avals disagree")
    return Exported(name, text, in_tree, in_avals, out_tree, out_avals, platforms)


def from_stablehlo(text, name=None):
    """An `Exported` for a StableHLO module in MLIR's generic form (e.g. a
    JAX export's `mlir_module()` printed generically): Ember compiles,
    differentiates and batches it (`stablehlo_in.py`)."""
    from .stablehlo_in import from_stablehlo as _from

    return _from(text, name, _export_flat)


def symbolic_shape(*args, **kwargs):
    raise NotImplementedError("symbolic dimensions (shape polymorphism) are not supported by "
                              "Ember's export yet")
