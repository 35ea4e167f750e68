"""lax.cond / lax.switch as the ember.case region op: only the chosen branch
runs, and reverse mode differentiates only the taken branch; forward mode and
vmap go through the all-branches-and-select form."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax

from helpers import fd_grad


def counting_branches(log):
    def make(name, fn):
        def branch(x):
            jax.debug.callback(lambda: log.append(name))
            return fn(x)
        return branch
    return make


def test_cond_runs_only_the_taken_branch():
    log = []
    make = counting_branches(log)
    f = jax.jit(lambda p, x: lax.cond(p, make("t", lambda v: v * 2), make("f", lambda v: -v), x))
    np.testing.assert_array_equal(np.asarray(f(True, jnp.arange(3.0))), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(False, jnp.arange(3.0))), [0.0, -1.0, -2.0])
    assert log == ["t", "f"]


def test_cond_ir_is_a_case_op():
    text = jax.jit(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x)).lower(True, 1.0).as_text()
    assert "ember.case" in text and "ember.select" not in text


@pytest.mark.parametrize("index,expected", [(-3, 1.0), (0, 1.0), (1, 10.0), (2, -99.0),
                                            (7, -99.0)])
def test_switch_clamps_and_picks(index, expected):
    branches = [lambda v: v, lambda v: v * 10, lambda v: v - 100]
    f = jax.jit(lambda i, x: lax.switch(i, branches, x))
    assert float(f(jnp.int32(index), 1.0)) == expected
    assert float(lax.switch(index, branches, 1.0)) == expected  # eager


def test_cond_pytrees_closures_and_no_operands():
    y = jnp.array([1.0, 2.0])

    @jax.jit
    def f(p, x):
        return lax.cond(p, lambda a: {"s": a["v"] + y, "n": a["k"]},
                        lambda a: {"s": a["v"] * y, "n": a["k"] + 1}, {"v": x, "k": 3})

    out = f(False, jnp.array([3.0, 4.0]))
    np.testing.assert_array_equal(np.asarray(out["s"]), [3.0, 8.0])
    assert int(out["n"]) == 4
    assert float(jax.jit(lambda x: lax.cond(x > 0, lambda: x, lambda: 0.0))(2.0)) == 2.0


def test_nested_cond_and_cond_in_scan():
    def g(x):
        return lax.cond(x > 0, lambda v: lax.cond(v > 10, lambda w: w - 10, lambda w: w * 2, v),
                        lambda v: -v, x)

    f = jax.jit(g)
    assert [float(f(v)) for v in (-1.0, 3.0, 12.0)] == [1.0, 6.0, 2.0]

    def body(c, x):
        c = lax.cond(x > 0, lambda v: v + x, lambda v: v * 0.5, c)
        return c, c

    _, ys = jax.jit(lambda xs: lax.scan(body, 1.0, xs))(jnp.array([1.0, -1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(ys), [2.0, 1.0, 3.0])


def test_cond_grad_jvp_and_vmap():
    def f(x):
        return lax.cond(x > 0, jnp.sin, jnp.cos, x)

    for x in (1.0, -1.0):
        want = np.cos(x) if x > 0 else -np.sin(x)
        assert abs(float(jax.grad(f)(x)) - want) < 1e-6
        assert abs(float(jax.jit(jax.grad(f))(x)) - want) < 1e-6
    _, t = jax.jvp(f, (2.0,), (3.0,))
    assert abs(float(t) - 3 * np.cos(2.0)) < 1e-5
    xs = jnp.array([1.0, -1.0, 0.5])
    got = jax.vmap(f)(xs)
    want = np.where(np.asarray(xs) > 0, np.sin(xs), np.cos(xs))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # Unbatched predicate, batched operand.
    got = jax.vmap(lambda x: lax.cond(True, jnp.sin, jnp.cos, x))(xs)
    np.testing.assert_allclose(np.asarray(got), np.sin(xs), rtol=1e-6)
    per = jax.vmap(jax.grad(f))(xs)
    np.testing.assert_allclose(np.asarray(per),
                               np.where(np.asarray(xs) > 0, np.cos(xs), -np.sin(xs)), rtol=1e-6)


def test_cond_branch_type_mismatch_names_line():
    with pytest.raises(TypeError, match=r"identical types.*int32\[\] vs float32\[\].*test_cond"):
        jax.jit(lambda x: lax.cond(x > 0, lambda: jnp.int32(0), lambda: x))(2.0)
    with pytest.raises(TypeError, match="pytree structure"):
        jax.jit(lambda x: lax.cond(x > 0, lambda: (x, x), lambda: x))(2.0)
    with pytest.raises(TypeError, match="pred must be a scalar"):
        jax.jit(lambda x: lax.cond(x > 0, lambda: x, lambda: x))(jnp.ones(2))


def test_grad_of_cond_differentiates_only_the_taken_branch():
    # As in JAX: the untaken branch's derivative (NaN for sqrt at -1) never
    # meets the cotangent, so grad is exact, not NaN.
    def f(x):
        return lax.cond(x > 0, lambda v: jnp.sqrt(v), lambda v: 0.0 * v, x)

    assert float(jax.grad(f)(-1.0)) == 0.0
    assert float(jax.grad(f)(4.0)) == 0.25
    assert float(jax.jit(jax.grad(f))(-1.0)) == 0.0

    def g(x):
        return lax.switch((x > 1.0).astype(jnp.int32) + (x > 2.0).astype(jnp.int32),
                          [lambda v: jnp.log(v - 1.0), lambda v: v * v, lambda v: jnp.arcsin(v)], x)

    # x = 1.5 takes branch 1; branch 0's log(0.5) is fine but branch 2's
    # arcsin'(1.5) is NaN.
    assert float(jax.grad(g)(1.5)) == 3.0


def test_grad_of_cond_matches_finite_differences(x64):
    w = jnp.array([0.3, -0.7, 1.1])

    def f(x, k):
        def b0(v):
            return jnp.sum(jnp.sin(v * w)), v[0]

        def b1(v):
            return jnp.sum(jnp.exp(v) * w), v[1] * v[2]

        def b2(v):
            return jnp.sum(v ** 3), jnp.tanh(v[0])

        a, b = lax.switch(k, [b0, b1, b2], x)
        return a * b + a

    x = np.array([0.4, -0.2, 0.9])
    for k in range(3):
        g = jax.grad(f)(x, k)
        np.testing.assert_allclose(np.asarray(g), fd_grad(lambda v, k=k: f(v, k), x), rtol=1e-6)
        gw = jax.grad(lambda ww, k=k: f(x, k) + jnp.sum(ww * 0))(w)  # w unused: zero
        np.testing.assert_allclose(np.asarray(gw), 0.0)


def test_grad_nested_cond_in_scan_and_higher_order(x64):
    def step(h, t):
        h = lax.cond(t > 0, lambda v: lax.cond(v > 1.0, jnp.log, jnp.exp, v), jnp.sin, h)
        return h * 1.5, h

    def f(x):
        h, ys = lax.scan(step, x, jnp.array([1.0, -1.0, 2.0, 3.0]))
        return h + jnp.sum(ys)

    for x in (0.3, 2.5):
        assert abs(float(jax.grad(f)(x)) - float(fd_grad(f, np.array(x)))) < 1e-6

    def c(x):
        return lax.cond(x > 0, lambda v: v ** 3, lambda v: -(v ** 2), x)

    assert abs(float(jax.grad(jax.grad(c))(2.0)) - 12.0) < 1e-9
    assert abs(float(jax.hessian(c)(-2.0)) + 2.0) < 1e-9
    per = jax.vmap(jax.grad(c))(jnp.array([-1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(per), [2.0, 12.0])
