"""First call of jit(value_and_grad) of a 20-layer MLP (width 256, batch 64) in a
fresh process, with the persistent compilation cache (`jax_compilation_cache_dir`)
cold (empty) and warm (filled by the cold run). Headline = warm / cold (lower is
better; the target is <= 0.2). Each run is a new process; import and backend
start-up are not counted. Not meaningful for numpy."""
import os
import subprocess
import sys
import tempfile

from common import info, load, parser

CHILD = r"""
import sys, time
import numpy as np
mod = __import__(sys.argv[1])
xp = __import__(sys.argv[1] + ".numpy", fromlist=["x"])
mod.config.update("jax_compilation_cache_dir", sys.argv[2])
mod.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
mod.block_until_ready(mod.jit(lambda a: a + 1)(xp.ones(3)))
rng = np.random.default_rng(0)
P = [(xp.asarray((rng.standard_normal((256, 256)) / 16).astype(np.float32)),
      xp.asarray(np.zeros(256, np.float32))) for _ in range(20)]
X = xp.asarray(rng.standard_normal((64, 256)).astype(np.float32))
def loss(params, x):
    h = x
    for W, b in params:
        h = xp.tanh(h @ W + b)
    return xp.sum(h * h)
t0 = time.perf_counter()
mod.block_until_ready(mod.jit(mod.value_and_grad(loss))(P, X))
print(time.perf_counter() - t0)
"""

ap = parser(__doc__, numpy_ok=False)
args = ap.parse_args()
load(args, numpy_ok=False)  # exits for numpy
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, JAX_PLATFORMS="cpu")

    def run():
        out = subprocess.run([sys.executable, "-c", CHILD, args.module, d], env=env,
                             capture_output=True, text=True, check=True)
        return float(out.stdout.split()[-1])

    cold, warm = run(), run()
info(args, f"[cache_first_call] module={args.module} cold={cold:.4f}s warm={warm:.4f}s")
print(f"{warm / cold:.6g}")
