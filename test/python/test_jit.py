"""jit: static arguments, kwargs, pytrees, retracing, lowering."""

import numpy as np
import pytest

import ember as jax

from helpers import assert_close, jnp


def test_jit_basic_and_cache():
    calls = []

    def f(x, y):
        calls.append(1)
        return jnp.sin(x) * y + 1

    jf = jax.jit(f)
    x = np.arange(3, dtype=np.float32)
    assert_close(jf(x, 2.0), np.sin(x) * 2 + 1, rtol=1e-6, atol=1e-6)
    jf(x + 1, 3.0)
    assert len(calls) == 1  # same shapes/dtypes: no retrace
    jf(np.arange(4, dtype=np.float32), 3.0)
    assert len(calls) == 2  # new shape: retrace
    jf(np.arange(4, dtype=np.int32), 3.0)
    assert len(calls) == 3  # new dtype: retrace


def test_static_argnums_and_argnames():
    calls = []

    def f(x, n, *, mode="a"):
        calls.append((n, mode))
        return x * n if mode == "a" else x + n

    jf = jax.jit(f, static_argnums=1, static_argnames="mode")
    x = jnp.ones(3)
    assert_close(jf(x, 2), np.full(3, 2.0, np.float32))
    assert_close(jf(x, 3), np.full(3, 3.0, np.float32))
    assert_close(jf(x, 3, mode="b"), np.full(3, 4.0, np.float32))
    jf(x, 3, mode="b")
    assert calls == [(2, "a"), (3, "a"), (3, "b")]
    jg = jax.jit(lambda x, shape: jnp.reshape(x, shape), static_argnames=("shape",))
    assert jg(jnp.arange(6), shape=(2, 3)).shape == (2, 3)
    assert jg(jnp.arange(6), (3, 2)).shape == (3, 2)


def test_static_arg_must_be_hashable():
    jf = jax.jit(lambda x, s: x, static_argnums=1)
    with pytest.raises((ValueError, TypeError)):
        jf(1.0, [1, 2])


def test_kwargs_and_defaults():
    @jax.jit
    def f(x, y=2.0, *, z):
        return x * y + z

    assert_close(f(jnp.ones(2), z=1.0), np.full(2, 3.0, np.float32))
    assert_close(f(jnp.ones(2), y=3.0, z=jnp.ones(2)), np.full(2, 4.0, np.float32))


def test_pytrees_in_and_out():
    @jax.jit
    def f(params, xs):
        return {"out": params["w"] @ xs[0] + params["b"], "aux": (xs[1].sum(), None)}

    params = {"w": np.eye(2, dtype=np.float32) * 2, "b": np.ones(2, np.float32)}
    out = f(params, (np.array([1.0, 2.0], np.float32), np.arange(3.0)))
    assert set(out) == {"out", "aux"}
    assert_close(out["out"], np.array([3.0, 5.0], np.float32))
    assert_close(out["aux"][0], np.float32(3.0))
    assert out["aux"][1] is None


def test_jit_returns_scalars_and_constants():
    f = jax.jit(lambda x: (x.sum(), 3, jnp.float32(2.0)))
    s, c, d = f(np.ones(3, np.float32))
    assert float(s) == 3.0 and int(c) == 3 and float(d) == 2.0


def test_weak_type_preserved_through_jit():
    f = jax.jit(lambda x: x * 2)
    assert f(jnp.ones(2, jnp.float16)).dtype == np.float16
    assert f(1.5).dtype == np.float32
    assert (f(1.5) + jnp.ones(2, jnp.float16)).dtype == np.float16


def test_nested_jit_and_decorator_form():
    inner = jax.jit(lambda x: x + 1)
    outer = jax.jit(lambda x: inner(x) * 2)
    assert_close(outer(np.ones(2, np.float32)), np.full(2, 4.0, np.float32))

    @jax.jit(static_argnums=(1,))
    def g(x, k):
        return x ** k

    assert_close(g(np.full(2, 2.0, np.float32), 3), np.full(2, 8.0, np.float32))


