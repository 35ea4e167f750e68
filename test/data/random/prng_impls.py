"""JAX's PRNG implementations: threefry2x32, rbg, unsafe_rbg and JAX 0.10's
counter-based philox2x32, philox4x32 and threefry4x32: seeds,
split, fold_in, bits and the samplers, with typed keys, raw keys under
`jax_default_prng_impl`, under `jit` and `vmap`. Run with IMPORT=jax (in a
JAX venv) to record `prng_impls.jax.txt` (JAX 0.10.2 on the CPU, whose rbg
bits come from XLA:CPU's Philox generator), with IMPORT=ember to compare
(test_random.py)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "numerics"))
from cases import jax, jnp, shows  # noqa: E402

random = jax.random


def text(v):
    if jnp.issubdtype(v.dtype, jax.dtypes.prng_key):
        return f"{v.dtype}{list(v.shape)} " + text(random.key_data(v))
    a = np.asarray(v)
    if a.dtype.kind == "f":
        return f"{a.dtype.name}{list(a.shape)} " + " ".join(f"{x:.6g}" for x in a.ravel())
    return f"{a.dtype.name}{list(a.shape)} " + " ".join(str(x) for x in a.ravel())


show = shows(text)
for impl in ["threefry2x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32", "threefry4x32"]:
    k = random.key(42, impl=impl)
    s = random.split(k, 4)
    show(f"{impl} key", lambda: k)
    show(f"{impl} impl", lambda: jnp.array(random.key_impl(k) == impl))
    show(f"{impl} PRNGKey", lambda: random.PRNGKey(7, impl=impl))
    show(f"{impl} split", lambda: s)
    show(f"{impl} split 2x3", lambda: random.split(k, (2, 3)))
    show(f"{impl} fold_in", lambda: random.fold_in(k, 12345))
    show(f"{impl} fold_in twice", lambda: random.fold_in(random.fold_in(k, 1), 2))
    for dt in [jnp.uint8, jnp.uint16, jnp.uint32]:
        show(f"{impl} bits {np.dtype(dt).name}", lambda: random.bits(k, (7,), dt))
    show(f"{impl} bits (2,3)", lambda: random.bits(s[2], (2, 3)))
    show(f"{impl} uniform", lambda: random.uniform(k, (5,)))
    show(f"{impl} uniform bf16", lambda: random.uniform(k, (4,), jnp.bfloat16))
    show(f"{impl} normal", lambda: random.normal(s[1], (2, 3)))
    show(f"{impl} randint", lambda: random.randint(k, (8,), -5, 50))
    show(f"{impl} permutation", lambda: random.permutation(k, 10))
    show(f"{impl} choice", lambda: random.choice(k, 20, (4,), replace=False))
    show(f"{impl} choice p", lambda: random.choice(k, 5, (6,), p=jnp.array([.1, .2, .3, .2, .2])))
    show(f"{impl} categorical", lambda: random.categorical(k, jnp.zeros((2, 5)), axis=-1))
    show(f"{impl} bernoulli", lambda: random.bernoulli(k, 0.5, (10,)))
    show(f"{impl} truncated_normal", lambda: random.truncated_normal(k, -1.0, 2.0, (4,)))
    show(f"{impl} gumbel", lambda: random.gumbel(k, (3,)))
    show(f"{impl} exponential", lambda: random.exponential(k, (3,)))
    show(f"{impl} laplace", lambda: random.laplace(k, (3,)))
    show(f"{impl} gamma", lambda: random.gamma(k, jnp.array([0.3, 1.0, 2.5, 9.0])))
    show(f"{impl} beta", lambda: random.beta(k, 2.0, 0.5, (3,)))
    show(f"{impl} dirichlet", lambda: random.dirichlet(k, jnp.array([1.0, 2.0, 3.0])))
    show(f"{impl} multivariate_normal",
         lambda: random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2), (3,)))
    show(f"{impl} poisson", lambda: random.poisson(k, 3.0, (3,)))
    show(f"{impl} jit normal", lambda: jax.jit(lambda q: random.normal(q, (3,)))(k))
    show(f"{impl} jit split", lambda: jax.jit(lambda q: random.split(q, 3))(k))
    show(f"{impl} vmap uniform", lambda: jax.vmap(lambda q: random.uniform(q, (2,)))(s))
    show(f"{impl} vmap fold_in", lambda: jax.vmap(lambda q: random.fold_in(q, 3))(s))
    show(f"{impl} vmap split", lambda: jax.vmap(lambda q: random.split(q))(s))
    show(f"{impl} wrap_key_data",
         lambda: random.wrap_key_data(jnp.arange(k.itemsize // 4, dtype=jnp.uint32), impl=impl))
    show(f"{impl} key_dtype", lambda: jnp.array(str(random.key_dtype(impl)) == str(k.dtype)))
    with jax.default_prng_impl(impl):
        r = random.PRNGKey(3)
        show(f"{impl} default raw key", lambda: r)
        show(f"{impl} default raw split", lambda: random.split(r))
        show(f"{impl} default raw uniform", lambda: random.uniform(r, (3,)))
        show(f"{impl} default jit raw", lambda: jax.jit(lambda: random.normal(random.PRNGKey(5)))())
show("wrong width", lambda: random.wrap_key_data(jnp.zeros(2, jnp.uint32), impl="rbg"))
show("mixed stack", lambda: jnp.stack([random.key(0), random.key(0, impl="rbg")]))
show("unknown impl", lambda: random.key(0, impl="nope"))
jax.config.update("jax_enable_x64", True)
for impl in ["threefry2x32", "rbg", "philox2x32", "philox4x32", "threefry4x32"]:
    k = random.key(2**40 + 5, impl=impl)
    show(f"x64 {impl} key", lambda: k)
    show(f"x64 {impl} bits uint64", lambda: random.bits(k, (3,), jnp.uint64))
    show(f"x64 {impl} uniform f64", lambda: random.uniform(k, (3,), jnp.float64))
