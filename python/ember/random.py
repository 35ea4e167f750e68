"""ember.random: JAX's default PRNG (threefry2x32, partitionable), bit for bit,
and its other implementations: rbg, unsafe_rbg, philox2x32, philox4x32 and
threefry4x32 (``impl=``, ``jax_default_prng_impl``; docs/design.md, "Typed PRNG
keys"). The notes below are threefry2x32's.

``key`` returns typed key arrays (dtype ``key<fry>``, `prng.PRNGKeyArray`,
shape ``()`` for one key); ``PRNGKey`` returns JAX's legacy raw keys,
``uint32[..., 2]`` arrays. Every function takes either; ``split``,
``fold_in`` and ``clone`` return the kind they were given. ``key_data`` and
``wrap_key_data`` convert between the two.

All bits come from the ``ember.threefry2x32`` op; the samplers follow the
algorithms of ``jax._src.random`` / ``jax._src.prng`` with
``jax_threefry_partitionable=True`` (the default since JAX 0.5):

* counters are the row-major linear index of each element, as a 64-bit value
  split into (hi, lo) uint32 words (``iota_2x32_shape``);
* ``split(key, shape)`` returns ``stack(threefry(key, iota_2x32(shape)), -1)``;
* 32-bit ``bits`` are ``bits1 ^ bits2`` of the same call, narrower widths are
  its truncation and 64-bit widths are ``bits1 << 32 | bits2``.

Rejection samplers (gamma and its users, poisson) use ``while_loop`` in JAX.
``_while`` replays the loop with masked rounds:
each round evaluates the condition, runs the body and keeps the new state only
where the condition held. That is exactly JAX's (batched) ``while_loop`` as long
as the loop ends within the rounds run. Outside ``jit`` it runs chunks of rounds
until the condition is false everywhere (exact); under ``jit`` it runs a fixed
number of rounds (see ``_ROUNDS``), after which a not-yet-finished element keeps
its last state (probability far below 1e-9 per element for the bounds chosen).
"""

import contextvars
import functools
import math
from collections.abc import Sequence

import numpy as np

from ember import numpy as jnp
from ember._src import control_flow, core, dtypes, lax, lax_extras, prng, tree_util
from ember._src.ad import custom_jvp
from ember._src.api import jit
from ember._src.batching import vmap
from ember._src.config import config as _config

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "clone", "split", "fold_in",
    "bits", "uniform", "normal", "truncated_normal", "bernoulli", "randint", "categorical",
    "choice", "permutation", "shuffle", "gumbel", "exponential", "gamma", "loggamma", "beta",
    "dirichlet", "multivariate_normal", "laplace", "logistic", "poisson", "cauchy", "pareto",
    "t", "chisquare", "f", "rademacher", "maxwell", "double_sided_maxwell", "weibull_min",
    "rayleigh", "wald", "geometric", "lognormal", "triangular", "generalized_normal", "ball",
    "binomial", "multinomial", "key_dtype",
]

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_U32 = dtypes.uint32

# Fixed round counts used under jit (see module docstring).
_ROUNDS = {"gamma_outer": 8, "gamma_inner": 4, "poisson_knuth": 40, "poisson_rejection": 16}
_EAGER_CHUNK = 4


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


def _is_traced(*trees):
    if core.current_trace() is not None:
        return True
    return any(isinstance(x, core.Tracer) for x in tree_util.tree_leaves(trees))


def _const(dtype, value, shape=()):
    v = core.asarray_concrete(np.asarray(value, dtype=dtype), dtype)
    return lax.broadcast(v, tuple(shape)) if shape else v


def _canon_float(dtype, name):
    requested = dtype
    dtype = np.dtype(dtype) if dtype is not None else dtypes.default_float()
    if not (dtypes.is_float(dtype)):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtypes.check_user_dtype(float if requested is None or requested is float else dtype)


def _canon_shape(shape):
    if isinstance(shape, (int, np.integer, core.DimExpr)):
        return (core.canonicalize_dim(shape),)
    return tuple(core.canonicalize_dim(s) for s in shape)


def _check_shape(name, shape, *param_shapes):
    if param_shapes:
        bshape = tuple(np.broadcast_shapes(tuple(shape), *[tuple(p) for p in param_shapes]))
        if bshape != tuple(shape):
            raise ValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, "
                "and the result of broadcasting the shapes must equal the shape argument, "
                f"but got result {bshape} for shape argument {tuple(shape)}.")


# The implementation of the keys drawn from: `_check_key` sets it when a
# public function is given its key (a typed key's own, else the default,
# `jax_default_prng_impl`); the jitted helpers (`_rng_jit`) take it as a
# static argument and set it while they are traced, where `_split_b`,
# `_fold_in_impl` and `_random_bits_b` read it (`_current`). A public
# function calling another (`choice` calls `permutation`) hands on the key
# data it checked: inside a call (`_in_call`), raw key data is of the
# implementation already set.
_impl = contextvars.ContextVar("ember_prng_impl", default=None)
_in_call = contextvars.ContextVar("ember_prng_in_call", default=False)


def _current():
    return _impl.get() or prng.THREEFRY


def _public(fn):
    """`fn`, a public function of this module, as one call for `_impl`."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _in_call.get():
            return fn(*args, **kwargs)
        t1, t2 = _in_call.set(True), _impl.set(None)
        try:
            return fn(*args, **kwargs)
        finally:
            _impl.reset(t2)
            _in_call.reset(t1)
    return call


_JAX_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


def _resolve_impl(impl):
    """The `prng.Impl` named by `impl` (JAX's spellings; None: the default)."""
    if impl is None:
        impl = _config.jax_default_prng_impl
    if isinstance(impl, prng.Impl):
        return impl
    if isinstance(impl, prng.KeyDType):
        return impl.impl
    if isinstance(impl, str):
        if impl in prng.IMPLS:
            return prng.IMPLS[impl]
        raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                         + ", ".join(f'"{n}"' for n in _JAX_IMPLS) + f"? (at {core.where()})")
    raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation. "
                    f"(at {core.where()})")


def _rng_jit(fn, static_argnums=()):
    """`jit(fn)` whose trace draws with the implementation `_impl` holds
    when it is called (a static argument: each implementation has its own
    compiled code)."""
    def traced(impl, *args):
        token = _impl.set(impl)
        try:
            return fn(*args)
        finally:
            _impl.reset(token)
    compiled = jit(traced, static_argnums=(0,) + tuple(i + 1 for i in static_argnums))
    return lambda *args: compiled(_current(), *args)


def _check_key(name, key, allow_batched=False, raw_impl=None):
    """The key data (uint32[..., W]) of a typed key array or a raw key (of
    `raw_impl`, by default the default implementation); `_impl` becomes the
    key's implementation."""
    if prng.is_key(key):
        impl = key._impl
    elif raw_impl is None and _in_call.get() and _impl.get() is not None:
        impl = _impl.get()  # key data one of this module's functions handed on
    else:
        impl = _resolve_impl(raw_impl)
    key = key._base if prng.is_key(key) else jnp.asarray(key)
    if key.dtype != _U32 or not key.ndim or key.shape[-1] != impl.words:
        raise TypeError(f"{name}: expected a {impl.name} PRNG key (uint32 array with trailing "
                        f"dimension {impl.words}), got {key.dtype}{list(key.shape)}")
    _impl.set(impl)
    if not allow_batched and key.ndim != 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{key.shape[:-1]} != (). Use jax.vmap for batching.")
    return key


def _key_words(keys):
    """uint32[B..., 2] -> (k0, k1), each uint32[B...]."""
    b = keys.shape[:-1]
    k0 = lax.reshape(lax.slice_in_dim(keys, 0, 1, 1, keys.ndim - 1), b)
    k1 = lax.reshape(lax.slice_in_dim(keys, 1, 2, 1, keys.ndim - 1), b)
    return k0, k1


def _iota_2x32(shape):
    """(hi, lo) words of the row-major linear index over `shape` (JAX's iota_2x32_shape)."""
    n = core.shape_size(shape)
    if not isinstance(n, core.DimExpr) and n > 2 ** 32:
        raise NotImplementedError("random bits for arrays with more than 2**32 elements")
    lo = lax.reshape(lax.iota(_U32, n), shape) if shape else _const(_U32, 0)
    hi = _const(_U32, 0, shape)
    return hi, lo


def _threefry_batched(keys, shape):
    """threefry2x32 of keys uint32[B...,2] over counters iota_2x32(shape).

    Returns two uint32[B..., *shape] arrays.
    """
    b = keys.shape[:-1]
    full = tuple(b) + tuple(shape)
    k0, k1 = _key_words(keys)
    k0 = lax.broadcast_in_dim(k0, full, tuple(range(len(b))))
    k1 = lax.broadcast_in_dim(k1, full, tuple(range(len(b))))
    hi, lo = _iota_2x32(tuple(shape))
    dims = tuple(range(len(b), len(full)))
    hi = lax.broadcast_in_dim(hi, full, dims)
    lo = lax.broadcast_in_dim(lo, full, dims)
    return lax.threefry2x32(k0, k1, hi, lo)


