"""One compile for every batch size (#20 item 2): the 784-512-512-10 MLP's
training step (value_and_grad + SGD, as mlp_step.py) exported with a
symbolic batch `b` and called at batch sizes 1, 7 and 128, against `jit`
specialized for each size. Per size: the first call (a compile, where one
happens) and the median step time. Ember compiles the export once for every
size; JAX (`--module jax`) compiles its export per size, as XLA does.
Prints `export` rows (the symbolic export), `jit` rows (specialized) and,
for Ember, `export1` rows: the same export compiled per size
(EMBER_DYNAMIC_SHAPES=0), which separates the cost of the dynamic code from
that of `Exported.call`'s argument checks."""
import os
import time

import numpy as np

from common import bench, load, mlp_loss, parser, summary

ap = parser(__doc__, numpy_ok=False)
ap.add_argument("--batches", default="1,7,128")
args = ap.parse_args()
jax, xp = load(args, numpy_ok=False)
sizes = [784, 512, 512, 10]
lr = 0.01
rng = np.random.default_rng(0)
params = [((rng.standard_normal((i, o)) * np.sqrt(2.0 / i)).astype(np.float32),
           np.zeros(o, np.float32))
          for i, o in zip(sizes[:-1], sizes[1:])]
loss = mlp_loss(jax, xp)


def train_step(params, x, y):
    value, g = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, g), value


(b,) = jax.export.symbolic_shape("b")
pspec = [(jax.ShapeDtypeStruct(W.shape, W.dtype), jax.ShapeDtypeStruct(c.shape, c.dtype))
         for W, c in params]
exported = jax.export.export(jax.jit(train_step))(
    pspec, jax.ShapeDtypeStruct((b, 784), np.float32), jax.ShapeDtypeStruct((b,), np.int32))
# (A second copy of the export, for the per-size rows.)
per_size = jax.export.deserialize(exported.serialize()) if args.module == "ember" else None
p0 = [(xp.asarray(W), xp.asarray(c)) for W, c in params]
for B in [int(v) for v in args.batches.split(",")]:
    X = xp.asarray(rng.standard_normal((B, 784)).astype(np.float32))
    Y = xp.asarray(rng.integers(0, 10, B).astype(np.int32))
    fns = [("export", exported.call), ("jit", jax.jit(train_step))]
    if args.module == "ember":
        fns.append(("export1", per_size.call))
    first = {}
    for name, fn in fns:
        t0 = time.perf_counter()
        if name == "export1":
            os.environ["EMBER_DYNAMIC_SHAPES"] = "0"
        jax.block_until_ready(fn(p0, X, Y))
        os.environ.pop("EMBER_DYNAMIC_SHAPES", None)
        first[name] = time.perf_counter() - t0
    # The variants take turns (three rounds, the order rotated): the one
    # measured first after a compile would otherwise pay the machine's
    # warm-up (OpenBLAS's threads, caches).
    medians = {name: [] for name, _ in fns}
    for r in range(3):
        for name, fn in fns[r % len(fns):] + fns[:r % len(fns)]:
            s = bench(lambda fn=fn, X=X, Y=Y: jax.block_until_ready(fn(p0, X, Y)),
                      args.warmup or 5, args.reps or 40)
            medians[name].append(summary(s)["median"])
    for name, _ in fns:
        m = sorted(medians[name])
        print(f"{args.module} {name:7s} B={B:<4d} first call {first[name] * 1e3:8.1f} ms   "
              f"step median {m[1] * 1e6:8.1f} us  (rounds {m[0] * 1e6:.1f}-{m[2] * 1e6:.1f})",
              flush=True)
