"""Shape manipulation, joining, splitting, sorting and searching against NumPy."""

import numpy as np
import pytest

from helpers import assert_close, jnp, rand

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("shape", [(6, 4), (-1,), (4, -1, 2), (24,), (2, 12)])
def test_reshape(shape):
    assert_close(jnp.reshape(X, shape), np.reshape(X, shape))
    assert_close(jnp.asarray(X).reshape(shape), X.reshape(shape))
    assert_close(jnp.asarray(X).reshape(*shape), X.reshape(*shape))


def test_reshape_errors():
    with pytest.raises((TypeError, ValueError), match="24"):
        jnp.reshape(X, (5, 5))


def test_ravel_transpose():
    assert_close(jnp.ravel(X), np.ravel(X))
    assert_close(jnp.transpose(X), np.transpose(X))
    assert_close(jnp.transpose(X, (1, 0, 2)), np.transpose(X, (1, 0, 2)))
    assert_close(jnp.transpose(X, (-1, 0, 1)), np.transpose(X, (-1, 0, 1)))
    a = jnp.asarray(X)
    assert_close(a.T, X.T)
    assert_close(a.transpose(2, 0, 1), X.transpose(2, 0, 1))
    assert_close(a.transpose((2, 0, 1)), X.transpose((2, 0, 1)))
    assert_close(jnp.permute_dims(X, (2, 1, 0)), np.permute_dims(X, (2, 1, 0)))
    assert_close(jnp.matrix_transpose(X), np.matrix_transpose(X))
    assert_close(a.mT, X.mT)


@pytest.mark.parametrize("src,dst", [(0, -1), (-1, 0), ((0, 1), (2, 0)), (1, 1)])
def test_moveaxis(src, dst):
    assert_close(jnp.moveaxis(X, src, dst), np.moveaxis(X, src, dst))


@pytest.mark.parametrize("a1,a2", [(0, 2), (1, -1), (0, 0)])
def test_swapaxes(a1, a2):
    assert_close(jnp.swapaxes(X, a1, a2), np.swapaxes(X, a1, a2))
    assert_close(jnp.asarray(X).swapaxes(a1, a2), X.swapaxes(a1, a2))


def test_squeeze_expand_dims():
    y = np.zeros((1, 3, 1, 2), np.int32)
    assert_close(jnp.squeeze(y), np.squeeze(y))
    assert_close(jnp.squeeze(y, 0), np.squeeze(y, 0))
    assert_close(jnp.squeeze(y, (0, -2)), np.squeeze(y, (0, -2)))
    with pytest.raises(ValueError):
        jnp.squeeze(y, 1)
    assert_close(jnp.expand_dims(X, 0), np.expand_dims(X, 0))
    assert_close(jnp.expand_dims(X, -1), np.expand_dims(X, -1))
    assert_close(jnp.expand_dims(X, (0, 4)), np.expand_dims(X, (0, 4)))
    assert_close(jnp.expand_dims(X, (1, -1)), np.expand_dims(X, (1, -1)))


def test_atleast():
    for v in [np.float32(3.0), np.arange(3, dtype=np.float32), np.ones((2, 3), np.float32), X]:
        assert_close(jnp.atleast_1d(v), np.atleast_1d(v))
        assert_close(jnp.atleast_2d(v), np.atleast_2d(v))
        assert_close(jnp.atleast_3d(v), np.atleast_3d(v))
    out = jnp.atleast_2d(np.float32(1), np.arange(2, dtype=np.float32))
    assert isinstance(out, (list, tuple)) and len(out) == 2
    assert out[0].shape == (1, 1) and out[1].shape == (1, 2)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate(axis):
    a = rand((2, 3), np.float32, 1)
    b = rand((2, 3), np.int32, 2)
    assert_close(jnp.concatenate([a, b, a], axis=axis),
                 np.concatenate([a, b.astype(np.float32), a], axis=axis))
    assert_close(jnp.concat([b, b], axis=axis), np.concatenate([b, b], axis=axis))


