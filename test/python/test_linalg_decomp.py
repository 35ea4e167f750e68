"""Decompositions in ember.numpy.linalg / ember.scipy.linalg against NumPy."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.scipy.linalg as esl

from helpers import fd_grad

jit = ember.jit
la = jnp.linalg


def _spd(n, batch=(), seed=0, ridge=0.5, dtype=np.float32):
    r = np.random.RandomState(seed)
    m = r.randn(*batch, n, n)
    return (m @ np.swapaxes(m, -1, -2) + ridge * np.eye(n)).astype(dtype)


def _illcond(n, cond, seed=0, dtype=np.float32):
    q = np.linalg.qr(np.random.RandomState(seed).randn(n, n))[0]
    return ((q * np.logspace(0, -np.log10(cond), n)) @ q.T).astype(dtype)


def _gen(shape, seed=0, dtype=np.float32):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def _close(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    b = np.broadcast_to(b, a.shape)
    scale = max(1.0, np.abs(b).max()) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


SIZES = [1, 2, 3, 5, 8]


@pytest.mark.parametrize("n", SIZES)
def test_cholesky(n):
    a = _spd(n, seed=n)
    _close(jit(la.cholesky)(a), np.linalg.cholesky(a), 2e-5)
    b = _spd(n, (2,), seed=n)  # batched
    _close(la.cholesky(b), np.linalg.cholesky(b), 2e-5)


def test_cholesky_ill_conditioned_and_upper():
    a = _illcond(6, 1e4, seed=3)
    assert np.linalg.cond(a) > 1e3
    L = np.asarray(jit(la.cholesky)(a))
    _close(L @ L.T, a, 2e-5)
    _close(la.cholesky(a, upper=True), np.linalg.cholesky(a).T, 1e-3)
    assert np.isnan(np.asarray(la.cholesky(-np.eye(2, dtype=np.float32)))).any()


@pytest.mark.parametrize("n", SIZES)
def test_solve_inv_det(n):
    a = _gen((n, n), seed=n) + np.float32(0.1) * np.eye(n, dtype=np.float32)  # needs pivoting
    b = _gen((n,), seed=10 + n)
    B = _gen((n, 3), seed=20 + n)

    @jit
    def f(a, b, B):
        return la.solve(a, b), la.solve(a, B), la.inv(a), la.det(a), la.slogdet(a)

    x, X, ai, d, (s, ld) = f(a, b, B)
    cond = np.linalg.cond(a)
    tol = 1e-6 * cond * 10
    _close(x, np.linalg.solve(a, b), tol)
    _close(X, np.linalg.solve(a, B), tol)
    _close(ai, np.linalg.inv(a), tol)
    _close(d, np.linalg.det(a), 1e-5 * cond)
    s_ref, ld_ref = np.linalg.slogdet(a)
    assert float(s) == s_ref
    _close(ld, ld_ref, 1e-5)


def test_solve_batched_and_singular_sign():
    a = _gen((2, 4, 4), seed=1)
    b = _gen((2, 4), seed=2)
    # (JAX's rule since 0.5: a 2-D b is a matrix, so batched vectors take
    # a trailing axis; b of shape (2, 4) against (2, 4, 4) is JAX's error.)
    _close(la.solve(a, b[..., None])[..., 0], np.linalg.solve(a, b[..., None])[..., 0], 1e-4)
    with pytest.raises(ValueError):
        la.solve(a, b)
    _close(la.solve(a[0], b[0]), np.linalg.solve(a[0], b[0]), 1e-4)
    B = _gen((2, 4, 2), seed=3)
    _close(la.solve(a, B), np.linalg.solve(a, B), 1e-4)
    _close(la.det(a), np.linalg.det(a), 1e-4)
    s, ld = la.slogdet(a)
    s_ref, ld_ref = np.linalg.slogdet(a)
    np.testing.assert_array_equal(np.asarray(s), s_ref)
    _close(ld, ld_ref, 1e-5)
    p = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], np.float32)  # permutation, det +1
    assert float(la.det(p)) == 1.0
    assert float(la.det(p[[1, 0, 2]])) == -1.0


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 5), (2, 5, 3)])
def test_qr(shape):
    a = _gen(shape, seed=sum(shape))
    m, n = shape[-2:]
    k = min(m, n)
    q, r = jit(la.qr)(a)
    q, r = np.asarray(q), np.asarray(r)
    assert q.shape == shape[:-2] + (m, k) and r.shape == shape[:-2] + (k, n)
    _close(q @ r, a, 2e-5)
    _close(np.swapaxes(q, -1, -2) @ q, np.eye(k), 2e-5)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    _close(np.abs(r), np.abs(np.linalg.qr(a)[1]), 2e-5)
    qc, rc = la.qr(a, mode="complete")
    qc, rc = np.asarray(qc), np.asarray(rc)
    assert qc.shape == shape[:-2] + (m, m) and rc.shape == shape
    _close(qc @ rc, a, 2e-5)
    _close(np.swapaxes(qc, -1, -2) @ qc, np.eye(m), 2e-5)
    _close(la.qr(a, mode="r"), r, 1e-6)


@pytest.mark.parametrize("n", SIZES)
def test_eigh(n):
    a = _spd(n, (2,), seed=n) - np.float32(n / 2) * np.eye(n, dtype=np.float32)  # indefinite
    w, v = jit(la.eigh)(a)
    w, v = np.asarray(w), np.asarray(v)
    _close(w, np.linalg.eigvalsh(a), 2e-6 * n)
    assert np.all(np.diff(w, axis=-1) >= 0)
    _close((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), a, 5e-6 * n)
    _close(np.swapaxes(v, -1, -2) @ v, np.eye(n), 5e-6 * n)
    _close(la.eigvalsh(a[0]), np.linalg.eigvalsh(a[0]), 2e-6 * n)


def test_eigh_ill_conditioned_and_degenerate():
    a = _illcond(6, 1e5, seed=7)
    w = np.asarray(la.eigvalsh(a))
    _close(w, np.linalg.eigvalsh(a), 2e-6)
    w, v = la.eigh(np.diag(np.array([3, 1, 1, 2], np.float32)))
    _close(w, [1, 1, 2, 3], 1e-7)
    _close(np.abs(np.asarray(v)).sum(0), np.ones(4), 1e-7)


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (7, 3), (3, 6), (2, 5, 4)])
def test_svd(shape):
    a = _gen(shape, seed=sum(shape))
    m, n = shape[-2:]
    k = min(m, n)
    u, s, vh = (np.asarray(t) for t in jit(lambda x: la.svd(x, full_matrices=False))(a))
    assert u.shape == shape[:-2] + (m, k) and vh.shape == shape[:-2] + (k, n)
    _close(s, np.linalg.svd(a, compute_uv=False), 5e-6)
    _close((u * s[..., None, :]) @ vh, a, 1e-5)
    _close(np.swapaxes(u, -1, -2) @ u, np.eye(k), 1e-5)
    _close(vh @ np.swapaxes(vh, -1, -2), np.eye(k), 1e-5)
    uf, sf, vhf = (np.asarray(t) for t in la.svd(a))
    assert uf.shape == shape[:-2] + (m, m) and vhf.shape == shape[:-2] + (n, n)
    _close(np.swapaxes(uf, -1, -2) @ uf, np.eye(m), 1e-5)
    _close(vhf @ np.swapaxes(vhf, -1, -2), np.eye(n), 1e-5)
    _close((uf[..., :, :k] * sf[..., None, :]) @ vhf[..., :k, :], a, 1e-5)
    _close(la.svd(a, compute_uv=False), s, 1e-6)


def test_rank_pinv_lstsq_cond():
    r = np.random.RandomState(0)
    low = (r.randn(6, 2) @ r.randn(2, 5)).astype(np.float32)
    assert int(jit(la.matrix_rank)(low)) == 2
    assert int(la.matrix_rank(np.eye(4, dtype=np.float32))) == 4
    np.testing.assert_array_equal(la.matrix_rank(_gen((2, 3, 3))), [3, 3])
    a = _gen((6, 4), seed=1)
    _close(jit(la.pinv)(a), np.linalg.pinv(a), 1e-5)
    _close(la.pinv(low), np.linalg.pinv(low, rcond=60 * np.finfo(np.float32).eps), 1e-4)
    b = _gen((6,), seed=2)
    x, res, rank, sv = jit(la.lstsq)(a, b)
    xr, resr, rankr, svr = np.linalg.lstsq(a, b, rcond=None)
    _close(x, xr, 1e-5)
    _close(res, resr[0], 1e-4)
    assert int(rank) == rankr
    _close(sv, svr, 1e-5)
    sq = _gen((4, 4), seed=3)
    _close(la.cond(sq), np.linalg.cond(sq), 1e-4)
    _close(la.cond(sq, 1), np.linalg.cond(sq, 1), 1e-4)


def test_scipy_linalg():
    a = _spd(4, seed=4)
    b = _gen((4, 2), seed=5)
    c, lower = esl.cho_factor(a)
    assert lower is False
    _close(c, np.linalg.cholesky(a).T, 1e-5)
    _close(esl.cho_solve((c, lower), b), np.linalg.solve(a, b), 1e-4)
    _close(esl.cho_solve(esl.cho_factor(a, lower=True), b[:, 0]), np.linalg.solve(a, b[:, 0]), 1e-4)
    L = np.tril(a)
    _close(esl.solve_triangular(L, b, lower=True), np.linalg.solve(L, b), 1e-4)
    _close(esl.solve_triangular(L, b, lower=True, trans="T"), np.linalg.solve(L.T, b), 1e-4)
    U = np.triu(a)
    Uu = U - np.diag(np.diag(U)) + np.eye(4, dtype=np.float32)
    _close(esl.solve_triangular(U, b[:, 0]), np.linalg.solve(U, b[:, 0]), 1e-4)
    _close(esl.solve_triangular(U, b, unit_diagonal=True), np.linalg.solve(Uu, b), 1e-4)
    _close(esl.solve(a, b, assume_a="pos"), np.linalg.solve(a, b), 1e-4)


def test_grads_vs_finite_differences(x64):
    r = np.random.RandomState(6)
    a = r.randn(4, 4) + 0.3 * np.eye(4)   # general: pivoting happens
    b = r.randn(4)
    spd = _spd(4, seed=6, dtype=np.float64)
    assert jnp.asarray(a).dtype == np.float64

    f_solve = jit(lambda a, b: jnp.sum(jnp.sin(la.solve(a, b))))
    ga, gb = ember.grad(f_solve, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, fd_grad(lambda a: f_solve(a, b), a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, fd_grad(lambda b: f_solve(a, b), b), rtol=1e-6, atol=1e-7)
    # analytic: d/dA = -A^{-T} g x^T
    x = np.linalg.solve(a, b)
    np.testing.assert_allclose(ga, -np.outer(np.linalg.solve(a.T, np.cos(x)), x), rtol=1e-9,
                               atol=1e-10)

    f_ld = jit(lambda a: la.slogdet(a)[1])
    np.testing.assert_allclose(ember.grad(f_ld)(a), np.linalg.inv(a).T, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(jit(ember.grad(la.det))(a),
                               np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-8, atol=1e-10)

    w = r.randn(4, 4)
    f_ch = jit(lambda a: jnp.sum(la.cholesky(a) * w))
    g = np.asarray(ember.grad(f_ch)(spd))
    np.testing.assert_allclose(g, g.T, atol=1e-12)   # symmetrized input, as in JAX
    # directional derivative along symmetric perturbations matches finite differences
    for seed in range(3):
        d = np.random.RandomState(seed).randn(4, 4)
        d = d + d.T
        fd = (float(f_ch(spd + 1e-6 * d)) - float(f_ch(spd - 1e-6 * d))) / 2e-6
        np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6)

    f_inv = jit(lambda a: jnp.sum(la.inv(a) ** 2))
    np.testing.assert_allclose(ember.grad(f_inv)(a), fd_grad(f_inv, a), rtol=1e-6, atol=1e-7)

    f_eig = jit(lambda a: jnp.sum(la.eigvalsh(a) ** 3))
    wv, vv = np.linalg.eigh(spd)
    np.testing.assert_allclose(ember.grad(f_eig)(spd), (vv * 3 * wv ** 2) @ vv.T, rtol=1e-8)


def test_float64_accuracy(x64):
    a = _spd(6, (2,), seed=9, dtype=np.float64)
    w = la.eigvalsh(a)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    g = _gen((5, 4), seed=1, dtype=np.float64)
    np.testing.assert_allclose(la.svd(g, compute_uv=False), np.linalg.svd(g, compute_uv=False),
                               rtol=1e-12)
    np.testing.assert_allclose(la.cholesky(a), np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
