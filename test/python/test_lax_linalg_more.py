"""`lax.linalg.hessenberg`, `tridiagonal`, `schur` and `qdwh` against the
values JAX 0.10.2 gives (recorded by test/data/linalg/lax_linalg.py, float64)
and against their definitions."""

import json
import pathlib

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

RECORD = json.loads((pathlib.Path(__file__).parent.parent / "data" / "linalg" /
                     "lax_linalg.jax.json").read_text())


def _decode(x):
    return np.array(x["re"]) + 1j * np.array(x["im"]) if isinstance(x, dict) else np.array(x)


INPUTS = {k: _decode(v) for k, v in RECORD["inputs"].items()}


@pytest.fixture(autouse=True)
def _x64():
    with ember.enable_x64(True):
        yield


def _check(name, got, tol=1e-12):
    for g, want in zip(got, RECORD[name]):
        np.testing.assert_allclose(np.asarray(g), _decode(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("which", ["A", "C"])
def test_hessenberg_is_lapacks_packed_form(which):
    a = INPUTS[which]
    packed, taus = lax.linalg.hessenberg(a)
    _check(f"hessenberg_{which}", (packed, taus))
    # The reflectors rebuild Q, and Q H Q^H is the matrix.
    h = np.triu(np.asarray(packed), -1)
    qm = np.eye(4, dtype=a.dtype)
    for j in range(3):
        v = np.zeros(4, a.dtype)
        v[j + 1] = 1
        v[j + 2:] = np.asarray(packed)[j + 2:, j]
        qm = qm @ (np.eye(4) - np.asarray(taus)[j] * np.outer(v, v.conj()))
    np.testing.assert_allclose(qm @ h @ qm.conj().T, a, atol=1e-12)


@pytest.mark.parametrize("which,lower", [("S", True), ("S", False), ("H", True),
                                         ("H", False)])
def test_tridiagonal_is_lapacks_packed_form(which, lower):
    a = INPUTS[which]
    out = lax.linalg.tridiagonal(a, lower=lower)
    _check(f"tridiagonal_{which}_{'lower' if lower else 'upper'}", out)
    _, d, e, _ = out
    # T's eigenvalues are the matrix's.
    t = np.diag(np.asarray(d)) + np.diag(np.asarray(e), 1) + np.diag(np.asarray(e), -1)
    np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a), atol=1e-12)


@pytest.mark.parametrize("which,hermitian", [("A", False), ("S", True), ("B", False)])
def test_qdwh_polar_decomposition(which, hermitian):
    x = INPUTS[which]
    u, h, iters, converged = lax.linalg.qdwh(x, is_hermitian=hermitian)
    _check(f"qdwh_{which}", (u, h), 1e-10)
    assert int(iters) == int(RECORD[f"qdwh_{which}"][2]) == 6 and bool(converged)
    u, h = np.asarray(u), np.asarray(h)
    np.testing.assert_allclose(u @ h, x, atol=1e-12)
    np.testing.assert_allclose(u.T @ u, np.eye(x.shape[1]), atol=1e-12)
    assert np.linalg.eigvalsh(h).min() > -1e-12


def test_qdwh_float32_under_jit_and_errors():
    x = jnp.asarray(INPUTS["A"], jnp.float32)
    u, h, iters, converged = ember.jit(lax.linalg.qdwh)(x)
    assert u.dtype == jnp.float32 and bool(converged)
    np.testing.assert_allclose(np.asarray(u @ h), INPUTS["A"], atol=1e-5)
    with pytest.raises(ValueError, match="M >= N"):
        lax.linalg.qdwh(jnp.ones((2, 3)))


def test_schur():
    a = INPUTS["A"]
    t, z = lax.linalg.schur(a)
    t, z = np.asarray(t), np.asarray(z)
    np.testing.assert_allclose(z @ t @ z.T, a, atol=1e-12)
    assert np.allclose(np.tril(t, -2), 0)  # quasi-triangular
    [t_only] = lax.linalg.schur(a, compute_schur_vectors=False)
    np.testing.assert_allclose(np.asarray(t_only), t)
    tc, zc = lax.linalg.schur(INPUTS["C"])
    np.testing.assert_allclose(np.asarray(zc) @ np.asarray(tc) @ np.asarray(zc).conj().T,
                               INPUTS["C"], atol=1e-12)
    assert np.allclose(np.tril(np.asarray(tc), -1), 0)
    with pytest.raises(NotImplementedError, match="sort_eig_vals"):
        lax.linalg.schur(a, sort_eig_vals=True)


@pytest.mark.parametrize("shape,dtype", [((6, 6), np.float32), ((9, 5), np.float32),
                                         ((5, 9), np.float64), ((20, 4), np.float32),
                                         ((7, 5), np.complex64)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_by_polar_decomposition(shape, dtype, full):
    # The SVD the StableHLO export writes for TPU (XLA:TPU has none; JAX's
    # TPU SVD is the same construction): QDWH, then eigh of the Hermitian
    # factor. Against NumPy: singular values, a reconstruction, orthonormal
    # vectors (the vectors themselves are unique only up to phases).
    from ember._src.lax_linalg import svd_by_polar

    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    u, s, vh = (np.asarray(v) for v in ember.jit(
        lambda x: svd_by_polar(x, full_matrices=full, compute_uv=True))(a))
    m, n = shape
    k = min(m, n)
    assert u.shape == ((m, m) if full else (m, k)) and s.shape == (k,)
    assert vh.shape == ((n, n) if full else (k, n))
    tol = 1e-5 if np.finfo(dtype).bits <= 32 else 1e-12
    scale = np.linalg.norm(a, 2)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=tol * 10 * scale)
    np.testing.assert_allclose((u[:, :k] * s) @ vh[:k], a, atol=tol * 10 * scale)
    np.testing.assert_allclose(np.conj(u.T) @ u, np.eye(u.shape[1]), atol=tol * 10)
    np.testing.assert_allclose(vh @ np.conj(vh.T), np.eye(vh.shape[0]), atol=tol * 10)
    s_only = ember.jit(lambda x: svd_by_polar(x, full_matrices=full, compute_uv=False))(a)
    np.testing.assert_allclose(np.asarray(s_only), s, rtol=1e-6, atol=tol * scale)


def test_svd_by_polar_decomposition_edge_cases():
    from ember._src.lax_linalg import svd_by_polar

    def run(a):
        return [np.asarray(v) for v in ember.jit(
            lambda x: svd_by_polar(x, full_matrices=False, compute_uv=True))(a)]

    # Rank one: u is re-orthonormalized (the tiny singular values' vectors
    # are not), the product still a.
    a = np.outer(np.arange(1.0, 6.0), np.arange(1.0, 5.0)).astype(np.float32)
    u, s, vh = run(a)
    np.testing.assert_allclose(np.conj(u.T) @ u, np.eye(4), atol=1e-6)
    np.testing.assert_allclose((u * s) @ vh, a, atol=1e-4)
    assert s[0] == pytest.approx(np.linalg.norm(a, 2), rel=1e-6) and np.all(s[1:] < 1e-4)
    # Zeros: zero singular values; a non-finite entry: NaNs everywhere.
    assert np.all(run(np.zeros((3, 3), np.float32))[1] == 0)
    bad = np.eye(3, dtype=np.float32)
    bad[1, 2] = np.inf
    assert all(np.isnan(v).all() for v in run(bad))
