"""`ember.experimental.sparse`: BCOO/BCSR arrays, their operations, `sparsify`
and sparse-aware derivatives, against JAX 0.10.2's recorded output, NumPy and
finite differences."""

import functools
import itertools

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.experimental import sparse

import helpers


def test_prints_what_jax_prints():
    # Where Ember differs on purpose (each gives a right answer where JAX
    # 0.10.2 raises; README #15): a dense array times a BCSR array (JAX's
    # BCSR has no such rule), sparse.eye for BCSR (a KeyError in JAX), a scan
    # over xs closing over a sparse array (JAX: no sparse rule), the gradient
    # through a CSC product (an AttributeError in JAX). And one layout: Ember
    # traces `x[:, idx, 2]` as a slice then a gather, JAX as one gather, so
    # the same values come in another layout (n_batch=2, nse=1; JAX's
    # n_batch=0, nse=8).
    helpers.assert_prints_recorded(
        "sparse", "bcoo",
        differing={"bcsr rmatvec", "bcsr eye", "sparsify scan", "CSC grad", "index 3d"})


def _random(shape, density, seed):
    rng = np.random.RandomState(seed)
    a = rng.randn(*shape).astype(np.float32)
    a[rng.rand(*shape) > density] = 0
    return a


LAYOUTS = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0)]


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_fromdense_todense_round_trip(n_batch, n_dense):
    a = _random((3, 4, 5), 0.4, 1)
    m = sparse.BCOO.fromdense(a, n_batch=n_batch, n_dense=n_dense)
    assert (m.n_batch, m.n_dense, m.n_sparse) == (n_batch, n_dense, 3 - n_batch - n_dense)
    np.testing.assert_array_equal(np.asarray(m.todense()), a)
    # more stored elements than needed: out-of-bounds padding
    m2 = sparse.BCOO.fromdense(a, n_batch=n_batch, n_dense=n_dense, nse=m.nse + 3)
    np.testing.assert_array_equal(np.asarray(m2.todense()), a)
    np.testing.assert_array_equal(np.asarray(ember.jit(lambda m: m.todense())(m2)), a)


@pytest.mark.parametrize("src,dst", list(itertools.product(LAYOUTS, LAYOUTS)))
def test_update_layout_keeps_the_array(src, dst):
    a = _random((3, 4, 5), 0.4, 2)
    m = sparse.BCOO.fromdense(a, n_batch=src[0], n_dense=src[1])
    out = m.update_layout(n_batch=dst[0], n_dense=dst[1], on_inefficient=None)
    assert (out.n_batch, out.n_dense) == dst
    np.testing.assert_array_equal(np.asarray(out.todense()), a)


DOTS = [
    ((3, 4, 5), (5, 2), (((2,), (0,)), ((), ()))),
    ((3, 4, 5), (4, 2), (((1,), (0,)), ((), ()))),
    ((3, 4, 5), (4, 5), (((1, 2), (0, 1)), ((), ()))),
    ((3, 4, 5), (3, 5, 2), (((2,), (1,)), ((0,), (0,)))),
    ((3, 4, 5), (3, 4), (((0, 1), (0, 1)), ((), ()))),
    ((3, 4, 5), (2, 4, 3), (((1,), (1,)), ((0,), (2,)))),
]


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
@pytest.mark.parametrize("lhs_shape,rhs_shape,dims", DOTS)
def test_dot_general_matches_numpy(n_batch, n_dense, lhs_shape, rhs_shape, dims):
    import ember.lax as lax

    a = _random(lhs_shape, 0.5, 3)
    b = np.random.RandomState(4).randn(*rhs_shape).astype(np.float32)
    m = sparse.BCOO.fromdense(a, n_batch=n_batch, n_dense=n_dense)
    want = np.asarray(lax.dot_general(jnp.asarray(a), jnp.asarray(b), dims))
    (lc, _), (lb, _) = dims
    if any(d >= m.n_batch + m.n_sparse for d in lc) or any(d >= m.n_batch for d in lb):
        with pytest.raises(NotImplementedError):
            sparse.bcoo_dot_general(m, b, dimension_numbers=dims)
        return
    got = sparse.bcoo_dot_general(m, b, dimension_numbers=dims)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    got = ember.jit(functools.partial(sparse.bcoo_dot_general, dimension_numbers=dims))(m, b)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_dense_times_sparse_and_sparse_times_sparse():
    a = _random((4, 6), 0.4, 5)
    b = _random((6, 3), 0.4, 6)
    x = np.random.RandomState(7).randn(2, 4).astype(np.float32)
    A, B = sparse.BCOO.fromdense(a), sparse.BCOO.fromdense(b)
    np.testing.assert_allclose(np.asarray(x @ A), x @ a, rtol=1e-5, atol=1e-6)
    prod = A @ B
    assert isinstance(prod, sparse.BCOO)
    np.testing.assert_allclose(np.asarray(prod.todense()), a @ b, rtol=1e-5, atol=1e-6)


