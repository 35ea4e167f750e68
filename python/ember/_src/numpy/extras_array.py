"""jax.numpy functions on Ember's ops: array construction and manipulation,
index helpers, function application, bit packing, dtype names."""

__all__ = []
