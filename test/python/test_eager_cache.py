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


def test_elementwise_functions_run_through_the_c_dispatch(monkeypatch, cpu_platform):
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


def test_eager_ops_compile_in_tiers(compiles, cpu_platform):
    # The first call of a primitive outside traces that moves data (no float
    # products or reductions) compiles without LLVM's optimizer; called
    # _TIER_UP_CALLS times it is compiled again at the full level. Small ops
    # stay in the first tier, large ones start in the second. (jnp's
    # elementwise functions are jitted programs: test above.)
    core._eager_cache.clear()
    v = jnp.asarray(np.linspace(-2, 2, 1000, dtype=np.float32))
    out = lax.rev(v, (0,))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(v)[::-1])
    (key, entry), = [(k, e) for k, e in core._eager_cache.items() if k[0] == "reverse"]
    assert entry.exe.opt_level == 0 and entry.calls == 0
    n = compiles[0]
    for _ in range(core._TIER_UP_CALLS):
        again = lax.rev(v, (0,))
    assert entry.exe.opt_level == core.compiler.OPT_LEVEL and entry.calls == -1
    assert compiles[0] > n
    np.testing.assert_array_equal(np.asarray(again), np.asarray(out))
    n = compiles[0]
    for _ in range(20):
        lax.rev(v, (0,))
    assert compiles[0] == n  # (no further compile)

    small = lax.rev(jnp.asarray(np.arange(8.0, dtype=np.float32)), (0,))
    large = lax.rev(jnp.asarray(np.arange(core._LARGE_ELEMENTS + 1.0, dtype=np.float32)), (0,))
    revs = {k[1][0].shape: e for k, e in core._eager_cache.items() if k[0] == "reverse"}
    assert revs[(8,)].exe.opt_level == 0 and revs[(8,)].calls == -1
    big = revs[(core._LARGE_ELEMENTS + 1,)]
    assert big.exe.opt_level == core.compiler.OPT_LEVEL and big.calls == -1
    np.testing.assert_array_equal(np.asarray(small), np.arange(8.0)[::-1])
    np.testing.assert_array_equal(np.asarray(large)[:2],
                                  [core._LARGE_ELEMENTS, core._LARGE_ELEMENTS - 1])


@pytest.mark.parametrize("call", [
    lambda v: lax.exp(v),
    lambda v: jnp.sum(v),
    lambda v: ember.nn.logsumexp(v),
    lambda v: ember.scipy.special.gammaln(v + 3.0),
], ids=["exp", "sum", "logsumexp", "gammaln"])
def test_float_arithmetic_compiles_optimized_and_equals_jit(call):
    # Float products and reductions come out differently at LLVM's levels
    # (FMAs, partial sums): such programs compile at the full level at once,
    # so that eager results never change between calls and equal jit's.
    core._eager_cache.clear()
    v = jnp.asarray(np.linspace(0.1, 3, 1000, dtype=np.float32))
    first = call(v)
    assert all(e.exe.opt_level == core.compiler.OPT_LEVEL for e in core._eager_cache.values())
    for _ in range(core._TIER_UP_CALLS + 1):
        later = call(v)
    np.testing.assert_array_equal(np.asarray(later), np.asarray(first))
    np.testing.assert_array_equal(np.asarray(ember.jit(call)(v)), np.asarray(first))


def test_small_inputs_large_results_start_optimized(cpu_platform):
    core._eager_cache.clear()
    out = jnp.linspace(0.0, 1.0, core._LARGE_ELEMENTS + 7)
    np.testing.assert_allclose(np.asarray(out)[[0, -1]], [0.0, 1.0])
    entry, = [e for k, e in core._eager_cache.items() if not isinstance(k[0], str)]
    assert entry.exe.opt_level == core.compiler.OPT_LEVEL and entry.calls == -1


m = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
i = np.array([2, 0, 3, 3])
# Each call's inputs: the arrays, indices and square matrices it takes.
inputs = {"a": m, "j": i, "j9": i - 9, "j2": i[:2], "j3": i % 3, "a0": m[0],
          "sq": m[:, :3, :3] + 3 * np.eye(3, dtype=np.float32)}