SPSP_DOTS = [
    # (lhs shape, lhs n_batch, rhs shape, rhs n_batch, dimension numbers)
    ((3, 4, 5), 1, (3, 5, 2), 1, (((2,), (1,)), ((0,), (0,)))),
    ((3, 4, 5), 1, (2, 5), 0, (((2,), (1,)), ((), ()))),
    ((5,), 0, (2, 5, 3), 1, (((0,), (1,)), ((), ()))),
    ((2, 3, 4, 5), 2, (2, 5, 3), 1, (((3,), (1,)), ((0,), (0,)))),
    ((2, 3, 4, 5), 2, (3, 2, 5), 2, (((3,), (2,)), ((1, 0), (0, 1)))),
    ((3, 4, 5), 2, (4, 5, 2), 1, (((2,), (1,)), ((1,), (0,)))),
]


@pytest.mark.parametrize("lhs_shape,lnb,rhs_shape,rnb,dims", SPSP_DOTS)
def test_sparse_times_sparse_with_batch_dimensions(lhs_shape, lnb, rhs_shape, rnb, dims):
    """Products of two BCOO arrays with batch dimensions: lax.dot_general's
    values, in JAX's layout (batch dimensions: the product's, then each
    operand's others), also under jit; JAX's errors otherwise."""
    import ember.lax as lax

    a, b = _random(lhs_shape, 0.5, 11), _random(rhs_shape, 0.5, 12)
    want = np.asarray(lax.dot_general(jnp.asarray(a), jnp.asarray(b), dims))
    A = sparse.BCOO.fromdense(a, n_batch=lnb)
    B = sparse.BCOO.fromdense(b, n_batch=rnb)
    for f in (sparse.bcoo_dot_general,
              ember.jit(sparse.bcoo_dot_general, static_argnames="dimension_numbers")):
        got = f(A, B, dimension_numbers=dims)
        assert isinstance(got, sparse.BCOO)
        assert got.n_batch == lnb + rnb - len(dims[1][0])
        np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="cannot have unused batch dims on rhs"):
        sparse.bcoo_dot_general(sparse.BCOO.fromdense(_random((4, 5), 0.5, 13)),
                                sparse.BCOO.fromdense(_random((2, 5, 3), 0.5, 14), n_batch=1),
                                dimension_numbers=(((1,), (1,)), ((), ())))


