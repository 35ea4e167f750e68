"""Arrays over 2 GiB and over 2**31 elements (#21): an elementwise product,
a sum, a max and an index on an int8 array of 2**31 + 2**26 elements, checked
against NumPy. Needs about 7 GB of memory; prints one line per check.

    .venv/bin/python tools/big_arrays.py
"""
import time

import numpy as np

import ember
import ember.numpy as jnp

n = (1 << 31) + (1 << 26)
x = np.ones(n, np.int8)
x[-1] = 5
t = time.perf_counter()
y = ember.jit(lambda v: v * 2)(x)
ok = y.shape == (n,) and int(y[-1]) == 10 and int(y[0]) == 2 and int(y[1 << 31]) == 2
print(f"x * 2 over {n} int8 elements ({n / 2**30:.2f} GiB): {ok}")
del y
s = ember.jit(lambda v: jnp.sum(v, dtype=jnp.int32))(x)
want = np.int64(x.sum(dtype=np.int64)).astype(np.int32)  # int32 wraps as in JAX
print(f"sum (int32, wrapping): {int(s) == int(want)}")
print(f"max: {int(ember.jit(jnp.max)(x)) == 5}")
print(f"x[n - 1]: {int(ember.jit(lambda v: v[n - 1])(x)) == 5}")
print(f"{time.perf_counter() - t:.1f} s")