@pytest.mark.parametrize("call, want", [
    (lambda v: jnp.take(v["a"], v["j"], axis=1), lambda: np.take(m, i, axis=1)),
    (lambda v: jnp.take(v["a"], v["j9"], axis=1, mode="fill", fill_value=-1.0),
     lambda: np.full((3, 4, 5), -1.0)),
    (lambda v: v["a"][1:, ::2, v["j2"]], lambda: m[1:, ::2, i[:2]]),
    (lambda v: v["a"][v["j3"], None, 1], lambda: m[i % 3, None, 1]),
    (lambda v: v["a"].at[:, v["j"]].set(7.0), lambda: _set(m, (slice(None), i), 7.0)),
    (lambda v: v["a"].at[0, v["j"]].add(1.0), lambda: _add(m, (0, i), 1.0)),
    (lambda v: v["a"].at[v["j"]].get(mode="clip"), lambda: m[np.minimum(i, 2)]),
    (lambda v: jnp.var(v["a"], axis=(0, 2), ddof=1), lambda: np.var(m, axis=(0, 2), ddof=1)),
    (lambda v: jnp.linalg.norm(v["a0"], ord=1), lambda: np.linalg.norm(m[0], ord=1)),
    (lambda v: ember.nn.logsumexp(v["a"], axis=-1),
     lambda: np.log(np.sum(np.exp(m), axis=-1))),
    (lambda v: jnp.argsort(v["a"], axis=1, descending=True),
     lambda: np.argsort(-m, axis=1, kind="stable")),
    (lambda v: jnp.roll(v["a"], 2, axis=2), lambda: np.roll(m, 2, axis=2)),
    (lambda v: jnp.linalg.slogdet(v["sq"]), lambda: tuple(np.linalg.slogdet(inputs["sq"]))),
], ids=["take", "take-fill", "getitem", "getitem-new", "at-set", "at-add", "at-get", "var",
        "norm", "logsumexp", "argsort", "roll", "slogdet"])
def test_jnp_functions_outside_traces_are_one_program(call, want, compiles):
    # As JAX's jitted jnp functions: one compile for the whole function (was
    # one per primitive: nine for take, thirteen for .at[].set), the same
    # results as under jit and as NumPy, and no compile on later calls.
    core._eager_cache.clear()
    v = {k: jnp.asarray(x) for k, x in inputs.items()}
    out = call(v)
    assert compiles[0] == 1
    for _ in range(3):
        again = call(v)
    assert compiles[0] == 1
    jitted = ember.jit(call)(v)
    for o, g, w in zip(ember.tree_leaves(out), ember.tree_leaves(jitted),
                       ember.tree_leaves(want())):
        assert o.dtype == g.dtype and o.shape == np.shape(w)
        np.testing.assert_allclose(np.asarray(o), np.asarray(g), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(o), w, rtol=2e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(ember.tree_leaves(again)[0]),
                                  np.asarray(ember.tree_leaves(out)[0]))


def _set(a, idx, v):
    a = a.copy()
    a[idx] = v
    return a


def _add(a, idx, v):
    a = a.copy()
    np.add.at(a, idx, v)
    return a


def test_outside_traces_keeps_types_and_errors():
    a = jnp.asarray(m)
    # Weak types of Python scalars, as op by op.
    assert repr(jnp.round(2.5)) == "Array(2., dtype=float32, weak_type=True)"
    assert jnp.isclose(a, a + 1e-9).dtype == np.bool_
    # Arguments it does not take (lists, masks) run op by op, as before.
    np.testing.assert_array_equal(np.asarray(a[np.asarray(m > 0)]), m[m > 0])
    np.testing.assert_array_equal(np.asarray(jnp.roll(a, (1, 2), axis=(0, 1))),
                                  np.roll(m, (1, 2), axis=(0, 1)))
    # Errors name the user's line.
    with pytest.raises(ValueError, match=r"same number of dimensions(.|\n)*test_eager_cache"):
        jnp.take_along_axis(a, jnp.asarray(i), axis=0)
    with pytest.raises(IndexError, match="Too many indices"):
        a[0, 0, 0, jnp.asarray(i)]


def test_int_indexing_in_a_python_loop_compiles_once(compiles):
    # As JAX: in-bounds ints of an index are operands of the compiled
    # program, so `x[i]` over a loop compiles once (was once per `i`);
    # out-of-bounds ints clamp, as before.
    core._eager_cache.clear()
    a = jnp.asarray(m)
    got = [np.asarray(a[i, 1:, -1]) for i in range(3)] + [np.asarray(a[-1, 1:, -1])]
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g, m[[0, 1, 2, -1][i], 1:, -1])
    assert compiles[0] == 1
    np.testing.assert_array_equal(np.asarray(a[7]), m[2])  # (clamped, as JAX)
    assert [float(v) for v in jnp.asarray(m[0, 0])] == [float(v) for v in m[0, 0]]


def test_ember_opt_level_is_honoured():
    # EMBER_OPT_LEVEL sets LLVM's level of every compile (0: no tiers).
    import os
    import subprocess
    import sys
    code = ("import ember, ember.numpy as jnp\n"
            "from ember._src import compiler, core\n"
            "f = ember.jit(lambda x: x * 2.0 + 1.0)\n"
            "f(jnp.ones(3))\n"
            "print(compiler.OPT_LEVEL, {e.opt_level for e in core._program_cache.values()})\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, EMBER_OPT_LEVEL="0"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "0 {0}"