def test_sum_duplicates_and_sort_match_a_dense_scatter():
    rng = np.random.RandomState(8)
    idx = rng.randint(0, 4, size=(30, 2)).astype(np.int32)
    idx[::7] = 4  # out-of-bounds padding
    data = rng.randn(30).astype(np.float32)
    dense = np.zeros((4, 4), np.float32)
    for (i, j), d in zip(idx, data):
        if i < 4 and j < 4:
            dense[i, j] += d
    m = sparse.BCOO((data, idx), shape=(4, 4))
    s = m.sum_duplicates(remove_zeros=False)
    np.testing.assert_allclose(np.asarray(s.todense()), dense, rtol=1e-5, atol=1e-6)
    rows = np.asarray(s.indices)
    assert len({tuple(r) for r in rows}) == len(rows)
    assert (np.diff(rows[:, 0] * 4 + rows[:, 1]) > 0).all()
    o = m.sort_indices()
    keys = np.asarray(o.indices)[:, 0] * 5 + np.asarray(o.indices)[:, 1]
    assert (np.diff(keys) >= 0).all()
    np.testing.assert_allclose(np.asarray(o.todense()), dense, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_shape_operations_match_dense(n_batch, n_dense):
    a = _random((3, 4, 5), 0.5, 9)
    m = sparse.BCOO.fromdense(a, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(
        np.asarray(sparse.bcoo_slice(m, start_indices=(1, 0, 1), limit_indices=(3, 4, 5),
                                     strides=(1, 2, 2)).todense()), a[1:3, 0:4:2, 1:5:2])
    np.testing.assert_array_equal(
        np.asarray(sparse.bcoo_dynamic_slice(m, (1, 2, 0), (2, 2, 3)).todense()),
        a[1:3, 2:4, 0:3])
    np.testing.assert_array_equal(np.asarray(sparse.bcoo_rev(m, (0, 2)).todense()),
                                  a[::-1, :, ::-1])
    for axes in [(0,), (1,), (2,), (0, 2), (0, 1, 2)]:
        np.testing.assert_allclose(
            np.asarray(sparse.bcoo_reduce_sum(m, axes=axes).todense()), a.sum(axes),
            rtol=1e-5, atol=1e-5)
    for dim in range(3):
        np.testing.assert_array_equal(
            np.asarray(sparse.bcoo_concatenate([m, m], dimension=dim).todense()),
            np.concatenate([a, a], axis=dim))
    sparse_perm = [n_batch + k for k in range(3 - n_batch - n_dense)][::-1]
    perm = list(range(n_batch)) + sparse_perm + list(range(3 - n_dense, 3))
    np.testing.assert_array_equal(np.asarray(m.transpose(perm).todense()),
                                  a.transpose(perm))


def test_elementwise_through_sparsify():
    a = _random((4, 5), 0.5, 10)
    m = sparse.BCOO.fromdense(a)
    d = np.random.RandomState(11).randn(4, 5).astype(np.float32)
    f = sparse.sparsify(lambda m, d: jnp.sin(m) * d + m * 2 - (-m))
    out = f(m, d)
    assert isinstance(out, sparse.BCOO)
    np.testing.assert_allclose(np.asarray(out.todense()), np.sin(a) * d + a * 2 + a,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(sparse.sparsify(jnp.sum)(m)), a.sum(), rtol=1e-5)


def test_gradients_match_finite_differences():
    a = _random((4, 5), 0.5, 12)
    m = sparse.BCOO.fromdense(a)
    x = np.random.RandomState(13).randn(5).astype(np.float64).astype(np.float32)

    def loss(m, x):
        return jnp.sum(jnp.tanh(m @ x) ** 2)

    g = sparse.grad(loss)(m, x)
    assert isinstance(g, sparse.BCOO)
    data = np.asarray(m.data, np.float64)
    eps = 1e-3
    for k in range(m.nse):
        e = np.zeros_like(data)
        e[k] = eps
        up = float(loss(sparse.BCOO((jnp.asarray(data + e, np.float32), m.indices),
                                    shape=m.shape), x))
        dn = float(loss(sparse.BCOO((jnp.asarray(data - e, np.float32), m.indices),
                                    shape=m.shape), x))
        assert abs((up - dn) / (2 * eps) - float(g.data[k])) < 2e-2
    gx = ember.grad(loss, argnums=1)(m, x)
    gx_dense = ember.grad(lambda x: jnp.sum(jnp.tanh(jnp.asarray(a) @ x) ** 2))(x)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(gx_dense), rtol=1e-5, atol=1e-6)


def test_vmap_maps_batch_dimensions():
    a = _random((3, 4, 5), 0.5, 14)
    m = sparse.BCOO.fromdense(a, n_batch=1)
    x = np.ones((5,), np.float32)
    out = ember.vmap(lambda m: m @ x)(m)
    np.testing.assert_allclose(np.asarray(out), a @ x, rtol=1e-5, atol=1e-6)
    # a BCOO result gets the mapped dimension as a batch dimension
    b = ember.vmap(lambda r: sparse.BCOO.fromdense(r, nse=20))(jnp.asarray(a))
    assert b.shape == (3, 4, 5) and b.n_batch == 1
    np.testing.assert_array_equal(np.asarray(b.todense()), a)
    with pytest.raises(ValueError, match="must correspond to a batch dimension"):
        ember.vmap(lambda m: m.todense())(sparse.BCOO.fromdense(a))


def test_bcsr_round_trip_and_products():
    a = _random((5, 6), 0.4, 15)
    m = sparse.BCSR.fromdense(a)
    np.testing.assert_array_equal(np.asarray(m.todense()), a)
    np.testing.assert_array_equal(np.asarray(m.indptr),
                                  np.concatenate([[0], np.cumsum((a != 0).sum(1))]))
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(m @ x), a @ x, rtol=1e-5)
    b = sparse.BCSR.fromdense(_random((2, 5, 6), 0.4, 16), n_batch=1)
    np.testing.assert_array_equal(np.asarray(b.todense()), _random((2, 5, 6), 0.4, 16))


