"""`jax.extend`: interfaces for building on Ember (`core.Primitive`)."""

from . import backend, core, random  # noqa: F401
