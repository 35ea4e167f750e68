"""`ember.flatten_util`: JAX's `jax.flatten_util` (`ravel_pytree`)."""

from ember._src.flatten_util import ravel_pytree as ravel_pytree

__all__ = ["ravel_pytree"]
