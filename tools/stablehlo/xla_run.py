"""Runs StableHLO modules with XLA (jaxlib's CPU client); run it with a
Python that has JAX installed, never beside Ember (one MLIR per process).

    python xla_run.py DIR

For every `DIR/NAME.mlir` (StableHLO, generic or pretty form) with inputs
`DIR/NAME.in.npz` (arrays arr_0, arr_1, ... in argument order), writes the
results to `DIR/NAME.out.npz` (arr_0, ...) or the error to `DIR/NAME.err`.
A module with symbolic shapes (`jax.uses_shape_polymorphism`) gets its
arguments' types from the inputs and its shapes refined by JAX's own
refinement (`refine_polymorphic_shapes`), as JAX does before compiling a
shape-polymorphic export. A module for several partitions
(`mhlo.num_partitions = N`: shard_map's manual computations) is compiled for
N CPU devices with Shardy, its arguments placed as the compiled program
wants them and its results assembled from the devices' pieces.
"""

import os
import re
import sys
import traceback

import numpy as np


def main(folder):
    # Host devices for modules of several partitions (before JAX starts).
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    import jax
    import jax.extend
    from jax._src import compiler
    from jax._src.lib import lapack
    from jax._src.lib import xla_client as xc

    # The LAPACK custom calls (lapack_*_ffi) find LAPACK through SciPy once
    # this has run (JAX runs it when it first lowers a decomposition).
    lapack._lapack.initialize()

    backend = jax.extend.backend.get_backend("cpu")
    devices = xc.DeviceList(tuple(jax.devices("cpu")[:1]))
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".mlir"):
            continue
        stem = os.path.join(folder, name[:-5])
        try:
            with open(stem + ".mlir") as f:
                text = f.read()
            args = []
            if os.path.exists(stem + ".in.npz"):
                with np.load(stem + ".in.npz") as z:
                    args = [z[f"arr_{k}"] for k in range(len(z.files))]
            poly = "jax.uses_shape_polymorphism" in text
            text, args = bind_platform_index(text, args, refine=not poly)
            if poly:
                text = _refined(text, args)
            parts = re.search(r"mhlo\.num_partitions = (\d+)", text)
            if parts and int(parts.group(1)) > 1:
                arrays = _run_partitioned(backend, text, args, int(parts.group(1)))
                np.savez(stem + ".out.npz", *arrays)
                continue
            exe = backend.compile_and_load(text, devices, options)
            outs = exe.execute_sharded([jax.device_put(a) for a in args])
            arrays = [np.asarray(o[0]) for o in outs.disassemble_into_single_device_arrays()]
            np.savez(stem + ".out.npz", *arrays)
        except Exception:  # noqa: BLE001 - reported per module
            with open(stem + ".err", "w") as f:
                f.write(traceback.format_exc())


def _run_partitioned(backend, text, args, n):
    """The results of a module for `n` partitions, run on `n` CPU devices:
    each argument placed as the compiled program's parameter sharding says,
    each result assembled from the devices' pieces."""
    import jax
    from jax._src import compiler
    from jax._src.lib import xla_client as xc
    from jax._src.sharding_impls import GSPMDSharding

    devs = jax.devices("cpu")[:n]
    if len(devs) < n:
        raise RuntimeError(f"the module needs {n} devices; XLA has {len(devs)}")
    options = compiler.get_compile_options(num_replicas=1, num_partitions=n,
                                           device_assignment=np.arange(n).reshape(1, n))
    options.executable_build_options.use_shardy_partitioner = True
    exe = backend.compile_and_load(text, xc.DeviceList(tuple(devs)), options)
    placed = [jax.device_put(a, GSPMDSharding(devs, sh))
              for a, sh in zip(args, exe.get_parameter_shardings())]
    outs = exe.execute_sharded(placed).disassemble_into_single_device_arrays()
    head = re.search(r"func\.func public @main\(.*?\) -> \((.*?)\) \{", text)
    shapes = [tuple(int(d) for d in re.findall(r"(\d+)x", t))
              for t in re.findall(r"tensor<[^>]*>", head.group(1))]
    return [np.asarray(jax.make_array_from_single_device_arrays(
        shape, GSPMDSharding(devs, sh), pieces))
        for shape, sh, pieces in zip(shapes, exe.get_output_shardings(), outs)]


