"""Exception types with JAX's names."""

from ember._src.core import (  # noqa: F401
    ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError,
    TracerIntegerConversionError, EmberInternalError,
)
from ember._src.indexing import NonConcreteBooleanIndexError  # noqa: F401
