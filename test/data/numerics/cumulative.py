"""Derivatives of cumulative extremes (`lax.cummax`/`cummin`, `jnp`'s
`maximum.accumulate`-style scans) where elements tie: JAX differentiates its
associative scan of `max`, so equal elements share the tangent in the scan
tree's proportions (halves at each combination). One line per case with the
gradient (or JVP) values. Run with IMPORT=jax (in a JAX venv) to record
`cumulative.jax.txt` (JAX 0.10.2 on the CPU), with IMPORT=ember to compare
(test_numerics.py)."""
import numpy as np
from cases import jax, shows

lax = jax.lax


def text(v):
    a = np.asarray(v)
    return f"{a.dtype.name}{list(a.shape)} " + " ".join(f"{x:.9g}" for x in a.ravel())


show = shows(text)
rng = np.random.default_rng(7)
for n in [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31]:
    # Few distinct values: many ties, at every distance.
    x = rng.integers(0, 3, n).astype(np.float32)
    t = rng.standard_normal(n).astype(np.float32)
    for name in ["cummax", "cummin"]:
        op = getattr(lax, name)
        for rev in [False, True]:
            show(f"grad {name} n={n} reverse={rev}",
                 lambda: jax.grad(lambda v: (op(v, reverse=rev) * np.arange(1, n + 1)).sum())(x))
            show(f"jvp {name} n={n} reverse={rev}",
                 lambda: jax.jvp(lambda v: op(v, reverse=rev), (x,), (t,))[1])
x2 = rng.integers(0, 2, (3, 6, 5)).astype(np.float32)
w2 = rng.standard_normal((3, 6, 5)).astype(np.float32)
for axis in [0, 1, 2]:
    show(f"grad cummax 3d axis={axis}",
         lambda: jax.grad(lambda v: (lax.cummax(v, axis=axis) * w2).sum())(x2))
    show(f"jit grad cummin 3d axis={axis} reverse",
         lambda: jax.jit(jax.grad(lambda v: (lax.cummin(v, axis=axis, reverse=True) * w2).sum()))(x2))
show("vmap grad cummax",
     lambda: jax.vmap(jax.grad(lambda v: (lax.cummax(v) * np.arange(5.0)).sum()))(x2[0]))
show("grad cummax nan",
     lambda: jax.grad(lambda v: lax.cummax(v).sum())(np.array([1.0, np.nan, 1.0, 2.0], np.float32)))
show("grad cummax inf",
     lambda: jax.grad(lambda v: lax.cummax(v).sum())(np.array([-np.inf, -np.inf, 0.0, np.inf, np.inf], np.float32)))
show("grad jnp cumulative max",
     lambda: jax.grad(lambda v: jax.numpy.cumulative_sum(lax.cummax(v)).sum())(np.array([2.0, 2.0, 1.0, 2.0], np.float32)))
