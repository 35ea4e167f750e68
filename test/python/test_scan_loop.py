"""lax.scan and fori_loop with static bounds stage a counted ember.while:
compiled forward code keeps the loop; grad and vmap unroll it in the passes."""

import ember as jax
import ember.numpy as jnp
import numpy as np
import pytest
from ember import lax


def rnn_step(c, x):
    c = jnp.tanh(c * 0.9 + x)
    return c, c * 2.0


def python_scan(xs, c0, reverse=False):
    c, ys = c0, [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in order:
        c = np.tanh(c * 0.9 + xs[i])
        ys[i] = c * 2.0
    return c, np.stack(ys)


def test_scan_ir_is_a_counted_loop():
    text = jax.jit(lambda xs: lax.scan(rnn_step, 0.0, xs)).lower(jnp.ones(7)).as_text()
    assert "ember.while" in text and "trip_count = 7" in text
    assert text.count("ember.tanh") == 1  # the body once, not seven times


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_python_loop(reverse):
    xs = np.linspace(-1, 1, 9).astype(np.float32)
    c, ys = jax.jit(lambda v: lax.scan(rnn_step, jnp.float32(0.3), v, reverse=reverse))(xs)
    wc, wys = python_scan(xs.astype(np.float64), 0.3, reverse)
    np.testing.assert_allclose(float(c), wc, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ys), wys, rtol=1e-5)


def test_scan_grad_and_vmap_unroll(x64):
    xs = np.linspace(-1, 1, 6)

    def loss(v):
        return jnp.sum(lax.scan(rnn_step, 0.1, v)[1])

    g = np.asarray(jax.grad(loss)(xs))
    eps = 1e-6
    fd = [(float(loss(xs + eps * e)) - float(loss(xs - eps * e))) / (2 * eps)
          for e in np.eye(len(xs))]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    batch = np.stack([xs, -xs, 0.5 * xs])
    got = jax.vmap(lambda v: lax.scan(rnn_step, 0.1, v)[1])(batch)
    want = np.stack([python_scan(b, 0.1)[1] for b in batch])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_scan_pytrees_length_and_no_xs():
    def step(c, _):
        a, b = c
        return (b, a + b), {"fib": a}

    (a, b), out = jax.jit(lambda: lax.scan(step, (0, 1), None, length=8))()
    assert (int(a), int(b)) == (21, 34)
    np.testing.assert_array_equal(np.asarray(out["fib"]), [0, 1, 1, 2, 3, 5, 8, 13])


def test_fori_loop_static_bounds_is_a_loop_and_differentiates():
    def f(x):
        return lax.fori_loop(0, 3, lambda i, v: v * x + i, 1.0)

    assert "trip_count = 3" in jax.jit(f).lower(2.0).as_text()
    assert float(jax.jit(f)(2.0)) == ((1 * 2 + 0) * 2 + 1) * 2 + 2
    # d/dx (x^3 + x + 2) at 2 = 3*4 + 1
    assert float(jax.grad(f)(2.0)) == 13.0
    assert float(lax.fori_loop(5, 2, lambda i, v: v + 1, 0)) == 0


def test_scan_over_empty_xs():
    c, ys = jax.jit(lambda xs: lax.scan(rnn_step, 0.5, xs))(jnp.zeros((0,), jnp.float32))
    assert float(c) == 0.5
    assert np.asarray(ys).shape == (0,)
