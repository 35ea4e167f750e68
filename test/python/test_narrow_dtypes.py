"""JAX's narrow dtypes: 8- and 4-bit floats (ml_dtypes' float8_* and
float4_e2m1fn) and 2- and 4-bit integers (int2, int4, uint2, uint4).
Arrays of them convert, compute and transform as JAX 0.10.2 computes them
on the CPU (`test/data/numerics/narrow_floats.py` and `narrow_ints.py`,
recorded from JAX), and conversions from f32 round as ml_dtypes and XLA
do, bit for bit."""

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src import dtypes

from helpers import assert_prints_recorded

# Known differences: XLA converts float4_e2m1fn's -6 to int32 as
# -2147483648 (Ember: -6); f8E8M0FNU has no zero, so JAX's zero
# cotangents are NaN there and its gradient is all NaN (Ember's adds none).
DIFFERING = {"float4_e2m1fn astype", "float8_e8m0fnu grad narrow"}

NARROW = sorted(dtypes.NARROW_FLOATS, key=lambda d: d.name)


def test_narrow_floats_compute_as_jax():
    assert_prints_recorded("numerics", "narrow_floats", DIFFERING)


# XLA 0.10.2 cannot compile a product of 4-bit integers accumulating in
# int32 (a JaxRuntimeError; Ember computes it, checked below), and shifts
# unsigned 2- and 4-bit integers right arithmetically (9 >> 1 is 12 in
# uint4; Ember's is NumPy's 4).
INT_DIFFERING = {"int4 dot", "uint4 dot", "uint4 bits", "uint2 bits"}


def test_narrow_ints_compute_as_jax():
    assert_prints_recorded("numerics", "narrow_ints", INT_DIFFERING)
    x = np.array([[-8, 7, 3], [1, -1, 0]], np.int32)
    y = np.array([[2, -3, 7], [-8, 5, 1]], np.int32)
    got = jnp.matmul(x.astype(jnp.int4), y.T.astype(jnp.int4), preferred_element_type=jnp.int32)
    np.testing.assert_array_equal(np.asarray(got), x @ y.T)



def _f32_samples():
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2 ** 32, size=100_000, dtype=np.uint64).astype(np.uint32)
    scaled = (rng.standard_normal(100_000) * np.exp(rng.uniform(-30, 30, 100_000)))
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 2.0 ** -127,
                        2.0 ** -128, 1.4e-39, 3.4e38, 0.75, 0.25, -0.25, 448, 464, 480],
                       np.float32)
    return np.concatenate([bits.view(np.float32), scaled.astype(np.float32), special])


@pytest.mark.parametrize("dt", NARROW, ids=lambda d: d.name)
def test_conversions_round_as_ml_dtypes(dt):
    # Every f32 (random bit patterns, every magnitude, the special values)
    # rounds to nearest-even as ml_dtypes and XLA convert it: overflow to
    # infinity, NaN or (float4) the largest value; f8E8M0FNU's zero and
    # negatives to NaN, its underflow to the smallest. XLA (and so JAX)
    # gives float4_e2m1fn's sign-bit pattern for NaN, where ml_dtypes keeps
    # the sign.
    vals = _f32_samples()
    got = np.asarray(ember.jit(lambda v: v.astype(dt))(vals)).view(np.uint8)
    want = vals.astype(dt).view(np.uint8)
    if dt.name == "float4_e2m1fn":
        want = np.where(np.isnan(vals), 0x8, want)
    bad = np.nonzero(got != want)[0]
    assert not len(bad), [(vals[i], hex(got[i]), hex(want[i])) for i in bad[:5]]
    # Back to f32, exactly (every bit pattern).
    codes = np.arange(2 ** dtypes.itemsize_bits(dt), dtype=np.uint8).view(dt)
    back = np.asarray(ember.jit(lambda v: v.astype(np.float32))(codes))
    np.testing.assert_array_equal(back, codes.astype(np.float32))


def test_narrow_floats_promote_with_nothing_else():
    x = jnp.ones(3, jnp.float8_e4m3fn)
    with pytest.raises(dtypes.TypePromotionError,
                       match=r"Input dtypes \('float8_e4m3fn', 'float32'\) have no available "
                             r"implicit dtype promotion path. To avoid unintended promotion, "
                             r"8-bit floats do not support implicit promotion"):
        x + jnp.ones(3, jnp.float32)
    with pytest.raises(dtypes.TypePromotionError, match="4-bit floats"):
        jnp.ones(2, jnp.float4_e2m1fn) + jnp.ones(2, jnp.float8_e5m2)
    assert (x + 1.5).dtype == jnp.float8_e4m3fn  # (weak types join)
    assert jnp.promote_types(jnp.float8_e5m2, jnp.int8) == jnp.float8_e5m2
    assert repr(x * 3) == "Array([3, 3, 3], dtype=float8_e4m3fn)"
    assert jnp.issubdtype(jnp.float8_e4m3fn, jnp.floating)
    assert jnp.iinfo(jnp.int4).min == -8 and jnp.issubdtype(jnp.uint2, jnp.unsignedinteger)
    with pytest.raises(dtypes.TypePromotionError, match="1-bit, 2-bit and 4-bit integers"):
        jnp.ones(2, jnp.int4) + jnp.ones(2, jnp.int8)
    assert (jnp.ones(2, jnp.uint4) + 3).dtype == jnp.uint4
    with pytest.raises(TypeError, match="abs does not accept dtype int4. Support for "
                                        "narrow-width integers is platform-dependent"):
        jnp.abs(jnp.ones(2, jnp.int4))


