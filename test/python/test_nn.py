"""ember.nn activations and normalizations against NumPy references."""

import math

import numpy as np
import pytest

import ember as jax

from helpers import assert_close, jnp, rand

X = rand((3, 5), np.float32, seed=1, low=-4, high=4)
TOL = {"rtol": 1e-5, "atol": 1e-6}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _erf(x):
    return np.vectorize(math.erf)(x).astype(x.dtype)


def test_relu_family():
    assert_close(jax.nn.relu(X), np.maximum(X, 0))
    assert_close(jax.nn.relu(np.array([-1, 2], np.int32)), np.array([0, 2], np.int32))
    assert_close(jax.nn.relu6(X * 3), np.clip(X * 3, 0, 6))
    assert_close(jax.nn.leaky_relu(X), np.where(X >= 0, X, 0.01 * X), **TOL)
    assert_close(jax.nn.elu(X), np.where(X > 0, X, np.expm1(X)), **TOL)


def test_sigmoid_silu_softplus():
    assert_close(jax.nn.sigmoid(X), _sigmoid(X), **TOL)
    assert_close(jax.nn.silu(X), X * _sigmoid(X), **TOL)
    assert_close(jax.nn.swish(X), X * _sigmoid(X), **TOL)
    assert_close(jax.nn.softplus(X), np.logaddexp(X, 0), **TOL)
    assert_close(jax.nn.log_sigmoid(X), -np.logaddexp(-X, 0), **TOL)
    big = np.array([-100.0, 100.0], np.float32)
    assert_close(jax.nn.softplus(big), np.array([0.0, 100.0], np.float32), **TOL)
    assert_close(jax.nn.sigmoid(big), np.array([0.0, 1.0], np.float32), **TOL)


def test_gelu():
    exact = 0.5 * X * (1 + _erf(X / np.sqrt(2)))
    tanh = 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X ** 3)))
    assert_close(jax.nn.gelu(X), tanh, rtol=1e-5, atol=1e-5)
    assert_close(jax.nn.gelu(X, approximate=True), tanh, rtol=1e-5, atol=1e-5)
    assert_close(jax.nn.gelu(X, approximate=False), exact, rtol=1e-5, atol=1e-5)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
def test_softmax_log_softmax(axis):
    assert_close(jax.nn.softmax(X, axis=axis), _softmax(X, axis), **TOL)
    assert_close(jax.nn.log_softmax(X, axis=axis), np.log(_softmax(X, axis)), rtol=1e-5, atol=1e-5)


def test_softmax_stable_and_where():
    big = np.array([1000.0, 1001.0, 1002.0], np.float32)
    assert_close(jax.nn.softmax(big), _softmax(big, -1), **TOL)
    w = np.array([True, True, False])
    out = np.asarray(jax.nn.softmax(big, where=w))
    np.testing.assert_allclose(out[:2], _softmax(big[:2], -1), rtol=1e-5)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_logsumexp(axis):
    ref = np.log(np.sum(np.exp(X), axis=axis))
    assert_close(jax.nn.logsumexp(X, axis=axis), ref, rtol=1e-5, atol=1e-5)
    assert_close(jax.nn.logsumexp(X, axis=axis, keepdims=True),
                 np.log(np.sum(np.exp(X), axis=axis, keepdims=True)), rtol=1e-5, atol=1e-5)
    b = np.abs(X) + 0.5
    assert_close(jax.nn.logsumexp(X, axis=axis, b=b), np.log(np.sum(b * np.exp(X), axis=axis)),
                 rtol=1e-5, atol=1e-5)
    big = np.array([1000.0, 1000.0], np.float32)
    assert_close(jax.nn.logsumexp(big), np.float32(1000 + np.log(2)), rtol=1e-6)
    neg = np.array([-np.inf, -np.inf], np.float32)
    assert float(jax.nn.logsumexp(neg)) == -np.inf


def test_logsumexp_return_sign():
    x = np.array([0.0, 1.0], np.float32)
    b = np.array([1.0, -2.0], np.float32)
    val, sign = jax.nn.logsumexp(x, b=b, return_sign=True)
    s = 1 - 2 * np.e
    assert_close(val, np.float32(np.log(abs(s))), rtol=1e-5)
    assert float(sign) == -1.0


@pytest.mark.parametrize("num_classes", [3, 5])
def test_one_hot(num_classes):
    labels = np.array([0, 2, 1, 4, -1], np.int32)
    ref = (labels[:, None] == np.arange(num_classes)).astype(np.float32)
    assert_close(jax.nn.one_hot(labels, num_classes), ref)
    assert jax.nn.one_hot(labels, num_classes, dtype=jnp.int32).dtype == np.int32
    assert_close(jax.nn.one_hot(labels, num_classes, axis=0), ref.T)
    m = np.array([[0, 1], [2, 0]], np.int32)
    assert_close(jax.nn.one_hot(m, 3), (m[..., None] == np.arange(3)).astype(np.float32))


def test_standardize():
    mean = X.mean(-1, keepdims=True)
    var = X.var(-1, keepdims=True)
    assert_close(jax.nn.standardize(X), (X - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    mean0 = X.mean(0, keepdims=True)
    var0 = X.var(0, keepdims=True)
    assert_close(jax.nn.standardize(X, axis=0), (X - mean0) / np.sqrt(var0 + 1e-5), rtol=1e-4,
                 atol=1e-5)
    assert_close(jax.nn.standardize(X, mean=0.0, variance=1.0, epsilon=0.0), X, **TOL)


def test_misc_activations():
    assert_close(jax.nn.hard_tanh(X), np.clip(X, -1, 1))
    assert_close(jax.nn.soft_sign(X), X / (np.abs(X) + 1), **TOL)
    assert_close(jax.nn.hard_sigmoid(X), np.clip(X + 3, 0, 6) / 6, **TOL)
    x4 = np.ascontiguousarray(X[:, :4])
    assert_close(jax.nn.glu(x4), X[:, :2] * _sigmoid(X[:, 2:4]), **TOL)
    a, s = 1.6732632423543772, 1.0507009873554805
    assert_close(jax.nn.selu(X), s * np.where(X > 0, X, a * np.expm1(X)), rtol=1e-5, atol=1e-5)
    assert_close(jax.nn.celu(X), np.maximum(X, 0) + np.minimum(0, np.expm1(X)), rtol=1e-5,
                 atol=1e-6)


def test_nn_under_jit_and_dtypes():
    f = jax.jit(lambda x: jax.nn.softmax(jax.nn.relu(x)))
    assert_close(f(X), _softmax(np.maximum(X, 0), -1), **TOL)
    h = X.astype(np.float16)
    assert jax.nn.sigmoid(h).dtype == np.float16
    assert jax.nn.gelu(h).dtype == np.float16
    assert jax.nn.softmax(jnp.asarray(X, jnp.bfloat16)).dtype == jnp.bfloat16
