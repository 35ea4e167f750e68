"""Transformations outside `jit` compile a program once: later calls with
the same shapes, from new transformation objects, reuse the compiled code;
the cache is bounded and keeps no user function alive."""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src import core

x = np.linspace(0.0, 1.0, 100).astype(np.float32)


def f(v):
    return jnp.sum(jnp.sin(v) ** 2)


@pytest.mark.parametrize("call", [
    lambda: ember.grad(f)(x),
    lambda: ember.value_and_grad(f)(x),
    lambda: ember.vmap(jnp.sin)(x),
    lambda: ember.jvp(f, (x,), (x,)),
    lambda: ember.jacrev(lambda v: jnp.sin(v[:4]))(x),
    lambda: lax.cond(True, jnp.sin, jnp.cos, x),
    lambda: lax.scan(lambda c, v: (c + v, c), 0.0, x),
    lambda: lax.while_loop(lambda c: c < 10, lambda c: c + 1, 0),
], ids=["grad", "value_and_grad", "vmap", "jvp", "jacrev", "cond", "scan", "while_loop"])
def test_repeated_calls_compile_once(call, compiles):
    first = call()
    n = compiles[0]
    assert n >= 1
    for _ in range(5):
        again = call()
    assert compiles[0] == n
    np.testing.assert_allclose(np.asarray(ember.tree_leaves(again)[0]),
                               np.asarray(ember.tree_leaves(first)[0]))


def test_other_shapes_and_values_of_closures_recompile(compiles):
    ember.grad(f)(x)
    ember.grad(f)(x[:50])
    assert compiles[0] == 2
    # A closed-over constant is part of the program.
    for c in (1.0, 2.0):
        g = ember.grad(lambda v, c=c: jnp.sum(v * c))(x)
        np.testing.assert_allclose(np.asarray(g), np.full_like(x, c))
    assert compiles[0] == 4


def test_cache_is_bounded(compiles):
    old = ember.config.ember_program_cache_size
    ember.config.update("ember_program_cache_size", 3)
    try:
        for n in range(1, 8):
            ember.grad(f)(x[:n])
        assert len(core._program_cache) == 3
        assert len(core._bytecode_index) == 3
        ember.grad(f)(x[:1])  # evicted: compiled again
        assert compiles[0] == 8
    finally:
        ember.config.update("ember_program_cache_size", old)


def test_no_user_function_kept_alive():
    def make():
        scale = np.float32(3.0)

        def g(v):
            return jnp.sum(v * scale)
        return g

    g = make()
    ember.grad(g)(x)
    ember.vmap(g)(x[None])
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None


def test_memory_flat_over_10000_calls():
    ember.grad(f)(x)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(1000):
            ember.grad(f)(x)
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(9000):
            ember.grad(f)(x)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000, f"{grown} bytes more after 9000 more calls"


def test_elementwise_functions_run_through_the_c_dispatch(monkeypatch):
    # Outside traces, jnp's elementwise functions are jitted programs, and
    # after the first call (Python scalars included) jit's C++ path serves
    # them: the Python path is not taken again.
    from ember._src.api import JitWrapped
    a = jnp.asarray(x)

    def chain(v):
        return jnp.tanh(v) * 2.0 + jnp.cos(v) - 1 + (v > 0.5)

    want = np.tanh(x) * 2 + np.cos(x) - 1 + (x > 0.5)
    np.testing.assert_allclose(np.asarray(chain(a)), want, rtol=1e-6)

    def slow(self, args, kwargs):
        raise AssertionError(f"Python dispatch for {self.fun.__name__}")
    monkeypatch.setattr(JitWrapped, "_call_slow", slow)
    out = chain(a)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    assert out.dtype == np.float32
    monkeypatch.undo()
    # Results keep JAX's types: weak for scalars only, x64 honoured.
    assert repr(jnp.add(1, 2)) == "Array(3, dtype=int32, weak_type=True)"
    assert repr(jnp.multiply(2.5, True)) == "Array(2.5, dtype=float32, weak_type=True)"
    with ember.disable_jit():
        assert repr(jnp.add(1, 2)) == "Array(3, dtype=int32, weak_type=True)"
