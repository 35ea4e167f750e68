"""`random_bcoo`: JAX's random BCOO arrays (its key use, so the same key
draws the same array)."""

import math
import operator

import numpy as np

from ember import numpy as jnp
from ember import random
from ember._src.batching import vmap
from ember._src.sparse import BCOO, bcoo_sort_indices


def random_bcoo(key, shape, *, dtype=jnp.float_, indices_dtype=None, nse=0.2, n_batch=0,
                n_dense=0, unique_indices=True, sorted_indices=False,
                generator=random.uniform, **kwds):
    """A random BCOO array: `nse` entries per batch point (or, below 1, that
    fraction of the sparse size, rounded up) at positions drawn by
    `random.choice` (distinct with `unique_indices`), values from
    `generator(key, shape=, dtype=)`."""
    shape = tuple(operator.index(s) for s in shape)
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
    n_sparse = len(shape) - n_batch - n_dense
    batch, sp, dense = shape[:n_batch], shape[n_batch:n_batch + n_sparse], \
        shape[n_batch + n_sparse:]
    size = math.prod(sp)
    if not 0 <= nse < size:
        raise ValueError(f"got nse={nse}, expected to be between 0 and {size}")
    if 0 < nse < 1:
        nse = int(math.ceil(nse * size))
    nse = operator.index(nse)
    indices_dtype = np.dtype(indices_dtype or jnp.asarray(0).dtype)  # (the default int)
    if size > np.iinfo(indices_dtype).max:
        raise ValueError(f"indices_dtype={indices_dtype} does not have enough range to "
                         f"generate sparse indices of size {size}.")

    def positions(k):
        if not sp:
            return jnp.zeros((nse, n_sparse), indices_dtype)
        flat = random.choice(k, size, shape=(nse,), replace=not unique_indices)
        return jnp.column_stack(jnp.unravel_index(flat.astype(indices_dtype), sp))

    # (JAX's keys: the data's first, then one per batch point's indices)
    keys = random.split(key, math.prod(batch) + 1)
    data = generator(keys[0], shape=batch + (nse,) + dense, dtype=dtype, **kwds)
    indices = vmap(positions)(keys[1:]).reshape(batch + (nse, n_sparse))
    mat = BCOO((data, indices), shape=shape)
    return bcoo_sort_indices(mat) if sorted_indices else mat
