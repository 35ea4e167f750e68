"""Complex arguments of the elementwise functions, as JAX supports them
(computed from real and imaginary parts where the op is real-only), JAX's
errors for the functions that have no complex meaning, and no input of any
dtype that makes Ember build invalid IR (a TypeError at the user's line
instead)."""

import contextlib

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.errors import EmberInternalError


@contextlib.contextmanager
def _x64():
    old = ember.config.jax_enable_x64
    ember.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        ember.config.update("jax_enable_x64", old)

R = np.random.default_rng(0)
# Points off the branch cuts (which lie on the axes).
Z = (R.uniform(-2, 2, 64) + 1j * R.uniform(0.1, 2, 64) * R.choice([-1, 1], 64))

UNARY = ["arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "cosh", "sinh",
         "tan", "expm1", "log1p", "sign", "exp2", "log2", "log10", "sqrt", "exp", "log",
         "sin", "cos", "tanh", "square", "reciprocal", "sinc", "rint"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_functions_of_complex_numbers(name):
    want = getattr(np, name)(Z)
    if name == "sign":  # NumPy 2: z / |z|, as JAX
        want = Z / np.abs(Z)
    got64 = np.asarray(getattr(jnp, name)(Z.astype(np.complex64)))
    assert got64.dtype == np.complex64
    np.testing.assert_allclose(got64, want, rtol=2e-5, atol=2e-6)
    with _x64():
        got128 = np.asarray(getattr(jnp, name)(Z))
    assert got128.dtype == np.complex128
    np.testing.assert_allclose(got128, want, rtol=1e-12, atol=1e-14)


def test_log1p_and_expm1_keep_accuracy_near_zero():
    z = np.array([1e-6 + 2e-6j, -3e-7 + 1e-7j], np.complex64)
    exact = z.astype(np.complex128)
    np.testing.assert_allclose(np.asarray(jnp.log1p(z)), np.log1p(exact), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.expm1(z)), np.expm1(exact), rtol=1e-6)
    assert np.asarray(jnp.log2(np.complex64(0))) == complex(-np.inf, 0)  # JAX 0.10.2


def test_binary_functions_and_order_of_complex_numbers():
    z = np.array([0.3 + 0.2j, -1.5 + 0.5j, 0j, 2 - 3j, 0.3 - 1j, 0.3 + 0.2j], np.complex64)
    w = np.array([1 - 1j, 0.5 + 2j, 1 + 0j, -2j, 0.3 + 0j, 0.3 + 0.2j], np.complex64)
    # Complex numbers order by real part, then imaginary part (NumPy and JAX).
    for name in ("maximum", "minimum", "greater", "less", "greater_equal", "less_equal"):
        np.testing.assert_array_equal(np.asarray(getattr(jnp, name)(z, w)),
                                      getattr(np, name)(z, w), err_msg=name)
    np.testing.assert_array_equal(np.asarray(jnp.sort(z)), np.sort(z))
    np.testing.assert_array_equal(np.asarray(jnp.argsort(z)), np.argsort(z, kind="stable"))
    assert complex(jnp.max(z)) == complex(np.max(z))
    assert complex(jnp.min(z)) == complex(np.min(z))
    np.testing.assert_array_equal(np.asarray(jnp.max(z.reshape(2, 3), axis=1)),
                                  np.max(z.reshape(2, 3), axis=1))
    np.testing.assert_allclose(np.asarray(jnp.logaddexp(z, w)),
                               np.log(np.exp(z.astype(np.complex128)) + np.exp(w)), rtol=1e-5)
    # Values recorded from JAX 0.10.2.
    np.testing.assert_allclose(np.asarray(jnp.arctan2(z[:1], w[:1])), [0.053 + 0.255j],
                               atol=1e-3)
    np.testing.assert_allclose(np.asarray(jnp.float_power(z[:1], w[:1])), [-0.024 + 0.649j],
                               atol=1e-3)
    np.testing.assert_array_equal(np.asarray(jnp.isfinite(np.array([1j, np.inf + 0j]))),
                                  [True, False])
    np.testing.assert_array_equal(np.asarray(jnp.isreal(w)), np.isreal(w))
    np.testing.assert_array_equal(np.asarray(jnp.iscomplex(w)), np.iscomplex(w))
    np.testing.assert_array_equal(np.asarray(jnp.round(np.array([1.6 - 2.5j]))), [2 - 2j])


@pytest.mark.parametrize("name", ["arcsin", "arctan", "arcsinh", "arccosh", "arctanh", "tan",
                                  "sinh", "cosh", "log1p", "expm1", "exp2"])
def test_complex_derivatives_are_holomorphic(name):
    # jvp against central differences along a complex direction.
    f = getattr(jnp, name)
    z, t, h = np.complex128(0.4 + 0.7j), np.complex128(0.6 - 0.8j), 1e-6
    with _x64():
        _, tangent = ember.jvp(f, (z,), (t,))
        fd = (complex(f(z + h * t)) - complex(f(z - h * t))) / (2 * h)
    assert abs(complex(tangent) - fd) < 1e-7


