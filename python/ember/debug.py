"""`ember.debug`: printing and callbacks from compiled code (like `jax.debug`)."""

from ember._src.callback import debug_callback as callback  # noqa: F401
from ember._src.callback import debug_print as print  # noqa: F401
