"""ember.ops: JAX's `jax.ops` (segment reductions)."""

from ember._src.ops import segment_max as segment_max
from ember._src.ops import segment_min as segment_min
from ember._src.ops import segment_prod as segment_prod
from ember._src.ops import segment_sum as segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
