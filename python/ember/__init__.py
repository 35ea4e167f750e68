"""Ember: a JAX-compatible array compiler on MLIR.

    import ember as jax
    import ember.numpy as jnp
"""

import importlib.util  # noqa: F401  (loaded by jax too; tools rely on it)

from ember._src.dtypes import config  # noqa: F401
from ember._src.core import Array, ShapeDtypeStruct, Device  # noqa: F401
from ember._src.api import (  # noqa: F401
    jit, eval_shape, device_put, device_get, devices, local_devices, device_count,
    default_backend, disable_jit, block_until_ready,
)
from ember._src.ad import (  # noqa: F401
    grad, value_and_grad, vjp, jvp, linearize, jacfwd, jacrev, jacobian, hessian,
    checkpoint, remat, checkpoint_policies, custom_jvp, custom_vjp,
)
from ember._src.batching import vmap  # noqa: F401
from ember._src.callback import pure_callback  # noqa: F401
from ember import numpy  # noqa: F401
from ember import lax  # noqa: F401
from ember import tree_util  # noqa: F401
from ember import nn  # noqa: F401
from ember import random  # noqa: F401
from ember import scipy  # noqa: F401
from ember import example_libraries  # noqa: F401
from ember import debug  # noqa: F401
from ember import experimental  # noqa: F401
from ember._src.tree_util import tree_map, tree_leaves, tree_structure  # noqa: F401
from ember._src import errors  # noqa: F401

__version__ = "0.1.0"


class _Tree:
    from ember._src.tree_util import (  # noqa: F401
        tree_map as map, tree_leaves as leaves, tree_structure as structure,
        tree_flatten as flatten, tree_unflatten as unflatten, tree_reduce as reduce,
        tree_transpose as transpose, tree_all as all,
    )


tree = _Tree
