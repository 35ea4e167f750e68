"""`make_jaxpr`'s view as data (JAX's "Writing custom interpreters"
guide): Vars, Literals and equations whose primitives (`lax.exp_p`, ...)
`bind` to Ember's lax functions, so interpreters written against JAX's
jaxprs run, under transformations too."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.util import safe_map
from ember.core import eval_jaxpr
from ember.extend import core


def _eval(jaxpr, consts, *args):
    # The guide's interpreter, as written there.
    env = {}

    def read(var):
        if type(var) is core.Literal:
            return var.val
        return env[var]

    def write(var, val):
        env[var] = val

    safe_map(write, jaxpr.invars, args)
    safe_map(write, jaxpr.constvars, consts)
    for eqn in jaxpr.eqns:
        invals = safe_map(read, eqn.invars)
        outvals = eqn.primitive.bind(*invals, **eqn.params)
        if not eqn.primitive.multiple_results:
            outvals = [outvals]
        safe_map(write, eqn.outvars, outvals)
    return safe_map(read, jaxpr.outvars)


def test_structure_of_the_view():
    def bar(w, b, x):
        return jnp.dot(w, x) + b + jnp.ones(5), x
    closed = ember.make_jaxpr(bar)(jnp.ones((5, 10)), jnp.ones(5), jnp.ones(10))
    jaxpr = closed.jaxpr
    assert [v.aval.shape for v in jaxpr.invars] == [(5, 10), (5,), (10,)]
    assert jaxpr.outvars[1] is jaxpr.invars[2]
    dot = jaxpr.eqns[0]
    assert dot.primitive is lax.dot_general_p
    assert dot.params["dimension_numbers"] == (((1,), (0,)), ((), ()))
    assert dot.invars == [jaxpr.invars[0], jaxpr.invars[2]]
    lit = [v for e in jaxpr.eqns for v in e.invars if type(v) is core.Literal]
    assert lit and lit[0].val == 1.0 and lit[0].aval.dtype == np.float32
    assert closed.literals == closed.consts == []
    assert str(closed).startswith("{ lambda ; a:f32[5,10] b:f32[5] c:f32[10]. let")


def test_the_guides_interpreter_evaluates_programs():
    def f(x, y):
        z = jnp.tanh(x @ y.T) * 2.0 + jnp.arange(3.0)
        w = jnp.where(z > 0.5, z ** 3, -z).astype(jnp.float32)
        return jnp.concatenate([w.sum(axis=0), jnp.cumsum(w[:, 1])]), jnp.max(w.T, axis=1)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    y = rng.standard_normal((3, 5)).astype(np.float32)
    closed = ember.make_jaxpr(f)(x, y)
    got = _eval(closed.jaxpr, closed.literals, x, y)
    want = f(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    for g, w in zip(eval_jaxpr(closed.jaxpr, closed.consts, x, y), want):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    for g, w in zip(core.jaxpr_as_fun(closed)(x, y), want):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_inverse_interpreter_under_transformations():
    inverse_registry = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}

    def inverse_jaxpr(jaxpr, consts, *args):
        env = {}

        def read(var):
            return var.val if type(var) is core.Literal else env[var]

        safe_map(env.__setitem__, jaxpr.outvars, args)
        safe_map(env.__setitem__, jaxpr.constvars, consts)
        for eqn in jaxpr.eqns[::-1]:
            invals = safe_map(read, eqn.outvars)
            if eqn.primitive not in inverse_registry:
                raise NotImplementedError(f"{eqn.primitive} does not have registered inverse.")
            safe_map(env.__setitem__, eqn.invars, [inverse_registry[eqn.primitive](*invals)])
        return safe_map(read, jaxpr.invars)

    def inverse(fun):
        def wrapped(*args):
            closed = ember.make_jaxpr(fun)(*args)
            return inverse_jaxpr(closed.jaxpr, closed.literals, *args)[0]
        return wrapped

    def f(x):
        return jnp.exp(jnp.tanh(x))

    f_inv = inverse(f)
    assert jnp.allclose(f_inv(f(1.0)), 1.0)
    y = (np.arange(5) + 1.0) / 5.0
    got = ember.jit(ember.vmap(ember.grad(f_inv)))(y)
    # d/dy arctanh(log y) = 1 / (y (1 - log(y)^2))
    np.testing.assert_allclose(got, 1 / (y * (1 - np.log(y) ** 2)), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="sin does not have registered inverse"):
        inverse(jnp.sin)(0.5)


def test_equations_without_a_lax_function_do_not_bind():
    closed = ember.make_jaxpr(
        lambda x: ember.lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x))(1.0)
    eqn = closed.jaxpr.eqns[-1]
    with pytest.raises(NotImplementedError, match="equation cannot be bound"):
        eqn.primitive.bind(1.0, **eqn.params)


def test_gathers_reversals_and_scalar_literals_bind():
    def f(x, i):
        return jnp.flip(x[i], 0) + x[:, 1][i[0]] * 2.0 + (x[i] > 3.0)

    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    i = np.array([3, 1, 0])
    closed = ember.make_jaxpr(f)(x, i)
    names = {e.primitive.name for e in closed.jaxpr.eqns}
    assert {"gather", "rev"} <= names
    np.testing.assert_allclose(eval_jaxpr(closed.jaxpr, closed.consts, x, i)[0], f(x, i))


def test_primitives_module():
    from ember.extend.core import primitives

    assert primitives.exp_p is lax.exp_p
    closed = ember.make_jaxpr(lambda x: x * 2.0 + 1.0)(jnp.ones(3))
    assert [e.primitive for e in closed.jaxpr.eqns] == [primitives.mul_p, primitives.add_p]


def test_literals_of_every_kind_print_and_bind():
    # (make_jaxpr of a complex constant failed in the MLIR bindings before;
    # infinities printed as MLIR's bits)
    cases = [
        (lambda x: x * (1 - 0.5j), jnp.ones(3, jnp.complex64), "mul a (1-0.5j):c64[]"),
        (lambda x: x * jnp.array([1 + 2j, 0.5j], jnp.complex64), jnp.ones(2, jnp.complex64),
         None),
        (lambda x: x + np.uint32(4000000000), jnp.ones(3, jnp.uint32), "4000000000:u32[]"),
        (lambda x: x * jnp.inf, jnp.ones(2), "mul a inf:f32[]"),
        (lambda x: jnp.where(x > 0, x, jnp.nan), jnp.ones(2), "nan:f32[]"),
        (lambda x: x - jnp.inf, jnp.ones(2, jnp.float16), "inf:f16[]"),
        (lambda x: x & True, jnp.ones(2, bool), None),
    ]
    for f, x, text in cases:
        closed = ember.make_jaxpr(f)(x)
        if text is not None:
            assert text in str(closed), str(closed)
        np.testing.assert_array_equal(eval_jaxpr(closed.jaxpr, closed.consts, x)[0], f(x))