def _threefry_split(keys, shape):
    """Split keys uint32[B...,2] into uint32[B..., *shape, 2] (JAX's _threefry_split_foldlike)."""
    b1, b2 = _threefry_batched(keys, shape)
    full = b1.shape
    return lax.concatenate([lax.reshape(b1, full + (1,)), lax.reshape(b2, full + (1,))],
                           len(full))


def _halves(keys):
    """rbg keys uint32[B..., 4] -> their threefry halves, uint32[B..., 2, 2]."""
    return lax.reshape(keys, keys.shape[:-1] + (2, 2))


def _rbg_generate(keys, shape, dtype):
    """The bits of `lax.rng_bit_generator` from keys uint32[B..., 4], as
    JAX's batched draw computes them: `vmap` over the keys, whose rule
    draws the whole batch from the first key (`lax_extras`)."""
    b = keys.shape[:-1]
    if not b:
        return lax_extras.rng_bit_generator(keys, shape, dtype)[1]
    n = math.prod(b)
    flat = lax.reshape(keys, (n, 4))
    out = vmap(lambda k: lax_extras.rng_bit_generator(k, shape, dtype)[1])(flat)
    return lax.reshape(out, tuple(b) + tuple(shape))


def _split_b(keys, shape):
    """Split keys uint32[B..., W] into uint32[B..., *shape, W] with the
    implementation's rule (JAX's): threefry2x32's fold-like split; rbg
    splits each threefry half; unsafe_rbg takes every tenth of 10 x n keys
    drawn from the generator."""
    impl = _current()
    if impl is prng.THREEFRY:
        return _threefry_split(keys, shape)
    if impl in _COUNTER_CIPHERS:
        return _counter_split(impl, keys, shape)
    b, shape = tuple(keys.shape[:-1]), tuple(shape)
    if impl is prng.RBG:
        halves = _threefry_split(_halves(keys), shape)  # [B..., 2, *shape, 2]
        perm = tuple(range(len(b))) + tuple(range(len(b) + 1, len(b) + 1 + len(shape))) + \
            (len(b), len(b) + 1 + len(shape))
        return lax.reshape(lax.transpose(halves, perm), b + shape + (4,))
    n = math.prod(shape)
    drawn = _rbg_generate(keys, (10 * n, 4), _U32)  # [B..., 10n, 4]
    every = lax.slice_in_dim(drawn, 0, 10 * n, 10, len(b))
    return lax.reshape(every, b + shape + (4,))


def _take_key(keys, i):
    """keys uint32[B..., n, W] -> the i-th along the axis before the key words."""
    ax = keys.ndim - 2
    k = lax.slice_in_dim(keys, i, i + 1, 1, ax)
    return lax.reshape(k, keys.shape[:ax] + keys.shape[-1:])


def _unstack_keys(keys, n):
    return [_take_key(keys, i) for i in range(n)]


# Sources of random bits that replace threefry's while set, innermost last:
# `source(keys, bit_width, shape)` (Pallas TPU's stateful samplers,
# ember/experimental/pallas/_tpu_random.py, which run the samplers unjitted).
_bits_sources = []


def _random_bits_b(keys, bit_width, shape):
    """JAX's _threefry_random_bits_partitionable for keys uint32[B...,2]."""
    if _bits_sources:
        return _bits_sources[-1](keys, bit_width, shape)
    if bit_width not in (8, 16, 32, 64):
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    dt = _UINT[bit_width]
    if bit_width == 64 and not _config.jax_enable_x64:
        raise TypeError("64-bit random bits need jax_enable_x64")
    impl = _current()
    if impl in (prng.RBG, prng.UNSAFE_RBG):  # XLA's generator
        return _rbg_generate(keys, tuple(shape), dt)
    if impl in _COUNTER_CIPHERS:
        return _counter_bits(impl, keys, tuple(shape), bit_width)
    b1, b2 = _threefry_batched(keys, shape)
    if bit_width == 64:
        hi = lax.convert_element_type(b1, dt)
        lo = lax.convert_element_type(b2, dt)
        return lax.bitwise_or(lax.shift_left(hi, _const(dt, 32, hi.shape)), lo)
    x = lax.bitwise_xor(b1, b2)
    return x if bit_width == 32 else lax.convert_element_type(x, dt)


# JAX 0.10's counter-based implementations (jax/_src/random/philox2x32.py,
# philox4x32.py, threefry4x32.py): a cipher of the key's words and a counter
# of four (philox4x32, threefry4x32) or two (philox2x32) words. The seed
# enciphers threefry's seed words; split and bits encipher each element's
# linear index (hi, lo) at a place in the counter, fold_in the datum.


def _philox2x32(k, x0, x1):
    """Random123's Philox-2x32-10 of the counter (x0, x1) under the key k."""
    m = _const(_U32, 0xD256D193, x0.shape)
    for r in range(10):
        if r:
            k = lax.add(k, _const(_U32, 0x9E3779B9, k.shape))
        x0, x1 = lax.bitwise_xor(lax.bitwise_xor(lax_extras.mulhi(m, x0), x1), k), \
            lax.mul(m, x0)
    return x0, x1


_THREEFRY4_ROTATIONS = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10),
                        (18, 20))


def _threefry4x32(k, x):
    """Threefry-4x32 with 20 rounds of the counter `x` under the key `k`
    (four words each): mixing pairs (0, 1), (2, 3) on even rounds and
    (0, 3), (2, 1) on odd ones, the key injected every fourth round."""
    def rotl(v, d):
        return lax.bitwise_or(lax.shift_left(v, _const(_U32, d, v.shape)),
                              lax.shift_right_logical(v, _const(_U32, 32 - d, v.shape)))

    def mix(a, b, d):  # (a + b, rotl(b, d) ^ (a + b))
        a = lax.add(a, b)
        return a, lax.bitwise_xor(a, rotl(b, d))

    parity = _const(_U32, 0x1BD11BDA, k[0].shape)
    ks = list(k) + [functools.reduce(lax.bitwise_xor, list(k) + [parity])]
    x = [lax.add(xi, ki) for xi, ki in zip(x, ks)]
    for r in range(20):
        d0, d1 = _THREEFRY4_ROTATIONS[r % 8]
        if r % 2 == 0:
            x[0], x[1] = mix(x[0], x[1], d0)
            x[2], x[3] = mix(x[2], x[3], d1)
        else:
            x[0], x[3] = mix(x[0], x[3], d0)
            x[2], x[1] = mix(x[2], x[1], d1)
        if r % 4 == 3:
            j = r // 4
            x = [lax.add(x[i], ks[(i + 1 + j) % 5]) for i in range(4)]
            x[3] = lax.add(x[3], _const(_U32, j + 1, x[3].shape))
    return x


def _encipher(impl, key_words, counter):
    """The cipher of `impl` on key words and counter words (arrays of one
    shape); returns the output words."""
    if impl is prng.PHILOX2:
        return list(_philox2x32(key_words[0], *counter))
    if impl is prng.PHILOX4:
        return list(lax.philox4x32(*key_words, *counter))
    return _threefry4x32(key_words, counter)


_COUNTER_CIPHERS = {prng.PHILOX2: 2, prng.PHILOX4: 4, prng.THREEFRY4: 4}


def _words_over(keys, shape):
    """The words of keys uint32[B..., W], each broadcast to B + shape."""
    b = tuple(keys.shape[:-1])
    full = b + tuple(shape)
    return [lax.broadcast_in_dim(lax.reshape(lax.slice_in_dim(keys, i, i + 1, 1, len(b)), b),
                                 full, tuple(range(len(b))))
            for i in range(keys.shape[-1])]


def _counters(n, b, shape, where):
    """The n counter words over B + shape: the linear index's (hi, lo) at
    positions `where` (two of them), zeros elsewhere."""
    full = tuple(b) + tuple(shape)
    hi, lo = _iota_2x32(tuple(shape))
    dims = tuple(range(len(b), len(full)))
    words = [_const(_U32, 0, full) for _ in range(n)]
    words[where[0]] = lax.broadcast_in_dim(hi, full, dims)
    words[where[1]] = lax.broadcast_in_dim(lo, full, dims)
    return words


def _counter_bits(impl, keys, shape, bit_width):
    b = tuple(keys.shape[:-1])
    out = _encipher(impl, _words_over(keys, shape),
                    _counters(_COUNTER_CIPHERS[impl], b, shape, (0, 1)))
    dt = _UINT[bit_width]
    if bit_width == 64:
        hi, lo = (out[0], out[1]) if impl is not prng.THREEFRY4 else \
            (lax.bitwise_xor(out[0], out[2]), lax.bitwise_xor(out[1], out[3]))
        hi, lo = lax.convert_element_type(hi, dt), lax.convert_element_type(lo, dt)
        return lax.bitwise_or(lax.shift_left(hi, _const(dt, 32, hi.shape)), lo)
    x = functools.reduce(lax.bitwise_xor, out)
    return x if bit_width == 32 else lax.convert_element_type(x, dt)


