"""JAX 0.10.2's lax promotes no dtypes: a Python or NumPy scalar operand
takes its own default dtype, which must equal the other operands'
(`lax.add(f32_array, 2)` is a TypeError; jnp promotes). Outcomes (the result
dtype, or the TypeError's text) recorded from JAX 0.10.2 on the same calls."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

x = jnp.ones(3, jnp.float32)
i = jnp.ones(3, jnp.int32)
h = jnp.ones(3, jnp.float16)


def same(op, names, tip=None):
    """JAX's dtype-mismatch error (with its tip for the ops that give one)."""
    tip = f" (Tip: jnp.{tip} is a similar function that does automatic type promotion " \
          "on inputs)." if tip else ""
    return f"lax.{op} requires arguments to have the same dtypes, got {names}.{tip}"


def kind(op, dtype, kinds, pos=1):
    """JAX's error for a dtype an operand position does not accept."""
    return (f"{op} does not accept dtype {dtype} at position {pos}. Accepted dtypes at "
            f"position {pos} are subtypes of {kinds}.")


CASES = [
    (lambda: lax.add(x, 2), same("add", "float32, int32", "add")),
    (lambda: lax.add(x, 2.0), "float32"),
    (lambda: lax.add(i, 2), "int32"),
    (lambda: lax.add(i, 2.0), same("add", "int32, float32", "add")),
    (lambda: lax.mul(x, True), kind("mul", "bool", "integer, floating, complexfloating")),
    (lambda: lax.add(1.0, 2), same("add", "float32, int32", "add")),
    (lambda: lax.max(x, 0), same("max", "float32, int32", "maximum")),
    (lambda: lax.pow(x, 2), "float32"),
    (lambda: lax.pow(x, 2.0), "float32"),
    (lambda: lax.add(x, 1j), same("add", "float32, complex64", "add")),
    (lambda: lax.sub(2, x), same("sub", "int32, float32", "subtract")),
    (lambda: lax.atan2(x, 1), kind("atan2", "int32", "floating, complexfloating")),
    (lambda: lax.atan2(x, 1.0), "float32"),
    (lambda: lax.add(h, 2.0), same("add", "float16, float32", "add")),
    (lambda: lax.add(h, x), same("add", "float16, float32", "add")),
    (lambda: lax.mul(h, 2), same("mul", "float16, int32", "multiply")),
    (lambda: lax.add(x, np.float64(2)), "float32"),
    (lambda: lax.add(x, np.int32(2)), same("add", "float32, int32", "add")),
    (lambda: lax.shift_left(i, 1), "int32"),
    (lambda: lax.shift_left(i, 1.0), kind("shift_left", "float32", "integer")),
    (lambda: lax.rem(x, 2), same("rem", "float32, int32")),
    (lambda: lax.clamp(0, x, 1), same("clamp", "int32, float32, int32")),
    (lambda: lax.clamp(0.0, x, 1.0), "float32"),
    (lambda: lax.lt(x, 1), same("lt", "float32, int32")),
    (lambda: lax.eq(i, 1.0), same("eq", "int32, float32", "equal")),
    (lambda: lax.div(i, 2), "int32"),
    (lambda: lax.div(x, 2), same("div", "float32, int32", "divide")),
    (lambda: lax.nextafter(x, 1), kind("nextafter", "int32", "floating")),
    (lambda: lax.bitwise_and(i, True), same("and", "int32, bool")),
    (lambda: lax.add(jnp.ones(3, jnp.uint8), 1), same("add", "uint8, int32", "add")),
    (lambda: lax.add(jnp.ones(3, jnp.int8), 300), same("add", "int8, int32", "add")),
    (lambda: lax.add(jnp.ones(3, jnp.bfloat16), 1.0), same("add", "bfloat16, float32", "add")),
    (lambda: lax.integer_pow(x, 2), "float32"),
    (lambda: lax.complex(x, 0), kind("complex", "int32", "float32, float64")),
    (lambda: lax.complex(x, 0.0), "complex64"),
    (lambda: lax.select(x > 0, x, x * 0), "float32"),
    (lambda: lax.add(jnp.float32(1), 2), same("add", "float32, int32", "add")),
    (lambda: lax.rem(x, h), same("rem", "float32, float16")),
    (lambda: lax.ge(x, h), same("ge", "float32, float16")),
    (lambda: lax.ne(x, h), same("ne", "float32, float16", "not_equal")),
    (lambda: lax.bitwise_or(i, jnp.ones(3, jnp.int16)), same("or", "int32, int16")),
    (lambda: lax.shift_right_logical(i, jnp.ones(3, jnp.int16)),
     same("shift_right_logical", "int32, int16", "right_shift")),
    (lambda: lax.complex(h, h), kind("complex", "float16", "float32, float64", pos=0)),
    (lambda: lax.sub(jnp.ones(3, bool), True),
     kind("sub", "bool", "integer, floating, complexfloating", pos=0)),
    (lambda: lax.rem(jnp.ones(3, bool), True), kind("rem", "bool", "integer, floating", pos=0)),
    (lambda: lax.sin(2), "sin does not accept dtype int32. Accepted dtypes are subtypes of "
                         "floating, complexfloating."),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_lax_dtypes_as_jax(k):
    call, want = CASES[k]
    if " " in want:
        with pytest.raises(TypeError) as e:
            call()
        assert str(e.value).split("\n")[0] == want
    else:
        assert str(call().dtype) == want


def test_python_scalars_alone_are_weak_and_jnp_still_promotes():
    assert lax.add(2.0, 3.0).weak_type and lax.add(2.0, 3.0).dtype == np.float32
    assert lax.mul(2, 3).dtype == np.int32
    assert jnp.add(h, 2.0).dtype == np.float16 and jnp.add(x, 2).dtype == np.float32


def test_public_combiners_are_still_reductions():
    # lax.reduce and reduce_window recognize the public functions as their
    # monoids (not a fold of the elements in order).
    a = jnp.arange(12.0).reshape(3, 4)
    text = ember.jit(lambda a: lax.reduce(a, 0.0, lax.add, (1,))).lower(a).as_text("ember")
    assert "ember.reduce" in text and "ember.while" not in text
    np.testing.assert_array_equal(lax.reduce(a, -np.inf, lax.max, (0,)), [8, 9, 10, 11])
    w = lax.reduce_window(a, 0.0, lax.add, (1, 2), (1, 2), "VALID")
    np.testing.assert_array_equal(w, [[1, 5], [9, 13], [17, 21]])
