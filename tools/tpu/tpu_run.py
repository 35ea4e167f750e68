"""Runs Ember's TPU lowering of the Pallas TPU programs on a real TPU, beside
JAX's own lowering of the same programs; run it on a machine with a TPU and
JAX (`make tpu-check`), never beside Ember (one MLIR per process):

    python3 tools/tpu/tpu_run.py DIR [--report FILE] [--only NAME...]

DIR comes from `tools/tpu/ember_record.py --values --bench DIR` (`make
tpu-records`, on any machine with Ember built): `NAME.json` holds Ember's
StableHLO module for TPU (the `tpu_custom_call`s with their serialized Mosaic
kernels), `NAME.values.npz` Ember's outputs of the same program on the CPU.
For every program of `test/data/tpu/kernels.py`, the tool compiles Ember's
module with XLA:TPU (jaxlib's PJRT client, which hands each kernel to
Mosaic's compiler), runs it on the program's arguments (made by JAX from the
same source), runs JAX's `jit` of the program, and compares Ember's TPU
outputs with JAX's TPU outputs and with Ember's CPU outputs. The benchmark
programs (`benchmarks()` of the same file) are compared with JAX's outputs and
timed against JAX's, alternating, as medians of several rounds. Programs that
need more devices than the machine has are reported as skipped with the
reason. Prints one line per program and writes a Markdown report; exits 1
if any program failed.
"""

import argparse
import importlib.util
import json
import os
import re
import statistics
import sys
import time
import traceback

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
KERNELS = os.path.join(ROOT, "test", "data", "tpu", "kernels.py")

# Tolerances of Ember's TPU outputs against JAX's TPU outputs (the same
# kernel source compiled by the same Mosaic compiler: equal unless the two
# lowerings write the computation differently) and against Ember's CPU
# outputs (the TPU's transcendental functions and matrix units round
# differently from the CPU's). Relative to the largest magnitude of the
# reference, per output.
TOL_SAME_CHIP = {"bfloat16": 1e-2, "float16": 1e-3, "float32": 1e-5}
TOL_CPU = {"bfloat16": 2e-2, "float16": 2e-3, "float32": 2e-3}
# Whole programs (no kernels) against Ember's CPU outputs: elementwise work
# to 1e-4 of the output's scale; programs with f32 matrix products looser,
# since XLA:TPU's default precision multiplies f32 in one bf16 pass.
TOL_WHOLE = {"bfloat16": 2e-2, "float16": 2e-3, "float32": 1e-4, "complex64": 1e-4}
TOL_WHOLE_MATMUL = {"bfloat16": 2e-2, "float16": 2e-2, "float32": 2e-2, "complex64": 2e-2}
MATMUL_PROGRAMS = {"dot", "grad_vmap", "mlp_step", "linalg", "decompositions",
                   "complex_decompositions", "tpu_decompositions"}