def _counter_split(impl, keys, shape):
    b, w = tuple(keys.shape[:-1]), impl.words
    n = _COUNTER_CIPHERS[impl]
    where = (0, 1) if impl is prng.PHILOX2 else (n - 2, n - 1)
    out = _encipher(impl, _words_over(keys, shape), _counters(n, b, shape, where))
    full = b + tuple(shape)
    return lax.concatenate([lax.reshape(o, full + (1,)) for o in out[:w]], len(full))


def _counter_fold_in(impl, key, data):
    n = _COUNTER_CIPHERS[impl]
    counter = [_const(_U32, 0, (1,)) for _ in range(n)]
    counter[-1] = lax.reshape(data, (1,))
    out = _encipher(impl, _words_over(key, (1,)), counter)
    return lax.concatenate(out[:impl.words], 0)


def _counter_seed(impl, words):
    """`impl`'s key for threefry's seed words (k0, k1)."""
    n = _COUNTER_CIPHERS[impl]
    k0, k1 = (lax.reshape(lax.slice_in_dim(words, i, i + 1, 1, 0), (1,)) for i in range(2))
    zero = _const(_U32, 0, (1,))
    if impl is prng.PHILOX2:
        out = _philox2x32(zero, k0, k1)
    elif impl is prng.PHILOX4:
        out = lax.philox4x32(zero, zero, k0, k1, zero, zero)
    else:
        out = _threefry4x32([k0, k1, zero, zero], [zero] * n)
    return lax.concatenate(list(out)[:impl.words], 0)


def _bcast_to(x, shape):
    x = jnp.asarray(x)
    return x if x.shape == tuple(shape) else jnp.broadcast_to(x, tuple(shape))


def _uniform_b(keys, shape, dtype, minval=0.0, maxval=1.0):
    """JAX's _uniform for keys uint32[B...,2]; result shape B + shape."""
    dtype = np.dtype(dtype)
    fi = dtypes.finfo(dtype)
    nbits, nmant = fi.bits, fi.nmant
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    out_shape = tuple(keys.shape[:-1]) + tuple(shape)
    minval = lax.convert_element_type(jnp.asarray(minval), dtype)
    maxval = lax.convert_element_type(jnp.asarray(maxval), dtype)
    rng_bits = 8 if nmant < 8 else nbits
    bits_ = _random_bits_b(keys, rng_bits, shape)
    udt = _UINT[nbits]
    if rng_bits != nbits:
        bits_ = lax.convert_element_type(bits_, udt)
    one_bits = np.array(1.0, dtype).view(udt)
    float_bits = lax.bitwise_or(
        lax.shift_right_logical(bits_, _const(udt, rng_bits - nmant, out_shape)),
        _const(udt, one_bits, out_shape))
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), _const(dtype, 1.0, out_shape))
    span = _bcast_to(jnp.subtract(maxval, minval), out_shape)
    scaled = lax.add(lax.mul(floats, span), _bcast_to(minval, out_shape))
    return lax.max(_bcast_to(minval, out_shape), scaled)


def _normal_real_b(keys, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform_b(keys, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(_const(dtype, np.sqrt(2), u.shape), lax.erf_inv(u))


def _exponential_b(keys, shape, dtype):
    u = _uniform_b(keys, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


# --------------------------------------------------------------------------
# masked while loop (see module docstring)
# --------------------------------------------------------------------------


def _select_tree(c, new, old):
    def sel(a, b):
        cc = c
        if cc.ndim < a.ndim:
            cc = lax.reshape(cc, cc.shape + (1,) * (a.ndim - cc.ndim))
        if cc.shape != a.shape:
            cc = jnp.broadcast_to(cc, a.shape)
        return lax.select(cc, a, b)
    return tree_util.tree_map(sel, new, old)


def _rounds(cond, body, consts, state, n):
    for _ in range(n):
        c = cond(consts, state)
        state = _select_tree(c, body(consts, state), state)
    return state


_chunk_cache = {}


def _while(cond, body, consts, state, max_rounds):
    """while_loop(cond, body, state) with cond/body(consts, state); cond may be batched."""
    if _is_traced(consts, state):
        return _rounds(cond, body, consts, state, max_rounds)
    fns = _chunk_cache.get((cond, body, _current()))
    if fns is None:
        fns = (_rng_jit(lambda cs, st, n: _rounds(cond, body, cs, st, n), static_argnums=(2,)),
               jit(lambda cs, st: jnp.any(cond(cs, st))))
        _chunk_cache[(cond, body, _current())] = fns
    chunk, anyc = fns
    while bool(anyc(consts, state)):
        state = chunk(consts, state, _EAGER_CHUNK)
    return state


# --------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------


def _seed_words(seed):
    """JAX's threefry_seed: [seed >> 32, seed & 0xFFFFFFFF] as uint32 words
    (a bool seed is its int, as JAX's)."""
    if isinstance(seed, (bool, np.bool_)):
        seed = int(seed)
    if isinstance(seed, int):
        if not -2 ** 63 <= seed < 2 ** 64:
            raise OverflowError("Python int too large to convert to C long")
        # JAX converts a Python int through np.int64; without x64 only the low 32 bits
        # survive (int64 -> int32 wraps), and a 32-bit seed has no high word.
        s = seed % 2 ** 64
        hi = (s >> 32) if _config.jax_enable_x64 else 0
        words = np.array([hi, s & 0xFFFFFFFF], dtype=np.uint32)
        return core.asarray_concrete(words, _U32)
    seed = jnp.asarray(seed)
    if seed.shape:
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{seed.shape} != (). Use jax.vmap for batching")
    if not (dtypes.is_int(seed.dtype) or dtypes.is_unsigned(seed.dtype)) \
            or seed.dtype == dtypes.bool_:
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if seed.dtype.itemsize == 8:
        hi = lax.convert_element_type(
            lax.shift_right_logical(seed, _const(seed.dtype, 32)), _U32)
        lo = lax.convert_element_type(seed, _U32)
    else:
        hi = _const(_U32, 0)
        lo = _to_u32_bits(seed)
    return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def _to_u32_bits(x):
    """Two's-complement bits of an integer array, truncated to 32 bits, as uint32."""
    if x.dtype == _U32:
        return x
    if dtypes.is_unsigned(x.dtype) or x.dtype.itemsize == 8:
        return lax.convert_element_type(x, _U32)
    return lax.convert_element_type(lax.convert_element_type(x, dtypes.int32), _U32)


def _impl_seed(seed, impl):
    """The key data of `impl` for `seed`: threefry's two words, twice for
    the rbg implementations (JAX's `_rbg_seed`)."""
    words = _seed_words(seed)
    if impl in _COUNTER_CIPHERS:
        return _counter_seed(impl, words)
    return words if impl is prng.THREEFRY else lax.concatenate([words, words], 0)


def PRNGKey(seed, *, impl=None):
    """A legacy raw key (uint32[2] for threefry2x32, uint32[4] for rbg and
    unsafe_rbg) from an integer seed."""
    impl = _resolve_impl(impl)
    if np.ndim(seed):
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jax.vmap for batching")
    return _impl_seed(seed, impl)


def key(seed, *, impl=None):
    """A typed key (a `key<fry>`, `key<rbg>` or `key<urbg>` array of shape
    ()) from an integer seed."""
    impl = _resolve_impl(impl)
    if np.ndim(seed):
        raise TypeError(f"key accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jax.vmap for batching")
    return prng.PRNGKeyArray(_impl_seed(seed, impl), impl)


def key_data(keys):
    """The uint32[..., W] data of keys (raw keys are returned as they are)."""
    return _check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys of `impl` over uint32[..., W] key data."""
    impl = _resolve_impl(impl)
    if prng.is_key(key_bits_array):
        raise TypeError("wrap_key_data takes key data (a uint32 array), not a key array")
    data = _check_key("wrap_key_data", jnp.asarray(key_bits_array), allow_batched=True,
                      raw_impl=impl)
    return prng.PRNGKeyArray(data, impl)


def _like(given, data):
    """`data` as the kind of key `given` was: typed (of its implementation)
    or raw."""
    return prng.PRNGKeyArray(data, given._impl) if prng.is_key(given) else data


def key_impl(keys):
    """The name of the implementation of `keys` (a str, as JAX 0.10's)."""
    _check_key("key_impl", keys, allow_batched=True)
    return _current().name


def clone(key):
    _check_key("clone", key, allow_batched=True)
    return key


def split(key, num=2):
    """Split a key into `num` (an int or a shape) new keys."""
    data = _check_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (int(num),)
    return _like(key, _split_j(data, shape))


_split_j = _rng_jit(lambda k, shape: _split_b(k, shape), static_argnums=(1,))


def _split(key, num=2):
    data = _check_key("split", key)
    return _like(key, _split_j(data, (num,) if isinstance(num, int) else tuple(num)))


def fold_in(key, data):
    """Fold a 32-bit integer into a key."""
    given, key = key, _check_key("fold_in", key)
    if np.ndim(data):
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data)} != (). Use jax.vmap for batching.")
    if isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
        data = core.asarray_concrete(np.asarray(int(data) % 2 ** 32, np.uint32), _U32)
    else:
        data = jnp.asarray(data)
        data = _to_u32_bits(data) if (dtypes.is_int(data.dtype) or
                                      dtypes.is_unsigned(data.dtype)) else \
            lax.convert_element_type(data, _U32)
    return _like(given, _fold_in_j(key, data))


def _fold_in_impl(key, data):
    impl = _current()
    if impl in _COUNTER_CIPHERS:
        return _counter_fold_in(impl, key, data)
    if impl is prng.RBG:  # each threefry half folded
        h = _halves(key)
        return lax.concatenate([_threefry_fold_in(_take_key(h, 0), data),
                                _threefry_fold_in(_take_key(h, 1), data)], 0)
    if impl is prng.UNSAFE_RBG:  # key ^ the last of 10 keys drawn from data's seed
        seed = lax.concatenate([_const(_U32, 0, (1,)), lax.reshape(data, (1,))], 0)
        drawn = lax_extras.rng_bit_generator(lax.concatenate([seed, seed], 0), (10, 4),
                                             _U32)[1]
        return lax.bitwise_xor(key, lax.reshape(lax.slice_in_dim(drawn, 9, 10, 1, 0), (4,)))
    return _threefry_fold_in(key, data)


def _threefry_fold_in(key, data):
    k0, k1 = _key_words(key)
    zero = _const(_U32, 0, (1,))
    b1, b2 = lax.threefry2x32(lax.reshape(k0, (1,)), lax.reshape(k1, (1,)), zero,
                              lax.reshape(data, (1,)))
    return lax.concatenate([b1, b2], 0)


_fold_in_j = _rng_jit(_fold_in_impl)


# --------------------------------------------------------------------------
# bits, uniform, normal
# --------------------------------------------------------------------------


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers (uint32 unless x64)."""
    key = _check_key("bits", key)
    requested = dtype
    dtype = np.dtype(dtype) if dtype is not None else np.dtype("uint64")
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    dtype = dtypes.canonicalize_dtype(dtype) if requested is None else \
        dtypes.check_user_dtype(dtype)
    return _bits_j(key, dtype.itemsize * 8, _canon_shape(shape))


_bits_j = _rng_jit(lambda k, w, shape: _random_bits_b(k, w, shape), static_argnums=(1, 2))


def uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval)."""
    key = _check_key("uniform", key)
    dtype = _canon_float(dtype, "uniform")
    shape = _canon_shape(shape)
    _check_shape("uniform", shape, np.shape(minval), np.shape(maxval))
    return _uniform_j(key, shape, dtype, minval, maxval)


_uniform_j = _rng_jit(lambda k, shape, dtype, lo, hi: _uniform_b(k, shape, dtype, lo, hi),
                 static_argnums=(1, 2))


def _canon_inexact(dtype, name):
    requested = dtype
    dtype = np.dtype(dtype) if dtype is not None else dtypes.default_float()
    if not dtypes.is_inexact(dtype):
        raise ValueError(f"dtype argument to `{name}` must be a float or complex dtype, "
                         f"got {dtype}")
    return dtypes.check_user_dtype(float if requested is None or requested is float else dtype)


def normal(key, shape=(), dtype=float):
    """Standard normal samples."""
    key = _check_key("normal", key)
    dtype = _canon_inexact(dtype, "normal")
    return _normal_j(key, _canon_shape(shape), dtype)


def _normal_impl(key, shape, dtype):
    if dtypes.is_complex(dtype):
        rdt = np.dtype(np.finfo(dtype).dtype)
        k_re, k_im = _unstack_keys(_split_b(key, (2,)), 2)
        re = _normal_real_b(k_re, shape, rdt)
        im = _normal_real_b(k_im, shape, rdt)
        z = lax.complex(re, im)
        return jnp.divide(z, _const(dtype, np.sqrt(2)))
    return _normal_real_b(key, shape, dtype)


_normal_j = _rng_jit(_normal_impl, static_argnums=(1, 2))


def truncated_normal(key, lower, upper, shape=None, dtype=float):
    """Normal samples truncated to the open interval (lower, upper)."""
    key = _check_key("truncated_normal", key)
    dtype = _canon_float(dtype, "truncated_normal")
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(lower), np.shape(upper)))
    else:
        shape = _canon_shape(shape)
        _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    return _truncnorm_j(key, lower, upper, shape, dtype)


