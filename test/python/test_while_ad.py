"""Forward-mode differentiation through lax.while_loop (ember.while), and the
reverse-mode error (as in JAX)."""

import ember as jax
import ember.numpy as jnp
import numpy as np
import pytest
from ember import lax


def power_loop(x, n):
    # x ** (2 ** n) by repeated squaring, with a data-dependent trip count.
    def cond(c):
        return c[0] < n

    def body(c):
        return c[0] + 1, c[1] * c[1]

    return lax.while_loop(cond, body, (0, x))[1]


def test_jvp_through_while_matches_analytic(x64):
    x, t = 1.1, 0.3
    for n in (0, 1, 3):
        y, dy = jax.jvp(lambda v, n=n: power_loop(v, n), (x,), (t,))
        k = 2 ** n
        assert abs(float(y) - x ** k) < 1e-9 * max(1, x ** k)
        assert abs(float(dy) - k * x ** (k - 1) * t) < 1e-9 * max(1, k * x ** k)


def test_jvp_while_with_runtime_trip_count_and_closure(x64):
    w = jnp.float64(0.5)

    def f(x, n):
        def body(c):
            i, v = c
            return i + 1, jnp.sin(v) * w + x  # x and w come from above

        return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]

    g = jax.jit(lambda x, n, t: jax.jvp(lambda v: f(v, n), (x,), (t,)))
    for n in (2, 5):
        y, dy = g(0.7, n, 1.0)
        eps = 1e-6
        fd = (float(f(0.7 + eps, n)) - float(f(0.7 - eps, n))) / (2 * eps)
        assert abs(float(dy) - fd) < 1e-7
        assert abs(float(y) - float(f(0.7, n))) < 1e-12


def test_jacfwd_and_vmap_of_jvp_through_while():
    def f(x):
        return power_loop(x, 2)  # x ** 4 elementwise

    x = jnp.array([0.5, 1.5, -2.0])
    jac = jax.jacfwd(f)(x)
    np.testing.assert_allclose(np.asarray(jac), np.diag(4 * np.asarray(x) ** 3), rtol=1e-5)
    per = jax.vmap(lambda v: jax.jvp(f, (v,), (1.0,))[1])(x)
    np.testing.assert_allclose(np.asarray(per), 4 * np.asarray(x) ** 3, rtol=1e-5)


def test_grad_through_while_raises_like_jax():
    with pytest.raises(ValueError, match="reverse mode"):
        jax.grad(lambda x: power_loop(x, 2))(1.5)
