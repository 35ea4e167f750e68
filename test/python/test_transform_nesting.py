"""Transformations nest to any depth: ember-expand-transforms expands them to a
fixed point (no fixed number of autodiff/batching rounds)."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp


def _alternate(levels):
    """grad and vmap alternating `levels` times over sin; the grads see the sum
    of the vmapped function, so each grad differentiates sin once more."""
    f = jnp.sin
    for k in range(levels):
        if k % 2 == 0:
            f = ember.grad(lambda x, f=f: jnp.sum(f(x)))
        else:
            f = ember.vmap(f)
    return f


# d^n/dx^n sin(x) = sin(x + n pi / 2)
def _expected(x, n_grads):
    return np.sin(x + n_grads * np.pi / 2)


@pytest.mark.parametrize("use_jit", [False, True])
def test_nine_alternating_levels(use_jit):
    f = _alternate(9)  # 5 grads, 4 vmaps
    x = np.linspace(-1.0, 1.0, 2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    if use_jit:
        f = ember.jit(f)
    out = np.asarray(f(jnp.asarray(x)))
    np.testing.assert_allclose(out, _expected(x, 5), rtol=1e-5, atol=1e-5)


def test_deep_grad_then_vmap_under_one_jit():
    # vmap of 6 nested grads of a scalar function
    f = jnp.sin
    for _ in range(6):
        f = ember.grad(f)
    g = ember.jit(ember.vmap(f))
    x = np.linspace(-2.0, 2.0, 7, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(g(jnp.asarray(x))), _expected(x, 6),
                               rtol=1e-4, atol=1e-4)