def _truncnorm_impl(key, lower, upper, shape, dtype):
    sqrt2 = _const(dtype, np.sqrt(2))
    lower = lax.convert_element_type(jnp.asarray(lower), dtype)
    upper = lax.convert_element_type(jnp.asarray(upper), dtype)
    a = lax.erf(jnp.divide(lower, sqrt2))
    b = lax.erf(jnp.divide(upper, sqrt2))
    u = _uniform_b(key, shape, dtype, a, b)
    out = lax.mul(_const(dtype, np.sqrt(2), u.shape), lax.erf_inv(u))
    lo = lax.nextafter(lower, _const(dtype, np.inf, lower.shape))
    hi = lax.nextafter(upper, _const(dtype, -np.inf, upper.shape))
    return jnp.clip(out, lo, hi)


_truncnorm_j = _rng_jit(_truncnorm_impl, static_argnums=(3, 4))


def bernoulli(key, p=np.float32(0.5), shape=None, mode="low"):
    """Boolean samples that are True with probability p."""
    key = _check_key("bernoulli", key)
    p = jnp.asarray(p)
    dtype = dtypes.canonicalize_dtype(p.dtype)
    if not dtypes.is_float(dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    p = lax.convert_element_type(p, dtype)
    if shape is None:
        shape = p.shape
    else:
        shape = _canon_shape(shape)
        _check_shape("bernoulli", shape, p.shape)
    if mode not in ("low", "high"):
        raise ValueError(f"got {mode=}, expected 'low' or 'high'")
    return _bernoulli_j(key, p, shape, mode)


def _bernoulli_impl(key, p, shape, mode):
    dtype = p.dtype
    if mode == "high":
        u = _uniform_b(key, (2,) + tuple(shape), dtype)
        u1 = lax.reshape(lax.slice_in_dim(u, 0, 1, 1, 0), shape)
        u2 = lax.reshape(lax.slice_in_dim(u, 1, 2, 1, 0), shape)
        u2 = jnp.multiply(u2, _const(dtype, 2.0 ** -dtypes.finfo(dtype).nmant))
        return jnp.less(jnp.add(u2, u1), p)
    return jnp.less(_uniform_b(key, shape, dtype), p)


_bernoulli_j = _rng_jit(_bernoulli_impl, static_argnums=(2, 3))


# --------------------------------------------------------------------------
# integers, permutations, choice
# --------------------------------------------------------------------------


def _convert_and_clip_integer(val, dtype):
    dtype = np.dtype(dtype)
    if val.dtype == dtype:
        return val
    vi, di = np.iinfo(val.dtype), np.iinfo(dtype)
    lo = _const(val.dtype, max(vi.min, di.min), val.shape)
    hi = _const(val.dtype, min(vi.max, di.max), val.shape)
    return lax.convert_element_type(lax.clamp(lo, val, hi), dtype)


def _urem(x, s):
    """Unsigned remainder with XLA's semantics for a zero divisor (x % 0 == x)."""
    zero = lax.eq(s, _const(s.dtype, 0, s.shape))
    safe = lax.select(zero, _const(s.dtype, 1, s.shape), s)
    return lax.select(zero, x, lax.rem(x, safe))


def randint(key, shape, minval, maxval, dtype=int):
    """Uniform integers in [minval, maxval)."""
    key = _check_key("randint", key)
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
    if not (dtypes.is_int(dtype) or dtypes.is_unsigned(dtype)) or dtype == dtypes.bool_:
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = _canon_shape(shape)
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    info = np.iinfo(dtype)
    if info.bits < 32:
        # JAX's: 8- and 16-bit integers are drawn as int32 (less modulo
        # bias) within the type's range, then converted.
        lo = jnp.clip(jnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        hi = jnp.clip(jnp.asarray(maxval).astype(np.int32), int(info.min), int(info.max) + 1)
        return _randint_j(key, shape, lo, hi, np.dtype(np.int32)).astype(dtype)
    return _randint_j(key, shape, minval, maxval, dtype)


def _randint_impl(key, shape, minval, maxval, dtype):
    minval = jnp.asarray(minval)
    maxval = jnp.asarray(maxval)
    if not (dtypes.is_int(minval.dtype) or dtypes.is_unsigned(minval.dtype)):
        minval = minval.astype(dtypes.default_int())
    if not (dtypes.is_int(maxval.dtype) or dtypes.is_unsigned(maxval.dtype)):
        maxval = maxval.astype(dtypes.default_int())
    dmax = _convert_and_clip_integer(_const(dtype, np.iinfo(dtype).max), maxval.dtype)
    maxval_out_of_range = lax.gt(maxval, _bcast_to(dmax, maxval.shape))
    minval = _bcast_to(_convert_and_clip_integer(minval, dtype), shape)
    maxval = _bcast_to(_convert_and_clip_integer(maxval, dtype), shape)
    maxval_out_of_range = _bcast_to(maxval_out_of_range, shape)
    nbits = np.iinfo(dtype).bits
    k1, k2 = _unstack_keys(_split_b(key, (2,)), 2)
    higher = _random_bits_b(k1, nbits, shape)
    lower = _random_bits_b(k2, nbits, shape)
    udt = _UINT[nbits]
    span = lax.convert_element_type(lax.sub(maxval, minval), udt)
    span = lax.select(lax.le(maxval, minval), _const(udt, 1, shape), span)
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, _const(udt, 1, shape)), span)
    multiplier = _urem(_const(udt, 2 ** (nbits // 2), shape), span)
    multiplier = _urem(lax.mul(multiplier, multiplier), span)
    off = lax.add(lax.mul(_urem(higher, span), multiplier), _urem(lower, span))
    off = _urem(off, span)
    return lax.add(minval, lax.convert_element_type(off, dtype))


_randint_j = _rng_jit(_randint_impl, static_argnums=(1, 4))


def _shuffle_impl(key, x, axis):
    exponent = 3
    uint32max = np.iinfo(np.uint32).max
    num_rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(uint32max)))
    for _ in range(num_rounds):
        key, subkey = _unstack_keys(_split_b(key, (2,)), 2)
        sort_keys = _random_bits_b(subkey, 32, x.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


_shuffle_j = _rng_jit(_shuffle_impl, static_argnums=(2,))


def _canon_axis(axis, ndim):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def shuffle(key, x, axis=0):
    """Shuffle x along axis (deprecated in JAX: use permutation(..., independent=True))."""
    key = _check_key("shuffle", key)
    x = jnp.asarray(x)
    return _shuffle_j(key, x, _canon_axis(axis, max(x.ndim, 1)))


def permutation(key, x, axis=0, independent=False):
    """A random permutation of arange(x) or of x along axis."""
    key = _check_key("permutation", key)
    if not np.ndim(x):
        xa = jnp.asarray(x)
        if not (dtypes.is_int(xa.dtype) or dtypes.is_unsigned(xa.dtype)):
            raise TypeError("x must be an integer or at least 1-dimensional")
        if isinstance(x, core.Tracer):
            raise core.ConcretizationTypeError(
                "argument x of jax.random.permutation() must be concrete")
        _canon_axis(axis, 1)
        return _shuffle_j(key, jnp.arange(int(x)), 0)
    x = jnp.asarray(x)
    axis = _canon_axis(axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle_j(key, x, axis)
    ind = _shuffle_j(key, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, ind, axis=axis, unique_indices=True)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random sample from arange(a) or from a along axis."""
    key = _check_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    shape = _canon_shape(shape)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        if isinstance(a, core.Tracer):
            raise core.ConcretizationTypeError("The error occurred in jax.random.choice()")
        n_inputs = int(a)
    else:
        axis = _canon_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, 1, axis if arr.ndim else 0)
    else:
        p_arr = jnp.asarray(p)
        if not dtypes.is_inexact(p_arr.dtype):
            p_arr = p_arr.astype(dtypes.default_float())
        if p_arr.shape != (n_inputs,):
            raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]."
                             f" p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            total = lax.reshape(lax.slice_in_dim(p_cuml, n_inputs - 1, n_inputs, 1, 0), ())
            u = uniform(key, shape, dtype=p_cuml.dtype)
            r = jnp.multiply(total, jnp.subtract(_const(p_cuml.dtype, 1), u))
            ind = jnp.searchsorted(p_cuml, r).astype(dtypes.default_int())
        else:
            g = jnp.add(gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode), jnp.log(p_arr))
            ind = lax.top_k(g, n_draws)[1].astype(dtypes.default_int())
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else \
        tuple(arr.shape[:axis]) + shape + tuple(arr.shape[axis + 1:])
    return jnp.reshape(result, out_shape)


# --------------------------------------------------------------------------
# simple continuous distributions
# --------------------------------------------------------------------------


def orthogonal(key, n, shape=(), dtype=float, m=None):
    """Matrices of shape (*shape, n, m) (m defaults to n) with orthonormal
    columns (n >= m) or rows, uniformly distributed (Haar): the Q of a QR of
    normal samples, its columns' signs fixed by R's diagonal (JAX's
    algorithm)."""
    key = _check_key("orthogonal", key)
    dtype = _canon_float(dtype, "orthogonal")
    m = n if m is None else int(m)
    shape = _canon_shape(shape)
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, 0, -2, -1)
    q = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(q, -1, -2) if n < m else q


def gumbel(key, shape=(), dtype=float, mode=None):
    """Gumbel samples."""
    key = _check_key("gumbel", key)
    dtype = _canon_float(dtype, "gumbel")
    if mode not in (None, "low", "high", "highest"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel_j(key, _canon_shape(shape), dtype, mode or "low")


def _u64_fraction_to_f32(hi, lo):
    """The float32 nearest below the 64-bit fixed-point fraction
    (hi, lo) / 2^64 in (0, 1): its leading one found with count-leading-zeros
    in hi, or in lo where hi is 0, the next 23 bits the mantissa (JAX's
    conversion for gumbel's 'highest' mode)."""
    u32 = np.uint32
    hz, lz = lax.clz(hi), lax.clz(lo)
    hi_empty = lax.eq(hz, _const(u32, 32, hz.shape))
    # (Shifts by 32 are guarded: the shifted-out value is 0.)
    top = jnp.where(hi_empty, _const(u32, 0, hi.shape),
                    lax.shift_left(hi, jnp.where(hi_empty, _const(u32, 0, hz.shape), hz)))
    below = jnp.where(lax.eq(hz, _const(u32, 0, hz.shape)), _const(u32, 0, lo.shape),
                      lax.shift_right_logical(lo, lax.sub(_const(u32, 32, hz.shape), hz)))
    from_lo = jnp.where(lax.eq(lz, _const(u32, 32, lz.shape)), _const(u32, 0, lo.shape),
                        lax.shift_left(lo, jnp.where(lax.eq(lz, _const(u32, 32, lz.shape)),
                                                     _const(u32, 0, lz.shape), lz)))
    mant = lax.bitwise_or(top, jnp.where(hi_empty, from_lo, below))
    mant = lax.bitwise_and(lax.shift_right_logical(mant, _const(u32, 8, mant.shape)),
                           _const(u32, (1 << 23) - 1, mant.shape))
    zeros = jnp.where(hi_empty, lax.add(lz, _const(u32, 32, lz.shape)), hz)
    exp = lax.shift_left(lax.sub(_const(u32, 126, zeros.shape), zeros),
                         _const(u32, 23, zeros.shape))
    exp = lax.bitwise_and(exp, _const(u32, (1 << 30) - (1 << 22), exp.shape))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mant), np.float32)


def _gumbel_impl(key, shape, dtype, mode):
    if mode == "highest" and np.dtype(dtype) == np.float32:
        # JAX's: 64 random bits as a fixed-point u in (0, 1); u < 1/2 is
        # converted as is and log1p(-u) taken, else 1 - u (the bits'
        # complement plus one, with the carry) and log(u) of it.
        u32 = np.uint32
        ax = key.ndim - 1
        bits_ = _random_bits_b(key, 32, (2,) + tuple(shape))
        hi = lax.index_in_dim(bits_, 0, ax, keepdims=False)
        lo = lax.index_in_dim(bits_, 1, ax, keepdims=False)
        nhi, nlo = lax.bitwise_not(hi), lax.bitwise_not(lo)
        carry = lax.convert_element_type(lax.eq(nlo, _const(u32, 0xFFFFFFFF, nlo.shape)), u32)
        nhi, nlo = lax.add(nhi, carry), lax.add(nlo, _const(u32, 1, nlo.shape))
        flip = lax.lt(hi, _const(u32, 1 << 31, hi.shape))
        x = _u64_fraction_to_f32(jnp.where(flip, hi, nhi), jnp.where(flip, lo, nlo))
        return jnp.where(flip, jnp.negative(jnp.log(jnp.negative(jnp.log1p(jnp.negative(x))))),
                         jnp.negative(jnp.log(jnp.negative(jnp.log(x)))))
    if mode in ("high", "highest"):
        # JAX 0.10's: below one half, the second uniform fills the bits the
        # first lacks (u = high + 2^-nmant low + tiny), then -log(-log1p(-u)).
        info = dtypes.finfo(dtype)
        u = _uniform_b(key, (2,) + tuple(shape), dtype)
        high = lax.reshape(lax.slice_in_dim(u, 0, 1, 1, 0), shape)
        low = lax.reshape(lax.slice_in_dim(u, 1, 2, 1, 0), shape)
        fine = jnp.add(jnp.add(high, jnp.multiply(low, _const(dtype, 2.0 ** -info.nmant))),
                       _const(dtype, info.tiny))
        x = jnp.where(high >= 0.5, high, fine)
        return jnp.negative(jnp.log(jnp.negative(jnp.log1p(jnp.negative(x)))))
    u = _uniform_b(key, shape, dtype, np.array(dtypes.finfo(dtype).tiny, dtype),
                   np.array(1.0, dtype))
    return jnp.negative(jnp.log(jnp.negative(jnp.log(u))))


_gumbel_j = _rng_jit(_gumbel_impl, static_argnums=(1, 2, 3))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples from categorical distributions given by logits along axis."""
    key = _check_key("categorical", key)
    logits_arr = jnp.asarray(logits)
    if axis >= 0:
        axis -= logits_arr.ndim
    batch_shape = tuple(np.delete(logits_arr.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _canon_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % logits_arr.ndim, logits_arr.shape[axis])
    if replace:
        g = gumbel(key, (*shape_prefix, *logits_shape), logits_arr.dtype, mode=mode)
        lg = lax.expand_dims(logits_arr, tuple(range(len(shape_prefix))))
        return jnp.argmax(jnp.add(g, lg), axis=axis)
    logits_arr = jnp.add(logits_arr, gumbel(key, logits_arr.shape, logits_arr.dtype, mode=mode))
    k = math.prod(shape_prefix)
    if k > logits_arr.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits_arr.shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(logits_arr, axis, -1), k)
    return jnp.reshape(jnp.moveaxis(indices, -1, 0), shape)


def exponential(key, shape=(), dtype=float):
    """Exponential(1) samples."""
    key = _check_key("exponential", key)
    return _exp_j(key, _canon_shape(shape), _canon_float(dtype, "exponential"))


_exp_j = _rng_jit(_exponential_b, static_argnums=(1, 2))


def laplace(key, shape=(), dtype=float):
    """Laplace(0, 1) samples."""
    key = _check_key("laplace", key)
    return _laplace_j(key, _canon_shape(shape), _canon_float(dtype, "laplace"))


def _laplace_impl(key, shape, dtype):
    epsneg = dtypes.finfo(dtype).epsneg
    u = _uniform_b(key, shape, dtype, np.array(-1.0 + float(epsneg), dtype),
                   np.array(1.0, dtype))
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


_laplace_j = _rng_jit(_laplace_impl, static_argnums=(1, 2))


def logistic(key, shape=(), dtype=float):
    """Logistic(0, 1) samples."""
    key = _check_key("logistic", key)
    return _logistic_j(key, _canon_shape(shape), _canon_float(dtype, "logistic"))


def _logistic_impl(key, shape, dtype):
    # (JAX 0.10's: u in [tiny, 1), log(u) - log1p(-u).)
    x = _uniform_b(key, shape, dtype, np.array(dtypes.finfo(dtype).tiny, dtype),
                   np.array(1.0, dtype))
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


_logistic_j = _rng_jit(_logistic_impl, static_argnums=(1, 2))


def cauchy(key, shape=(), dtype=float):
    """Cauchy samples."""
    key = _check_key("cauchy", key)
    return _cauchy_j(key, _canon_shape(shape), _canon_float(dtype, "cauchy"))


def _cauchy_impl(key, shape, dtype):
    u = _uniform_b(key, shape, dtype, np.array(dtypes.finfo(dtype).eps, dtype),
                   np.array(1.0, dtype))
    return lax.tan(lax.mul(_const(dtype, np.pi, u.shape),
                           lax.sub(u, _const(dtype, 0.5, u.shape))))


_cauchy_j = _rng_jit(_cauchy_impl, static_argnums=(1, 2))


def pareto(key, b, shape=None, dtype=float):
    key = _check_key("pareto", key)
    dtype = _canon_float(dtype, "pareto")
    shape = np.shape(b) if shape is None else _canon_shape(shape)
    _check_shape("pareto", shape, np.shape(b))
    b = lax.convert_element_type(jnp.asarray(b), dtype)
    return jnp.exp(jnp.divide(exponential(key, shape, dtype), b))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=float):
    key = _check_key("lognormal", key)
    dtype = _canon_float(dtype, "lognormal")
    shape = np.shape(sigma) if shape is None else _canon_shape(shape)
    _check_shape("lognormal", shape, np.shape(sigma))
    sigma = lax.convert_element_type(jnp.asarray(sigma), dtype)
    return jnp.exp(jnp.multiply(normal(key, shape, dtype), sigma))


def rademacher(key, shape=(), dtype=int):
    key = _check_key("rademacher", key)
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
    b = bernoulli(key, 0.5, _canon_shape(shape)).astype(dtype)
    return jnp.subtract(jnp.multiply(b, 2), 1).astype(dtype)


def maxwell(key, shape=(), dtype=float):
    key = _check_key("maxwell", key)
    dtype = _canon_float(dtype, "maxwell")
    z = normal(key, _canon_shape(shape) + (3,), dtype)
    return jnp.sqrt(jnp.sum(jnp.multiply(z, z), axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=float):
    key = _check_key("double_sided_maxwell", key)
    dtype = _canon_float(dtype, "double_sided_maxwell")
    shape = _canon_shape(shape) + tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    mk, rk = _split(key)
    m = maxwell(mk, shape, dtype)
    s = rademacher(rk, shape, dtype)
    return jnp.add(jnp.multiply(jnp.multiply(s, m), scale), loc)


def weibull_min(key, scale, concentration, shape=(), dtype=float):
    key = _check_key("weibull_min", key)
    dtype = _canon_float(dtype, "weibull_min")
    u = uniform(key, _canon_shape(shape), dtype)
    return jnp.multiply(jnp.power(jnp.negative(jnp.log1p(jnp.negative(u))),
                                  jnp.divide(1.0, concentration)), scale)


def rayleigh(key, scale=np.float32(1), shape=None, dtype=float):
    key = _check_key("rayleigh", key)
    dtype = _canon_float(dtype, "rayleigh")
    shape = np.shape(scale) if shape is None else _canon_shape(shape)
    _check_shape("rayleigh", shape, np.shape(scale))
    u = uniform(key, shape, dtype)
    scale = lax.convert_element_type(_bcast_to(jnp.asarray(scale), shape), dtype)
    return jnp.multiply(scale, jnp.sqrt(jnp.multiply(jnp.log(u), -2.0)))


def wald(key, mean, shape=None, dtype=float):
    key = _check_key("wald", key)
    dtype = _canon_float(dtype, "wald")
    shape = np.shape(mean) if shape is None else _canon_shape(shape)
    _check_shape("wald", shape, np.shape(mean))
    k1, k2 = _split(key)
    mean = lax.convert_element_type(_bcast_to(jnp.asarray(mean), shape), dtype)
    v = normal(k1, shape, dtype)
    z = uniform(k2, shape, dtype)
    y = v * v
    ym = y * mean
    msq = mean * mean
    sqrt_term = jnp.sqrt(4 * ym + ym * ym)
    x = mean + msq * y / 2 - mean / 2 * sqrt_term
    return jnp.where(z <= mean / (mean + x), x, msq / x)


def geometric(key, p, shape=None, dtype=int):
    key = _check_key("geometric", key)
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
    shape = np.shape(p) if shape is None else _canon_shape(shape)
    _check_shape("geometric", shape, np.shape(p))
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        p = p.astype(dtypes.default_float())
    u = uniform(key, shape, p.dtype)
    g = jnp.floor(jnp.divide(jnp.log(u), _bcast_to(jnp.log1p(jnp.negative(p)), shape))) + 1
    return g.astype(dtype)


def triangular(key, left, mode, right, shape=None, dtype=float):
    key = _check_key("triangular", key)
    dtype = _canon_float(dtype, "triangular")
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(left), np.shape(mode), np.shape(right)))
    shape = _canon_shape(shape)
    left, mode, right = (lax.convert_element_type(_bcast_to(jnp.asarray(v), shape), dtype)
                         for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = uniform(key, shape, dtype)
    out1 = left + jnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - jnp.sqrt((1 - u) * (right - left) * (right - mode))
    return jnp.where(u < fc, out1, out2)


# --------------------------------------------------------------------------
# gamma family (Marsaglia-Tsang with masked rounds)
# --------------------------------------------------------------------------


def _gamma_inner_cond(consts, st):
    _, _, v = st
    return lax.le(v, jnp.zeros_like(v))


def _gamma_inner_body(consts, st):
    (c,) = consts
    k, _, _ = st
    k, sub = _unstack_keys(_split_b(k, (2,)), 2)
    x = _normal_real_b(sub, (), c.dtype)
    return k, x, lax.add(jnp.ones_like(x), lax.mul(x, c))


def _gamma_outer_cond(consts, st):
    d, _ = consts
    _, X, V, U = st
    one = jnp.ones_like(X)
    c1 = lax.ge(U, lax.sub(one, lax.mul(_const(X.dtype, 0.0331, X.shape), lax.mul(X, X))))
    c2 = lax.ge(lax.log(U), lax.add(lax.mul(X, _const(X.dtype, 0.5, X.shape)),
                                    lax.mul(d, lax.add(lax.sub(one, V), lax.log(V)))))
    return lax.bitwise_and(c1, c2)


def _gamma_outer_body(consts, st, loops=False):
    d, c = consts
    k = st[0]
    k, x_key, u_key = _unstack_keys(_split_b(k, (3,)), 3)
    zero = jnp.zeros_like(d)
    inner = (x_key, zero, jnp.full_like(d, -1))
    if loops:
        _, x, v = _loop(_gamma_inner_cond, _gamma_inner_body, (c,), inner)
    else:
        _, x, v = _rounds(_gamma_inner_cond, _gamma_inner_body, (c,), inner,
                          _ROUNDS["gamma_inner"])
    X = lax.mul(x, x)
    V = lax.mul(lax.mul(v, v), v)
    U = _uniform_b(u_key, (), d.dtype)
    return k, X, V, U


def _loop(cond, body, consts, state):
    """`while_loop` of cond/body(consts, state) on one lane (shape (1,)):
    JAX's loop itself, however many rounds it takes."""
    return control_flow.while_loop(lambda st: lax.reshape(cond(consts, st), ()),
                                   lambda st: body(consts, st), state)


def _gamma_one_b(keys, alpha, log_space, loops=False):
    """JAX's _gamma_one, batched over keys uint32[n,W] and alpha[n] (with
    `loops`, n is 1 and the rejection loops are while loops)."""
    dtype = alpha.dtype
    one = jnp.ones_like(alpha)
    third = _const(dtype, 1.0 / 3.0, alpha.shape)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, third)
    c = lax.div(third, lax.sqrt(d))
    k, subkey = _unstack_keys(_split_b(keys, (2,)), 2)
    zero = jnp.zeros_like(alpha)
    state = (k, zero, one, _const(dtype, 2, alpha.shape))
    if loops:
        _, _, V, _ = _loop(_gamma_outer_cond, functools.partial(_gamma_outer_body, loops=True),
                           (d, c), state)
    else:
        _, _, V, _ = _while(_gamma_outer_cond, _gamma_outer_body, (d, c), state,
                            _ROUNDS["gamma_outer"])
    if log_space:
        log_samples = lax.neg(_exponential_b(subkey, (), dtype))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(one, _uniform_b(subkey, (), dtype))
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _gamma_impl(key, a, shape, dtype, log_space):
    a = lax.convert_element_type(jnp.asarray(a), dtype)
    a = _bcast_to(a, shape)
    n = math.prod(shape)
    if n == 0:
        return jnp.zeros(shape, dtype)
    return _gamma_samples(key, a, shape, log_space)


@functools.partial(custom_jvp, nondiff_argnums=(2, 3))
def _gamma_samples(key, a, shape, log_space):
    n = math.prod(shape)
    keys = _split_b(key, (n,))
    alphas = lax.reshape(a, (n,))
    if _current() is prng.THREEFRY:
        samples = _gamma_one_b(keys, alphas, log_space)
    else:  # JAX maps over the keys (a batched rbg draw would take the first key's bits)
        samples = control_flow.map(
            lambda ka: _gamma_one_b(ka[0][None], ka[1][None], log_space, loops=True)[0],
            (keys, alphas))
    return lax.reshape(samples, shape)


@_gamma_samples.defjvp
def _gamma_samples_jvp(shape, log_space, primals, tangents):
    """JAX's implicit reparameterization: d sample / d a is
    `random_gamma_grad(a, sample)` (of log(sample) in log space), not the
    derivative of the rejection sampler's arithmetic."""
    key, a = primals
    _, a_dot = tangents
    out = _gamma_samples(key, a, shape, log_space)
    if log_space:
        x = jnp.exp(out)
        grad = lax_extras.random_gamma_grad(a, x) / x
    else:
        grad = lax_extras.random_gamma_grad(a, out)
    return out, grad * a_dot


def _gamma(key, a, shape, dtype, log_space):
    if shape is None:
        shape = np.shape(a)
    else:
        shape = _canon_shape(shape)
        _check_shape("gamma", shape, np.shape(a))
    return _gamma_impl(key, a, tuple(shape), dtype, log_space)


def gamma(key, a, shape=None, dtype=float):
    """Gamma(a, 1) samples (Marsaglia-Tsang, as JAX)."""
    key = _check_key("gamma", key)
    return _gamma(key, a, shape, _canon_float(dtype, "gamma"), False)


def loggamma(key, a, shape=None, dtype=float):
    """log of Gamma(a, 1) samples, computed in log space."""
    key = _check_key("loggamma", key)
    return _gamma(key, a, shape, _canon_float(dtype, "loggamma"), True)


def beta(key, a, b, shape=None, dtype=float):
    """Beta(a, b) samples."""
    key = _check_key("beta", key)
    dtype = _canon_float(dtype, "beta")
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(a), np.shape(b)))
    else:
        shape = _canon_shape(shape)
        _check_shape("beta", shape, np.shape(a), np.shape(b))
    a = _bcast_to(lax.convert_element_type(jnp.asarray(a), dtype), shape)
    b = _bcast_to(lax.convert_element_type(jnp.asarray(b), dtype), shape)
    key_a, key_b = _split(key)
    lga = _gamma(key_a, a, shape, dtype, True)
    lgb = _gamma(key_b, b, shape, dtype, True)
    log_max = lax.max(lga, lgb)
    ga = jnp.exp(lga - log_max)
    gb = jnp.exp(lgb - log_max)
    return ga / (ga + gb)


