"""The dtype promotion lattice and canonicalization (x64 off)."""

import numpy as np
import pytest

from helpers import jnp

B, I8, I16, I32, U8, U16, U32 = (np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32,
                                                       np.uint8, np.uint16, np.uint32))
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BF16 = np.dtype(jnp.bfloat16)

PROMOTIONS = [
    (B, B, B), (B, I8, I8), (B, F16, F16), (I8, I16, I16), (I8, U8, I16), (U8, U16, U16),
    (I16, U16, I32), (I32, U32, I32), (U8, F16, F16), (I32, F16, F16), (I32, BF16, BF16),
    (F16, BF16, F32), (F16, F32, F32), (BF16, F32, F32), (U32, I8, I32), (I32, F32, F32),
]


@pytest.mark.parametrize("a,b,want", PROMOTIONS, ids=lambda d: str(d))
def test_promote_types(a, b, want):
    assert jnp.promote_types(a, b) == want
    assert jnp.promote_types(b, a) == want
    x = jnp.zeros(2, a)
    y = jnp.zeros(2, b)
    assert (x + y).dtype == want


@pytest.mark.parametrize("dtype", [B, I8, U8, I32, F16, BF16, F32])
def test_weak_python_scalars_do_not_promote(dtype):
    x = jnp.zeros(2, dtype)
    if dtype != B:
        assert (x + 1).dtype == dtype
        assert (1 * x).dtype == dtype
    else:
        assert (x + 1).dtype == I32
    want_f = dtype if dtype in (F16, BF16, F32) else F32
    assert (x + 1.0).dtype == want_f
    assert (x * True).dtype == dtype


def test_result_type():
    assert jnp.result_type(np.int8, np.uint8) == I16
    assert jnp.result_type(jnp.ones(2, jnp.float16), 2.0) == F16
    assert jnp.result_type(1, 2.0) == F32
    assert jnp.result_type(np.float64) == F32
    assert jnp.result_type(np.int64) == I32


def test_canonicalize_on_creation():
    assert jnp.array(np.arange(3, dtype=np.int64)).dtype == I32
    assert jnp.array(np.arange(3, dtype=np.uint64)).dtype == U32
    assert jnp.array([1.0, 2.0], dtype=np.float64).dtype == F32
    assert jnp.zeros(3, dtype=jnp.float64).dtype == F32
    assert jnp.arange(3, dtype=jnp.int64).dtype == I32
    assert jnp.ones(2).astype(np.float64).dtype == F32


def test_weak_type_after_ops():
    w = jnp.asarray(2.0)
    assert (w + jnp.ones(2, jnp.float16)).dtype == F16
    s = jnp.float32(2.0)
    assert (s + jnp.ones(2, jnp.float16)).dtype == F32


def test_dtype_helpers():
    assert jnp.issubdtype(jnp.float32, jnp.floating)
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating)
    assert not jnp.issubdtype(jnp.int32, jnp.floating)
    assert jnp.finfo(jnp.bfloat16).bits == 16
    assert jnp.iinfo(jnp.int8).max == 127
    assert jnp.dtype("float32") == F32
    assert jnp.float32(1.5).dtype == F32


def test_astype_conversions():
    x = jnp.asarray(np.array([-1.7, 0.5, 2.9], np.float32))
    np.testing.assert_array_equal(np.asarray(x.astype(jnp.int32)), np.array([-1, 0, 2], np.int32))
    np.testing.assert_array_equal(np.asarray(x.astype(bool)), np.array([True, True, True]))
    np.testing.assert_array_equal(np.asarray(jnp.asarray([0, 2]).astype(bool)), [False, True])
    np.testing.assert_array_equal(np.asarray(jnp.asarray([True, False]).astype(jnp.float32)),
                                  [1.0, 0.0])
    y = jnp.asarray(np.array([1.0, 2.5], np.float32)).astype(jnp.bfloat16)
    assert y.dtype == BF16
    np.testing.assert_array_equal(np.asarray(y.astype(jnp.float32)), [1.0, 2.5])
    np.testing.assert_array_equal(np.asarray(jnp.asarray([300]).astype(jnp.uint8)),
                                  np.array([300]).astype(np.uint8))


def test_scalar_types_construct_arrays_and_stand_for_dtypes():
    # JAX's scalar types: callable on traced values, usable as dtypes, equal
    # to NumPy's types.
    import ember as jax

    assert jax.jit(lambda x: jnp.float32(x) * 2)(3).dtype == np.float32
    assert float(jax.jit(lambda x: jnp.float32(x) * 2)(3)) == 6.0
    assert int(jax.jit(lambda x: jnp.int32(x))(2.7)) == 2
    assert jax.grad(lambda x: jnp.float32(x) ** 2)(3.0) == 6.0
    assert jnp.float32 == np.float32 and np.dtype(jnp.float32) == np.float32
    assert jnp.zeros(2, jnp.bfloat16).dtype == jnp.bfloat16
    assert jnp.issubdtype(jnp.float32, jnp.floating)
    assert not jnp.issubdtype(jnp.int32, jnp.floating)
    assert isinstance(np.float32(1), jnp.float32)
    assert {np.float32: "f"}[jnp.float32] == "f"
    assert jnp.finfo(jnp.float16).bits == 16
    assert jnp.ones(3).astype(jnp.uint8).dtype == np.uint8


