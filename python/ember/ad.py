"""`jax.ad`: the entries of `vjp(...)[1].with_refs(...)` and the
placeholders it returns."""

from ember._src.ad import DidntWant as DidntWant
from ember._src.ad import DontWant as DontWant
from ember._src.ad import GradRef as GradRef
from ember._src.ad import GradValue as GradValue

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue"]