def dirichlet(key, alpha, shape=None, dtype=float):
    """Dirichlet(alpha) samples over the last axis of alpha."""
    key = _check_key("dirichlet", key)
    dtype = _canon_float(dtype, "dirichlet")
    if np.ndim(alpha) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
    if shape is None:
        shape = np.shape(alpha)[:-1]
    else:
        shape = _canon_shape(shape)
        _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
    alpha = lax.convert_element_type(jnp.asarray(alpha), dtype)
    lg = _gamma(key, alpha, tuple(shape) + np.shape(alpha)[-1:], dtype, True)
    m = jnp.max(lg, axis=-1, keepdims=True)
    un = jnp.exp(lg - m)
    return un / jnp.sum(un, axis=-1, keepdims=True)


def t(key, df, shape=None, dtype=float):
    key = _check_key("t", key)
    dtype = _canon_float(dtype, "t")
    shape = np.shape(df) if shape is None else _canon_shape(shape)
    df = lax.convert_element_type(jnp.asarray(df), dtype)
    key_n, key_g = _split(key)
    n = normal(key_n, shape, dtype)
    half_df = jnp.divide(df, _const(dtype, 2))
    g = gamma(key_g, half_df, shape, dtype)
    return n * jnp.sqrt(half_df / g)


def chisquare(key, df, shape=None, dtype=float):
    key = _check_key("chisquare", key)
    dtype = _canon_float(dtype, "chisquare")
    shape = np.shape(df) if shape is None else _canon_shape(shape)
    df = lax.convert_element_type(jnp.asarray(df), dtype)
    half_df = jnp.divide(df, _const(dtype, 2))
    return jnp.multiply(jnp.exp(loggamma(key, half_df, shape, dtype)), _const(dtype, 2))


