"""ember.tree_util: JAX's pytree utilities."""

from ember._src.tree_util import *  # noqa: F401,F403
from ember._src.tree_util import (  # noqa: F401
    PyTreeDef, Partial, register_pytree_node, register_pytree_node_class, register_dataclass,
    tree_flatten, tree_unflatten, tree_map, tree_leaves, tree_structure, tree_transpose,
    tree_reduce, tree_all, treedef_children, treedef_is_leaf, all_leaves,
    register_pytree_with_keys,
)
