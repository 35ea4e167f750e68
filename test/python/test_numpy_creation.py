"""Array creation functions of ember.numpy against NumPy."""

import numpy as np
import pytest

import ember

from helpers import assert_close, jnp


def test_array_and_asarray():
    assert_close(jnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
    assert_close(jnp.array([1.5, 2]), np.array([1.5, 2], np.float32))
    assert_close(jnp.array([True, False]), np.array([True, False]))
    assert_close(jnp.array(3.0), np.array(3.0, np.float32))
    assert_close(jnp.array([1, 2], dtype=jnp.float16), np.array([1, 2], np.float16))
    assert_close(jnp.array(np.arange(3), ndmin=3), np.array(np.arange(3, dtype=np.int32), ndmin=3))
    x = jnp.arange(3.0)
    assert_close(jnp.array([x, x]), np.stack([np.arange(3.0)] * 2).astype(np.float32))
    assert_close(jnp.asarray(x), np.arange(3.0, dtype=np.float32))
    assert jnp.asarray(x, dtype=jnp.int32).dtype == np.int32
    assert jnp.asarray(np.float16(1)).dtype == np.float16
    assert jnp.array([1, 2.5], dtype=jnp.bfloat16).dtype == jnp.bfloat16


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("dtype", [None, np.int32, np.bool_, np.float16, jnp.bfloat16])
def test_zeros_ones_empty(fn, dtype):
    out = getattr(jnp, fn)((2, 3), dtype=dtype)
    want = np.dtype(np.float32) if dtype is None else np.dtype(dtype)
    assert out.shape == (2, 3) and out.dtype == want
    if fn != "empty":
        ref = getattr(np, fn)((2, 3), dtype=want if dtype is not jnp.bfloat16 else np.float32)
        np.testing.assert_array_equal(np.asarray(out).astype(np.float32), ref.astype(np.float32))
    assert getattr(jnp, fn)(4).shape == (4,)


def test_full():
    assert_close(jnp.full((2, 2), 7), np.full((2, 2), 7, np.int32))
    assert_close(jnp.full((2, 2), 1.5), np.full((2, 2), 1.5, np.float32))
    assert_close(jnp.full(3, 2, dtype=jnp.float16), np.full(3, 2, np.float16))
    assert_close(jnp.full((2, 3), np.arange(3, dtype=np.float32)),
                 np.full((2, 3), np.arange(3, dtype=np.float32)))


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like"])
def test_like(fn):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = getattr(jnp, fn)(x)
    assert out.shape == (2, 3) and out.dtype == np.int32
    out = getattr(jnp, fn)(x, dtype=jnp.float16)
    assert out.dtype == np.float16
    assert getattr(jnp, fn)(x, shape=(4,)).shape == (4,)
    assert_close(jnp.full_like(x, 3), np.full_like(x, 3))
    assert_close(jnp.full_like(x, 2.7, dtype=np.float32), np.full_like(x, 2.7, dtype=np.float32))
    assert_close(jnp.full_like(jnp.ones(2, jnp.int32), 2.7),
                 np.full_like(np.ones(2, np.int32), 2.7))


@pytest.mark.parametrize("args,kw", [
    ((5,), {}), ((2, 7), {}), ((1, 10, 3), {}), ((5, 0, -1), {}), ((0.0, 1.0, 0.25), {}),
    ((3,), {"dtype": np.float32}), ((0, 1, 0.1), {}), ((-3.5, 2), {}),
    # One bound and a step: the bound is the stop (found by the Array API suite).
    ((5,), {"step": 2}), ((0,), {"step": 2}), ((-4,), {"step": -1}),
])
def test_arange(args, kw):
    assert_close(jnp.arange(*args, **kw), np.arange(*args, **kw))


def test_arange_dtypes():
    assert jnp.arange(5).dtype == np.int32
    assert jnp.arange(5.0).dtype == np.float32
    assert jnp.arange(5, dtype=jnp.float16).dtype == np.float16


@pytest.mark.parametrize("kw", [{}, {"endpoint": False}, {"num": 1}, {"num": 7},
                                {"dtype": np.int32}])
def test_linspace(kw):
    assert_close(jnp.linspace(-1, 3, **kw), np.linspace(-1, 3, **kw), rtol=1e-6, atol=1e-6)


def test_linspace_arrays_and_retstep():
    start = np.array([0.0, 1.0], np.float32)
    stop = np.array([1.0, 5.0], np.float32)
    assert_close(jnp.linspace(start, stop, 5), np.linspace(start, stop, 5))
    assert_close(jnp.linspace(start, stop, 5, axis=1), np.linspace(start, stop, 5, axis=1))
    a, step = jnp.linspace(0, 1, 5, retstep=True)
    assert_close(a, np.linspace(0, 1, 5).astype(np.float32))
    assert abs(float(step) - 0.25) < 1e-7


def test_logspace_geomspace():
    assert_close(jnp.logspace(0, 2, 5), np.logspace(0, 2, 5), rtol=1e-5)
    assert_close(jnp.logspace(0, 3, 4, base=2.0), np.logspace(0, 3, 4, base=2.0), rtol=1e-5)
    assert_close(jnp.logspace(0, 2, 4, endpoint=False), np.logspace(0, 2, 4, endpoint=False),
                 rtol=1e-5)
    assert_close(jnp.geomspace(1, 1000, 4), np.geomspace(1, 1000, 4), rtol=1e-5)


@pytest.mark.parametrize("args", [(3,), (3, 4), (4, 3, 1), (3, 4, -1), (3, None, 2)])
def test_eye_tri(args):
    assert_close(jnp.eye(*args), np.eye(*args).astype(np.float32))
    assert_close(jnp.tri(*args), np.tri(*args).astype(np.float32))
    assert jnp.eye(*args, dtype=jnp.int32).dtype == np.int32


def test_identity():
    assert_close(jnp.identity(3), np.identity(3).astype(np.float32))
    assert_close(jnp.identity(2, dtype=bool), np.identity(2, dtype=bool))


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_triu(k):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_close(jnp.tril(x, k), np.tril(x, k))
    assert_close(jnp.triu(x, k), np.triu(x, k))
    b = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    assert_close(jnp.tril(b, k), np.tril(b, k))
    assert_close(jnp.triu(b, k), np.triu(b, k))


@pytest.mark.parametrize("k", [-1, 0, 1])
def test_diag(k):
    v = np.arange(1, 4, dtype=np.int32)
    assert_close(jnp.diag(v, k), np.diag(v, k))
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_close(jnp.diag(m, k), np.diag(m, k))
    assert_close(jnp.diagonal(m, k), np.diagonal(m, k))
    assert_close(jnp.diagflat(v, k), np.diagflat(v, k))


def test_diagonal_axes():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert_close(jnp.diagonal(x, 0, 1, 2), np.diagonal(x, 0, 1, 2))
    assert_close(jnp.diagonal(x, 1, 0, 2), np.diagonal(x, 1, 0, 2))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    a = np.arange(3, dtype=np.float32)
    b = np.arange(4, dtype=np.int32)
    c = np.arange(2, dtype=np.float32)
    out = jnp.meshgrid(a, b, c, indexing=indexing, sparse=sparse)
    ref = np.meshgrid(a, b.astype(np.int32), c, indexing=indexing, sparse=sparse)
    assert len(out) == 3
    for o, r in zip(out, ref):
        assert_close(o, r)
    assert jnp.meshgrid() == [] or len(jnp.meshgrid()) == 0


def test_indices():
    assert_close(jnp.indices((2, 3)), np.indices((2, 3)).astype(np.int32))
    sp = jnp.indices((2, 3), sparse=True)
    for o, r in zip(sp, np.indices((2, 3), sparse=True)):
        assert_close(o, r.astype(np.int32))
    assert jnp.indices((2,), dtype=jnp.float32).dtype == np.float32


def test_tril_triu_indices():
    for fn in ["tril_indices", "triu_indices"]:
        for o, r in zip(getattr(jnp, fn)(4, 1), getattr(np, fn)(4, 1)):
            assert_close(o, r.astype(np.int32))
    for o, r in zip(jnp.diag_indices(3), np.diag_indices(3)):
        assert_close(o, r.astype(np.int32))


def test_array_of_none_or_an_object_is_an_error_naming_it():
    """JAX's ValueError for None; an object NumPy can only hold as an
    object array is named in the TypeError (the custom pytrees tutorial)."""
    with pytest.raises(ValueError, match="None is not a valid value for jnp.array"):
        jnp.asarray(None)

    class Thing:
        pass

    with pytest.raises(TypeError, match="cannot convert Thing to an Ember array"):
        jnp.array(Thing())


def test_array_of_a_list_of_weak_values_is_strong():
    # JAX 0.10.2: jnp.array/asarray of a list is strongly typed even when its
    # elements are weak (a Python float passed to jit); a bare weak scalar
    # stays weak.
    assert not ember.jit(lambda x: jnp.array([x, 3.0]))(2.0).weak_type
    assert not ember.jit(lambda x: jnp.array([x]))(2.0).weak_type
    assert not ember.jit(lambda x: jnp.asarray([x, 1.0]))(2.0).weak_type
    assert ember.jit(lambda x: jnp.array(x))(2.0).weak_type