def test_errors_are_jax_errors():
    m = sparse.BCOO.fromdense(np.eye(3, dtype=np.float32))
    with pytest.raises(ember.errors.ConcretizationTypeError, match="nse"):
        ember.jit(lambda x: sparse.BCOO.fromdense(x))(np.eye(3, dtype=np.float32))
    with pytest.raises(NotImplementedError, match="sparse rule for cos"):
        sparse.sparsify(jnp.cos)(m)
    with pytest.raises(NotImplementedError, match="Subtraction between sparse and dense"):
        m - jnp.ones((3, 3))
    with pytest.raises(sparse.SparseEfficiencyError):
        m.update_layout(n_batch=1)
    with pytest.raises(NotImplementedError, match="permute batch axes"):
        sparse.BCOO.fromdense(np.ones((2, 3, 4), np.float32), n_batch=1).transpose((1, 0, 2))
    with pytest.raises(ValueError, match="shape mismatch"):
        sparse.bcoo_extract(m, jnp.ones((2, 2)))


def test_logistic_regression_of_jax_docs():
    # JAX's sparse module docstring: a BFGS fit whose loss closes over the
    # sparse data (a while_loop using it) gives the dense fit's parameters.
    from sklearn.datasets import make_classification

    from ember.scipy import optimize

    def loss(params, X, y):
        p = 0.5 * (jnp.tanh((jnp.dot(X, params[1:]) + params[0]) / 2) + 1)
        return -jnp.mean(y * jnp.log(p) + (1 - y) * jnp.log(1 - p))

    def fit(X, y):
        return optimize.minimize(functools.partial(loss, X=X, y=y),
                                 x0=jnp.zeros(X.shape[1] + 1), method="BFGS").x

    X, y = make_classification(n_classes=2, random_state=1701)
    dense = np.asarray(fit(X, y))
    sp = np.asarray(sparse.sparsify(fit)(sparse.BCOO.fromdense(X), y))
    np.testing.assert_allclose(sp, dense, atol=5e-3)
    np.testing.assert_allclose(dense[:3], [-0.7298445, 0.29893667, 1.0248291], atol=1e-3)


# -- program fuzzing against NumPy (#21): a chain of random sparse operations on
# a random array in a random layout, its dense form compared with NumPy's
# result of the same chain. `make test` runs a few; `make fuzz`
# (EMBER_FUZZ_EXAMPLES, EMBER_FUZZ_SEED) runs long campaigns.

FUZZ_EXAMPLES = int(__import__("os").environ.get("EMBER_FUZZ_EXAMPLES", "24"))
FUZZ_SEED = int(__import__("os").environ.get("EMBER_FUZZ_SEED", "0"))


