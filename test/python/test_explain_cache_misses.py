"""`jax_explain_cache_misses` (JAX's jit tutorial): each retrace of a
user's function is logged with its cause, JAX's texts where JAX documents
them (JAX 0.10.2's output for the tutorial's cell)."""

import contextlib
import logging

import ember
import ember.numpy as jnp


def _misses(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "ember.jit"]


@contextlib.contextmanager
def _explaining(caplog):
    ember.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="ember.jit"):
            yield
    finally:
        ember.config.update("jax_explain_cache_misses", False)


def test_tutorial_cell(caplog):
    with _explaining(caplog):
        @ember.jit
        def double(x):
            return 2 * x

        line = double.__wrapped__.__code__.co_firstlineno  # (the decorator's line)
        _ = double(jnp.arange(3))
        _ = double(jnp.arange(3))
        _ = double(jnp.arange(3.0))
    first, second = _misses(caplog)
    assert first.splitlines()[1:] == [
        "  never seen function:",
        f"    double id={id(double.__wrapped__)} defined at {__file__}:{line}"]
    assert first.startswith(f"TRACING CACHE MISS at {__file__}:")
    assert second.splitlines()[1:] == [
        f"  for double defined at {__file__}:{line}",
        "  all previously seen cache keys differ. For the closest previous key:",
        "  different input types:",
        "  * at x, now f32[3] and before i32[3]"]


def test_weak_types_static_arguments_and_structure(caplog):
    with _explaining(caplog):
        f = ember.jit(lambda a, n: a * n, static_argnums=1)
        f(1.0, 2)
        f(jnp.float32(1.0), 2)
        f(jnp.float32(1.0), 3)
        g = ember.jit(lambda d: d["a"])
        g({"a": 1.0})
        g({"a": 1.0, "b": 2.0})
        g({"a": 1.0})  # (a hit: nothing logged)
    msgs = _misses(caplog)
    assert len(msgs) == 5
    assert "  * at a, now f32[]{weak_type=False} and before f32[]{weak_type=True}" in msgs[1]
    assert "different static arguments:\n  * at n, now 3 and before 2" in msgs[2]
    assert "different input pytree:" in msgs[4]


def test_off_by_default_and_not_for_embers_own_functions(caplog):
    with caplog.at_level(logging.WARNING, logger="ember.jit"):
        ember.jit(lambda x: x + 1)(1.0)
    assert _misses(caplog) == []
    with _explaining(caplog):
        jnp.sum(jnp.arange(3.0))  # (Ember's own jitted code is not explained)
    assert _misses(caplog) == []


def test_static_argument_of_another_type(caplog):
    with _explaining(caplog):
        f = ember.jit(lambda a, n: a * n, static_argnums=1)
        f(1.0, 3)
        f(1.0, 3.0)
    assert "different static arguments:\n  * at n, now 3.0 and before 3" in _misses(caplog)[1]
