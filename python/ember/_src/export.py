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
file must never reach it; and the bytecode is read in a forked child, which
answers with the module's text (`_module_text`), so that a crafted file
with a valid digest cannot abort this process either. The module is the traced program
after `ember-transforms` (no transformation ops or private callees remain),
so a reader needs only the `ember` dialect of the same or a later format.
"""

import functools
import hashlib
import io
import json
import math
import os
import re
import struct

import numpy as np

from ember._mlir import ir
from ember._mlir.passmanager import PassManager

from . import api, compiler, core, dtypes, dynamic_shapes, shape_poly, tree_util
from .api_util import argument_paths, flatten_args, flatten_fun

# 1: static shapes. 2: symbolic dimensions (the header's "symbolic" entry,
# dims as expressions; the module traced, before `ember-transforms`, with
# `ember.sym_*` annotations). Static exports are still written as 1.
FORMAT_VERSION = 2
# JAX's calling convention versions: 9 (effects, `jax.global_constant`
# arguments) and 10 (9 plus the Shardy flag XlaCallModule reads; JAX 0.10.2's
# default). Ember's modules are the same for both: they carry no sharding
# annotations, so the flag changes nothing in them. The version exported is
# `jax_export_calling_convention_version`, as in JAX.
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10


def _calling_convention_version():
    """The configured export calling convention version, checked."""
    from .config import config

    version = int(config.jax_export_calling_convention_version)
    if not (minimum_supported_calling_convention_version <= version
            <= maximum_supported_calling_convention_version):
        raise ValueError(
            f"The requested export calling convention version {version} is outside the "
            f"range of supported versions [{minimum_supported_calling_convention_version}"
            f"..{maximum_supported_calling_convention_version}]")
    return version


def default_export_platform():
    """The platform `export` targets by default: Ember exports for the CPU."""
    return "cpu"


# The platforms an export may name: those Ember has a target for.
PLATFORMS = ("cpu", "cuda", "tpu")


class DisabledSafetyCheck:
    """A safety check to skip on (de)serialization: build with
    `DisabledSafetyCheck.platform()` or `.custom_call(target_name)`."""

    def __init__(self, _impl):
        self._impl = _impl

    @classmethod
    def platform(cls):
        """Allows the compilation platform to differ from the export platform."""
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name):
        """Allows serializing a call to the custom call target `target_name`."""
        return cls(f"custom_call:{target_name}")

    def is_custom_call(self):
        """The custom call target this allows, or None."""
        m = re.match(r"custom_call:(.+)$", self._impl)
        return m.group(1) if m else None

    def is_platform(self):
        return self._impl == "platform"

    def __str__(self):
        return self._impl

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)
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


def _svd_by_polar_text(shape, dtype, full, compute_uv):
    """The traced program (text) of `lax_linalg.svd_by_polar` on one operand
    type, vmapped over its batch dimensions, with ember.svd's results (s,
    then u and vh): the StableHLO export writes an svd for TPU as this
    program (stablehlo_out.py, which cannot trace)."""
    from . import batching, lax_linalg

    def f(a):
        fn = functools.partial(lax_linalg.svd_by_polar, full_matrices=full,
                               compute_uv=compute_uv)
        for _ in shape[:-2]:
            fn = batching.vmap(fn)
        out = fn(a)
        return (out[1], out[0], out[2]) if compute_uv else out

    return api.jit(f).trace(core.ShapeDtypeStruct(shape, dtype))._text


def _register_svd_tracer():
    from . import stablehlo_out

    stablehlo_out.svd_tracer = _svd_by_polar_text


_register_svd_tracer()


def _aval_json(a):
    return [[d if isinstance(d, int) else str(d) for d in a.shape],
            np.dtype(a.dtype).name, bool(a.weak_type)]


def _aval_from(j, scope=None):
    shape, dtype, weak = j
    dims = tuple(shape_poly.parse_dim(d, scope) if isinstance(d, str) and scope is not None
                 else int(d) for d in shape)
    return core.ShapedArray(dims, dtypes.canonicalize_dtype(
        np.dtype(dtype) if dtype != "bfloat16" else dtypes.bfloat16), bool(weak))


def _scope_of_avals(avals):
    """The one symbolic scope of these avals' dims (None when all static);
    dims of different `symbolic_shape` calls do not mix (JAX's rule)."""
    scope = None
    for a in avals:
        for d in a.shape:
            if isinstance(d, shape_poly.DimExpr):
                if scope is not None and d._scope is not scope:
                    raise ValueError(
                        "Invalid mixing of symbolic scopes: the arguments' dimensions come "
                        "from different `symbolic_shape` calls (pass scope= to share one)")
                scope = d._scope
    return scope


class Exported:
    """An exported function: `in_avals`, `out_avals`, `in_tree`, `out_tree`,
    `platforms`, `nr_devices`, `calling_convention_version`; `call(*args)`,
    `mlir_module()`, `serialize()`, `vjp()`."""

    def __init__(self, fun_name, module_text, in_tree, in_avals, out_tree, out_avals,
                 platforms=("cpu",), scope=None, disabled_checks=(), platform_modules=None,
                 shardings=None, names=None, calling_convention_version=None,
                 platform_arg=False):
        self.fun_name = fun_name
        # Exports for several platforms (static shapes): the program's
        # first argument is the platform index (JAX's `_platform_index`:
        # which of `platforms` runs it), which `call` passes and
        # `platform_dependent` branches on; not among `in_avals`.
        self._platform_arg = bool(platform_arg)
        # Symbolic exports: the scope of their dimension variables; the
        # module is compiled once for each set of the variables' values.
        self._scope = scope
        self._exes = {}
        # ... or once for every size (dynamic_shapes): the executable, False
        # where it could not be built (`_dynamic_reason` says why), and the
        # output avals of each set of argument shapes seen.
        self._dynamic = None
        self._dynamic_reason = None
        self._dynamic_outs = {}
        self._text = module_text
        self.in_tree, self.out_tree = in_tree, out_tree
        self.in_avals, self.out_avals = tuple(in_avals), tuple(out_avals)
        self.platforms = tuple(platforms)
        # (the export's AbstractMesh, per-argument and per-result specs or
        # None), when exported with shardings; the devices are logical.
        self._shardings = shardings
        # (JAX's names of the arguments and results in the StableHLO module:
        # `x`, `y[0]`, `result['a']`; None where not known.)
        self._names = names
        self.nr_devices = shardings[0].size if shardings else 1
        self.calling_convention_version = (
            _calling_convention_version() if calling_convention_version is None
            else calling_convention_version)
        self.ordered_effects = self.unordered_effects = ()
        self.disabled_safety_checks = tuple(disabled_checks)
        # {platform: its StableHLO}, for a platform whose module differs
        # from the target-independent translation (TPU kernels).
        self._platform_modules = dict(platform_modules or {})
        # (The program with shard_map's device vmaps kept, for mlir_module.)
        self._device_text = None
        self._exe = None

    def __repr__(self):
        return (f"Exported(fun_name={self.fun_name!r}, in_avals={self.in_avals}, "
                f"out_avals={self.out_avals}, platforms={self.platforms})")

    def mlir_module(self):
        """The exported program as StableHLO (MLIR's generic form), which
        XLA compiles; `ember_module()` is Ember's own form."""
        from .stablehlo_out import to_stablehlo, transformation_ops

        multi = self._platform_modules.get(_MULTI.join(self.platforms))
        if len(self.platforms) > 1 and multi is not None:
            return multi
        own = {self._platform_modules.get(p) for p in self.platforms}
        if len(own) > 1:
            raise NotImplementedError(
                f"mlir_module: the export for {self.platforms} has a different module for "
                f"{sorted(self._platform_modules)} (Pallas kernels or decompositions) and "
                "was serialized before Ember wrote one module for them: export it again")
        if own != {None}:
            return own.pop()
        with core.context():
            module = ir.Module.parse(self._device_text or self._text)
            if self._scope is not None and transformation_ops(module):
                module = _transformed_symbolic(self._text, self._scope)
            arg_names, result_names = self._names or (None, None)
            return to_stablehlo(module, f"jit_{self.fun_name}", scope=self._scope,
                                arg_names=arg_names, result_names=result_names,
                                platform_index=self._platform_arg)

    def in_shardings_jax(self, mesh):
        """The arguments' shardings on `mesh` (a Mesh or AbstractMesh of the
        export's shape), None where the export gave none."""
        return self._shardings_on(mesh, 1)

    def out_shardings_jax(self, mesh):
        """The results' shardings on `mesh` (None where unspecified: over
        Auto axes the placement is the compiler's)."""
        return self._shardings_on(mesh, 2, typed_only=True)

    def _shardings_on(self, mesh, which, typed_only=False):
        from .mesh import AxisType, NamedSharding

        n = len(self.in_avals) if which == 1 else len(self.out_avals)
        if not self._shardings:
            return (None,) * n
        if mesh.size != self._shardings[0].size:
            raise ValueError(f"the export was made for {self._shardings[0].size} devices; the "
                             f"mesh {mesh} has {mesh.size}")
        typed = AxisType.Explicit in self._shardings[0].axis_types
        return tuple(None if spec is None or (typed_only and not typed) else
                     NamedSharding(mesh, spec) for spec in self._shardings[which])

    def _call_mesh(self, vals):
        """The mesh a call with these arguments runs on: the export's mesh
        over the devices of the arguments' mesh (JAX's check of their
        number)."""
        from .mesh import Mesh, NamedSharding

        meshes = [v.aval.sharding.mesh for v in vals if isinstance(v.aval.sharding, NamedSharding)]
        n = meshes[0].size if meshes else 1
        if n != self.nr_devices:
            raise ValueError(f"Function {self.fun_name} was exported for {self.nr_devices} "
                             f"devices and is called in a context with {n} devices, which is "
                             f"not allowed. (at {core.where()})")
        if not hasattr(meshes[0], "devices"):
            return None
        ex = self._shardings[0]
        devs = np.asarray(meshes[0].devices).reshape(-1).reshape(ex.axis_sizes)
        return Mesh(devs, ex.axis_names, ex.axis_types)

    def _placed(self, outs, mesh):
        """Eager results on the call's devices, as the export sharded them."""
        from .mesh import NamedSharding

        if mesh is None:
            return outs
        return [o if spec is None else core.Array.with_sharding(o._value, o.weak_type,
                                                                  NamedSharding(mesh, spec))
                for o, spec in zip(outs, self._shardings[2])]

    def ember_module(self):
        """The exported program in the `ember` dialect (what `serialize`
        stores and `call` compiles)."""
        return self._text

    def has_vjp(self):
        """Whether `call` can be differentiated: always, since an Ember
        export holds the program itself (Ember's autodiff differentiates
        it to any order, where JAX serializes `vjp_order` VJP programs)."""
        return True

    def serialize(self, vjp_order=0):
        # JAX serializes `vjp_order` VJPs with the function so that the
        # deserialized one can be differentiated that many times; Ember's
        # serialized program is differentiated by Ember itself, to any order
        # (a superset: JAX raises past `vjp_order`), so nothing more is written.
        if not isinstance(vjp_order, (int, np.integer)) or vjp_order < 0:
            raise ValueError(f"serialize: vjp_order must be a non-negative int, got "
                             f"{vjp_order!r}")
        header = {
            "format_version": 2 if self._scope is not None else 1,
            "ember_version": _version(),
            "fun_name": self.fun_name, "in_tree": _tree_to_json(self.in_tree),
            "out_tree": _tree_to_json(self.out_tree),
            "in_avals": [_aval_json(a) for a in self.in_avals],
            "out_avals": [_aval_json(a) for a in self.out_avals],
            "platforms": list(self.platforms), "nr_devices": self.nr_devices,
            "calling_convention_version": self.calling_convention_version, "effects": [],
        }
        if self._platform_arg:
            header["platform_index"] = True
        if self.disabled_safety_checks:
            header["disabled_checks"] = [str(c) for c in self.disabled_safety_checks]
        if self._platform_modules:
            header["platform_modules"] = self._platform_modules
        if self._device_text:
            header["device_module"] = self._device_text
        if self._names:
            header["names"] = {"args": list(self._names[0]), "results": list(self._names[1])}
        if self._shardings:
            mesh, ins, outs = self._shardings
            header["shardings"] = {
                "mesh": {"sizes": list(mesh.axis_sizes), "names": list(mesh.axis_names),
                         "types": [t.name for t in mesh.axis_types]},
                "in": [_spec_json(x) for x in ins], "out": [_spec_json(x) for x in outs]}
        if self._scope is not None:
            header["symbolic"] = {"variables": list(self._scope.vars),
                                  "constraints": list(self._scope._constraint_texts)}
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
        if self._scope is not None:
            for i, (v, a) in enumerate(zip(vals, self.in_avals)):
                if len(v.shape) != len(a.shape) or v.dtype != a.dtype:
                    raise ValueError(
                        f"Exported.call: argument {i} has type {v.aval.str_short()}, the "
                        f"exported function takes {a.str_short()} (at {core.where()})")
            return vals
        for i, (v, a) in enumerate(zip(vals, self.in_avals)):
            if tuple(v.shape) != a.shape or v.dtype != a.dtype:
                raise ValueError(
                    f"Exported.call: argument {i} has type {v.aval.str_short()}, the exported "
                    f"function takes {a.str_short()} (at {core.where()})")
        return vals

    def _check_platform(self):
        """The index of the platform the call runs on among `platforms`
        (the first with the check disabled, as JAX); JAX's error for a
        platform the function was not exported for. Inside another export's
        trace, the platforms are that export's, and for several of them the
        index follows its platform index."""
        from .numpy import lax_numpy as jnp
        from .targets import lowering

        disabled = any(getattr(c, "is_platform", lambda: False)()
                       for c in self.disabled_safety_checks)
        outer = lowering.state
        if outer is not None:
            names, index = outer
            missing = [p for p in names if p not in self.platforms]
            if missing and not disabled:
                raise ValueError(f"Function '{self.fun_name}' was lowered for platforms "
                                 f"'{self.platforms}' but it is used on '{names}'. (at "
                                 f"{core.where()})")
            which = [self.platforms.index(p) if p in self.platforms else 0 for p in names]
            if index is None or len(set(which)) == 1:
                return which[0]
            return jnp.asarray(np.array(which, np.int32))[index]
        here = compiler.get_target().name
        if here in self.platforms:
            return self.platforms.index(here)
        if disabled:
            return 0
        raise ValueError(f"Function '{self.fun_name}' was lowered for platforms "
                         f"'{self.platforms}' but it is used on '{(here,)}'. (at {core.where()})")

    def call(self, *args, **kwargs):
        """Runs the exported function (compiled once; inside a trace its ops
        join the traced program, so `jit`, `grad` and `vmap` apply)."""
        index = self._check_platform()
        vals = self._check(args, kwargs)
        mesh = self._call_mesh(vals) if self.nr_devices > 1 else None
        # (the platform index first, for an export for several platforms)
        first = [core.as_value(index if isinstance(index, core.Value) else
                               np.asarray(index, np.int32))] if self._platform_arg else []
        if self._scope is not None:
            return tree_util.tree_unflatten(self.out_tree, self._call_symbolic(first, vals))
        if core._trace_stack or any(isinstance(v, core.Tracer) for v in vals):
            outs = _inline(self._text, first + vals)
        else:
            if self._exe is None:
                with core.context():
                    module = ir.Module.parse(self._text)
                self._exe = compiler.Executable(
                    module, [v.aval for v in first] + list(self.in_avals), self.out_avals,
                    text=self._text)
            raw = self._exe([v._value for v in first + vals])
            outs = self._placed([core.Array(o, a.weak_type) for o, a in zip(raw, self.out_avals)],
                                mesh)
        return tree_util.tree_unflatten(self.out_tree, outs)

    def _call_symbolic(self, first, vals):
        """Solves the dimension variables from the arguments' shapes (JAX's
        errors on a mismatch), then runs the program refined for them:
        compiled once per set of values, or inlined into a trace. (`first`:
        the platform index, for an export for several platforms.)"""
        shapes = tuple(tuple(v.shape) for v in vals)
        traced = core._trace_stack or any(isinstance(v, core.Tracer) for v in first + vals)
        dynamic = None if traced else self._dynamic_executable()
        if dynamic is not None:
            outs = self._dynamic_outs.get(shapes)
            if outs is None:
                env = _solve_dims(self.in_avals, list(shapes), self._scope)
                outs = self._dynamic_outs[shapes] = [_eval_aval(a, env) for a in self.out_avals]
            raw = dynamic([v._value for v in first + vals], outs)
            return [core.Array(o, a.weak_type) for o, a in zip(raw, self.out_avals)]
        exe = None if traced else self._exes.get(shapes)
        if exe is not None:  # these sizes were solved and compiled before
            raw = exe([v._value for v in first + vals])
            return [core.Array(o, a.weak_type) for o, a in zip(raw, self.out_avals)]
        env = _solve_dims(self.in_avals, list(shapes), self._scope)
        if traced:
            with core.context():
                module = _refine(self._text, env, self._scope)
            return _inline_module(module, first + vals,
                                  [_eval_aval(a, env) for a in self.out_avals])
        with core.context():
            module = _refine(self._text, env, self._scope)
            text = str(module)
        ins = [v.aval for v in first] + [_eval_aval(a, env) for a in self.in_avals]
        outs = [_eval_aval(a, env) for a in self.out_avals]
        exe = self._exes[shapes] = compiler.Executable(module, ins, outs, text=text)
        raw = exe([v._value for v in first + vals])
        return [core.Array(o, a.weak_type) for o, a in zip(raw, self.out_avals)]

    def _dynamic_executable(self):
        """The program compiled once for every size of the variables, built
        on the first call (None where it cannot be: a lowering that is not
        the same at every size, another target; then each set of sizes
        compiles, and `_dynamic_reason` says why). EMBER_DYNAMIC_SHAPES=0
        turns it off (each set of sizes compiles: what JAX does)."""
        if self._dynamic is None:
            self._dynamic = False
            if os.environ.get("EMBER_DYNAMIC_SHAPES", "1") == "0":
                self._dynamic_reason = "EMBER_DYNAMIC_SHAPES=0"
                return None
            try:
                index = [core.ShapedArray((), np.dtype(np.int32))] if self._platform_arg else []
                self._dynamic = dynamic_shapes.DynamicExecutable(
                    self._text, lambda env: _refine(self._text, env, self._scope), self._scope,
                    index + list(self.in_avals), self.out_avals, compiler.get_target())
            except NotImplementedError as e:
                self._dynamic_reason = str(e)
        return self._dynamic or None

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
        return _export_flat(bwd, specs, f"{self.fun_name}_vjp", self.platforms,
                            self.disabled_safety_checks)


def _eval_aval(a, env):
    return a.update(shape=tuple(shape_poly.evaluate(d, env) for d in a.shape))


_SHAPE_DOC = ("Please see https://docs.jax.dev/en/latest/export/shape_poly.html"
              "#shape-assertion-errors for more details.")


def _check_no_other_variables(in_avals, out_avals, text):
    """JAX's UnexpectedDimVar: the program uses a dimension variable (a
    static argument, a closed-over dimension) that the arguments' shapes do
    not determine."""
    known = {v for a in in_avals for d in a.shape for v in shape_poly.variables_of(d)}
    used = {v for a in out_avals for d in a.shape for v in shape_poly.variables_of(d)}
    for line in text.splitlines():
        if "ember.sym_" in line:
            for spec in re.findall(r'ember\.sym_[a-z_.]+ = (\[[^\]]*\]|"[^"]*")', line):
                used |= set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", spec))
    extra = sorted(used - known - {"max", "min", "floordiv", "mod"})
    if extra:
        raise shape_poly.UnexpectedDimVar(
            f"Encountered dimension variable '{extra[0]}' that is not appearing in the shapes "
            "of the function arguments. Please see https://docs.jax.dev/en/latest/export/"
            "shape_poly.html#dimension-variables-must-be-solvable-from-the-input-shapes for "
            "more details.")


def _check_solvable(in_avals):
    """JAX's rule: every dimension variable must be solvable from the
    arguments' shapes, each step a specification linear in one unknown
    variable (`b`, `2*b`, `b + n` once `n` is known)."""
    pending = [(d, f"args[{i}].shape[{j}]") for i, a in enumerate(in_avals)
               for j, d in enumerate(a.shape) if isinstance(d, shape_poly.DimExpr)]
    known = set()
    progress = True
    while progress:
        progress = False
        for d, where in list(pending):
            unknown = [v for v in d.variables() if v not in known]
            if not unknown:
                pending.remove((d, where))
            elif len(unknown) == 1 and all(
                    m == ((unknown[0], 1),) or all(a != unknown[0] and (
                        not isinstance(a, str) or a in known) for a, _ in m)
                    for m, _ in d._terms):
                known.add(unknown[0])
                pending.remove((d, where))
                progress = True
    if pending:
        missing = sorted({v for d, _ in pending for v in d.variables() if v not in known})
        specs = ", ".join(f"args[{i}].shape = {_shape_str(a.shape)}"
                          for i, a in enumerate(in_avals) if core.is_symbolic_shape(a.shape))
        todo = ", ".join(f"'{d}' for dimension size {w}" for d, w in pending)
        raise ValueError(
            f"Cannot solve for values of dimension variables {set(missing)}. We can only "
            "solve linear uni-variate constraints. Using the following polymorphic shapes "
            f"specifications: {specs}. Unprocessed specifications: {todo}. Please see "
            "https://docs.jax.dev/en/latest/export/shape_poly.html"
            "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.")


def _shape_str(shape):
    """A shape as Python prints a tuple, with expressions unquoted."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _solve_dims(in_avals, shapes, scope):
    """The values of the dimension variables for arguments of `shapes`
    (ints, or the dims of symbolic tracers), with JAX's errors: a constant
    dimension that differs, a variable below 1 or outside its constraints,
    dimensions that disagree, a division with a remainder."""
    specs = "; ".join(f"args[{i}].shape = {_shape_str(a.shape)}"
                      for i, a in enumerate(in_avals) if core.is_symbolic_shape(a.shape))

    def fail(why, env, where=()):
        got = ", ".join(f"'{v}' = {env[v]} from specification '{s}' for dimension {w}"
                        for v, s, w in where)
        return ValueError(
            "Input shapes do not match the polymorphic shapes specification. "
            f"{why} Using the following polymorphic shapes specifications: {specs}. "
            f"Obtained dimension variables: {got + ', ' if got else ''}. {_SHAPE_DOC} "
            f"(at {core.where()})")

    env, origin, pending = {}, [], []
    for i, (a, shape) in enumerate(zip(in_avals, shapes)):
        for j, (d, v) in enumerate(zip(a.shape, shape)):
            where = f"args[{i}].shape[{j}] (= {v})"
            if isinstance(d, int):
                if v != d:
                    raise ValueError(
                        f"Shape mismatch for args[{i}].shape[{j}] (expected same constant): "
                        f"expected {_shape_str(a.shape)} and called with {_shape_str(shape)} "
                        f"(at {core.where()})")
            elif d.is_single_var():
                name = d.variables()[0]
                if name in env:
                    pending.append((d, v, where))
                else:
                    env[name] = v
                    origin.append((name, str(d), where))
            else:
                pending.append((d, v, where))
    # Linear specifications with one unknown (`2*b`, `b + 1`) once the single
    # variables are known.
    changed = True
    while changed:
        changed = False
        for d, v, where in list(pending):
            unknown = [x for x in d.variables() if x not in env]
            if len(unknown) != 1:
                continue
            var = unknown[0]
            probe = {**env, var: 0}
            rest = d._eval(probe)
            probe[var] = 1
            coeff = d._eval(probe) - rest
            probe[var] = 2
            if d._eval(probe) - rest != 2 * coeff or coeff == 0:
                continue  # not linear in the unknown
            q, r = divmod(v - rest, coeff)
            if r:
                raise fail(f"Division had remainder {r} when computing the value of "
                           f"'{var}'.", env, origin)
            env[var] = q
            origin.append((var, str(d), where))
            changed = True
    needed = []
    for a in in_avals:
        for d in a.shape:
            if isinstance(d, shape_poly.DimExpr):
                needed += [v for v in d.variables() if v not in needed]
    for v in needed:
        if v not in env:
            raise ValueError(f"Exported.call: the dimension variable '{v}' cannot be solved "
                             f"from the arguments' shapes ({specs}) (at {core.where()})")
    for v in needed:
        lo, hi = scope.bounds[v]
        if not isinstance(env[v], int):
            continue
        if env[v] < lo:
            raise fail(f"Expected value >= {lo} for dimension variable '{v}'.", env, origin)
        if env[v] > hi:
            raise fail(f"Expected value <= {hi} for dimension variable '{v}'.", env, origin)
    for mono, rhs, text in scope.rewrites:
        if any(v not in env for v in list(mono) + shape_poly.variables_of(rhs)):
            continue
        lhs_val = 1
        for v, p in mono.items():
            lhs_val *= env[v] ** p
        if lhs_val != shape_poly.evaluate(rhs, env):
            raise fail(f"Constraint '{text}' does not hold.", env, origin)
    for c in scope.constraints:
        if any(v not in env for v in c.variables()):
            continue
        if isinstance(c._eval(env), int) and c._eval(env) < 0:
            raise fail(f"Constraint '{c} >= 0' does not hold.", env, origin)
    for d, v, where in pending:
        got = d._eval(env)
        if isinstance(got, int) and isinstance(v, int) and got != v:
            raise fail(f"Found inconsistency between dimension size {where} and the "
                       f"specification '{d}' (= {got}).", env, origin)
        if not (isinstance(got, int) and isinstance(v, int)) and got != v:
            raise ValueError(f"Exported.call: dimension {where} is not '{d}' (= {got}) "
                             f"(at {core.where()})")
    return env


def _eval_specs(text, env, scope):
    return [shape_poly.evaluate(shape_poly.parse_dim(d, scope), env)
            for d in text.split(";")] if text and text != "-" else []


def _refine(text, env, scope):
    """The traced module of a symbolic export with its dimension variables
    set to `env`'s values: every annotated type, shape attribute and
    dimension value re-evaluated (JAX refines StableHLO's shapes the same
    way). Values that are themselves symbolic (a call inside a symbolic
    trace) give the witness sizes and new annotations."""
    with ir.Location.unknown():
        return _refine_in(ir.Module.parse(text), env, scope)


def _refine_in(module, env, scope):
    def tensor(old_type, dims):
        t = ir.RankedTensorType(old_type)
        return ir.RankedTensorType.get(list(core._witness_shape(dims)), t.element_type)

    def reannotate(op, name, dims_list):
        specs = [core.sym_spec(dims) for dims in dims_list]
        if any(specs):
            return specs
        del op.attributes[name]
        return None

    def visit(op):
        attrs = op.attributes
        names = list(attrs)
        for name in names:
            if name == "ember.sym_results":
                dims_list = []
                for k, spec in enumerate(ir.ArrayAttr(attrs[name])):
                    spec = ir.StringAttr(spec).value
                    dims = _eval_specs(spec, env, scope)
                    if spec:
                        op.results[k].set_type(tensor(op.results[k].type, dims))
                    dims_list.append(dims)
                specs = reannotate(op, name, dims_list)
                if specs:
                    attrs[name] = ir.ArrayAttr.get([ir.StringAttr.get(x) for x in specs])
            elif name in ("ember.sym_args", "ember.sym_block_args"):
                per_region = ([ir.ArrayAttr(attrs[name])] if name == "ember.sym_args" else
                              [ir.ArrayAttr(r) for r in ir.ArrayAttr(attrs[name])])
                new = []
                for region, specs in zip(op.regions, per_region):
                    block = region.blocks[0]
                    row = []
                    for k, spec in enumerate(specs):
                        spec = ir.StringAttr(spec).value
                        dims = _eval_specs(spec, env, scope)
                        if spec:
                            block.arguments[k].set_type(tensor(block.arguments[k].type, dims))
                        row.append(core.sym_spec(dims))
                    new.append(row)
                if not any(any(r) for r in new):
                    del attrs[name]
                elif name == "ember.sym_args":
                    attrs[name] = ir.ArrayAttr.get([ir.StringAttr.get(x) for x in new[0]])
                else:
                    attrs[name] = ir.ArrayAttr.get(
                        [ir.ArrayAttr.get([ir.StringAttr.get(x) for x in r]) for r in new])
            elif name.startswith("ember.sym_attr."):
                target = name[len("ember.sym_attr."):]
                spec = ir.StringAttr(attrs[name]).value
                dims = _eval_specs(spec, env, scope)
                witness = list(core._witness_shape(dims))
                old = attrs[target]
                if isinstance(old, ir.DenseI64ArrayAttr):
                    attrs[target] = ir.DenseI64ArrayAttr.get(witness)
                else:
                    attrs[target] = ir.IntegerAttr.get(ir.IntegerAttr(old).type, witness[0])
                if core.is_symbolic_shape(dims):
                    attrs[name] = ir.StringAttr.get(core.sym_spec(dims))
                else:
                    del attrs[name]
            elif name == "ember.sym_value":
                d = shape_poly.evaluate(
                    shape_poly.parse_dim(ir.StringAttr(attrs[name]).value, scope), env)
                w = core._witness_shape((d,))[0]
                t = ir.RankedTensorType(op.results[0].type)
                attrs["value"] = ir.DenseElementsAttr.get_splat(
                    t, ir.IntegerAttr.get(t.element_type, w))
                if isinstance(d, shape_poly.DimExpr):
                    attrs[name] = ir.StringAttr.get(str(d))
                else:
                    del attrs[name]
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    for fn in module.body.operations:
        visit(fn.operation)
    dynamic_shapes.refresh_function_types(module)
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise ValueError(f"Exported.call: the exported program is not valid for these "
                         f"dimensions ({env}): {e}") from None
    return module


# Sizes of the dimension variables at which `_transformed_symbolic` expands a
# symbolic program's transformations: distinct primes, moved by _STEP one
# variable at a time, and all together by 2 * _STEP for the check (within
# the scope's bounds when it has upper bounds).
_SAMPLE_SIZES = (1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049, 1051, 1061)
_STEP = 1000


def _transformed_symbolic(text, scope):
    """A symbolic export's program with its transformations (`grad`,
    `vmap`, ... inside the exported function) expanded, annotated as the
    trace annotates (`ember.sym_*`), for the StableHLO translation. The
    passes do not carry the annotations, so the program is refined at
    several sizes and expanded at each: the expanded programs have the same
    ops, and each size or size attribute that differs between them is fitted
    as an affine function of the variables (c0 + sum a_v * v, integer
    coefficients), checked at one more set of sizes. What is not affine (a
    constant folded from a size, a floor division) is a NotImplementedError."""
    names = list(scope.vars)
    if len(names) > len(_SAMPLE_SIZES):
        raise NotImplementedError("StableHLO with symbolic dimensions: too many variables")
    base, step = {}, {}
    for v, prime in zip(names, _SAMPLE_SIZES):
        lo, hi = scope.bounds.get(v, (1, math.inf))
        if math.isinf(hi):
            base[v], step[v] = max(prime, int(lo)), _STEP
        else:  # sizes in [lo, hi] (one when lo == hi: v is a constant)
            span = int(hi) - int(lo)
            base[v], step[v] = int(lo), span // 2 if span >= 2 else span
    envs = [base] + [{**base, v: base[v] + step[v]} for v in names]
    check = {v: base[v] + 2 * step[v] for v in names}

    def expanded(env):
        module = _refine(text, env, scope)
        PassManager.parse("builtin.module(ember-expand-transforms)").run(module.operation)
        ops = []
        module.operation.walk(lambda op: ops.append(op) or ir.WalkResult.ADVANCE)
        return module, ops

    runs = [expanded(env) for env in envs + [check]]
    module, ops = runs[0]
    if any(len(r[1]) != len(ops) or [o.name for o in r[1]] != [o.name for o in ops]
           for r in runs[1:]):
        raise NotImplementedError(
            "StableHLO with symbolic dimensions: the program's transformations expand "
            "differently at different sizes")

    def fail(what):
        raise NotImplementedError(
            f"StableHLO with symbolic dimensions of a program with transformations: {what} "
            "is not an affine function of the dimension variables")

    def fit(values, what):
        """The expression text of a size seen as `values` (one per env, then
        the check's), or its int when it does not vary."""
        v0 = values[0]
        if all(v == v0 for v in values):
            return v0
        coefs = []
        for k, n in enumerate(names):
            moved = values[k + 1] - v0
            if moved and (not step[n] or moved % step[n]):
                fail(what)
            coefs.append(moved // step[n] if moved else 0)
        c0 = v0 - sum(a * base[n] for a, n in zip(coefs, names))
        if c0 + sum(a * check[n] for a, n in zip(coefs, names)) != values[-1]:
            fail(what)
        terms = [f"{a}*{n}" if a != 1 else n for a, n in zip(coefs, names) if a]
        expr = " + ".join(terms)
        return f"{expr} + {c0}" if c0 > 0 else f"{expr} - {-c0}" if c0 < 0 else expr

    def spec(types, what):
        shapes = [ir.RankedTensorType(t).shape for t in types]
        dims = [fit([s[k] for s in shapes], what) for k in range(len(shapes[0]))]
        return ";".join(str(d) for d in dims) if any(isinstance(d, str) for d in dims) else ""

    def strs(xs):
        return ir.ArrayAttr.get([ir.StringAttr.get(x) for x in xs])

    for k, op in enumerate(ops):
        others = [r[1][k] for r in runs]
        if op.name == "func.func":
            block = op.regions[0].blocks[0]
            specs = [spec([o.regions[0].blocks[0].arguments[j].type for o in others],
                          "an argument's shape") for j in range(len(block.arguments))]
            if any(specs):
                op.attributes["ember.sym_args"] = strs(specs)
            continue
        specs = [spec([o.results[j].type for o in others], f"a shape of {op.name}")
                 for j in range(len(op.results))]
        if any(specs):
            op.attributes["ember.sym_results"] = strs(specs)
        for name in [str(n) for n in op.attributes]:
            if name.startswith("ember.sym_"):
                continue
            texts = [str(o.attributes[name]) for o in others]
            if all(t == texts[0] for t in texts):
                continue
            attrs = [o.attributes[name] for o in others]
            if name == "value" and op.name == "ember.constant":
                if ir.RankedTensorType(op.results[0].type).rank != 0:
                    # A splat of a symbolic shape (its shape is annotated).
                    if any(t.split(":")[0] != texts[0].split(":")[0] or "[" in t
                           for t in texts):
                        fail(f"a constant ({texts[0][:60]})")
                    continue
                try:
                    vals = [int(str(a).split("<", 1)[1].split(">", 1)[0]) for a in attrs]
                except ValueError:
                    fail(f"a constant ({texts[0]})")
                op.attributes["ember.sym_value"] = ir.StringAttr.get(
                    str(fit(vals, "a constant")))
            elif isinstance(attrs[0], ir.DenseI64ArrayAttr):
                rows = [list(ir.DenseI64ArrayAttr(a)) for a in attrs]
                op.attributes[f"ember.sym_attr.{name}"] = ir.StringAttr.get(";".join(
                    str(fit([r[j] for r in rows], f"{name} of {op.name}"))
                    for j in range(len(rows[0]))))
            elif isinstance(attrs[0], ir.IntegerAttr):  # a loop's trip count
                op.attributes[f"ember.sym_attr.{name}"] = ir.StringAttr.get(str(fit(
                    [ir.IntegerAttr(a).value for a in attrs], f"{name} of {op.name}")))
            else:
                fail(f"the attribute {name} of {op.name}")
    return module


def _inline_module(module, vals, out_avals):
    """`_inline` for a module that may have private functions (the callees
    of transformation ops): they join the trace's module under new names."""
    adopt_functions(module, core.current_trace() or core.find_trace(vals))
    return _inline(module, vals, out_avals)


def adopt_functions(module, trace):
    """Moves the functions of `module` after its first (`main`) into the
    trace's module, renamed apart from the trace's own."""
    fns = [op.operation for op in module.body.operations]
    for fn in fns[1:]:
        old = ir.StringAttr(fn.attributes["sym_name"]).value
        trace.root._counter += 1
        new = f"{old}_exported{trace.root._counter}"
        ir.SymbolTable.replace_all_symbol_uses(old, new, module.operation)
        fn.attributes["sym_name"] = ir.StringAttr.get(new)
    for fn in fns[1:]:
        fn.detach_from_parent()
        trace.module.body.append(fn)


def _version():
    import importlib

    return importlib.import_module("ember").__version__


def _inline(text, vals, out_avals=None):
    """Emits the ops of the module's `main` into the current trace on
    `vals`; returns its results as tracers. (The module is a fresh copy:
    its ops are re-created here and its regions moved.)"""
    trace = core.current_trace() or core.find_trace(vals)
    if isinstance(text, str):
        with core.context():
            module = ir.Module.parse(text)
    else:
        module = text
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
        new = emit_copy(trace, op, list(op.operands))
        for old_r, new_r in zip(op.results, new.results):
            old_r.replace_all_uses_with(new_r)
    return [core.Tracer(trace, v, a) for v, a in zip(outs, out_avals or map(_aval_of, outs))]


def emit_copy(trace, op, operands, result_types=None, move_regions=True):
    """A copy of `op` at the end of the trace's block on `operands` (with
    `result_types`, or its own), its regions moved into the copy (or left
    empty)."""
    with trace.ctx, trace.location():
        new = ir.Operation.create(
            op.name, results=result_types or [r.type for r in op.results],
            operands=operands, attributes={k: op.attributes[k] for k in op.attributes},
            regions=len(op.regions), ip=ir.InsertionPoint(trace.block))
    if not move_regions:
        return new
    for k, region in enumerate(op.regions):
        for b in list(region.blocks):
            b.append_to(new.regions[k])
    return new


def _aval_of(v):
    t = ir.RankedTensorType(v.type)
    return core.ShapedArray(tuple(t.shape), dtypes.from_mlir_name(t.element_type))


def _export_flat(fun, specs, name, platforms, disabled_checks=()):
    leaves, in_tree = flatten_args(list(specs), {})
    avals = [core.ShapedArray(tuple(s.shape), dtypes.canonicalize_dtype(s.dtype),
                              bool(getattr(s, "weak_type", False))) for s in leaves]
    flat, out_tree = flatten_fun(fun, in_tree)
    return _trace_export(flat, avals, in_tree, out_tree, name, platforms, disabled_checks)


def _lower_for_platforms(text, platforms):
    """Lowers the traced program for each platform other than the CPU (as
    JAX lowers for each at export), so that an op a target cannot compile
    is the user's error now, not in another process later. Returns the
    modules of the platforms whose StableHLO differs from the
    target-independent translation: TPU with Pallas kernels, as Mosaic
    custom calls, or decompositions, as XLA:TPU's."""
    from .targets import get_target

    own = {}
    for p in platforms:
        if p == "cuda":  # its stages up to the NVVM dialect (no PTX is kept)
            target = get_target("cuda")
            compiler.stage_text(text, target.stages[-2][0], target)
        elif p == "tpu":
            # (Pallas kernels become Mosaic custom calls, decompositions
            # XLA:TPU's; a program with neither has the generic module.)
            tpu = compiler.stage_text(text, "stablehlo", get_target("tpu"))
            if tpu != compiler.stage_text(text, "stablehlo", get_target("cpu")):
                own["tpu"] = tpu
    if own and len(platforms) > 1:
        # One module for all of them (JAX's multi-platform module): the ops
        # whose TPU form differs are cases on the platform index.
        own[_MULTI.join(platforms)] = compiler.stage_text(
            text, "stablehlo", get_target("tpu"), platform_index=True, platforms=platforms)
    return own


# (The key in `platform_modules` of the module for several platforms.)
_MULTI = ","


def _spec_json(spec):
    if spec is None:
        return None
    return {"parts": [list(p) if isinstance(p, tuple) else p for p in spec],
            "unreduced": sorted(spec.unreduced), "reduced": sorted(spec.reduced)}


def _spec_from(d):
    from .mesh import PartitionSpec

    if d is None:
        return None
    return PartitionSpec(*[tuple(p) if isinstance(p, list) else p for p in d["parts"]],
                         unreduced=frozenset(d["unreduced"]), reduced=frozenset(d["reduced"]))


def _export_shardings(in_avals, out_avals):
    """(the export's AbstractMesh, in specs, out specs) of avals placed on
    one mesh (None when none is), and the avals without their shardings
    (JAX's `in_avals` show none)."""
    from .mesh import NamedSharding

    meshes = {a.sharding.mesh.abstract_mesh for a in list(in_avals) + list(out_avals)
              if isinstance(a.sharding, NamedSharding) and a.sharding.mesh.axis_names}
    bare_in, bare_out = ([a if a.sharding is None else core.ShapedArray(a.shape, a.dtype,
                                                                         a.weak_type)
                          for a in avals] for avals in (in_avals, out_avals))
    if not meshes:
        return None, bare_in, bare_out
    sizes = {m.size for m in meshes}
    if len(sizes) > 1:
        raise ValueError(f"export: the arguments and results are placed on meshes of "
                         f"different sizes {sorted(sizes)}")
    mesh = next(iter(meshes))

    def specs(avals):
        return [a.sharding.spec if isinstance(a.sharding, NamedSharding) and
                a.sharding.mesh.axis_names else None for a in avals]
    return (mesh, specs(in_avals), specs(out_avals)), bare_in, bare_out


def _result_names(out_tree):
    dummy = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    return ["result" + tree_util.keystr(path)
            for path, _ in tree_util.tree_flatten_with_path(dummy)[0]]


def _trace_export(flat, avals, in_tree, out_tree, name, platforms, disabled_checks=(),
                  arg_names=None):
    """Traces the flat function into an `Exported`: with static shapes the
    program after `ember-transforms`; with symbolic dimensions the traced
    program itself (transformations run once the dimensions are known: the
    ops they create would not carry the dimensions' annotations)."""
    scope = _scope_of_avals(avals)
    if scope is not None:
        _check_solvable(avals)
    # For several platforms the program takes the platform index first
    # (JAX's calling convention), which `lax.platform_dependent` branches on.
    # (With one platform the branch is chosen now.)
    from .targets import lowering_platforms

    platform_arg = len(platforms) > 1
    user_fun = flat

    def flat(*args):
        index, args = (args[0], args[1:]) if platform_arg else (None, args)
        with lowering_platforms(platforms, index):
            return user_fun(*args)

    traced_avals = ([core.ShapedArray((), np.dtype(np.int32))] if platform_arg else []) \
        + list(avals)
    module, out_avals = core.trace_function(flat, traced_avals, lifted=[])
    if scope is not None and _scope_of_avals(out_avals) not in (None, scope):
        raise ValueError("export: the results' symbolic dimensions come from another scope")
    text = str(module)
    if scope is not None or "ember.sym_" in text or _scope_of_avals(out_avals) is not None:
        _check_no_other_variables(avals, out_avals, text)
    own = {}
    if scope is None and set(platforms) - {"cpu"}:
        own = _lower_for_platforms(text, platforms)
    device_text = None
    with core.context():
        module = ir.Module.parse(str(module))
        if scope is None and "ember.device_axis" in text:
            # shard_map/pmap: StableHLO out writes their device vmaps as
            # manual computations, so `mlir_module` reads the program with
            # them kept (the stored module has them expanded, for `call`).
            from .stablehlo_out import keep_device_vmaps

            kept = ir.Module.parse(text)
            keep_device_vmaps(kept)
            device_text = str(kept)
        if scope is None:
            compiler.run_pipeline(module, upto="transforms")
    shardings, avals, out_avals = _export_shardings(avals, out_avals)
    names = None
    if arg_names is not None and len(arg_names) == len(avals):
        names = (arg_names, _result_names(out_tree()))
    exp = Exported(name, str(module), in_tree, avals, out_tree(), out_avals, platforms,
                   scope=scope, disabled_checks=disabled_checks, platform_modules=own,
                   shardings=shardings, names=names, platform_arg=platform_arg)
    exp._device_text = device_text
    return exp


def export(fun_jit, *, platforms=None, disabled_checks=()):
    """`export(jax.jit(f))(*arg_specs)`: `f` traced for arguments of these
    types (ShapeDtypeStructs or arrays) as an `Exported`."""
    fun = getattr(fun_jit, "fun", None)
    if fun is None or not hasattr(fun_jit, "lower"):
        raise TypeError("export: the function must be the result of jax.jit")
    platforms = tuple(platforms) if platforms is not None else (default_export_platform(),)
    if not platforms or len(set(platforms)) != len(platforms):
        raise ValueError(f"export: platforms must be a non-empty list of distinct names, got "
                         f"{platforms}")
    for p in platforms:
        if p not in PLATFORMS:
            raise NotImplementedError(
                f"export: platform {p!r}; Ember has targets for {', '.join(PLATFORMS)}")
    for c in disabled_checks:
        if not isinstance(c, DisabledSafetyCheck):
            raise TypeError(f"export: disabled_checks must be DisabledSafetyChecks, got {c!r}")

    def do_export(*args, **kwargs):
        # Static arguments are given to `export` and baked in; the exported
        # function takes the others (JAX's convention).
        static = set(fun_jit.static_argnums)
        static_kw = {k: v for k, v in kwargs.items() if k in fun_jit.static_argnames}
        dyn = [a for i, a in enumerate(args) if i not in static]
        kwargs = {k: v for k, v in kwargs.items() if k not in static_kw}
        target = fun
        if static or static_kw:
            given = args

            def target(*dargs, **dkw):
                it = iter(dargs)
                full = [given[i] if i in static else next(it) for i in range(len(given))]
                return fun(*full, *it, **dkw, **static_kw)
        args = dyn
        leaves, in_tree = flatten_args(args, kwargs)
        avals = []
        for x in leaves:
            if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, core.Value):
                # (a ShapeDtypeStruct's NamedSharding places the argument)
                sh = getattr(x, "sharding", None)
                avals.append(core.ShapedArray(tuple(x.shape), dtypes.canonicalize_dtype(x.dtype),
                                              sharding=sh if hasattr(sh, "spec") else None))
            else:
                avals.append(core.as_value(x).aval)
        flat, out_tree = flatten_fun(target, in_tree)
        names = None if (static or static_kw) else \
            [p for p, _ in argument_paths(fun, args, kwargs)]
        return _trace_export(flat, avals, in_tree, out_tree, getattr(fun, "__name__", "fun"),
                             platforms, tuple(disabled_checks), names)

    return do_export


def _bytecode_text(code):
    """The module in bytecode `code`, parsed and verified in a context of
    its own (single-threaded), as text; MLIR's errors as exceptions."""
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    ctx.load_all_available_dialects()
    with ctx:
        module = ir.Module.parse(code)
        module.operation.verify()
        return str(module)


def _module_text(code):
    """The text of the module in bytecode `code`, read in a forked child;
    a ValueError if it is not a valid module. MLIR's bytecode reader aborts
    the process (an assertion, LLVM's fatal errors) on some invalid input
    that the checksum does not catch, a file crafted with a valid one (1 of
    50 random byte changes of a small module), and an error whose message
    is not UTF-8 leaves the context it was read in unusable (the next pass
    pipeline waited forever): only printed text, which the parent parses
    again, reaches Ember's context. Where the platform cannot fork, the
    bytecode is read here, in a context of its own."""
    def corrupt(why):
        return ValueError(f"deserialize: the export's module is corrupt: {why}")

    if not hasattr(os, "fork"):
        try:
            return _bytecode_text(code)
        except Exception as e:  # noqa: BLE001 (MLIR's errors, whatever their type)
            raise corrupt(e) from None
    import warnings

    r, w = os.pipe()
    with warnings.catch_warnings():  # (Python 3.12 warns on forking with threads)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: read, answer, then leave at once (no atexit)
        try:
            os.close(r)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            import faulthandler

            faulthandler.disable()  # (its report of an abort would go to a saved stderr)
            try:
                answer = b"T" + _bytecode_text(code).encode()
            except Exception as e:  # noqa: BLE001
                answer = b"E" + str(e).encode("utf-8", "replace")
            with os.fdopen(w, "wb") as f:
                f.write(answer)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        answer = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or not answer:
        raise corrupt("MLIR's bytecode reader aborts on it")
    if answer[:1] == b"E":
        raise corrupt(answer[1:].decode("utf-8", "replace"))
    return answer[1:].decode()


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
        scope = None
        if "symbolic" in header:
            sym = header["symbolic"]
            scope = shape_poly.SymbolicScope([str(c) for c in sym["constraints"]])
            for v in sym["variables"]:
                scope._var(str(v))
        in_avals = [_aval_from(a, scope) for a in header["in_avals"]]
        out_avals = [_aval_from(a, scope) for a in header["out_avals"]]
        platforms = tuple(str(p) for p in header["platforms"])
        name = str(header["fun_name"])
        disabled = tuple(DisabledSafetyCheck(str(c)) for c in header.get("disabled_checks", []))
        own = {str(k): str(v) for k, v in header.get("platform_modules", {}).items()}
        names = None
        if "names" in header:
            names = ([str(n) for n in header["names"]["args"]],
                     [str(n) for n in header["names"]["results"]])
        shardings = None
        if "shardings" in header:
            from .mesh import AbstractMesh, AxisType

            sh = header["shardings"]
            m = sh["mesh"]
            shardings = (AbstractMesh(m["sizes"], m["names"], [AxisType[t] for t in m["types"]]),
                         [_spec_from(x) for x in sh["in"]], [_spec_from(x) for x in sh["out"]])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"deserialize: the export's header is corrupt ({e!r})") from None
    text = _module_text(data[12 + n:])
    try:
        with core.context():
            module = ir.Module.parse(text)
    except (ir.MLIRError, ValueError, RuntimeError) as e:
        raise ValueError(f"deserialize: the export's module is corrupt: {e}") from None
    main = module.body.operations[0].operation if len(module.body.operations) else None
    if main is None or main.name != "func.func":
        raise ValueError("deserialize: the export's module has no main function")
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    if len(ftype.inputs) != len(in_avals) + bool(header.get("platform_index", False)) or \
            len(ftype.results) != len(out_avals):
        raise ValueError("deserialize: the export's header and module disagree on the "
                         "number of arguments or results")
    if in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        raise ValueError("deserialize: the export's trees and avals disagree")
    # (Exports written before version 10 was supported say 9.)
    version = int(header.get("calling_convention_version", 9))
    if not (minimum_supported_calling_convention_version <= version
            <= maximum_supported_calling_convention_version):
        raise ValueError(
            f"deserialize: the export has calling convention version {version}; this "
            f"Ember reads versions {minimum_supported_calling_convention_version} to "
            f"{maximum_supported_calling_convention_version}")
    exp = Exported(name, text, in_tree, in_avals, out_tree, out_avals, platforms,
                   scope=scope, disabled_checks=disabled, platform_modules=own,
                   shardings=shardings, names=names, calling_convention_version=version,
                   platform_arg=bool(header.get("platform_index", False)))
    device_text = header.get("device_module")
    if device_text is not None:
        if not isinstance(device_text, str):
            raise ValueError("deserialize: the export's header is corrupt (device_module)")
        exp._device_text = device_text
    return exp


