"""Top-level jax names on Ember's machinery: scopes, guards and caches,
array builders, custom gradients."""

__all__ = []
