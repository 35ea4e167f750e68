"""Elementwise (ufunc-style) ember.numpy functions against NumPy."""

import numpy as np
import pytest

from ember import lax

from helpers import assert_close, jnp, rand

SHAPES = [(), (5,), (2, 3)]
FLOATS = [np.float32, np.float16]

UNARY_FLOAT = [
    "exp", "expm1", "log1p", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arctan",
    "arcsinh", "negative", "abs", "sign", "square", "floor", "ceil", "trunc", "rint",
    "exp2", "cbrt", "deg2rad", "rad2deg", "signbit", "isnan", "isinf", "isfinite",
    "reciprocal", "fabs", "positive", "i0",
]
UNARY_POSITIVE = ["log", "log2", "log10", "sqrt"]
UNARY_UNIT = ["arcsin", "arccos", "arctanh"]


@pytest.mark.parametrize("name", UNARY_FLOAT)
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_float32(name, shape):
    x = rand(shape, np.float32, low=-0.9, high=3) + 0.25
    assert_close(getattr(jnp, name)(x), getattr(np, name)(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", UNARY_POSITIVE)
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_positive_domain(name, dtype):
    x = np.abs(rand((2, 3), dtype)) + np.asarray(0.5, dtype)
    assert_close(getattr(jnp, name)(x), getattr(np, name)(x))


@pytest.mark.parametrize("name", UNARY_UNIT)
def test_unary_unit_domain(name):
    x = rand((7,), np.float32, low=-0.9, high=0.9)
    assert_close(getattr(jnp, name)(x), getattr(np, name)(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "abs", "negative", "floor"])
def test_unary_float16_and_bfloat16(name):
    x = rand((2, 3), np.float32)
    assert_close(getattr(jnp, name)(x.astype(np.float16)), getattr(np, name)(x.astype(np.float16)))
    out = getattr(jnp, name)(jnp.asarray(x, dtype=jnp.bfloat16))
    assert out.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(out, np.float32), getattr(np, name)(x), rtol=2e-2,
                               atol=2e-2)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "log1p"])
def test_unary_int_promotes_to_float32(name):
    x = np.arange(1, 5, dtype=np.int32)
    out = getattr(jnp, name)(x)
    assert out.dtype == np.float32
    assert_close(out, getattr(np, name)(x.astype(np.float32)))


@pytest.mark.parametrize("name", ["negative", "abs", "sign", "square", "positive"])
def test_unary_int_stays_int(name):
    x = rand((2, 3), np.int32)
    assert_close(getattr(jnp, name)(x), getattr(np, name)(x))


BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "power", "arctan2",
          "hypot", "logaddexp", "copysign", "fmax", "fmin", "heaviside", "nextafter",
          "true_divide", "divide"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3))])
def test_binary_float32_broadcasting(name, shapes):
    x = rand(shapes[0], np.float32, seed=1) + 4
    y = rand(shapes[1], np.float32, seed=2)
    if name == "power":
        y = np.abs(y)
    assert_close(getattr(jnp, name)(x, y), getattr(np, name)(x, y), rtol=1e-5, atol=1e-5)


INT_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "floor_divide",
              "remainder", "mod", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
              "left_shift", "right_shift", "power"]


@pytest.mark.parametrize("name", INT_BINARY)
def test_binary_int32(name):
    x = rand((2, 4), np.int32, seed=3, low=-9, high=9)
    y = rand((2, 4), np.int32, seed=4, low=1, high=3)
    if name not in ("left_shift", "right_shift", "power"):
        y = y * np.where(np.arange(4) % 2 == 0, 1, -1).astype(np.int32)
    assert_close(getattr(jnp, name)(x, y), getattr(np, name)(x, y))


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "divmod"])
def test_division_float_signs(name):
    x = np.array([-7.5, -3.0, 0.5, 3.0, 7.25], np.float32)
    y = np.array([2.0, -2.0, -1.5, 2.5, -3.0], np.float32)
    assert_close(getattr(jnp, name)(x, y), getattr(np, name)(x, y))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor",
                                  "bitwise_and", "bitwise_or", "bitwise_xor", "equal",
                                  "not_equal", "add", "multiply", "maximum"])
def test_binary_bool(name):
    x = rand((6,), np.bool_, seed=5)
    y = rand((6,), np.bool_, seed=6)
    assert_close(getattr(jnp, name)(x, y), getattr(np, name)(x, y))


