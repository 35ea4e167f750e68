"""ember.numpy.fft: jax.numpy.fft (implemented in `ember._src.numpy.fft`, where
`ember.lax.fft` shares it)."""

from ember._src.numpy.fft import *  # noqa: F403
from ember._src.numpy.fft import __all__ as __all__  # noqa: F401
