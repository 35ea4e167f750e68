"""lax.scan and fori_loop with static bounds stage a counted ember.while:
compiled forward code keeps the loop; grad and vmap unroll it in the passes."""

import re

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax

from helpers import fd_grad


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


# ember-hoist-scan-inputs: products of each row of xs with loop-invariant
# weights run as one batched product before the loop. Results must be those
# of the loop as written, whichever rows (and direction) it reads.
def elman(xs, wh, wx, b, reverse=False):
    def step(h, x):
        h = jnp.tanh(h @ wh + x @ wx + b)
        return h, h.sum(axis=1)
    return lax.scan(step, jnp.zeros((xs.shape[1], wh.shape[0]), xs.dtype), xs,
                    reverse=reverse)


def elman_numpy(xs, wh, wx, b, reverse=False):
    h, ys = np.zeros((xs.shape[1], wh.shape[0])), [None] * len(xs)
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        h = np.tanh(h @ wh + xs[t] @ wx + b)
        ys[t] = h.sum(axis=1)
    return h, np.stack(ys)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn_with_hoisted_input_products(reverse):
    r = np.random.default_rng(1)
    xs, wh, wx, b = (r.standard_normal(s).astype(np.float32) * 0.5
                     for s in [(9, 4, 6), (5, 5), (6, 5), (5,)])
    h, ys = jax.jit(lambda *a: elman(*a, reverse=reverse))(xs, wh, wx, b)
    wh_, wys = elman_numpy(*(a.astype(np.float64) for a in (xs, wh, wx, b)), reverse=reverse)
    np.testing.assert_allclose(np.asarray(h), wh_, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ys), wys, rtol=1e-5, atol=1e-5)


def test_fori_loop_rows_in_bounds_and_clamped():
    r = np.random.default_rng(2)
    xs = r.standard_normal((8, 3)).astype(np.float32)
    w = r.standard_normal((3, 2)).astype(np.float32)

    def f(xs, w, shift, flip):
        def body(i, acc):
            k = 7 - i if flip else i + shift
            return acc * 0.5 + lax.dynamic_index_in_dim(xs, k, 0, keepdims=False) @ w
        return lax.fori_loop(2, 7, body, jnp.zeros(2, jnp.float32))

    for shift, flip in [(0, False), (1, False), (0, True), (4, False)]:
        got = jax.jit(lambda a, b, s=shift, fl=flip: f(a, b, s, fl))(xs, w)
        acc = np.zeros(2)
        for i in range(2, 7):
            k = min(max(7 - i if flip else i + shift, 0), 7)  # out of bounds clamps
            acc = acc * 0.5 + xs[k].astype(np.float64) @ w
        np.testing.assert_allclose(np.asarray(got), acc, rtol=1e-5, atol=1e-6)


def test_grad_of_scan_rnn_with_hoisted_input_products(x64):
    r = np.random.default_rng(3)
    xs, wh, wx, b = (r.standard_normal(s) * 0.5 for s in [(6, 2, 3), (4, 4), (3, 4), (4,)])

    def loss(wx):
        h, ys = elman(xs, wh, wx, b)
        return jnp.sum(h ** 2) + jnp.sum(ys)

    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(loss))(wx)), fd_grad(loss, wx),
                               rtol=1e-6, atol=1e-8)


def test_grad_of_scan_with_gemm_sized_steps_matches_unrolled():
    # 32x64x64 steps go through the runtime's GEMM; the backward loop's
    # dz . Wh^T takes Wh transposed once, outside the loop.
    r = np.random.default_rng(8)
    xs, wh, wx, b = (r.standard_normal(s).astype(np.float32) * 0.2
                     for s in [(5, 32, 48), (64, 64), (48, 64), (64,)])

    def unrolled(wh, wx, b):
        h = jnp.zeros((32, 64), jnp.float32)
        for t in range(len(xs)):
            h = jnp.tanh(h @ wh + xs[t] @ wx + b)
        return jnp.sum(h ** 2)

    def scanned(wh, wx, b):
        return jnp.sum(elman(xs, wh, wx, b)[0] ** 2)

    got = jax.jit(jax.grad(scanned, argnums=(0, 1, 2)))(wh, wx, b)
    want = jax.jit(jax.grad(unrolled, argnums=(0, 1, 2)))(wh, wx, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-5)


