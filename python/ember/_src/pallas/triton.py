"""The Triton-flavoured kernel API (`jax.experimental.pallas.triton`):
masked loads and stores, atomics, `dot`. On the CPU they are the same ref
reads and writes as `ref[idx]` (a mask selects, `other` fills)."""

from .. import core, state
from ..numpy import lax_numpy as jnp


class CompilerParams:
    """Triton's launch parameters; accepted, unused on the CPU."""

    def __init__(self, num_warps=None, num_stages=None, **kw):
        self.num_warps, self.num_stages = num_warps, num_stages


def load(ref, *, mask=None, other=None, cache_modifier=None, eviction_policy=None, volatile=False):
    """All of `ref` (a ref or a view `ref.at[idx]`), `other` where `mask`
    is false."""
    return state.load(ref, (), mask=mask, other=other)


def store(ref, val, *, mask=None, eviction_policy=None):
    state.store(ref, (), val, mask=mask)


def _atomic(combine):
    def rmw(x_ref_or_view, idx, val, *, mask=None):
        old = state.load(x_ref_or_view, idx)
        v = state._as_stored(x_ref_or_view, val, old.shape, "atomic")
        state.store(x_ref_or_view, idx, combine(old, v), mask=mask)
        return old

    return rmw


atomic_add = _atomic(lambda a, b: a + b)
atomic_max = _atomic(jnp.maximum)
atomic_min = _atomic(jnp.minimum)
atomic_and = _atomic(lambda a, b: a & b)
atomic_or = _atomic(lambda a, b: a | b)
atomic_xor = _atomic(lambda a, b: a ^ b)
atomic_xchg = _atomic(lambda a, b: b)


def atomic_cas(ref, cmp, val):
    """Compare-and-swap of a scalar ref: writes `val` where the ref holds
    `cmp`; returns the old value."""
    old = state.load(ref, ())
    state.store(ref, (), jnp.where(old == cmp, core.as_value(val), old))
    return old


def dot(a, b, trans_a=False, trans_b=False, allow_tf32=None, precision=None):
    a, b = core.as_value(a), core.as_value(b)
    if trans_a:
        a = jnp.swapaxes(a, -1, -2)
    if trans_b:
        b = jnp.swapaxes(b, -1, -2)
    return jnp.matmul(a, b, precision=precision)


def approx_tanh(x):
    return jnp.tanh(x)


def max_contiguous(x, values):
    return x


def debug_barrier():
    """Threads of a program run in lock step on the CPU: nothing to wait for."""


__all__ = [
    "CompilerParams",
    "load",
    "store",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_xchg",
    "atomic_cas",
    "dot",
    "approx_tanh",
    "max_contiguous",
    "debug_barrier",
]
