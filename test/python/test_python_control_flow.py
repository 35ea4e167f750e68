"""Python control flow on values under transformations outside `jit` (JAX's
autodiff tutorial: "differentiation through loops, branches, recursion and
closures"), and JAX's errors for the same code under `jit`."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.errors import (
    ConcretizationTypeError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
)


def piecewise(x):
    if x < 3:
        return 3. * x ** 2
    else:
        return -4 * x


def doubling(x):
    while x < 10:
        x = x * 2
    return x


def halving(x):
    if x < 1.0:
        return x
    return halving(x / 2) * 3


def ranged(x):
    s = 0.
    for i in range(int(x)):
        s = s + x * i
    return s


def test_branches_like_the_tutorial():
    assert float(ember.grad(piecewise)(2.)) == 12.0
    assert float(ember.grad(piecewise)(4.)) == -4.0
    v, g = ember.value_and_grad(piecewise)(2.)
    assert (float(v), float(g)) == (12.0, 12.0)


def test_while_on_a_value():
    # 3 -> 6 -> 12: x * 4, derivative 4
    assert float(ember.grad(doubling)(3.)) == 4.0
    assert float(ember.grad(doubling)(0.5)) == 32.0


def test_recursion():
    # 5 -> 2.5 -> 1.25 -> 0.625, times 27: derivative 27 / 8
    np.testing.assert_allclose(float(ember.grad(halving)(5.)), 27 / 8)


def test_int_in_range_item_and_float():
    assert float(ember.grad(ranged)(4.0)) == 6.0  # x * (0 + 1 + 2 + 3)
    assert float(ember.grad(lambda x: x * x.item())(3.0)) == 3.0
    assert float(ember.grad(lambda x: x * float(x))(3.0)) == 3.0


def test_nested_transformations():
    assert float(ember.grad(ember.grad(piecewise))(2.)) == 6.0
    assert float(ember.hessian(piecewise)(4.)) == 0.0
    assert float(ember.jacfwd(piecewise)(2.)) == 12.0
    assert float(ember.jacrev(piecewise)(4.)) == -4.0
    out, tan = ember.jvp(piecewise, (2.,), (1.,))
    assert (float(out), float(tan)) == (12.0, 12.0)
    y, pullback = ember.vjp(piecewise, 4.)
    assert float(pullback(1.0)[0]) == -4.0
    # vmap over one argument, Python control flow on the other (unbatched)
    r = ember.vmap(lambda x, s: x * (2. if s > 0 else 3.), in_axes=(0, None))(jnp.ones(3), -1.)
    np.testing.assert_array_equal(np.asarray(r), [3., 3., 3.])
    g = ember.grad(lambda x: ember.vmap(lambda v: v * piecewise(x))(jnp.ones(2)).sum())(2.)
    assert float(g) == 24.0


def test_custom_rules_branch_on_values():
    @ember.custom_jvp
    def f(x):
        return jnp.sin(x) if x > 0 else jnp.cos(x)
    f.defjvp(lambda p, t: (f(p[0]), 7.0 * t[0]))
    assert float(ember.grad(f)(1.0)) == 7.0

    @ember.custom_vjp
    def h(x):
        return x * 2 if x > 0 else x * 3
    h.defvjp(lambda x: (h(x), x), lambda r, g: (g * 5.0,))
    assert float(ember.grad(h)(1.0)) == 5.0


def test_each_path_is_compiled_once(compiles):
    count = compiles
    ember.grad(piecewise)(2.)
    n = count[0]
    ember.grad(piecewise)(1.)  # same branch
    assert count[0] == n
    ember.grad(piecewise)(5.)  # the other branch: a new program
    assert count[0] > n
    m = count[0]
    ember.grad(piecewise)(2.5)
    ember.grad(piecewise)(7.)
    assert count[0] == m


def test_same_code_under_jit_raises_at_the_users_line():
    with pytest.raises(TracerBoolConversionError, match=r"test_python_control_flow.py:\d+"):
        ember.jit(ember.grad(piecewise))(2.)
    with pytest.raises(ConcretizationTypeError, match="traced array with shape float32"):
        ember.jit(ember.grad(ranged))(4.)  # int(x): JAX's ConcretizationTypeError
    with pytest.raises(TracerIntegerConversionError, match=r"The __index__\(\) method"):
        ember.jit(lambda n: [1, 2, 3][n])(1)
    with pytest.raises(TracerBoolConversionError,
                       match=r"Attempted boolean conversion of traced array with shape"):
        ember.jit(lambda x: bool(x))(1.0)
    with pytest.raises(ConcretizationTypeError):
        ember.jit(ember.grad(lambda x: x * float(x)))(3.)
    # A batched value has no single value, as in JAX.
    with pytest.raises(TracerBoolConversionError):
        ember.vmap(piecewise)(jnp.ones(3))
    # Loop bodies are traced once for every iteration: abstract, as in JAX.
    from ember import lax
    with pytest.raises(TracerBoolConversionError):
        ember.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2 if c > 0 else c, x))(1.)


def test_disable_jit_runs_lax_control_flow_as_python():
    # JAX's semantics: under disable_jit, lax control flow is Python control
    # flow over concrete values (so a body may use Python `if` on them).
    from ember import lax

    seen = []

    def body(i, c):
        if int(i) % 2 == 0:  # concrete under disable_jit
            seen.append(int(i))
        return c + i

    with ember.disable_jit():
        assert int(lax.fori_loop(0, 5, body, 0)) == 10
        assert int(lax.while_loop(lambda c: c < 5, lambda c: c + 2, 0)) == 6
        assert int(lax.cond(np.float32(1.0) > 0, lambda: 1, lambda: 2)) == 1
        assert int(lax.switch(7, [lambda: 0, lambda: 1])) == 1
        c, ys = lax.scan(lambda c, x: (c + x, c), 0, np.arange(4))
        empty = lax.scan(lambda c, x: (c + x, c), 0, np.arange(0, dtype=np.int32))
    assert seen == [0, 2, 4]
    assert int(c) == 6 and list(np.asarray(ys)) == [0, 0, 1, 3]
    assert np.asarray(empty[1]).shape == (0,)


def test_transformations_work_under_disable_jit():
    # disable_jit turns off jit, not grad/vmap (JAX's semantics).
    from ember import lax

    with ember.disable_jit():
        assert float(ember.grad(lambda x: x * x)(3.0)) == 6.0
        g = ember.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.0))(2.0)
        assert float(g) == 12.0
        np.testing.assert_allclose(ember.vmap(jnp.sin)(jnp.ones(3)), np.sin(np.ones(3)))


def test_backward_functions_taken_outside_jit_work_under_it():
    """The autodiff cookbook: `vjp(f, 4.)` outside `jit`, then `jit(f_vjp)`.
    JAX's backward function holds residuals, so the branch taken at 4. is
    fixed; Ember replays `f` at the same concrete primals (also for
    `linearize`). A gradient of a constant taken inside `jit` still raises,
    as in JAX (omnistaging: the constant is staged)."""
    y, f_vjp = ember.vjp(piecewise, 4.)
    assert float(y) == -16.0
    (g,) = ember.jit(f_vjp)(1.)
    assert float(g) == -4.0 and g.weak_type
    (g,) = ember.jit(ember.vjp(piecewise, 2.)[1])(1.)
    assert float(g) == 12.0
    _, f_jvp = ember.linearize(piecewise, 4.)
    assert float(ember.jit(f_jvp)(1.)) == -4.0
    assert float(ember.vmap(f_vjp)(jnp.ones(3))[0][1]) == -4.0
    with pytest.raises(TracerBoolConversionError):
        ember.jit(lambda: ember.grad(piecewise)(2.))()


def test_gradients_keep_jax_weak_types():
    """As JAX's weak-type propagation (values recorded from JAX 0.10.2): the
    gradient of a weak primal is weak, unless nothing promoted it on the
    way to a weak output and the cotangent given is strong."""
    f = lambda x: x * 2.0  # noqa: E731
    assert ember.grad(f)(4.).weak_type
    assert not ember.grad(f)(jnp.float32(4.)).weak_type
    assert ember.vjp(f, 4.)[1](1.)[0].weak_type
    assert not ember.vjp(f, 4.)[1](jnp.float32(1.))[0].weak_type
    assert ember.jit(ember.grad(f))(4.).weak_type
    assert ember.grad(lambda z: z ** 2, holomorphic=True)(3. + 4j).weak_type
    assert ember.jacrev(f)(4.).weak_type and ember.jacfwd(f)(4.).weak_type
    assert ember.grad(lambda x: x * jnp.float32(2.0))(4.).weak_type
    assert ember.grad(lambda x: jnp.sum(x * jnp.ones(3)))(4.).weak_type
    gx, gy = ember.grad(lambda x, y: x * y, argnums=(0, 1))(4., jnp.float32(2.))
    assert gx.weak_type and not gy.weak_type
    # a complex primal reaching a real output: strong, as in JAX
    assert not ember.grad(lambda z: jnp.real(z) ** 2 + jnp.imag(z) ** 2)(3. + 4j).weak_type
