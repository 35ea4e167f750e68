"""The public `ember.Array` (JAX's `jax.Array`): an abstract class for
`isinstance` checks and annotations that concrete arrays, tracers and key
arrays all belong to, as in JAX. Ember's own code tests for `core.Array`
(the concrete class) on its hot paths; this class is for users' checks."""

import abc

from . import core, prng


class Array(abc.ABC):  # noqa: B024 (abstract by registration, as JAX's)
    """An array: concrete, traced, or an array of PRNG keys."""

    __slots__ = ()


Array.register(core.Array)
Array.register(core.Tracer)
Array.register(prng.PRNGKeyArray)
