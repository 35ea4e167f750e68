"""#18 target: a compiled Pallas blocked matmul on the CPU within 2x of
OpenBLAS. A `pallas_call` over (n/bm, n/bn, n/bk) blocks accumulating into
its output block (JAX's Pallas quickstart kernel), compiled under `jit`,
against `a @ b` (OpenBLAS) in the same process. Prints the ratio of the
pallas_call's time to the product's (lower is better; target <= 2).

    .venv/bin/python benchmarks/pallas_matmul.py [--n 1024] [--block 256]

(With `--module jax` JAX runs the same kernel in its interpret mode, which is
all JAX offers for Pallas on a CPU.)
"""
from common import bench, f32, load, parser, report, summary

ap = parser(__doc__, numpy_ok=False)
ap.add_argument("--n", type=int, default=1024)
ap.add_argument("--block", type=int, default=256)
args = ap.parse_args()
jax, xp = load(args, numpy_ok=False)
pl = __import__(f"{args.module}.experimental.pallas", fromlist=["pallas"])
n, b = args.n, args.block


def kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = xp.zeros_like(o_ref)

    o_ref[...] += x_ref[...] @ y_ref[...]


mm = pl.pallas_call(
    kernel, out_shape=jax.ShapeDtypeStruct((n, n), xp.float32), grid=(n // b, n // b, n // b),
    in_specs=[pl.BlockSpec((b, b), lambda i, j, k: (i, k)),
              pl.BlockSpec((b, b), lambda i, j, k: (k, j))],
    out_specs=pl.BlockSpec((b, b), lambda i, j, k: (i, j)),
    interpret=args.module == "jax")
A, B = xp.asarray(f32((n, n), 1)), xp.asarray(f32((n, n), 2))
blocked, dense = jax.jit(mm), jax.jit(lambda x, y: x @ y)
err = float(abs(blocked(A, B) - dense(A, B)).max())
reps = args.reps or 10
sp = bench(lambda: blocked(A, B).block_until_ready(), args.warmup or 2, reps)
sd = bench(lambda: dense(A, B).block_until_ready(), args.warmup or 2, reps)
tp, td = summary(sp)["median"], summary(sd)["median"]
report(args, f"pallas_matmul{n}", sp, tp / td,
       f"pallas_call {tp * 1e3:.2f} ms, a @ b {td * 1e3:.2f} ms, ratio {tp / td:.2f}, "
       f"max difference {err:.2e}")
