"""ember.experimental.compilation_cache: JAX's module of that name."""