def test_concatenate_errors():
    with pytest.raises((TypeError, ValueError), match=r"\(2, 3\)|\(3, 3\)|shape"):
        jnp.concatenate([np.ones((2, 3)), np.ones((3, 4))], axis=0)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack(axis):
    a, b = rand((2, 3), np.float32, 1), rand((2, 3), np.float32, 2)
    assert_close(jnp.stack([a, b], axis=axis), np.stack([a, b], axis=axis))
    assert_close(jnp.stack((a, b, a), axis=axis, dtype=jnp.int32),
                 np.stack((a, b, a), axis=axis).astype(np.int32))


def test_hstack_vstack_dstack_column_stack():
    v = np.arange(3, dtype=np.int32)
    m = np.arange(6, dtype=np.int32).reshape(2, 3)
    for fn in ["hstack", "vstack", "dstack"]:
        assert_close(getattr(jnp, fn)([v, v]), getattr(np, fn)([v, v]))
        assert_close(getattr(jnp, fn)([m, m]), getattr(np, fn)([m, m]))
    assert_close(jnp.column_stack([v, v]), np.column_stack([v, v]))
    assert_close(jnp.hstack([np.float32(1), v]), np.hstack([np.float32(1), v]))


@pytest.mark.parametrize("ios,axis", [(2, 0), (3, 1), ([1, 3], 1), ([0, 2], 0), ([], 1)])
def test_split(ios, axis):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = jnp.split(x, ios, axis=axis)
    ref = np.split(x, ios, axis=axis)
    assert isinstance(out, list)
    assert_close(out, ref)


def test_split_variants():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert_close(jnp.array_split(x, 4, axis=1), np.array_split(x, 4, axis=1))
    assert_close(jnp.hsplit(x, 2), np.hsplit(x, 2))
    assert_close(jnp.vsplit(x, 2), np.vsplit(x, 2))
    with pytest.raises(ValueError):
        jnp.split(x, 5, axis=1)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 2, 2), (3,)])
def test_tile(reps):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_close(jnp.tile(x, reps), np.tile(x, reps))


@pytest.mark.parametrize("repeats,axis", [(2, None), (2, 0), ([1, 0, 2], 1), (3, -1), ([2, 1], 0)])
def test_repeat(repeats, axis):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_close(jnp.repeat(x, repeats, axis=axis), np.repeat(x, repeats, axis=axis))


def test_repeat_total_repeat_length():
    x = np.arange(3, dtype=np.int32)
    r = np.array([1, 2, 0], np.int32)
    assert_close(jnp.repeat(x, jnp.asarray(r), total_repeat_length=3), np.repeat(x, r))
    assert_close(jnp.repeat(x, jnp.asarray(r), total_repeat_length=5),
                 np.array([0, 1, 1, 2, 2], np.int32))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_flip(axis):
    assert_close(jnp.flip(X, axis), np.flip(X, axis))


def test_flip_lr_ud_rot90():
    m = X[0]
    assert_close(jnp.fliplr(m), np.fliplr(m))
    assert_close(jnp.flipud(m), np.flipud(m))
    for k in range(-1, 4):
        assert_close(jnp.rot90(m, k), np.rot90(m, k))
    assert_close(jnp.rot90(X, 1, (1, 2)), np.rot90(X, 1, (1, 2)))


@pytest.mark.parametrize("shift,axis", [(1, None), (-2, None), (5, None), (1, 0), (-1, 2),
                                        ((1, 2), (1, 2)), (7, 1)])
def test_roll(shift, axis):
    assert_close(jnp.roll(X, shift, axis), np.roll(X, shift, axis))


def test_roll_traced_shift():
    import ember as jax
    f = jax.jit(lambda x, s: jnp.roll(x, s, axis=1))
    assert_close(f(X, 2), np.roll(X, 2, axis=1))
    assert_close(f(X, -1), np.roll(X, -1, axis=1))


PAD_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean",
             "median", "linear_ramp", "empty"]


