"""ember.tree_util: JAX's pytree utilities."""

from ember._src.tree_util import *  # noqa: F401,F403
from ember._src.tree_util import (  # noqa: F401
    Partial,
    PyTreeDef,
    all_leaves,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    tree_all,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
)
