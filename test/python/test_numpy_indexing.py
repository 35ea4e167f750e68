"""__getitem__ and .at[] updates against NumPy."""

import re

import numpy as np
import pytest

import ember as jax

from helpers import assert_close, jnp

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

BASIC = [
    1, -1, (0, 2), (2, -1, 0), slice(None), slice(1, 3), slice(None, None, 2),
    slice(None, None, -1), slice(-2, None), (slice(None), 1), (Ellipsis, 2), (1, Ellipsis),
    (None, 1), (slice(None), None, 2), (Ellipsis, None), (0, slice(1, None, 2), slice(None, -1)),
    (slice(3, 0, -1), 0), (),
    (slice(5, 10),),
]


@pytest.mark.parametrize("idx", BASIC, ids=repr)
def test_basic_indexing(idx):
    assert_close(jnp.asarray(X)[idx], X[idx])


ADVANCED = [
    np.array([0, 2]), np.array([-1, 0, 1]), (np.array([0, 2]), np.array([1, 3])),
    (slice(None), np.array([[0, 1], [3, 2]])), (np.array([0, 1]), slice(None), np.array([4, 0])),
    (Ellipsis, np.array([1, 1])), (1, np.array([0, 3]), slice(1, 3)),
    (np.array([[0], [2]]), np.array([1, 2, 3])), [0, 2], (0, [1, 2]),
    (slice(None), None, np.array([1, 2])),
]


@pytest.mark.parametrize("idx", ADVANCED, ids=repr)
def test_integer_array_indexing(idx):
    assert_close(jnp.asarray(X)[idx], X[idx])


def test_index_with_ember_arrays_and_scalars():
    x = jnp.asarray(X)
    assert_close(x[jnp.array([2, 0])], X[np.array([2, 0])])
    assert_close(x[jnp.int32(1)], X[1])
    assert_close(x[np.int64(2), 1], X[2, 1])
    assert_close(x[jnp.asarray(1), jnp.asarray(2)], X[1, 2])


def test_boolean_mask_static():
    x = jnp.asarray(X)
    m = X[:, 0, 0] > 10
    assert_close(x[m], X[m])
    m2 = (X[0] % 3) == 0
    assert_close(x[0][m2], X[0][m2])
    assert_close(x[:, m2], X[:, m2])
    assert_close(x[X > 50], X[X > 50])
    assert_close(x[True], X[True])


def test_boolean_mask_shape_must_match():
    # JAX's IndexError (and its text) for a mask whose shape does not match
    # the dimensions it indexes; a mask dimension of 0 selects nothing.
    x = jnp.asarray(X)
    cases = [((np.ones(X.shape[0] + 1, bool),), 0, (X.shape[0] + 1,), list(X.shape[:1])),
             ((0, np.ones(X.shape[2], bool)), 1, (X.shape[2],), [X.shape[1]]),
             ((Ellipsis, np.ones(X.shape[1], bool)), 1, (X.shape[1],), [X.shape[2]])]
    for idx, k, got, expected in cases:
        with pytest.raises(IndexError, match=re.escape(
                f"boolean index did not match shape of indexed array in index {k}: "
                f"got {got}, expected {expected}")):
            x[idx]
    assert x[np.zeros(0, bool)].shape == (0,) + X.shape[1:]
    assert_close(x[..., np.ones(X.shape[2], bool)], X)
    assert_close(x[None, 1, X[1, :, 0] > 10], X[None, 1, X[1, :, 0] > 10])


def test_boolean_mask_in_jit_needs_static():
    f = jax.jit(lambda a, m: a[m])
    with pytest.raises((TypeError, IndexError)):
        f(X[0, 0], X[0, 0] > 2)


def test_dynamic_int_index_in_jit():
    f = jax.jit(lambda a, i: a[i, 1:3])
    assert_close(f(X, 2), X[2, 1:3])
    assert_close(f(X, -1), X[-1, 1:3])
    g = jax.jit(lambda a, i: a[:, i])
    assert_close(g(X, np.array([3, 0], np.int32)), X[:, [3, 0]])


