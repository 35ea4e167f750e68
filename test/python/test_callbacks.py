"""Host callbacks from compiled code: debug.print, debug.callback,
pure_callback and io_callback, under jit, vmap and grad."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.experimental import io_callback


def lines(capsys):
    return capsys.readouterr().out.splitlines()


# --------------------------------------------------------------------------
# debug.print
# --------------------------------------------------------------------------


def test_debug_print_under_jit_prints_runtime_values(capsys):
    @jax.jit
    def f(x):
        y = x * 2
        jax.debug.print("y = {}", y)
        jax.debug.print("{a:.2f} then {b}", a=y.sum(), b=y[0].astype(jnp.int32))
        return y + 1

    out = f(jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), [1.0, 3.0, 5.0])
    assert lines(capsys) == ["y = [0. 2. 4.]", "6.00 then 0"]
    f(jnp.array([1.0, 1.0, 1.0]))  # cached executable, new values
    assert lines(capsys) == ["y = [2. 2. 2.]", "6.00 then 2"]


def test_debug_print_eager_and_static_args(capsys):
    jax.debug.print("x={} s={}", jnp.float32(1.5), "text")
    assert lines(capsys) == ["x=1.5 s=text"]


def test_debug_print_ordering_and_no_dce(capsys):
    @jax.jit
    def f(x):
        for i in range(3):
            jax.debug.print("step {} {}", i, x + i)
        return x

    f(jnp.int32(10))
    assert lines(capsys) == ["step 0 10", "step 1 11", "step 2 12"]


def test_debug_print_under_vmap_prints_each_example(capsys):
    def f(x):
        jax.debug.print("v {}", x)
        return x * 3

    out = jax.vmap(f)(jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 3.0, 6.0])
    assert lines(capsys) == ["v 0.0", "v 1.0", "v 2.0"]


def test_debug_print_under_grad_prints_primal_once(capsys):
    def f(x):
        jax.debug.print("primal {}", x)
        return jnp.sum(x ** 2)

    g = jax.jit(jax.grad(f))(jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 2.0, 4.0])
    assert lines(capsys) == ["primal [0. 1. 2.]"]
    v, g = jax.value_and_grad(f)(jnp.float32(2.0))
    assert float(v) == 4.0 and float(g) == 4.0
    assert lines(capsys) == ["primal 2.0"]


def test_debug_print_bad_format_raises_at_trace_time():
    with pytest.raises(KeyError, match="names 'y'"):
        jax.jit(lambda x: jax.debug.print("{y}", x))(1.0)
    with pytest.raises(IndexError):
        jax.jit(lambda x: jax.debug.print("{} {}", x))(1.0)


def test_debug_callback_gets_arrays():
    seen = []

    @jax.jit
    def f(x, y):
        jax.debug.callback(lambda a, b: seen.append((np.asarray(a), np.asarray(b))), x, b=y)
        return x

    f(jnp.arange(4).reshape(2, 2), jnp.bool_(True))
    (a, b), = seen
    np.testing.assert_array_equal(a, [[0, 1], [2, 3]])
    assert a.dtype == np.int32 and b.dtype == np.bool_ and bool(b)


# --------------------------------------------------------------------------
# pure_callback
# --------------------------------------------------------------------------


def host_sin(x):
    return np.sin(np.asarray(x))


def test_pure_callback_under_jit_and_eager():
    def f(x):
        y = jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y * 2

    x = jnp.linspace(0, 1, 5)
    want = 2 * np.sin(np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)


def test_pure_callback_pytrees_and_dtypes():
    def host(d, k):
        return {"sum": np.asarray(d["a"]) + np.asarray(d["b"]),
                "n": np.int32(k + np.asarray(d["a"]).size),
                "pos": np.asarray(d["a"]) > 0}

    @jax.jit
    def f(a, b):
        shapes = {"sum": jax.ShapeDtypeStruct((3,), jnp.float32),
                  "n": jax.ShapeDtypeStruct((), jnp.int32),
                  "pos": jax.ShapeDtypeStruct((3,), jnp.bool_)}
        return jax.pure_callback(host, shapes, {"a": a, "b": b}, 10)

    out = f(jnp.array([-1.0, 0.0, 2.0]), jnp.ones(3))
    np.testing.assert_array_equal(np.asarray(out["sum"]), [0.0, 1.0, 3.0])
    assert int(out["n"]) == 13
    np.testing.assert_array_equal(np.asarray(out["pos"]), [False, False, True])


def test_pure_callback_unused_result_is_removed():
    calls = []

    def host(x):
        calls.append(1)
        return np.asarray(x)

    @jax.jit
    def f(x):
        jax.pure_callback(host, jax.ShapeDtypeStruct((), jnp.float32), x)
        io_callback(host, jax.ShapeDtypeStruct((), jnp.float32), x)
        return x + 1

    assert float(f(jnp.float32(1.0))) == 2.0
    assert calls == [1]  # the io_callback only: the pure one is dead code


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all",
                                    "legacy_vectorized"])
def test_pure_callback_vmap_methods(method):
    shapes_seen = []

    def host(x, w):
        shapes_seen.append((np.shape(x), np.shape(w)))
        return np.asarray(x) * np.asarray(w)

    def f(x, w):
        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, w,
                                 vmap_method=method)

    xs = jnp.arange(6.0).reshape(2, 3)
    w = jnp.array([1.0, 10.0, 100.0])
    out = jax.jit(jax.vmap(f, in_axes=(0, None)))(xs, w)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(xs) * np.asarray(w))
    expected = {"sequential": [((3,), (3,)), ((3,), (3,))],
                "expand_dims": [((2, 3), (1, 3))],
                "broadcast_all": [((2, 3), (2, 3))],
                "legacy_vectorized": [((2, 3), (3,))]}[method]  # (as JAX 0.10.2)
    assert shapes_seen == expected


def test_pure_callback_vmap_without_method_raises():
    f = jax.vmap(lambda x: jax.pure_callback(host_sin, jax.ShapeDtypeStruct((), x.dtype), x))
    with pytest.raises(NotImplementedError, match="vmap_method"):
        f(jnp.arange(3.0))


def test_pure_callback_grad_raises_clear_error():
    def f(x):
        return jnp.sum(jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x))

    # JAX's text on the first line, the user's line below it.
    with pytest.raises(ValueError, match=r"^Pure callbacks do not support JVP. Please use "
                                         r"`jax.custom_jvp` to use callbacks while taking "
                                         r"gradients.\n\(at .*test_callbacks.py:\d+\)"):
        jax.grad(f)(jnp.arange(3.0))

    def g(x):
        return jnp.sum(jax.experimental.io_callback(
            host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x))

    with pytest.raises(ValueError, match=r"^IO callbacks do not support JVP.\n"):
        jax.grad(g)(jnp.arange(3.0))


def test_pure_callback_with_custom_jvp_differentiates():
    @jax.custom_jvp
    def sin(x):
        return jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                 vmap_method="sequential")

    @sin.defjvp
    def sin_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return sin(x), jnp.cos(x) * t

    x = jnp.linspace(0.0, 1.0, 4)
    g = jax.grad(lambda v: jnp.sum(sin(v)))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(np.asarray(x)), rtol=1e-6)
    per_example = jax.vmap(jax.grad(lambda v: sin(v)))(x)
    np.testing.assert_allclose(np.asarray(per_example), np.cos(np.asarray(x)), rtol=1e-6)


def test_callback_exception_propagates_and_process_survives():
    def bad(x):
        raise ZeroDivisionError("host side failed")

    f = jax.jit(lambda x: jax.pure_callback(bad, jax.ShapeDtypeStruct((), jnp.float32), x) + 1)
    with pytest.raises(ZeroDivisionError, match="host side failed"):
        f(jnp.float32(1.0))
    # The runtime is usable afterwards.
    g = jax.jit(lambda x: jax.pure_callback(host_sin, jax.ShapeDtypeStruct((), jnp.float32), x))
    assert abs(float(g(jnp.float32(0.5))) - np.sin(0.5)) < 1e-6


def test_callback_errors_are_jax_runtime_errors():
    # As JAX: what a callback raises while compiled code (or an eager
    # pure/io callback) runs reaches the caller as JaxRuntimeError with JAX's
    # text and the callback's traceback; beyond JAX it is also an instance
    # of the callback's exception class. An eager debug.callback raises
    # plainly (as JAX's); SystemExit (jdb's quit) does not end the program.
    class Custom(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    def bad(x):
        raise KeyError("missing")

    spec = jax.ShapeDtypeStruct((), jnp.float32)
    calls = [lambda x: jax.jit(lambda v: jax.pure_callback(bad, spec, v))(x),
             lambda x: jax.pure_callback(bad, spec, x),
             lambda x: jax.jit(lambda v: io_callback(bad, spec, v))(x),
             lambda x: jax.jit(jax.vmap(lambda v: jax.pure_callback(
                 bad, spec, v, vmap_method="sequential")))(jnp.ones(2))]
    for call in calls:
        with pytest.raises(jax.errors.JaxRuntimeError) as info:
            call(jnp.float32(1.0))
        assert isinstance(info.value, KeyError) and isinstance(info.value, RuntimeError)
        text = str(info.value)
        assert text.startswith("INTERNAL: CpuCallback error calling callback: Traceback "
                               "(most recent call last):\n")
        assert text.endswith("KeyError: 'missing'") and "in bad" in text
    with pytest.raises(KeyError, match="missing") as info:
        jax.debug.callback(bad, 1.0)
    assert not isinstance(info.value, jax.errors.JaxRuntimeError)

    def custom(x):
        raise Custom(1, 2)

    def leave(x):
        raise SystemExit(3)

    for fn, cls in ((custom, Custom), (leave, SystemExit)):
        with pytest.raises(jax.errors.JaxRuntimeError, match=cls.__name__) as info:
            jax.jit(lambda v, fn=fn: jax.debug.callback(fn, v) or v)(1.0)
        assert not isinstance(info.value, SystemExit)


def test_callback_wrong_result_shape_or_dtype_raises():
    f = jax.jit(lambda x: jax.pure_callback(lambda v: np.zeros(4, np.float32),
                                            jax.ShapeDtypeStruct((3,), jnp.float32), x))
    with pytest.raises(RuntimeError, match="incorrect output shape"):
        f(jnp.ones(3))
    # (A float64 result is canonicalized to float32 without x64, as in JAX;
    # float16 is a real mismatch.)
    g = jax.jit(lambda x: jax.pure_callback(lambda v: np.zeros(3, np.float16),
                                            jax.ShapeDtypeStruct((3,), jnp.float32), x))
    with pytest.raises(RuntimeError, match="incorrect output dtype"):
        g(jnp.ones(3))


def test_io_callback_is_ordered_and_kept():
    log = []

    def record(x):
        log.append(int(np.asarray(x)))
        return np.asarray(x)

    @jax.jit
    def f(x):
        for i in range(4):
            io_callback(record, jax.ShapeDtypeStruct((), jnp.int32), x + i)
        return x

    f(jnp.int32(5))
    assert log == [5, 6, 7, 8]


def test_ordered_io_callback_cannot_be_vmapped():
    """JAX's ValueError (the external callbacks tutorial); an unordered one
    runs once per example."""
    def f(x, ordered):
        return io_callback(lambda x: x * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                           ordered=ordered)

    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        jax.vmap(lambda x: f(x, True))(jnp.ones(3))
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: f(x, True))(jnp.ones(3))),
                                  2 * np.ones(3))
    np.testing.assert_array_equal(np.asarray(jax.vmap(lambda x: f(x, False))(jnp.ones(3))),
                                  2 * np.ones(3))
