"""`ember.experimental.sparse.linalg`: `spsolve` and `lobpcg_standard`
against JAX 0.10.2's recorded output, NumPy and finite differences."""

import numpy as np
import pytest
import scipy.sparse

import ember
import ember.numpy as jnp
from ember.experimental import sparse
from ember.experimental.sparse import linalg as sl

import helpers


def test_prints_what_jax_prints():
    # Ember maps spsolve over vmap (one host solve a system); JAX 0.10.2's
    # has no batching rule (NotImplementedError).
    helpers.assert_prints_recorded("sparse", "linalg", differing={"spsolve vmap"})


def _system(n, seed, dtype=np.float64):
    m = scipy.sparse.random(n, n, density=0.15, random_state=seed, format="csr")
    m = (m + 4 * scipy.sparse.eye(n)).tocsr()
    m.sort_indices()
    b = np.random.default_rng(seed).normal(size=n).astype(dtype)
    return (m.data.astype(dtype), m.indices.astype(np.int32), m.indptr.astype(np.int32), b,
            m.toarray())


def test_spsolve_solves_and_is_in_the_namespace():
    assert sparse.linalg.spsolve is sl.spsolve
    data, indices, indptr, b, dense = _system(30, 1, np.float32)
    x = sl.spsolve(data, indices, indptr, b)
    assert x.dtype == np.float32 and x.shape == (30,)
    np.testing.assert_allclose(dense @ np.asarray(x), b, atol=1e-5)
    # Stored zeros and padding past indptr[-1] (a BCSR's buffers) are fine.
    padded = (np.concatenate([data, [7.0, 7.0]]).astype(np.float32),
              np.concatenate([indices, [0, 0]]).astype(np.int32), indptr)
    np.testing.assert_allclose(np.asarray(sl.spsolve(*padded, b)), np.asarray(x), rtol=1e-6)
    mat = sparse.BCSR.fromdense(dense.astype(np.float32))
    np.testing.assert_allclose(
        np.asarray(sl.spsolve(mat.data, mat.indices, mat.indptr, b)), np.asarray(x),
        rtol=1e-5, atol=1e-6)


def test_spsolve_derivatives_match_finite_differences():
    with ember.enable_x64():
        data, indices, indptr, b, dense = _system(16, 2)
        f = lambda d, v: jnp.sum(jnp.sin(sl.spsolve(d, indices, indptr, v)))  # noqa: E731
        gd, gb = ember.grad(f, argnums=(0, 1))(data, b)
        eps = 1e-6
        for k in (0, 5, len(data) - 1):
            e = np.zeros_like(data)
            e[k] = eps
            fd = (f(data + e, b) - f(data - e, b)) / (2 * eps)
            np.testing.assert_allclose(gd[k], fd, rtol=1e-6, atol=1e-9)
        # The gradient in b: A^-T cos(x).
        x = np.linalg.solve(dense, b)
        np.testing.assert_allclose(np.asarray(gb), np.linalg.solve(dense.T, np.cos(x)),
                                   rtol=1e-9)
        # Forward mode in both, against the same differences.
        td, tb = np.ones_like(data), np.arange(16.0)
        _, t = ember.jvp(f, (data, b), (td, tb))
        fd = (f(data + eps * td, b + eps * tb) - f(data - eps * td, b - eps * tb)) / (2 * eps)
        np.testing.assert_allclose(t, fd, rtol=1e-6)
        # Under jit and vmap (beyond JAX: one host solve per system).
        xs = ember.jit(ember.vmap(lambda v: sl.spsolve(data, indices, indptr, v)))(
            np.stack([b, -2 * b]))
        np.testing.assert_allclose(np.asarray(xs), np.stack([x, -2 * x]), rtol=1e-9)


def test_spsolve_errors_are_jaxs():
    data, indices, indptr, b, _ = _system(8, 3, np.float32)
    with pytest.raises(ValueError, match="data types do not match"):
        sl.spsolve(data, indices, indptr, b.astype(np.complex64))
    with pytest.raises(ValueError, match="index arrays must be integer typed"):
        sl.spsolve(data, indices.astype(np.float32), indptr, b)
    with pytest.raises(ValueError, match="Arrays must be one-dimensional"):
        sl.spsolve(data, indices, indptr, b[:, None])
    with pytest.raises(ValueError, match="Invalid CSR buffer sizes"):
        sl.spsolve(data[:-1], indices, indptr, b)
    with pytest.raises(ValueError, match="reorder=4 not valid"):
        sl.spsolve(data, indices, indptr, b, reorder=4)


def _ritz_check(A, theta, U, k):
    theta, U = np.asarray(theta, np.float64), np.asarray(U, np.float64)
    w = np.linalg.eigvalsh(np.asarray(A, np.float64))[::-1][:k]
    np.testing.assert_allclose(theta, w, rtol=1e-4, atol=1e-4 * abs(w).max())
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-4)
    resid = np.linalg.norm(A @ U - U * theta, axis=0)
    assert resid.max() < 1e-3 * abs(w).max(), resid


@pytest.mark.parametrize("n,k,seed", [(60, 3, 0), (100, 8, 1), (200, 5, 2)])
def test_lobpcg_finds_the_top_eigenpairs(n, k, seed):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(n, n))
    # Well separated top eigenvalues, the rest a bulk below.
    q, _ = np.linalg.qr(g)
    w = np.concatenate([np.linspace(10, 6, k), rng.uniform(0, 3, n - k)])
    A = ((q * w) @ q.T).astype(np.float32)
    X = rng.normal(size=(n, k)).astype(np.float32)
    theta, U, i = sl.lobpcg_standard(A, X)
    assert theta.dtype == np.float32 and U.shape == (n, k) and 0 < int(i) < 100
    _ritz_check(A, theta, U, k)
    # The operator as a function (sparse too), the same pairs.
    mat = sparse.BCOO.fromdense(A)
    theta2, U2, _ = sl.lobpcg_standard(lambda v: mat @ v, X)
    _ritz_check(A, theta2, U2, k)


def test_lobpcg_stops_at_m_and_takes_a_tolerance():
    rng = np.random.default_rng(5)
    A = np.diag(np.arange(1, 101, dtype=np.float32))
    X = rng.normal(size=(100, 4)).astype(np.float32)
    _, _, i = sl.lobpcg_standard(A, X, m=3)
    assert int(i) == 3
    _, _, loose = sl.lobpcg_standard(A, X, tol=1e-5)
    _, _, tight = sl.lobpcg_standard(A, X)
    assert 0 < int(loose) < int(tight)
    # Under jit, the matrix traced.
    theta, U, _ = ember.jit(lambda a, x: sl.lobpcg_standard(a, x))(A, X)
    _ritz_check(A, theta, U, 4)


def test_lobpcg_errors_are_jaxs():
    A = np.eye(30, dtype=np.float32)
    X = np.ones((30, 2), np.float32)
    with pytest.raises(ValueError, match="must have search dim > 0"):
        sl.lobpcg_standard(A, X[:, :0])
    with pytest.raises(ValueError, match=r"expected search dim \* 5 < matrix dim"):
        sl.lobpcg_standard(A, np.ones((30, 6), np.float32))
    with pytest.raises(ValueError, match="A, X must have same dtypes"):
        sl.lobpcg_standard(lambda v: v.astype(np.float16), X)
    with pytest.raises(ValueError, match=r"A must be \(30, 30\) matrix A"):
        sl.lobpcg_standard(lambda v: v[1:], X)
    with pytest.raises(TypeError, match="must be an array or a callable"):
        sl.lobpcg_standard("A", X)
