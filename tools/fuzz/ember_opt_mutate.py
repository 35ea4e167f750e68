"""Mutation fuzzing of ember-opt (#21): splits the lit tests' modules at
`// -----`, mutates them (deletes, duplicates or swaps lines, changes
integers, element types and tensor types) and runs `ember-opt` on each, once
parsing and verifying only and once through `--ember-cpu-pipeline` (or the
flag `--pipeline` names). Invalid input must end in a diagnostic and a
non-zero exit, never a signal; inputs that abort are kept as crash<N>.mlir
in the output directory.

    python tools/fuzz/ember_opt_mutate.py --seed 1 --inputs 5000 --out /tmp/irfuzz
    python tools/fuzz/ember_opt_mutate.py --sources test/Dialect/refs.mlir \
        test/Conversion/ember-to-linalg-refs.mlir          # one family of ops
    python tools/fuzz/ember_opt_mutate.py --pipeline=--ember-tpu-kernel --sources \
        test/Dialect/ember-tpu-ops.mlir test/Conversion/ember-tpu-kernel.mlir
"""
import argparse
import os
import random
import re
import subprocess
import time

SOURCES = ["test/Dialect/ops.mlir", "test/Dialect/folds.mlir", "test/Dialect/invalid.mlir",
           "test/Conversion/ember-to-linalg.mlir", "test/Dialect/refs.mlir",
           "test/Conversion/ember-to-linalg-refs.mlir"]
SCALARS = ["f32", "f64", "i32", "i1", "i64", "bf16", "f16"]
TENSORS = ["tensor<2xf32>", "tensor<3x4xf32>", "tensor<f32>", "tensor<?xf32>", "tensor<0xf32>",
           "!ember.ref<tensor<4xf32>>"]


def modules(sources):
    out = []
    for path in sources:
        for chunk in open(path).read().split("// -----"):
            lines = [x for x in chunk.splitlines() if not x.strip().startswith("//")]
            if any("func.func" in x or "gpu.func" in x for x in lines):
                out.append(lines)
    return out


def mutate(rng, lines):
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        kind, i = rng.randrange(6), rng.randrange(len(lines))
        if kind == 0 and len(lines) > 2:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif kind == 2:
            lines[i] = re.sub(r"\b\d+\b", lambda m: str(rng.choice([0, 1, 2, 3, -1, 7, 1 << 31])),
                              lines[i])
        elif kind == 3:
            lines[i] = re.sub(r"f32|i32|f64|i1\b", lambda m: rng.choice(SCALARS), lines[i])
        elif kind == 4:
            lines[i] = re.sub(r"tensor<[^>]*>", lambda m: rng.choice(TENSORS), lines[i], count=1)
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--out", default="/tmp/ember-opt-fuzz")
    ap.add_argument("--ember-opt", default="build/dev/bin/ember-opt")
    ap.add_argument("--sources", nargs="+", default=SOURCES,
                    help="the lit files whose modules are mutated (default: %(default)s)")
    ap.add_argument("--pipeline", default="--ember-cpu-pipeline",
                    help="the ember-opt flag of the second run (default: %(default)s; e.g. "
                    "--ember-tpu-kernel for the TPU kernel tests)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng, srcs, crashes, start = random.Random(a.seed), modules(a.sources), 0, time.time()
    path = os.path.join(a.out, "input.mlir")
    for _ in range(a.inputs):
        text = mutate(rng, rng.choice(srcs))
        with open(path, "w") as f:
            f.write(text)
        for extra in ([], [a.pipeline]):
            p = subprocess.run([a.ember_opt, path, *extra], capture_output=True, timeout=120)
            if p.returncode < 0 or p.returncode > 128:
                crashes += 1
                with open(os.path.join(a.out, f"crash{crashes}.mlir"), "w") as f:
                    f.write(text)
                break
    print(f"{a.inputs} inputs, {2 * a.inputs} runs at most, {time.time() - start:.0f} s: "
          f"{crashes} inputs ended by a signal (kept in {a.out})")


if __name__ == "__main__":
    main()
