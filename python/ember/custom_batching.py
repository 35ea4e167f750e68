"""`ember.custom_batching` as `jax.custom_batching`: functions with
user-defined vmap rules (see ember._src.custom_batching for where the rule
applies)."""

from ember._src.custom_batching import custom_vmap as custom_vmap
from ember._src.custom_batching import sequential_vmap as sequential_vmap
