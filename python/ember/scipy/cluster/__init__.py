"""`jax.scipy.cluster`: vector quantization (`vq`)."""

from ember.scipy.cluster import vq  # noqa: F401