# JAX 0.10.2's errors for complex inputs.
REJECTED = {"cbrt": TypeError, "floor": TypeError, "ceil": TypeError, "trunc": TypeError,
            "fabs": TypeError, "signbit": ValueError, "argmax": TypeError,
            "argmin": TypeError, "heaviside": TypeError, "hypot": ValueError,
            "copysign": TypeError, "nextafter": TypeError, "floor_divide": TypeError,
            "remainder": TypeError, "fmod": TypeError, "bitwise_and": TypeError,
            "left_shift": TypeError, "clip": ValueError}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_functions_without_complex_meaning_raise_jax_errors(name):
    z = np.array([1 + 1j, 2 - 1j], np.complex64)
    f = getattr(jnp, name)
    args = {"argmax": (z,), "argmin": (z,), "clip": (z, 0, 1)}.get(
        name, (z,) if name in ("cbrt", "floor", "ceil", "trunc", "fabs", "signbit") else (z, z))
    with pytest.raises(REJECTED[name]) as info:
        f(*args)
    assert "test_complex_functions.py" in str(info.value)  # the user's line


DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.float16, jnp.bfloat16,
          np.float32, np.complex64]
SKIP = {"array", "asarray", "load", "save", "fromfunction", "vectorize", "frompyfunc",
        "piecewise", "apply_along_axis", "apply_over_axes", "einsum", "einsum_path",
        "from_dlpack", "frombuffer", "fromstring", "fromfile", "fromiter", "printoptions",
        "set_printoptions", "get_printoptions"}


@pytest.mark.filterwarnings("ignore")  # NumPy's warnings about nonsense arguments
def test_no_input_dtype_builds_invalid_ir():
    # Every public function of ember.numpy, on one and two arrays of every
    # dtype: a result or a Python error about the input, never Ember's
    # internal error (the op verifiers' failures are caught where the op is
    # built).
    names = sorted(n for n in dir(jnp) if not n.startswith("_") and n not in SKIP
                   and callable(getattr(jnp, n)) and not isinstance(getattr(jnp, n), type))
    bad = []
    for n in names:
        f = getattr(jnp, n)
        for dt in DTYPES:
            a = (np.array([1 + 1j, 0, 2 - 1j, -3j], np.complex64) if dt == np.complex64
                 else np.array([1, 0, 2, 3], np.float32).astype(dt))
            for args in ((a,), (a, a)):
                try:
                    f(*args)
                except EmberInternalError as e:
                    bad.append((n, np.dtype(dt).name, len(args), str(e).splitlines()[0][:120]))
                except Exception:  # noqa: BLE001 (any user-facing error is fine here)
                    pass
    assert not bad, bad


_INF, _NAN = np.inf, np.nan
_EDGE = [0j, complex(0, _INF), complex(_INF, 0), complex(-_INF, 0), complex(_INF, _INF),
         complex(-_INF, _INF), complex(1, _INF), complex(_INF, 1), complex(-_INF, 1),
         complex(1e5, 1e5), complex(-3e4, 2), complex(1e30, -1e30), complex(0.5, -0.25),
         complex(5000, 0), complex(0, -5000), complex(-7000, 1e-3)]


@pytest.mark.parametrize("name", ["sinh", "cosh", "arcsinh", "arccosh", "arctanh", "arcsin",
                                  "arccos", "arctan", "log1p"])
def test_infinities_and_large_magnitudes_match_numpy(name):
    # The standard's (C99 Annex G) values at infinities, which NumPy follows
    # for these functions, and the asymptotic forms for large |z|.
    x = np.array(_EDGE, np.complex64)
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x)
    out = np.asarray(getattr(jnp, name)(jnp.asarray(x)))
    if name == "sinh":  # sinh(-inf + inf j) is +-inf + NaN j: sign unspecified
        out, ref = out.copy(), ref.copy()
        k = _EDGE.index(complex(-_INF, _INF))
        out[k], ref[k] = abs(out[k].real) + 1j * out[k].imag, abs(ref[k].real) + 1j * ref[k].imag
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(out), part(ref), rtol=2e-6, atol=1e-30,
                                   err_msg=f"{name} at {x}")


def test_expm1_sinh_cosh_keep_exact_zero_parts():
    # f(x + 0j) has a zero imaginary part even where x is infinite (NumPy
    # gives NaN there: inf * 0); exp(-inf + yj) - 1 is -1 for every y.
    x = np.array([complex(_INF, 0), complex(-_INF, _INF), complex(-_INF, _NAN), complex(5000, 0),
                  complex(_NAN, 0)], np.complex64)
    out = np.asarray(jnp.expm1(jnp.asarray(x)))
    np.testing.assert_array_equal(out.real[:4], [_INF, -1, -1, _INF])
    np.testing.assert_array_equal(out.imag, [0, 0, 0, 0, 0])
    assert np.isnan(out.real[4])
    sh = np.asarray(jnp.sinh(jnp.asarray(np.array([complex(_INF, 0), complex(0, _INF)],
                                                   np.complex64))))
    assert sh[0] == complex(_INF, 0) and sh[1].real == 0 and np.isnan(sh[1].imag)
    ch = np.asarray(jnp.cosh(jnp.asarray(np.array([complex(-_INF, 0), complex(0, _NAN)],
                                                   np.complex64))))
    assert ch[0].real == _INF and ch[0].imag == 0 and np.signbit(ch[0].imag)
    assert np.isnan(ch[1].real) and ch[1].imag == 0
