"""`ember.stages` as `jax.stages`: the types of the ahead-of-time stages of
`jit(f)`: `Wrapped` (the jitted function), `Traced` (`.trace(...)`),
`Lowered` (`.lower(...)`), `Compiled` (`.lower(...).compile()`), and
`ArgInfo` (an argument of a stage: `args_info`)."""

__all__ = ["ArgInfo", "Compiled", "Lowered", "Traced", "Wrapped"]

from ember._src.api import ArgInfo as ArgInfo
from ember._src.api import Compiled as Compiled
from ember._src.api import JitWrapped as Wrapped
from ember._src.api import Lowered as Lowered
from ember._src.api import Traced as Traced
