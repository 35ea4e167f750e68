"""`jax.ref`: mutable array references (see `ember._src.state`)."""

from ember._src.state import Ref as Ref
from ember._src.state import empty_ref as empty_ref
from ember._src.state import freeze as freeze
from ember._src.state import new_ref as new_ref
from ember._src.state import ref_addupdate as addupdate
from ember._src.state import ref_get as get
from ember._src.state import ref_set as set  # noqa: A001  (JAX's name)
from ember._src.state import ref_swap as swap

__all__ = ["Ref", "addupdate", "empty_ref", "freeze", "get", "new_ref", "set", "swap"]