def test_logical_not_and_invert():
    b = rand((5,), np.bool_)
    assert_close(jnp.logical_not(b), np.logical_not(b))
    assert_close(jnp.invert(b), np.invert(b))
    i = rand((5,), np.int32)
    assert_close(jnp.bitwise_not(i), np.bitwise_not(i))
    assert_close(jnp.logical_not(i), np.logical_not(i))


@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "less_equal", "greater",
                                  "greater_equal"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_comparisons(name, dtype):
    x = rand((3, 4), dtype, seed=7)
    y = rand((4,), dtype, seed=8)
    assert_close(getattr(jnp, name)(x, y), getattr(np, name)(x, y))


def test_mixed_dtype_promotion():
    i = np.arange(4, dtype=np.int32)
    f = np.linspace(0, 1, 4).astype(np.float32)
    h = f.astype(np.float16)
    assert jnp.add(i, f).dtype == np.float32
    assert jnp.add(i, h).dtype == np.float16
    assert jnp.add(h, f).dtype == np.float32
    assert jnp.add(np.int8(1) * np.ones(3, np.int8), np.ones(3, np.uint8)).dtype == np.int16
    assert jnp.add(jnp.ones(3, jnp.bfloat16), jnp.ones(3, jnp.float16)).dtype == np.float32
    assert jnp.add(jnp.ones(3, bool), jnp.ones(3, bool)).dtype == np.bool_


def test_python_scalars_are_weak():
    x16 = jnp.ones(3, jnp.float16)
    assert (x16 + 1.5).dtype == np.float16
    assert (2 * x16).dtype == np.float16
    i8 = jnp.ones(3, jnp.int8)
    assert (i8 + 3).dtype == np.int8
    assert (i8 + 3.0).dtype == np.float32
    assert jnp.multiply(jnp.ones(2, jnp.bfloat16), 2.0).dtype == jnp.bfloat16
    u8 = jnp.ones(3, jnp.uint8)
    assert (u8 * 2).dtype == np.uint8


def test_float64_and_int64_inputs_are_canonicalized():
    assert jnp.asarray(np.ones(3, np.float64)).dtype == np.float32
    assert jnp.asarray(np.ones(3, np.int64)).dtype == np.int32
    assert jnp.add(np.ones(3), np.ones(3)).dtype == np.float32
    assert jnp.asarray(1.0).dtype == np.float32
    assert jnp.asarray(1).dtype == np.int32
    assert jnp.asarray(True).dtype == np.bool_


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_where(dtype):
    c = rand((3, 4), np.bool_, seed=1)
    x = rand((3, 4), dtype, seed=2)
    y = rand((4,), dtype, seed=3)
    assert_close(jnp.where(c, x, y), np.where(c, x, y))


def test_where_scalar_branches_and_one_arg():
    c = np.array([True, False, True])
    assert_close(jnp.where(c, 1.0, 0.0), np.where(c, 1.0, 0.0).astype(np.float32))
    x = jnp.arange(3, dtype=jnp.float16)
    assert jnp.where(c, x, 0).dtype == np.float16
    assert_close(jnp.where(c, size=3, fill_value=-1)[0], np.array([0, 2, -1], np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_clip(dtype):
    x = rand((3, 4), dtype, seed=2)
    assert_close(jnp.clip(x, -1, 2), np.clip(x, -1, 2))
    assert_close(jnp.clip(x, max=1), np.clip(x, None, 1))
    assert_close(jnp.clip(x, min=0), np.clip(x, 0, None))
    lo = rand((4,), dtype, seed=3, low=-3, high=0)
    assert_close(jnp.clip(x, lo, 2), np.clip(x, lo, 2))


def test_nan_inf_predicates():
    x = np.array([0.0, np.nan, np.inf, -np.inf, -1.5], np.float32)
    for name in ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"]:
        assert_close(getattr(jnp, name)(x), getattr(np, name)(x))
    i = np.arange(3, dtype=np.int32)
    assert_close(jnp.isnan(i), np.isnan(i))
    assert_close(jnp.isfinite(i), np.isfinite(i))
    assert_close(jnp.nan_to_num(x), np.nan_to_num(x))
    assert_close(jnp.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0),
                 np.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0))


