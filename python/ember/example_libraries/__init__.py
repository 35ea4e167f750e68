"""ember.example_libraries: JAX's example libraries (stax, optimizers) on Ember.

    from ember.example_libraries import stax, optimizers

Like ``jax.example_libraries``, these are small reference libraries: a neural-net
layer combinator library (``stax``) and first-order optimizers with step-size
schedules (``optimizers``), with JAX's signatures and semantics.
"""

from ember.example_libraries import optimizers, stax  # noqa: F401
