"""Differentiation through lax.while_loop (ember.while): forward mode, and
reverse mode with a trip count known only at run time (beyond JAX), which
saves each iteration's residuals on a run-time stack."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax

from helpers import fd_grad


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


def test_grad_through_while_matches_analytic(x64):
    # Beyond JAX: reverse mode through a loop whose trip count is an input.
    for n in (0, 1, 3):
        g = jax.grad(lambda v, n=n: power_loop(v, n))(1.1)
        k = 2 ** n
        assert abs(float(g) - k * 1.1 ** (k - 1)) < 1e-9 * k * 1.1 ** k
        gj = jax.jit(jax.grad(lambda v, m: power_loop(v, m)))(1.1, n)
        assert abs(float(gj) - float(g)) < 1e-12


def grow(x):
    # The trip count depends on the values of x, not only on a bound.
    def cond(c):
        return jnp.sum(c[1]) < 10.0

    def body(c):
        i, y = c
        return i + 1, y * 1.5 + jnp.sin(y)

    i, y = lax.while_loop(cond, body, (0, x))
    return jnp.sum(y ** 2) + i


def test_grad_while_trip_count_depends_on_input(x64):
    for x in ([0.3, 0.5, 0.7], [2.0, 3.0, 4.5], [0.01, 0.02, 0.05]):
        x = np.array(x)
        g = jax.jit(jax.grad(grow))(x)
        np.testing.assert_allclose(np.asarray(g), fd_grad(grow, x), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(jax.grad(grow)(x)), np.asarray(g), rtol=1e-12)


def test_grad_while_with_values_from_above(x64):
    # Cotangents of values the body closes over accumulate over iterations.
    def f(p, n):
        w, x = p[0], p[1]

        def body(c):
            i, v = c
            return i + 1, jnp.sin(v) * w + x

        return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]

    for n in (1, 4):
        p = np.array([0.5, 0.7])
        g = jax.grad(f)(p, n)
        np.testing.assert_allclose(np.asarray(g), fd_grad(lambda q, n=n: f(q, n), p), rtol=1e-6)


def test_value_and_grad_and_vjp_through_while(x64):
    x = np.array([0.3, 0.5, 0.7])
    v, g = jax.value_and_grad(grow)(x)
    assert abs(float(v) - float(grow(x))) < 1e-12
    np.testing.assert_allclose(np.asarray(g), fd_grad(grow, x), rtol=1e-6)

    def two(x):  # two outputs, cotangents for both
        return lax.while_loop(lambda c: c[0] < 3.0, lambda c: (c[0] + c[1], c[1] * 1.1),
                              (x[0], x[1]))

    _, pull = jax.vjp(two, jnp.array([0.5, 0.8]))
    (ct,) = pull((1.0, 2.0))
    fd = fd_grad(lambda z: float(two(z)[0]) + 2.0 * float(two(z)[1]), np.array([0.5, 0.8]))
    np.testing.assert_allclose(np.asarray(ct), fd, rtol=1e-6)


def test_grad_nested_while_loops(x64):
    def f(x):
        def outer_body(c):
            i, v = c
            inner = lax.while_loop(lambda d: d[0] < i + 2, lambda d: (d[0] + 1, jnp.sin(d[1]) * v),
                                   (0, v))[1]
            return i + 1, jnp.cos(inner) + v

        return lax.while_loop(lambda c: c[0] < 3, outer_body, (0, x))[1]

    for x in (0.4, 1.7):
        g = jax.grad(f)(x)
        assert abs(float(g) - float(fd_grad(f, np.array(x)))) < 1e-6


def test_grad_while_with_cond_and_scan_inside(x64):
    def f(x):
        def body(c):
            i, v = c
            v = lax.cond(v[0] > 1.0, lambda u: u * 0.5, lambda u: jnp.exp(u) - 0.5, v)
            v = lax.scan(lambda h, t: (jnp.tanh(h * t), None), v, jnp.array([1.1, 0.9]))[0]
            return i + 1, v

        return jnp.sum(lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1])

    x = np.array([0.2, 0.3])
    np.testing.assert_allclose(np.asarray(jax.grad(f)(x)), fd_grad(f, x), rtol=1e-6)


def test_grad_scan_inside_while_and_while_inside_scan(x64):
    def f(x):
        def step(h, t):
            h = lax.while_loop(lambda c: c[1] < t, lambda c: (c[0] * 1.2, c[1] + 1.0),
                               (h, 0.0))[0]
            return jnp.sin(h), h

        h, ys = lax.scan(step, x, jnp.array([1.0, 3.0, 2.0]))
        return h + jnp.sum(ys)

    assert abs(float(jax.grad(f)(0.6)) - float(fd_grad(f, np.array(0.6)))) < 1e-6


def test_grad_while_zero_trips_and_unused_result(x64):
    # No iteration: the loop is the identity.
    assert float(jax.grad(lambda v: power_loop(v, 0))(2.5)) == 1.0

    # The loop's result does not reach the output: its saved residuals are
    # released (called repeatedly to exercise the runtime stack).
    def f(x):
        y = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x))[1]
        return x * 3.0 + 0.0 * lax.stop_gradient(y)

    g = jax.jit(jax.grad(f))
    for _ in range(200):
        assert float(g(0.3)) == 3.0


def test_grad_of_vmapped_while_with_batched_predicate(x64):
    def f(x):
        return lax.while_loop(lambda c: c[1] < 5.0, lambda c: (c[0] + 1, c[1] * 1.7),
                              (0, x))[1]

    xs = np.array([0.5, 1.0, 2.0, 4.0])
    g = jax.grad(lambda v: jnp.sum(jax.vmap(f)(v)))(xs)
    np.testing.assert_allclose(np.asarray(g), fd_grad(lambda v: sum(f(t) for t in v), xs),
                               rtol=1e-6)


def test_vmap_of_grad_through_runtime_while(x64):
    # The lanes share one run-time stack: the batched forward loop pushes
    # every lane's residuals at each of its iterations (as many as the
    # longest lane needs), and the batched backward loop reads lane j at
    # lane j's own iteration count.
    xs = np.array([[0.3, 0.5, 0.7], [2.0, 3.0, 4.5], [0.01, 0.02, 0.05], [6.0, 5.0, 1.0]])
    got = jax.jit(jax.vmap(jax.grad(grow)))(xs)  # the last lane runs no iteration
    np.testing.assert_allclose(np.asarray(got), np.stack([fd_grad(grow, x) for x in xs]),
                               rtol=1e-6, atol=1e-6)
    # Per-lane trip counts from a batched bound; eager and jitted.
    per = jax.vmap(jax.grad(power_loop))(np.array([1.1, 0.9, 1.3]), np.array([0, 3, 1]))
    np.testing.assert_allclose(np.asarray(per), [1.0, 8 * 0.9 ** 7, 2 * 1.3], rtol=1e-12)
    v, g = jax.jit(jax.vmap(jax.value_and_grad(lambda x: power_loop(x, 2))))(np.array([1.5, 2.0]))
    np.testing.assert_allclose(np.asarray(v), [1.5 ** 4, 16.0])
    np.testing.assert_allclose(np.asarray(g), [4 * 1.5 ** 3, 32.0])


def test_jacrev_and_vmapped_cotangents_through_runtime_while(x64):
    # Only the backward loop is batched (the cotangents): the pushes have no
    # lanes, and every lane reads the whole of each push.
    def f(x):
        return grow_state(x) ** 2

    x = np.array([0.3, 0.5, 0.7])
    want = np.asarray(jax.jacfwd(f)(x))
    np.testing.assert_allclose(np.asarray(jax.jacrev(f)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.jacrev(f))(x)), want, rtol=1e-12)
    _, pullback = jax.vjp(f, x)
    cts = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
    np.testing.assert_allclose(np.asarray(jax.vmap(pullback)(cts)[0]), cts @ want, rtol=1e-12)


def grow_state(x):
    return lax.while_loop(lambda c: jnp.sum(c[1]) < 10.0,
                          lambda c: (c[0] + 1, c[1] * 1.5 + jnp.sin(c[1])), (0, x))[1]


def test_vmap_of_grad_releases_unused_stacks(x64):
    def f(x):
        y = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x))[1]
        return x * 3.0 + 0.0 * lax.stop_gradient(y)

    g = jax.jit(jax.vmap(jax.grad(f)))
    for _ in range(100):
        np.testing.assert_array_equal(np.asarray(g(np.array([0.3, 0.4]))), [3.0, 3.0])


def test_unsupported_compositions_raise_clearly():
    # grad of grad would differentiate the stack ops, and vmap of vmap would
    # nest lanes: both are refused with a pointer to the alternatives.
    with pytest.raises(NotImplementedError, match="run-time trip count"):
        jax.grad(jax.grad(lambda v: power_loop(v, 2)))(1.5)
    with pytest.raises(NotImplementedError, match="run-time trip count"):
        jax.vmap(jax.vmap(jax.grad(lambda v: power_loop(v, 2))))(jnp.ones((2, 2)))


def test_static_loops_support_higher_order_and_vmap(x64):
    # Counted loops (fori_loop with static bounds) save residuals in
    # buffers, so they compose with vmap and with further differentiation.
    def f(x):
        return lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * 1.5 + i, x)

    xs = np.array([0.2, 0.9])
    per = jax.vmap(jax.grad(f))(xs)
    np.testing.assert_allclose(np.asarray(per), [fd_grad(f, np.array(t)) for t in xs], rtol=1e-6)
    h = jax.grad(jax.grad(f))(0.4)
    assert abs(float(h) - float(fd_grad(jax.grad(f), np.array(0.4)))) < 1e-5


def test_boolean_residuals_in_buffers_and_on_the_stack(x64):
    # `where` saves its predicate (i1) per iteration: in a [n] buffer for
    # scan, on the run-time stack for while_loop.
    def f(x):
        def step(h, t):
            h = jnp.where(h > 0.2, h * t, jnp.sin(h) - t)
            return h, jnp.maximum(h, 0.1)

        h, ys = lax.scan(step, x, jnp.array([1.1, 0.7, -0.5, 1.3]))
        return jnp.sum(h) + jnp.sum(ys ** 2)

    def g(x):
        def body(c):
            i, h = c
            return i + 1, jnp.where(h > 0.2, h * 1.1, jnp.sin(h) - 0.3)

        return jnp.sum(lax.while_loop(lambda c: c[0] < 5, body, (0, x))[1])

    x = np.array([0.5, -0.3, 0.1, 2.0])
    for fn in (f, g):
        np.testing.assert_allclose(np.asarray(jax.grad(fn)(x)), fd_grad(fn, x), rtol=1e-6,
                                   atol=1e-9)


def test_jvp_of_loop_whose_body_has_a_loop_reading_the_outer_body():
    # Was a segfault in ember-autodiff: forward mode replaced the inner loop
    # after the outer body's yield had been mapped to it.
    def f(a):
        def outer(c):
            i, x = c
            g = jnp.sin(x) * a
            y = lax.while_loop(lambda s: s[0] < 3,
                               lambda s: (s[0] + 1, s[1] - 0.1 * g), (0, x))[1]
            return i + 1, y
        return lax.while_loop(lambda c: c[0] < 4, outer, (0, a))[1]

    e = 1e-3
    fd = (float(f(1.0 + e)) - float(f(1.0 - e))) / (2 * e)
    _, t = jax.jvp(f, (1.0,), (1.0,))
    np.testing.assert_allclose(float(t), fd, rtol=2e-3)
    np.testing.assert_allclose(float(jax.jit(jax.jacfwd(f))(1.0)), fd, rtol=2e-3)
    np.testing.assert_allclose(float(jax.grad(f)(1.0)), fd, rtol=2e-3)
