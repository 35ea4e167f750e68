"""ember.tree: JAX's `jax.tree` module (short names for `tree_util`)."""

from ember._src.tree_util import static as static
from ember._src.tree_util import tree_all as all  # noqa: A004
from ember._src.tree_util import tree_broadcast as broadcast
from ember._src.tree_util import tree_flatten as flatten
from ember._src.tree_util import tree_flatten_with_path as flatten_with_path
from ember._src.tree_util import tree_leaves as leaves
from ember._src.tree_util import tree_leaves_with_path as leaves_with_path
from ember._src.tree_util import tree_map as map  # noqa: A004
from ember._src.tree_util import tree_map_with_path as map_with_path
from ember._src.tree_util import tree_reduce as reduce
from ember._src.tree_util import tree_reduce_associative as reduce_associative
from ember._src.tree_util import tree_structure as structure
from ember._src.tree_util import tree_transpose as transpose
from ember._src.tree_util import tree_unflatten as unflatten

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]
