"""Names JAX's tutorials reach under `jax._src.lib` (see `mlir.dialects.hlo`)."""
