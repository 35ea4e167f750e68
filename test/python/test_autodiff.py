"""The differentiation API (grad, value_and_grad, vjp, jvp, linearize, jacfwd,
jacrev, hessian, stop_gradient, checkpoint): argnums, has_aux, pytrees,
higher order, composition with jit, closures, JAX's conventions at
non-differentiable points and the errors. Default (float32) mode; the
per-op finite-difference checks in float64 are in test_autodiff_ops.py."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax, nn

from helpers import expanded_ir, fd_grad

X = np.array([0.5, -1.0, 2.0], np.float32)
Y = np.array([1.5, 0.25, -0.75], np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


def f3(a, b, c):
    return jnp.sum(a * jnp.sin(b) * c ** 2)


# --------------------------------------------------------------------------
# argnums, value_and_grad, has_aux
# --------------------------------------------------------------------------


def test_grad_argnums_int():
    c = X + 2
    close(jax.grad(f3)(X, Y, c), np.sin(Y) * c ** 2)
    close(jax.grad(f3, argnums=1)(X, Y, c), X * np.cos(Y) * c ** 2)
    close(jax.grad(f3, argnums=-1)(X, Y, c), 2 * X * np.sin(Y) * c)


def test_grad_argnums_tuple():
    c = X + 2
    g = jax.grad(f3, argnums=(0, 2))(X, Y, c)
    assert isinstance(g, tuple) and len(g) == 2
    close(g[0], np.sin(Y) * c ** 2)
    close(g[1], 2 * X * np.sin(Y) * c)
    (g0,) = jax.grad(f3, argnums=(1,))(X, Y, c)
    close(g0, X * np.cos(Y) * c ** 2)


def test_value_and_grad():
    v, g = jax.value_and_grad(f3, argnums=(0, 1))(X, Y, 2.0)
    close(v, np.sum(X * np.sin(Y) * 4))
    close(g[0], np.sin(Y) * 4)
    close(g[1], X * np.cos(Y) * 4)


def test_grad_has_aux():
    def f(x):
        return jnp.sum(x ** 2), {"mean": jnp.mean(x), "x2": x * 2}

    g, aux = jax.grad(f, has_aux=True)(X)
    close(g, 2 * X)
    assert set(aux) == {"mean", "x2"}
    close(aux["mean"], X.mean())
    close(aux["x2"], 2 * X)
    (v, aux), g = jax.value_and_grad(f, has_aux=True)(X)
    close(v, np.sum(X ** 2))
    close(aux["x2"], 2 * X)
    close(g, 2 * X)


def test_grad_has_aux_argnums():
    g, aux = jax.grad(lambda a, b: (jnp.sum(a * b), b - 1), argnums=(0, 1), has_aux=True)(X, Y)
    close(g[0], Y)
    close(g[1], X)
    close(aux, Y - 1)


def test_grad_kwargs_and_static_python_values():
    def f(x, n, scale=1.0):
        return jnp.sum(x ** n) * scale

    close(jax.grad(f)(X, 3, scale=2.0), 6 * X ** 2)
    # a non-differentiated integer array argument
    close(jax.grad(lambda x, i: jnp.sum(x * i))(X, np.array([1, 2, 3])), [1, 2, 3])


def test_grad_dtypes():
    assert np.asarray(jax.grad(lambda x: jnp.sum(x ** 2))(X)).dtype == np.float32
    g = jax.grad(lambda x: jnp.sum(x ** 2))(np.ones(2, np.float16))
    assert np.asarray(g).dtype == np.float16
    g = jax.grad(lambda x: x * 2.0)(3.0)
    assert np.asarray(g).dtype == np.float32 and float(g) == 2.0


def test_grad_of_constant_function():
    assert float(jax.grad(lambda x: 3.0)(1.0)) == 0.0
    close(jax.grad(lambda x, y: jnp.sum(x), argnums=1)(X, Y), np.zeros(3))


# --------------------------------------------------------------------------
# Pytrees
# --------------------------------------------------------------------------


def test_grad_pytree_input():
    params = {"w": X, "b": (Y, 2.0)}
    g = jax.grad(lambda p: jnp.sum(p["w"] * p["b"][0]) * p["b"][1])(params)
    assert set(g) == {"w", "b"} and isinstance(g["b"], tuple)
    close(g["w"], 2 * Y)
    close(g["b"][0], 2 * X)
    close(g["b"][1], np.sum(X * Y))
    g = jax.grad(lambda ps: jnp.sum(ps[0] * ps[1]))([X, Y])
    assert isinstance(g, list)
    close(g[1], X)


def test_vjp_pytrees():
    def f(p, s):
        return {"prod": p["a"] * p["b"], "sum": jnp.sum(p["a"]) * s}

    out, pullback = jax.vjp(f, {"a": X, "b": Y}, 3.0)
    close(out["prod"], X * Y)
    close(out["sum"], 3 * X.sum())
    ct = {"prod": np.ones(3, np.float32), "sum": np.float32(2.0)}
    gp, gs = pullback(ct)
    close(gp["a"], Y + 6)
    close(gp["b"], X)
    close(gs, 2 * X.sum())
    # the pullback can be called again with another cotangent
    gp2, _ = pullback({"prod": 2 * np.ones(3, np.float32), "sum": np.float32(0.0)})
    close(gp2["a"], 2 * Y)


def test_vjp_multiple_outputs_and_has_aux():
    out, pullback, aux = jax.vjp(lambda a: ((a ** 2, jnp.sum(a)), a + 1), X, has_aux=True)
    close(out[0], X ** 2)
    close(aux, X + 1)
    (g,) = pullback((np.ones(3, np.float32), np.float32(1.0)))
    close(g, 2 * X + 1)


def test_vjp_inside_jit():
    @jax.jit
    def f(x, ct):
        y, pullback = jax.vjp(lambda x: jnp.sin(x) * x, x)
        return y, pullback(ct)[0]

    y, g = f(X, Y)
    close(y, np.sin(X) * X)
    close(g, Y * (np.cos(X) * X + np.sin(X)))


def test_jvp_pytrees():
    def f(p):
        return {"a": p["x"] * p["y"], "b": (jnp.sum(p["x"]),)}

    primals = ({"x": X, "y": Y},)
    tangents = ({"x": np.ones(3, np.float32), "y": np.zeros(3, np.float32)},)
    out, tan = jax.jvp(f, primals, tangents)
    close(out["a"], X * Y)
    close(tan["a"], Y)
    assert isinstance(tan["b"], tuple)
    close(tan["b"][0], 3.0)
    # list primals and Python scalars
    out, tan = jax.jvp(lambda a, b: a * b, [2.0, 3.0], [1.0, 0.0])
    assert float(out) == 6.0 and float(tan) == 3.0


def test_jvp_has_aux():
    out, tan, aux = jax.jvp(lambda a: (a ** 2, a + 1), (X,), (np.ones(3, np.float32),),
                            has_aux=True)
    close(out, X ** 2)
    close(tan, 2 * X)
    close(aux, X + 1)


def test_linearize():
    out, f_jvp = jax.linearize(lambda x: jnp.sin(x) * 2, X)
    close(out, 2 * np.sin(X))
    close(f_jvp(np.ones(3, np.float32)), 2 * np.cos(X))
    close(f_jvp(Y), 2 * np.cos(X) * Y)


# --------------------------------------------------------------------------
# Higher order
# --------------------------------------------------------------------------


def test_grad_of_grad():
    close(jax.grad(jax.grad(jnp.sin))(1.0), -np.sin(1.0))
    close(jax.grad(jax.grad(lambda x: x ** 3))(2.0), 12.0)
    close(jax.grad(jax.grad(jax.grad(jnp.sin)))(1.0), -np.cos(1.0))
    close(jax.grad(jax.grad(lambda x: jnp.exp(-x ** 2)))(0.5),
          (4 * 0.25 - 2) * np.exp(-0.25))


def test_grad_of_grad_two_arguments():
    # d/dy d/dx (x^2 y^3) = 6 x y^2
    def f(x, y):
        return x ** 2 * y ** 3

    close(jax.grad(jax.grad(f, argnums=0), argnums=1)(1.5, 2.0), 6 * 1.5 * 4)


def test_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = 1 (the inner derivative must not see x's perturbation)
    def outer(x):
        return x * jax.grad(lambda y: x + y)(1.0)

    close(jax.grad(outer)(3.0), 1.0)

    def outer2(x):
        return jax.grad(lambda y: x * y)(2.0) * x

    close(jax.grad(outer2)(3.0), 6.0)


def test_forward_over_reverse_and_reverse_over_forward():
    def f(x):
        return jnp.sum(jnp.sin(x) * x)
    h = np.diag(2 * np.cos(X) - X * np.sin(X))
    _, hvp = jax.jvp(jax.grad(f), (X,), (Y,))
    close(hvp, h @ Y)
    g = jax.grad(lambda x: jnp.sum(jax.jvp(f, (x,), (Y,))[1]))(X)
    close(g, h @ Y)


def test_hessian_analytic():
    a = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, -1.0], [0.0, 2.0, 1.0]], np.float32)
    close(jax.hessian(lambda x: x @ a @ x)(X), a + a.T)
    close(jax.hessian(lambda x: jnp.sum(jnp.sin(x)))(X), np.diag(-np.sin(X)))
    close(jax.hessian(lambda x: jnp.sum(x) ** 3)(X), 6 * X.sum() * np.ones((3, 3)))


def test_hessian_argnums_and_has_aux():
    h, aux = jax.hessian(lambda a, b: (jnp.sum(a ** 2 * b), b.mean()), argnums=1,
                         has_aux=True)(X, Y)
    close(h, np.zeros((3, 3)))
    close(aux, Y.mean())
    hv = jax.hessian(lambda a, b: jnp.sum(a ** 2 * b))(X, Y)
    close(hv, np.diag(2 * Y))


def test_nn_loss_hessian_is_symmetric():
    def loss(w):
        return nn.logsumexp(w * X) - jnp.sum(jnp.tanh(w) * Y)

    h = np.asarray(jax.hessian(loss)(Y))
    close(h, h.T)


# --------------------------------------------------------------------------
# Jacobians
# --------------------------------------------------------------------------

JAC_FUNS = {
    "elementwise": lambda x: jnp.sin(x) * x[0],
    "matvec": lambda x: jnp.array([[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]]) @ jnp.tanh(x),
    "softmax": lambda x: nn.softmax(x),
    "scalar_out": lambda x: jnp.sum(x ** 3),
    "sort_cumsum": lambda x: jnp.cumsum(jnp.sort(x)),
}


@pytest.mark.parametrize("name", list(JAC_FUNS))
def test_jacfwd_equals_jacrev(name):
    f = JAC_FUNS[name]
    jf = np.asarray(jax.jacfwd(f)(X))
    jr = np.asarray(jax.jacrev(f)(X))
    out_shape = np.asarray(jax.jit(f)(X)).shape
    assert jf.shape == jr.shape == out_shape + X.shape
    close(jf, jr)


def test_jacobian_values_and_structure():
    j = jax.jacrev(lambda x: jnp.sin(x) * x[0])(X)
    want = np.diag(np.cos(X) * X[0])
    want[:, 0] += np.sin(X)
    close(j, want)
    # argnums tuple: one Jacobian per argument
    ja, jb = jax.jacfwd(lambda a, b: a * b, argnums=(0, 1))(X, Y)
    close(ja, np.diag(Y))
    close(jb, np.diag(X))
    # dict input: the input structure nested inside the output
    jd = jax.jacrev(lambda p: p["a"] * p["b"])({"a": X, "b": Y})
    close(jd["a"], np.diag(Y))
    close(jd["b"], np.diag(X))
    # matrix input
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    jm = jax.jacfwd(lambda m: jnp.sum(m, axis=1))(m)
    assert np.asarray(jm).shape == (2, 2, 3)
    close(jm, np.repeat(np.eye(2)[:, :, None], 3, axis=2))


def test_jacobian_has_aux():
    jr, aux = jax.jacrev(lambda a: (a * 2, {"s": jnp.sum(a)}), has_aux=True)(X)
    close(jr, 2 * np.eye(3))
    close(aux["s"], X.sum())
    jf, aux = jax.jacfwd(lambda a: (a * 2, a - 1), has_aux=True)(X)
    close(jf, 2 * np.eye(3))
    close(aux, X - 1)


# --------------------------------------------------------------------------
# Composition with jit, closures
# --------------------------------------------------------------------------


def _loss(x, w):
    return jnp.sum(jnp.tanh(x * w) ** 2) + jnp.max(x)


def test_jit_of_grad_equals_grad():
    close(jax.jit(jax.grad(_loss))(X, Y), jax.grad(_loss)(X, Y))
    close(jax.jit(jax.grad(_loss, argnums=1))(X, Y), jax.grad(_loss, argnums=1)(X, Y))


def test_grad_of_jit():
    close(jax.grad(jax.jit(_loss))(X, Y), jax.grad(_loss)(X, Y))
    g = jax.grad(jax.jit(lambda x, n: jnp.sum(x ** n), static_argnums=1))(X, 3)
    close(g, 3 * X ** 2)


def test_nested_jit_grad():
    f = jax.jit(jax.grad(jax.jit(jax.grad(lambda x: jnp.sin(x) * x))))
    close(f(1.0), 2 * np.cos(1.0) - np.sin(1.0))


def test_grad_closure_over_traced_values():
    f = jax.jit(lambda w, x: jax.grad(lambda x: jnp.sum(w * x ** 2))(x))
    close(f(Y, X), 2 * Y * X)
    # the outer derivative sees through the closure
    g = jax.grad(lambda w: jnp.sum(jax.grad(lambda x: jnp.sum(w * x ** 2))(X)))(Y)
    close(g, 2 * X)


def test_checkpoint():
    def f(x):
        return jnp.sum(jnp.sin(jnp.cos(x)) * x)
    close(jax.grad(jax.checkpoint(f))(X), jax.grad(f)(X))
    close(jax.jit(jax.grad(jax.remat(f)))(X), jax.grad(f)(X))


def test_checkpoint_recomputes_in_the_backward_pass():
    # The checkpointed block's forward pass runs again in the backward pass
    # (its residuals are not kept): a callback inside it fires twice per
    # gradient, once without checkpoint or with everything_saveable.
    calls = []

    def block(x):
        jax.debug.callback(lambda: calls.append(1))
        return jnp.sin(jnp.tanh(x) * 2.0)

    def count(fn):
        calls.clear()
        g = jax.grad(lambda x: jnp.sum(fn(x) ** 2))(jnp.array([0.3, -0.4]))
        return len(calls), np.asarray(g)

    n_plain, g_plain = count(block)
    n_ckpt, g_ckpt = count(jax.checkpoint(block))
    n_save, _ = count(jax.checkpoint(
        block, policy=jax.checkpoint_policies.everything_saveable))
    assert (n_plain, n_ckpt, n_save) == (1, 2, 1)
    np.testing.assert_allclose(g_ckpt, g_plain, rtol=1e-6)


def test_checkpoint_composes(x64):
    w = np.random.default_rng(1).standard_normal((5, 5)) * 0.3
    x = np.random.default_rng(0).standard_normal((4, 5))

    def f(x, blk, n=3):
        for _ in range(n):
            x = blk(x)
        return jnp.sum(x ** 2)

    def block(x):
        return jnp.sin(jnp.tanh(x @ w) * 2.0)

    ck = jax.remat(block, static_argnums=())
    for transform in (jax.grad, lambda g: jax.jacfwd(jax.grad(g)), jax.hessian):
        a = transform(lambda v: f(v[:1], ck))(x)
        b = transform(lambda v: f(v[:1], block))(x)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
    t = jax.jvp(lambda v: f(v, ck), (x,), (np.ones_like(x),))[1]
    t0 = jax.jvp(lambda v: f(v, block), (x,), (np.ones_like(x),))[1]
    assert abs(float(t) - float(t0)) < 1e-10
    per = jax.vmap(jax.grad(lambda v: f(v[None], ck)))(x)
    per0 = jax.vmap(jax.grad(lambda v: f(v[None], block)))(x)
    np.testing.assert_allclose(np.asarray(per), np.asarray(per0), rtol=1e-10)

    # Inside a scan body (issue #6), with a static argument.
    def step(h, t, scale):
        return jnp.tanh(h @ w) * scale + t

    def rnn(x, fn):
        return jnp.sum(lax.scan(lambda h, t: (fn(h, t, 0.5), None), x, jnp.arange(3.0))[0])

    a = jax.grad(rnn)(x, jax.checkpoint(step, static_argnums=(2,)))
    np.testing.assert_allclose(np.asarray(a), np.asarray(jax.grad(rnn)(x, step)), rtol=1e-10)


def test_checkpoint_differentiates_closed_over_values(x64):
    # The checkpointed body closes over w, which is differentiated: its
    # cotangent comes from the recomputed VJP (also inside a scan).
    def f(w, wrap):
        body = wrap(lambda h, _: (jnp.sin(h * w) + w, None))
        return lax.scan(body, 0.5, None, length=4)[0]

    for w in (1.3, -0.4):
        g = jax.grad(f)(w, jax.checkpoint)
        assert abs(float(g) - float(jax.grad(f)(w, lambda b: b))) < 1e-12
        assert abs(float(g) - float(fd_grad(lambda v: f(v, lambda b: b), np.array(w)))) < 1e-6


def _loop_bodies(text):
    """The text of each ember.while in `text`, outermost in program order."""
    parts = text.split("ember.while")[1:]
    return [p.split("\n    }\n")[0] for p in parts]


@pytest.mark.parametrize("policy,kept", [
    ("nothing_saveable", False), ("dots_saveable", True), ("checkpoint_dots", True),
    ("dots_with_no_batch_dims_saveable", True)])
def test_checkpoint_dots_policies_keep_the_products(policy, kept, x64):
    # In a scan body, x @ w1 is saved by the forward loop under the dots
    # policies (one more [n, 4, 5] residual buffer) and not recomputed by the
    # backward loop; nothing_saveable recomputes it. Gradients agree.
    r = np.random.default_rng(4)
    w1, xs = r.standard_normal((3, 5)) * 0.5, r.standard_normal((6, 4, 3))
    pol = getattr(jax.checkpoint_policies, policy)

    def loss(w1, xs, wrap):
        def step(c, x):
            return c + wrap(lambda x: jnp.tanh(x @ w1) @ w1.T)(x), None
        return jnp.sum(lax.scan(step, jnp.zeros((4, 3)), xs)[0] ** 2)

    def ck(f):
        return jax.checkpoint(f, policy=pol)
    g = jax.grad(loss)(w1, xs, ck)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(loss)(w1, xs, lambda f: f)),
                               rtol=1e-10)
    np.testing.assert_allclose(np.asarray(g), fd_grad(lambda w: loss(w, xs, ck), w1),
                               rtol=1e-6, atol=1e-8)
    text = expanded_ir(jax.grad(lambda w: loss(w, xs, ck)), w1)
    fwd, bwd = _loop_bodies(text)
    assert ("tensor<6x4x5xf64>" in fwd) == kept
    # The backward loop's product of the cotangent with (w1.T).T reads w1
    # (the transposes fold into the product) and has the forward product's
    # form too; a recomputed forward product is a second one.
    forward_product = "contract = [1] x [0] : (tensor<4x3xf64>, tensor<3x5xf64>)"
    assert bwd.count(forward_product) == (1 if kept else 2)


@pytest.mark.parametrize("policy,kept", [("dots_saveable", True),
                                         ("dots_with_no_batch_dims_saveable", False)])
def test_checkpoint_dots_with_batch_dimensions(policy, kept, x64):
    r = np.random.default_rng(6)
    w, xs = r.standard_normal((2, 3, 5)) * 0.5, r.standard_normal((4, 2, 7, 3))
    def ck(f):
        return jax.checkpoint(f, policy=getattr(jax.checkpoint_policies, policy))

    def loss(w, wrap):
        def step(c, x):
            return (c + jnp.sum(wrap(lambda x: jnp.tanh(jnp.matmul(x, w)))(x)), None)
        return lax.scan(step, 0.0, xs)[0]

    g = jax.grad(loss)(w, ck)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(loss)(w, lambda f: f)),
                               rtol=1e-10)
    loops = _loop_bodies(expanded_ir(jax.grad(lambda w: loss(w, ck)), w))
    # Without the product the forward loop saves nothing (the backward loop
    # reads xs' rows itself), so only the backward loop is left.
    assert len(loops) == (2 if kept else 1)
    assert ("tensor<4x2x7x5xf64>" in loops[0]) == kept


def test_checkpoint_recomputation_is_not_merged_with_the_forward_pass():
    # Straight-line code: the recomputation reads its inputs through an
    # optimization barrier, so CSE keeps it (forward product, recomputed
    # product, weight gradient: 3 GEMMs); prevent_cse=False lets CSE merge it.
    r = np.random.default_rng(7)
    x, w = r.standard_normal((64, 64)).astype(np.float32), r.standard_normal((64, 64)).astype(
        np.float32)
    def f(w):
        return jnp.sum(jnp.sin(x @ w))
    gemms = {}
    for prevent in (True, False):
        g = jax.jit(jax.value_and_grad(jax.checkpoint(f, prevent_cse=prevent)))
        gemms[prevent] = g.lower(w).as_text("llvm").count("llvm.call @__ember_gemm")
        v, dw = g(w)
        v0, dw0 = jax.value_and_grad(f)(w)
        np.testing.assert_allclose(np.asarray(dw), np.asarray(dw0), rtol=1e-5, atol=1e-4)
        assert abs(float(v) - float(v0)) <= 1e-3 * abs(float(v0))
    assert gemms == {True: 3, False: 2}


def test_optimization_barrier():
    tree = {"a": np.arange(3.0, dtype=np.float32), "b": (np.float32(2.0),)}
    out = lax.optimization_barrier(tree)
    np.testing.assert_array_equal(np.asarray(out["a"]), tree["a"])
    assert float(out["b"][0]) == 2.0
    f = jax.jit(lambda x: jnp.sum(lax.optimization_barrier(jnp.sin(x)) ** 2))
    close(f(X), np.sum(np.sin(X) ** 2))
    close(jax.grad(f)(X), 2 * np.sin(X) * np.cos(X))
    _, t = jax.jvp(lambda x: lax.optimization_barrier((x * 2, 1.0))[0], (X,), (Y,))
    close(t, 2 * Y)
    per = jax.vmap(lambda x, c: lax.optimization_barrier((x, c))[0] * c, (0, None))(
        np.ones((2, 3), np.float32), 3.0)
    np.testing.assert_array_equal(np.asarray(per), np.full((2, 3), 3.0))
    # The barrier is a real op in the staged program.
    assert "ember.optimization_barrier" in jax.jit(lax.optimization_barrier).lower(X).as_text()


def test_checkpoint_dots_policy_differentiates_products_of_one_value(x64):
    # x @ x.T: both operands of the saved product vary.
    def f(x):
        return jnp.sum(jnp.sin(x @ x.T))
    ck = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)
    x = np.random.default_rng(5).standard_normal((3, 4))
    np.testing.assert_allclose(np.asarray(jax.grad(ck)(x)), np.asarray(jax.grad(f)(x)),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.hessian(ck))(x)),
                               np.asarray(jax.hessian(f)(x)), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------
# stop_gradient
# --------------------------------------------------------------------------


def test_stop_gradient():
    close(jax.grad(lambda x: jnp.sum(lax.stop_gradient(x) * x))(X), X)
    close(jax.grad(lambda x: jnp.sum(lax.stop_gradient(x ** 2)))(X), np.zeros(3))
    _, t = jax.jvp(lambda x: lax.stop_gradient(jnp.sin(x)), (X,), (Y,))
    close(t, np.zeros(3))
    # the value passes through unchanged; pytrees and integers are accepted
    close(jax.jit(lax.stop_gradient)(X), X)
    out = lax.stop_gradient({"a": X, "i": np.array([1, 2])})
    close(out["a"], X)
    np.testing.assert_array_equal(np.asarray(out["i"]), [1, 2])


# --------------------------------------------------------------------------
# JAX's conventions at non-differentiable points
# --------------------------------------------------------------------------


def test_abs_at_zero():
    assert float(jax.grad(jnp.abs)(0.0)) == 1.0
    assert float(jax.grad(jnp.abs)(-2.0)) == -1.0
    assert float(jax.jvp(jnp.abs, (0.0,), (3.0,))[1]) == 3.0


def test_relu_at_zero():
    assert float(jax.grad(nn.relu)(0.0)) == 0.0
    assert float(jax.grad(nn.relu)(1.0)) == 1.0


def test_maximum_minimum_ties_split_evenly():
    gx, gy = jax.grad(jnp.maximum, argnums=(0, 1))(1.0, 1.0)
    assert (float(gx), float(gy)) == (0.5, 0.5)
    gx, gy = jax.grad(jnp.minimum, argnums=(0, 1))(2.0, 2.0)
    assert (float(gx), float(gy)) == (0.5, 0.5)
    gx, gy = jax.grad(jnp.maximum, argnums=(0, 1))(3.0, 1.0)
    assert (float(gx), float(gy)) == (1.0, 0.0)
    # reductions share the cotangent among the tied maxima
    close(jax.grad(jnp.max)(np.array([1.0, 3.0, 3.0], np.float32)), [0, 0.5, 0.5])
    close(jax.grad(jnp.min)(np.array([0.0, 0.0, 1.0, 0.0], np.float32)), [1 / 3, 1 / 3, 0, 1 / 3])


def test_sqrt_at_zero_is_inf():
    assert np.isinf(float(jax.grad(jnp.sqrt)(0.0)))


def test_where_safe_pattern():
    def safe(x):
        return jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)

    def unsafe(x):
        return jnp.where(x > 0, jnp.sqrt(x), 0.0)

    assert float(jax.grad(safe)(0.0)) == 0.0
    close(jax.grad(safe)(4.0), 0.25)
    # as in JAX: the untaken branch's inf times a zero cotangent is nan
    assert np.isnan(float(jax.grad(unsafe)(0.0)))


def test_power_at_zero():
    assert float(jax.grad(lambda x: x ** 2)(0.0)) == 0.0
    assert float(jax.grad(lambda x: jnp.power(x, 0.0))(0.0)) == 0.0
    assert float(jax.grad(lambda y: jnp.power(0.0, y))(2.0)) == 0.0


def test_piecewise_constant_ops_have_zero_derivative():
    for f in (jnp.sign, jnp.floor, jnp.ceil, jnp.round):
        assert float(jax.grad(f)(2.3)) == 0.0
    close(jax.grad(lambda x: jnp.sum(x * jnp.argmax(x)))(X), [2, 2, 2])


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_grad_of_non_scalar_output_raises():
    with pytest.raises(TypeError, match="scalar-output"):
        jax.grad(lambda x: x * 2)(X)
    with pytest.raises(TypeError, match="scalar-output"):
        jax.jit(jax.grad(lambda x: x * 2))(X)


def test_grad_of_integer_input_raises():
    with pytest.raises(TypeError, match="int32"):
        jax.grad(lambda x: jnp.sum(x * 2.0))(np.array([1, 2]))
    with pytest.raises(TypeError):
        jax.grad(lambda x: x * 2.0)(3)
    with pytest.raises(TypeError):
        jax.grad(lambda a, i: jnp.sum(a * i), argnums=(0, 1))(X, np.array([1, 2, 3]))


def test_grad_of_integer_output_raises():
    with pytest.raises(TypeError):
        jax.grad(lambda x: jnp.sum(x).astype(jnp.int32))(X)


def test_vjp_wrong_cotangent_shape_raises():
    _, pullback = jax.vjp(jnp.sin, X)
    with pytest.raises(ValueError, match="shape"):
        pullback(np.ones(2, np.float32))
    with pytest.raises(ValueError):
        jax.jit(lambda x: jax.vjp(jnp.sin, x)[1](jnp.ones(2)))(X)
    _, pullback = jax.vjp(lambda x: (x, x), X)
    with pytest.raises(ValueError):
        pullback(np.ones(3, np.float32))  # one leaf for two outputs


def test_jvp_errors():
    with pytest.raises(ValueError, match="shape"):
        jax.jvp(jnp.sin, (X,), (np.ones(2, np.float32),))
    with pytest.raises(TypeError):
        jax.jvp(jnp.sin, X, X)  # not tuples
    with pytest.raises(TypeError):
        jax.jvp(lambda a, b: a * b, (X, Y), (X,))


def test_has_aux_requires_pair():
    with pytest.raises(TypeError, match="has_aux"):
        jax.grad(lambda a: jnp.sum(a), has_aux=True)(X)


def test_argnums_out_of_range():
    with pytest.raises(TypeError, match="argnums"):
        jax.grad(lambda a: jnp.sum(a), argnums=1)(X)


def test_product_of_a_value_with_itself():
    # x @ x: the JVP rule replaced the value, so both operands took the
    # tangent (t @ t) and reverse mode failed ("not linear in its tangent
    # operands"); now by operand position.
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    t = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    _, tt = jax.jvp(lambda a: a @ a, (x,), (t,))
    np.testing.assert_allclose(np.asarray(tt), t @ x + x @ t, rtol=1e-6)
    g = jax.grad(lambda a: jnp.sum(a @ a))(x)
    ones = np.ones((2, 2), np.float32)
    np.testing.assert_allclose(np.asarray(g), ones @ x.T + x.T @ ones, rtol=1e-6)
    v = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda a: jnp.dot(a, a))(v)), 2 * v)
    h = jax.hessian(lambda a: jnp.einsum("i,i->", a, a))(v)
    np.testing.assert_allclose(np.asarray(h), 2 * np.eye(3), rtol=1e-6)


def test_vjp_objects_are_pytrees_and_fwd_and_bwd():
    """JAX's "VJP objects" guide: a VJP returned from a jitted forward
    function and called in a jitted backward one; `fwd_and_bwd`; `args_res`
    (Ember's residuals are the arguments: the forward pass runs again)."""
    def layer(W, x):
        return jnp.tanh(x @ W)

    def two_layers(W1, W2, x):
        return jnp.sum(layer(W2, layer(W1, x)))

    rng = np.random.default_rng(0)
    W1, W2 = (jnp.asarray(rng.normal(size=(3, 3)).astype(np.float32)) for _ in range(2))
    x0 = jnp.asarray(rng.normal(size=(2, 3)).astype(np.float32))
    dW1_ref, dW2_ref = jax.grad(two_layers, argnums=(0, 1))(W1, W2, x0)

    fwd = jax.jit(lambda *a: jax.vjp(layer, *a))
    bwd = jax.jit(lambda f_vjp, ct: f_vjp(ct))
    x1, res1 = fwd(W1, x0)
    x2, res2 = fwd(W2, x1)
    assert len(jax.tree.leaves(res1)) == 2
    dW2, dx1 = bwd(res2, jnp.ones_like(x2))
    dW1, _ = bwd(res1, dx1)
    np.testing.assert_allclose(dW1, dW1_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dW2, dW2_ref, rtol=1e-5, atol=1e-6)
    assert len(bwd.cache) == 1  # (both calls: one compilation)

    f, b = jax.fwd_and_bwd(layer, argnums=(0, 1))
    y, r = f(W1, x0)
    dW, dx = b(r, jnp.ones_like(y))
    want = jax.vjp(layer, W1, x0)[1](jnp.ones_like(y))
    np.testing.assert_allclose(dW, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, want[1], rtol=1e-5, atol=1e-6)
    # An int argnums gives one array; has_aux puts aux third; jitted=False.
    f, b = jax.fwd_and_bwd(lambda x, W: (layer(W, x), x.sum()), argnums=1, has_aux=True,
                             jitted=False)
    y, r, aux = f(x0, W1)
    assert float(aux) == pytest.approx(float(np.asarray(x0).sum()), rel=1e-6)
    np.testing.assert_allclose(b(r, jnp.ones_like(y)), want[0], rtol=1e-5, atol=1e-6)

    # args_res: replaced, the VJP recomputes at the new arguments.
    y, f_vjp = jax.vjp(layer, W1, x0)
    assert [np.asarray(a).shape for a in f_vjp.args_res] == [(3, 3), (2, 3)]
    f_vjp.args_res[0] = W2
    np.testing.assert_allclose(f_vjp(jnp.ones_like(y))[0],
                               jax.vjp(layer, W2, x0)[1](jnp.ones_like(y))[0], rtol=1e-5, atol=1e-6)
    g = f_vjp.replace(args_res=[W1, x0])
    np.testing.assert_allclose(g(jnp.ones_like(y))[0], want[0], rtol=1e-5, atol=1e-6)
    # Inside jit, with args_res changed after the forward pass.
    def light(W, Wb, x, ct):
        _, fv = jax.vjp(layer, W, x)
        fv.args_res[0] = Wb
        return fv(ct)
    np.testing.assert_allclose(jax.jit(light)(W1, W2, x0, jnp.ones_like(y))[0],
                               jax.vjp(layer, W2, x0)[1](jnp.ones_like(y))[0], rtol=1e-5, atol=1e-6)
    # A custom_vjp whose residual is a VJP.
    @jax.custom_vjp
    def h(W, x):
        return layer(W, x)

    h.defvjp(lambda W, x: jax.vjp(layer, W, x), lambda fv, ct: fv(ct))
    np.testing.assert_allclose(jax.jit(jax.grad(lambda W: h(W, x0).sum()))(W1),
                               want[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="cotangent shape"):
        bwd(res1, jnp.ones((3, 3)))


def test_aux_values_that_are_not_arrays():
    # JAX returns has_aux values it never traced as they are (strings,
    # objects); linearize takes has_aux too (JAX 0.10.2's results).
    assert jax.vjp(lambda v: (v * 2, "aux"), 3.0, has_aux=True)[2] == "aux"
    g, aux = jax.grad(lambda v: (v * 2, {"s": "x", "v": v}), has_aux=True)(3.0)
    assert float(g) == 2.0 and aux["s"] == "x" and float(aux["v"]) == 3.0
    assert jax.jvp(lambda v: (v * 2, "a"), (3.0,), (1.0,), has_aux=True)[2] == "a"
    assert jax.jacrev(lambda v: (v * 2, "a"), has_aux=True)(3.0)[1] == "a"
    out, f_jvp, aux = jax.linearize(lambda v: (jnp.sin(v), v * 2), 1.0, has_aux=True)
    np.testing.assert_allclose(float(f_jvp(2.0)), 2 * np.cos(1.0), rtol=1e-6)
    assert float(aux) == 2.0 and float(jax.jit(f_jvp)(2.0)) == float(f_jvp(2.0))
    with pytest.raises(TypeError, match="strings are not valid"):
        jax.jit(lambda v: (v, "str"))(1.0)


def test_jvp_takes_float0_tangents_of_integer_primals():
    out, tan = jax.jvp(lambda a, n: a * n, (2.0, 3), (1.0, np.zeros((), jax.dtypes.float0)))
    assert float(out) == 6.0 and float(tan) == 3.0  # JAX 0.10.2


def test_integer_arguments_get_float0_gradients_as_in_jax():
    # JAX's (co)tangents of integer and boolean values are float0 zeros,
    # host arrays no program computes; outputs recorded from JAX 0.10.2.
    def f(x, n):
        return (x * n).sum()

    x, n = jnp.ones(3), jnp.arange(3)
    want = "TypedNdArray([(b'',), (b'',), (b'',)], dtype=void)"
    gx, gn = jax.grad(f, (0, 1), allow_int=True)(x, n)
    assert repr(gn) == want and gn.dtype == jax.dtypes.float0
    np.testing.assert_array_equal(gx, [0.0, 1.0, 2.0])
    # under jit, from vjp, in a pytree
    assert repr(jax.jit(lambda x, n: jax.grad(f, (0, 1), allow_int=True)(x, n))(x, n)[1]) == want
    assert repr(jax.vjp(f, x, n)[1](jnp.float32(1.0))[1]) == want
    g = jax.grad(lambda d: d["a"].sum() * d["i"], allow_int=True)({"a": jnp.ones(2), "i": 3})
    assert repr(g["i"]) == "TypedNdArray((b'',), dtype=void)"
    np.testing.assert_array_equal(g["a"], [3.0, 3.0])
    # booleans, and vmap adding the mapped axis
    gb = jax.grad(lambda x, b: jnp.where(b, x, 0.0).sum(), (0, 1), allow_int=True)(
        jnp.ones(2), jnp.array([True, False]))
    assert repr(gb[1]) == "TypedNdArray([(b'',), (b'',)], dtype=void)"
    gv = jax.vmap(jax.grad(f, (0, 1), allow_int=True))(jnp.ones((2, 3)),
                                                      jnp.ones((2, 3), jnp.int32))
    assert gv[1].shape == (2, 3) and gv[1].dtype == jax.dtypes.float0
    gv = jax.vmap(jax.grad(f, (0, 1), allow_int=True), out_axes=1)(
        jnp.ones((2, 3)), jnp.ones((2, 3), jnp.int32))
    assert gv[1].shape == (3, 2)
    # jvp: an integer output's tangent; a float0 cotangent for one in vjp
    (_, m), (_, tm) = jax.jvp(lambda x, n: (x * n, n + 1), (jnp.ones(2), jnp.arange(2)),
                              (jnp.ones(2), np.zeros(2, jax.dtypes.float0)))
    np.testing.assert_array_equal(m, [1, 2])
    assert repr(tm) == "TypedNdArray([(b'',), (b'',)], dtype=void)"
    out, back = jax.vjp(lambda x, n: (x * 2.0, n + 1), jnp.ones(2), jnp.arange(2))
    gx, gn = back((jnp.ones(2), np.zeros(2, jax.dtypes.float0)))
    np.testing.assert_array_equal(gx, [2.0, 2.0])
    assert gn.dtype == jax.dtypes.float0
    # jacrev keeps zeros of the argument's dtype (as JAX's)
    jx, jn = jax.jacrev(f, (0, 1), allow_int=True)(x, n)
    assert jn.dtype == np.int32 and not np.asarray(jn).any()
