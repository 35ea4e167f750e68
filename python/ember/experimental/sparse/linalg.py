"""`ember.experimental.sparse.linalg`: JAX's `jax.experimental.sparse.linalg`
(`spsolve`, `lobpcg_standard`; see `ember._src.sparse_linalg`)."""

from ember._src.sparse_linalg import lobpcg_standard as lobpcg_standard
from ember._src.sparse_linalg import spsolve as spsolve