def f(key, dfnum, dfden, shape=None, dtype=float):
    key = _check_key("f", key)
    dtype = _canon_float(dtype, "f")
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(dfden), np.shape(dfnum)))
    shape = _canon_shape(shape)
    dfden = lax.convert_element_type(jnp.asarray(dfden), dtype)
    dfnum = lax.convert_element_type(jnp.asarray(dfnum), dtype)
    key_dfd, key_dfn = _split(key)
    chi2_dfn = chisquare(key_dfn, dfnum, shape, dtype)
    chi2_dfd = chisquare(key_dfd, dfden, shape, dtype)
    return (chi2_dfn / _bcast_to(dfnum, shape)) / (chi2_dfd / _bcast_to(dfden, shape))


def generalized_normal(key, p, shape=(), dtype=float):
    key = _check_key("generalized_normal", key)
    dtype = _canon_float(dtype, "generalized_normal")
    shape = _canon_shape(shape)
    key_g, key_r = _split(key)
    g = gamma(key_g, 1 / p, shape, dtype)
    r = rademacher(key_r, shape, dtype)
    return r * g ** (1 / p)


def ball(key, d, p=2, shape=(), dtype=float):
    key = _check_key("ball", key)
    dtype = _canon_float(dtype, "ball")
    shape = _canon_shape(shape)
    k1, k2 = _split(key)
    g = generalized_normal(k1, p, (*shape, int(d)), dtype)
    e = exponential(k2, shape, dtype)
    return g / jnp.expand_dims(((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p), -1)


# --------------------------------------------------------------------------
# poisson (Knuth for lam < 10, Hormann's transformed rejection otherwise)
# --------------------------------------------------------------------------


def _knuth_cond(consts, st):
    (lam,) = consts
    _, _, log_prod = st
    return jnp.any(lax.gt(log_prod, lax.neg(lam)))


def _knuth_body(consts, st):
    (lam,) = consts
    k, rng, log_prod = st
    rng, subkey = _unstack_keys(_split_b(rng, (2,)), 2)
    k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, jnp.ones_like(k)), k)
    u = _uniform_b(subkey, lam.shape, dtypes.float32)
    return k, rng, lax.add(log_prod, lax.log(u))


