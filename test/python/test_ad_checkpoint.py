"""`jax.ad_checkpoint`: checkpoint policies (by products, by names, the
user's own callables), `checkpoint_name` and `print_saved_residuals`.

Expected report lines marked "JAX 0.10.2" were printed by JAX for the same
program (paths and line numbers replaced by this file's)."""

import re

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.ad_checkpoint import checkpoint_name, print_saved_residuals

from helpers import expanded_ir, fd_grad

cp = jax.checkpoint_policies

R = np.random.default_rng(0)
W1 = R.normal(size=(5, 4)).astype(np.float32)
W2 = R.normal(size=(3, 5)).astype(np.float32)
X = R.normal(size=(4,)).astype(np.float32)


def f(w1, w2, x):
    h = checkpoint_name(jnp.sin(w1 @ x), "h1")
    h = checkpoint_name(jnp.tanh(w2 @ h) * jnp.exp(h[:3].sum()), "h2")
    return jnp.sum(h ** 2)


POLICIES = {
    "none": None,
    "nothing": cp.nothing_saveable,
    "dots": cp.dots_saveable,
    "dots_no_batch": cp.dots_with_no_batch_dims_saveable,
    "only_h1": cp.save_only_these_names("h1"),
    "all_names_but_h1": cp.save_any_names_but_these("h1"),
    "anything_but_h2": cp.save_anything_except_these_names("h2"),
    "both": cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names("h2")),
    "offload_names": cp.save_and_offload_only_these_names(
        names_which_can_be_saved=["h1"], names_which_can_be_offloaded=["h2"],
        offload_src="device", offload_dst="pinned_host"),
    "offload_dots": cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
    "user": lambda prim, *avals, **params: prim.name in ("sin", "exp"),
}


@pytest.mark.parametrize("name", list(POLICIES))
def test_policies_give_the_same_derivatives(name):
    ck = jax.checkpoint(f, policy=POLICIES[name])
    args = (W1, W2, X)
    for a, b in zip(jax.jit(jax.grad(ck, argnums=(0, 1, 2)))(*args),
                    jax.grad(f, argnums=(0, 1, 2))(*args)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.grad(ck, argnums=2)(*args)),
                               fd_grad(lambda x: f(W1, W2, x.astype(np.float32)), X, eps=1e-3),
                               rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(np.asarray(jax.hessian(ck, argnums=2)(*args)),
                               np.asarray(jax.hessian(f, argnums=2)(*args)), rtol=1e-5,
                               atol=1e-5)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(
        np.asarray(jax.vmap(jax.grad(ck, argnums=2), (None, None, 0))(W1, W2, xs)),
        np.asarray(jax.vmap(jax.grad(f, argnums=2), (None, None, 0))(W1, W2, xs)),
        rtol=1e-6, atol=1e-6)
    t = jax.jvp(ck, args, args)[1]
    assert abs(float(t) - float(jax.jvp(f, args, args)[1])) < 1e-4


@pytest.mark.parametrize("policy,sins", [(None, 2), (cp.save_only_these_names("s"), 1),
                                         (cp.save_only_these_names("t"), 2),
                                         (cp.save_any_names_but_these("t"), 1)])
def test_a_saved_name_is_not_recomputed(policy, sins):
    # With the value computed too, sin is computed once when the forward pass
    # keeps its named result, and again in the backward pass when it is
    # recomputed.
    def g(x):
        s = checkpoint_name(jnp.sin(x), "s")
        return jnp.sum(checkpoint_name(s * s, "t"))
    ck = jax.checkpoint(g, policy=policy)
    assert expanded_ir(jax.value_and_grad(ck), X).count("ember.sin") == sins
    np.testing.assert_allclose(np.asarray(jax.grad(ck)(X)), np.sin(2 * X), rtol=1e-5)


def test_user_policy_sees_primitives_avals_and_params():
    seen = []

    def policy(prim, *avals, **params):
        seen.append((prim.name, tuple(a.shape for a in avals), params))
        return False

    jax.grad(jax.checkpoint(f, policy=policy))(W1, W2, X)
    names = [s[0] for s in seen]
    assert {"sin", "tanh", "exp", "dot_general", "name"} <= set(names)
    dot = next(s for s in seen if s[0] == "dot_general")
    assert dot[1][0] == (5, 4) and "dimension_numbers" in dot[2]
    assert {s[2]["name"] for s in seen if s[0] == "name"} == {"h1", "h2"}


