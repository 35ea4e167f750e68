"""Checks Ember's Mosaic TPU kernels against JAX's; run it with the JAX venv's Python:

    build/jaxvenv/bin/python tools/tpu/jax_mosaic_check.py EMBER_DIR [--dump DIR]
    build/jaxvenv/bin/python tools/tpu/jax_mosaic_check.py --self-test [--dump DIR]
    build/jaxvenv/bin/python tools/tpu/jax_mosaic_check.py --record DIR

For each program of `test/data/tpu/kernels.py`, EMBER_DIR holds `NAME.json`:
`{"name", "custom_calls": [{"backend_config", "kernel_name"}], "stablehlo"}`.
The tool lowers JAX's version for TPU, decodes the `tpu_custom_call` bodies of
both sides (base64 MLIR bytecode, `mosaic-serde` serialized), deserializes them,
re-parses the result with only registered dialects, verifies it, and compares
the kernel function's grid attributes, window parameters (the transform
functions are evaluated at every grid point), the custom call configs and the
`@main` signature. Prints `OK NAME` or `FAIL NAME: REASON` per program and
exits 1 if any failed. `--values NPZ` instead writes each program's outputs
under JAX's TPU interpret mode, which Ember's interpreter is compared with.
`--self-test` compares JAX with itself; `--record DIR` writes JAX's side in
Ember's format; `--dump DIR` writes `DIR/NAME.jax.mlir`.
"""

import argparse
import base64
import importlib.util
import itertools
import json
import os
import sys

# Four host devices for the programs under shard_map (before JAX starts).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import jax.numpy as jnp
import numpy as np
from jax._src.pallas.mosaic import tpu_info
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jaxlib.mlir import ir, passmanager
from jaxlib.mlir._mlir_libs import _jax_mlir_ext, _tpu_ext
from jaxlib.mlir.dialects import chlo, sdy, stablehlo

# JAX's emit_pipeline asks the TPU's generation for its DMA tilings, which
# fails without a TPU; lowering here (no TPU attached) takes a v5e's.
tpu_info.registry.setdefault(
    "cpu", lambda: tpu_info.get_tpu_info_for_chip(tpu_info.ChipVersion.TPU_V5E, 1))

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "data",
                       "tpu", "kernels.py")

# The kernel function's attributes compared as printed (absent on both sides is equal).
KERNEL_ATTRS = ("function_type", "dimension_semantics", "iteration_bounds", "scalar_prefetch",
                "scratch_operands", "tpu.core_type")


class CheckError(Exception):
    """A difference or failure, reported for the program being checked."""


def load_programs():
    """The programs of kernels.py, under JAX."""
    spec = importlib.util.spec_from_file_location("tpu_kernels", os.path.normpath(KERNELS))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.programs(jax, jnp, pl, pltpu)


def jax_record(fn, args):
    """JAX's lowering of one program, in the format Ember writes."""
    text = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",)).as_text()
    calls = [{"backend_config": c["backend_config"], "kernel_name": c["kernel_name"]}
             for c in stablehlo_info(text)["custom_calls"]]
    return {"custom_calls": calls, "stablehlo": text}


# --- StableHLO --------------------------------------------------------------------------------

def _walk(op):
    yield op
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield from _walk(child.operation)


def _str_attr(op, name):
    return ir.StringAttr(op.attributes[name]).value if name in op.attributes else None


def stablehlo_info(text):
    """The `@main` signature and the `tpu_custom_call`s (backend_config, kernel_name,
    operand and result types) of a StableHLO module, pretty or generic form."""
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    with ir.Context() as ctx, ir.Location.unknown():
        ctx.append_dialect_registry(registry)
        for dialect in (stablehlo, chlo, sdy):
            dialect.register_dialect(ctx)
        ctx.load_all_available_dialects()
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        main, calls = None, []
        for op in _walk(module.operation):
            if op.name == "func.func" and _str_attr(op, "sym_name") == "main":
                ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                main = ([str(t) for t in ftype.inputs], [str(t) for t in ftype.results],
                        _str_attr(op, "sym_visibility"))
            elif (op.name == "stablehlo.custom_call"
                  and _str_attr(op, "call_target_name") == "tpu_custom_call"):
                aliases = (str(op.attributes["output_operand_aliases"])
                           if "output_operand_aliases" in op.attributes else "[]")
                calls.append({"backend_config": _str_attr(op, "backend_config"),
                              "kernel_name": _str_attr(op, "kernel_name"),
                              "operands": [str(v.type) for v in op.operands],
                              "results": [str(r.type) for r in op.results],
                              "aliases": aliases})
    if main is None:
        raise CheckError("no func.func @main in the StableHLO")
    return {"main": main, "custom_calls": calls}