def _rejection_consts(lam):
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    return lam, log_lam, a, b, inv_alpha, v_r


def _rejection_cond(consts, st):
    _, accepted, _ = st
    return jnp.any(lax.bitwise_not(accepted))


def _rejection_body(consts, st):
    lam, log_lam, a, b, inv_alpha, v_r = consts
    k_out, accepted, key = st
    key, sk0, sk1 = _unstack_keys(_split_b(key, (3,)), 3)
    u = _uniform_b(sk0, lam.shape, lam.dtype) - 0.5
    v = _uniform_b(sk1, lam.shape, lam.dtype)
    u_shifted = 0.5 - abs(u)
    k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
    s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
    tt = -lam + k * log_lam - lax.lgamma(k + 1)
    accept1 = (u_shifted >= 0.07) & (v <= v_r)
    reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
    accept2 = s <= tt
    accept = accept1 | (~reject & accept2)
    k_out = lax.select(accept, k, k_out)
    return k_out, accepted | accept, key


def poisson(key, lam, shape=None, dtype=int):
    """Poisson(lam) samples."""
    key = _check_key("poisson", key)
    if _current() is not prng.THREEFRY:
        raise NotImplementedError("`poisson` is only implemented for the threefry2x32 RNG, "
                                  f"not {_current().name} (at {core.where()})")
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
    shape = np.shape(lam) if shape is None else _canon_shape(shape)
    lam = lax.convert_element_type(_bcast_to(jnp.asarray(lam), shape), dtypes.float32)
    shape = tuple(shape)
    use_knuth = jnp.isnan(lam) | (lam < 10)
    lam_knuth = jnp.where(use_knuth, lam, 0.0)
    lam_rej = jnp.where(use_knuth, 1e5, lam)
    k0 = jnp.zeros(shape, dtype)
    lp0 = jnp.zeros(shape, dtypes.float32)
    k, _, _ = _while(_knuth_cond, _knuth_body, (lam_knuth,), (k0, key, lp0),
                     _ROUNDS["poisson_knuth"])
    knuth = (k - 1).astype(dtype)
    st = (jnp.full(shape, -1.0, dtypes.float32), jnp.zeros(shape, dtypes.bool_), key)
    kr, _, _ = _while(_rejection_cond, _rejection_body, _rejection_consts(lam_rej), st,
                      _ROUNDS["poisson_rejection"])
    result = jnp.where(use_knuth, knuth, kr.astype(dtype))
    return jnp.where(lam == 0, jnp.zeros_like(result), result)