def test_rounding():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.2345, -3.75], np.float32)
    for name in ["round", "floor", "ceil", "trunc", "rint", "fix"]:
        assert_close(getattr(jnp, name)(x), getattr(np, name)(x))
    assert_close(jnp.round(x, 2), np.round(x, 2))
    assert_close(jnp.around(x, 1), np.around(x, 1))
    i = np.array([15, 25, -35], np.int32)
    assert_close(jnp.round(i), np.round(i))
    assert_close(jnp.floor(i), np.floor(i).astype(np.int32))
    assert_close(jnp.round(i, -1), np.round(i, -1))


def test_float16_rounding():
    x = np.array([-2.5, 0.5, 1.5, 2.25], np.float16)
    for name in ["round", "floor", "ceil"]:
        assert_close(getattr(jnp, name)(x), getattr(np, name)(x))


def test_misc_math():
    x = rand((6,), np.float32, seed=9)
    assert_close(jnp.sinc(x), np.sinc(x))
    assert_close(jnp.float_power(np.abs(x), 2), np.float_power(np.abs(x), 2).astype(np.float32))
    y = x[::-1].copy()
    assert_close(jnp.logaddexp2(x, y), np.logaddexp2(x, y))
    assert_close(jnp.real(x), np.real(x))
    assert_close(jnp.imag(x), np.imag(x))
    assert_close(jnp.conj(x), np.conj(x))
    assert_close(jnp.ldexp(x, np.arange(6, dtype=np.int32)), np.ldexp(x, np.arange(6)))


def test_isclose_allclose_array_equal():
    x = np.array([1.0, 2.0, np.nan], np.float32)
    y = np.array([1.0, 2.0 + 1e-7, np.nan], np.float32)
    assert_close(jnp.isclose(x, y), np.isclose(x, y))
    assert_close(jnp.isclose(x, y, equal_nan=True), np.isclose(x, y, equal_nan=True))
    assert bool(jnp.allclose(x[:2], y[:2]))
    assert bool(jnp.array_equal(np.arange(3), np.arange(3)))
    assert not bool(jnp.array_equal(np.arange(3), np.arange(4)))


def test_power_int_negative_base_and_float():
    x = np.array([-3, -2, 0, 2, 3], np.int32)
    assert_close(jnp.power(x, 3), np.power(x, 3))
    assert_close(jnp.power(2.0, np.arange(4, dtype=np.float32)),
                 np.power(2.0, np.arange(4, dtype=np.float32)))
    assert_close(jnp.power(np.float32(2.0), np.arange(4, dtype=np.int32)),
                 np.power(np.float32(2.0), np.arange(4)).astype(np.float32))


# Both Chebyshev series (|x| <= 8 and beyond) and the special points.
BESSEL_X = np.concatenate([np.linspace(-30, 30, 61), [0.0, -0.0, 1e-3, -7.99, 8.0, 8.01,
                                                       1e4, np.inf, -np.inf, np.nan]])


@pytest.mark.parametrize("name", ["bessel_i0e", "bessel_i1e"])
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-14), (np.float32, 5e-6),
                                        (np.float16, 2e-3)], ids=["f64", "f32", "f16"])
def test_bessel_ie_against_scipy(name, dtype, rtol, request):
    special = pytest.importorskip("scipy.special")
    if dtype == np.float64:
        request.getfixturevalue("x64")
    x = BESSEL_X.astype(dtype)
    got = getattr(lax, name)(x)
    assert got.dtype == dtype
    want = getattr(special, name[len("bessel_"):])(x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=0,
                               equal_nan=True)


def test_f64_log1p_expm1_erfc_keep_relative_precision(x64):
    # Were log(1 + x), exp(x) - 1 and 1 - erf(x) in f64 (8e-8 relative error
    # at 1e-10; erfc 0 from x = 6).
    import scipy.special as ss

    import ember

    x = np.array([1e-300, 1e-20, 1e-10, 1e-6, 1e-3, -0.5, 0.5, 3.0, 700.0, -745.0, 0.0, -0.0])
    for f, ref in ((jnp.log1p, np.log1p), (jnp.expm1, np.expm1)):
        got = np.asarray(ember.jit(f)(x))
        np.testing.assert_allclose(got, ref(x), rtol=4e-16, atol=0)
        assert (np.signbit(got) == np.signbit(ref(x))).all()
    with np.errstate(all="ignore"):
        special = np.array([-1.0, np.inf, -np.inf, np.nan, -2.0])
        np.testing.assert_array_equal(np.asarray(jnp.log1p(special)), np.log1p(special))
        np.testing.assert_array_equal(np.asarray(jnp.expm1(special)), np.expm1(special))
    z = np.concatenate([np.linspace(-6, 26.5, 400), [2.0, -2.0]])  # SciPy flushes subnormals
    np.testing.assert_allclose(np.asarray(ember.jit(lax.erfc)(z)), ss.erfc(z), rtol=2e-14, atol=0)
    np.testing.assert_array_equal(np.asarray(lax.erfc(np.array([np.inf, -np.inf]))), [0.0, 2.0])


