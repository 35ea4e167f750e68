"""jax.numpy functions on Ember's ops: polynomials, set operations, number
theory, window functions, statistics and float decomposition."""

__all__ = []
