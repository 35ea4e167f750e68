"""Transformations outside `jit`: seconds per call of
  --what grad   jax.grad(f)(x), a new grad object each call, f = sum(sin(x)**2), x of 100 f32
  --what vmap   jax.vmap(jnp.sin)(x), a new vmap object each call
  --what chain  the eager op chain tanh(x) * 2.0 + cos(x)
JAX runs these op by op; Ember compiles each program once and reuses it."""
import numpy as np

from common import bench, load, parser, report, summary

ap = parser(__doc__, numpy_ok=False)
ap.add_argument("--what", choices=["grad", "vmap", "chain"], default="grad")
args = ap.parse_args()
jax, xp = load(args, numpy_ok=False)
x = xp.asarray(np.linspace(0, 1, 100).astype(np.float32))


def f(v):
    return xp.sum(xp.sin(v) ** 2)


calls = {
    "grad": lambda: jax.grad(f)(x),
    "vmap": lambda: jax.vmap(xp.sin)(x),
    "chain": lambda: xp.tanh(x) * 2.0 + xp.cos(x),
}
call = calls[args.what]


def fn():
    return call().block_until_ready()


s = bench(fn, args.warmup or 20, args.reps or 30, inner=10)
report(args, f"eager-{args.what}", s, summary(s)["median"], "(per call)")
