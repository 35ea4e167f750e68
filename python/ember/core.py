"""`jax.core`: the abstract values and tracers users' code checks for,
and `eval_jaxpr` over `make_jaxpr`'s view."""

from ember._src.core import ShapedArray as ShapedArray
from ember._src.core import Tracer as Tracer
from ember._src.jaxpr import eval_jaxpr as eval_jaxpr

__all__ = ["ShapedArray", "Tracer", "eval_jaxpr"]