def test_narrow_arrays_through_the_runtime():
    # Arguments, results, refs and callbacks carry them as bytes (a 4-bit
    # integer in the low bits of its byte, as ml_dtypes keeps it).
    q = jnp.asarray(np.array([-8, -1, 0, 7], np.int32)).astype(jnp.int4)
    np.testing.assert_array_equal(np.asarray(ember.jit(lambda v: v + 1)(q)).astype(np.int32),
                                  [-7, 0, 1, -8])
    qref = ember.new_ref(q)

    @ember.jit
    def bump(r):
        r[...] += jnp.int4(3)

    bump(qref)
    np.testing.assert_array_equal(np.asarray(qref[...]).astype(np.int32), [-5, 2, 3, -6])
    x = jnp.asarray(np.linspace(-3, 3, 12, dtype=np.float32)).astype(jnp.float8_e5m2)
    ref = ember.new_ref(x)

    @ember.jit
    def step(r, y):
        r[...] += y
        return r[...] * 2

    out = step(ref, x)
    want = (np.asarray(x).astype(np.float32) * 2).astype(ml_dtypes.float8_e5m2)
    np.testing.assert_array_equal(np.asarray(ref[...]).view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(
        np.asarray(out).view(np.uint8),
        (want.astype(np.float32) * 2).astype(ml_dtypes.float8_e5m2).view(np.uint8))
    seen = ember.pure_callback(lambda v: np.asarray(v) + np.asarray(v),
                               ember.ShapeDtypeStruct(x.shape, x.dtype), x)
    np.testing.assert_array_equal(np.asarray(seen).view(np.uint8), want.view(np.uint8))


def test_other_targets_say_they_do_not_compute_on_them():
    x = jnp.ones(3, jnp.float8_e4m3fn)
    lowered = ember.jit(lambda a: a * 2).trace(x).lower(lowering_platforms=("cuda",))
    assert "f8E4M3FN" in lowered.as_text("optimize")  # (the shared stages run)
    with pytest.raises(NotImplementedError, match="8- and 4-bit floats .* on the cuda target"):
        lowered.as_text("gpu")


_EXACT_OPS = {"add": (jnp.add, np.add), "sub": (jnp.subtract, np.subtract),
              "mul": (jnp.multiply, np.multiply), "div": (jnp.divide, np.divide),
              "max": (jnp.maximum, np.maximum), "min": (jnp.minimum, np.minimum),
              "neg": (jnp.negative, np.negative), "abs": (jnp.abs, np.abs),
              "floor": (jnp.floor, np.floor), "sqrt": (jnp.sqrt, np.sqrt),
              "square": (jnp.square, np.square)}


@pytest.mark.parametrize("dt", [d for d in NARROW if d.name != "float8_e8m0fnu"],
                         ids=lambda d: d.name)
def test_elementwise_ops_round_through_f16(dt):
    # Every correctly rounded f32 op on random values of the type (all bit
    # patterns alike, NaNs and infinities included) gives XLA's CPU result:
    # the f32 result rounded to f16, then to the type. (f8E8M0FNU rounds
    # once, from f32; its values below f32's normal range meet the flushing
    # of subnormals, as in XLA.)
    rng = np.random.default_rng(9)
    codes = np.arange(2 ** dtypes.itemsize_bits(dt), dtype=np.uint8).view(dt)
    a, b = rng.choice(codes, 3000), rng.choice(codes, 3000)
    for name, (ours, ref) in _EXACT_OPS.items():
        args = (a, b) if ref.nin == 2 else (a,)
        with np.errstate(all="ignore"):
            want = ref(*[x.astype(np.float32) for x in args]).astype(np.float16).astype(dt)
        got = np.asarray(ember.jit(ours)(*args))
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32),
                                      err_msg=f"{dt.name} {name}")


def test_constants_of_narrow_dtypes_in_compiled_code():
    # Arrays of them made inside `jit` are constants of the program (stored
    # as their bytes; an abort of ember-narrow-floats until this test).
    f8, f4, e8 = jnp.float8_e4m3fn, jnp.float4_e2m1fn, jnp.float8_e8m0fnu
    vals = np.array([1.5, 2.5, 3.0, -1.0], np.float32)
    for dt in (f8, f4, e8):
        got = ember.jit(lambda dt=dt: jnp.array(vals, dt) * 2)()
        want = (vals.astype(dt).astype(np.float32) * 2).astype(np.float16).astype(dt) \
            if dt is not e8 else (vals.astype(dt).astype(np.float32) * 2).astype(dt)
        np.testing.assert_array_equal(np.asarray(got).astype(np.float32),
                                      want.astype(np.float32))
    got = ember.jit(lambda: jnp.array([1, -2, 3], jnp.int4) * 3)()
    np.testing.assert_array_equal(np.asarray(got).astype(np.int32), [3, -6, -7])
    got = ember.jit(lambda: jnp.array([1, 14, 3], jnp.uint4).reshape(3, 1).T + 3)()
    np.testing.assert_array_equal(np.asarray(got).astype(np.int32), [[4, 1, 6]])


def test_bit_casts_of_narrow_ints():
    from ember import lax

    q = jnp.asarray(np.array([-8, -1, 0, 7], np.int32)).astype(jnp.int4)
    got = ember.jit(lambda v: lax.bitcast_convert_type(v, jnp.uint4))(q)
    np.testing.assert_array_equal(np.asarray(got).astype(np.int32), [8, 15, 0, 7])
    with pytest.raises(NotImplementedError, match="only to types of their own width"):
        lax.bitcast_convert_type(q.reshape(2, 2), jnp.int8)
