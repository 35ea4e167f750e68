"""`jax.experimental.sparse`: BCOO and BCSR arrays, their operations,
`sparsify` and sparse-aware derivatives, under `jit`, `grad` and `vmap`. Run
with IMPORT=jax (in a JAX venv) to record `bcoo.jax.txt` (JAX 0.10.2), with
IMPORT=ember to compare (test_sparse.py)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "numerics"))
from cases import jax, jnp  # noqa: E402
from printing import shower  # noqa: E402

if os.environ["IMPORT"] == "jax":
    from jax.experimental import sparse
else:
    from ember.experimental import sparse


show = shower(jax, 5)


def full(x):
    """A sparse result as its repr, data, indices and dense form."""
    if isinstance(x, sparse.BCOO):
        return [repr(x), x.data, x.indices, x.todense()]
    if isinstance(x, sparse.BCSR):
        return [repr(x), x.data, x.indices, x.indptr, x.todense()]
    return x


M = jnp.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]])
Msp = sparse.BCOO.fromdense(M)
y = jnp.array([3., 6., 5.])
v = jnp.arange(4.0)
rng = np.random.RandomState(0)
A = rng.randn(4, 5, 6).astype(np.float32)
A[rng.rand(4, 5, 6) < 0.6] = 0
A = jnp.asarray(A)
B = jnp.asarray(rng.randn(6, 3).astype(np.float32))

show("fromdense", lambda: full(Msp))
show("props", lambda: [repr((Msp.ndim, Msp.shape, str(Msp.dtype), Msp.nse, Msp.n_batch,
                             Msp.n_sparse, Msp.n_dense))])
show("fromdense nse=6", lambda: full(sparse.BCOO.fromdense(M, nse=6)))
show("fromdense nse=2", lambda: full(sparse.BCOO.fromdense(M, nse=2)))
show("fromdense n_batch=1", lambda: full(sparse.BCOO.fromdense(M, n_batch=1)))
show("fromdense n_dense=1", lambda: full(sparse.BCOO.fromdense(M, n_dense=1)))
show("fromdense 3d n_batch=1", lambda: full(sparse.BCOO.fromdense(A, n_batch=1)))
show("fromdense 3d n_batch=1 n_dense=1", lambda: full(sparse.BCOO.fromdense(A, n_batch=1,
                                                                          n_dense=1)))
show("fromdense int64 index", lambda: full(sparse.BCOO.fromdense(M, index_dtype=jnp.int16)))
show("constructor", lambda: full(sparse.BCOO((jnp.array([1., 3., 5.]),
                                              jnp.array([[0, 0], [1, 1], [2, 2]])),
                                             shape=(3, 3))))
show("duplicates todense", lambda: sparse.BCOO((jnp.array([1., 2., 5.]),
                                                jnp.array([[0, 1], [0, 1], [2, 2]])),
                                               shape=(3, 3)).todense())
show("out of bounds todense", lambda: sparse.BCOO((jnp.array([1., 2.]),
                                                   jnp.array([[0, 1], [3, 0]])),
                                                  shape=(3, 3)).todense())
show("T @ y", lambda: Msp.T @ y)
show("M @ v", lambda: Msp @ v)
show("y @ M", lambda: y @ Msp)
show("M @ B2", lambda: Msp @ jnp.ones((4, 2)))
show("B2 @ M", lambda: jnp.ones((2, 3)) @ Msp)
show("jit(grad) doc", lambda: jax.jit(jax.grad(lambda y: (Msp.T @ y).sum()))(y))
show("sparsify doc", lambda: sparse.sparsify(
    lambda M, v: 2 * jnp.dot(jnp.log1p(M.T), v) + 1)(Msp, y))
show("dot_general 3d", lambda: sparse.bcoo_dot_general(
    sparse.BCOO.fromdense(A), B, dimension_numbers=(((2,), (0,)), ((), ()))))
show("dot_general batched", lambda: sparse.bcoo_dot_general(
    sparse.BCOO.fromdense(A, n_batch=1), jnp.ones((4, 6, 2)),
    dimension_numbers=(((2,), (1,)), ((0,), (0,)))))
show("dot_general contract batch", lambda: sparse.bcoo_dot_general(
    sparse.BCOO.fromdense(A, n_batch=1), jnp.ones((4, 5)),
    dimension_numbers=(((0, 1), (0, 1)), ((), ()))))
show("dot_general n_dense", lambda: sparse.bcoo_dot_general(
    sparse.BCOO.fromdense(A, n_dense=1), jnp.ones((5, 2)),
    dimension_numbers=(((1,), (0,)), ((), ()))))
show("dot sparse sparse", lambda: full(sparse.bcoo_dot_general(
    Msp, Msp.T, dimension_numbers=(((1,), (0,)), ((), ())))))
show("sparse @ sparse", lambda: full(Msp @ Msp.T))
show("transpose", lambda: full(Msp.T))
show("transpose 3d", lambda: full(sparse.BCOO.fromdense(A).transpose((2, 0, 1))))
show("transpose batched", lambda: full(sparse.BCOO.fromdense(A, n_batch=1)
                                       .transpose((0, 2, 1))))
show("transpose bad", lambda: sparse.BCOO.fromdense(A, n_batch=1).transpose((1, 0, 2)))
show("sum", lambda: Msp.sum())
show("sum 0", lambda: full(Msp.sum(0)))
show("sum 1", lambda: full(Msp.sum(1)))
show("reduce_sum batched", lambda: full(sparse.bcoo_reduce_sum(
    sparse.BCOO.fromdense(A, n_batch=1), axes=(0,))))
show("reduce_sum dense", lambda: full(sparse.bcoo_reduce_sum(
    sparse.BCOO.fromdense(A, n_dense=1), axes=(2,))))
show("mul scalar", lambda: full(Msp * 2))
show("rmul scalar", lambda: full(3 * Msp))
show("mul dense", lambda: full(Msp * jnp.arange(12.0).reshape(3, 4)))
show("mul row", lambda: full(Msp * jnp.arange(4.0)))
show("mul sparse", lambda: full(Msp * Msp))
show("multiply_sparse", lambda: full(sparse.bcoo_multiply_sparse(
    Msp, sparse.BCOO.fromdense(jnp.ones((3, 4)).at[0, 1].set(0)))))
show("multiply_dense", lambda: sparse.bcoo_multiply_dense(Msp, jnp.arange(12.0).reshape(3, 4)))
show("div", lambda: full(Msp / 2))
show("neg", lambda: full(-Msp))
show("abs", lambda: full(abs(-Msp)))
show("pow", lambda: full(Msp ** 2))
show("add sparse", lambda: full(Msp + Msp))
show("add other", lambda: full(Msp + sparse.BCOO.fromdense(jnp.eye(3, 4))))
show("add dense", lambda: Msp + jnp.ones((3, 4)))
show("sub sparse", lambda: full(Msp - sparse.BCOO.fromdense(jnp.eye(3, 4))))
show("sub dense", lambda: Msp - jnp.ones((3, 4)))
show("add scalar", lambda: Msp + 1.0)
show("gt", lambda: Msp > 1)
show("sin", lambda: full(sparse.sparsify(jnp.sin)(Msp)))
show("cos", lambda: sparse.sparsify(jnp.cos)(Msp))
show("exp", lambda: sparse.sparsify(jnp.exp)(Msp))
show("sqrt dup", lambda: full(sparse.sparsify(jnp.sqrt)(
    sparse.BCOO((jnp.array([1., 3., 5.]), jnp.array([[0, 1], [0, 1], [2, 2]])), shape=(3, 3)))))
show("astype", lambda: full(Msp.astype(jnp.int32)))
show("reshape", lambda: full(Msp.reshape(2, 6)))
show("reshape flat", lambda: full(Msp.reshape(12)))
show("getitem row", lambda: full(Msp[1]))
show("getitem slice", lambda: full(Msp[:, 1:3]))
show("getitem step", lambda: full(Msp[::2]))
show("iter", lambda: [full(r) for r in Msp])
show("sort_indices", lambda: full(sparse.BCOO((jnp.array([1., 2., 3.]),
                                               jnp.array([[2, 0], [0, 1], [1, 1]])),
                                              shape=(3, 3)).sort_indices()))
dup = sparse.BCOO((jnp.array([1., 2., 0., 4.]), jnp.array([[2, 0], [0, 1], [1, 1], [0, 1]])),
                  shape=(3, 3))
show("sum_duplicates", lambda: full(dup.sum_duplicates()))
show("sum_duplicates keep zeros", lambda: full(dup.sum_duplicates(remove_zeros=False)))
show("sum_duplicates nse=5", lambda: full(dup.sum_duplicates(nse=5)))
show("sum_duplicates nse=1", lambda: full(dup.sum_duplicates(nse=1)))
show("sum_duplicates jit", lambda: full(jax.jit(lambda m: m.sum_duplicates(nse=3))(dup)))
show("update_layout n_batch=1", lambda: full(Msp.update_layout(n_batch=1,
                                                               on_inefficient=None)))
show("update_layout to 0", lambda: full(sparse.BCOO.fromdense(A, n_batch=1, n_dense=1)
                                        .update_layout(n_batch=0, n_dense=0)))
show("update_layout error", lambda: Msp.update_layout(n_batch=1))
show("eye", lambda: full(sparse.eye(3)))
show("eye k", lambda: full(sparse.eye(3, 4, k=1)))
show("eye k neg", lambda: full(sparse.eye(4, 3, k=-2)))
show("empty", lambda: full(sparse.empty((2, 3))))
show("empty nse", lambda: full(sparse.empty((2, 3), nse=2, dtype=jnp.int32)))
show("todense api", lambda: sparse.todense(Msp))
show("todense dense", lambda: sparse.todense(M))
show("extract", lambda: full(sparse.bcoo_extract(Msp, jnp.arange(12.0).reshape(3, 4))))
show("concatenate 0", lambda: full(sparse.bcoo_concatenate([Msp, Msp], dimension=0)))
show("concatenate 1", lambda: full(sparse.bcoo_concatenate([Msp, Msp], dimension=1)))
show("concatenate batch", lambda: full(sparse.bcoo_concatenate(
    [sparse.BCOO.fromdense(M, n_batch=1), sparse.BCOO.fromdense(M[:2], n_batch=1)],
    dimension=0)))
show("broadcast_in_dim", lambda: full(sparse.bcoo_broadcast_in_dim(
    Msp, shape=(2, 3, 4), broadcast_dimensions=(1, 2))))
show("broadcast_in_dim size1", lambda: full(sparse.bcoo_broadcast_in_dim(
    Msp, shape=(3, 1, 4), broadcast_dimensions=(0, 2))))
show("squeeze", lambda: full(sparse.bcoo_squeeze(sparse.BCOO.fromdense(M[None]),
                                                 dimensions=(0,))))
show("rev", lambda: full(sparse.bcoo_rev(Msp, (0,))))
show("slice", lambda: full(sparse.bcoo_slice(Msp, start_indices=(1, 0),
                                             limit_indices=(3, 3))))
show("slice strided", lambda: full(sparse.bcoo_slice(Msp, start_indices=(0, 0),
                                                     limit_indices=(3, 4), strides=(2, 2))))
show("dynamic_slice", lambda: full(jax.jit(lambda m, i: sparse.bcoo_dynamic_slice(
    m, (i, 1), (2, 3)))(Msp, 1)))
show("dynamic_slice clamp", lambda: full(sparse.bcoo_dynamic_slice(Msp, (5, 0), (2, 2))))
show("sparse.grad", lambda: full(sparse.grad(lambda X, y: (X @ y).sum())(Msp, v)))
show("sparse.grad doc", lambda: full(sparse.grad(lambda X, y: X @ y)(
    sparse.BCOO.fromdense(jnp.arange(6.)), jnp.ones(6))))
show("sparse.value_and_grad doc", lambda: [full(x) for x in sparse.value_and_grad(
    lambda X, y: X @ y)(sparse.BCOO.fromdense(jnp.arange(6.)), jnp.ones(6))])
show("sparse.grad argnums", lambda: [full(x) for x in sparse.grad(
    lambda X, y: jnp.sum((X @ y) ** 2), argnums=(0, 1))(Msp, v)])
show("sparse.jacfwd", lambda: full(sparse.jacfwd(lambda X, y: X @ y)(Msp, v)))
show("sparse.jacrev", lambda: full(sparse.jacrev(lambda X, y: X @ y)(Msp, v)))
show("grad dense wrt y", lambda: jax.grad(lambda y: jnp.sum(jnp.sin(Msp @ y)))(v))
show("grad data", lambda: jax.grad(lambda d: (sparse.BCOO((d, Msp.indices), shape=(3, 4))
                                              @ v).sum())(Msp.data))
show("jit fromdense nse", lambda: full(jax.jit(lambda m: sparse.BCOO.fromdense(m, nse=5))(M)))
show("jit fromdense no nse", lambda: jax.jit(lambda m: sparse.BCOO.fromdense(m))(M))
show("jit todense", lambda: jax.jit(lambda m: m.todense())(Msp))
show("jit matmul", lambda: jax.jit(lambda m, x: m @ x)(Msp, v))
show("jit returns bcoo", lambda: full(jax.jit(lambda m: m * 2)(Msp)))
show("vmap matvec", lambda: jax.vmap(lambda x: Msp @ x)(jnp.ones((2, 4))))
show("vmap fromdense", lambda: full(jax.vmap(lambda m: sparse.BCOO.fromdense(m, nse=3))(
    jnp.stack([M, 2 * M]))))
show("vmap over batched bcoo", lambda: jax.vmap(lambda m: m.todense())(
    sparse.BCOO.fromdense(A, n_batch=1)))
show("vmap over unbatched bcoo", lambda: jax.vmap(lambda m: m.todense())(Msp))
show("bcsr fromdense", lambda: full(sparse.BCSR.fromdense(M)))
show("bcsr todense", lambda: sparse.BCSR.fromdense(M).todense())
show("bcsr matvec", lambda: sparse.BCSR.fromdense(M) @ v)
show("bcsr rmatvec", lambda: y @ sparse.BCSR.fromdense(M))
show("bcsr batched", lambda: full(sparse.BCSR.fromdense(A, n_batch=1)))
show("bcsr from_bcoo", lambda: full(sparse.BCSR.from_bcoo(Msp)))
show("bcsr to_bcoo", lambda: full(sparse.BCSR.fromdense(M).to_bcoo()))
show("bcsr dot_general", lambda: sparse.bcsr_dot_general(
    sparse.BCSR.fromdense(M), jnp.ones((4, 2)), dimension_numbers=(((1,), (0,)), ((), ()))))
show("bcsr extract", lambda: sparse.bcsr_extract(sparse.BCSR.fromdense(M).indices,
                                                 sparse.BCSR.fromdense(M).indptr,
                                                 jnp.arange(12.0).reshape(3, 4)))
show("bcsr eye", lambda: full(sparse.eye(3, sparse_format="bcsr")))
show("sparsify grad", lambda: sparse.sparsify(jax.grad(
    lambda y, M: jnp.sum(jnp.tanh(M @ y))))(v, Msp))
show("sparsify sum axis", lambda: full(sparse.sparsify(lambda M: M.sum(0) * 2)(Msp)))
show("sparsify mixed out", lambda: [full(x) for x in sparse.sparsify(
    lambda M, v: (M * 2, M @ v))(Msp, v)])
show("sparsify dense only", lambda: sparse.sparsify(lambda x: x * 2)(v))
show("sparsify einsum", lambda: sparse.sparsify(
    lambda M, B: jnp.einsum("ij,jk->ik", M, B))(Msp, jnp.ones((4, 2))))
show("sparsify stack", lambda: full(sparse.sparsify(lambda M: jnp.stack([M, M]))(Msp)))
show("sparsify concatenate", lambda: full(sparse.sparsify(
    lambda M: jnp.concatenate([M, 2 * M], axis=1))(Msp)))
show("sparsify expand_dims", lambda: full(sparse.sparsify(lambda M: M[None])(Msp)))
show("sparsify jit inside", lambda: sparse.sparsify(jax.jit(lambda M, v: M @ v))(Msp, v))
show("sparsify in jit", lambda: jax.jit(sparse.sparsify(lambda M, v: M @ v))(Msp, v))
show("sparsify where", lambda: sparse.sparsify(lambda M: jnp.where(M > 0, M, 1))(Msp))
show("sparsify fori_loop", lambda: sparse.sparsify(
    lambda M, x: jax.lax.fori_loop(0, 3, lambda i, c: M.T @ c + 1, x))(Msp, y))
show("sparsify cond", lambda: sparse.sparsify(
    lambda M, p, x: jax.lax.cond(p, lambda: (M @ x).sum(), lambda: 0.0))(Msp, True, v))
show("sparsify while", lambda: sparse.sparsify(lambda M, x: jax.lax.while_loop(
    lambda c: c.sum() < 100, lambda c: M @ (c[:3] @ M) + 1, x))(Msp.T @ Msp, v))
show("sparsify scan", lambda: sparse.sparsify(lambda M, x: jax.lax.scan(
    lambda c, t: (M @ c * t, c.sum()), x, jnp.arange(3.0)))(Msp.T @ Msp, v))
show("sparsify cond returns sparse", lambda: sparse.sparsify(
    lambda M, p: jax.lax.cond(p, lambda: M, lambda: 2 * M))(Msp, True))
show("sparsify fori_loop carry", lambda: full(sparse.sparsify(
    lambda M: jax.lax.fori_loop(0, 3, lambda i, c: c * 2, M))(Msp)))
show("sparsify while carry", lambda: full(sparse.sparsify(lambda M: jax.lax.while_loop(
    lambda c: c.sum() < 50, lambda c: -c * 2, M))(Msp)))
show("sparsify carry grows", lambda: sparse.sparsify(
    lambda M: jax.lax.fori_loop(0, 2, lambda i, c: c + M.T.T, M))(Msp))
show("sparsify cond mixed layouts", lambda: sparse.sparsify(
    lambda M, p: jax.lax.cond(p, lambda: M, lambda: M + M.T.T))(Msp, True))
show("sparsify cond tuple", lambda: [full(x) for x in sparse.sparsify(
    lambda M, p: jax.lax.cond(p, lambda: (M, 1.0), lambda: (-M, 2.0)))(Msp, False)])
show("vmap sparsify", lambda: jax.vmap(sparse.sparsify(lambda M, x: M @ x),
                                       in_axes=(None, 0))(Msp, jnp.ones((2, 4))))
show("grad sparsify", lambda: jax.grad(lambda x: sparse.sparsify(
    lambda M, x: jnp.sum(jnp.sin(M @ x)))(Msp, x))(v))
show("sparsify grad wrt sparse", lambda: sparse.sparsify(jax.grad(
    lambda M, x: jnp.sum(M @ x)))(Msp, v))
for cls in ["COO", "CSR", "CSC"]:
    C = getattr(sparse, cls)
    fields = {"COO": ("data", "row", "col"), "CSR": ("data", "indices", "indptr"),
              "CSC": ("data", "indices", "indptr")}[cls]
    parts = lambda x, fields=fields: [repr(x)] + [getattr(x, f) for f in fields] + \
        [x.todense()]  # noqa: E731
    show(f"{cls} fromdense", lambda C=C, parts=parts: parts(C.fromdense(M)))
    show(f"{cls} fromdense nse", lambda C=C, parts=parts: parts(C.fromdense(M, nse=6)))
    show(f"{cls} matvec", lambda C=C: C.fromdense(M) @ v)
    show(f"{cls} matmat", lambda C=C: C.fromdense(M) @ jnp.ones((4, 2)))
    show(f"{cls} transpose", lambda C=C: [repr(C.fromdense(M).T), C.fromdense(M).T.todense(),
                                          C.fromdense(M).T @ y])
    show(f"{cls} eye", lambda C=C, cls=cls, parts=parts: parts(
        sparse.eye(3, 4, k=1, sparse_format=cls.lower())))
    show(f"{cls} empty", lambda C=C, cls=cls, parts=parts: parts(
        sparse.empty((2, 3), sparse_format=cls.lower())))
    show(f"{cls} grad", lambda C=C: jax.grad(lambda d: (C((d,) + C.fromdense(M)._bufs[1:],
                                                          shape=M.shape) @ v).sum())(
        C.fromdense(M).data))
    show(f"{cls} jit", lambda C=C: jax.jit(lambda m, v: m @ v)(C.fromdense(M), v))
show("random_bcoo", lambda: full(sparse.random_bcoo(jax.random.key(0), (5, 6), nse=7)))
show("random_bcoo batched", lambda: full(sparse.random_bcoo(
    jax.random.key(0), (3, 5, 6), nse=0.3, n_batch=1, dtype=jnp.float32)))
show("random_bcoo dense sorted", lambda: full(sparse.random_bcoo(
    jax.random.PRNGKey(3), (4, 5, 2), nse=5, n_dense=1, sorted_indices=True,
    generator=jax.random.normal, dtype=jnp.float32)))
show("index array rows", lambda: full(Msp[jnp.array([0, 2])]))
show("index array cols", lambda: full(Msp[:, jnp.array([1, 3])]))
show("index arrays both", lambda: full(Msp[jnp.array([2, 0]), jnp.array([2, 1])]))
show("index scalar", lambda: full(Msp[1, 0]))
show("index traced", lambda: full(Msp[jnp.array(1)]))
show("index negative", lambda: full(Msp[-1]))
show("index jit", lambda: full(jax.jit(lambda m, i: m[i])(Msp, jnp.array([1, 2]))))
show("index 3d", lambda: full(sparse.BCOO.fromdense(A, n_batch=1)[:, jnp.array([0, 4]), 2]))
show("dynamic_slice negative", lambda: full(sparse.bcoo_dynamic_slice(Msp, (0, -2), (2, 2))))
show("coo functions", lambda: [sparse.coo_todense(sparse.coo_fromdense(M, nse=5)),
                               sparse.coo_matvec(sparse.coo_fromdense(M), v),
                               sparse.coo_matvec(sparse.coo_fromdense(M), y, transpose=True),
                               sparse.coo_matmat(sparse.coo_fromdense(M), jnp.ones((4, 2)))])
show("csr functions", lambda: [sparse.csr_todense(sparse.csr_fromdense(M, nse=5)),
                               sparse.csr_matvec(sparse.csr_fromdense(M), v),
                               sparse.csr_matvec(sparse.csr_fromdense(M), y, transpose=True),
                               sparse.csr_matmat(sparse.csr_fromdense(M), jnp.ones((3, 2)),
                                                 transpose=True)])

# Products of two sparse arrays with batch dimensions (JAX's layout: the
# product's batch dimensions, then each operand's other ones).
srng = np.random.RandomState(5)


def sp(shape, n_batch):
    a = srng.randn(*shape).astype(np.float32)
    a[srng.rand(*shape) < 0.6] = 0
    return sparse.BCOO.fromdense(jnp.asarray(a), n_batch=n_batch)


P3, Q3, R2, S3 = sp((3, 4, 5), 1), sp((3, 5, 2), 1), sp((4, 5), 0), sp((2, 5, 3), 1)
show("spdot batched", lambda: full(sparse.bcoo_dot_general(
    P3, Q3, dimension_numbers=(((2,), (1,)), ((0,), (0,))))))
show("spdot batched @", lambda: full(P3 @ Q3))
show("spdot lhs free batch", lambda: full(sparse.bcoo_dot_general(
    P3, R2, dimension_numbers=(((2,), (1,)), ((), ())))))
show("spdot rhs free batch", lambda: full(sparse.bcoo_dot_general(
    sp((5,), 0), S3, dimension_numbers=(((0,), (1,)), ((), ())))))
show("spdot two batch dims", lambda: full(sparse.bcoo_dot_general(
    sp((2, 3, 4, 5), 2), sp((2, 5, 3), 1), dimension_numbers=(((3,), (1,)), ((0,), (0,))))))
show("spdot batched jit", lambda: full(jax.jit(lambda a, b: a @ b)(P3, Q3)))
show("spdot unused rhs batch", lambda: sparse.bcoo_dot_general(
    R2, S3, dimension_numbers=(((1,), (1,)), ((), ()))))
show("spdot batch not batch", lambda: sparse.bcoo_dot_general(
    R2, R2, dimension_numbers=(((1,), (1,)), ((0,), (0,)))))
show("spdot contract batch", lambda: sparse.bcoo_dot_general(
    P3, Q3, dimension_numbers=(((0,), (0,)), ((), ()))))

# Sparse 1-D convolutions (JAX's cases: leading dimensions (1, 1), unit
# strides and dilations).
cx = jnp.array([[[0., 1., 0., 0., 2., 0., 0., 3.]]])
ck = jnp.array([[[1., 0., -1.]]])
for pad in ["SAME", "VALID", [(2, 1)]]:
    show(f"conv sparse sparse {pad}", lambda: full(sparse.bcoo_conv_general_dilated(
        sparse.BCOO.fromdense(cx), sparse.BCOO.fromdense(ck), window_strides=(1,),
        padding=pad)))
    show(f"conv sparse dense {pad}", lambda: full(sparse.bcoo_conv_general_dilated(
        sparse.BCOO.fromdense(cx), ck, window_strides=(1,), padding=pad)))
    show(f"conv dense sparse {pad}", lambda: full(sparse.bcoo_conv_general_dilated(
        cx, sparse.BCOO.fromdense(ck), window_strides=(1,), padding=pad)))
show("conv jit", lambda: full(jax.jit(lambda a, b: sparse.bcoo_conv_general_dilated(
    a, b, window_strides=(1,), padding="SAME"))(sparse.BCOO.fromdense(cx), ck)))
show("conv strides", lambda: sparse.bcoo_conv_general_dilated(
    sparse.BCOO.fromdense(cx), ck, window_strides=(2,), padding="SAME"))
show("conv batch of 2", lambda: sparse.bcoo_conv_general_dilated(
    sparse.BCOO.fromdense(jnp.ones((2, 1, 8))), ck, window_strides=(1,), padding="SAME"))
