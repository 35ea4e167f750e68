"""`lax.rng_bit_generator` bit for bit: one line per case with the new key
and the bits, for each algorithm, unsigned dtype and shape (even, odd,
scalar, several dimensions, a counter that carries). Run with IMPORT=jax
(in a JAX venv) to record `rng_bit_generator.jax.txt` (JAX 0.10.2 on the
CPU, XLA:CPU's generators), with IMPORT=ember to compare
(test_lax_extras.py)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "numerics"))
from cases import jax, jnp, shows  # noqa: E402

lax = jax.lax


def text(v):
    a = np.asarray(v)
    return f"{a.dtype.name}{list(a.shape)} " + " ".join(str(int(x)) for x in a.ravel())


show = shows(text)
keys = {"small": [1, 2, 3, 4], "big": [0xDEADBEEF, 0x12345678, 0xFFFFFFFE, 0xFFFFFFFF],
        "zero": [0, 0, 0, 0]}
algs = {"default": lax.RandomAlgorithm.RNG_DEFAULT, "philox": lax.RandomAlgorithm.RNG_PHILOX,
        "threefry": lax.RandomAlgorithm.RNG_THREE_FRY}
for kname, kv in keys.items():
    key = jnp.array(kv, jnp.uint32)
    for aname, alg in algs.items():
        for shape in [(), (1,), (5,), (8,), (3, 4), (3, 5), (2, 3, 7), (7, 3), (4, 1, 3)]:
            for dt in [np.uint8, np.uint16, np.uint32]:
                show(f"{kname} {aname} {shape} {np.dtype(dt).name}",
                     lambda: lax.rng_bit_generator(key, shape, dt, alg))
key = jnp.array(keys["small"], jnp.uint32)
show("jit philox", lambda: jax.jit(lambda k: lax.rng_bit_generator(k, (6,)))(key))
show("jit threefry",
     lambda: jax.jit(lambda k: lax.rng_bit_generator(k, (3, 3), np.uint32,
                                                     lax.RandomAlgorithm.RNG_THREE_FRY))(key))
show("vmap philox", lambda: jax.vmap(lambda k: lax.rng_bit_generator(k, (5,)))(
    jnp.stack([key, key + 1, key * 7])))
show("chain philox", lambda: lax.rng_bit_generator(lax.rng_bit_generator(key, (9,))[0], (4,)))
show("bad dtype", lambda: lax.rng_bit_generator(key, (3,), np.int32))
# 64-bit results (with x64 on): Philox joins pairs of words, Threefry one
# counter per element.
jax.config.update("jax_enable_x64", True)
for aname, alg in algs.items():
    for shape in [(), (5,), (3, 4), (2, 3, 3)]:
        show(f"x64 {aname} {shape} uint64",
             lambda: lax.rng_bit_generator(jnp.array(keys["big"], jnp.uint32), shape, np.uint64, alg))