@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, 8, -1, -2, -3])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.complex64])
def test_integer_pow(dtype, y):
    # `x ** n` is the op ember.integer_pow: the chain of products JAX's
    # lowering builds, each rounded to the dtype (so f16 agrees with NumPy's
    # repeated f16 products), ones for n = 0 (also at 0, NaN and inf).
    if y < 0 and np.issubdtype(dtype, np.integer):
        with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
            lax.integer_pow(np.ones(3, dtype), y)
        return
    if np.issubdtype(dtype, np.integer):
        x = np.array([0, 1, 2, 3, 7], dtype)
    else:
        x = np.array([0.5, -1.5, 2.0, 3.25, -0.75], dtype)
        if dtype == np.complex64:
            x = x + 1j * np.array([1.0, -0.5, 0.25, 0.0, 2.0], np.float32)
    ref = np.ones_like(x)
    for _ in range(abs(y)):
        ref = ref * x  # NumPy's products, rounded to the dtype as they go
    if y < 0:
        ref = np.ones_like(x) / ref
    for f in (lambda a: a ** y, lambda a: jnp.power(a, y), lambda a: lax.integer_pow(a, y)):
        got = np.asarray(f(jnp.asarray(x)))
        assert got.dtype == x.dtype
        rtol = 2e-3 if dtype == np.float16 else 1e-6
        np.testing.assert_allclose(got, ref, rtol=rtol)
    if y == 0 and dtype != np.float16 and np.issubdtype(dtype, np.floating):
        special = np.array([0.0, np.nan, np.inf, -np.inf], dtype)
        np.testing.assert_array_equal(np.asarray(lax.integer_pow(special, 0)), np.ones(4))


def test_integer_pow_program_and_errors():
    import ember

    # One op, with JAX's parameter name, in jaxprs and compiled programs.
    text = str(ember.make_jaxpr(lambda x: x ** 3)(1.0))
    assert "integer_pow[y=3] a" in text
    assert "ember.integer_pow" in ember.jit(lambda x: x ** -2).lower(1.0).as_text()
    with pytest.raises(TypeError, match="integer_pow does not accept dtype bool"):
        lax.integer_pow(jnp.array([True]), 2)
    with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
        jnp.power(jnp.arange(3), -1)
    # Booleans are promoted to ints first, as in JAX.
    got = jnp.power(jnp.array([True, False]), 2)
    assert got.dtype == np.int32 and got.tolist() == [1, 0]
    # JAX's derivative rule: 3 x^2, second derivative 6 x.
    assert float(ember.grad(lambda x: x ** 3)(2.0)) == 12.0
    assert float(ember.grad(ember.grad(lambda x: x ** 3))(2.0)) == 12.0
    assert float(ember.grad(lambda x: x ** 0)(2.0)) == 0.0
    np.testing.assert_allclose(float(ember.grad(lambda x: x ** -2)(2.0)), -0.25)


def test_square_is_jaxs_square():
    # JAX's `square` primitive (JAX 0.10.2's jaxprs and values): ints and
    # bools (as int32) too, bool rejected by lax.square.
    import ember

    assert str(ember.make_jaxpr(jnp.square)(1.0)) == (
        "{ lambda ; a:f32[]. let b:f32[] = square a in (b,) }")
    assert jnp.square(jnp.array([True, False])).tolist() == [1, 0]
    assert jnp.square(jnp.array([True])).dtype == np.int32
    assert int(jnp.square(jnp.uint8(200))) == 64
    with pytest.raises(TypeError, match="square does not accept dtype bool"):
        lax.square(jnp.array([True]))
    np.testing.assert_allclose(np.asarray(ember.grad(lambda x: jnp.sum(jnp.square(x)))(
        jnp.arange(3.0))), [0, 2, 4])
