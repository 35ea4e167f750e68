"""`jax.interpreters.mlir`: lowering rules of users' primitives (their
operands are Ember values; see `ember._src.lib.mlir.dialects.hlo`)."""

from ember._src.primitive import LoweringRuleContext as LoweringRuleContext
from ember._src.primitive import lower_fun as lower_fun
from ember._src.primitive import register_lowering as register_lowering

__all__ = ["LoweringRuleContext", "lower_fun", "register_lowering"]
