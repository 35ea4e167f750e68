"""Resident memory over many calls: the process's RSS after `--warm` calls
and after `--calls` calls of
  --what jit    a jitted function on a 1000-element array
  --what eager  an eager op chain tanh(x) * 2.0 + cos(x)
  --what grad   jax.grad(f)(x), a new grad object each call
Prints both sizes and the growth in percent (the reliability target: within
10% from 1,000 to 100,000 calls)."""
import argparse
import importlib
import os


def rss_mb():
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--module", default="ember", choices=["ember", "jax"])
ap.add_argument("--what", default="jit", choices=["jit", "eager", "grad"])
ap.add_argument("--warm", type=int, default=1000)
ap.add_argument("--calls", type=int, default=100000)
args = ap.parse_args()
jax = importlib.import_module(args.module)
jnp = importlib.import_module(args.module + ".numpy")
x = jnp.linspace(0.0, 1.0, 1000)
f = jax.jit(lambda v: jnp.tanh(v) * 2.0 + jnp.cos(v))
calls = {
    "jit": lambda: f(x),
    "eager": lambda: jnp.tanh(x) * 2.0 + jnp.cos(x),
    "grad": lambda: jax.grad(lambda v: jnp.sum(jnp.sin(v) ** 2))(x),
}
call = calls[args.what]
for _ in range(args.warm):
    call().block_until_ready()
before = rss_mb()
for _ in range(args.calls - args.warm):
    call().block_until_ready()
after = rss_mb()
print(f"{args.module} {args.what}: RSS after {args.warm} calls {before:.1f} MB, after "
      f"{args.calls} calls {after:.1f} MB ({100 * (after - before) / before:+.1f}%)")