def from_stablehlo(text, name=None, platforms=None):
    """An `Exported` for a StableHLO module in MLIR's generic form (e.g. a
    JAX export's `mlir_module()` printed generically): Ember compiles,
    differentiates and batches it (`stablehlo_in.py`). A module exported
    for several platforms takes JAX's platform index first: `platforms`
    (the export's, with "cpu") says which index the CPU is."""
    from .stablehlo_in import from_stablehlo as _from

    return _from(text, name, _export_flat, platforms)


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """JAX's `export.symbolic_shape`: `"b, 2*n, 4"` -> `(b, 2*n, 4)`, dims
    that trace as symbolic expressions (shape_poly.py)."""
    return shape_poly.symbolic_shape(shape_spec, constraints=constraints, scope=scope,
                                     like=like)


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """JAX's `export.symbolic_args_specs`: ShapeDtypeStructs for `args`
    (a pytree of arrays or specs) with the symbolic shapes `shapes_specs`
    (one string for all, or a pytree prefix of `args`, as in JAX; `...`
    takes the array's remaining dims; None keeps the shapes of an argument
    or subtree). One scope for all."""
    leaves, tree = tree_util.tree_flatten(args)
    try:
        specs = tree_util.broadcast_prefix(
            shapes_specs, args, is_leaf=lambda x: x is None or isinstance(x, str))
    except ValueError as e:
        raise ValueError("symbolic_args_specs: shapes_specs must be a prefix of the "
                         f"structure of args ({e})") from None
    if len(specs) != len(leaves):
        raise ValueError("symbolic_args_specs: shapes_specs must be a prefix of the "
                         "structure of args")
    scope = scope or shape_poly.SymbolicScope(constraints)
    out = []
    for x, spec in zip(leaves, specs):
        shape = tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)
        dims = shape if spec is None else shape_poly.symbolic_shape(spec, scope=scope,
                                                                     like=shape)
        out.append(core.ShapeDtypeStruct(dims, x.dtype if hasattr(x, "dtype") else
                                         np.asarray(x).dtype))
    return tree_util.tree_unflatten(tree, out)


