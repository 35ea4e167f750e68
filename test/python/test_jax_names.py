"""JAX's documented behaviour and names (#15): reprs, out-of-bounds
indexing, non-array inputs, jitted methods, key paths, `make_jaxpr`,
`check_grads`, `linear_transpose`, `lax` extras, the Array API namespace.
Expected texts and values were recorded from JAX 0.10.2."""

from functools import partial

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax, tree_util
from ember.test_util import check_grads


def test_array_repr_shows_dtype_and_weak_type():
    assert repr(jnp.ones(2)) == "Array([1., 1.], dtype=float32)"
    assert repr(jnp.array([1, 2])) == "Array([1, 2], dtype=int32)"
    assert repr(jnp.array(True)) == "Array(True, dtype=bool)"
    assert repr(jnp.float32(1)) == "Array(1., dtype=float32)"
    assert repr(jnp.asarray(1.0)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(jnp.zeros((0,))) == "Array([], shape=(0,), dtype=float32)"
    assert repr(jnp.ones(3, dtype=jnp.bfloat16)) == "Array([1, 1, 1], dtype=bfloat16)"
    assert repr(jnp.ones((2, 3))) == ("Array([[1., 1., 1.],\n"
                                      "       [1., 1., 1.]], dtype=float32)")
    # A dtype that would overflow the last line: JAX sets it off by six
    # spaces on the same line (recorded from JAX 0.10.2).
    x = jnp.array([[0.04970884, 0.09941769, 0.14912653, 0.982551],
                   [0.47355506, -0.23677753, 0.09471101, 0.8430373]])
    assert repr(x) == ("Array([[ 0.04970884,  0.09941769,  0.14912653,  0.982551  ],\n"
                       "       [ 0.47355506, -0.23677753,  0.09471101,  0.8430373 ]],"
                       "      dtype=float32)")


def test_tracer_repr():
    seen = []

    @ember.jit
    def f(x, y):
        seen.append((repr(x), repr(y)))
        return x

    f(jnp.arange(5), 3.0)
    assert seen == [("JitTracer(int32[5])", "JitTracer(~float32[])")]


def test_out_of_bounds_indexing_clamps_and_drops():
    x = jnp.arange(5.0)
    assert float(x[10]) == 4.0 and float(x[-10]) == 0.0
    np.testing.assert_array_equal(np.asarray(x[jnp.array([1, 10])]), [1, 4])
    np.testing.assert_array_equal(np.asarray(x.at[jnp.array([10])].set(100.0)), np.arange(5))
    np.testing.assert_array_equal(np.asarray(x.at[10].set(100.0)), np.arange(5))
    assert float(ember.jit(lambda x, i: x[i])(x, 10)) == 4.0


@pytest.mark.parametrize("call", [
    lambda: jnp.sum([1, 2, 3]), lambda: jnp.mean([1.0, 2.0]), lambda: jnp.maximum([1], 2),
    lambda: jnp.where([True], 1, 2), lambda: jnp.argmax([1, 2]), lambda: jnp.cumsum([1, 2]),
    lambda: jnp.clip([1, 2], 0, 1), lambda: jnp.abs([1]),
    lambda: jnp.percentile(jnp.ones(3), [10, 90]), lambda: jnp.quantile(jnp.ones(3), (0.1,)),
    lambda: jnp.atleast_1d([1.0, 2.0]), lambda: jnp.atleast_2d(1.0, (2.0,)),
    lambda: jnp.atleast_3d([[1]]), lambda: jnp.hstack([[1, 2], [3, 4]]),
    lambda: jnp.vstack(([1], [2])), lambda: jnp.dstack([[1]]),
])
def test_lists_are_not_arrays(call):
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        call()


def test_jitted_method_with_static_self():
    class C:
        def __init__(self):
            self.k = 2.0

        @partial(ember.jit, static_argnums=0)
        def f(self, x):
            return x * self.k

        def __hash__(self):
            return 1

        def __eq__(self, other):
            return True

    assert float(C().f(3.0)) == 6.0


def test_tree_key_paths():
    tree = {"a": [1, (2, 3)], "b": 4}
    pairs, treedef = tree_util.tree_flatten_with_path(tree)
    assert repr(pairs) == (
        "[((DictKey(key='a'), SequenceKey(idx=0)), 1), ((DictKey(key='a'), SequenceKey(idx=1), "
        "SequenceKey(idx=0)), 2), ((DictKey(key='a'), SequenceKey(idx=1), SequenceKey(idx=1)), "
        "3), ((DictKey(key='b'),), 4)]")
    assert treedef == tree_util.tree_structure(tree)
    assert [tree_util.keystr(p) for p, _ in pairs] == ["['a'][0]", "['a'][1][0]",
                                                       "['a'][1][1]", "['b']"]
    assert tree_util.keystr(pairs[1][0], simple=True, separator="/") == "a/1/0"
    assert tree_util.tree_map_with_path(lambda p, v: len(p), {"a": [1, 2]}) == {"a": [2, 2]}
    assert repr(tree_util.tree_leaves_with_path([1, {"x": 2}])) == (
        "[((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='x')), 2)]")

    @partial(tree_util.register_dataclass, data_fields=["w"], meta_fields=["n"])
    class P:
        def __init__(self, w, n):
            self.w, self.n = w, n

    assert tree_util.keystr(tree_util.tree_leaves_with_path(P(1.0, 3))[0][0]) == ".w"


def test_make_jaxpr():
    # JAX's layout: one line when it fits in 80 columns, else one equation
    # per line and long parameter lists broken (JAX 0.10.2's texts).
    j = ember.make_jaxpr(lambda a: jnp.sin(a) * 2.0)(1.0)
    assert str(j) == "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }"
    assert str(ember.make_jaxpr(lambda a: a.sum(0))(jnp.ones((2, 3)))) == (
        "{ lambda ; a:f32[2,3]. let\n    b:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a\n"
        "  in (b,) }")
    assert str(ember.make_jaxpr(lambda a: a > 1.0)(jnp.ones((2, 3)))) == (
        "{ lambda ; a:f32[2,3]. let b:bool[2,3] = gt a 1.0:f32[] in (b,) }")
    w = jnp.ones(3)
    assert str(ember.make_jaxpr(lambda a: a @ w)(jnp.ones((2, 3)))) == (
        "{ lambda a:f32[3]; b:f32[2,3]. let\n    c:f32[2] = dot_general[\n"
        "      dimension_numbers=(([1], [0]), ([], []))\n      preferred_element_type=float32\n"
        "    ] b a\n  in (c,) }")
    assert str(ember.make_jaxpr(lambda a: a.astype(jnp.int32))(jnp.ones((2, 3)))) == (
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:i32[2,3] = convert_element_type[new_dtype=int32 weak_type=False] a\n  in (b,) }")
    assert [a.shape for a in j.in_avals] == [()] and j.out_avals[0].dtype == np.float32
    g = ember.make_jaxpr(ember.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)))(jnp.ones(3))
    assert "tanh" in str(g) and "vjp" not in str(g)  # the derivative, expanded
    k = ember.make_jaxpr(lambda x: x + jnp.array([1.0, 2.0]))(jnp.ones(2))
    np.testing.assert_array_equal(k.consts[0], [1.0, 2.0])
    loop = ember.make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x))(1.0)
    assert "while[" in str(loop) and "trip_count=3" in str(loop)


