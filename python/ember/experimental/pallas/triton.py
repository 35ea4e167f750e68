"""`ember.experimental.pallas.triton`: JAX's `jax.experimental.pallas.triton`."""

from ember._src.pallas.triton import *  # noqa: F401,F403
from ember._src.pallas.triton import __all__  # noqa: F401
