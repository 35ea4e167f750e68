"""dot, matmul, einsum, tensordot and friends, linalg.norm, against NumPy."""

import numpy as np
import pytest

from helpers import assert_close, jnp, rand

TOL = {"rtol": 1e-5, "atol": 1e-5}


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                   ((2, 2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)),
                                   ((1, 2, 3), (5, 3, 2))])
def test_matmul(sa, sb):
    a, b = rand(sa, np.float32, 1), rand(sb, np.float32, 2)
    assert_close(jnp.matmul(a, b), np.matmul(a, b), **TOL)
    assert_close(jnp.asarray(a) @ b, a @ b, **TOL)


@pytest.mark.parametrize("dtype", [np.int32, np.float16])
def test_matmul_dtypes(dtype):
    a, b = rand((2, 3), dtype, 1), rand((3, 2), dtype, 2)
    assert_close(jnp.matmul(a, b), np.matmul(a, b), rtol=1e-2, atol=1e-2)
    assert jnp.matmul(a.astype(np.int32), b.astype(np.float32)).dtype == np.float32


def test_matmul_bfloat16():
    a = jnp.asarray(rand((2, 3), np.float32, 1), dtype=jnp.bfloat16)
    out = a @ a.T
    assert out.dtype == jnp.bfloat16
    ref = np.asarray(a, np.float32) @ np.asarray(a, np.float32).T
    np.testing.assert_allclose(np.asarray(out, np.float32), ref, rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("fn,sa,sb", [
    ("dot", (3, 4), (4, 2)), ("dot", (2, 3, 4), (5, 4, 2)), ("dot", (), (3,)),
    ("matmul", (2, 3, 4), (4, 2)), ("inner", (2, 4), (3, 4)), ("tensordot", (2, 3, 4), (3, 4, 5))])
def test_preferred_element_type(fn, sa, sb):
    # JAX: bf16 operands with preferred_element_type=f32 give an f32 result,
    # accumulated in f32 (no bf16 rounding of the result).
    a = jnp.asarray(rand(sa, np.float32, 1), dtype=jnp.bfloat16)
    b = jnp.asarray(rand(sb, np.float32, 2), dtype=jnp.bfloat16)
    out = getattr(jnp, fn)(a, b, preferred_element_type=jnp.float32)
    assert out.dtype == jnp.float32
    ref = getattr(np, fn)(np.asarray(a, np.float64), np.asarray(b, np.float64))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5, atol=1e-5)


def test_matmul_shape_errors():
    with pytest.raises((TypeError, ValueError), match=r"3|4"):
        jnp.matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
    with pytest.raises(ValueError):
        jnp.matmul(np.float32(1), np.ones(3, np.float32))


@pytest.mark.parametrize("sa,sb", [((), (3,)), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                                   ((2, 3, 4), (4, 2)), ((2, 3, 4), (5, 4, 2))])
def test_dot(sa, sb):
    a, b = rand(sa, np.float32, 3), rand(sb, np.float32, 4)
    assert_close(jnp.dot(a, b), np.dot(a, b), **TOL)


def test_inner_outer_vdot_trace_kron():
    a, b = rand((2, 3), np.float32, 5), rand((4, 3), np.float32, 6)
    assert_close(jnp.inner(a, b), np.inner(a, b), **TOL)
    v, w = rand((3,), np.float32, 7), rand((4,), np.float32, 8)
    assert_close(jnp.inner(v, v), np.inner(v, v), **TOL)
    assert_close(jnp.outer(v, w), np.outer(v, w), **TOL)
    assert_close(jnp.outer(a, w), np.outer(a, w), **TOL)
    assert_close(jnp.vdot(a, a), np.vdot(a, a), **TOL)
    m = rand((3, 4), np.float32, 9)
    assert_close(jnp.trace(m), np.trace(m), **TOL)
    assert_close(jnp.trace(m, 1), np.trace(m, 1), **TOL)
    t = rand((2, 3, 3), np.int32, 10)
    assert_close(jnp.trace(t, axis1=1, axis2=2), np.trace(t, axis1=1, axis2=2))
    assert_close(jnp.kron(a, m), np.kron(a, m), **TOL)
    assert_close(jnp.kron(v, w), np.kron(v, w), **TOL)
    i = np.arange(4, dtype=np.int32).reshape(2, 2)
    assert_close(jnp.kron(i, i), np.kron(i, i))
    assert_close(jnp.cross(rand((2, 3), np.float32, 1), rand((2, 3), np.float32, 2)),
                 np.cross(rand((2, 3), np.float32, 1), rand((2, 3), np.float32, 2)), **TOL)
    assert_close(jnp.vecdot(a, a), np.vecdot(a, a), **TOL)


