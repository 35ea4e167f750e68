"""8- and 4-bit floats (ml_dtypes' float8_* and float4_e2m1fn): one line per
case with each result's dtype and values. Run with IMPORT=jax (in a JAX
venv) to record `narrow_floats.jax.txt` (JAX 0.10.2 on the CPU), with
IMPORT=ember to compare (test_narrow_dtypes.py).

The cases are conversions from f32 (rounding, overflow, NaN, the types
without infinities, zero or sign), arithmetic and transcendental functions
(XLA's CPU code computes in f16 and rounds back; f8E8M0FNU in f32),
comparisons, reductions and products (accumulated in f32), sorting, shape
ops, indexing, `jit`, `vmap`, `grad`, weak-typed scalars and JAX's
promotion errors."""
import numpy as np
from cases import jax, jnp, shows

NAMES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz",
         "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn"]


def text(v):
    a = np.asarray(v)
    if a.dtype.kind in "biu":
        vals = " ".join(str(int(x)) for x in a.ravel())
    else:  # (every narrow float is exact in f32; NaN's sign aside)
        f = a.astype(np.float32).ravel()
        vals = " ".join("nan" if np.isnan(x) else f"{x:.9g}" for x in f)
    return f"{a.dtype.name}{list(a.shape)} {vals}"


show = shows(text)


rng = np.random.default_rng(11)
base = (rng.standard_normal((4, 6)) * 3).astype(np.float32)
special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30, 448, 464, 480,
                    0.3, 6.5, 7.0, 0.75, -0.25, 2.0 ** -127, 57344, 3e-5], np.float32)


def cases(n):
    t = getattr(jnp, n)
    x = jnp.asarray(base).astype(t)
    y = jnp.asarray(base[::-1] * 0.5).astype(t)
    show(f"{n} convert", lambda: jnp.asarray(special).astype(t))
    show(f"{n} convert jit", lambda: jax.jit(lambda v: v.astype(t))(special))
    show(f"{n} arith", lambda: (x + y, x - y, x * y, x / y, -x, jnp.abs(x)))
    show(f"{n} weak", lambda: (x - 1.5, x * 2, 3 + x))
    show(f"{n} math", lambda: (jnp.exp(x), jnp.tanh(x), jnp.sqrt(jnp.abs(x)), jnp.log(jnp.abs(x))))
    show(f"{n} compare", lambda: (x > y, x == y, jnp.maximum(x, y), jnp.minimum(x, y),
                                 jnp.where(x > 0, x, y)))
    show(f"{n} reduce", lambda: (jnp.sum(x), jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(x),
                                jnp.prod(x[:, :2], axis=1), jnp.mean(x)))
    show(f"{n} dot", lambda: x @ y.T)
    show(f"{n} sort", lambda: (jnp.sort(x, axis=1), jnp.argsort(x[1])))
    show(f"{n} astype", lambda: (x.astype(jnp.float32), x.astype(jnp.int32), x.astype(jnp.float16),
                                x.astype(jnp.bfloat16), x.astype(jnp.uint8), x.astype(bool)))
    show(f"{n} from int", lambda: jnp.arange(-8, 8).astype(t))
    show(f"{n} create", lambda: (jnp.arange(5, dtype=t), jnp.zeros(3, t), jnp.ones(2, t),
                                jnp.full((2,), 2.5, t)))
    show(f"{n} index", lambda: (x[1], x[:, 2], x[jnp.array([0, 2])], x.at[0, 1].set(2.0),
                               x.at[1].add(1.0)))
    show(f"{n} shape", lambda: (x.T, x.reshape(3, 8), jnp.concatenate([x, y]), jnp.stack([x, y])))
    show(f"{n} jit", lambda: jax.jit(lambda a, b: a * b + a)(x, y))
    show(f"{n} vmap", lambda: jax.vmap(lambda r: jnp.max(r) - r)(x))
    show(f"{n} grad", lambda: jax.grad(
        lambda a: (a.astype(t).astype(jnp.float32) ** 2).sum())(jnp.asarray(base)))
    show(f"{n} grad narrow", lambda: jax.grad(lambda a: (a * a).sum().astype(jnp.float32))(x))
    show(f"{n} promote f32", lambda: x + jnp.ones(1, jnp.float32))
    show(f"{n} promote bf16", lambda: x + jnp.ones(1, jnp.bfloat16))
    show(f"{n} promote int", lambda: x + jnp.ones(1, jnp.int8))
    show(f"{n} finfo", lambda: np.array([float(jnp.finfo(t).max), float(jnp.finfo(t).eps),
                                         float(jnp.finfo(t).tiny)], np.float32))
    show(f"{n} scalar", lambda: (t(2.5), t(2.5) * 2))


for name in NAMES:
    cases(name)
