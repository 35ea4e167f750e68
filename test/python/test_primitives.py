"""Users' primitives (`ember.extend.core.Primitive` and the rule tables of
`ember.interpreters`), as JAX's "How JAX primitives work" tutorial builds
them: each rule is used where JAX uses it, and a missing one is JAX's
NotImplementedError there."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.lib.mlir.dialects import hlo
from ember.core import ShapedArray, Tracer
from ember.extend.core import Primitive
from ember.interpreters import ad, batching, mlir


def _multiply_add(with_rules=True, transpose=True):
    """The tutorial's multiply_add: x * y + z."""
    p = Primitive("multiply_add")
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    if not with_rules:
        return p
    p.def_abstract_eval(lambda x, y, z: ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result],
                           platform="cpu")

    def jvp(primals, tangents):
        x, y, z = primals
        xt, yt, zt = (lax.full_like(x, 0) if type(t) is ad.Zero else t for t in tangents)
        return p.bind(x, y, z), p.bind(xt, y, p.bind(x, yt, zt))
    ad.primitive_jvps[p] = jvp

    if transpose:
        def transpose_rule(ct, x, y, z):
            if not ad.is_undefined_primal(x):
                assert ad.is_undefined_primal(y)
                return None, p.bind(x, ct, lax.full_like(x, 0)), ct
            return p.bind(ct, y, lax.full_like(y, 0)), None, ct
        ad.primitive_transposes[p] = transpose_rule

    def batch(args, dims):
        assert dims[0] == dims[1] == dims[2]
        return p.bind(*args), dims[0]
    batching.primitive_batchers[p] = batch
    return p


def _softplus():
    """log(1 + e^x) through `ad.defjvp` and `batching.defvectorized`."""
    p = Primitive("softplus")
    p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, mlir.lower_fun(lambda x: jnp.logaddexp(x, 0.0),
                                             multiple_results=False))
    ad.defjvp(p, lambda g, x: g * lax.logistic(x))
    batching.defvectorized(p)
    return p


def test_eager_application_runs_the_impl():
    p = _multiply_add()
    assert p.bind(2.0, 2.0, 10.0) == 14.0
    assert repr(p) == "multiply_add"


def test_missing_rules_raise_jax_errors_where_needed():
    p = Primitive("multiply_add")
    with pytest.raises(NotImplementedError, match="Evaluation rule for 'multiply_add' not "
                       "implemented"):
        p.bind(2.0, 2.0, 10.0)
    p.def_impl(lambda x, y, z: x * y + z)
    with pytest.raises(NotImplementedError, match="Abstract evaluation for 'multiply_add'"):
        ember.jit(lambda a: p.bind(a, a, a))(1.0)
    p.def_abstract_eval(lambda x, y, z: x)
    with pytest.raises(NotImplementedError, match="MLIR translation rule for primitive "
                       "'multiply_add' not found for platform cpu"):
        ember.jit(lambda a: p.bind(a, a, a))(1.0)
    mlir.register_lowering(p, mlir.lower_fun(lambda x, y, z: x * y + z,
                                             multiple_results=False))
    assert ember.jit(lambda a: p.bind(a, a, a))(3.0) == 12.0
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'multiply_add'"):
        ember.jvp(lambda a: p.bind(a, a, a), (1.0,), (1.0,))
    with pytest.raises(NotImplementedError, match="Batching rule for 'multiply_add'"):
        ember.vmap(lambda a: p.bind(a, a, a))(jnp.ones(3))


def test_jit_lowers_through_the_registered_rule():
    p = _multiply_add()
    f = ember.jit(lambda a, b: p.bind(a, a, b))
    assert f(2.0, 10.0) == 14.0
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(f(x, x + 1), x * x + x + 1, rtol=1e-6)
    # static arguments too (the tutorial's static_argnums=1)
    assert ember.jit(lambda a, b: p.bind(a, a, b), static_argnums=1)(2.0, 10.0) == 14.0


