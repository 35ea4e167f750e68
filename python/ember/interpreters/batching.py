"""`jax.interpreters.batching`: batching rules of users' primitives."""

from ember._src.primitive import defbroadcasting as defbroadcasting
from ember._src.primitive import defvectorized as defvectorized
from ember._src.primitive import primitive_batchers as primitive_batchers

not_mapped = None

__all__ = ["defbroadcasting", "defvectorized", "not_mapped", "primitive_batchers"]
