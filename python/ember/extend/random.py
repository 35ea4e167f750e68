"""`jax.extend.random`: JAX's PRNG implementations as objects, keys seeded
with one, and the Threefry-2x32 hash itself."""

import numpy as _np

from ember import lax as _lax
from ember import random as _random
from ember._src import prng as _prng
from ember._src.lax_primitives import LaxPrimitive as _LaxPrimitive
from ember.numpy import asarray as _asarray
from ember.numpy import broadcast_to as _broadcast_to
from ember.numpy import concatenate as _concatenate
from ember.numpy import ravel as _ravel
from ember.numpy import zeros as _zeros

threefry_prng_impl = _prng.THREEFRY
rbg_prng_impl = _prng.RBG
unsafe_rbg_prng_impl = _prng.UNSAFE_RBG

threefry2x32_p = _LaxPrimitive("threefry2x32", _lax.threefry2x32, multiple_results=True)


def seed_with_impl(impl, seed):
    """A typed key of `impl` for `seed` (`random.key(seed, impl=impl)`)."""
    return _random.key(seed, impl=impl)


def threefry_2x32(keypair, count):
    """The Threefry-2x32 hash of the uint32 array `count` under the key
    `keypair` (two uint32 words): its words split in halves, hashed as
    pairs, put back in order (JAX's)."""
    k0, k1 = (_asarray(k, _np.uint32) for k in keypair)
    count = _asarray(count)
    if count.dtype != _np.uint32:
        raise TypeError(f"threefry_2x32 requires uint32 arguments, got {count.dtype}")
    flat = _ravel(count)
    odd = flat.shape[0] % 2
    if odd:
        flat = _concatenate([flat, _zeros((1,), _np.uint32)])
    half = flat.shape[0] // 2
    k0, k1 = (_broadcast_to(k, (half,)) for k in (k0, k1))
    y0, y1 = threefry2x32_p.bind(k0, k1, flat[:half], flat[half:])
    out = _concatenate([y0, y1])
    return (out[:-1] if odd else out).reshape(count.shape)


__all__ = ["rbg_prng_impl", "seed_with_impl", "threefry2x32_p", "threefry_2x32",
           "threefry_prng_impl", "unsafe_rbg_prng_impl"]
