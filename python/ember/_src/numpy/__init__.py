"""The jax.numpy implementation (`ember.numpy` re-exports it). Deliberately
empty: importing one submodule must not import the others (`linalg` sits
above `ad` and `control_flow`, which use `lax_numpy`)."""
