"""`ember.experimental.jet`: JAX's `jax.experimental.jet` (Taylor-mode
higher-order derivatives along a curve; see `ember._src.jet`)."""

from ember._src.jet import jet as jet

__all__ = ["jet"]
