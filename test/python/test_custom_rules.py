"""custom_jvp / custom_vjp: the user's rule is used by forward and reverse
mode and survives vmap in both orders (grad(vmap(f)) and vmap(grad(f)))."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp

XS = jnp.array([0.1, 0.2, -0.3])


@pytest.fixture
def fake_jvp():
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)
    # Deliberately not the true derivative, so we can see which rule is used.
    f.defjvps(lambda t, ans, x: t * 100.0)
    return f


@pytest.fixture
def fake_vjp():
    @jax.custom_vjp
    def g(x):
        return x * x
    g.defvjp(lambda x: (x * x, x), lambda x, ct: (ct * 7.0,))
    return g


def test_custom_jvp_value_is_the_function(fake_jvp):
    np.testing.assert_allclose(fake_jvp(XS), np.sin(np.asarray(XS)), rtol=1e-6)


def test_custom_jvp_rule_used_by_forward_and_reverse_mode(fake_jvp):
    np.testing.assert_allclose(jax.grad(lambda x: fake_jvp(x).sum())(XS), [100.0] * 3)
    _, t = jax.jvp(fake_jvp, (XS,), (jnp.ones(3),))
    np.testing.assert_allclose(t, [100.0] * 3)


def test_custom_jvp_rule_survives_vmap_both_orders(fake_jvp):
    np.testing.assert_allclose(jax.vmap(jax.grad(fake_jvp))(XS), [100.0] * 3)
    np.testing.assert_allclose(jax.grad(lambda x: jax.vmap(fake_jvp)(x).sum())(XS), [100.0] * 3)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(fake_jvp)))(XS), [100.0] * 3)


def test_custom_vjp_rule_used_by_reverse_mode(fake_vjp):
    np.testing.assert_allclose(fake_vjp(XS), np.asarray(XS) ** 2, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: fake_vjp(x).sum())(XS), [7.0] * 3)


def test_custom_vjp_rule_survives_vmap_both_orders(fake_vjp):
    np.testing.assert_allclose(jax.vmap(jax.grad(fake_vjp))(XS), [7.0] * 3)
    np.testing.assert_allclose(jax.grad(lambda x: jax.vmap(fake_vjp)(x).sum())(XS), [7.0] * 3)


def test_custom_vjp_forward_mode_is_an_error(fake_vjp):
    # JAX's TypeError and text, at the user's line (no MLIR op prefix).
    with pytest.raises(TypeError, match="^can't apply forward-mode autodiff \\(jvp\\) to a "
                                        "custom_vjp function.\\n\\(at .*test_custom_rules.py:"):
        jax.jvp(fake_vjp, (XS,), (jnp.ones(3),))


def test_custom_jvp_second_order_with_true_rule():
    @jax.custom_jvp
    def softplus(x):
        return jnp.logaddexp(x, 0.0)
    softplus.defjvps(lambda t, ans, x: t * jax.nn.sigmoid(x))
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(jax.vmap(jax.grad(jax.grad(softplus)))(x), s * (1 - s), rtol=1e-5)


def test_custom_vjp_nondiff_argnums_and_pytree_residuals():
    import functools

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def apply(fn, x):
        return fn(x)
    apply.defvjp(lambda fn, x: (fn(x), {"x": x}), lambda fn, res, g: (g * 2.0 * res["x"],))
    x = jnp.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(jax.grad(lambda x: apply(jnp.sin, x).sum())(x), 2 * np.asarray(x))


def test_custom_rule_closing_over_a_traced_value():
    @jax.custom_jvp
    def f(x):
        return x * 2.0
    f.defjvps(lambda t, ans, x: t * 3.0)
    out = jax.jit(lambda w, x: jax.grad(lambda x: jnp.sum(f(x) * w))(x))(jnp.ones(3) * 2, XS)
    np.testing.assert_allclose(out, [6.0] * 3)


def test_rule_may_call_the_function_itself():
    # JAX's documented pattern: the rule computes the primal with f itself.
    @jax.custom_jvp
    def f(x):
        return jnp.tanh(x) * 2.0

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * 5.0

    np.testing.assert_allclose(f(XS), np.tanh(np.asarray(XS)) * 2, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: f(x).sum())(XS), [5.0] * 3)


def test_rule_calling_its_function_gives_higher_derivatives():
    """The external callbacks tutorial: a custom_jvp around a pure_callback
    (which has no derivative of its own) whose rule calls the function
    again; `hessian` needs the inner calls' rules too (JAX's value -0.4003078
    for the Bessel function J1 at 2)."""
    import scipy.special

    def jv(v, z):
        return jax.pure_callback(
            lambda v, z: scipy.special.jv(v, z).astype(np.float32),
            jax.ShapeDtypeStruct(jnp.shape(z), np.float32), v, z,
            vmap_method="broadcast_all")

    jv = jax.custom_jvp(jv)

    @jv.defjvp
    def _(primals, tangents):
        v, z = primals
        d = jnp.where(v == 0, -jv(v + 1, z), 0.5 * (jv(v - 1, z) - jv(v + 1, z)))
        return jv(v, z), tangents[1] * d

    j1 = lambda z: jv(1, z)  # noqa: E731
    np.testing.assert_allclose(float(jax.grad(j1)(2.0)), -0.06447162, rtol=1e-5)
    np.testing.assert_allclose(float(jax.hessian(j1)(2.0)), -0.4003078, rtol=1e-5)
    for order, g in ((1, jax.grad(j1)), (2, jax.grad(jax.grad(j1))),
                     (3, jax.grad(jax.grad(jax.grad(j1))))):
        np.testing.assert_allclose(float(g(2.0)), scipy.special.jvp(1, 2.0, order), rtol=1e-4)


def test_differentiation_traces_the_rule_not_the_function():
    """The custom derivative rules tutorial's call prints (JAX 0.10.2): under
    differentiation only the rule is traced; the function runs where the
    rule calls it."""
    calls = []

    @jax.custom_jvp
    def f(x):
        calls.append("f")
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("f_jvp")
        (x,), (t,) = primals, tangents
        return f(x), jnp.cos(x) * t

    jax.jvp(f, (3.,), (1.,))
    assert calls == ["f_jvp", "f"]
    calls.clear()
    jax.grad(f)(3.)
    assert calls == ["f_jvp", "f"]
    calls.clear()
    np.testing.assert_allclose(float(jax.grad(jax.grad(f))(3.)), -np.sin(3.), rtol=1e-6)
    assert calls == ["f_jvp", "f_jvp", "f"]

    calls.clear()

    @jax.custom_vjp
    def g(x):
        calls.append("g")
        return jnp.sin(x)

    def g_fwd(x):
        calls.append("g_fwd")
        return g(x), jnp.cos(x)

    def g_bwd(cos_x, y_bar):
        calls.append("g_bwd")
        return (cos_x * y_bar,)

    g.defvjp(g_fwd, g_bwd)
    np.testing.assert_allclose(float(jax.grad(g)(3.)), np.cos(3.), rtol=1e-6)
    assert calls == ["g_fwd", "g", "g_bwd"]
    # vjp outside jit runs fwd (which calls g), not bwd; bwd runs when the
    # backward function is called; forward mode runs fwd, then reports the
    # error (JAX's custom-derivatives tutorial).
    calls.clear()
    y, g_vjp = jax.vjp(g, 3.0)
    assert calls == ["g_fwd", "g"]
    np.testing.assert_allclose(float(y), np.sin(3.0), rtol=1e-6)
    np.testing.assert_allclose(float(g_vjp(1.0)[0]), np.cos(3.0), rtol=1e-6)
    assert calls[-1] == "g_bwd"
    calls.clear()
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a "
                                        r"custom_vjp function"):
        jax.jvp(g, (3.0,), (1.0,))
    assert calls == ["g_fwd", "g"]


def test_rules_of_functions_closing_over_differentiated_values_raise():
    # JAX raises (UnexpectedTracerError) where the rule cannot see the
    # derivative of a closed-over value; Ember gave 0 silently (custom_jvp)
    # or a misleading forward-mode error (custom_vjp).
    def outer_jvp(a):
        @jax.custom_jvp
        def f(x):
            return jnp.sin(x) * a

        @f.defjvp
        def f_jvp(p, t):
            (x,), (tx,) = p, t
            return f(x), jnp.cos(x) * a * tx

        return f(2.0)

    def outer_vjp(a):
        @jax.custom_vjp
        def f(x):
            return jnp.sin(x) * a

        f.defvjp(lambda x: (f(x), x), lambda x, g: (jnp.cos(x) * a * g,))
        return f(2.0)

    for fn in (outer_jvp, outer_vjp):
        with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
            jax.grad(fn)(3.0)
    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        jax.jvp(outer_jvp, (3.0,), (1.0,))
    # Closing over values that are not differentiated is fine.
    assert float(outer_jvp(3.0)) == pytest.approx(3.0 * np.sin(2.0), rel=1e-6)
    assert float(jax.grad(lambda x: outer_jvp(3.0) * x)(1.0)) == pytest.approx(
        3.0 * np.sin(2.0), rel=1e-6)



def test_custom_vjp_bwd_none_inside_a_cotangent_is_zero():
    # JAX: None anywhere in bwd's cotangents stands for zeros of that part.
    @jax.custom_vjp
    def f(xs):
        return xs[0] * xs[1]

    f.defvjp(lambda xs: (f(xs), xs), lambda xs, g: ([None, g * xs[0]],))
    ga, gb = jax.grad(f)([2.0, 3.0])
    assert float(ga) == 0.0 and float(gb) == 2.0
    f.defvjp(lambda xs: (f(xs), xs), lambda xs, g: ([g],))
    with pytest.raises(TypeError, match=r"produced a cotangent of structure .* for an "
                                        r"argument of structure"):
        jax.grad(f)([2.0, 3.0])


def test_custom_vjp_and_custom_jvp_resolve_keywords_and_defaults():
    # As JAX does: arguments given by keyword, and defaults not given, are
    # resolved to positions before nondiff_argnums picks its arguments.
    import functools

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
    def f(x, scale=2.0, power=1):
        return x ** power * scale

    f.defvjp(lambda x, scale, power: (f(x, scale, power), x),
             lambda scale, power, x, g: (g * scale * power * x ** (power - 1),))
    assert float(jax.grad(f)(3.0)) == 2.0
    assert float(jax.grad(lambda x: f(x, power=2))(3.0)) == 12.0

    @jax.custom_jvp
    def g(x, y=1.0):
        return x * y

    g.defjvp(lambda primals, tangents: (g(*primals), tangents[0] * primals[1] * 10))
    assert float(jax.grad(lambda x: g(x, y=3.0))(1.0)) == 30.0
    assert float(jax.grad(g)(1.0)) == 10.0
    with pytest.raises(TypeError, match="could not be resolved"):
        g(1.0, z=2.0)


def test_vjp_outside_jit_runs_fwd_once_and_bwd_when_called(capsys):
    """As JAX's: `vjp` outside `jit` runs the custom_vjp's `fwd` (once) and
    the backward function runs `bwd` only, each time it is called (the
    forward passes are taken from the `vjp`'s trace, not run again), also
    for two calls in one function; the printed order is JAX 0.10.2's
    (JAX's custom derivative rules tutorial)."""
    @jax.custom_vjp
    def f(x, y):
        print("called f!")
        return jnp.sin(x) * y

    def f_fwd(x, y):
        print("called f_fwd!")
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(res, g):
        print("called f_bwd!")
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)
    _, f_vjp = jax.vjp(f, 3.0, 4.0)
    assert capsys.readouterr().out == "called f_fwd!\ncalled f!\n"
    gx, gy = f_vjp(1.0)
    assert capsys.readouterr().out == "called f_bwd!\n"
    np.testing.assert_allclose([gx, gy], [np.cos(3.0) * 4.0, np.sin(3.0)], rtol=1e-6)
    f_vjp(2.0)
    assert capsys.readouterr().out == "called f_bwd!\n"

    def g(x):
        return f(x, 2.0) * f(x + 1.0, 3.0)
    _, g_vjp = jax.vjp(g, 1.0)
    assert capsys.readouterr().out == "called f_fwd!\ncalled f!\n" * 2
    (dg,) = g_vjp(1.0)
    assert capsys.readouterr().out == "called f_bwd!\n" * 2
    np.testing.assert_allclose(dg, 0.84672, rtol=1e-4)  # JAX 0.10.2's value
    # Rebuilt from its leaves (another trace), the forward pass runs again.
    rebuilt = f_vjp.replace(args_res=[3.0, 4.0])
    rebuilt(1.0)
    assert capsys.readouterr().out == "called f_fwd!\ncalled f!\ncalled f_bwd!\n"