def test_check_grads():
    check_grads(lambda v: jnp.sin(v) * v, (1.5,), order=2)
    check_grads(lambda a, b: jnp.sum(jnp.tanh(a @ b)),
                (jnp.ones((2, 3)) * 0.3, jnp.ones((3,)) * 0.2), order=2, modes=["rev"])
    wrong = ember.custom_jvp(jnp.sin)
    wrong.defjvp(lambda p, t: (jnp.sin(p[0]), 2.0 * t[0]))
    with pytest.raises(AssertionError):
        check_grads(wrong, (1.0,), order=1)


def test_linear_transpose():
    (ct,) = ember.linear_transpose(lambda v: 2.0 * v, 1.0)(3.0)
    assert float(ct) == 6.0
    a_t, b_t = ember.linear_transpose(lambda a, b: a + 3 * b, jnp.ones(2), jnp.ones(2))(
        jnp.array([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(b_t), [3, 6])
    with pytest.raises(TypeError, match="float or complex"):
        ember.linear_transpose(lambda i: i, jnp.ones(2, jnp.int32))


def test_lax_extras():
    np.testing.assert_allclose(np.asarray(lax.cumlogsumexp(jnp.array([0.0, 1.0, 2.0]))),
                               [0.0, 1.3132617, 2.4076061], rtol=1e-6)
    big = jnp.array([1000.0, 1000.0])
    np.testing.assert_allclose(np.asarray(lax.cumlogsumexp(big)), [1000, 1000 + np.log(2)])
    assert lax.collapse(jnp.ones((2, 3, 4)), 1, 3).shape == (2, 12)
    assert lax.collapse(jnp.ones((2, 3, 4)), 0).shape == (24,)
    assert lax.Precision("highest") is lax.Precision.HIGHEST
    assert repr(lax.Precision.HIGHEST) == "Precision.HIGHEST"
    a = jnp.ones((2, 2))
    np.testing.assert_array_equal(
        np.asarray(jnp.dot(a, a, precision=lax.Precision.HIGHEST)), 2 * np.ones((2, 2)))
    np.testing.assert_array_equal(np.asarray(jnp.digitize(jnp.array([0.2, 6.4, 3.0]),
                                                          jnp.array([0.0, 1.0, 2.5, 4.0]))),
                                  [1, 4, 3])
    np.testing.assert_array_equal(np.asarray(jnp.digitize(jnp.array([0.2, 6.4, 3.0]),
                                                          jnp.array([4.0, 2.5, 1.0, 0.0]))),
                                  np.digitize([0.2, 6.4, 3.0], [4.0, 2.5, 1.0, 0.0]))
    np.testing.assert_array_equal(
        np.asarray(jnp.digitize(jnp.array([1.0, 2.5]), jnp.array([1.0, 2.5]), right=True)),
        np.digitize([1.0, 2.5], [1.0, 2.5], right=True))


def test_array_api_namespace_and_sharding():
    info = jnp.__array_namespace_info__()
    assert info.default_dtypes() == {"real floating": np.dtype("float32"),
                                     "complex floating": np.dtype("complex64"),
                                     "integral": np.dtype("int32"),
                                     "indexing": np.dtype("int32")}
    assert "float64" not in info.dtypes(kind="real floating")
    assert info.devices() == [ember.devices()[0]]
    x = jnp.arange(3.0)
    assert x.__array_namespace__() is jnp
    assert type(x.sharding).__name__ == "SingleDeviceSharding"
    assert x.sharding.device_set == {x.device}


def test_custom_rules_traced_only_when_differentiated():
    traced = []

    @ember.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        traced.append("jvp")
        return jnp.sin(primals[0]), jnp.cos(primals[0]) * tangents[0]

    @ember.custom_vjp
    def g(x):
        return x * 2

    def g_fwd(x):
        traced.append("fwd")
        return x * 2, None

    def g_bwd(res, ct):
        traced.append("bwd")
        return (ct * 2,)

    g.defvjp(g_fwd, g_bwd)
    f(1.0), ember.jit(f)(1.0), ember.vmap(f)(jnp.ones(2))
    g(1.0), ember.jit(g)(1.0), ember.vmap(g)(jnp.ones(2))
    assert traced == []
    assert float(ember.grad(f)(1.0)) == pytest.approx(np.cos(1.0))
    assert float(ember.jit(ember.grad(g))(1.0)) == 2.0
    assert traced.count("jvp") == 1 and "fwd" in traced and "bwd" in traced


def test_histogram_matches_numpy():
    a = np.array([1.0, 2, 2, 3, 10, -1, 4.5], np.float32)
    for kwargs in ({"bins": 3}, {"bins": np.array([0.0, 2, 5, 11])}, {"bins": 4, "range": (0, 4)},
                   {"bins": 5, "density": True}, {"bins": 3, "weights": np.arange(7.0)}):
        got, edges = jnp.histogram(a, **{k: jnp.asarray(v) if isinstance(v, np.ndarray) else v
                                         for k, v in kwargs.items()})
        want, wedges = np.histogram(a, **kwargs)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(edges), wedges, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.histogram_bin_edges(jnp.array([5.0, 5.0]), 2)),
                               [4.5, 5.0, 5.5])
    counts = ember.jit(lambda x: jnp.histogram(x, bins=3, range=(0.0, 3.0))[0])(
        jnp.array([0.5, 1.5, 1.5, 2.9]))
    np.testing.assert_array_equal(np.asarray(counts), [1, 2, 1])


