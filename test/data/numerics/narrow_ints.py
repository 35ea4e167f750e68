"""2- and 4-bit integers (ml_dtypes' int2, int4, uint2, uint4): one line per
case with each result's dtype and values. Run with IMPORT=jax (in a JAX
venv) to record `narrow_ints.jax.txt` (JAX 0.10.2 on the CPU), with
IMPORT=ember to compare (test_narrow_dtypes.py).

The cases are conversions (wrapping from integers, saturating from
floats), arithmetic that wraps, division, bit operations, comparisons,
reductions, products, sorting, shape ops, indexing, `jit`, `vmap`,
weak-typed scalars, JAX's promotion errors and its `abs` error. For 2-bit
integers only what XLA 0.10.2 runs (it fails on their reductions and
products, and aborts on their reshapes and sorts)."""
import numpy as np
from cases import jax, jnp, shows

NAMES = ["int4", "uint4", "int2", "uint2"]


def text(v):
    a = np.asarray(v)
    if a.dtype.kind == "f":
        vals = " ".join(f"{x:.9g}" for x in a.ravel())
    else:
        vals = " ".join(str(int(x)) for x in a.astype(np.int64).ravel())
    return f"{a.dtype.name}{list(a.shape)} {vals}"


show = shows(text)
rng = np.random.default_rng(12)
wide = rng.integers(-40, 40, size=(4, 6)).astype(np.int32)
floats = np.array([np.nan, np.inf, -np.inf, 0.0, -0.5, 0.5, 1.5, 2.5, 7.9, -8.9, 100.0, -3.0],
                  np.float32)


def cases(n):
    t = getattr(jnp, n)
    info = jnp.iinfo(t)
    x = jnp.asarray(np.clip(wide, info.min, info.max)).astype(t)
    y = jnp.asarray(np.clip(wide[::-1] // 5, info.min, info.max)).astype(t)
    show(f"{n} iinfo", lambda: np.array([info.min, info.max, info.bits]))
    show(f"{n} convert", lambda: (jnp.asarray(wide).astype(t), jnp.asarray(floats).astype(t)))
    show(f"{n} arith", lambda: (x + y, x - y, x * y, -x))
    show(f"{n} abs", lambda: jnp.abs(x))
    show(f"{n} divide", lambda: (x // jnp.where(y == 0, 1, y).astype(t), x % jnp.where(
        y == 0, 1, y).astype(t)))
    show(f"{n} bits", lambda: (x & y, x | y, x ^ y, ~x, x << 1, x >> 1))
    show(f"{n} weak", lambda: (x + 1, x * 2, 1 - x))
    show(f"{n} compare", lambda: (x > y, x == y, jnp.maximum(x, y), jnp.minimum(x, y),
                                 jnp.where(x > y, x, y)))
    show(f"{n} astype", lambda: (x.astype(jnp.float32), x.astype(jnp.int32), x.astype(jnp.int8),
                                x.astype(jnp.uint8), x.astype(bool), x.astype(jnp.bfloat16)))
    show(f"{n} create", lambda: (jnp.arange(3, dtype=t), jnp.zeros(3, t), jnp.ones(2, t),
                                jnp.full((2,), 1, t)))
    show(f"{n} promote int8", lambda: x + jnp.ones(1, jnp.int8))
    show(f"{n} promote f32", lambda: x + jnp.ones(1, jnp.float32))
    show(f"{n} scalar", lambda: (t(1), t(1) + 1))
    show(f"{n} jit", lambda: jax.jit(lambda a, b: a * b + a)(x, y))
    if info.bits == 2:
        return
    show(f"{n} reduce", lambda: (jnp.sum(x, dtype=t), jnp.max(x, axis=1), jnp.min(x),
                                jnp.argmax(x, axis=0)))
    show(f"{n} dot", lambda: jnp.matmul(x, y.T, preferred_element_type=jnp.int32))
    show(f"{n} sort", lambda: (jnp.sort(x, axis=1), jnp.argsort(x[1])))
    show(f"{n} index", lambda: (x[1], x[:, 2], x[jnp.array([0, 2])], x.at[0, 1].set(1),
                               x.at[1].add(1)))
    show(f"{n} shape", lambda: (x.T, x.reshape(3, 8), jnp.concatenate([x, y]), jnp.stack([x, y])))
    show(f"{n} vmap", lambda: jax.vmap(lambda r: jnp.max(r) - r)(x))


for name in NAMES:
    cases(name)
