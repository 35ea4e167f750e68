"""`ember.experimental.random`: JAX's stateful PRNG
(`jax.experimental.random.stateful_rng`), a key and a counter held in a
`Ref`; every draw folds the counter into the key and increments it, so
draws are implicitly updated, also under `jit`.

Ember writes this itself (the algorithm is JAX's, documented in its JEP
28845): fold_in(base_key, counter), then split for shaped keys. The key is
a typed key array (`random.key`), so a split generator's key has the split
shape.
"""

import dataclasses
import operator

import numpy as np

from ember import random
from ember._src import core, state, tree_util
from ember.numpy import asarray, zeros


def _size(size, *args):
    if size is None:
        return tuple(np.broadcast_shapes(*(np.shape(a) for a in args)))
    if isinstance(size, (int, np.integer)):
        return (operator.index(size),)
    return tuple(operator.index(s) for s in size)


@dataclasses.dataclass(frozen=True)
class StatefulPRNG:
    """A random generator that updates itself: `rng.uniform()` twice gives
    two different draws. Make one with `stateful_rng(seed)`."""

    _base_key: object
    _counter: object

    def __post_init__(self):
        if not isinstance(self._counter, state.Ref):
            raise ValueError(f"Expected counter to be a scalar integer ref; got {self._counter}")

    def __repr__(self):
        return f"StatefulPRNG(_base_key={self._base_key!r}, _counter={self._counter!r})"

    def key(self, shape=()):
        """A new key (or keys of `shape`); advances the generator."""
        if self._base_key.ndim:
            raise ValueError("cannot operate on split stateful generator")
        key = random.fold_in(self._base_key, state.ref_get(self._counter))
        state.ref_addupdate(self._counter, ..., 1)
        shape = _size(shape)
        return random.split(key, shape) if shape else key

    def random(self, size=None, dtype=float):
        """Floats in [0, 1)."""
        return random.uniform(self.key(), shape=_size(size), dtype=dtype)

    def uniform(self, low=0, high=1, size=None, *, dtype=float):
        return random.uniform(self.key(), _size(size, low, high), minval=low, maxval=high,
                              dtype=dtype)

    def normal(self, loc=0, scale=1, size=None, *, dtype=float):
        norm = random.normal(self.key(), _size(size, loc, scale), dtype)
        return (asarray(loc) + asarray(scale) * norm).astype(dtype)

    def integers(self, low, high=None, size=None, *, dtype=int):
        if high is None:
            low, high = 0, low
        return random.randint(self.key(), _size(size, low, high), minval=low, maxval=high,
                              dtype=dtype)

    def split(self, num):
        """One generator holding `num` (an int or a shape) independent ones,
        to be mapped over by `vmap`."""
        shape = _size(num)
        return StatefulPRNG(self.key(shape), state.new_ref(zeros(shape, dtype=int)))

    def spawn(self, n_children):
        """A list of `n_children` independent generators."""
        return [StatefulPRNG(k, state.new_ref(0)) for k in self.key(n_children)]


tree_util.register_pytree_node(
    StatefulPRNG, lambda r: ((r._base_key, r._counter), None),
    lambda _, children: StatefulPRNG(*children))


def stateful_rng(seed=None, *, impl=None):
    """A `StatefulPRNG` seeded with `seed` (from NumPy's entropy when None,
    which only the top level of a program may ask for)."""
    if seed is None:
        if core._trace_stack:
            raise TypeError("When used within transformed code, "
                            "jax.experimental.random.stateful_rng() requires an explicit "
                            "seed to be set.")
        entropy = np.random.SeedSequence().entropy
        seed = np.int64(entropy & np.iinfo(np.int64).max)
    return StatefulPRNG(random.key(seed, impl=impl), state.new_ref(0))


__all__ = ["StatefulPRNG", "stateful_rng"]
