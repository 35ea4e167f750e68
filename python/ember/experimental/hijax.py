"""`ember.experimental.hijax`: user-defined types (JAX's hijax; see
`docs/design.md`, "Hijax types")."""

from ember._src.core import ShapedArray  # noqa: F401
from ember._src.hijax import (  # noqa: F401
    GradAccum,
    VJPHiPrimitive,
    Zero,
    instantiate_zeros,
    vjp_from_jvp,
)
from ember._src.hitypes import (  # noqa: F401
    HiPspec,
    HiType,
    MappingSpec,
    register_hitype,
)