def test_lower_as_text():
    def f(x, y):
        return jnp.dot(x, y) + 1.0

    lowered = jax.jit(f).lower(np.ones((2, 3), np.float32), np.ones((3,), np.float32))
    text = lowered.as_text()
    assert isinstance(text, str)
    assert "func" in text and "2x3xf32" in text
    assert "ember." in text


def test_lower_passes_static_keyword_arguments():
    def f(x, n, *, mode="mul"):
        return x * n if mode == "mul" else x + n

    x = np.arange(3, dtype=np.float32)
    jf = jax.jit(f, static_argnames=("n", "mode"))
    lowered = jf.lower(x, n=3)
    assert "ember.mul" in lowered.as_text() and "ember.add" not in lowered.as_text()
    assert_close(lowered.compile()(x), x * 3)
    added = jf.lower(x, n=3, mode="add")
    assert "ember.add" in added.as_text() and "ember.mul" not in added.as_text()
    assert_close(added.compile()(x), x + 3)
    # Positionally, through the static_argnames-derived position.
    assert_close(jf.lower(x, 4).compile()(x), x * 4)
    assert_close(jf(x, n=3), x * 3)


def test_lower_matches_the_call_for_static_argnums_and_kwargs():
    def f(x, n, *, y):
        return {"out": x * n + y}

    jf = jax.jit(f, static_argnums=1)
    x, y = np.ones(2, np.float32), np.full(2, 2.0, np.float32)
    out = jf.lower(x, 5, y=y).compile()(x, y=y)
    assert_close(out["out"], jf(x, 5, y=y)["out"])
    assert_close(out["out"], np.full(2, 7.0, np.float32))


def test_eval_shape():
    out = jax.eval_shape(lambda x: jnp.concatenate([x, x]).sum(0),
                         jax.ShapeDtypeStruct((2, 3), jnp.float32))
    assert out.shape == (3,) and out.dtype == np.float32


def test_disable_jit_runs_python():
    seen = []

    @jax.jit
    def f(x):
        seen.append(type(x))
        return x + 1

    with jax.disable_jit():
        f(np.ones(2, np.float32))
    assert seen == [np.ndarray]


def test_jit_invalid_argument_type():
    with pytest.raises(TypeError):
        jax.jit(lambda x: x)("a string")


def test_numpy_arguments_stay_writable():
    # As in JAX (which copies them to the device), a NumPy array passed to
    # Ember stays the caller's to write, and writing it later changes no
    # Ember array made from it.
    x = np.ones(4, np.float32)
    kept = jnp.asarray(x)
    out = jax.jit(lambda a: a)(x)
    x[0] = 5.0
    assert x.flags.writeable
    np.testing.assert_array_equal(np.asarray(out), np.ones(4))
    np.testing.assert_array_equal(np.asarray(kept), np.ones(4))


def test_results_are_not_copied():
    """Results of the slow call path (pytree outputs) are the runtime's
    buffers, read-only, not copies of them."""
    f = jax.jit(lambda x: {"a": [x * 2], "b": (x + 1, x - 1)})
    out = f(jnp.ones((256, 256)))
    for leaf in jax.tree_util.tree_leaves(out):
        assert not leaf._value.flags.owndata
        assert not leaf._value.flags.writeable
    np.testing.assert_allclose(np.asarray(out["b"][1]), 0.0)


g_global = 0.0


def _uses_global(x):
    return x + g_global


