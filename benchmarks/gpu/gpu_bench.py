"""GPU workloads of #17, item 6, for `make gpu-check`: Ember's cuda target
and JAX on the same GPU, one module per process: an elementwise chain, sum
and max of 256M f32, a bf16 8192^3 matmul, the scan RNN's gradient, the
MLP training step (784-512-512-10, batch 128), per-example gradients, and
the Hopper matmul kernel of examples/pallas_gpu_kernels.py (TMA, mbarriers,
wgmma; bf16 8192^3) written against plgpu, run by each module's own Pallas
(for JAX the example's source with its imports changed).

    python3 benchmarks/gpu/gpu_bench.py --module ember|jax [--only a,b] [--reps N]

Prints one line per workload: `name seconds` (median of --reps calls after
warm-up; `dispatch`, a jitted scalar add, and `matmul_small`, one f32
128x784x512 product, time 100 calls per rep and report one). With --host,
also `name host seconds`: the median time a call takes to return, before
its result is ready (the host's share of a call, when dispatch is
asynchronous). Both put the arguments on the GPU first (`device_put`) and time
`jit` calls on them, whose results stay on the GPU, waiting for each.
"""
import argparse
import functools
import os
import statistics
import time
import types

import numpy as np


def _raise(e, *args):
    raise e


def _device_allocations(module):
    """Ember's count of cuMemAlloc calls so far (its caching allocator's
    misses), or None."""
    if module != "ember":
        return None
    from ember._mlir._mlir_libs import _ember_runtime as rt
    return rt.cuda_allocator_stats()[0]


def _example_kernels(module):
    """examples/pallas_gpu_kernels.py for `module` (for JAX: its source with
    `ember` replaced by `jax` in the imports)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "pallas_gpu_kernels.py")
    with open(path) as f:
        src = f.read()
    if module != "ember":
        src = src.replace("import ember.numpy as jnp", f"import {module}.numpy as jnp")
        src = src.replace("import ember\n", f"import {module} as ember\n")
        for old in ("from ember ", "from ember."):
            src = src.replace(old, old.replace("ember", module))
    ns = {"__name__": "pallas_gpu_kernels"}
    exec(compile(src, path, "exec"), ns)
    return types.SimpleNamespace(**ns)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", default="ember")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size", type=int, default=1 << 28)  # 256M f32 (1 GiB)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    ap.add_argument("--host", action="store_true", help="also time each call's return")
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

    def mlp_loss(params, xb, yb):
        h = xb
        for w_, b_ in params[:-1]:
            h = jnp.tanh(h @ w_ + b_)
        w_, b_ = params[-1]
        return jnp.mean((h @ w_ + b_ - yb) ** 2)

    sizes = [784, 512, 512, 10]
    params = [((rng.standard_normal((m, k)) / np.sqrt(m)).astype(np.float32),
               np.zeros(k, np.float32)) for m, k in zip(sizes[:-1], sizes[1:])]
    xb = rng.standard_normal((128, 784), dtype=np.float32)
    yb = rng.standard_normal((128, 10), dtype=np.float32)

    def mlp_step(params, xb, yb):
        g = jax.grad(mlp_loss)(params, xb, yb)
        return [(w_ - 0.01 * gw, b_ - 0.01 * gb) for (w_, b_), (gw, gb) in zip(params, g)]

    def per_example(params, xb, yb):
        return jax.vmap(jax.grad(mlp_loss), in_axes=(None, 0, 0))(params, xb[:, None],
                                                                 yb[:, None])

    b16 = rng.standard_normal((args.n, args.n), dtype=np.float32).astype(
        np.dtype(jnp.bfloat16))
    try:
        pallas_matmul = _example_kernels(args.module).hopper_matmul_kernel(
            args.n, args.n, args.n, jnp.bfloat16)
    except Exception as e:  # reported as that workload's error
        pallas_matmul = functools.partial(_raise, e)

    workloads = {
        "dispatch": (lambda v: v + 1.0, (np.float32(1.0),)),
        "elementwise": (lambda v: jnp.tanh(v * 2.0 + 1.0) * v - jnp.exp(-v), (x,)),
        "sum": (lambda v: v.sum(), (x,)),
        "max": (lambda v: v.max(), (x,)),
        "matmul_small": (lambda p, q: p @ q, (xb, params[0][0])),
        "matmul_bf16": (lambda p, q: (p.astype(jnp.bfloat16) @ q.astype(jnp.bfloat16)
                                      ).astype(jnp.float32), (a, a)),
        "scan_rnn_grad": (jax.grad(rnn), (w, xs)),
        "mlp_step": (mlp_step, (params, xb, yb)),
        "per_example_grads": (per_example, (params, xb, yb)),
        "pallas_matmul_bf16": (pallas_matmul, (b16, b16)),
    }
    only = set(filter(None, args.only.split(",")))
    for name, (f, fargs) in workloads.items():
        if only and name not in only:
            continue
        try:
            gpu = jax.devices("gpu")[0]
            call = jax.jit(f)
            fargs_dev = jax.device_put(list(fargs), gpu)
            inner = 100 if name in ("dispatch", "matmul_small") else 1

            def once(call=call, fargs_dev=fargs_dev, inner=inner):
                for _ in range(inner - 1):
                    call(*fargs_dev)
                jax.block_until_ready(call(*fargs_dev))
            once()
            allocs = _device_allocations(args.module)
            times = []
            for _ in range(args.reps):
                t = time.perf_counter()
                once()
                times.append((time.perf_counter() - t) / inner)
            print(f"{name} {statistics.median(times):.6f}", flush=True)
            if args.host:
                returns = []
                for _ in range(args.reps):
                    t = time.perf_counter()
                    out = call(*fargs_dev)
                    returns.append(time.perf_counter() - t)
                    jax.block_until_ready(out)
                print(f"{name} host {statistics.median(returns):.6f}", flush=True)
                if allocs is not None:  # cuMemAlloc calls in the timed calls
                    print(f"{name} device allocations "
                          f"{_device_allocations(args.module) - allocs}", flush=True)
        except Exception as e:  # reported, the next workload still runs
            print(f"{name} error {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)


if __name__ == "__main__":
    main()