def test_index_errors():
    x = jnp.asarray(X)
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]
    # JAX clamps an out-of-bounds integer index (as its gathers do).
    np.testing.assert_array_equal(np.asarray(x[5]), X[-1])
    np.testing.assert_array_equal(np.asarray(x[-9]), X[0])
    with pytest.raises(IndexError):
        jnp.zeros(0)[0]
    with pytest.raises((TypeError, IndexError)):
        x[1.5]
    with pytest.raises(IndexError):
        x[..., ...]


@pytest.mark.parametrize("idx", [1, (0, 2), (slice(None), 1), (Ellipsis, slice(1, 3)),
                                 np.array([0, 2]), (np.array([0, 2]), np.array([1, 3])),
                                 (slice(None, None, 2), 0, slice(None, None, -1))], ids=repr)
def test_at_set_add_mul(idx):
    x = jnp.asarray(X)
    for method, op in [("set", lambda r, v: v), ("add", np.add), ("multiply", np.multiply),
                       ("subtract", np.subtract), ("divide", np.divide),
                       ("min", np.minimum), ("max", np.maximum), ("power", np.power)]:
        ref = X.copy()
        ref[idx] = op(ref[idx], np.float32(2.0))
        out = getattr(x.at[idx], method)(2.0)
        assert_close(out, ref)
    ref = X.copy()
    vals = np.ones_like(X[idx]) * 7
    ref[idx] = vals
    assert_close(x.at[idx].set(vals), ref)
    assert_close(x.at[idx].get(), X[idx])
    np.testing.assert_array_equal(np.asarray(x), X)  # functional: x unchanged


def test_at_add_repeated_indices_accumulate():
    x = jnp.zeros(5, jnp.int32)
    idx = np.array([0, 1, 1, 3, 1])
    ref = np.zeros(5, np.int32)
    np.add.at(ref, idx, 1)
    assert_close(x.at[idx].add(1), ref)
    ref = np.full(5, 10, np.int32)
    np.minimum.at(ref, idx, np.array([5, 4, 3, 2, 1], np.int32))
    assert_close(jnp.full(5, 10).at[idx].min(np.array([5, 4, 3, 2, 1], np.int32)), ref)


def test_at_modes_out_of_bounds():
    x = jnp.arange(5)
    assert_close(x.at[7].set(9), np.arange(5, dtype=np.int32))  # dropped
    assert_close(x.at[7].set(9, mode="clip"), np.array([0, 1, 2, 3, 9], np.int32))
    assert_close(x.at[np.array([1, 9])].get(mode="fill", fill_value=-1),
                 np.array([1, -1], np.int32))
    assert_close(x.at[-1].add(10), np.array([0, 1, 2, 3, 14], np.int32))


def test_at_bool_and_dtypes():
    x = jnp.zeros(4, bool)
    assert_close(x.at[1].set(True), np.array([False, True, False, False]))
    h = jnp.zeros(3, jnp.float16)
    assert h.at[0].add(1.5).dtype == np.float16
    i = jnp.zeros(3, jnp.int32)
    assert i.at[0].set(2.7).dtype == np.int32


def test_at_inside_jit_with_traced_index():
    f = jax.jit(lambda a, i, v: a.at[i].set(v))
    assert_close(f(np.zeros(4, np.float32), 2, 5.0), np.array([0, 0, 5, 0], np.float32))
    g = jax.jit(lambda a, i: a.at[i].add(1.0))
    ref = np.zeros((3, 2), np.float32)
    ref[[0, 2]] += 1
    assert_close(g(np.zeros((3, 2), np.float32), np.array([0, 2], np.int32)), ref)


def test_at_apply():
    x = jnp.arange(4.0)
    assert_close(x.at[1:3].apply(jnp.sin), np.array([0, np.sin(1), np.sin(2), 3], np.float32))
