"""Differentiation with complex numbers, with JAX's conventions: for a
real-valued f of complex z, grad(f)(z) = df/dx - i df/dy; with
holomorphic=True, grad(f)(z) = f'(z); jvp pushes complex tangents; complex
parts transpose (real^T c = c, imag^T c = -ic), they are not adjoints.
Checked against finite differences in complex128."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax

EPS = 1e-6
Z = np.array([0.7 + 0.4j, -0.3 + 1.1j, 1.5 - 0.6j])


def fd_jvp(f, z, t):
    return (np.asarray(f(z + EPS * t)) - np.asarray(f(z - EPS * t))) / (2 * EPS)


def fd_real_grad(f, z):
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[i] = EPS
        dx = (float(f(z + e)) - float(f(z - e))) / (2 * EPS)
        dy = (float(f(z + 1j * e)) - float(f(z - 1j * e))) / (2 * EPS)
        g[i] = dx - 1j * dy
    return g


HOLOMORPHIC = {
    "exp": jnp.exp,
    "log": jnp.log,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "tanh": jnp.tanh,
    "sqrt": jnp.sqrt,
    "poly": lambda z: z * z * (2.0 - 1.0j) + z / (z + 3.0) - 1.0 / z,
    "matmul": lambda z: jnp.outer(z, z * 1j) @ z,
    "cumsum_prod": lambda z: jnp.cumsum(z) * jnp.prod(z),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_jvp_and_grad(name, x64):
    f = HOLOMORPHIC[name]
    t = np.array([0.3 - 0.2j, 1.0 + 0.5j, -0.4 + 0.9j])
    _, dy = jax.jvp(f, (Z,), (t,))
    np.testing.assert_allclose(np.asarray(dy), fd_jvp(f, Z, t), rtol=1e-6, atol=1e-8)
    # f'(z) elementwise: grad of one output component.
    if name in ("matmul", "cumsum_prod"):
        return
    for i in range(len(Z)):
        g = jax.grad(lambda z, i=i: f(z)[i], holomorphic=True)(Z)
        expected = np.zeros_like(Z)
        expected[i] = fd_jvp(f, Z, np.eye(len(Z))[i])[i]
        np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-6, atol=1e-8)


REAL_VALUED = {
    "abs2": lambda z: jnp.sum(jnp.abs(z) ** 2),
    "real_imag": lambda z: jnp.sum(jnp.real(z * jnp.conj(z) * 3.0 + jnp.sin(z)) * jnp.imag(z)),
    "angle": lambda z: jnp.sum(jnp.angle(z) * jnp.abs(z)),
    "norm_exp": lambda z: jnp.linalg.norm(jnp.exp(z)),
}


@pytest.mark.parametrize("name", sorted(REAL_VALUED))
def test_grad_of_real_valued_function_of_complex(name, x64):
    f = REAL_VALUED[name]
    g = jax.grad(f)(Z)
    np.testing.assert_allclose(np.asarray(g), fd_real_grad(f, Z), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(f))(Z)), np.asarray(g), rtol=1e-12)


def test_complex_intermediates_of_real_inputs(x64):
    # Real in, real out, complex in between: ordinary real gradients.
    def f(x):
        z = lax.complex(x[0], x[1])
        w = jnp.exp(1j * z) * z
        return jnp.real(w) + jnp.imag(w) ** 2

    x = np.array([0.3, -0.8])
    g = jax.grad(f)(x)
    fd = [(float(f(x + e)) - float(f(x - e))) / (2 * EPS) for e in np.eye(2) * EPS]
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6)


def test_vjp_is_the_transpose_not_the_adjoint(x64):
    # JAX: vjp of z -> c z with cotangent 1 is c (not conj(c)).
    c = 2.0 + 1.0j
    (ct,) = jax.vjp(lambda z: z * c, np.complex128(0.5 - 0.5j))[1](np.complex128(1.0))
    assert complex(ct) == c
    (ct,) = jax.vjp(jnp.real, np.complex128(0.5 - 0.5j))[1](np.float64(2.0))
    assert complex(ct) == 2.0
    (ct,) = jax.vjp(jnp.imag, np.complex128(0.5 - 0.5j))[1](np.float64(2.0))
    assert complex(ct) == -2.0j


def test_complex_grad_errors_match_jax():
    with pytest.raises(TypeError, match="holomorphic=True"):
        jax.grad(lambda z: z * 2.0)(np.complex64(1.0 + 1.0j))
    with pytest.raises(TypeError, match="requires inputs with complex dtype"):
        jax.grad(lambda x: x * 2.0, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="requires outputs with complex dtype"):
        jax.grad(lambda z: jnp.abs(z), holomorphic=True)(np.complex64(1.0 + 1.0j))


def test_vmap_of_complex_grad(x64):
    f = REAL_VALUED["abs2"]
    per = jax.vmap(jax.grad(lambda z: f(z[None])))(Z)
    np.testing.assert_allclose(np.asarray(per), 2 * np.conj(Z), rtol=1e-12)


def test_abs_of_complex_zero_has_zero_derivative_and_no_overflow():
    # JAX's abs of a complex number has derivative 0 at 0 (Ember gave NaN
    # through sqrt(re^2 + im^2)); hypot does not overflow its squares.
    ember = jax
    assert complex(ember.grad(lambda v: jnp.abs(v) ** 2)(0j)) == 0
    assert float(ember.grad(lambda v: jnp.abs(lax.complex(v, 0.0)))(0.0)) == 0.0
    assert complex(ember.grad(lambda v: jnp.abs(v) ** 2)(1 + 1j)) == pytest.approx(2 - 2j)
    assert float(jnp.abs(jnp.complex64(3e30 + 4e30j))) == pytest.approx(5e30, rel=1e-6)
    assert float(jnp.hypot(3e30, 4e30)) == pytest.approx(5e30, rel=1e-6)
