"""`jax.scipy.sparse`: the iterative solvers of `linalg` (JAX has no sparse
matrix types here either)."""

from ember.scipy.sparse import linalg  # noqa: F401
