"""ember.ops (JAX's `jax.ops`): segment reductions against NumPy, their
derivatives against JAX's recorded values and finite differences, and
dropped (out-of-range) updates having zero cotangents."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import ops


def _numpy_segment(ufunc, identity, data, ids, n):
    out = np.full((n,) + data.shape[1:], identity, data.dtype)
    keep = (ids >= 0) & (ids < n)
    ufunc.at(out, ids[keep], data[keep])
    return out


@pytest.mark.parametrize("name,ufunc,identity", [
    ("segment_sum", np.add, 0), ("segment_prod", np.multiply, 1),
    ("segment_max", np.maximum, -np.inf), ("segment_min", np.minimum, np.inf)])
def test_segments_match_numpy(name, ufunc, identity):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(20, 3)).astype(np.float32)
    ids = rng.integers(-2, 7, size=20).astype(np.int32)  # out-of-range ids are dropped
    got = getattr(ops, name)(data, ids, 6)
    np.testing.assert_allclose(np.asarray(got), _numpy_segment(ufunc, identity, data, ids, 6),
                               rtol=1e-5)
    jitted = ember.jit(getattr(ops, name), static_argnums=2)(data, ids, 6)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(got), rtol=1e-6)


def test_segment_defaults_and_integers():
    ids = jnp.array([0, 0, 2, 2, 5, 1])
    np.testing.assert_array_equal(np.asarray(ops.segment_sum(jnp.arange(6.0), ids)),
                                  [1, 5, 5, 0, 0, 4])  # num_segments = max(ids) + 1
    np.testing.assert_array_equal(np.asarray(ops.segment_max(jnp.arange(6), ids, 4)),
                                  [1, 5, 3, np.iinfo(np.int32).min])
    with pytest.raises(ember.errors.ConcretizationTypeError):
        ember.jit(lambda d, s: ops.segment_sum(d, s))(jnp.arange(6.0), ids)
    with pytest.raises(ValueError, match="must match the leading dimensions"):
        ops.segment_sum(jnp.ones((3, 2)), jnp.zeros(2, jnp.int32), 2)


def test_segment_max_min_derivatives_match_jax():
    # JAX 0.10.2: ties share the tangent; dropped rows (id -1) get none.
    d = jnp.array([1.0, 3.0, 3.0, 2.0, 5.0, 0.0])
    s = jnp.array([0, 0, 0, 2, -1, 1])
    w = jnp.array([1.0, 2.0, 3.0])
    gmax = ember.grad(lambda d: (ops.segment_max(d, s, 4)[:3] * w).sum())(d)
    gmin = ember.grad(lambda d: (ops.segment_min(d, s, 4)[:3] * w).sum())(d)
    np.testing.assert_allclose(np.asarray(gmax), [0, 0.5, 0.5, 3, 0, 2])
    np.testing.assert_allclose(np.asarray(gmin), [1, 0, 0, 3, 0, 2])


def test_segment_sum_gradient_by_finite_differences():
    rng = np.random.default_rng(1)
    d = rng.normal(size=8)
    s = jnp.array([0, 1, 1, 3, -1, 2, 9, 0])
    ember.config.update("jax_enable_x64", True)
    try:
        def f(x):
            return jnp.sum(jnp.sin(ops.segment_sum(x * x, s, 4)))
        g = np.asarray(ember.grad(f)(jnp.asarray(d)))
        eps = 1e-6
        fd = [(float(f(jnp.asarray(d + eps * e))) - float(f(jnp.asarray(d - eps * e)))) / (2 * eps)
              for e in np.eye(8)]
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
        assert g[4] == 0 and g[6] == 0  # dropped updates: zero, not NaN
    finally:
        ember.config.update("jax_enable_x64", False)


def test_dropped_scatter_updates_have_zero_cotangents():
    d = jnp.array([1.0, 3.0, 5.0])
    idx = jnp.array([0, 5, 1])
    g = ember.grad(lambda d: (jnp.zeros(2).at[idx].add(d, mode="drop") * 2).sum())(d)
    np.testing.assert_array_equal(np.asarray(g), [2, 0, 2])
    g = ember.jit(ember.grad(lambda d: jnp.zeros(2).at[idx].set(d).sum()))(d)
    np.testing.assert_array_equal(np.asarray(g), [1, 0, 1])


def test_indexed_max_min_derivatives_match_jax():
    # JAX 0.10.2's scatter-max/min JVP: tied values share the tangent, the
    # operand's own value counting as one of them; out-of-range updates drop.
    x = jnp.array([1.0, 5.0, 2.0, 0.0])
    u = jnp.array([3.0, 5.0, 1.0, 7.0])
    i = jnp.array([0, 1, 1, 9])
    w = jnp.arange(1.0, 5.0)
    gx, gu = ember.grad(lambda x, u: (x.at[i].max(u) * w).sum(), argnums=(0, 1))(x, u)
    np.testing.assert_allclose(np.asarray(gx), [0, 1, 3, 4])
    np.testing.assert_allclose(np.asarray(gu), [1, 1, 0, 0])
    gx, gu = ember.grad(lambda x, u: (x.at[i].min(u, mode="clip") * w).sum(),
                        argnums=(0, 1))(x, u)
    np.testing.assert_allclose(np.asarray(gx), [1, 0, 3, 4])
    np.testing.assert_allclose(np.asarray(gu), [0, 0, 2, 0])
    _, t = ember.jvp(lambda x: x.at[i].max(u), (x,), (jnp.ones(4),))
    np.testing.assert_allclose(np.asarray(t), [0, 0.5, 1, 1])