def test_forward_mode_uses_the_jvp_rule():
    p = _multiply_add()

    def square_add(a, b):
        return p.bind(a, a, b)
    assert ember.jvp(square_add, (2.0, 10.0), (1.0, 1.0)) == (14.0, 5.0)
    out = ember.jit(lambda v, t: ember.jvp(square_add, v, t))((2.0, 10.0), (1.0, 1.0))
    assert out == (14.0, 5.0)


def test_reverse_mode_transposes_the_jvp_rule_with_the_transpose_rule():
    p = _multiply_add()

    def square_add(a, b):
        return p.bind(a, a, b)
    assert ember.grad(square_add)(2.0, 10.0) == 4.0
    assert ember.jit(ember.grad(square_add))(2.0, 10.0) == 4.0
    x = np.array([0.5, -1.5, 2.0], np.float32)
    g = ember.grad(lambda a: jnp.sum(jnp.sin(p.bind(a, a, a))))(x)
    np.testing.assert_allclose(g, np.cos(x * x + x) * (2 * x + 1), rtol=1e-5)
    ga, gb = ember.grad(square_add, argnums=(0, 1))(3.0, 1.0)
    assert (ga, gb) == (6.0, 1.0)


def test_reverse_mode_without_a_transpose_rule_is_jax_error():
    p = _multiply_add(transpose=False)
    assert ember.jvp(lambda a: p.bind(a, a, a), (2.0,), (1.0,)) == (6.0, 5.0)
    with pytest.raises(NotImplementedError, match=r"Transpose rule \(for reverse-mode "
                       "differentiation\\) for 'multiply_add' not implemented"):
        ember.grad(lambda a: p.bind(a, a, 1.0))(2.0)


def test_transpose_rule_is_what_reverse_mode_runs():
    # A linear primitive whose transpose rule is deliberately not its
    # lowering's: reverse mode must give the rule's numbers, as JAX's.
    p = Primitive("double")
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(p, mlir.lower_fun(lambda x: 2 * x, multiple_results=False))
    ad.deflinear2(p, lambda ct, x: (3 * ct,))
    assert ember.jvp(p.bind, (1.0,), (1.0,)) == (2.0, 2.0)
    assert ember.grad(lambda x: p.bind(x) * 5.0)(1.0) == 15.0
    assert ember.linear_transpose(p.bind, 1.0)(1.0) == (3.0,)


def test_vmap_uses_the_batching_rule():
    p = _multiply_add()
    a, b = np.array([2.0, 3.0], np.float32), np.array([10.0, 20.0], np.float32)
    np.testing.assert_allclose(ember.vmap(lambda x, y: p.bind(x, x, y))(a, b), [14.0, 29.0])
    np.testing.assert_allclose(ember.jit(ember.vmap(lambda x, y: p.bind(x, x, y)))(a, b),
                               [14.0, 29.0])
    # applied to values the lanes share, it needs no rule
    q = _multiply_add()
    del batching.primitive_batchers[q]
    np.testing.assert_allclose(ember.vmap(lambda x: x + q.bind(2.0, 2.0, 1.0))(a), a + 5)


def test_defjvp_and_defvectorized_primitive_against_finite_differences(x64):
    p = _softplus()
    x = np.array([-2.0, 0.25, 3.0], np.float64)
    f = ember.jit(lambda v: jnp.sum(p.bind(v) ** 2))
    g = ember.grad(f)(x)
    eps = 1e-6
    fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    np.testing.assert_allclose(ember.vmap(p.bind)(x), np.logaddexp(x, 0), rtol=1e-12)
    np.testing.assert_allclose(ember.vmap(ember.grad(lambda v: p.bind(v)))(x),
                               1 / (1 + np.exp(-x)), rtol=1e-12)


