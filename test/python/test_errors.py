"""Error cases: shape mismatches, concretization errors, tracer conversion."""

import numpy as np
import pytest

import ember as jax
from ember._src import core

from helpers import jnp


def test_binary_shape_mismatch_mentions_shapes():
    with pytest.raises(TypeError, match=r"\(2, ?3\).*\(4,\)|\(4,\).*\(2, ?3\)"):
        jnp.add(np.ones((2, 3)), np.ones(4))
    with pytest.raises((TypeError, ValueError), match=r"\(3,\).*\(2,\)|\(2,\).*\(3,\)"):
        jnp.ones(3) * jnp.ones(2)


def test_shape_mismatch_inside_jit():
    f = jax.jit(lambda x, y: x + y)
    with pytest.raises((TypeError, ValueError), match=r"\(3,\)"):
        f(np.ones(3), np.ones(4))


def test_dot_shape_mismatch():
    with pytest.raises((TypeError, ValueError), match=r"\(2, ?3\)|3.*4"):
        jnp.dot(np.ones((2, 3)), np.ones((4, 5)))


def test_reshape_and_concat_errors():
    with pytest.raises((TypeError, ValueError)):
        jnp.reshape(jnp.arange(6), (4, 2))
    with pytest.raises((TypeError, ValueError)):
        jnp.concatenate([jnp.ones((2, 2)), jnp.ones((2, 3))], axis=0)
    with pytest.raises((TypeError, ValueError)):
        jnp.stack([jnp.ones(2), jnp.ones(3)])


def test_traced_shape_is_jaxs_type_error():
    # JAX's tracing guide: a shape computed from values is not static.
    f = jax.jit(lambda x: x.reshape(jnp.array(x.shape).prod()))
    with pytest.raises(TypeError, match=r"Shapes must be 1D sequences of concrete values of "
                       r"integer type, got \[JitTracer\(int32\[\]\)\]"):
        f(jnp.ones((2, 3)))
    assert jnp.ones((2, 3)).reshape(jnp.array([2, 3]).prod()).shape == (6,)


def test_axis_out_of_bounds():
    with pytest.raises((ValueError, IndexError)):
        jnp.sum(jnp.ones((2, 3)), axis=2)
    with pytest.raises((ValueError, IndexError)):
        jnp.moveaxis(jnp.ones((2, 3)), 3, 0)


def test_bool_of_tracer_raises_type_error():
    @jax.jit
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TypeError) as info:
        f(1.0)
    assert isinstance(info.value, core.ConcretizationTypeError)
    assert "jit" in str(info.value).lower() or "concret" in str(info.value).lower() \
        or "traced" in str(info.value).lower()


def test_float_int_of_tracer_raise_type_error():
    with pytest.raises(TypeError):
        jax.jit(lambda x: float(x))(1.0)
    with pytest.raises(TypeError):
        jax.jit(lambda x: int(x))(1)
    with pytest.raises(TypeError):
        jax.jit(lambda x: x.item())(1.0)
    with pytest.raises(TypeError):
        jax.jit(lambda x: jnp.zeros(x))(3)


def test_numpy_conversion_of_tracer_raises():
    with pytest.raises(TypeError):
        jax.jit(lambda x: np.asarray(x))(jnp.ones(2))
    with pytest.raises(TypeError):
        jax.jit(lambda x: np.sin(x))(jnp.ones(2))
    with pytest.raises(TypeError):
        jax.jit(lambda x: x.tolist())(jnp.ones(2))


def test_hash_of_array_raises():
    with pytest.raises(TypeError):
        hash(jnp.ones(2))


def test_invalid_inputs():
    with pytest.raises(TypeError):
        jnp.asarray("abc")
    with pytest.raises(TypeError):
        jnp.asarray([object()])
    with pytest.raises((OverflowError, ValueError, TypeError)):
        jnp.asarray(2 ** 40)
    with pytest.raises(TypeError):
        jnp.take(jnp.arange(3), np.array([0.5]))
    with pytest.raises(ValueError):
        jnp.pad(jnp.arange(3), 1, mode="bogus")


def test_error_points_at_user_code():
    def user_function(x):
        return x + jnp.ones(5)

    with pytest.raises(TypeError, match="test_errors.py"):
        jax.jit(user_function)(np.ones(3))