def test_tree_namespace_paths():
    assert ember.tree.map_with_path(lambda p, v: tree_util.keystr(p), {"a": [1]}) == {
        "a": ["['a'][0]"]}
    assert [tree_util.keystr(p) for p, _ in ember.tree.leaves_with_path((1, {"b": 2}))] == [
        "[0]", "[1]['b']"]
    assert ember.tree.flatten_with_path([3])[1] == ember.tree.structure([3])


def test_array_api_names():
    r = jnp.unique_all(jnp.array([3, 1, 3, 2]))
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    np.testing.assert_array_equal(np.asarray(r.inverse_indices), [2, 0, 2, 1])
    np.testing.assert_array_equal(np.asarray(jnp.unique_counts(jnp.array([3, 1, 3])).counts),
                                  [1, 2])
    np.testing.assert_array_equal(
        np.asarray(jnp.unique_inverse(jnp.array([3, 1, 3])).inverse_indices), [1, 0, 1])
    assert [np.asarray(u).tolist() for u in jnp.unstack(jnp.arange(6).reshape(2, 3), axis=1)] == [
        [0, 3], [1, 4], [2, 5]]
    assert jnp.zeros(2, jnp.bool).dtype == np.bool_
    assert int(jnp.bitwise_invert(jnp.array(1))) == -2
    assert int(jnp.bitwise_left_shift(jnp.array(1), 2)) == 4
    assert int(jnp.bitwise_right_shift(jnp.array(8), 2)) == 2
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(np.arange(3.0))), [0, 1, 2])
    stack = jnp.arange(18.0).reshape(2, 3, 3)
    np.testing.assert_array_equal(np.asarray(jnp.linalg.diagonal(stack)),
                                  np.diagonal(np.arange(18.0).reshape(2, 3, 3), axis1=-2, axis2=-1))
    np.testing.assert_array_equal(np.asarray(jnp.linalg.trace(stack)), [12, 39])
    np.testing.assert_array_equal(np.asarray(jnp.linalg.vecdot(jnp.ones((2, 3)), jnp.ones(3))),
                                  [3, 3])
    np.testing.assert_array_equal(np.asarray(jnp.linalg.cross(jnp.array([1.0, 0, 0]),
                                                              jnp.array([0.0, 1, 0]))), [0, 0, 1])
    assert jnp.linalg.outer(jnp.ones(2), jnp.ones(3)).shape == (2, 3)
    assert jnp.linalg.matrix_transpose(stack).shape == (2, 3, 3)


def test_enable_x64_state():
    """`jax.enable_x64`: the option's value, and a context manager that sets
    it for its body and restores it (also when the body raises)."""
    assert ember.enable_x64.value is False
    with ember.enable_x64(True):
        assert ember.enable_x64.value is True
        assert jnp.arange(2).dtype == np.int64
    assert jnp.arange(2).dtype == np.int32
    with pytest.raises(RuntimeError):
        with ember.enable_x64(True):
            raise RuntimeError
    assert ember.config.jax_enable_x64 is False
