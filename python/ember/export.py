"""`jax.export`: export a jitted function, serialize it, load and call it
(see `ember._src.export`)."""

from ember._src.export import DisabledSafetyCheck as DisabledSafetyCheck
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