def test_loop_bodies_are_traced_once():
    """As JAX's: a fori_loop/while_loop body is traced once (the gotchas
    tutorial's `next(iterator)` is 0 in every iteration), twice only when a
    weakly typed initial value takes the dtype the body produces."""
    iterator = iter(range(10))
    assert int(lax.fori_loop(0, 10, lambda i, x: x + next(iterator), 0)) == 0
    calls = []

    def body(i, x):
        calls.append(i)
        return x + 1.5

    out = lax.fori_loop(0, 3, body, 0)  # weak int 0 becomes float32: traced again
    assert float(out) == 4.5 and out.dtype == np.float32 and len(calls) == 2
    calls.clear()
    assert float(lax.fori_loop(0, 3, body, 0.0)) == 4.5 and len(calls) == 1


def test_scan_traces_its_body_once():
    # As JAX: once, also when a weak initial carry comes out strong (the
    # carry's dtype is the same); stacked weak outputs stay weak.
    count = [0]

    def f(c, x):
        count[0] += 1
        return c + x, c * x

    xs = np.arange(5.0, dtype=np.float32)
    for init in (0.0, jnp.float32(0)):
        count[0] = 0
        c, ys = jax.jit(lambda xs, init=init: lax.scan(f, init, xs))(xs)
        assert count[0] == 1 and not c.weak_type
        np.testing.assert_allclose(ys, [0, 0, 2, 9, 24])
    count[0] = 0
    c, ys = lax.scan(lambda c, x: (c + 1, {"b": c, "x": x}), 0, jnp.arange(3))
    assert c.weak_type and ys["b"].weak_type and not ys["x"].weak_type
    count[0] = 0
    lax.scan(f, jnp.zeros(2), jnp.ones((3, 2)), reverse=True)
    assert count[0] == 1


@pytest.mark.parametrize("reverse", [False, True])
def test_grad_of_scan_index_residuals_recomputed(x64, reverse):
    # The scan's index is a residual of the writes of ys (their transposes
    # read the cotangent's row i): the backward loop computes it from the
    # iteration number instead of saving it, counting up or down, and a
    # fori_loop with an offset start and a stride does the same.
    r = np.random.default_rng(11)
    xs, w = r.standard_normal((7, 3)) * 0.5, r.standard_normal((3, 3)) * 0.4

    def loss(w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum() * h
        h, ys = lax.scan(step, jnp.ones(3), xs, reverse=reverse)
        weights = jnp.arange(1.0, 8.0)[:, None]
        return jnp.sum(ys * weights) + jnp.sum(h)

    def strided(w):
        def body(i, acc):
            row = jnp.tanh(acc[i - 2] @ w)
            return acc.at[i].set(row * (i - 1.0))
        return jnp.sum(lax.fori_loop(3, 7, body, jnp.ones((7, 3)) * 0.3) ** 2)

    for f in (loss, strided):
        text = jax.jit(jax.grad(f)).trace(w).lower().as_text("transforms")
        assert "tensor<7xi32>" not in text and "tensor<4xi32>" not in text
        np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(f))(w)), fd_grad(f, w),
                                   rtol=1e-6, atol=1e-8)


def test_grad_of_scan_recomputes_cheap_residuals(x64):
    # tanh's derivative reads 1 - tanh(x) beside tanh(x): the backward loop
    # computes it from the saved tanh(x) instead of saving both. The step's
    # matmul reads the carry h, whose next value is that tanh: both share
    # one buffer of n + 1 rows (row 0 the initial h). So the forward loop
    # saves one row a step, not three. A residual computed from one that is
    # itself recomputed is saved.
    r = np.random.default_rng(12)
    xs, w = r.standard_normal((6, 4)) * 0.5, r.standard_normal((4, 4)) * 0.4

    def loss(w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()
        return jnp.sum(lax.scan(step, jnp.zeros(4), xs)[1] * jnp.arange(1.0, 7.0))

    def chained(w):
        def step(h, x):
            a = h @ w + x
            b = a * a
            return jnp.sin(b * 2.0 - 1.0) * jnp.cos(a), ()
        return jnp.sum(lax.scan(step, jnp.ones(4) * 0.3, xs)[0])

    text = jax.jit(jax.grad(loss)).trace(w).lower().as_text("transforms")
    saves = re.findall(r"dynamic_update_slice .*: tensor<(\d+)x4xf64>, tensor<1x4xf64>", text)
    assert saves == ["7", "7"], text  # row 0 before the loop, a row a step
    for f in (loss, chained):
        np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(f))(w)), fd_grad(f, w),
                                   rtol=1e-6, atol=1e-8)