def test_lax_broadcasts_rank0_operands_like_jax():
    from ember import lax

    np.testing.assert_array_equal(np.asarray(lax.shift_right_logical(
        jnp.arange(4), jnp.int32(1))), [0, 0, 1, 1])
    np.testing.assert_array_equal(np.asarray(lax.add(jnp.ones(3), jnp.ones(()))), [2.0] * 3)
    with pytest.raises(TypeError, match="same shape"):
        lax.add(jnp.ones(3), jnp.ones(2))


def test_explicit_64_bit_dtypes_warn_as_jax(recwarn):
    # JAX's UserWarning (its text, "requested in <function>" where JAX names
    # it), attributed to the user's line; Python's scalar types, and x64
    # mode, give no warning.
    import warnings

    import ember
    from ember import random

    def text(dtype, where, to):
        return (f"Explicitly requested dtype {dtype}{where} is not available, and will be "
                f"truncated to dtype {to}. To enable more dtypes, set the jax_enable_x64 "
                "configuration option or the JAX_ENABLE_X64 shell environment variable. See "
                "https://github.com/jax-ml/jax#current-gotchas for more.")

    cases = [(lambda: jnp.zeros(3, dtype=jnp.int64), "int64", " requested in zeros", "int32"),
             (lambda: jnp.ones(2).astype("float64"), "float64", " requested in astype",
              "float32"),
             (lambda: jnp.asarray(1.0, dtype=jnp.complex128), "complex128",
              " requested in asarray", "complex64"),
             (lambda: jnp.sum(jnp.ones(2), dtype=jnp.float64), "float64", " requested in sum",
              "float32"),
             (lambda: random.uniform(random.key(0), (3,), dtype=jnp.float64), "float64", "",
              "float32")]
    for call, dtype, where, to in cases:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            out = call()
        assert out.dtype == np.dtype(to)
        assert [str(w.message) for w in got] == [text(dtype, where, to)]
        assert got[0].filename == __file__ and got[0].category is UserWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jnp.zeros(3, dtype=int), jnp.array([1, 2], dtype=float), random.normal(random.key(0))
        random.randint(random.key(0), (2,), 0, 3), jnp.arange(3, dtype=jnp.float32)
        ember.config.update("jax_enable_x64", True)
        try:
            assert jnp.zeros(2, dtype=jnp.float64).dtype == np.float64
        finally:
            ember.config.update("jax_enable_x64", False)


def test_result_type_of_python_scalar_types_is_weak():
    # JAX: the types int/float/complex promote as their values do (weakly).
    x = np.zeros(2, np.uint8)
    assert jnp.result_type(int, x) == np.uint8
    assert jnp.result_type(float, np.float16(1)) == np.float16
    assert jnp.result_type(complex, np.float32(1)) == np.complex64
    assert jnp.result_type(int) == np.int32 and jnp.result_type(int, float) == np.float32


def test_issubdtype_of_ml_dtypes_types():
    # Values recorded from JAX 0.10.2.
    assert jnp.issubdtype(jnp.float8_e4m3fn, jnp.floating)
    assert jnp.issubdtype(jnp.int4, jnp.integer) and jnp.issubdtype(jnp.int4, jnp.signedinteger)
    assert not jnp.issubdtype(jnp.uint4, jnp.signedinteger)
    assert jnp.issubdtype(jnp.float8_e5m2, jnp.float8_e5m2)
    assert not jnp.issubdtype(jnp.float8_e5m2, jnp.integer)


def test_python_ints_in_explicit_dtypes():
    # JAX 0.10.2: asarray checks the value against the dtype (NumPy's
    # OverflowError), lax.full wraps it, and a uint32 holds 2**31.
    from ember import lax

    with pytest.raises(OverflowError, match="out of bounds for int8"):
        jnp.asarray(300, jnp.int8)
    with pytest.raises(OverflowError, match="out of bounds for uint32"):
        jnp.array(-1, dtype=jnp.uint32)
    assert np.asarray(lax.full((2,), 2**32, jnp.uint32)).tolist() == [0, 0]
    x = jnp.zeros(2, jnp.uint32)
    assert np.asarray(lax.full_like(x, 2**31 + 5)).tolist() == [2**31 + 5] * 2
