"""`jax.interpreters`: the rule tables of users' primitives."""

from . import ad, batching, mlir  # noqa: F401
