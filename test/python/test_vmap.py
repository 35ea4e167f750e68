"""vmap: every op family's batching rule (the `ember-batch` pass) checked
against a Python loop over the batch (np.stack of the function applied per
example), for in_axes/out_axes of 0, 1, -1, None and pytrees of those,
axis_size, and vmap's compositions with jit, grad, jacfwd/jacrev, nested
vmap, control flow, random keys and closures; plus vmap's errors."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax

B = 3  # the batch size used throughout (shapes are reused to share compiles)


def _r(shape, seed=0, dtype=np.float32, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low), int(high) + 1, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    return rng.uniform(low, high, shape).astype(dtype)


X = _r((B, 4, 5), 0)          # batch on axis 0 -> examples (4, 5)
Y = _r((B, 4, 5), 1)
V = _r((B, 4), 2)             # batch on axis 0 -> examples (4,)
W = _r((4, 5), 3)             # unbatched operand / examples when mapped
P = _r((4,), 4)
XT = np.ascontiguousarray(np.moveaxis(X, 0, 1))   # (4, B, 5): batch on axis 1
XL = np.ascontiguousarray(np.moveaxis(X, 0, -1))  # (4, 5, B): batch on axis -1
IDX = np.array([0, 3, 1], np.int32)               # one index per example


# --------------------------------------------------------------------------
# The reference: a Python loop over the batch
# --------------------------------------------------------------------------


def _is_leaf(t):
    return not isinstance(t, (tuple, list, dict))


def _bcast(prefix, tree):
    """in_axes/out_axes prefix -> a tree of axes shaped like `tree`."""
    if prefix is None or isinstance(prefix, int):
        if _is_leaf(tree):
            return prefix
        if isinstance(tree, dict):
            return {k: _bcast(prefix, v) for k, v in tree.items()}
        return type(tree)(_bcast(prefix, v) for v in tree)
    if isinstance(prefix, dict):
        return {k: _bcast(prefix[k], tree[k]) for k in tree}
    return type(tree)(_bcast(p, t) for p, t in zip(prefix, tree))


def _tmap(fn, *trees):
    t0 = trees[0]
    if isinstance(t0, dict):
        return {k: _tmap(fn, *(t[k] for t in trees)) for k in t0}
    if isinstance(t0, (tuple, list)):
        return type(t0)(_tmap(fn, *z) for z in zip(*trees))
    return fn(*trees)


def _leaves(tree):
    if isinstance(tree, dict):
        return [x for k in tree for x in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _leaves(t)]
    return [tree]


def loop_ref(f, in_axes, out_axes, args, axis_size=None):
    """np.stack over the batch of `f` applied per example."""
    args = tuple(args)
    in_tree = _bcast(tuple(in_axes) if isinstance(in_axes, list) else in_axes, args)
    sizes = {np.shape(a)[ax] for a, ax in zip(_leaves(args), _leaves(in_tree))
             if ax is not None}
    if axis_size is not None:
        sizes.add(axis_size)
    assert len(sizes) == 1, sizes
    n = sizes.pop()
    fj = jax.jit(f)
    outs = []
    for i in range(n):
        ex = _tmap(lambda a, ax, i=i: a if ax is None else np.take(np.asarray(a), i, axis=ax),
                   args, in_tree)
        outs.append(_tmap(np.asarray, fj(*ex)))
    oax = _bcast(out_axes, outs[0])

    def stack(ax, *per):
        if ax is None:
            for p in per[1:]:
                np.testing.assert_array_equal(p, per[0])
            return per[0]
        return np.stack(per, axis=ax)
    return _tmap(stack, oax, *outs)


def _assert_tree_close(actual, expected, tol):
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected)
        for k in expected:
            _assert_tree_close(actual[k], expected[k], tol)
        return
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), actual
        for a, e in zip(actual, expected):
            _assert_tree_close(a, e, tol)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != loop {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != loop {e.dtype}"
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e)
    else:
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


def check(f, args, in_axes=0, out_axes=0, axis_size=None, tol=1e-5):
    got = jax.vmap(f, in_axes=in_axes, out_axes=out_axes, axis_size=axis_size)(*args)
    want = loop_ref(f, in_axes, out_axes, args, axis_size)
    _assert_tree_close(got, want, tol)
    return got


def bug(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


def case(f, args, in_axes=0, out_axes=0, *, id, marks=(), axis_size=None, tol=1e-5):
    return pytest.param(f, args, in_axes, out_axes, axis_size, tol, id=id, marks=marks)


def _run(f, args, in_axes, out_axes, axis_size, tol):
    check(f, args, in_axes, out_axes, axis_size, tol)


# --------------------------------------------------------------------------
# Elementwise, in_axes/out_axes handling, pytrees, axis_size
# --------------------------------------------------------------------------

ELEMENTWISE = [
    case(jnp.sin, (X,), id="sin-ax0"),
    case(jnp.exp, (XT,), 1, id="exp-ax1"),
    case(jnp.tanh, (XL,), -1, id="tanh-ax-1"),
    case(lambda x: jnp.log(jnp.abs(x) + 1), (X,), id="log-abs"),
    case(lambda x: jnp.sqrt(jnp.abs(x)) - jnp.floor(x), (XT,), 1, 1, id="sqrt-floor-out1"),
    case(lambda x: -x, (X,), 0, -1, id="neg-out-1"),
    case(lambda x: jax.nn.sigmoid(x) * jnp.sign(x), (X,), id="sigmoid-sign"),
    case(lambda x, y: x * y + 1.0, (X, Y), id="mul-both"),
    case(lambda x, y: x - y, (X, W), (0, None), id="sub-unbatched-rhs"),
    case(lambda w, x: w / (x ** 2 + 1), (W, XT), (None, 1), id="div-unbatched-lhs-ax1"),
    case(lambda x, y: x + y, (XT, XL), (1, -1), id="add-mixed-axes"),
    case(lambda x, p: x * p[:, None], (X, P), (0, None), id="bcast-unbatched-vec"),
    case(lambda x, v: x + v[:, None], (X, V), id="bcast-batched-vec"),
    case(lambda v, w: v[:, None] * w, (V, W), (0, None), 1, id="bcast-outer-out1"),
    case(lambda x, s: x * s, (X, np.arange(1, B + 1, dtype=np.float32)), id="batched-scalar"),
    case(lambda x: jnp.maximum(x, 0.5) + jnp.minimum(x, -0.5), (X,), id="max-min-const"),
    case(lambda x, y: jnp.arctan2(x, y) + jnp.power(jnp.abs(x), y), (X, Y), id="atan2-pow"),
    case(lambda a, b: a // b + a % b,
         (_r((B, 4), 5, np.int32, -9, 9), _r((4,), 6, np.int32, 1, 4)), (0, None),
         id="int-floordiv-mod"),
    case(lambda x: x * 2.0, (W,), None, None, axis_size=B, id="axis_size-unbatched-out-None"),
    case(lambda x: x * 2.0, (W,), None, 0, axis_size=B, id="axis_size-unbatched-out0"),
    case(lambda x: x + 1.0, (X,), 0, 1, axis_size=B, id="axis_size-consistent"),
    case(lambda x, w: (x + w, w * 2.0), (X, W), (0, None), (0, None), id="out-None-where-valid"),
    case(lambda x, n: x * n, (X, 3), (0, None), id="python-int-unmapped"),
    case(lambda x: (1.0, jnp.zeros(2)), (X,), id="constant-outputs-broadcast"),
    case(lambda x, w: w, (X, W), (0, None), id="unbatched-output-broadcast"),
    case(lambda x: x, (XT,), 1, -1, id="identity-move"),
    case(lambda x: jnp.arange(5.0) + jnp.zeros_like(x) + jnp.ones(x.shape) * x, (X,),
         id="iota-zeros_like"),
    case(lambda x: (lax.integer_pow(x, 3) + lax.rsqrt(jnp.abs(x) + 1) + jnp.expm1(x)
                    + jnp.log1p(jnp.abs(x))),
         (X,), id="integer_pow-rsqrt"),
    case(lambda x: jnp.tril(x) - jnp.triu(x, 1), (X,), id="tril-triu"),
    case(lambda x: lax.bessel_i0e(x * 4) + lax.bessel_i1e(x * 4) + jnp.i0(x), (XT,), 1,
         id="bessel"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", ELEMENTWISE)
def test_elementwise(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


def test_pytree_in_axes_dict_and_nested_tuple():
    def f(d, t):
        return d["a"] * d["b"] + t[0][0] - t[0][1] * t[1]
    args = ({"a": X, "b": W}, ((XT, XL), W))
    check(f, args, in_axes=({"a": 0, "b": None}, ((1, -1), None)))


def test_pytree_in_axes_list_and_out_axes_tree():
    def f(x, w):
        return {"s": x + w, "p": (x * w, jnp.sum(w))}
    out = check(f, (X, W), in_axes=[0, None], out_axes={"s": 1, "p": (-1, None)})
    assert np.shape(out["s"]) == (4, B, 5) and np.shape(out["p"][1]) == ()


def test_pytree_in_axes_prefix_for_whole_argument():
    check(lambda t: t[0] * t[1], ((XT, XT),), in_axes=(1,))


def test_kwargs_are_batched_on_axis_0():
    got = jax.vmap(lambda x, y=None: x * y)(X, y=Y)
    np.testing.assert_allclose(got, X * Y, rtol=1e-6)


# --------------------------------------------------------------------------
# Comparisons, select/where/clip, dtype conversion
# --------------------------------------------------------------------------

SELECT = [
    case(lambda x, y: x < y, (X, Y), id="lt"),
    case(lambda x, w: (x == w) | (x >= 1.0), (X, W), (0, None), id="eq-ge-or"),
    case(lambda p, x, y: lax.select(p, x, y), (X > 0, W, -W), (0, None, None),
         id="select-pred-only"),
    case(lambda p, x, y: lax.select(p, x, y), (W > 0, X, Y), (None, 0, 0),
         id="select-unbatched-pred"),
    case(lambda x: jnp.where(x > 0, x, 0.0), (XT,), 1, id="where-scalar-branch"),
    case(lambda c, x: jnp.where(c[:, None], x, -1.0), (V > 0, W), (0, None), id="where-bcast-cond"),
    case(lambda x, lo, hi: jnp.clip(x, lo, hi),
         (X, -np.ones(B, np.float32), np.arange(B, dtype=np.float32)),
         id="clip-batched-bounds"),
    case(lambda x: jnp.clip(x, -0.5, 0.5), (XL,), -1, id="clip-const"),
    case(lambda x: x.astype(jnp.int32), (X * 3,), id="to-int32"),
    case(lambda x: lax.convert_element_type(x, jnp.float16).astype(jnp.float32), (X,), id="via-f16",
         tol=1e-2),
    case(lambda x: (x > 0).astype(jnp.float32) + jnp.isnan(x), (XT,), 1, id="bool-to-float"),
    case(lambda i: i.astype(jnp.float32) / 2, (_r((B, 4), 7, np.int32, -5, 5),), id="int-to-float"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", SELECT)
def test_compare_select_convert(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


# --------------------------------------------------------------------------
# Shape ops
# --------------------------------------------------------------------------

X1 = _r((B, 1, 4), 8)

SHAPE = [
    case(lambda v: jnp.broadcast_to(v, (2, 4)), (V,), id="broadcast_to"),
    case(lambda v: lax.broadcast_in_dim(v, (4, 2), (0,)), (V,), 0, 1, id="broadcast_in_dim"),
    case(lambda x: jnp.reshape(x, (2, 10)), (X,), id="reshape"),
    case(lambda x: x.reshape(-1), (XT,), 1, id="ravel-ax1"),
    case(lambda x: jnp.transpose(x), (XL,), -1, id="transpose"),
    case(lambda x: x.T + 0 * jnp.moveaxis(x, 0, 1), (X,), 0, 2, id="T-moveaxis-out2"),
    case(lambda x: jnp.squeeze(x, 0), (X1,), id="squeeze"),
    case(lambda x: jnp.squeeze(x), (np.ascontiguousarray(np.moveaxis(X1, 0, 2)),), 2,
         id="squeeze-all-ax2"),
    case(lambda x: jnp.expand_dims(x, (0, -1)), (X,), id="expand_dims"),
    case(lambda x: x[None, :, None], (V,), id="none-index"),
    case(lambda x: jnp.moveaxis(x, -1, 0), (XT,), 1, -1, id="moveaxis-ax1-out-1"),
    case(lambda x: jnp.swapaxes(x, 0, 1).reshape(5, 2, 2), (X,), id="swap-reshape"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", SHAPE)
def test_shape_ops(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


# --------------------------------------------------------------------------
# Slicing, concatenate/stack/pad, flip/roll
# --------------------------------------------------------------------------

SLICE = [
    case(lambda x: x[1:3], (X,), id="static"),
    case(lambda x: x[:, 1:4], (XT,), 1, id="static-ax1"),
    case(lambda x: x[::2, 1::2], (X,), id="strided"),
    case(lambda x: x[::-1], (X,), id="neg-step"),
    case(lambda x: x[..., ::-2], (XL,), -1, id="neg-step2-ax-1"),
    case(lambda x: x[3:0:-2, -1], (X,), id="neg-step-range"),
    case(lambda x: lax.slice(x, (0, 1), (4, 5), (2, 3)), (X,), id="lax.slice-strides"),
    case(lambda x: x[2], (X,), 0, 1, id="int-index-out1"),
    case(lambda x: lax.index_in_dim(x, 1, 1, keepdims=False), (XT,), 1, id="index_in_dim"),
    case(lambda x, w: jnp.concatenate([x, w, x]), (X, W), (0, None), id="concat-mixed"),
    case(lambda x, y: jnp.concatenate([x, y], axis=1), (XT, XL), (1, -1), id="concat-ax1"),
    case(lambda x, w: jnp.stack([x, w], axis=1), (X, W), (0, None), id="stack-mixed"),
    case(lambda v, p: jnp.stack([v, p, v]), (V, P), (0, None), 1, id="stack-out1"),
    case(lambda x: jnp.pad(x, ((1, 0), (2, 1))), (X,), id="pad-const"),
    case(lambda x: jnp.pad(x, ((1, 2), (0, 1)), constant_values=-3.0), (XT,), 1,
         id="pad-const-value"),
    case(lambda x: lax.pad(x, 0.5, ((1, -1, 1), (-2, 1, 2))), (X,), id="lax.pad-interior-neg"),
    case(lambda x, c: lax.pad(x, c, ((0, 1, 1), (1, 0, 0))), (X, np.arange(B, dtype=np.float32)),
         id="lax.pad-batched-value"),
    case(lambda x, c: jnp.pad(x, 1, constant_values=c), (W, np.arange(B, dtype=np.float32)),
         (None, 0),
         id="pad-batched-value-only"),
    case(lambda x: jnp.flip(x, 1), (X,), id="flip"),
    case(lambda x: jnp.flip(x), (XT,), 1, id="flip-all"),
    case(lambda x: jnp.roll(x, 2, axis=1), (X,), id="roll"),
    case(lambda x: jnp.roll(x, -3), (XL,), -1, id="roll-flat"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", SLICE)
def test_slice_concat_pad(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


# --------------------------------------------------------------------------
# Reductions, cumulative ops, sort
# --------------------------------------------------------------------------

XB = X > 0.3
REDUCE = [
    case(jnp.sum, (X,), id="sum-all"),
    case(lambda x: jnp.sum(x, axis=0), (XT,), 1, id="sum-ax0-in1"),
    case(lambda x: jnp.sum(x, axis=-1, keepdims=True), (X,), id="sum-keepdims"),
    case(lambda x: jnp.mean(x, axis=(0, 1)), (XL,), -1, id="mean-both"),
    case(lambda x: jnp.max(x, axis=1), (X,), 0, 1, id="max-out1"),
    case(lambda x: jnp.min(x, axis=0), (X,), id="min"),
    case(lambda x: jnp.prod(x, axis=1), (X,), id="prod", tol=1e-4),
    case(lambda x: jnp.argmax(x, axis=1), (X,), id="argmax"),
    case(lambda x: jnp.argmin(x, axis=0), (XT,), 1, id="argmin-ax1"),
    case(jnp.argmax, (XL,), -1, id="argmax-flat"),
    case(lambda b: jnp.all(b, axis=0), (XB,), id="all"),
    case(lambda b: jnp.any(b, axis=1), (XB,), id="any"),
    case(lambda b: jnp.any(b), (XB,), id="any-all-axes"),
    case(lambda x: jnp.cumsum(x, axis=0), (X,), id="cumsum-ax0"),
    case(lambda x: jnp.cumsum(x, axis=1), (XT,), 1, id="cumsum-ax1-in1"),
    case(lambda x: jnp.cumprod(x, axis=1), (X,), id="cumprod", tol=1e-4),
    case(lambda x: lax.cummax(x, axis=0, reverse=True), (X,), id="cummax-reverse"),
    case(lambda x: jnp.sort(x), (X,), id="sort-last"),
    case(lambda x: jnp.sort(x, axis=0), (XL,), -1, id="sort-ax0-in-1"),
    case(lambda x: jnp.argsort(x, axis=-1), (X,), id="argsort"),
    case(lambda x: jnp.argsort(x, axis=0), (XT,), 1, id="argsort-ax0"),
    case(lambda x, y: lax.sort((x, y), dimension=0, num_keys=1), (X, Y),
         id="lax.sort-multi-operand"),
    case(lambda x: lax.top_k(x, 2), (X,), id="top_k"),
    case(lambda x: lax.cumsum(x, axis=1, reverse=True), (XT,), 1, id="cumsum-reverse"),
    case(lambda i: jnp.sum(i, axis=0) + jnp.max(i), (_r((B, 4, 5), 27, np.int32, -9, 9),),
         id="int-reductions"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", REDUCE)
def test_reductions_cumulative_sort(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


# --------------------------------------------------------------------------
# Contractions
# --------------------------------------------------------------------------

M = _r((B, 5, 2), 9)
K3 = _r((B, 2, 4, 5), 10)   # examples with a batch dim inside: (2, 4, 5)
L3 = _r((B, 2, 5, 3), 11)

DOT = [
    case(jnp.matmul, (X, W.T.copy()), (0, None), id="matmul-lhs-batched"),
    case(jnp.matmul, (W, M), (None, 0), id="matmul-rhs-batched"),
    case(jnp.matmul, (X, M), id="matmul-both"),
    case(lambda a, b: a @ b, (XT, M), (1, 0), 1, id="matmul-ax1-out1"),
    case(jnp.dot, (V, V), id="dot-vec-vec"),
    case(jnp.dot, (X, _r((5,), 12)), (0, None), id="dot-mat-vec"),
    case(jnp.matmul, (K3, L3), id="matmul-inner-batch"),
    case(lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (K3, L3), id="einsum-inner-batch"),
    case(lambda a, b: jnp.einsum("ij,kj->ik", a, b), (X, W), (0, None), id="einsum-unbatched-rhs"),
    case(lambda a, b: jnp.einsum("ij,j->i", a, b), (XL, X[:, 0].T.copy()), (-1, 1),
         id="einsum-mixed-axes"),
    case(lambda a: jnp.einsum("ii->i", a[:, :4]), (X,), id="einsum-diag"),
    case(lambda a, b: jnp.tensordot(a, b, axes=1), (X, M), id="tensordot-1"),
    case(lambda a, b: jnp.tensordot(a, b, axes=([0], [0])), (X, W), (0, None),
         id="tensordot-pairs"),
    case(lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (K3, L3),
         id="dot_general"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", DOT)
def test_contractions(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol * 10)


# --------------------------------------------------------------------------
# Dynamic slicing, gather, scatter
# --------------------------------------------------------------------------

JJ = np.array([4, 0, 2], np.int32)
U = _r((B, 2, 3), 13)
IDXS = np.array([[0, 3, 1], [2, 2, 0], [3, 1, 1]], np.int32)    # (B, 3) gather indices

DYN = [
    case(lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3)), (X, IDX), id="dyn_slice-both"),
    case(lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3)), (W, IDX), (None, 0),
         id="dyn_slice-idx-only"),
    case(lambda x, i: lax.dynamic_slice(x, (i, i), (2, 2)), (X, np.int32(1)), (0, None),
         id="dyn_slice-x-only"),
    case(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)), (XT, IDX, JJ), (1, 0, 0),
         id="dyn_slice-clamped"),
    case(lambda x, i: x[i], (X, IDX), id="traced-int-index"),
    case(lambda x, i: x[:, i], (W, JJ), (None, 0), id="traced-int-index-ax1"),
    case(lambda x, i: x[i], (X, np.array([-1, 2, -4], np.int32)), id="traced-negative-index"),
    case(lambda x, i: x.at[i].add(1.0), (V, np.array([-1, 0, -2], np.int32)),
         id="at-add-negative-index"),
    case(lambda x, i, u: x.at[i].set(u), (V, IDX, np.arange(B, dtype=np.float32)),
         id="at-set-scalar"),
    case(lambda x, i: x.at[i].set(0.0), (W, IDX), (None, 0), id="at-set-unbatched-x"),
    case(lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1)), (X, U, IDX), id="dus-all"),
    case(lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 2)), (W, U, IDX), (None, 0, 0),
         id="dus-clamped-unbatched-x"),
    case(lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)), (X, U[0], 1), (0, None, None),
         id="dus-x-only"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", DYN)
def test_dynamic_slice_update(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


GATHER = [
    case(lambda x, i: x[i], (X, IDXS), id="int-array-both"),
    case(lambda x, i: x[i], (W, IDXS), (None, 0), id="int-array-idx-only"),
    case(lambda x, i: x[i], (X, IDXS[0]), (0, None), id="int-array-x-only"),
    case(lambda x, i: x[:, i], (XT, IDXS), (1, 0), id="int-array-ax1"),
    case(lambda x, i, j: x[i, j], (X, IDXS, IDXS + 1), id="two-int-arrays"),
    case(lambda x, i: jnp.take(x, i, axis=1), (X, IDXS), id="take-ax1"),
    case(lambda x, i: jnp.take(x, i), (X, IDXS * 5), id="take-flat"),
    case(lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=-1), axis=-1), (X,),
         id="take_along_axis"),
    case(lambda x, i: jnp.take_along_axis(x, i, axis=0),
         (X, np.tile(IDXS[:, :, None], (1, 1, 5))[:, :2]),
         id="take_along_axis-ax0"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", GATHER)
def test_gather(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


SCATTER = [
    case(lambda x, i, u: x.at[i].add(u), (V, IDXS, _r((B, 3), 14)), id="add-dup-indices"),
    case(lambda x, i, u: x.at[i].add(u), (P, IDXS, _r((B, 3), 14)), (None, 0, 0),
         id="add-unbatched-x"),
    case(lambda x, i, u: x.at[i].add(u), (V, IDXS[0], 1.0), (0, None, None), id="add-x-only"),
    case(lambda x, i, u: x.at[i].set(u), (X, IDX, _r((B, 5), 15)), id="set-row"),
    case(lambda x, i: x.at[i].set(-1.0), (X, np.array([[0, 1], [3, 3], [2, 0]], np.int32)),
         id="set-array-idx"),
    case(lambda x, i, u: x.at[:, i].add(u), (XT, IDXS, _r((4, 3), 16)), (1, 0, None), id="add-ax1"),
    case(lambda x, i: x.at[i].mul(2.0).at[i].max(0.5), (V, IDXS), id="mul-max"),
    case(lambda x, i: x.at[i].add(1.0), (V, -IDXS - 1), id="add-negative-indices"),
    case(lambda x, i, j, u: x.at[i, j].set(u), (X, IDXS, IDXS + 1, _r((B, 3), 28)),
         id="set-two-int-arrays"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", SCATTER)
def test_scatter(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


# --------------------------------------------------------------------------
# reduce_window
# --------------------------------------------------------------------------

WINDOW = [
    case(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID"), (X,),
         id="sum-valid"),
    case(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 3), (2, 1), "SAME"), (XT,), 1,
         id="max-same-strided"),
    case(lambda x: lax.reduce_window(x, jnp.inf, lax.min, (3,), (1,), "VALID"), (V,), 0, 1,
         id="min-1d"),
    # A per-example init value: it also pads the windows ("SAME").
    case(lambda x, i: lax.reduce_window(x, i, lax.add, (2, 3), (1, 1), "SAME"),
         (X, np.array([0.5, -1.0, 2.0], np.float32)), (0, 0), id="sum-batched-init"),
    case(lambda x, i: lax.reduce_window(x, i, lax.max, (3,), (2,), "SAME"),
         (V, np.array([10.0, -10.0, 0.0], np.float32)), (0, 0), 1, id="max-batched-init"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", WINDOW)
def test_reduce_window(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


# --------------------------------------------------------------------------
# Control flow
# --------------------------------------------------------------------------

NS = np.array([1, 4, 0], np.int32)   # lanes finish at different iterations


def _count_doubling(n, x):
    def cond(c):
        return c[0] < n

    def body(c):
        return c[0] + 1, c[1] * 2.0
    return lax.while_loop(cond, body, (jnp.int32(0), x))


def _while_data_dependent(x):
    # Runs until the sum exceeds 10: a predicate on batched data.
    def cond(c):
        return jnp.sum(c[1]) < 10.0

    def body(c):
        return c[0] + 1, c[1] * 1.5 + 0.25
    return lax.while_loop(cond, body, (0, x))


def _cond(x):
    return lax.cond(jnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v - 1.0, x)


def _scan(c0, xs):
    def step(c, x):
        c = c * 0.5 + x
        return c, jnp.sum(c) * x
    return lax.scan(step, c0, xs)


CONTROL = [
    case(_count_doubling, (NS, np.float32(1.5)), (0, None), id="while-batched-pred"),
    case(_count_doubling, (NS, np.arange(B, dtype=np.float32)), id="while-batched-pred-and-carry"),
    case(_count_doubling, (np.int32(3), V), (None, 0), id="while-unbatched-pred"),
    case(_while_data_dependent, (np.abs(V),), id="while-data-dependent"),
    case(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x + i, x), (V,), id="fori_loop"),
    case(lambda n, x: lax.fori_loop(0, n, lambda i, c: c + x, x), (NS, V), id="fori-batched-bound"),
    case(_cond, (V,), id="cond-batched-pred"),
    case(_cond, (V.T.copy(),), 1, id="cond-batched-pred-ax1"),
    case(lambda p, x: lax.cond(p > 0, lambda: x + 1.0, lambda: x * 3.0), (V[:, 0], P), (0, None),
         id="cond-pred-only-closure"),
    case(lambda p, x: lax.cond(p, lambda v: v + 1.0, lambda v: v * 3.0, x), (True, V), (None, 0),
         id="cond-unbatched-pred"),
    case(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * 2.0], x),
         (np.array([2, 0, 1], np.int32), V), id="switch-batched-index"),
    case(_scan, (V, _r((6, 4), 17)), (0, None), id="scan-batched-carry"),
    case(_scan, (V, _r((B, 6, 4), 17)), id="scan-both"),
    case(_scan, (P, _r((6, B, 4), 18)), (None, 1), (0, 1), id="scan-xs-ax1-out1"),
    case(lambda x: lax.scan(lambda c, _: (c + 1.0, c * 2.0), x, None, length=4), (V,),
         id="scan-no-xs"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", CONTROL)
def test_control_flow(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, tol)


def test_while_lanes_finish_at_different_iterations():
    n, x = jax.vmap(_count_doubling, in_axes=(0, None))(NS, np.float32(1.0))
    np.testing.assert_array_equal(n, NS)
    np.testing.assert_array_equal(x, 2.0 ** NS.astype(np.float32))


# --------------------------------------------------------------------------
# Random
# --------------------------------------------------------------------------


def test_random_uniform_batch_of_keys():
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    got = jax.vmap(lambda k: jax.random.uniform(k, (3,)))(keys)
    want = np.stack([np.asarray(jax.random.uniform(k, (3,))) for k in keys])
    np.testing.assert_array_equal(np.asarray(got), want)


def test_random_normal_split_and_fold_in():
    keys = jax.random.split(jax.random.PRNGKey(1), B)

    def f(k, d):
        k1, k2 = jax.random.split(k)
        k3 = jax.random.fold_in(k2, d)
        return jax.random.normal(k1, (2, 3)), jax.random.randint(k3, (4,), 0, 10)
    check(f, (keys, np.array([0, 5, 7], np.int32)))


def test_random_unbatched_key_batched_data():
    key = jax.random.PRNGKey(2)
    check(lambda k, x: x + jax.random.normal(k, (4,)), (key, V), (None, 0))


# --------------------------------------------------------------------------
# Compositions: nested vmap, jit, grad, jacobians, closures
# --------------------------------------------------------------------------


def test_nested_vmap_outer_product():
    a, b = _r((3,), 19), _r((4,), 20)
    got = jax.vmap(jax.vmap(lambda x, y: x * y, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(got, np.outer(a, b), rtol=1e-6)


def test_nested_vmap_axes():
    def f(x, w):
        return jnp.sum(x * w, axis=-1)
    inner = jax.vmap(f, in_axes=(1, None), out_axes=0)
    got = jax.vmap(inner, in_axes=(0, None), out_axes=1)(_r((B, 5, 4, 2), 21), _r((2,), 22))
    x, w = _r((B, 5, 4, 2), 21), _r((2,), 22)
    want = np.stack([np.stack([(x[b][:, j] * w).sum(-1) for j in range(4)]) for b in range(B)], 1)
    assert np.shape(got) == (4, B, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_vmap_of_jit_and_jit_of_vmap():
    def f(x, w):
        return jnp.tanh(x @ w.T)
    a = jax.vmap(jax.jit(f), in_axes=(0, None))(X, W)
    b = jax.jit(jax.vmap(f, in_axes=(0, None)))(X, W)
    want = loop_ref(f, (0, None), 0, (X, W))
    np.testing.assert_allclose(a, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-5)


def _loss(w, x, y):
    return jnp.sum((jnp.tanh(x @ w) - y) ** 2)


WG = _r((5, 2), 23)
XG = _r((B, 4, 5), 24)
YG = _r((B, 4, 2), 25)


def test_per_example_grads():
    got = jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0))(WG, XG, YG)
    want = np.stack([np.asarray(jax.grad(_loss)(WG, XG[i], YG[i])) for i in range(B)])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_per_example_grads_wrt_batched_arg():
    g = jax.vmap(jax.grad(_loss, argnums=1), in_axes=(None, 0, 0))(WG, XG, YG)
    want = np.stack([np.asarray(jax.grad(_loss, argnums=1)(WG, XG[i], YG[i])) for i in range(B)])
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


def test_grad_of_vmap():
    def total(w):
        return jnp.sum(jax.vmap(_loss, in_axes=(None, 0, 0))(w, XG, YG))
    got = jax.grad(total)(WG)
    want = sum(np.asarray(jax.grad(_loss)(WG, XG[i], YG[i])) for i in range(B))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_jacfwd_jacrev_of_vmap():
    def f(v):
        return jax.vmap(lambda r: jnp.sin(r) * jnp.sum(r ** 2))(v)
    v = V
    per = [np.asarray(jax.jacfwd(lambda r: jnp.sin(r) * jnp.sum(r ** 2))(v[i])) for i in range(B)]
    want = np.zeros((B, 4, B, 4), np.float32)
    for i in range(B):
        want[i, :, i, :] = per[i]
    np.testing.assert_allclose(jax.jacfwd(f)(v), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jax.jacrev(f)(v), want, rtol=1e-5, atol=1e-5)


def test_vmap_of_jacobians():
    def g(r):
        return jnp.sin(r) * jnp.sum(r ** 2)
    check(jax.jacfwd(g), (V,))
    check(jax.jacrev(g), (V.T.copy(),), 1, 1)


def test_closure_over_unbatched_outer_value():
    w = jnp.asarray(W)

    def f(x):
        return x * w + jnp.sum(w)
    check(f, (X,))


def test_closure_over_batched_outer_value():
    # The inner vmap closes over the outer vmap's batched tracer.
    def outer(x):
        return jax.vmap(lambda p: x * p + jnp.sum(x))(jnp.asarray(P))
    check(outer, (V,))


def test_closure_inside_jit():
    @jax.jit
    def g(xs, w):
        return jax.vmap(lambda x: jnp.dot(x, w))(xs)
    np.testing.assert_allclose(g(X, _r((5,), 26)), X @ _r((5,), 26), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_error_inconsistent_sizes():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        jax.vmap(lambda a, b: a + b)(np.ones((3, 2)), np.ones((4, 2)))


def test_error_inconsistent_axis_size():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        jax.vmap(lambda a: a, axis_size=4)(np.ones((3, 2)))


def test_error_in_axes_out_of_range():
    with pytest.raises(ValueError, match="axis 2"):
        jax.vmap(jnp.sin, in_axes=2)(np.ones((3, 2)))
    with pytest.raises(ValueError):
        jax.vmap(jnp.sin, in_axes=-3)(np.ones((3, 2)))
    with pytest.raises(ValueError):
        jax.vmap(jnp.sin)(np.float32(1.0))


def test_error_in_axes_tuple_length():
    with pytest.raises(ValueError, match="len\\(in_axes\\)"):
        jax.vmap(lambda a, b: a + b, in_axes=(0,))(np.ones(3), np.ones(3))


def test_error_all_none_without_axis_size():
    with pytest.raises(ValueError):
        jax.vmap(lambda a: a, in_axes=None)(np.ones(3))


def test_error_out_axes_not_prefix():
    with pytest.raises(ValueError):
        jax.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(np.ones(3))


def test_error_in_axes_bad_type():
    with pytest.raises(TypeError):
        jax.vmap(jnp.sin, in_axes="0")(np.ones(3))


# --------------------------------------------------------------------------
# Convolution, lax.map / associative_scan, custom rules, checkpoint
# --------------------------------------------------------------------------

IMG = _r((B, 2, 6, 6), 29)    # examples: (C=2, H, W) -> a batch of 1 image inside
KER = _r((B, 3, 2, 3, 3), 30)  # examples: (O=3, I=2, kh, kw)


def _conv(img, ker):
    return lax.conv_general_dilated(img[None], ker, (1, 1), "SAME")[0]


CONV = [
    case(_conv, (IMG, KER[0]), (0, None), id="conv-lhs-batched"),
    case(_conv, (IMG[0], KER), (None, 0), id="conv-rhs-batched"),
    case(_conv, (IMG, KER), id="conv-both"),
    case(lambda i, k: lax.conv_general_dilated(i[None], k, (2, 1), "VALID", rhs_dilation=(1, 2))[0],
         (np.ascontiguousarray(np.moveaxis(IMG, 0, 1)), KER), (1, 0), 1,
         id="conv-strided-dilated-ax1"),
]


@pytest.mark.parametrize("f,args,in_axes,out_axes,axis_size,tol", CONV)
def test_convolution(f, args, in_axes, out_axes, axis_size, tol):
    _run(f, args, in_axes, out_axes, axis_size, 1e-4)


def test_lax_map_and_associative_scan():
    check(lambda x: lax.map(lambda r: jnp.sum(r ** 2), x), (X,))
    check(lambda x: lax.associative_scan(jnp.add, x, axis=1), (XT,), 1)


@jax.custom_jvp
def _softclip(x):
    return jnp.tanh(x) * 2.0


@_softclip.defjvp
def _softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # (not `_softclip(x)`: a custom_jvp calling itself in its own rule recurses
    # in ember today, independently of vmap)
    return jnp.tanh(x) * 2.0, 2.0 * (1 - jnp.tanh(x) ** 2) * t


@jax.custom_vjp
def _clipgrad(x):
    return jnp.sin(x)


def _clipgrad_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def _clipgrad_bwd(c, g):
    return (jnp.clip(c * g, -0.5, 0.5),)


_clipgrad.defvjp(_clipgrad_fwd, _clipgrad_bwd)


def test_vmap_custom_jvp_and_custom_vjp():
    check(_softclip, (X,))
    check(_clipgrad, (XT,), 1)
    check(jax.grad(lambda v: jnp.sum(_softclip(v) * _clipgrad(v))), (V,))


def test_grad_of_vmap_custom_vjp():
    got = jax.grad(lambda v: jnp.sum(jax.vmap(_clipgrad)(v) * 3.0))(V)
    np.testing.assert_allclose(got, np.clip(np.cos(V) * 3.0, -0.5, 0.5), rtol=1e-5, atol=1e-6)


def test_vmap_checkpoint_and_hessian():
    def g(r):
        return jnp.sum(jnp.sin(r) * r ** 2)
    check(jax.grad(jax.checkpoint(g)), (V,))
    check(jax.hessian(g), (V,), tol=1e-4)


def test_vmap_of_jvp_and_vjp():
    def g(r):
        return jnp.sin(r) * jnp.sum(r)
    check(lambda x, t: jax.jvp(g, (x,), (t,)), (V, V * 0.5 + 1))
    check(lambda x, ct: jax.vjp(g, x)[1](ct), (V, V * 2.0))


def test_triple_nested_vmap_with_grad():
    def f(a, b):
        return jnp.sin(a) * b
    g = jax.vmap(jax.vmap(jax.vmap(jax.grad(f), (0, None)), (None, 0)), (0, 0))
    a, b = _r((2, 3), 31), _r((2, 4), 32)
    want = np.cos(a)[:, None, :] * b[:, :, None]
    np.testing.assert_allclose(g(a, b), want, rtol=1e-5, atol=1e-6)


def test_error_out_axes_none_for_mapped_output():
    with pytest.raises(ValueError, match="mapped output but out_axes is None"):
        jax.vmap(lambda x: x * 2.0, out_axes=None)(V)
    with pytest.raises(ValueError, match="mapped output but out_axes is None"):
        jax.vmap(lambda x, w: (w, lax.cond(w[0] > 0, lambda: w * x[0], lambda: w)),
                 in_axes=(0, None), out_axes=None)(V, P)
    with pytest.raises(ValueError, match="mapped output but out_axes is None"):
        jax.jit(jax.vmap(lambda x, w: w + x, in_axes=(0, None), out_axes=None))(V, P)


def test_out_axes_none_for_unmapped_output_inside_jit_and_nested_vmap():
    got = jax.jit(jax.vmap(lambda x, w: (x, w + 1.0), in_axes=(0, None), out_axes=(0, None)))(V, P)
    np.testing.assert_allclose(got[1], P + 1.0)
    got = jax.vmap(lambda y: jax.vmap(lambda x: y * 2.0, out_axes=None)(V))(P)
    np.testing.assert_allclose(got, P * 2.0)


def test_error_out_axes_out_of_range():
    with pytest.raises(ValueError, match="out of bounds"):
        jax.vmap(lambda x: x * 2.0, out_axes=2)(V)
    with pytest.raises(ValueError, match="out of bounds"):
        jax.vmap(lambda x: x * 2.0, out_axes=-3)(V)


def test_vmap_of_a_loop_calling_a_closure_converted_function():
    # The loop body calls a private function (closure_convert's): vmap
    # batches the call (a call of the callee's batched clone).
    def f(x, w):
        def g(y):
            return jnp.sin(y) * w

        gc, consts = jax.closure_convert(g, x)
        return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, gc(c[1], *consts)),
                                  (0, x))[1]

    x, w = np.arange(3.0, dtype=np.float32), np.full(3, 2.0, np.float32)
    want = x.copy()
    for _ in range(3):
        want = np.sin(want) * w
    np.testing.assert_allclose(np.asarray(jax.vmap(f)(x, w)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(f))(x, w)), want, rtol=1e-6)


def test_values_in_a_vmap_body_print_as_jax_prints(capsys):
    """JAX's transformations guide: inside vmap a value computed from a
    mapped argument prints as a VmapTracer with its per-example and batched
    types; others keep the tracer of the trace they are in."""
    def f(x):
        print("x =", x)
        print("typeof =", jax.typeof(x))
        print(x * 2, jnp.ones(2) + 1)
        return x * 2

    jax.vmap(f)(jnp.arange(3))
    assert capsys.readouterr().out.splitlines() == [
        "x = VmapTracer(aval=int32[], batched=int32[3])", "typeof = int32[]",
        "VmapTracer(aval=int32[], batched=int32[3]) JitTracer(float32[2])"]
    jax.jit(f)(1.0)
    assert capsys.readouterr().out.splitlines()[0] == "x = JitTracer(~float32[])"


def test_lax_map_batch_size():
    # JAX's lax.map(batch_size=): groups of batch_size elements through a
    # scan of a vmap, the rest through one more vmap (its docstring's
    # example traces f twice for 10 elements in groups of 3); 0, or a size
    # past the axis, is one vmap.
    x = jnp.arange(10 * 3 * 4, dtype=jnp.float32).reshape(10, 3, 4)
    traced = []

    def f(v):
        traced.append(v.shape)
        return {"a": v + 1, "b": jnp.sum(v)}

    want = np.asarray(x) + 1
    for bs, n_traces in [(None, 1), (0, 1), (1, 1), (3, 2), (5, 1), (10, 1), (20, 1)]:
        traced.clear()
        y = lax.map(f, x, batch_size=bs)
        assert traced == [(3, 4)] * n_traces, bs
        np.testing.assert_array_equal(np.asarray(y["a"]), want)
        np.testing.assert_allclose(np.asarray(y["b"]), np.asarray(x).sum((1, 2)), rtol=1e-6)
    g = jax.grad(lambda x: lax.map(jnp.sin, x, batch_size=4).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(np.asarray(x)), rtol=1e-6)
    with pytest.raises(ValueError, match="batch_size must be a non-negative integer"):
        lax.map(f, x, batch_size=-1)
