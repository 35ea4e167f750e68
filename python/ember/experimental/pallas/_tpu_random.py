"""Pallas TPU's random numbers (JAX's `jax._src.pallas.mosaic.random`):
the stateful samplers over the kernel's PRNG state (`pltpu.prng_seed`,
`pltpu.prng_random_bits`: ember/_src/pallas/tpu.py), Pallas keys, and
block-invariant sampling. A public-layer module: it builds on `ember.random`,
which `ember._src` cannot import."""

import numpy as np

from ember import random
from ember._src import lax
from ember._src.api import disable_jit
from ember._src.numpy import lax_numpy as jnp
from ember._src.pallas import core as pl_core
from ember._src.pallas.tpu import prng_random_bits


def _kernel_bits(keys, bit_width, shape):
    if bit_width != 32:
        raise ValueError("Bit width must be 32")
    bits = prng_random_bits(tuple(keys.shape[:-1]) + tuple(shape))
    return lax.bitcast_convert_type(bits, np.uint32)


def _stateful(sampler):
    """`sampler` (a jax.random function) without its key argument, its bits
    drawn from the kernel's PRNG state. Run unjitted: a jitted sampler's
    cached program must not keep the kernel's draws."""
    def stateful(*args, **kwargs):
        random._bits_sources.append(_kernel_bits)
        try:
            with disable_jit():
                return sampler(jnp.zeros((2,), np.uint32), *args, **kwargs)
        finally:
            random._bits_sources.pop()

    stateful.__name__ = f"stateful_{sampler.__name__}"
    stateful.__doc__ = (f"JAX's `pltpu.stateful_{sampler.__name__}`: `jax.random."
                        f"{sampler.__name__}` without a key, drawing from the kernel's PRNG.")
    return stateful


stateful_bits = _stateful(random.bits)
stateful_uniform = _stateful(random.uniform)
stateful_bernoulli = _stateful(random.bernoulli)
stateful_normal = _stateful(random.normal)


def to_pallas_key(key):
    """JAX's `pltpu.to_pallas_key`: a key for use inside kernels, made of the
    bits JAX takes (`jax.random.bits(key, (1, 2), uint32)`). Ember's Pallas
    keys are threefry keys over those words: `jax.random` samplers given one
    in a kernel draw the same numbers wherever they run (JAX's draw the TPU's
    hardware bits, which differ between generations; its interpreter draws
    zeros)."""
    data = random.key_data(key)
    if data.ndim > 1:
        from ember import vmap

        words = vmap(lambda k: random.bits(k, (1, 2), np.uint32))(key)
    else:
        words = random.bits(key, (1, 2), np.uint32)
    words = jnp.reshape(words, words.shape[:-2] + (2,))
    return random.wrap_key_data(words)


def _tile_index(block_index, block_tiles, total_tiles, tile_in_block):
    """The row-major index of a tile among all tiles of the array."""
    index, size = 0, 1
    for i in range(len(block_index) - 1, -1, -1):
        index = index + (tile_in_block[i] + block_index[i] * block_tiles[i]) * size
        size *= total_tiles[i]
    return index


def sample_block(sampler_fn, global_key, block_size, tile_size, total_size, block_index=None,
                 **kwargs):
    """JAX's `pltpu.sample_block`: the block `block_index` (default: the
    program ids) of a `total_size` array of samples, drawn per tile of
    `tile_size` with the key `fold_in(global_key, tile index)`, so that the
    numbers do not depend on the block size or the order of the blocks."""
    if len(block_size) != len(tile_size):
        raise ValueError(f"block_size ({len(block_size)}) and tile_size "
                         f"({len(tile_size)}) must have the same length.")
    if block_index is None:
        block_index = tuple(pl_core.program_id(axis) for axis in range(len(block_size)))
    block_tiles = tuple(b // t for b, t in zip(block_size, tile_size))
    total_tiles = tuple((n + t - 1) // t for n, t in zip(total_size, tile_size))

    def tiles(axis, prefix):
        if axis == len(block_tiles):
            key = random.fold_in(global_key,
                                 _tile_index(block_index, block_tiles, total_tiles, prefix))
            return sampler_fn(key, shape=tuple(tile_size), **kwargs)
        return jnp.concatenate([tiles(axis + 1, prefix + (i,))
                                for i in range(block_tiles[axis])], axis=axis)

    return tiles(0, ())
