"""JAX's `ravel_pytree` (`jax.flatten_util`): a pytree of arrays as one
flat vector, and the function that makes the tree again (also used by
`odeint`, whose state is any pytree)."""

import numpy as np

from . import dtypes, tree_util
from .numpy import lax_numpy as jnp


def ravel_pytree(pytree):
    """(one 1-D array of every leaf raveled in order, unravel). With leaves
    of several dtypes the vector has their promoted dtype and unravel
    converts each leaf back (and takes only that dtype); with one dtype
    unravel takes any. No leaves: an empty float32 vector."""
    leaves, treedef = tree_util.tree_flatten(pytree)
    leaves = [jnp.asarray(x) for x in leaves]
    if not leaves:
        return jnp.zeros((0,), np.float32), lambda v, lead=(): tree_util.tree_unflatten(
            treedef, [])
    shapes = [x.shape for x in leaves]
    from_dtypes = [x.dtype for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    to_dtype = jnp.result_type(*leaves)
    single = all(dt == to_dtype for dt in from_dtypes)
    flat = jnp.concatenate([jnp.ravel(x).astype(to_dtype) for x in leaves])
    offsets = np.cumsum([0] + sizes)

    def unravel(v, lead=()):
        """`v` of shape lead + (n,) into the tree, each leaf lead + shape
        (`lead` is Ember's, for vmapped solvers)."""
        v = jnp.asarray(v)
        if not single and v.dtype != to_dtype:
            raise TypeError(f"unravel function given array of dtype {v.dtype}, but expected "
                            f"dtype {dtypes.canonicalize_dtype(to_dtype)}")
        if v.shape[len(lead):] != (int(offsets[-1]),):
            raise ValueError(f"The unravel function expected an array of shape "
                             f"{(int(offsets[-1]),)}, got shape {v.shape}.")
        parts = []
        for start, size, shape, dt in zip(offsets[:-1], sizes, shapes, from_dtypes):
            part = jnp.reshape(v[..., int(start):int(start) + size], tuple(lead) + tuple(shape))
            parts.append(part if single else part.astype(dt))
        return tree_util.tree_unflatten(treedef, parts)

    return flat, unravel
