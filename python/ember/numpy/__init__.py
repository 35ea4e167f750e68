"""ember.numpy: the jax.numpy API (implemented in `ember._src.numpy`)."""

from ember._src.numpy.array_api import __array_api_version__ as __array_api_version__
from ember._src.numpy.array_api import __array_namespace_info__ as __array_namespace_info__
from ember._src.numpy.array_methods import install as _install_array_methods
from ember._src.numpy.einsum import einsum as einsum
from ember._src.numpy.extras_array import *  # noqa: F403
from ember._src.numpy.extras_array import jnp_ufuncs as _jnp_ufuncs
from ember._src.numpy.extras_math import *  # noqa: F403
from ember._src.numpy.lax_numpy import *  # noqa: F403
from ember.numpy import fft as fft
from ember.numpy import linalg as linalg

# JAX's ufunc objects (`jnp.add.outer`, `jnp.multiply.reduce`, ...).
globals().update(_jnp_ufuncs())
del _jnp_ufuncs

# The operators and methods of arrays (`x + y`, `x[i]`, `x.at`, `x.sum()`, ...).
_install_array_methods()
del _install_array_methods
