"""`ember.experimental.jet` against values recorded from JAX 0.10.2's
`jax.experimental.jet` (its docstring example, pytrees, several
arguments, `factorial_scaled=False`) and against derivatives by hand."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.experimental.jet import jet


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


def test_cube_along_curves():
    # x(t) = 0.5 + t (+ t^2 / 2): the derivatives of x(t)^3 at 0.
    p, s = jet(lambda x: x ** 3, (0.5,), ((1.0, 0.0, 0.0),))
    _close(p, 0.125)
    _close(s, [0.75, 3.0, 6.0])
    p, s = jet(lambda x: x ** 3, (0.5,), ((1.0, 1.0, 0.0),))
    _close(s, [0.75, 3.75, 15.0])
    assert p.dtype == jnp.float32 and p.weak_type and s[0].weak_type  # as JAX's


def test_docstring_example_faa_di_bruno():
    h0, h1, h2 = 0.5 ** 3., 3. * 0.5 ** 2., 6. * 0.5
    f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
    _close(f0, np.sin(h0))
    _close(f1, np.cos(h0) * h1)
    _close(f2, -np.sin(h0) * h1 ** 2 + np.cos(h0) * h2)


def test_pytrees_and_several_arguments():
    p, s = jet(lambda x, y: jnp.sin(x) * y, (0.5, 2.0), ((1.0, 0.5), (0.3, 0.2)))
    _close(p, 0.9588511)
    _close(s, [1.8989928, 0.54116607])
    p, s = jet(lambda x: {"a": jnp.exp(x), "b": x * 2}, (jnp.arange(2.),),
               ((jnp.ones(2), jnp.ones(2)),))
    assert set(s) == {"a", "b"} and len(s["a"]) == 2
    _close(s["a"][0], [1.0, 2.7182817])
    _close(s["a"][1], [2.0000002, 5.436564])
    _close(s["b"], [[2.0, 2.0], [2.0, 2.0]])
    # A matrix and a vector along their own curves (recorded from JAX).
    W = np.arange(6., dtype=np.float32).reshape(2, 3) / 10
    x = np.array([0.3, -0.2, 0.5], np.float32)
    p, s = jet(lambda W, x: jnp.tanh(W @ x) * jnp.exp(-x[:2]), (W, x),
               ((W * 0.5, W * 0.1, W), (x, -x, x * 2)))
    _close(p, [0.05913938, 0.31059718])
    _close(s[0], [0.07058984, 0.50766295])
    _close(s[1], [-0.02573822, 0.0698511])
    _close(s[2], [0.14968744, 0.24812476], 1e-4)


def test_sine_fourth_order_and_unscaled_coefficients():
    p, s = jet(jnp.sin, (jnp.float32(1.),), ((jnp.float32(1.), 0., 0., 0.),))
    _close(s, [np.cos(1.), -np.sin(1.), -np.cos(1.), np.sin(1.)])
    # Taylor coefficients in and out: x(t) = 0.5 + t + t^2.
    p, s = jet(lambda x: x ** 3, (0.5,), ((1.0, 1.0, 0.0),), factorial_scaled=False)
    _close(s, [0.75, 2.25, 4.0])


def test_jet_under_jit_and_errors():
    f = ember.jit(lambda x: jet(jnp.tanh, (x,), ((jnp.ones_like(x), jnp.zeros_like(x)),)))
    p, (d1, d2) = f(jnp.array([0.0, 0.5]))
    t = np.tanh([0.0, 0.5])
    _close(d1, 1 - t ** 2)
    _close(d2, -2 * t * (1 - t ** 2))
    with pytest.raises(ValueError, match="inconsistent lengths"):
        jet(lambda x, y: x * y, (1.0, 2.0), ((1.0,), (1.0, 2.0)))
    with pytest.raises(ValueError, match="has shape"):
        jet(jnp.sin, (jnp.ones(2),), ((jnp.ones(3),),))