_TENSOR = r"tensor<(?:[^<>]|<[^<>]*>)*>"


def bind_platform_index(text, args, refine=True):
    """(text, args) of a module for several platforms (its first argument
    JAX's platform index) as the program that calls it with the index
    `args[0]` as a constant, the way JAX's call of such an export binds it,
    refined as JAX refines it, which folds the other platforms' branches
    away (XLA checks the custom calls of every branch: a Mosaic kernel's
    exists on the TPU only, LAPACK's on the CPU only; `refine=False` leaves
    that to the caller, for a module with symbolic shapes). Other modules
    are returned as they are."""
    if 'jax.global_constant = "_platform_index"' not in text:
        return text, args
    head = re.search(r"func\.func public @main\((.*?)\) -> \((.*?)\) \{", text)
    params = re.findall(r"%[\w#]+: (" + _TENSOR + ")", head.group(1))
    results = re.findall(_TENSOR, head.group(2))
    rest = params[1:]
    n = len(results)
    lines = [f"  func.func public @main({', '.join(f'%a{k}: {t}' for k, t in enumerate(rest))})"
             f" -> ({', '.join(results)}) {{",
             f'    %i = "stablehlo.constant"() <{{value = dense<{int(args[0])}> : tensor<i32>}}> '
             ": () -> tensor<i32>",
             f'    %r:{n} = "func.call"(%i{"".join(f", %a{k}" for k in range(len(rest)))}) '
             f'<{{callee = @_ember_platforms_main}}> : ({", ".join(params)}) -> '
             f'({", ".join(results)})',
             "    return " + ", ".join(f"%r#{k}" for k in range(n)) + " : "
             + ", ".join(results),
             "  }"]
    text = text.replace("func.func public @main(", "func.func private @_ember_platforms_main(",
                        1)
    at = text.index("  func.func private @_ember_platforms_main(")
    text = text[:at] + "\n".join(lines) + "\n" + text[at:]
    if not refine:
        return text, args[1:]
    # (JAX refines the caller's module, which inlines the call and folds the
    # case on the constant: XLA checks every branch's custom calls.)
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        return str(mlir.refine_polymorphic_shapes(ir.Module.parse(text))), args[1:]


def _refined(text, args):
    """`text` called with `args`' static types (a wrapper `main` converting
    them to the symbolic ones), its shapes refined."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    head = re.search(r"func\.func public @main\((.*?)\) -> \((.*?)\) \{", text)
    poly_args = re.findall(r"%[\w#]+: (tensor<[^>]*>)", head.group(1))
    poly_results = re.findall(r"tensor<[^>]*>", head.group(2))
    elt = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
           np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.bool_): "i1"}
    static = ["tensor<" + "".join(f"{d}x" for d in a.shape) + elt[a.dtype] + ">" for a in args]
    lines = [f"  func.func public @main({', '.join(f'%a{k}: {t}' for k, t in enumerate(static))})"
             f" -> ({', '.join(poly_results)}) {{"]
    for k, (s, p) in enumerate(zip(static, poly_args)):
        lines.append(f'    %c{k} = "stablehlo.convert"(%a{k}) : ({s}) -> {p}')
    operands = ", ".join(f"%c{k}" for k in range(len(args)))
    lines.append(f'    %r:{len(poly_results)} = "func.call"({operands}) <{{callee = '
                 f'@_ember_poly_main}}> : ({", ".join(poly_args)}) -> '
                 f'({", ".join(poly_results)})')
    lines.append("    return " + ", ".join(f"%r#{k}" for k in range(len(poly_results)))
                 + " : " + ", ".join(poly_results))
    lines.append("  }")
    text = text.replace("func.func public @main(", "func.func private @_ember_poly_main(", 1)
    at = text.index("  func.func private @_ember_poly_main(")
    text = text[:at] + "\n".join(lines) + "\n" + text[at:]
    with mlir.make_ir_context():
        return str(mlir.refine_polymorphic_shapes(ir.Module.parse(text)))


if __name__ == "__main__":
    main(sys.argv[1])