api.symbolic_trace_hook = lambda jitted, args, kwargs, platforms=None: export(
    jitted, platforms=platforms)(*args, **kwargs)


class _PolymorphicJit:
    """`jit(f, polymorphic_shapes=...)`: outside traces, `f` is exported with
    the arguments' symbolic shapes (once per pytree structure, dtypes, fixed
    dimensions and static arguments, which the export bakes in) and called
    through the export, which compiles one program for every size where it
    can (`Exported._dynamic_executable`; else once per set of sizes, as
    plain `jit`). Inside a trace, and for arguments that are not arrays
    (static ones aside), it is plain `jit`."""

    def __init__(self, jitted, shapes):
        functools.update_wrapper(self, jitted.fun)
        self._jitted, self._shapes = jitted, shapes
        self._by_shapes = {}  # the call's (tree, shapes, dtypes, statics) -> Exported
        self._by_specs = {}  # the same with the symbolic specs' text -> Exported

    def __call__(self, *args, **kwargs):
        static = set(self._jitted.static_argnums)
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, tree = tree_util.tree_flatten(dyn)
        if kwargs or core._trace_stack or not all(
                isinstance(x, (core.Array, np.ndarray)) for x in leaves):
            return self._jitted(*args, **kwargs)
        statics = tuple((i, args[i]) for i in sorted(static) if i < len(args))
        key = (tree, tuple((tuple(x.shape), str(x.dtype)) for x in leaves), statics)
        exp = self._by_shapes.get(key)
        if exp is None:
            shapes = self._shapes
            if isinstance(shapes, (list, tuple)):  # one entry per positional argument
                shapes = [s for i, s in enumerate(shapes) if i not in static]
            specs = symbolic_args_specs(tuple(dyn), shapes if isinstance(shapes, str)
                                        else tuple(shapes))
            it = iter(specs)
            full = [args[i] if i in static else next(it) for i in range(len(args))]
            skey = (tree, tuple(str(s) for s in tree_util.tree_leaves(specs)), statics)
            exp = self._by_specs.get(skey)
            if exp is None:
                exp = self._by_specs[skey] = export(self._jitted)(*full)
            self._by_shapes[key] = exp
        return exp.call(*dyn)

    def __getattr__(self, name):
        return getattr(self._jitted, name)


api.polymorphic_jit_hook = _PolymorphicJit