@pytest.mark.parametrize("mode", PAD_MODES)
@pytest.mark.parametrize("pw", [2, ((1, 2), (0, 3)), ((3, 1),)])
def test_pad_modes(mode, pw):
    x = rand((3, 4), np.float32, seed=3)
    out = jnp.pad(x, pw, mode=mode)
    ref = np.pad(x, pw, mode=mode)
    if mode == "empty":
        assert out.shape == ref.shape and out.dtype == ref.dtype
        return
    assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_pad_options():
    x = np.arange(1, 6, dtype=np.int32)
    assert_close(jnp.pad(x, 2, constant_values=7), np.pad(x, 2, constant_values=7))
    assert_close(jnp.pad(x, (1, 3), constant_values=(-1, 9)),
                 np.pad(x, (1, 3), constant_values=(-1, 9)))
    assert_close(jnp.pad(x, 3, mode="reflect", reflect_type="odd"),
                 np.pad(x, 3, mode="reflect", reflect_type="odd"))
    assert_close(jnp.pad(x, 6, mode="wrap"), np.pad(x, 6, mode="wrap"))
    assert_close(jnp.pad(x, 7, mode="reflect"), np.pad(x, 7, mode="reflect"))
    assert_close(jnp.pad(x, 7, mode="symmetric"), np.pad(x, 7, mode="symmetric"))
    assert_close(jnp.pad(x, 2, mode="maximum", stat_length=2),
                 np.pad(x, 2, mode="maximum", stat_length=2))
    f = x.astype(np.float32)
    assert_close(jnp.pad(f, (2, 3), mode="linear_ramp", end_values=(5, -1)),
                 np.pad(f, (2, 3), mode="linear_ramp", end_values=(5, -1)))


def test_pad_with_a_function():
    # A callable mode, as JAX's and NumPy's: zeros around the array, then
    # func(vector, the axis's pad widths, the axis, kwargs) along each axis
    # (JAX's returns the vector; NumPy's fills it in place).
    def jax_style(vector, pad_width, iaxis, kwargs):
        fill = kwargs.get("padder", 10)
        vector = vector.at[:pad_width[0]].set(fill)
        return vector.at[vector.size - pad_width[1]:].set(fill) if pad_width[1] else vector

    def numpy_style(vector, pad_width, iaxis, kwargs):
        fill = kwargs.get("padder", 10)
        vector[:pad_width[0]] = fill
        if pad_width[1]:
            vector[vector.size - pad_width[1]:] = fill

    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for pw, kw in [(2, {}), (1, {"padder": 100}), (((1, 0), (0, 2)), {})]:
        assert_close(jnp.pad(x, pw, jax_style, **kw), np.pad(x, pw, numpy_style, **kw))

    def ramp(vector, pad_width, iaxis, kwargs):
        return vector * (iaxis + 1) + jnp.arange(vector.size)

    y = np.ones((2, 2, 2), np.float32)
    want = np.pad(y, ((1, 0), (0, 1), (1, 1)))
    for axis in range(3):
        want = np.moveaxis(np.moveaxis(want, axis, -1) * (axis + 1)
                           + np.arange(want.shape[axis]), -1, axis)
    assert_close(jnp.pad(y, ((1, 0), (0, 1), (1, 1)), ramp), want)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 1, 3)])
def test_broadcast_to(shape):
    x = np.arange(3, dtype=np.int32)
    assert_close(jnp.broadcast_to(x, shape), np.broadcast_to(x, shape))
    with pytest.raises(ValueError):
        jnp.broadcast_to(x, (4,))
    assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    arrs = jnp.broadcast_arrays(np.ones((2, 1)), np.ones(3))
    assert [a.shape for a in arrs] == [(2, 3), (2, 3)]


@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_sort_argsort(axis, dtype):
    x = rand((3, 5), dtype, seed=4, low=-3, high=3)
    assert_close(jnp.sort(x, axis=axis), np.sort(x, axis=axis))
    assert_close(jnp.argsort(x, axis=axis), np.argsort(x, axis=axis, stable=True).astype(np.int32))


def test_sort_nan_and_descending():
    x = np.array([3.0, np.nan, -1.0, 2.0, -np.inf], np.float32)
    assert_close(jnp.sort(x), np.sort(x))
    assert_close(jnp.sort(x[[0, 2, 3]], descending=True), -np.sort(-x[[0, 2, 3]]))
    y = np.array([2, 1, 2, 1, 3], np.int32)
    assert_close(jnp.argsort(y, descending=True), np.array([4, 0, 2, 1, 3], np.int32))
    assert_close(jnp.lexsort((y, -y)), np.lexsort((y, -y)).astype(np.int32))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(axis):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 2], [1, 1]], np.int32)
    assert_close(jnp.take(x, idx, axis=axis), np.take(x, idx, axis=axis))
    assert_close(jnp.take(x, 1, axis=axis), np.take(x, 1, axis=axis))