def _random_op(rng, m, a):
    """One random operation: (name, on the sparse array, on the NumPy array)."""
    nb, ns, nd = m.n_batch, m.n_sparse, m.n_dense
    choices = ["scalar", "dense_mul", "neg", "sin", "sum", "slice", "rev", "concat",
               "layout", "dups", "sort", "dot", "index", "expand", "dyn_slice", "add"]
    kind = choices[rng.randint(len(choices))]
    if kind == "scalar":
        c = float(rng.randint(-3, 4))
        return kind, lambda m: m * c, lambda a: a * c
    if kind == "dense_mul":
        d = rng.randn(*a.shape).astype(np.float32)
        return kind, lambda m: m * d, lambda a: a * d
    if kind == "neg":
        return kind, lambda m: -m, lambda a: -a
    if kind == "sin":
        return kind, sparse.sparsify(jnp.sin), np.sin
    if kind == "sum" and a.ndim > 1:
        axes = tuple(sorted(rng.choice(a.ndim, rng.randint(1, a.ndim), replace=False)))
        return kind, lambda m: sparse.bcoo_reduce_sum(m, axes=axes), lambda a: a.sum(axes)
    if kind in ("slice", "dyn_slice"):
        start = [int(rng.randint(0, n)) if n else 0 for n in a.shape]
        stop = [int(rng.randint(s, n + 1)) for s, n in zip(start, a.shape)]
        if kind == "dyn_slice":
            sizes = [e - s for s, e in zip(start, stop)]
            return kind, lambda m: sparse.bcoo_dynamic_slice(m, start, sizes), \
                lambda a: a[tuple(slice(s, s + z) for s, z in zip(start, sizes))]
        strides = [int(rng.randint(1, 3)) for _ in a.shape]
        return kind, lambda m: sparse.bcoo_slice(m, start_indices=start, limit_indices=stop,
                                                 strides=strides), \
            lambda a: a[tuple(slice(s, e, st) for s, e, st in zip(start, stop, strides))]
    if kind == "rev":
        dims = tuple(int(d) for d in rng.choice(a.ndim, rng.randint(1, a.ndim + 1), replace=False))
        return kind, lambda m: sparse.bcoo_rev(m, dims), lambda a: np.flip(a, dims)
    if kind == "concat":
        dim = int(rng.randint(a.ndim))
        return kind, lambda m: sparse.bcoo_concatenate([m, m * 2], dimension=dim), \
            lambda a: np.concatenate([a, a * 2], axis=dim)
    if kind == "layout":
        new_nb = int(rng.randint(0, a.ndim + 1))
        new_nd = int(rng.randint(0, a.ndim - new_nb + 1))
        return kind, lambda m: m.update_layout(n_batch=new_nb, n_dense=new_nd,
                                               on_inefficient=None), lambda a: a
    if kind == "dups":
        return kind, lambda m: m.sum_duplicates(nse=m.nse), lambda a: a
    if kind == "sort":
        return kind, lambda m: m.sort_indices(), lambda a: a
    if kind == "dot" and ns:
        k = nb + int(rng.randint(ns))
        w = rng.randn(a.shape[k], 2).astype(np.float32)
        return kind, lambda m: sparse.bcoo_dot_general(
            m, w, dimension_numbers=(((k,), (0,)), ((), ()))), \
            lambda a: np.tensordot(a, w, axes=([k], [0]))
    if kind == "index" and a.shape[0]:
        idx = rng.randint(-a.shape[0], a.shape[0], size=3)
        return kind, lambda m: m[jnp.asarray(idx)], lambda a: a[idx]
    if kind == "expand":
        return kind, sparse.sparsify(lambda x: x[None]), lambda a: a[None]
    if kind == "add":
        other = sparse.BCOO.fromdense(a * 0 + (np.arange(a.size).reshape(a.shape) % 3 == 0),
                                      n_batch=nb, n_dense=nd)
        return kind, lambda m: m + other, \
            lambda a: a + (np.arange(a.size).reshape(a.shape) % 3 == 0)
    return "neg", lambda m: -m, lambda a: -a


@pytest.mark.parametrize("example", range(FUZZ_EXAMPLES))
def test_random_sparse_programs(example):
    rng = np.random.RandomState(FUZZ_SEED * 100_003 + example)
    ndim = int(rng.randint(1, 4))
    shape = tuple(int(n) for n in rng.randint(1, 5, size=ndim))
    a = _random(shape, float(rng.uniform(0.2, 0.9)), int(rng.randint(1 << 30)))
    nb = int(rng.randint(0, ndim + 1))
    nd = int(rng.randint(0, ndim - nb + 1))
    m = sparse.BCOO.fromdense(a, n_batch=nb, n_dense=nd,
                              nse=None if rng.rand() < 0.5 else int(a.size) + 1)
    steps = []
    for _ in range(int(rng.randint(1, 5))):
        name, f_sp, f_np = _random_op(rng, m, a)
        try:
            out = f_sp(m)
        except NotImplementedError:
            continue  # (a layout this operation does not take, as JAX's)
        steps.append(name)
        a = np.asarray(f_np(a), np.float32)
        if not isinstance(out, sparse.BCOO):
            np.testing.assert_allclose(np.asarray(out), a, rtol=1e-4, atol=1e-4,
                                       err_msg=str(steps))
            return
        m = out
        np.testing.assert_allclose(np.asarray(m.todense()), a, rtol=1e-4, atol=1e-4,
                                   err_msg=str(steps))
    # the same array under jit (its buffers in, its dense form out)
    np.testing.assert_allclose(np.asarray(ember.jit(lambda m: m.todense())(m)), a,
                               rtol=1e-4, atol=1e-4, err_msg=str(steps))


def test_functions_that_are_not_zero_preserving_stay_errors():
    m = sparse.BCOO.fromdense(np.array([[0.0, 1.0], [2.0, 0.0]], np.float32))
    for f in (jnp.isfinite, jnp.logical_not, jnp.cos, jnp.exp):
        with pytest.raises(NotImplementedError, match="would result in dense output"):
            sparse.sparsify(f)(m)
    np.testing.assert_array_equal(np.asarray(sparse.sparsify(jnp.floor)(m * 1.5).todense()),
                                  [[0, 1], [3, 0]])
