"""Exception types with JAX's names (re-exported by `ember.errors`)."""


class ConcretizationTypeError(TypeError):
    pass


class TracerArrayConversionError(TypeError):
    pass


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(TypeError):
    pass


class NonConcreteBooleanIndexError(IndexError):
    pass


class EmberInternalError(RuntimeError):
    """A verifier or pipeline failure on IR Ember produced: a bug in Ember."""


class ShardingTypeError(TypeError):
    """Operands whose shardings (over Explicit mesh axes) give no result
    sharding (JAX's `ShardingTypeError`, there an `Exception`; here also a
    `TypeError`, as the sharding is part of the type)."""