# --- Mosaic modules ---------------------------------------------------------------------------

def decode_config(backend_config):
    """(the backend config JSON without the body, the body's bytes)."""
    try:
        config = json.loads(backend_config)
        body = base64.b64decode(config["custom_call_config"]["body"], validate=True)
    except (ValueError, KeyError, TypeError) as e:
        raise CheckError(f"bad backend_config: {type(e).__name__}: {e}") from None
    rest = json.loads(backend_config)
    del rest["custom_call_config"]["body"]
    return rest, body


def _error(what, e):
    """A CheckError with the (MLIR) error `e`'s text on one line."""
    lines = (line.strip() for line in str(e).splitlines())
    return CheckError(f"{what}: " + " | ".join(line for line in lines if line))


def deserialize(body):
    """The text of the Mosaic module serialized in `body`, deserialized."""
    with ir.Context() as ctx, ir.Location.unknown():
        _tpu_ext.register_dialect(ctx)
        ctx.allow_unregistered_dialects = True
        try:
            module = ir.Module.parse(body)
        except Exception as e:  # noqa: BLE001 - MLIRError and the bindings' ValueErrors
            raise _error("parsing the bytecode", e) from None
        if "stable_mosaic.version" not in module.operation.attributes:
            raise CheckError("the module has no stable_mosaic.version attribute")
        version = str(module.operation.attributes["stable_mosaic.version"])
        try:
            passmanager.PassManager.parse(
                "builtin.module(mosaic-serde{serialize=false})").run(module.operation)
        except Exception as e:  # noqa: BLE001
            raise _error("mosaic-serde{serialize=false}", e) from None
        return version, str(module)


def strict_context():
    """A context with the TPU and upstream dialects loaded and no unregistered ones."""
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    ctx = ir.Context()
    ctx.append_dialect_registry(registry)
    _tpu_ext.register_dialect(ctx)
    ctx.load_all_available_dialects()
    ctx.allow_unregistered_dialects = False
    for name in ("func", "arith", "vector", "math", "scf", "memref", "tpu"):
        ctx.dialects[name]  # raises if the dialect is not loaded
    return ctx


class Kernel:
    """A deserialized Mosaic module, re-parsed in a strict context and verified: its
    kernel function (the one with `window_params` or `dimension_semantics`) and the
    other functions (the transforms), by name."""

    def __init__(self, text):
        self.ctx = ctx = strict_context()
        with ctx, ir.Location.unknown():
            try:
                self.module = ir.Module.parse(text)
            except Exception as e:  # noqa: BLE001
                raise _error("re-parsing the deserialized module", e) from None
            try:
                self.module.operation.verify()
            except Exception as e:  # noqa: BLE001
                raise _error("verifying", e) from None
            funcs = {}
            for op in self.module.body.operations:
                op = op.operation
                if op.name != "func.func":
                    raise CheckError(f"unexpected top-level op {op.name}")
                funcs[_str_attr(op, "sym_name")] = op
            kernels = [f for f in funcs.values() if "window_params" in f.attributes
                       or "dimension_semantics" in f.attributes]
            if len(kernels) != 1:
                raise CheckError(f"{len(kernels)} kernel functions (want 1)")
            self.funcs, self.func = funcs, kernels[0]
            self.text = str(self.module)

    def attr(self, name):
        """The kernel attribute `name`, printed (None if absent)."""
        with self.ctx:
            a = self.func.attributes
            return str(a[name]) if name in a else None

    def ints(self, name):
        """The kernel attribute `name` as an int or a list of ints (None if absent)."""
        with self.ctx:
            if name not in self.func.attributes:
                return None
            a = self.func.attributes[name]
            if isinstance(a, ir.IntegerAttr):
                return ir.IntegerAttr(a).value
            a = ir.DenseI64ArrayAttr(a)
            return [a[i] for i in range(len(a))]

    def windows(self):
        """[(window_bounds printed, other keys printed, transform func or None)]."""
        if "window_params" not in self.func.attributes:
            return []
        out = []
        with self.ctx:
            for d in ir.ArrayAttr(self.func.attributes["window_params"]):
                d = ir.DictAttr(d)
                keys = {d[i].name: d[i].attr for i in range(len(d))}
                bounds = str(keys.pop("window_bounds", None))
                transform = keys.pop("transform_indices", None)
                if transform is not None:
                    name = ir.FlatSymbolRefAttr(transform).value
                    if name not in self.funcs:
                        raise CheckError(f"transform_indices @{name} is not defined")
                    transform = self.funcs[name]
                out.append((bounds, {k: str(v) for k, v in sorted(keys.items())}, transform))
        return out