def test_checkpoint_name_is_the_identity():
    tree = {"a": X, "b": (jnp.float32(2.0),)}
    out = checkpoint_name(tree, "n")
    np.testing.assert_array_equal(np.asarray(out["a"]), X)
    assert float(out["b"][0]) == 2.0
    np.testing.assert_allclose(np.asarray(jax.grad(lambda x: checkpoint_name(x * x, "sq").sum())(
        jnp.arange(3.0))), [0.0, 2.0, 4.0])  # JAX 0.10.2
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda x: checkpoint_name(x, "v") * 2)(X)),
                               2 * X)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: checkpoint_name(x, "j") + 1)(X)),
                               X + 1)
    text = str(jax.make_jaxpr(lambda x: checkpoint_name(x, "q"))(1.0))
    assert "name[name=q]" in text  # JAX 0.10.2 prints `c:f32[] = name[name=q] b`
    with pytest.raises(TypeError, match="str name"):
        checkpoint_name(X, 3)


def test_offload_names_must_not_intersect():
    with pytest.raises(ValueError, match="should be exclusive"):
        cp.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"], names_which_can_be_offloaded=["a"],
            offload_src="device", offload_dst="pinned_host")


def _report(capsys, fn, *args):
    print_saved_residuals(fn, *args)
    out = capsys.readouterr().out
    return re.sub(r"from \S*test_ad_checkpoint\.py:\d+:\d+", "from LOC", out).splitlines()


def test_print_saved_residuals(capsys):
    def g(W, x):
        return jnp.sin(jnp.dot(W, x))

    def f2(W1, W2, W3, x):
        x = jax.checkpoint(g)(W1, x)
        x = jax.checkpoint(g)(W2, x)
        return jax.checkpoint(g)(W3, x)

    w1, w2, w3, x = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4)
    # As JAX 0.10.2: a checkpointed function's output is named by the op
    # inside it that computes it (sin, in g).
    assert _report(capsys, f2, w1, w2, w3, x) == [
        "f32[5,4] from the argument W1", "f32[6,5] from the argument W2",
        "f32[7,6] from the argument W3", "f32[4] from the argument x",
        "f32[5] output of sin from LOC (test_print_saved_residuals.<locals>.g)",
        "f32[6] output of sin from LOC (test_print_saved_residuals.<locals>.g)"]

    def chain(x):
        for _ in range(3):
            x = jnp.sin(x)
        return x
    assert _report(capsys, chain, 3.0) == [  # JAX 0.10.2
        "f32[] output of cos from LOC (test_print_saved_residuals.<locals>.chain)"] * 3

    c = jnp.arange(3.0)
    assert _report(capsys, lambda a: jnp.sin(a) * c, 1.0) == [  # JAX 0.10.2
        "f32[3] from a constant",
        "f32[] output of cos from LOC (test_print_saved_residuals.<locals>.<lambda>)"]

    def h(a, b):
        return jnp.exp(a) * b["k"]
    assert _report(capsys, h, 1.0, {"k": 2.0}) == [  # JAX 0.10.2
        "f32[] from the argument b['k']",
        "f32[] output of exp from LOC (test_print_saved_residuals.<locals>.h)"]

    assert _report(capsys, lambda x: jnp.sum(jax.nn.relu(x)), jnp.ones(3))[0] == (
        "bool[3] output of gt from LOC (test_print_saved_residuals.<locals>.<lambda>)")

    def named(w, x):
        h = checkpoint_name(jnp.sin(w @ x), "a")
        return jnp.sum(jnp.sin(w.T @ h))
    lines = _report(capsys, jax.checkpoint(named, policy=cp.save_only_these_names("a")),
                    jnp.ones((4, 4)), jnp.ones(4))
    assert lines == ["f32[4,4] from the argument w", "f32[4] from the argument x",
                     "f32[4] named 'a' from LOC (test_print_saved_residuals.<locals>.named)"]