def test_jit_objects_of_one_function_share_its_traces():
    """JAX's "pure functions" gotcha: `jit(f)` made again for the same
    function uses the first trace (the global's value then), until the
    argument types change. Different static options trace apart."""
    global g_global
    traces = []

    def f(x):
        traces.append(1)
        return x * 2

    assert float(jax.jit(f)(4.)) == 8.0 and float(jax.jit(f)(5.)) == 10.0
    assert len(traces) == 1
    jax.jit(f)(jnp.array([5.]))
    assert len(traces) == 2
    g_global = 0.0
    assert float(jax.jit(_uses_global)(4.)) == 4.0
    g_global = 10.0
    assert float(jax.jit(_uses_global)(5.)) == 5.0       # the cached trace
    assert float(jax.jit(_uses_global)(jnp.array([4.]))[0]) == 14.0  # traced again
    g_global = 0.0
    h = lambda x, n: x * n  # noqa: E731
    assert float(jax.jit(h, static_argnums=1)(2., 3)) == 6.0
    assert float(jax.jit(h)(2., 3)) == 6.0


def test_shared_caches_are_cleared_when_the_configuration_changes():
    """A function whose jit objects are gone keeps its programs for the next
    `jit(f)`, except across a configuration change (x64 here: the same
    float32 argument traces to another program)."""
    import gc

    def f(x):
        return x, jnp.arange(2)

    assert jax.jit(f)(jnp.float32(1.))[1].dtype == np.int32
    gc.collect()
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        assert jax.jit(f)(jnp.float32(1.))[1].dtype == np.int64
    finally:
        jax.config.update("jax_enable_x64", old)


def test_jit_caches_are_bounded_across_signatures():
    """A jitted function called with ever new shapes (as the Array API suite
    does with `jnp` functions) keeps at most `ember_program_cache_size`
    programs in all (and eager one-op programs as many), least recently
    used out first, so memory stays flat
    (it grew by 1.7 MB per new signature before: 18 GB in the suite)."""
    import gc

    from ember._src import api

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    old = jax.config.ember_program_cache_size
    jax.config.update("ember_program_cache_size", 40)
    try:
        f = jax.jit(lambda x: x * 2 + 1)
        for i in range(1, 61):  # warm up to the bound
            f(np.ones((i,), np.float32))
        gc.collect()
        before = rss_mb()
        for i in range(61, 261):
            x = np.ones((i,), np.float32)
            assert float(f(x)[-1]) == 3.0
            jnp.add(x, x)
        gc.collect()
        assert len(api._jit_lru) <= 40 and len(f.cache) <= 40
        assert rss_mb() - before < 80  # 600 programs compiled, at most 40 + 40 kept
        # an evicted signature is compiled again and still right
        np.testing.assert_array_equal(np.asarray(f(np.ones((1,), np.float32))), [3.0])
    finally:
        jax.config.update("ember_program_cache_size", old)


def test_debug_nans_and_infs(capsys):
    """JAX's protocol: a jitted function whose result has a NaN is run again
    without its `jit`, so that the op making the NaN raises FloatingPointError
    (texts as JAX 0.10.2's debugging tutorial prints them)."""
    import ember

    def f(x):
        w = 3 * jnp.square(x)
        return jnp.log(-w)

    ember.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log$"):
            f(5.0)
        capsys.readouterr()
        with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log$"):
            ember.jit(f)(5.0)
        # The jitted f, then jnp.log's own compiled call, each reported.
        assert capsys.readouterr().out.count("Calling the de-optimized version.") == 2
        with ember.debug_nans(False):
            assert np.isnan(ember.jit(f)(5.0))
        # A NaN only the compiled program shows (here: its argument).
        with pytest.raises(FloatingPointError, match=r"encountered in jit\(<lambda>\). Because"):
            ember.jit(lambda x: x)(jnp.array(np.nan))
        with pytest.raises(FloatingPointError, match=r"encountered in mul"):
            ember.jit(lambda x: x * 1)(jnp.array(np.nan))
        assert np.isneginf(ember.jit(f)(0.0))  # (an Inf is not checked here)
        assert float(ember.jit(jnp.sin)(1.0)) == pytest.approx(np.sin(1.0))
    finally:
        ember.config.update("jax_debug_nans", False)
    with ember.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
            ember.jit(lambda x: 1.0 / x)(jnp.array(0.0))
        np.testing.assert_allclose(ember.jit(lambda x: 1.0 / x)(4.0), 0.25)
    assert np.isinf(ember.jit(lambda x: 1.0 / x)(0.0))
    ember.effects_barrier()


