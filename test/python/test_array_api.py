"""The Array API standard's forms of `ember.numpy` (issue #15 item 4): what the
data-apis suite (tools/array_api_suite.sh) found missing or wrong, each
checked here against NumPy or the standard's text."""

import inspect

import numpy as np
import pytest

import ember
import ember.numpy as jnp

CREATION = ["arange", "asarray", "empty", "empty_like", "eye", "full", "full_like",
            "linspace", "ones", "ones_like", "zeros", "zeros_like"]


@pytest.mark.parametrize("name", CREATION)
def test_creation_functions_take_device(name):
    assert "device" in inspect.signature(getattr(jnp, name)).parameters
    dev = jnp.__array_namespace_info__().default_device()
    args = {"arange": (3,), "asarray": ([1, 2],), "empty": ((2,),), "eye": (2,),
            "full": ((2,), 7), "linspace": (0, 1, 3), "ones": ((2,),), "zeros": ((2,),)}
    like = {"empty_like": (jnp.ones(2),), "full_like": (jnp.ones(2), 3),
            "ones_like": (jnp.ones(2),), "zeros_like": (jnp.ones(2),)}
    a = args.get(name) or like[name]
    out = getattr(jnp, name)(*a, device=dev)
    ref = getattr(jnp, name)(*a)
    np.testing.assert_array_equal(np.asarray(out) if name != "empty_like" else 0,
                                  np.asarray(ref) if name != "empty_like" else 0)
    assert out.device == dev
    with pytest.raises(RuntimeError, match="Unknown backend"):  # JAX's error
        getattr(jnp, name)(*a, device="no-such-device")


def test_linspace_retstep_with_device():
    out, step = jnp.linspace(0.0, 1.0, 5, retstep=True, device=ember.devices()[0])
    np.testing.assert_allclose(np.asarray(out), np.linspace(0.0, 1.0, 5))
    assert float(step) == 0.25


def test_to_device_and_signatures():
    x = jnp.arange(4.0)
    y = x.to_device(ember.devices()[0])
    np.testing.assert_array_equal(np.asarray(y), np.arange(4.0))
    assert list(inspect.signature(jnp.isdtype).parameters) == ["dtype", "kind"]
    assert "copy" in inspect.signature(jnp.reshape).parameters
    assert {"stream", "max_version", "dl_device", "copy"} <= set(
        inspect.signature(type(x).__dlpack__).parameters)


def test_dlpack_export_to_old_consumers():
    # NumPy's legacy DLPack path cannot mark the buffer read-only; such a
    # consumer gets a copy, and the array itself stays unchanged.
    x = jnp.arange(3.0)
    capsule_user = np.from_dlpack(x)
    np.testing.assert_array_equal(capsule_user, [0.0, 1.0, 2.0])
    assert x.__dlpack__() is not None
    np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("a,b", [((1,), (0,)), ((0,), (1,)), ((2, 1), (1, 0)), ((0, 1), (1,))])
def test_size_one_broadcasts_against_size_zero(a, b):
    assert jnp.broadcast_shapes(a, b) == np.broadcast_shapes(a, b)
    out = jnp.add(jnp.ones(a), jnp.ones(b))
    assert out.shape == np.broadcast_shapes(a, b)
    with pytest.raises(ValueError):
        jnp.broadcast_shapes((2,), (3,))


def test_unstack_and_take_of_empty_arrays():
    x = jnp.zeros((0, 1))
    assert jnp.take(x, 0, axis=1).shape == (0,)
    parts = jnp.unstack(x, axis=1)
    assert len(parts) == 1 and parts[0].shape == (0,)
    assert float(jnp.std(jnp.zeros((0,)))) != float(jnp.std(jnp.zeros((0,))))  # NaN


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_and_log1p_of_nan_and_negative(dtype):
    x = np.array([np.nan, -np.nan, -2.0, -1.0, 0.0, -0.0, 1e-30, 1.0, np.inf], dtype)
    with np.errstate(all="ignore"):
        for f, ref in [(jnp.log, np.log), (jnp.log1p, np.log1p)]:
            out = np.asarray(f(jnp.asarray(x)))
            np.testing.assert_array_equal(np.isnan(out), np.isnan(ref(x)))
            ok = ~np.isnan(ref(x))
            np.testing.assert_allclose(out[ok], ref(x)[ok], rtol=1e-6)


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 5])
def test_matrix_power(n):
    a = np.array([[2.0, 1.0], [0.5, 3.0]], np.float32)
    np.testing.assert_allclose(np.asarray(jnp.linalg.matrix_power(jnp.asarray(a), n)),
                               np.linalg.matrix_power(a, n), rtol=1e-5)


def test_matrix_power_rejects_bad_exponents():
    with pytest.raises(TypeError, match="integer"):
        jnp.linalg.matrix_power(jnp.eye(2), 1.5)
    with pytest.raises(TypeError, match="square"):  # (JAX 0.10.2's class)
        jnp.linalg.matrix_power(jnp.ones((2, 3)), 2)


