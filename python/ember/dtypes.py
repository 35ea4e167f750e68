"""ember.dtypes: JAX's `jax.dtypes` (the extended dtype classes for key
arrays, and dtype helpers)."""

from ember._src.dtypes import TypePromotionError as TypePromotionError
from ember._src.dtypes import bfloat16 as bfloat16
from ember._src.dtypes import canonicalize_dtype as canonicalize_dtype
from ember._src.dtypes import float0 as float0
from ember._src.dtypes import itemsize_bits as itemsize_bits
from ember._src.dtypes import scalar_type_of as scalar_type_of
from ember._src.numpy.lax_numpy import finfo as finfo
from ember._src.numpy.lax_numpy import iinfo as iinfo
from ember._src.numpy.lax_numpy import issubdtype as issubdtype
from ember._src.numpy.lax_numpy import result_type as result_type
from ember._src.prng import extended as extended
from ember._src.prng import prng_key as prng_key

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]