def test_take_modes():
    x = np.arange(5, dtype=np.float32)
    idx = np.array([-1, 0, 4, 7], np.int32)
    assert_close(jnp.take(x, idx, mode="wrap"), np.take(x, idx, mode="wrap"))
    assert_close(jnp.take(x, idx, mode="clip"), np.take(x, idx, mode="clip"))
    out = jnp.take(x, idx, mode="fill", fill_value=-5.0)
    assert_close(out, np.array([4.0, 0.0, 4.0, -5.0], np.float32))
    out = np.asarray(jnp.take(x, idx))  # JAX default: fill with NaN out of bounds
    assert np.isnan(out[3]) and out[0] == 4.0


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_along_axis(axis):
    x = rand((3, 4), np.float32, seed=5)
    if axis is not None:
        idx = np.argsort(x, axis=axis).astype(np.int32)
    else:
        idx = np.argsort(x, axis=None)
    assert_close(jnp.take_along_axis(x, idx, axis=axis), np.take_along_axis(x, idx, axis=axis))
    small = np.array([[0], [2], [1]], np.int32)
    if axis in (1, -1):
        assert_close(jnp.take_along_axis(x, small, axis=axis),
                     np.take_along_axis(x, small, axis=axis))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", [None, "scan", "sort", "compare_all"])
def test_searchsorted(side, method):
    a = np.array([0.0, 1.0, 1.0, 2.5, 4.0], np.float32)
    v = np.array([[-1.0, 1.0], [2.0, 5.0]], np.float32)
    kw = {} if method is None else {"method": method}
    assert_close(jnp.searchsorted(a, v, side=side, **kw),
                 np.searchsorted(a, v, side=side).astype(np.int32))
    assert_close(jnp.searchsorted(a, 1.0, side=side), np.int32(np.searchsorted(a, 1.0, side=side)))


def test_searchsorted_sorter_and_int():
    a = np.array([3, 1, 2], np.int32)
    s = np.argsort(a).astype(np.int32)
    assert_close(jnp.searchsorted(a, np.array([2, 3], np.int32), sorter=s),
                 np.searchsorted(a, [2, 3], sorter=s).astype(np.int32))


def test_nonzero_argwhere_with_size():
    x = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
    nz = jnp.nonzero(x, size=3)
    for o, r in zip(nz, np.nonzero(x)):
        assert_close(o, r.astype(np.int32))
    nz = jnp.nonzero(x, size=5, fill_value=-1)
    assert_close(nz[0], np.array([0, 1, 1, -1, -1], np.int32))
    nz = jnp.nonzero(x, size=2)
    assert_close(nz[1], np.array([1, 0], np.int32))
    assert_close(jnp.argwhere(x, size=3), np.argwhere(x).astype(np.int32))
    assert_close(jnp.argwhere(x, size=4, fill_value=9)[3], np.array([9, 9], np.int32))
    assert_close(jnp.flatnonzero(x, size=3), np.flatnonzero(x).astype(np.int32))
    assert_close(jnp.nonzero(x)[0], np.nonzero(x)[0].astype(np.int32))
    assert_close(jnp.asarray(x).nonzero(size=3)[1], np.nonzero(x)[1].astype(np.int32))


def test_nonzero_inside_jit_requires_size():
    import ember as jax
    f = jax.jit(lambda x: jnp.nonzero(x, size=2)[0])
    assert_close(f(np.array([0, 3, 0, 4], np.int32)), np.array([1, 3], np.int32))
    with pytest.raises(TypeError):
        jax.jit(lambda x: jnp.nonzero(x))(np.array([0, 3], np.int32))