# --- Transform function interpreter -----------------------------------------------------------

def _width(t):
    if isinstance(t, ir.IndexType):
        return 64
    if isinstance(t, ir.IntegerType):
        return ir.IntegerType(t).width
    raise CheckError(f"transform function: non-integer type {t}")


def _signed(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _unsigned(v, bits):
    return v & ((1 << bits) - 1)


def _div(a, b, mode):
    if b == 0:
        raise CheckError("transform function: division by zero")
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q  # truncated
    if mode == "floor" and q * b != a and (a < 0) != (b < 0):
        q -= 1
    if mode == "ceil" and q * b != a and (a < 0) == (b < 0):
        q += 1
    return q


# arith.cmpi predicates: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge.
_CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_ORDER = {"lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
          "ge": lambda x, y: x >= y}


def _cmpi(pred, a, b, bits):
    kind = _CMPI[pred]
    if kind in ("eq", "ne"):
        return (_unsigned(a, bits) == _unsigned(b, bits)) == (kind == "eq")
    conv = _signed if kind[0] == "s" else _unsigned
    return _ORDER[kind[1:]](conv(a, bits), conv(b, bits))


def _binary(name, a, b, bits):
    """The result of the two-operand arith integer op `name` (None if unknown)."""
    sa, sb, ua, ub = _signed(a, bits), _signed(b, bits), _unsigned(a, bits), _unsigned(b, bits)
    ops = {
        "arith.addi": lambda: a + b, "arith.subi": lambda: a - b, "arith.muli": lambda: a * b,
        "arith.divsi": lambda: _div(sa, sb, "trunc"),
        "arith.floordivsi": lambda: _div(sa, sb, "floor"),
        "arith.ceildivsi": lambda: _div(sa, sb, "ceil"),
        "arith.remsi": lambda: sa - _div(sa, sb, "trunc") * sb,
        "arith.divui": lambda: _div(ua, ub, "trunc"),
        "arith.ceildivui": lambda: _div(ua, ub, "ceil"),
        "arith.remui": lambda: ua - _div(ua, ub, "trunc") * ub,
        "arith.maxsi": lambda: max(sa, sb), "arith.minsi": lambda: min(sa, sb),
        "arith.maxui": lambda: max(ua, ub), "arith.minui": lambda: min(ua, ub),
        "arith.andi": lambda: a & b, "arith.ori": lambda: a | b, "arith.xori": lambda: a ^ b,
        "arith.shli": lambda: a << ub if ub < bits else 0,
        "arith.shrui": lambda: ua >> ub if ub < bits else 0,
        "arith.shrsi": lambda: sa >> min(ub, bits - 1),
    }
    return ops[name]() if name in ops else None


def run_transform(func, args):
    """Evaluates a transform function at `args` (ints for the grid indices, numpy
    arrays for the scalar-prefetch memrefs); returns its results as ints."""
    block = func.regions[0].blocks[0]
    if len(block.arguments) != len(args):
        raise CheckError(f"transform function takes {len(block.arguments)} arguments, "
                         f"given {len(args)}")
    env = {}
    for v, a in zip(block.arguments, args):
        env[v] = a if isinstance(a, np.ndarray) else _signed(a, _width(v.type))

    def get(v):
        try:
            return env[v]
        except KeyError:
            raise CheckError("transform function: a value defined outside it") from None

    for op in block.operations:
        op = op.operation
        name = op.name
        if name == "func.return":
            return tuple(_signed(get(v), _width(v.type)) for v in op.operands)
        if len(op.results) != 1:
            raise CheckError(f"transform function: unsupported op {name}")
        res = op.results[0]
        ins = [get(v) for v in op.operands]
        if name == "memref.load":
            arr = ins[0]
            if not isinstance(arr, np.ndarray):
                raise CheckError("transform function: memref.load of a non-prefetch value")
            index = tuple(int(i) for i in ins[1:])
            if len(index) != arr.ndim or not all(0 <= i < n for i, n in zip(index, arr.shape)):
                raise CheckError(f"transform function: memref.load out of bounds at {index}")
            env[res] = int(arr[index])
            continue
        bits = _width(res.type)
        if name == "arith.constant":
            env[res] = ir.IntegerAttr(op.attributes["value"]).value
        elif name in ("arith.index_cast", "arith.extsi"):
            env[res] = _signed(ins[0], _width(op.operands[0].type))
        elif name in ("arith.index_castui", "arith.extui"):
            env[res] = _unsigned(ins[0], _width(op.operands[0].type))
        elif name == "arith.trunci":
            env[res] = ins[0]
        elif name == "arith.cmpi":
            pred = ir.IntegerAttr(op.attributes["predicate"]).value
            env[res] = int(_cmpi(pred, ins[0], ins[1], _width(op.operands[0].type)))
        elif name == "arith.select":
            env[res] = ins[1] if _unsigned(ins[0], 1) else ins[2]
        else:
            value = _binary(name, ins[0], ins[1], bits) if len(ins) == 2 else None
            if value is None:
                raise CheckError(f"transform function: unsupported op {name}")
            env[res] = value
        env[res] = _signed(env[res], bits)
    raise CheckError("transform function: no func.return")


def block_indices(kernel, transform, grid, prefetch):
    """{grid point: block indices} of one window, or a CheckError's text."""
    with kernel.ctx:
        try:
            return {p: run_transform(transform, list(p) + prefetch)
                    for p in itertools.product(*map(range, grid))}
        except CheckError as e:
            return str(e)


# --- Comparison -------------------------------------------------------------------------------

def _prefetch_sets(prefetch_args, operand_types):
    """The scalar-prefetch values the kernel is called with: the program's
    arguments, or each example's row of them where the call runs once per
    example (in a loop over a vmapped batch: its operand lacks the batch)."""
    args = [np.asarray(a) for a in prefetch_args]
    shapes = []
    for t in operand_types[:len(args)]:
        dims = t[t.index("<") + 1:t.rindex("x")].split("x") if "x" in t else []
        shapes.append(tuple(int(d) for d in dims))
    if all(a.shape == s for a, s in zip(args, shapes)):
        return [args]
    n = {a.shape[0] for a, s in zip(args, shapes) if a.shape != s}
    if len(n) != 1 or any(a.shape != s and a.shape[1:] != s for a, s in zip(args, shapes)):
        raise CheckError(f"scalar-prefetch operands {shapes} do not fit the program's "
                         f"arguments {[a.shape for a in args]}")
    return [[a[i] if a.shape != s else a for a, s in zip(args, shapes)]
            for i in range(n.pop())]


def check_kernel(jk, ek, prefetch_args, operand_types=None):
    """Compares Ember's kernel module `ek` with JAX's `jk`."""
    for name in KERNEL_ATTRS:
        j, e = jk.attr(name), ek.attr(name)
        if j != e:
            raise CheckError(f"kernel attribute {name}: Ember {e}, JAX {j}")
    jw, ew = jk.windows(), ek.windows()
    if len(jw) != len(ew):
        raise CheckError(f"{len(ew)} window_params, JAX has {len(jw)}")
    grid = tuple(jk.ints("iteration_bounds") or ())
    npf = jk.ints("scalar_prefetch") or 0
    prefetch_sets = (_prefetch_sets(prefetch_args[:npf], operand_types)
                     if operand_types is not None and npf else
                     [[np.asarray(a) for a in prefetch_args[:npf]]])
    for prefetch in prefetch_sets:
        _check_windows(jk, ek, jw, ew, grid, prefetch)


def _check_windows(jk, ek, jw, ew, grid, prefetch):
    for k, ((jb, jo, jt), (eb, eo, et)) in enumerate(zip(jw, ew)):
        if jb != eb:
            raise CheckError(f"window_params[{k}].window_bounds: Ember {eb}, JAX {jb}")
        if jo != eo:
            raise CheckError(f"window_params[{k}]: Ember {eo}, JAX {jo} (besides the transform "
                             "and bounds)")
        if (jt is None) != (et is None):
            raise CheckError(f"window_params[{k}]: transform_indices only on "
                             f"{'JAX' if et is None else 'Ember'}'s side")
        if jt is None:
            continue
        j_idx = block_indices(jk, jt, grid, prefetch)
        if isinstance(j_idx, str):
            raise CheckError(f"window_params[{k}], JAX's transform: {j_idx}")
        e_idx = block_indices(ek, et, grid, prefetch)
        if isinstance(e_idx, str):
            raise CheckError(f"window_params[{k}], Ember's transform: {e_idx}")
        for p in j_idx:
            if j_idx[p] != e_idx[p]:
                raise CheckError(f"window_params[{k}] at grid point {p}: Ember's blocks "
                                 f"{e_idx[p]}, JAX's {j_idx[p]}")


def load_kernel(backend_config, who):
    """(config without body, serialized version, Kernel) of one custom call."""
    try:
        config, body = decode_config(backend_config)
        version, text = deserialize(body)
        return config, version, Kernel(text)
    except CheckError as e:
        raise CheckError(f"{who}'s kernel: {e}") from None


def jax_kernels(jax_rec):
    """(StableHLO info, [(config, version, Kernel)] per custom call) of JAX's record."""
    info = stablehlo_info(jax_rec["stablehlo"])
    kernels = []
    for k, call in enumerate(info["custom_calls"]):
        try:
            kernels.append(load_kernel(call["backend_config"], "JAX"))
        except CheckError as e:
            raise CheckError(f"custom call {k}: {e}") from None
    return info, kernels


def check_program(name, args, jinfo, jkernels, ember_rec):
    """Compares Ember's record of one program with JAX's; raises CheckError on a
    difference."""
    jcalls = jinfo["custom_calls"]
    if ember_rec.get("name", name) != name:
        raise CheckError(f"Ember's record is named {ember_rec['name']!r}")
    try:
        einfo = stablehlo_info(ember_rec["stablehlo"])
    except Exception as e:  # noqa: BLE001 - MLIRError or CheckError
        raise _error("Ember's StableHLO", e) from None
    if einfo["main"] != jinfo["main"]:
        raise CheckError(f"@main (argument types, result types, visibility): "
                         f"Ember {einfo['main']}, JAX {jinfo['main']}")
    ecalls = ember_rec["custom_calls"]
    if len(ecalls) != len(jcalls):
        raise CheckError(f"{len(ecalls)} tpu_custom_calls, JAX has {len(jcalls)}")
    if len(einfo["custom_calls"]) != len(ecalls):
        raise CheckError(f"{len(einfo['custom_calls'])} tpu_custom_calls in Ember's StableHLO, "
                         f"{len(ecalls)} in its custom_calls list")
    for k, (jc, ec, es, (jconf, jver, jk)) in enumerate(
            zip(jcalls, ecalls, einfo["custom_calls"], jkernels)):
        where = f"custom call {k}: "
        if (ec["backend_config"], ec["kernel_name"]) != (es["backend_config"], es["kernel_name"]):
            raise CheckError(where + "Ember's custom_calls entry differs from the custom call "
                             "in its StableHLO")
        for key in ("kernel_name", "operands", "results", "aliases"):
            if es[key] != jc[key]:
                raise CheckError(where + f"{key}: Ember {es[key]}, JAX {jc[key]}")
        try:
            econf, ever, ek = load_kernel(ec["backend_config"], "Ember")
            if econf != jconf:
                raise CheckError(f"config: Ember {econf}, JAX {jconf}")
            if ever != jver:
                raise CheckError(f"stable_mosaic.version: Ember {ever}, JAX {jver}")
            check_kernel(jk, ek, list(args), es["operands"])
        except CheckError as e:
            raise CheckError(where + str(e)) from None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ember_dir", nargs="?", help="the directory of Ember's NAME.json files")
    parser.add_argument("--self-test", action="store_true",
                        help="compare JAX's lowering with itself")
    parser.add_argument("--record", metavar="DIR",
                        help="write JAX's NAME.json files (Ember's format) to DIR and exit")
    parser.add_argument("--dump", metavar="DIR",
                        help="write JAX's deserialized Mosaic modules to DIR/NAME.jax.mlir")
    parser.add_argument("--values", metavar="NPZ",
                        help="write each program's outputs under JAX's TPU interpret mode "
                        "to NPZ (NAME/k) and exit")
    opts = parser.parse_args(argv)
    if opts.values:
        out = {}
        with pltpu.force_tpu_interpret_mode():
            for name, fn, args in load_programs():
                try:
                    res = jax.tree_util.tree_leaves(fn(*args))
                except (NotImplementedError, ValueError) as e:
                    # JAX's interpreter lacks it (or fails: a vmapped kernel
                    # with dimension_semantics in JAX 0.10.2)
                    print(f"skipped {name}: {(str(e).splitlines() or [type(e).__name__])[0]}")
                    continue
                for k, r in enumerate(res):
                    out[f"{name}/{k}"] = np.asarray(r.astype(jnp.float32)
                                                    if r.dtype == jnp.bfloat16 else r)
        np.savez(opts.values, **out)
        print(f"wrote {len(out)} arrays to {opts.values}")
        return 0
    if [opts.ember_dir is not None, opts.self_test, opts.record is not None].count(True) != 1:
        parser.error("give one of EMBER_DIR, --self-test and --record DIR")
    for d in (opts.dump, opts.record):
        if d:
            os.makedirs(d, exist_ok=True)
    failed = False
    for name, fn, args in load_programs():
        try:
            jax_rec = jax_record(fn, args)
        except Exception as e:  # noqa: BLE001 - reported per program
            print(f"FAIL {name}: JAX's lowering: {type(e).__name__}: {e}")
            failed = True
            continue
        if opts.record:
            with open(os.path.join(opts.record, f"{name}.json"), "w") as f:
                json.dump({"name": name, **jax_rec}, f, indent=1)
            print(f"wrote {name}.json")
            continue
        try:
            jinfo, jkernels = jax_kernels(jax_rec)
        except CheckError as e:
            print(f"FAIL {name}: JAX's side: {e}")
            failed = True
            continue
        if opts.dump:
            with open(os.path.join(opts.dump, f"{name}.jax.mlir"), "w") as f:
                f.write("\n".join(kernel.text for _, _, kernel in jkernels))
        if opts.self_test:
            ember_rec = jax_rec
        else:
            path = os.path.join(opts.ember_dir, f"{name}.json")
            if not os.path.exists(path):
                print(f"FAIL {name}: no {path}")
                failed = True
                continue
            with open(path) as f:
                ember_rec = json.load(f)
        try:
            check_program(name, args, jinfo, jkernels, ember_rec)
            print(f"OK {name}")
        except CheckError as e:
            print(f"FAIL {name}: {e}")
            failed = True
        except Exception as e:  # noqa: BLE001 - a malformed record, reported per program
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
