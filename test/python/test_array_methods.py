"""Array methods, properties and Python operators (reflected too)."""

import operator

import numpy as np
import pytest

from helpers import assert_close, jnp, rand

A = rand((2, 3), np.float32, seed=1) + 4
B = rand((2, 3), np.float32, seed=2) + 4
IA = rand((2, 3), np.int32, seed=3, low=1, high=9)
J = rand((2, 3), np.int32, seed=4, low=1, high=4)

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod, operator.pow, operator.lt, operator.le, operator.gt, operator.ge,
       operator.eq, operator.ne]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
def test_float_operators_and_reflected(op):
    a = jnp.asarray(A)
    assert_close(op(a, B), op(A, B))
    assert_close(op(A, jnp.asarray(B)), op(A, B))  # NumPy left operand defers to ember
    assert_close(op(a, 2.0), op(A, np.float32(2.0)))
    assert_close(op(2.0, a), op(np.float32(2.0), A))


@pytest.mark.parametrize("op", OPS + [operator.and_, operator.or_, operator.xor,
                                      operator.lshift, operator.rshift],
                         ids=lambda o: o.__name__)
def test_int_operators_and_reflected(op):
    i = jnp.asarray(IA)
    ref = op(IA, J)
    if op is operator.truediv:
        ref = ref.astype(np.float32)
    assert_close(op(i, jnp.asarray(J)), ref)
    ref2 = op(np.int32(3), J)
    if op is operator.truediv:
        ref2 = ref2.astype(np.float32)
    assert_close(op(3, jnp.asarray(J)), ref2)


def test_unary_operators():
    a = jnp.asarray(A)
    assert_close(-a, -A)
    assert_close(+a, +A)
    assert_close(abs(-a), np.abs(A))
    assert_close(~jnp.asarray(IA), ~IA)
    assert_close(~jnp.asarray(A > 4), ~(A > 4))


def test_matmul_operator():
    m = rand((3, 4), np.float32, seed=5)
    assert_close(jnp.asarray(A) @ m, A @ m, rtol=1e-5, atol=1e-5)
    assert_close(A @ jnp.asarray(m), A @ m, rtol=1e-5, atol=1e-5)


def test_properties():
    a = jnp.asarray(A)
    assert a.shape == (2, 3) and a.ndim == 2 and a.size == 6 and a.dtype == np.float32
    assert len(a) == 2
    assert a.itemsize == 4 and a.nbytes == 24
    assert_close(a.T, A.T)
    assert_close(a.real, A)
    assert_close(a.imag, np.zeros_like(A))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "argmax",
                                  "argmin", "all", "any", "cumsum", "cumprod", "ptp"])
def test_reduction_methods(name):
    a = jnp.asarray(A)
    assert_close(getattr(a, name)(), getattr(np, name)(A), rtol=1e-4, atol=1e-4,
                 check_dtype=not name.startswith("arg"))
    assert_close(getattr(a, name)(axis=1), getattr(np, name)(A, axis=1), rtol=1e-4, atol=1e-4,
                 check_dtype=not name.startswith("arg"))


def test_other_methods():
    a = jnp.asarray(A)
    assert_close(a.reshape(3, 2), A.reshape(3, 2))
    assert_close(a.reshape((6,)), A.reshape(6))
    assert_close(a.ravel(), A.ravel())
    assert_close(a.flatten(), A.flatten())
    assert_close(a.squeeze(), A.squeeze())
    assert_close(a.swapaxes(0, 1), A.swapaxes(0, 1))
    assert_close(a.astype(jnp.int32), A.astype(np.int32))
    assert_close(a.clip(4, 5), A.clip(4, 5))
    assert_close(a.round(1), A.round(1))
    assert_close(a.sort(axis=0), np.sort(A, axis=0))
    assert_close(a.argsort(), np.argsort(A).astype(np.int32))
    assert_close(a.dot(np.ascontiguousarray(A.T)), A.dot(A.T), rtol=1e-5, atol=1e-5)
    assert_close(a.take(np.array([0, 5])), A.take([0, 5]))
    assert_close(a.repeat(2, axis=0), A.repeat(2, axis=0))
    assert_close(a.transpose(), A.transpose())
    assert_close(a.conj(), A.conj())
    assert_close(a.trace(), np.float32(A.trace()))
    assert_close(a.diagonal(), A.diagonal())
    assert_close(a.copy(), A)
    assert a.tolist() == A.tolist()
    assert a[0, 0].item() == float(A[0, 0])
    assert isinstance(a.item(1), float)


def test_scalar_conversions():
    assert int(jnp.asarray(3)) == 3
    assert float(jnp.asarray(2.5)) == 2.5
    assert bool(jnp.asarray(True)) is True
    assert complex(jnp.asarray(1.0)) == 1 + 0j
    assert [1, 2, 3][jnp.asarray(1)] == 2
    assert np.asarray(jnp.arange(3)).tolist() == [0, 1, 2]
    assert "Array" in repr(jnp.arange(2)) or "[0 1]" in repr(jnp.arange(2))
    with pytest.raises((ValueError, TypeError)):
        bool(jnp.arange(3))


def test_iteration_and_len():
    a = jnp.asarray(A)
    rows = list(a)
    assert len(rows) == 2
    assert_close(rows[1], A[1])
    with pytest.raises(TypeError):
        len(jnp.asarray(1.0))


def test_non_contiguous_numpy_inputs():
    assert_close(jnp.asarray(A.T) + 1, A.T + 1)
    assert_close(jnp.sum(A[:, ::2]), A[:, ::2].sum())


def test_reshape_method_takes_order():
    x = np.arange(12).reshape(3, 4)
    got = jnp.asarray(x).reshape(4, 3, order="F")
    np.testing.assert_array_equal(got, x.reshape(4, 3, order="F"))
    np.testing.assert_array_equal(jnp.asarray(x).reshape((2, 6), order="F"),
                                  x.reshape((2, 6), order="F"))
