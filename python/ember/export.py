"""`jax.export`: export a jitted function, serialize it, load and call it
(see `ember._src.export`)."""

from ember._src.export import Exported as Exported
from ember._src.export import deserialize as deserialize
from ember._src.export import export as export
from ember._src.export import from_stablehlo as from_stablehlo
from ember._src.export import symbolic_shape as symbolic_shape

__all__ = ["Exported", "deserialize", "export", "from_stablehlo", "symbolic_shape"]
