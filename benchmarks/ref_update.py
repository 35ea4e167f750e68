"""(m) a jitted step updating a mutable array ref of 4M float32 in place:
r[...] = r[...] * 0.9 + x, then r[:1000] += 1 (a slice), per call. Prints the
time per call and the effective GB/s (8 B per element of the whole update).
JAX 0.10.2 takes the ref as an input and output of its compiled program."""
import numpy as np

from common import bench, f32, load, parser, report, summary

ap = parser(__doc__)
ap.add_argument("--size", type=int, default=4_000_000)
args = ap.parse_args()
jax, xp = load(args)
x0 = f32((args.size,), 3)
if jax is None:
    r = np.zeros(args.size, np.float32)

    def fn():
        np.multiply(r, np.float32(0.9), out=r)
        np.add(r, x0, out=r)
        r[:1000] += 1
        return r
else:
    x = xp.asarray(x0)
    r = jax.new_ref(xp.zeros(args.size, xp.float32))

    @jax.jit
    def step(x):
        r[...] = r[...] * 0.9 + x
        r[:1000] += 1.0

    def fn():
        step(x)
        return r[0].block_until_ready()
s = bench(fn, args.warmup or 3, args.reps or 30)
t = summary(s)["median"]
gbs = 8 * args.size / t / 1e9
report(args, "ref_update", s, gbs, f"GB/s={gbs:.2f}")