# --------------------------------------------------------------------------
# multivariate normal
# --------------------------------------------------------------------------


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal samples: mean + factor @ z with factor the Cholesky
    factor of cov, or from its SVD (u * sqrt(s)) or eigendecomposition
    (v * sqrt(w)), as JAX computes it."""
    key = _check_key("multivariate_normal", key)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean = jnp.asarray(mean)
    cov = jnp.asarray(cov)
    if not dtypes.is_inexact(mean.dtype):
        mean = mean.astype(dtypes.default_float())
    if not dtypes.is_inexact(cov.dtype):
        cov = cov.astype(dtypes.default_float())
    dt = jnp.promote_types(mean.dtype, cov.dtype)
    mean, cov = mean.astype(dt), cov.astype(dt)
    dtype = dt if dtype is None else _canon_float(dtype, "multivariate_normal")
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cov.shape}.")
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = _canon_shape(shape)
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, sv, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(sv[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = normal(key, shape + mean.shape[-1:], dtype)
    prod = jnp.matmul(factor, jnp.expand_dims(z, -1))
    return mean + jnp.squeeze(prod, -1)


# --------------------------------------------------------------------------
# binomial (inversion for count * q <= 10, BTRS otherwise) and multinomial
# --------------------------------------------------------------------------

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    """log k! minus its Stirling approximation (a table below 10)."""
    table = jnp.asarray(np.asarray(_STIRLING_TAIL, dtype=k.dtype))
    small = k <= 9
    k = lax.clamp(_const(k.dtype, 0.0), k, _const(k.dtype, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    idx = lax.convert_element_type(jnp.floor(k), dtypes.int32)
    return lax.select(small, table[idx], approx)


def _binomial_inversion(key, count, prob, shape, dtype):
    log1mp = jnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, k = carry
        subkey, k = _unstack_keys(_split_b(k, (2,)), 2)
        num_geom = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform_b(subkey, shape, prob.dtype)
        geom_sum = geom_sum + jnp.ceil(jnp.log(u) / log1mp)
        return i + 1, num_geom, geom_sum, k

    def cond(carry):
        return jnp.any(carry[2] <= count)

    zeros = jnp.zeros(shape, prob.dtype)
    init = (jnp.asarray(0, dtypes.int32), zeros, zeros, key)
    num_geom = control_flow.while_loop(cond, body, init)[1]
    return (num_geom - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype):
    """Hormann's transformed rejection with squeeze (BTRS)."""
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, k = carry
        k, sk0, sk1 = _unstack_keys(_split_b(k, (3,)), 3)
        u = _uniform_b(sk0, shape, prob.dtype) - 0.5
        v = _uniform_b(sk1, shape, prob.dtype)
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        kk = jnp.floor((2 * a / us + b) * u + c)
        reject = (kk < 0) | (kk > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp.log((count - m + 1) / (count - kk + 1))
              + (kk + 0.5) * jnp.log(r * (count - kk + 1) / (kk + 1))
              + _stirling_tail(m) + _stirling_tail(count - m)
              - _stirling_tail(kk) - _stirling_tail(count - kk))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, lax.select(accept, kk, k_out), accepted | accept, k

    def cond(carry):
        return jnp.any(~carry[2])

    init = (jnp.asarray(0, dtypes.int32), jnp.full(shape, -1, prob.dtype),
            jnp.zeros(shape, dtypes.bool_), key)
    return control_flow.while_loop(cond, body, init)[1].astype(dtype)


def _binomial_impl(key, count, prob, shape, dtype):
    if not dtypes.is_inexact(prob.dtype):
        prob = prob.astype(dtypes.default_float())
    count = lax.convert_element_type(count, prob.dtype)
    count = _bcast_to(count, shape)
    prob = _bcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = lax.select(use_inversion, count, jnp.zeros_like(count))
    count_btrs = lax.select(use_inversion, jnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, jnp.full_like(q, 0.5), q)
    samples = lax.select(use_inversion,
                         _binomial_inversion(key, count_inv, q, shape, dtype),
                         _btrs(key, count_btrs, q_btrs, shape, dtype))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


_binomial_j = _rng_jit(_binomial_impl, static_argnums=(3, 4))


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) samples as floats (JAX's algorithms: inversion when
    n * min(p, 1 - p) <= 10, BTRS otherwise)."""
    key = _check_key("binomial", key)
    _check_arraylike("binomial", n, p)
    dtype = _canon_float(dtype, "binomial")
    n, p = jnp.asarray(n), jnp.asarray(p)
    if shape is None:
        shape = tuple(np.broadcast_shapes(n.shape, p.shape))
    else:
        shape = _canon_shape(shape)
        _check_shape("binomial", shape, n.shape, p.shape)
    return _binomial_j(key, n, p, tuple(shape), dtype)


def _check_arraylike(name, *args):
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                            f"position {i}. (at {core.where()})")


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial counts of `n` trials over the outcomes along p's last axis
    (a binomial draw per outcome, as JAX)."""
    key = _check_key("multinomial", key)
    _check_arraylike("multinomial", n, p)
    n, p = jnp.asarray(n), jnp.asarray(p)
    dt = jnp.result_type(n, p)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float()
    n, p = n.astype(dt), p.astype(dt)
    dtype = _canon_float(dtype, "multinomial")
    shape = p.shape if shape is None else _canon_shape(shape)
    n = jnp.broadcast_to(n, tuple(shape[:-1]))
    p = jnp.broadcast_to(p, tuple(shape))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = _binomial_impl(k, remainder, jnp.clip(ratio, 0, 1), remainder.shape,
                               remainder.dtype)
        return remainder - count, count

    p = jnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = _split_j(key, (ratios.shape[0],))
    _, counts = control_flow.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(dtype)


def key_dtype(impl=None):
    """The dtype of typed keys of a PRNG implementation (`key<fry>`,
    `key<rbg>`, `key<urbg>`)."""
    return prng._DTYPES[_resolve_impl(impl)]


def _takes_out_sharding(fn):
    """`fn` with JAX's `out_sharding=` keyword: the draw is the same for any
    sharding (as JAX's partitionable threefry), then laid out by it."""
    import functools

    @functools.wraps(fn)
    def sampler(*args, out_sharding=None, **kwargs):
        out = fn(*args, **kwargs)
        return out if out_sharding is None else core.with_out_sharding(out, out_sharding)
    return sampler


for _name in ("bits", "uniform", "randint", "permutation", "normal", "multivariate_normal",
              "truncated_normal", "bernoulli", "beta", "cauchy", "dirichlet", "exponential",
              "gamma", "loggamma", "poisson", "gumbel", "categorical", "laplace", "logistic",
              "pareto", "t", "chisquare", "f", "rademacher", "maxwell", "orthogonal",
              "generalized_normal", "ball", "rayleigh", "wald", "geometric", "triangular",
              "lognormal"):
    globals()[_name] = _takes_out_sharding(globals()[_name])
for _name in __all__:
    globals()[_name] = _public(globals()[_name])
del _name
