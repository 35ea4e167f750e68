"""jax.lax functions on Ember's ops beyond the primitives of lax.py."""

__all__ = []