def test_unique_with_size():
    x = np.array([3, 1, 3, 2, 1, 3], np.int32)
    assert_close(jnp.unique(x), np.unique(x))
    assert_close(jnp.unique(x, size=3), np.unique(x))
    assert_close(jnp.unique(x, size=5, fill_value=0), np.array([1, 2, 3, 0, 0], np.int32))
    u, idx, inv, cnt = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                  size=3)
    ru, ridx, rinv, rcnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert_close(u, ru)
    assert_close(idx, ridx.astype(np.int32))
    assert_close(inv, rinv.astype(np.int32))
    assert_close(cnt, rcnt.astype(np.int32))
    f = np.array([0.5, -1.0, 0.5], np.float32)
    assert_close(jnp.unique(f, size=2), np.unique(f))
    import ember as jax
    g = jax.jit(lambda v: jnp.unique(v, size=4, fill_value=-1))
    assert_close(g(x), np.array([1, 2, 3, -1], np.int32))


def test_unique_along_an_axis():
    """Values recorded from JAX 0.10.2: slices sorted lexicographically, the
    first unique slice as the default fill, NaN rows merged by equal_nan."""
    import ember as jax
    a = np.array([[1, 2], [3, 4], [1, 2], [0, 5], [3, 4]], np.int32)
    u, idx, inv, cnt = jnp.unique(a, axis=0, return_index=True, return_inverse=True,
                                  return_counts=True)
    assert_close(u, np.array([[0, 5], [1, 2], [3, 4]], np.int32))
    assert_close(idx, np.array([3, 0, 1], np.int32))
    assert_close(inv, np.array([1, 2, 1, 0, 2], np.int32))
    assert_close(cnt, np.array([1, 2, 2], np.int32))
    u, inv = jnp.unique(a, axis=1, return_inverse=True)
    assert_close(u, a)
    assert_close(inv, np.array([0, 1], np.int32))
    assert_close(jnp.unique(a, axis=0, size=5, fill_value=9),
                 np.array([[0, 5], [1, 2], [3, 4], [9, 9], [9, 9]], np.int32))
    want = np.array([[0, 5], [1, 2], [3, 4], [0, 5]], np.int32)
    assert_close(jax.jit(lambda v: jnp.unique(v, axis=0, size=4))(a), want)
    b = np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 2.0]], np.float32)
    assert jnp.unique(b, axis=0).shape == (2, 2)
    assert jnp.unique(b, axis=0, equal_nan=False).shape == (3, 2)
    c = np.random.default_rng(0).integers(0, 2, (3, 6, 2)).astype(np.int32)
    assert_close(jnp.unique(c, axis=1), np.unique(c, axis=1))
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda v: jnp.unique(v, axis=0))(a)


def test_misc_shape_helpers():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert jnp.shape(x) == (2, 3) and jnp.ndim(x) == 2 and jnp.size(x) == 6 and jnp.size(x, 1) == 3
    assert_close(jnp.append(x, x, axis=0), np.append(x, x, axis=0))
    assert_close(jnp.append(x, 7), np.append(x, 7).astype(np.int32))
    assert_close(jnp.compress(np.array([True, False, True]), x, axis=1),
                 np.compress([True, False, True], x, axis=1))
    assert_close(jnp.bincount(np.array([0, 1, 1, 3], np.int32), length=5),
                 np.bincount([0, 1, 1, 3], minlength=5).astype(np.int32))
    assert_close(jnp.interp(np.array([0.5, 1.5, 3.0], np.float32),
                            np.array([0.0, 1.0, 2.0], np.float32),
                            np.array([0.0, 10.0, 0.0], np.float32)),
                 np.interp([0.5, 1.5, 3.0], [0.0, 1.0, 2.0], [0.0, 10.0, 0.0]).astype(np.float32))
    assert_close(jnp.convolve(np.array([1.0, 2.0, 3.0], np.float32),
                              np.array([0.0, 1.0, 0.5], np.float32)),
                 np.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]).astype(np.float32))
    assert_close(jnp.select([x > 3, x < 1], [x, -x], 9), np.select([x > 3, x < 1], [x, -x], 9))


def test_reshape_and_ravel_order_f():
    x = np.arange(6, dtype=np.int32)
    assert_close(jnp.reshape(x, (2, 3), order="F"), np.reshape(x, (2, 3), order="F"))
    m = x.reshape(2, 3)
    assert_close(jnp.ravel(m, order="F"), np.ravel(m, order="F"))
