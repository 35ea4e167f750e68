"""First call of a small jitted function, `jit(lambda a: a * 2.0 + 1.0)` on 3
floats, in a fresh process (trace + compile + run; the backend is started
first and not counted), and of a second such function in the same process.
With --what eager: the first calls, outside jit, of six jnp functions of
several primitives on a 3x4x5 f32 array (`take`, `argsort`, `x[i]`,
`.at[i].set`, `var`, `linalg.matrix_norm`), summed. Headline = median over
--procs processes. Not meaningful for numpy."""
import subprocess
import sys

from common import info, load, parser, summary

CHILD = r"""
import sys, time
mod = __import__(sys.argv[1])
xp = __import__(sys.argv[1] + ".numpy", fromlist=["x"])
x = xp.ones(3)
mod.block_until_ready(x + 1)
t = time.perf_counter()
mod.block_until_ready(mod.jit(lambda a: a * 2.0 + 1.0)(x))
first = time.perf_counter() - t
t = time.perf_counter()
mod.block_until_ready(mod.jit(lambda a: a * 3.0 - 1.0)(x))
print(first, time.perf_counter() - t)
"""

EAGER = r"""
import sys, time
import numpy as np
mod = __import__(sys.argv[1])
xp = __import__(sys.argv[1] + ".numpy", fromlist=["x"])
x = xp.asarray(np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32))
i = xp.asarray(np.array([2, 0, 1]))
mod.block_until_ready(x + 1)
t = time.perf_counter()
for f in (lambda: xp.take(x, i, axis=1), lambda: xp.argsort(x, axis=1), lambda: x[i],
          lambda: x.at[i].set(1.0), lambda: xp.var(x, axis=1),
          lambda: xp.linalg.matrix_norm(x)):
    mod.block_until_ready(f())
print(time.perf_counter() - t, 0.0)
"""

ap = parser(__doc__, numpy_ok=False)
ap.add_argument("--procs", type=int, default=5)
ap.add_argument("--what", choices=["jit", "eager"], default="jit")
args = ap.parse_args()
load(args, numpy_ok=False)
firsts, seconds = [], []
for _ in range(args.procs):
    out = subprocess.run([sys.executable, "-c", CHILD if args.what == "jit" else EAGER,
                          args.module], capture_output=True,
                         text=True, check=True).stdout.split()
    firsts.append(float(out[0]))
    seconds.append(float(out[1]))
st, nd = summary(firsts), summary(seconds)
info(args, f"[first_call] module={args.module} first median={st['median']:.4f}s "
           f"p10={st['p10']:.4f}s p90={st['p90']:.4f}s; second function median="
           f"{nd['median']:.4f}s")
print(f"{st['median']:.6g}")
