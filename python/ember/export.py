"""`jax.export`: export a jitted function, serialize it, load and call it
(see `ember._src.export`)."""

import re

from ember._src.export import Exported as Exported
from ember._src.export import default_export_platform as default_export_platform
from ember._src.export import deserialize as deserialize
from ember._src.export import export as export
from ember._src.export import from_stablehlo as from_stablehlo
from ember._src.export import (
    maximum_supported_calling_convention_version as maximum_supported_calling_convention_version,
)
from ember._src.export import (
    minimum_supported_calling_convention_version as minimum_supported_calling_convention_version,
)
from ember._src.export import symbolic_args_specs as symbolic_args_specs
from ember._src.export import symbolic_shape as symbolic_shape
from ember._src.shape_poly import DimExpr as DimExpr
from ember._src.shape_poly import InconclusiveDimensionOperation as InconclusiveDimensionOperation
from ember._src.shape_poly import SymbolicScope as SymbolicScope
from ember._src.shape_poly import UnexpectedDimVar as UnexpectedDimVar
from ember._src.shape_poly import is_symbolic_dim as is_symbolic_dim
from ember._src.tree_util import (
    _register_namedtuple_serialization as register_namedtuple_serialization,
)
from ember._src.tree_util import (
    _register_pytree_node_serialization as register_pytree_node_serialization,
)

__all__ = ["DimExpr", "DisabledSafetyCheck", "Exported", "InconclusiveDimensionOperation",
           "SymbolicScope",
           "UnexpectedDimVar", "default_export_platform", "deserialize", "export", "from_stablehlo",
           "maximum_supported_calling_convention_version",
           "is_symbolic_dim", "minimum_supported_calling_convention_version",
           "register_namedtuple_serialization", "register_pytree_node_serialization",
           "symbolic_args_specs", "symbolic_shape"]


class DisabledSafetyCheck:
    """A safety check to skip on (de)serialization: build with
    `DisabledSafetyCheck.platform()` or `.custom_call(target_name)`."""

    def __init__(self, _impl):
        self._impl = _impl

    @classmethod
    def platform(cls):
        """Allows the compilation platform to differ from the export platform."""
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name):
        """Allows serializing a call to the custom call target `target_name`."""
        return cls(f"custom_call:{target_name}")

    def is_custom_call(self):
        """The custom call target this allows, or None."""
        m = re.match(r"custom_call:(.+)$", self._impl)
        return m.group(1) if m else None

    def __str__(self):
        return self._impl

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)