def test_locations_name_the_function_and_column():
    # The traced program's locations carry the expression's column and the
    # function's qualified name (what print_saved_residuals reports).
    from ember._src import core

    def fn(x):
        return jnp.cos(x)
    module, _ = core.trace_function(lambda x: [fn(x)], [core.as_value(X).aval])
    main = module.body.operations[0]
    text = str(main.regions[0].blocks[0].operations[0].location)
    assert re.search(r'loc\("test_locations_name_the_function_and_column.<locals>.fn"'
                     r'\(".*test_ad_checkpoint.py":\d+:15\)\)', text), text


def test_squared_error_saves_jax_residual(capsys):
    # `(p - y) ** 2` is integer_pow, whose JVP rule is JAX's: the backward
    # pass keeps `2 * (p - y)` (JAX 0.10.2 lists "output of mul"), not p - y.
    def loss(w, x, y):
        return jnp.sum((jnp.sin(w * x) - y) ** 2)

    lines = _report(capsys, loss, jnp.ones(3), jnp.ones(3), jnp.zeros(3))
    assert lines[-1].startswith("f32[3] output of mul from LOC"), lines
    assert not any("output of sub" in line for line in lines), lines


def _stack_of_layers(x, ws):
    def layer(h, w):
        return jnp.sin(w @ h), None
    h, _ = jax.lax.scan(layer, x, ws)
    return jnp.sum(h)


def test_policy_saves_values_inside_loops(capsys):
    # dots_saveable on a checkpointed scan of layers: the forward pass keeps
    # each iteration's product (a [5, 4] stack), and the backward pass no
    # longer computes the products again (in value_and_grad, one
    # dot_general fewer than with nothing_saveable); gradients unchanged.
    ws = jnp.asarray(R.normal(size=(5, 4, 4)).astype(np.float32) * 0.5)
    x = jnp.asarray(X)
    plain = jax.grad(_stack_of_layers, argnums=(0, 1))(x, ws)
    dots = {}
    for name in ("dots_saveable", "nothing_saveable", "everything_saveable"):
        ck = jax.checkpoint(_stack_of_layers, policy=getattr(cp, name))
        g = jax.grad(ck, argnums=(0, 1))(x, ws)
        for a, b in zip(g, plain):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
        dots[name] = expanded_ir(jax.value_and_grad(ck, argnums=(0, 1)), x, ws).count(
            "ember.dot_general")
    assert dots["dots_saveable"] == dots["nothing_saveable"] - 1, dots
    lines = _report(capsys, jax.checkpoint(_stack_of_layers, policy=cp.dots_saveable), x, ws)
    assert lines == ["f32[4] from the argument x", "f32[5,4,4] from the argument ws",
                     "f32[5,4] output of scan from LOC (_stack_of_layers)"]
    # By names inside a fori_loop: the named value is kept for every step.
    def named(x):
        def step(i, h):
            return jnp.cos(checkpoint_name(jnp.sin(h) * 2.0, "s"))
        return jnp.sum(jax.lax.fori_loop(0, 3, step, x))
    ck = jax.checkpoint(named, policy=cp.save_only_these_names("s"))
    np.testing.assert_allclose(np.asarray(jax.grad(ck)(x)), np.asarray(jax.grad(named)(x)),
                               rtol=1e-6)
    assert "f32[3,4]" in " ".join(_report(capsys, ck, x))
    h, d = np.asarray(X, np.float64), 1.0  # the chain rule by hand
    for _ in range(3):
        d = d * -np.sin(2 * np.sin(h)) * 2 * np.cos(h)
        h = np.cos(2 * np.sin(h))
    np.testing.assert_allclose(np.asarray(jax.grad(ck)(x)), d, rtol=1e-4, atol=1e-5)


def test_scan_residuals_as_jax_lists_them(capsys):
    # The scanned array is read again by the backward loop (JAX lists it as
    # the argument), not copied row by row; no iteration count listed.
    ws = jnp.asarray(R.normal(size=(5, 4, 4)).astype(np.float32))
    assert _report(capsys, _stack_of_layers, jnp.asarray(X), ws) == [  # JAX 0.10.2
        "f32[5,4,4] from the argument ws",
        "f32[5,4] output of scan from LOC (_stack_of_layers)",
        "f32[5,4] output of scan from LOC (_stack_of_layers)"]
