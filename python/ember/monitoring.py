"""`ember.monitoring` as `jax.monitoring`: events and their listeners."""

from ember._src.monitoring import *  # noqa: F403
from ember._src.monitoring import __all__ as __all__  # noqa: F401
