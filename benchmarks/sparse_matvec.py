"""(n) sparse products: a jitted BCOO matrix (100k x 100k, 1M stored
elements) times a vector, and the gradient of a loss through it with
respect to the stored values (`sparse.grad`); seconds per call. `--numpy`
is SciPy's CSR product (no gradient)."""
import importlib

import numpy as np

from common import bench, load, parser, report, summary

ap = parser(__doc__)
ap.add_argument("--n", type=int, default=100_000)
ap.add_argument("--nse", type=int, default=1_000_000)
ap.add_argument("--what", default="matvec", choices=["matvec", "grad"])
args = ap.parse_args()
jax, xp = load(args)
rng = np.random.RandomState(0)
rows = rng.randint(0, args.n, args.nse).astype(np.int32)
cols = rng.randint(0, args.n, args.nse).astype(np.int32)
vals = rng.randn(args.nse).astype(np.float32)
x = rng.randn(args.n).astype(np.float32)
if jax is None:
    import scipy.sparse

    m = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(args.n, args.n))

    def fn():
        return m @ x
else:
    sparse = importlib.import_module(args.module + ".experimental.sparse")
    m = sparse.BCOO((xp.asarray(vals), xp.asarray(np.stack([rows, cols], 1))),
                    shape=(args.n, args.n))
    xd = xp.asarray(x)
    if args.what == "matvec":
        f = jax.jit(lambda m, x: m @ x)
    else:
        f = jax.jit(sparse.grad(lambda m, x: xp.sum(xp.tanh(m @ x))))

    def fn():
        return jax.block_until_ready(f(m, xd))
s = bench(fn, args.warmup or 3, args.reps or 20)
report(args, f"sparse {args.what}", s, summary(s)["median"])
