"""(o) FFTs (jitted): `--op fft` a complex64 transform of 2^20 points,
`rfft` a real one of 2^20, `rfft-rows` 256 real rows of 1024, `ifft2` a
256x1024 complex64 2-D inverse. Seconds per call."""
from common import bench, f32, load, parser, report, summary

ap = parser(__doc__)
ap.add_argument("--op", choices=["fft", "rfft", "rfft-rows", "ifft2"], default="rfft-rows")
args = ap.parse_args()
jax, xp = load(args)
if args.op in ("fft", "rfft"):
    x = f32((1 << 20,), 6)
else:
    x = f32((256, 1024), 6)
if args.op in ("fft", "ifft2"):
    x = (x + 1j * x[::-1]).astype("complex64")
op = {"fft": xp.fft.fft, "rfft": xp.fft.rfft, "rfft-rows": xp.fft.rfft,
      "ifft2": xp.fft.ifft2}[args.op]
if jax is None:
    def fn():
        return op(x)
else:
    x = xp.asarray(x)
    f = jax.jit(op)
    def fn():
        return f(x).block_until_ready()
s = bench(fn, args.warmup or 3, args.reps or 20)
report(args, f"fft-{args.op}", s, summary(s)["median"])
