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


class JaxRuntimeError(RuntimeError):
    """An error while compiled code ran: as JAX, an exception raised by a
    host callback (`pure_callback`, `io_callback`, `debug.callback` under
    `jit`, ...) reaches the caller as this, with JAX's text ("INTERNAL:
    CpuCallback error calling callback: " and the callback's traceback).
    Beyond JAX, the error is also an instance of the callback's exception
    class where Python allows (`callback.callback_error`), so `except ValueError`
    keeps working."""

