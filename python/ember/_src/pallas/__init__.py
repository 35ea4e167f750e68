"""Pallas: kernels over refs (JAX's `jax.experimental.pallas`)."""