def test_vecdot_keeps_the_operand_dtype():
    a = jnp.asarray(np.array([200, 3], np.uint8))
    out = jnp.vecdot(a, a)
    assert out.dtype == np.uint8 and int(out) == (200 * 200 + 9) % 256  # wraps, as a dot
    assert jnp.linalg.vecdot(a, a).dtype == np.uint8
    z = jnp.asarray(np.array([1 + 2j, 3j], np.complex64))
    assert complex(jnp.vecdot(z, z)) == complex(np.vdot(np.asarray(z), np.asarray(z)))


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)])
def test_cholesky_of_empty_matrices(shape):
    assert jnp.linalg.cholesky(jnp.zeros(shape)).shape == shape


def test_item_assignment_raises_jax_error():
    x = jnp.zeros(3)
    with pytest.raises(TypeError, match=r"immutable.*x\.at\[idx\]\.set\(y\)"):
        x[0] = 1.0
    assert list(inspect.signature(type(x).__setitem__).parameters) == ["self", "key", "value"]

    def f(y):
        y[1] = 2.0
        return y
    with pytest.raises(TypeError, match="immutable"):
        ember.jit(f)(x)


@pytest.mark.parametrize("shape,mask", [((0,), np.zeros(0, bool)), ((2, 0), np.zeros((2, 0), bool)),
                                        ((0, 3), np.zeros(0, bool)), ((3,), [True, False, True])])
def test_boolean_masks_of_empty_arrays(shape, mask):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x)[jnp.asarray(mask)]),
                                  x[np.asarray(mask)])


def test_integer_arrays_into_empty_dims():
    assert jnp.zeros((0,))[jnp.array([], int)].shape == (0,)
    assert jnp.zeros((2, 0))[:, jnp.array([], int)].shape == (2, 0)


@pytest.mark.parametrize("key", [False, np.bool_(False), True])
def test_scalar_boolean_index(key):
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x)[key]), x[key])
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x)[jnp.asarray(key)]), x[bool(key)])


@pytest.mark.parametrize("a", [[1, 2, 1, 2], np.array([3, 0, 3, 1], np.uint8), [True, False, True],
                               np.array([-128, 5, -128, 7], np.int8),
                               np.array([np.nan, 1.0, np.nan, 2.0, 1.0], np.float32)])
def test_argsort_descending_is_stable_for_every_dtype(a):
    a = np.asarray(a)
    out = np.asarray(jnp.argsort(jnp.asarray(a), descending=True))
    # Stable descending: reverse, sort ascending stably, map back, reverse
    # (NaN first, as JAX).
    ref = (len(a) - 1 - np.argsort(a[::-1], kind="stable"))[::-1]
    np.testing.assert_array_equal(out, ref)


def test_take_along_axis_defaults_to_the_last_axis():
    x = jnp.asarray([[1, 2], [3, 4]])
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(x, jnp.asarray([[1, 0], [0, 1]]))),
                                  [[2, 1], [3, 4]])


def test_vecdot_checks_the_contracted_axis():
    with pytest.raises(ValueError, match="axes must match"):
        jnp.vecdot(jnp.ones((2, 3)), jnp.ones((2, 1)))
    np.testing.assert_array_equal(np.asarray(jnp.vecdot(jnp.ones((2, 3)), jnp.ones(3))), [3, 3])


@pytest.mark.parametrize("dtype", [np.uint32, np.uint8, np.int32, np.float32, np.bool_])
def test_out_of_bounds_fill_of_every_dtype(dtype):
    # JAX's fills (max for unsigned, min for signed, NaN, True); uint32's max
    # once overflowed a weak int32 on the way.
    x = jnp.zeros(2, dtype)
    fill = {np.uint32: 2**32 - 1, np.uint8: 255, np.int32: -2**31, np.bool_: True}.get(dtype)
    for out in (jnp.take(x, jnp.array([0, 5]))[1], x.at[5].get(mode="fill")):
        out = np.asarray(out)
        assert out.dtype == dtype
        assert np.isnan(out) if fill is None else out == fill
    assert int(jnp.searchsorted(jnp.array([0], jnp.uint32), jnp.array([0], jnp.uint32))[0]) == 0


def test_dlpack_copy_false_is_a_read_only_view():
    # A DLPack 1.0 consumer asking for no copy gets the array's own
    # read-only buffer, never a silent writable copy.
    x = jnp.arange(3.0)
    out = np.from_dlpack(x, copy=False)
    assert not out.flags.writeable
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])


def test_take_and_repeat_on_an_empty_axis():
    # (Found by the Array API suite: gathering from an empty axis left a
    # gather with an out-of-bounds slice size, a verifier error.)
    out = jnp.repeat(jnp.zeros((0,), bool), jnp.zeros((0,), jnp.int8))
    assert out.shape == (0,) and out.dtype == np.bool_
    assert jnp.take(jnp.zeros((0, 3)), jnp.zeros((0, 2), np.int32), axis=0).shape == (0, 2, 3)
    assert jnp.zeros((4, 0))[:, jnp.zeros((0,), np.int32)].shape == (4, 0)
    for mode in (None, "fill", "clip", "wrap"):
        with pytest.raises(IndexError, match="non-empty jnp.take\\(\\) from an empty axis"):
            jnp.take(jnp.zeros((0,)), jnp.array([0, 1]), mode=mode)
    # Under jit too.
    assert ember.jit(lambda a, i: jnp.take(a, i, axis=1))(
        np.zeros((2, 0)), np.zeros((3,), np.int32)[:0]).shape == (2, 0)