def test_multiple_results():
    p = Primitive("sincos")
    p.multiple_results = True
    p.def_impl(lambda x: [np.sin(x), np.cos(x)])
    p.def_abstract_eval(lambda x: [x, x])
    mlir.register_lowering(p, mlir.lower_fun(lambda x: [jnp.sin(x), jnp.cos(x)]))

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        s, c = p.bind(x)
        return [s, c], [c * t, -s * t]
    ad.primitive_jvps[p] = jvp
    x = 0.7
    s, c = ember.jit(p.bind)(x)
    np.testing.assert_allclose([s, c], [np.sin(x), np.cos(x)], rtol=1e-6)
    g = ember.grad(lambda v: p.bind(v)[0] + 2 * p.bind(v)[1])(x)
    np.testing.assert_allclose(g, np.cos(x) - 2 * np.sin(x), rtol=1e-6)


def test_bad_rules_give_clear_errors():
    p = Primitive("bad")
    p.def_abstract_eval(lambda x: ShapedArray((7,), x.dtype))
    mlir.register_lowering(p, mlir.lower_fun(lambda x: x, multiple_results=False))
    with pytest.raises(TypeError, match=r"the lowering rule of 'bad' gives values of types "
                       r"\['float32\[3\]'\] where its abstract evaluation says"):
        ember.jit(p.bind)(jnp.ones(3))
    q = Primitive("bad_aval")
    q.def_abstract_eval(lambda x: 3)
    with pytest.raises(TypeError, match="returned 3, not a ShapedArray"):
        ember.jit(q.bind)(1.0)
    with pytest.raises(AttributeError, match="write the lowering rule with mlir.lower_fun"):
        hlo.DotGeneralOp  # noqa: B018


def test_hlo_builders_in_both_spellings():
    p = Primitive("poly")
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(p, lambda ctx, x: [hlo.add(hlo.multiply(x, x),
                                                      hlo.ExpOp(hlo.negate(x)))])
    x = np.array([0.0, 1.0, -2.0], np.float32)
    np.testing.assert_allclose(ember.jit(p.bind)(x), x * x + np.exp(-x), rtol=1e-6)


def test_tracer_is_jax_core_tracer():
    seen = []
    ember.jit(lambda x: seen.append(isinstance(x, Tracer)) or x)(1.0)
    assert seen == [True]
    assert not isinstance(jnp.ones(2), Tracer)
    assert str(ShapedArray((2,), np.float32, weak_type=True)) == "~float32[2]"


def test_no_rule_needed_where_no_tangent_reaches():
    # As in JAX: a primitive without a JVP rule applied to values that do
    # not depend on the differentiated arguments is no error.
    p = Primitive("scale")
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(p, mlir.lower_fun(lambda x: 3 * x, multiple_results=False))
    assert ember.grad(lambda x, y: x * p.bind(y))(2.0, 5.0) == 15.0
    assert ember.grad(lambda x: x * p.bind(jnp.float32(5.0)))(2.0) == 15.0
    assert ember.jvp(lambda x: x * p.bind(5.0), (2.0,), (1.0,)) == (30.0, 15.0)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'scale'"):
        ember.grad(lambda x, y: p.bind(x) * y)(2.0, 5.0)


def test_higher_order_and_control_flow():
    p = _softplus()
    s = 1 / (1 + np.exp(-1.0))
    # forward over reverse (the JVP rule at both levels)
    np.testing.assert_allclose(ember.hessian(p.bind)(1.0), s * (1 - s), rtol=1e-6)
    np.testing.assert_allclose(ember.grad(ember.grad(p.bind))(1.0), s * (1 - s), rtol=1e-6)
    x = np.linspace(-2, 2, 5).astype(np.float32)
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(
        ember.grad(lambda v: lax.scan(lambda c, xi: (c + p.bind(xi), None), 0.0, v)[0])(x),
        sig, rtol=1e-6)
    np.testing.assert_allclose(
        ember.grad(lambda v: ember.checkpoint(lambda u: p.bind(u) ** 2)(v).sum())(x),
        2 * np.logaddexp(x, 0) * sig, rtol=1e-5)
    np.testing.assert_allclose(ember.jacfwd(p.bind)(x).diagonal(), sig, rtol=1e-6)
    multiply_add = _multiply_add()
    assert ember.hessian(lambda a: multiply_add.bind(a, a, a))(2.0) == 2.0
