"""`ember.experimental`: APIs JAX keeps under `jax.experimental`."""

from ember._src.callback import io_callback  # noqa: F401
