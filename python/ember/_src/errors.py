"""Exception types with JAX's names (re-exported by `ember.errors`)."""


from .shape_poly import InconclusiveDimensionOperation as InconclusiveDimensionOperation


class JAXTypeError(TypeError):
    """The base of JAX's type errors (JAX's `jax.errors.JAXTypeError`)."""


class JAXIndexError(IndexError):
    """The base of JAX's index errors (JAX's `jax.errors.JAXIndexError`)."""


class ConcretizationTypeError(JAXTypeError):
    pass


class TracerArrayConversionError(JAXTypeError):
    pass


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(JAXTypeError):
    pass


class NonConcreteBooleanIndexError(JAXIndexError):
    pass


class UnexpectedTracerError(JAXTypeError):
    """A tracer used outside the transformation that made it (a leaked
    tracer). Ember itself reports those as a `TypeError`."""


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice (JAX's key-reuse checker; Ember has no checker,
    so raises none itself)."""


class JaxprTypeError(TypeError):
    """A jaxpr that fails type checking."""


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