def test_non_array_arguments_raise_jax_error_with_their_path():
    # JAX's TypeError (its text), naming the argument's path, then the line.
    def f(x, y=1):
        return x

    def text(path, kind="str"):
        return (f"Error interpreting argument to {f!r} as an abstract array. The problematic "
                f"value is of type <class '{kind}'> and was passed to the function at path "
                f"{path}.\nThis typically means that a jit-wrapped function was called with a "
                "non-array argument, and this argument was not marked as static using the "
                "static_argnums or static_argnames parameters of jax.jit.\n(at ")

    for call, path, kind in [(lambda: jax.jit(f)({"a": "s"}, y=2), "x['a']", "str"),
                             (lambda: jax.jit(f)(1, y=[1, "s"]), "y[1]", "str"),
                             (lambda: jax.jit(f, static_argnums=0)(1, "s"), "y", "str"),
                             (lambda: jax.jit(f)(object()), "x", "object")]:
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value).startswith(text(path, kind))
        assert str(info.value).splitlines()[-1].startswith(f"(at {__file__}:")


def test_pytree_arguments_and_results_take_the_fast_path(monkeypatch):
    # A training step's parameters are a pytree: its calls are served by
    # the leaves' signatures without the slow path (api._tree_fast), with
    # the right output tree; a signature whose output tree differs from the
    # one registered for the same argument tree keeps the slow path.
    def f(p, x):
        return {"w": p[0] * x, "b": p[1] + 1.0}, [x.sum()] * x.shape[0]

    jf = jax.jit(f)
    p, x = (jnp.ones(3), jnp.zeros(3)), jnp.arange(3.0)
    jf(p, x)
    slow = []
    call_slow = type(jf)._call_slow
    monkeypatch.setattr(type(jf), "_call_slow",
                        lambda self, a, k: (self is jf and slow.append(1)) or
                        call_slow(self, a, k))
    out = jf(p, x)
    assert not slow
    assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(f(p, x))
    np.testing.assert_array_equal(out[0]["w"], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(out[0]["b"], [1.0, 1.0, 1.0])
    assert [float(v) for v in out[1]] == [3.0, 3.0, 3.0]
    # Same argument tree, other shapes, another output tree (two sums).
    q, y = (jnp.ones(2), jnp.zeros(2)), jnp.arange(2.0)
    for _ in range(2):
        out = jf(q, y)
        assert len(out[1]) == 2 and float(out[1][1]) == 1.0
    assert len(slow) == 2
    slow.clear()
    assert len(jf(p, x)[1]) == 3 and not slow
    # A Python number among the leaves: the slow path, as before.
    np.testing.assert_array_equal(jf((jnp.ones(3), 2.0), x)[0]["b"], [3.0, 3.0, 3.0])
    assert slow
    jf.clear_cache()
    assert not jf._tree_fast


def test_jitted_functions_keep_their_names_and_their_own_methods():
    def f(x):
        """doc of f"""
        return x * 2

    # An attribute of the function that names a method of the jit object
    # (a pallas_call's GPU `lower`) does not hide it; the rest is kept.
    f.lower = lambda *a: "the function's own"
    f.tag = "kept"
    j = jax.jit(f)
    assert (j.__name__, j.__qualname__.rsplit(".", 1)[-1], j.__doc__) == ("f", "f", "doc of f")
    assert j.__wrapped__ is f and j.tag == "kept"
    assert "ember.mul" in j.lower(np.float32(1.0)).as_text("ember")