@pytest.mark.parametrize("axes", [0, 1, 2, ([1], [0]), ((0, 1), (1, 0)), [[0], [1]]])
def test_tensordot(axes):
    a, b = rand((2, 3, 4), np.float32, 1), rand((3, 2, 4), np.float32, 2)
    if axes == 1:
        b = rand((4, 5), np.float32, 2)
    if axes == 0:
        b = rand((2,), np.float32, 2)
    if axes == 2:
        b = rand((3, 4, 2), np.float32, 2)
    if axes == ([1], [0]):
        b = rand((3, 5), np.float32, 2)
    assert_close(jnp.tensordot(a, b, axes), np.tensordot(a, b, axes), **TOL)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (2, 3, 4)]), ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ijk->kji", [(2, 3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("i...->...", [(2, 3, 4)]), ("ba,ca->bc", [(2, 3), (4, 3)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(spec, shapes):
    ops = [rand(s, np.float32, i) for i, s in enumerate(shapes)]
    assert_close(jnp.einsum(spec, *ops), np.einsum(spec, *ops), **TOL)


def test_einsum_int_and_mixed():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_close(jnp.einsum("ij,kj->ik", a, a), np.einsum("ij,kj->ik", a, a))
    assert jnp.einsum("ij,jk", a, np.ones((3, 2), np.float32)).dtype == np.float32


def test_einsum_interleaved_form():
    # Operands each followed by its axis labels, then the output's (as NumPy).
    x, w = rand((2, 3), np.float32, 1), rand((3, 4), np.float32, 2)
    assert_close(jnp.einsum(x, [0, 1], w, [1, 2], [0, 2]), x @ w, **TOL)
    assert_close(jnp.einsum(x, [0, 1], w, [1, 2]), np.einsum(x, [0, 1], w, [1, 2]), **TOL)
    assert_close(jnp.einsum(x, [Ellipsis, 1], [Ellipsis]), x.sum(-1), **TOL)
    with pytest.raises(ValueError, match="subscript labels must be integers"):
        jnp.einsum(x, ["a", 1])


@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3])
def test_vector_norm(ord):
    x = rand((5,), np.float32, 11)
    assert_close(jnp.linalg.norm(x, ord), np.linalg.norm(x, ord), **TOL)
    m = rand((3, 4), np.float32, 12)
    assert_close(jnp.linalg.norm(m, ord, axis=1), np.linalg.norm(m, ord, axis=1), **TOL)
    assert_close(jnp.linalg.norm(m, ord, axis=0, keepdims=True),
                 np.linalg.norm(m, ord, axis=0, keepdims=True), **TOL)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norm(ord):
    m = rand((3, 4), np.float32, 13)
    assert_close(jnp.linalg.norm(m, ord), np.linalg.norm(m, ord), **TOL)
    t = rand((2, 3, 4), np.float32, 14)
    assert_close(jnp.linalg.norm(t, ord, axis=(1, 2)), np.linalg.norm(t, ord, axis=(1, 2)), **TOL)
    assert_close(jnp.linalg.norm(t, ord, axis=(2, 0), keepdims=True),
                 np.linalg.norm(t, ord, axis=(2, 0), keepdims=True), **TOL)


def test_norm_misc():
    t = rand((2, 3, 4), np.float32, 15)
    assert_close(jnp.linalg.norm(t), np.linalg.norm(t), **TOL)
    assert_close(jnp.linalg.norm(np.arange(4, dtype=np.int32)),
                 np.linalg.norm(np.arange(4.0)).astype(np.float32))
    assert_close(jnp.linalg.vector_norm(t, axis=(0, 2)), np.linalg.vector_norm(t, axis=(0, 2)),
                 **TOL)
    m = rand((3, 3), np.float32, 16)
    assert_close(jnp.linalg.matrix_power(m, 3), np.linalg.matrix_power(m, 3), rtol=1e-4, atol=1e-4)
    assert_close(jnp.linalg.matrix_power(m, 0), np.eye(3, dtype=np.float32))