def load_programs(jax, jnp, pl, pltpu):
    spec = importlib.util.spec_from_file_location("tpu_kernels", KERNELS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.programs(jax, jnp, pl, pltpu), mod.benchmarks(jax, jnp, pl, pltpu)


def _leaves(tree):
    import jax
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def compare(got, want, table):
    """The largest error of `got` against `want` relative to `want`'s
    largest magnitude, and whether it is within `table`'s tolerance
    (integers and booleans must be equal)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}", False
    if got.size == 0:
        return 0.0, True
    name = str(want.dtype)
    if name not in table:
        equal = bool(np.array_equal(got, want))
        return (0.0 if equal else float("inf")), equal
    cplx = want.dtype.kind == "c"
    g = got.astype(np.complex128 if cplx else np.float64)
    w = want.astype(np.complex128 if cplx else np.float64)
    if not (np.isfinite(g) == np.isfinite(w)).all():
        return float("nan"), False
    finite = np.isfinite(w)
    scale = max(float(np.abs(w[finite]).max(initial=0.0)), 1e-30)
    err = float(np.abs(g[finite] - w[finite]).max(initial=0.0)) / scale
    return err, err <= table[name]


class TpuModule:
    """Ember's StableHLO module compiled by XLA for the first `n` TPU devices."""

    def __init__(self, text):
        import jax
        import jax.extend
        from jax._src import compiler
        from jax._src.lib import xla_client as xc

        parts = re.search(r"mhlo\.num_partitions = (\d+)", text)
        self.partitions = int(parts.group(1)) if parts else 1
        devices = jax.devices()
        if self.partitions > len(devices):
            raise SkipProgram(f"needs {self.partitions} devices; this machine has "
                              f"{len(devices)}")
        backend = jax.extend.backend.get_backend()
        options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
        self.device = devices[0]
        self.exe = backend.compile_and_load(text, xc.DeviceList((self.device,)), options)

    def put(self, args):
        import jax
        return [jax.device_put(np.asarray(a), self.device) for a in args]

    def __call__(self, placed):
        outs = self.exe.execute_sharded(placed)
        return [o[0] for o in outs.disassemble_into_single_device_arrays()]


class SkipProgram(Exception):
    pass


def _block(xs):
    for x in xs:
        x.block_until_ready()
    return xs


def _recorded_args(folder, name, rec, args):
    """The arguments Ember computed on (`NAME.args.npz`) where recorded: the
    same bits on both sides (JAX's `ramp` on a TPU rounds its divisions
    differently from the CPU's); else `args`."""
    path = os.path.join(folder, f"{name}.args.npz")
    if not os.path.exists(path):
        return args
    import jax.numpy as jnp

    with np.load(path) as z:
        flat = [z[f"arr_{k}"] for k in range(len(z.files))]
    return [a.view(jnp.dtype(d)) if a.dtype.kind == "V" else a.astype(d)
            for a, d in zip(flat, rec["arg_dtypes"])]


def run_program(name, fn, args, folder, jax, save=None):
    """One program: Ember's module on the TPU against JAX's jit and Ember's CPU values."""
    with open(os.path.join(folder, f"{name}.json")) as f:
        rec = json.load(f)
    args = _recorded_args(folder, name, rec, args)
    module = TpuModule(rec["stablehlo"])
    ember_tpu = [np.asarray(x) for x in _block(module(module.put(args)))]
    jax_tpu = _leaves(jax.jit(fn)(*args))
    if save:
        np.savez(os.path.join(save, f"{name}.tpu.npz"), *ember_tpu, *jax_tpu,
                 *[np.asarray(a) for a in args])
    lines = []
    ok = len(ember_tpu) == len(jax_tpu)
    if not ok:
        lines.append(f"{len(ember_tpu)} outputs vs JAX's {len(jax_tpu)}")
    errs_jax = []
    for k, (e, j) in enumerate(zip(ember_tpu, jax_tpu)):
        err, good = compare(e, j, TOL_SAME_CHIP)
        errs_jax.append(err)
        if not good:
            ok = False
            lines.append(f"output {k} differs from JAX's on the TPU: {err}")
    errs_cpu = []
    values = os.path.join(folder, f"{name}.values.npz")
    if os.path.exists(values):
        with np.load(values) as z:
            cpu = [z[f"arr_{k}"] for k in range(len(z.files))]
        if len(cpu) != len(ember_tpu):
            ok = False
            lines.append(f"{len(ember_tpu)} outputs vs {len(cpu)} on the CPU")
        for k, (e, c) in enumerate(zip(ember_tpu, cpu)):
            if e.dtype.name == "bfloat16" or c.dtype.kind == "V":
                c = c.view(e.dtype) if c.dtype.itemsize == e.dtype.itemsize else c
            err, good = compare(e, c, TOL_CPU)
            errs_cpu.append(err)
            if not good:
                ok = False
                lines.append(f"output {k} differs from Ember's CPU result: {err}")
    return ok, errs_jax, errs_cpu, lines, len(rec["custom_calls"])


def time_program(name, fn, args, folder, jax, rounds, reps):
    """Medians and spreads (ms) of Ember's module and JAX's jit on the TPU,
    alternating rounds of `reps` calls each; and the outputs' agreement."""
    with open(os.path.join(folder, f"{name}.json")) as f:
        rec = json.load(f)
    module = TpuModule(rec["stablehlo"])
    placed = module.put(args)
    jitted = jax.jit(fn)
    jargs = [jax.device_put(a, module.device) for a in args]
    ember_out = [np.asarray(x) for x in _block(module(placed))]
    jax_out = _leaves(jitted(*jargs))
    errs = [compare(e, j, TOL_SAME_CHIP) for e, j in zip(ember_out, jax_out)]
    times = {"ember": [], "jax": []}

    def ember_round():
        t = time.perf_counter()
        for _ in range(reps):
            out = module(placed)
        _block(out)
        return (time.perf_counter() - t) / reps * 1e3

    def jax_round():
        t = time.perf_counter()
        for _ in range(reps):
            out = jitted(*jargs)
        jax.block_until_ready(out)
        return (time.perf_counter() - t) / reps * 1e3

    ember_round()
    jax_round()
    for _ in range(rounds):
        times["ember"].append(ember_round())
        times["jax"].append(jax_round())
    return times, errs


def _failure(name, e, failed):
    """Reports a program that raised: its line printed with the traceback,
    the name added to `failed`; returns the message's first line."""
    failed.append(name)
    msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
    print(f"FAIL {name}: {msg}", flush=True)
    traceback.print_exc()
    return msg


def run_whole(folder, name):
    """One whole program exported for TPU: its outputs on the TPU against
    Ember's CPU outputs."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "stablehlo"))
    from xla_run import bind_platform_index

    with np.load(os.path.join(folder, f"{name}.in.npz")) as z:
        args = [z[f"arr_{k}"] for k in range(len(z.files))]
    with open(os.path.join(folder, f"{name}.mlir")) as f:
        # (A module for several platforms: the TPU's index, first in the
        # inputs, bound as JAX's call of such an export binds it.)
        text, args = bind_platform_index(f.read(), args)
    module = TpuModule(text)
    with np.load(os.path.join(folder, f"{name}.values.npz")) as z:
        want = [z[f"arr_{k}"] for k in range(len(z.files))]
    got = [np.asarray(x) for x in _block(module(module.put(args)))]
    table = TOL_WHOLE_MATMUL if name in MATMUL_PROGRAMS else TOL_WHOLE
    if len(got) != len(want):
        return False, [], [f"{len(got)} outputs vs {len(want)} on the CPU"]
    errs, why = [], []
    for k, (g, w) in enumerate(zip(got, want)):
        err, good = compare(g, w, table)
        errs.append(err)
        if not good:
            why.append(f"output {k} ({w.dtype}{list(w.shape)}) differs: {err}")
    return not why, errs, why


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--report", default=None)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--save", default=None,
                    help="write each program's outputs (Ember's, then JAX's) and arguments "
                    "to SAVE/NAME.tpu.npz")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=10)
    opts = ap.parse_args(argv)

    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    device = jax.devices()[0]
    print(f"JAX {jax.__version__} on {device.platform}: {device.device_kind}, "
          f"{len(jax.devices())} device(s)", flush=True)
    programs, benchmarks = load_programs(jax, jnp, pl, pltpu)
    report = ["# Ember's TPU programs on a real TPU\n",
              f"JAX {jax.__version__}, {device.platform} ({device.device_kind}, "
              f"{len(jax.devices())} device(s)). Each program: Ember's StableHLO module "
              "(its Pallas kernels as Mosaic `tpu_custom_call`s) compiled by XLA:TPU and run; "
              "errors are the largest absolute difference over the reference's largest "
              "magnitude.\n",
              "| program | kernels | vs JAX on the TPU | vs Ember on the CPU | result |",
              "|---|---|---|---|---|"]
    failed = []
    counts = {"ok": 0, "fail": 0, "skip": 0}

    def fmt(errs):
        return ", ".join(f"{e:.1e}" if isinstance(e, float) else str(e) for e in errs) or "-"

    for name, fn, args in programs:
        if opts.only and name not in opts.only:
            continue
        try:
            ok, ej, ec, why, ncalls = run_program(name, fn, args, opts.folder, jax, opts.save)
        except SkipProgram as e:
            counts["skip"] += 1
            print(f"SKIP {name}: {e}", flush=True)
            report.append(f"| {name} | | | | skipped: {e} |")
            continue
        except Exception as e:  # noqa: BLE001 - reported per program
            counts["fail"] += 1
            report.append(f"| {name} | | | | **failed**: {_failure(name, e, failed)} |")
            continue
        counts["ok" if ok else "fail"] += 1
        if not ok:
            failed.append(name)
        verdict = "OK" if ok else "FAIL"
        print(f"{verdict} {name}: vs JAX {fmt(ej)}; vs CPU {fmt(ec)}"
              + ("" if ok else "; " + "; ".join(why)), flush=True)
        report.append(f"| {name} | {ncalls} | {fmt(ej)} | {fmt(ec)} | "
                      f"{'ok' if ok else '**' + '; '.join(why) + '**'} |")

    report += ["", f"{counts['ok']} agree, {counts['fail']} fail, {counts['skip']} skipped.", ""]
    whole = os.path.join(opts.folder, "whole")
    names = sorted(n[:-5] for n in os.listdir(whole) if n.endswith(".mlir")) \
        if os.path.isdir(whole) else []
    skipped = sorted(n[:-5] for n in os.listdir(whole) if n.endswith(".skip")) \
        if os.path.isdir(whole) else []
    if names:
        report += ["## Whole programs\n",
                   "Ember's StableHLO-out programs (`test_stablehlo.py`, no kernels) exported "
                   "for TPU, run by XLA:TPU, against Ember's CPU outputs.\n",
                   "| program | errors | result |", "|---|---|---|"]
    wcount = {"ok": 0, "fail": 0}
    for name in names:
        if opts.only and name not in opts.only:
            continue
        try:
            ok, errs, why = run_whole(whole, name)
        except Exception as e:  # noqa: BLE001 - reported per program
            wcount["fail"] += 1
            report.append(f"| {name} | | **failed**: {_failure('whole ' + name, e, failed)} |")
            continue
        wcount["ok" if ok else "fail"] += 1
        if not ok:
            failed.append("whole " + name)
        print(f"{'OK' if ok else 'FAIL'} whole {name}: {fmt(errs)}"
              + ("" if ok else "; " + "; ".join(why)), flush=True)
        report.append(f"| {name} | {fmt(errs)} | {'ok' if ok else '**' + '; '.join(why) + '**'} |")
    for name in skipped:
        with open(os.path.join(whole, f"{name}.skip")) as f:
            why = f.read().strip()
        print(f"SKIP whole {name}: not exported for TPU: {why}", flush=True)
        report.append(f"| {name} | | not exported for TPU: {why} |")
    if names:
        report += ["", f"{wcount['ok']} agree, {wcount['fail']} fail, {len(skipped)} not "
                   "exported for TPU.", ""]
    report += [
               "## Benchmarks\n",
               f"Medians of {opts.rounds} alternating rounds of {opts.reps} calls (ms per "
               "call; the spread is min-max); Ember / JAX below 1 is faster.\n",
               "| program | Ember ms | JAX ms | Ember / JAX | TFLOP/s (Ember, JAX) | outputs |",
               "|---|---|---|---|---|---|"]
    for name, fn, make_args, flops in benchmarks:
        if opts.only and name not in opts.only:
            continue
        try:
            args = make_args()
            times, errs = time_program(name, fn, args, opts.folder, jax, opts.rounds, opts.reps)
        except Exception as e:  # noqa: BLE001 - reported per program
            report.append(f"| {name} | | | | | **failed**: {_failure(name, e, failed)} |")
            continue
        me, mj = statistics.median(times["ember"]), statistics.median(times["jax"])
        good = all(g for _, g in errs)
        if not good:
            failed.append(name)
        spread = (f"{min(times['ember']):.3f}-{max(times['ember']):.3f}",
                  f"{min(times['jax']):.3f}-{max(times['jax']):.3f}")
        tf = (f"{flops / me / 1e9:.1f}, {flops / mj / 1e9:.1f}" if flops else "-")
        print(f"{'OK' if good else 'FAIL'} bench {name}: Ember {me:.3f} ms ({spread[0]}), "
              f"JAX {mj:.3f} ms ({spread[1]}), ratio {me / mj:.2f}, TFLOP/s {tf}, "
              f"errors {fmt([e for e, _ in errs])}", flush=True)
        report.append(f"| {name} | {me:.3f} ({spread[0]}) | {mj:.3f} ({spread[1]}) | "
                      f"{me / mj:.2f} | {tf} | {fmt([e for e, _ in errs])}"
                      f"{'' if good else ' **differ**'} |")
    text = "\n".join(report) + "\n"
    if opts.report:
        with open(opts.report, "w") as f:
            f.write(text)
    print(text)
    print("failed:", " ".join(failed) if failed else "none")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
