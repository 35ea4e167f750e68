"""GPU workloads of #17, item 6, for `make gpu-check`: Ember's cuda target
and JAX on the same GPU, one module per process.

    python3 benchmarks/gpu/gpu_bench.py --module ember|jax [--what all]

Prints one line per workload: `name seconds` (median of --reps calls after
warm-up). Both put the arguments on the GPU first (`device_put`) and time
`jit` calls on them, whose results stay on the GPU, waiting for each.
"""
import argparse
import os
import statistics
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", default="ember")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size", type=int, default=1 << 26)  # 64M f32 (256 MB)
    ap.add_argument("--n", type=int, default=4096)
    args = ap.parse_args()
    if args.module == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cuda")
    jax = __import__(args.module)
    jnp = __import__(args.module + ".numpy", fromlist=["numpy"])
    rng = np.random.default_rng(0)
    x = rng.standard_normal(args.size, dtype=np.float32)
    a = rng.standard_normal((args.n, args.n), dtype=np.float32)
    hidden, steps = 256, 100
    xs = rng.standard_normal((steps, hidden), dtype=np.float32)
    w = (rng.standard_normal((hidden, hidden)) / 16).astype(np.float32)

    def rnn(w, xs):
        def step(h, xt):
            h = jnp.tanh(h @ w + xt)
            return h, h.sum()
        return jax.lax.scan(step, jnp.zeros(hidden, jnp.float32), xs)[1].sum()

    workloads = {
        "elementwise": (lambda v: jnp.tanh(v * 2.0 + 1.0) * v - jnp.exp(-v), (x,)),
        "sum": (lambda v: v.sum(), (x,)),
        "max": (lambda v: v.max(), (x,)),
        "matmul_bf16": (lambda p, q: (p.astype(jnp.bfloat16) @ q.astype(jnp.bfloat16)
                                      ).astype(jnp.float32), (a, a)),
        "scan_rnn_grad": (jax.grad(rnn), (w, xs)),
    }
    for name, (f, fargs) in workloads.items():
        try:
            gpu = jax.devices("gpu")[0]
            call = jax.jit(f)
            fargs_dev = [jax.device_put(v, gpu) for v in fargs]

            def once(call=call, fargs_dev=fargs_dev):
                jax.block_until_ready(call(*fargs_dev))
            once()
            times = []
            for _ in range(args.reps):
                t = time.perf_counter()
                once()
                times.append(time.perf_counter() - t)
            print(f"{name} {statistics.median(times):.6f}", flush=True)
        except Exception as e:  # reported, the next workload still runs
            print(f"{name} error {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)


if __name__ == "__main__":
    main()
