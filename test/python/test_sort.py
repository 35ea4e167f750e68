"""Long sorts (the runtime's O(n log n) sort on the CPU) against NumPy:
total order with NaNs and signed zeros, stability, several keys, unsigned
and bool keys, a sort dimension that is not innermost, gradients."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax


def test_long_float_sort_jax_order():
    x = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    x[::97] = np.nan
    x[1::89] = -0.0
    x[2::83] = 0.0
    x[3::79] = -np.inf
    got = np.asarray(ember.jit(jnp.sort)(x))
    np.testing.assert_array_equal(got, np.sort(x))
    # JAX's order: -0.0 and +0.0 are equal, so the zeros keep their input
    # order (a stable sort); NaNs last.
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(x[x == 0]))
    assert np.signbit(x[x == 0]).any() and not np.signbit(x[x == 0]).all()
    assert np.isnan(got[-1])
    # Short lanes (the rank sort) order them the same way.
    short = np.array([0.0, -0.0, np.nan, -1.0, -0.0, 0.0], np.float32)
    np.testing.assert_array_equal(np.signbit(np.asarray(jnp.sort(short))[1:5]),
                                  [False, True, True, False])


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.float64, np.bool_])
def test_long_stable_argsort_along_a_leading_axis(dtype):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 5, (300, 7)).astype(dtype)
    got = np.asarray(jnp.argsort(y, axis=0, stable=True))
    np.testing.assert_array_equal(got, np.argsort(y, axis=0, kind="stable"))


def test_long_sort_with_two_keys_and_a_payload():
    rng = np.random.default_rng(2)
    k1 = rng.integers(0, 4, 500).astype(np.int32)
    k2 = rng.standard_normal(500).astype(np.float32)
    payload = np.arange(500, dtype=np.int32)
    a, b, c = lax.sort((jnp.asarray(k1), jnp.asarray(k2), jnp.asarray(payload)), num_keys=2)
    order = np.lexsort((k2, k1))
    np.testing.assert_array_equal(a, k1[order])
    np.testing.assert_array_equal(b, k2[order])
    np.testing.assert_array_equal(c, payload[order])


def test_gradient_through_a_long_sort():
    x = np.random.default_rng(3).standard_normal(200).astype(np.float32)
    w = np.linspace(0, 1, 200).astype(np.float32)
    g = ember.grad(lambda x: jnp.sum(jnp.sort(x) * w))(x)
    expect = np.empty_like(x)
    expect[np.argsort(x, kind="stable")] = w
    np.testing.assert_allclose(g, expect)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", [None, "compare_all"])
def test_searchsorted_binary_search_matches_numpy(side, method):
    rng = np.random.default_rng(5)
    a = np.sort(rng.integers(0, 50, 1000)).astype(np.float32)
    a[-3:] = np.nan
    v = rng.integers(-5, 55, 300).astype(np.float32)
    v[:4] = [np.nan, -0.0, 0.0, np.inf]
    got = ember.jit(lambda a, v: jnp.searchsorted(a, v, side=side, method=method))(a, v)
    np.testing.assert_array_equal(got, np.searchsorted(a, v, side=side))
    empty = jnp.searchsorted(np.zeros(0, np.float32), v, side=side)
    np.testing.assert_array_equal(empty, np.zeros(300, np.int32))


def test_half_precision_mean_and_var_accumulate_in_f32():
    # JAX computes them in f32 and rounds once.
    x32 = np.random.default_rng(6).uniform(size=100_000).astype(np.float32)
    x = jnp.asarray(x32, jnp.bfloat16)
    exact = np.asarray(x.astype(jnp.float32), np.float64)
    assert jnp.mean(x).dtype == jnp.bfloat16
    assert float(jnp.mean(x)) == float(jnp.asarray(exact.mean(), jnp.bfloat16))
    assert abs(float(jnp.var(x)) - exact.var()) <= 2 ** -9 * exact.var()
