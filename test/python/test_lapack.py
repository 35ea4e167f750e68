"""`lax.linalg` (cholesky, lu, eigh, qr, svd, triangular_solve) and what
`jnp.linalg` / `scipy.linalg` build on them: the ops `ember.cholesky`,
`ember.lu`, ..., run by the runtime through LAPACK and BLAS
(scipy-openblas32) or its own loops."""

import numpy as np
import pytest
import scipy.linalg as sl

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember._mlir._mlir_libs import _ember_runtime
from ember._src import compiler
from ember.test_util import check_grads


def _spd(n, batch=(), seed=0, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dtype)


def _tri(n, k, lower, seed=1, dtype=np.float32):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) / n + 2 * np.eye(n)
    a = np.tril(a) if lower else np.triu(a)
    # the other triangle holds garbage the op must not read
    a = a + (np.triu(np.full((n, n), 7.0), 1) if lower else np.tril(np.full((n, n), 7.0), -1))
    return a.astype(dtype), rng.standard_normal((n, k)).astype(dtype)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_cholesky_values(dtype, tol, batch, x64):
    a = _spd(7, batch, dtype=dtype)
    out = jax.jit(lambda a: lax.linalg.cholesky(a))(a)
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out), np.linalg.cholesky(a), rtol=tol, atol=tol)


def test_cholesky_reads_the_lower_triangle_without_symmetrizing():
    a = _spd(5)
    garbage = a + np.triu(np.full((5, 5), 3.0, np.float32), 1)
    np.testing.assert_allclose(
        np.asarray(lax.linalg.cholesky(garbage, symmetrize_input=False)),
        np.linalg.cholesky(a), rtol=2e-5, atol=2e-5)


def test_cholesky_not_positive_definite_is_nan_per_matrix():
    a = np.stack([_spd(4), -np.eye(4, dtype=np.float32)])
    out = np.asarray(jnp.linalg.cholesky(a))
    np.testing.assert_allclose(out[0], np.linalg.cholesky(a[0]), rtol=2e-5, atol=2e-5)
    # JAX's: NaN in the lower triangle, zero above.
    assert np.isnan(np.tril(out[1])[np.tril_indices(4)]).all()
    assert (np.triu(out[1], 1) == 0).all()


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_triangular_solve_flags(left_side, lower, transpose_a, unit_diagonal):
    a, b = _tri(6, 3, lower)
    if not left_side:
        b = b.T.copy()
    x = np.asarray(lax.linalg.triangular_solve(
        a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
        unit_diagonal=unit_diagonal))
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        np.fill_diagonal(t, 1.0)
    op = t.T if transpose_a else t
    want = np.linalg.solve(op.astype(np.float64), b) if left_side else \
        np.linalg.solve(op.T.astype(np.float64), b.T).T
    np.testing.assert_allclose(x, want, rtol=1e-4, atol=1e-4)


def test_without_lapack_the_runtime_loops_agree():
    a = _spd(9, (2,))
    L = np.linalg.cholesky(a)
    b = np.random.default_rng(2).standard_normal((2, 9, 4)).astype(np.float32)
    f = jax.jit(lambda a, b: (lax.linalg.cholesky(a),
                              lax.linalg.triangular_solve(a, b, left_side=True, lower=True,
                                                          transpose_a=True)))
    try:
        for name in compiler.LAPACK_FUNCTIONS:
            _ember_runtime.set_lapack_function(name, 0)
        c, x = f(a, b)
        bad = jnp.linalg.cholesky(-np.eye(3, dtype=np.float32))
    finally:
        compiler._use_openblas()  # registers LAPACK again
    np.testing.assert_allclose(np.asarray(c), L, rtol=2e-5, atol=2e-5)
    want = np.linalg.solve(np.swapaxes(np.tril(a), -1, -2), b)
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-4, atol=1e-4)
    bad = np.asarray(bad)
    assert np.isnan(bad[np.tril_indices(3)]).all() and (np.triu(bad, 1) == 0).all()


def test_scipy_cho_solve_and_solve_triangular():
    import ember.scipy.linalg as esl

    a = _spd(40)
    b = np.random.default_rng(3).standard_normal((40, 5)).astype(np.float32)
    x = jax.jit(lambda a, b: esl.cho_solve(esl.cho_factor(a, lower=True), b))(a, b)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-3, atol=1e-3)
    L = np.linalg.cholesky(a)
    np.testing.assert_allclose(np.asarray(esl.solve_triangular(L, b, lower=True, trans="T")),
                               sl.solve_triangular(L, b, lower=True, trans="T"),
                               rtol=1e-3, atol=1e-3)


def test_large_factorization_is_one_op():
    """cho_factor + cho_solve of 512 x 512 is one cholesky and two solves (the
    unrolled version took minutes to compile)."""
    import ember.scipy.linalg as esl

    a = _spd(512)
    b = np.random.default_rng(4).standard_normal((512, 64)).astype(np.float32)
    f = jax.jit(lambda a, b: esl.cho_solve(esl.cho_factor(a, lower=True), b))
    text = f.trace(a, b).lower().as_text("optimize")
    assert text.count("ember.cholesky") == 1 and text.count("ember.triangular_solve") == 2
    np.testing.assert_allclose(np.asarray(f(a, b)), np.linalg.solve(a.astype(np.float64), b),
                               rtol=2e-3, atol=2e-3)


def test_half_precision_computes_in_f32():
    a = _spd(4).astype(np.float16)
    out = jnp.linalg.cholesky(a)
    assert out.dtype == np.float16
    np.testing.assert_allclose(np.asarray(out, np.float32),
                               np.linalg.cholesky(a.astype(np.float32)), rtol=3e-3, atol=3e-3)


def test_grads_against_finite_differences(x64):
    a = _spd(4, dtype=np.float64)
    check_grads(lambda a: lax.linalg.cholesky(a), (a,), order=2, modes=("fwd", "rev"))
    t, b = _tri(4, 2, True, dtype=np.float64)
    for transpose_a in (False, True):
        for unit in (False, True):
            def f(t, b, transpose_a=transpose_a, unit=unit):
                return lax.linalg.triangular_solve(t, b, left_side=True, lower=True,
                                                   transpose_a=transpose_a, unit_diagonal=unit)
            check_grads(f, (t, b), order=2, modes=("fwd", "rev"))
    check_grads(lambda a, b: jnp.linalg.solve(a, b), (a, b), order=1, modes=("fwd", "rev"))


def test_vmap_matches_a_loop():
    a = _spd(5, (3,))
    b = np.random.default_rng(5).standard_normal((3, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(jax.vmap(lax.linalg.cholesky)(a)),
                               np.linalg.cholesky(a), rtol=2e-5, atol=2e-5)
    L = np.linalg.cholesky(a[0])
    solve = lambda b: lax.linalg.triangular_solve(L, b, left_side=True, lower=True)  # noqa: E731
    np.testing.assert_allclose(np.asarray(jax.vmap(solve)(b)),
                               np.stack([np.linalg.solve(L, bi) for bi in b]),
                               rtol=1e-4, atol=1e-4)
    both = jax.vmap(lambda a, b: lax.linalg.triangular_solve(
        lax.linalg.cholesky(a), b, left_side=True, lower=True))(a, b)
    np.testing.assert_allclose(np.asarray(both),
                               np.stack([np.linalg.solve(np.linalg.cholesky(ai), bi)
                                         for ai, bi in zip(a, b)]), rtol=1e-4, atol=1e-4)


def test_bad_input_raises_at_the_users_line():
    with pytest.raises(TypeError, match="square matrices"):
        lax.linalg.cholesky(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="float32, float64, complex64 or complex128"):
        lax.linalg.cholesky(np.eye(2, dtype=np.int32), symmetrize_input=False)
    with pytest.raises(TypeError, match="does not match"):
        lax.linalg.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 1), np.float32),
                                    left_side=True)


@pytest.mark.parametrize("lower", [True, False])
def test_scipy_cholesky_reads_one_triangle(lower):
    """As JAX's (and SciPy's): the factor of the named triangle, not of the
    symmetrized matrix; cho_solve solves with the factor as it is."""
    import ember.scipy.linalg as esl

    a = _spd(6)
    junk = np.full((6, 6), 5.0, np.float32)
    given = a + (np.triu(junk, 1) if lower else np.tril(junk, -1))
    c = np.asarray(esl.cholesky(given, lower=lower))
    np.testing.assert_allclose(c, sl.cholesky(a, lower=lower), rtol=2e-5, atol=2e-5)
    b = np.random.default_rng(6).standard_normal((6, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(esl.cho_solve((c, lower), b)),
                               np.linalg.solve(a.astype(np.float64), b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6), (2, 3, 3)])
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_lu_matches_lapack(shape, dtype, tol, x64):
    a = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    lu, piv, perm = jax.jit(lax.linalg.lu)(a)
    assert piv.dtype == np.int32 and perm.dtype == np.int32
    m, n = shape[-2:]
    k = min(m, n)
    for i in np.ndindex(shape[:-2]):
        want_lu, want_piv = sl.lu_factor(a[i].astype(np.float64)) if m == n else (None, None)
        L = np.tril(np.asarray(lu)[i], -1)[:, :k] + np.eye(m, k)
        U = np.triu(np.asarray(lu)[i])[:k]
        np.testing.assert_allclose(L @ U, a[i][np.asarray(perm)[i]], rtol=10 * tol,
                                   atol=10 * tol)
        if want_piv is not None:
            np.testing.assert_array_equal(np.asarray(piv)[i], want_piv)
            np.testing.assert_allclose(np.asarray(lu)[i], want_lu, rtol=10 * tol, atol=10 * tol)


def test_lu_without_lapack_and_singular():
    a = np.random.default_rng(8).standard_normal((6, 6)).astype(np.float32)
    sing = np.ones((3, 3), np.float32)
    try:
        for name in compiler.LAPACK_FUNCTIONS:
            _ember_runtime.set_lapack_function(name, 0)
        lu, piv, perm = lax.linalg.lu(a)
        slu = lax.linalg.lu(sing)[0]
    finally:
        compiler._use_openblas()
    want_lu, want_piv = sl.lu_factor(a)
    np.testing.assert_allclose(np.asarray(lu), want_lu, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(piv), want_piv)
    assert np.asarray(lax.linalg.lu(sing)[0])[2, 2] == 0 == np.asarray(slu)[2, 2]


def test_large_solve_inv_det_compile_quickly():
    """solve, inv and slogdet of 256 x 256 are one LU each (unrolled, a 128 x
    128 solve took 15 s to compile)."""
    import time

    n = 256
    a = (np.random.default_rng(9).standard_normal((n, n)) + n ** 0.5 * np.eye(n)).astype(
        np.float32)
    b = np.random.default_rng(10).standard_normal((n, 3)).astype(np.float32)
    t = time.perf_counter()
    x = jax.jit(jnp.linalg.solve)(a, b)
    inv = jax.jit(jnp.linalg.inv)(a)
    sign, logdet = jax.jit(jnp.linalg.slogdet)(a)
    assert time.perf_counter() - t < 20
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a64, b), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(inv), np.linalg.inv(a64), rtol=1e-3, atol=1e-3)
    ws, wl = np.linalg.slogdet(a64)
    assert float(sign) == ws
    np.testing.assert_allclose(float(logdet), wl, rtol=1e-4)


def test_lu_solve_det_grads(x64):
    a = np.random.default_rng(11).standard_normal((4, 4)) + 3 * np.eye(4)
    b = np.random.default_rng(12).standard_normal((4, 2))
    check_grads(lambda a: lax.linalg.lu(a)[0], (a,), order=2, modes=("fwd", "rev"))
    check_grads(jnp.linalg.solve, (a, b), order=2, modes=("fwd", "rev"))
    check_grads(jnp.linalg.det, (a,), order=1, modes=("fwd", "rev"))
    check_grads(jnp.linalg.inv, (a,), order=1, modes=("fwd", "rev"))

@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 3, 5), (2, 5, 3)])
def test_rectangular_lu_grads(shape, x64):
    """L completed to m x m and U to n x n with identity blocks (JAX's rule;
    JAX's gradient of sum(w * lu) for the 5 x 3 and 3 x 5 cases here equals
    this one to 1e-15, checked by hand)."""
    rng = np.random.default_rng(14)
    a = rng.standard_normal(shape)
    check_grads(lambda a: lax.linalg.lu(a)[0], (a,), order=2, modes=("fwd", "rev"))
    c = a + 1j * rng.standard_normal(shape)
    check_grads(lambda a: lax.linalg.lu(a)[0], (c,), order=1, modes=("fwd", "rev"))


def test_lu_vmap():
    a = np.random.default_rng(13).standard_normal((3, 4, 4)).astype(np.float32)
    lu_b, piv_b, perm_b = jax.vmap(lax.linalg.lu)(a)
    for i in range(3):
        lu, piv, perm = lax.linalg.lu(a[i])
        np.testing.assert_allclose(np.asarray(lu_b[i]), np.asarray(lu), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(piv_b[i]), np.asarray(piv))
        np.testing.assert_array_equal(np.asarray(perm_b[i]), np.asarray(perm))


def _hpd(n, dtype, seed=14):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return (a @ a.conj().T / n + np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype,tol", [(np.complex64, 2e-5), (np.complex128, 1e-12)])
def test_complex_matrices(dtype, tol, x64):
    """Complex Hermitian Cholesky, LU, solves, inverse and determinants, as
    NumPy's (LAPACK's c/z functions through the runtime)."""
    a = _hpd(6, dtype)
    b = (np.random.default_rng(15).standard_normal((6, 2)) * (1 + 2j)).astype(dtype)
    L = jax.jit(jnp.linalg.cholesky)(a)
    assert L.dtype == dtype
    np.testing.assert_allclose(np.asarray(L), np.linalg.cholesky(a), rtol=tol, atol=tol)
    g = (np.random.default_rng(16).standard_normal((6, 6)) * (1 - 1j) + 3 * np.eye(6)).astype(dtype)
    t = 100 * tol
    np.testing.assert_allclose(np.asarray(jnp.linalg.solve(g, b)), np.linalg.solve(g, b),
                               rtol=t, atol=t)
    np.testing.assert_allclose(np.asarray(jnp.linalg.inv(g)), np.linalg.inv(g), rtol=t, atol=t)
    np.testing.assert_allclose(complex(jnp.linalg.det(g)), np.linalg.det(g), rtol=t)
    sign, logdet = jnp.linalg.slogdet(g)
    want_sign, want_logdet = np.linalg.slogdet(g)
    assert np.asarray(logdet).dtype == np.real(np.zeros((), dtype)).dtype
    np.testing.assert_allclose(complex(sign), want_sign, rtol=t, atol=t)
    np.testing.assert_allclose(float(logdet), want_logdet, rtol=t)
    import ember.scipy.linalg as esl

    for lower in (True, False):
        c = esl.cho_factor(a, lower=lower)
        np.testing.assert_allclose(np.asarray(esl.cho_solve(c, b)), np.linalg.solve(a, b),
                                   rtol=t, atol=t)
    Lnp = np.linalg.cholesky(a)
    np.testing.assert_allclose(np.asarray(esl.solve_triangular(Lnp, b, lower=True, trans="C")),
                               sl.solve_triangular(Lnp, b, lower=True, trans="C"),
                               rtol=t, atol=t)


def test_complex_without_lapack():
    a = _hpd(5, np.complex64)
    try:
        for name in compiler.LAPACK_FUNCTIONS:
            _ember_runtime.set_lapack_function(name, 0)
        L = jnp.linalg.cholesky(a)
        x = jnp.linalg.solve(a, np.ones((5, 1), np.complex64))
    finally:
        compiler._use_openblas()
    np.testing.assert_allclose(np.asarray(L), np.linalg.cholesky(a), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, np.ones((5, 1))),
                               rtol=1e-4, atol=1e-4)


def test_complex_derivatives(x64):
    """JVPs of complex Cholesky and solve against finite differences (JAX's
    conventions for holomorphic-by-parts maps: the tangent map itself)."""
    a = _hpd(4, np.complex128)
    da = _hpd(4, np.complex128, seed=17) - np.eye(4)
    eps = 1e-6
    for f in (jnp.linalg.cholesky, jnp.linalg.inv, jnp.linalg.det):
        _, tangent = jax.jvp(f, (a,), (da,))
        fd = (np.asarray(f(a + eps * da)) - np.asarray(f(a - eps * da))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(tangent), fd, rtol=1e-6, atol=1e-6)
    # Reverse mode: JAX's gradient of a real function of complex entries is
    # df/dx - i df/dy, entry by entry.
    w = (np.arange(16).reshape(4, 4) * (0.3 - 0.1j) + 1).astype(np.complex128)
    for f in (jnp.linalg.cholesky, lambda a: jnp.linalg.solve(a, np.ones((4, 1)))):
        def loss(a, f=f):
            y = f(a)
            return jnp.real(jnp.sum(w[:, :y.shape[-1]] * y))
        g = np.asarray(jax.grad(loss)(a))
        fd = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            for step, scale in ((1, 1), (1j, -1j)):
                e = np.zeros_like(a)
                e[i] = step * eps
                fd[i] += scale * (float(loss(a + e)) - float(loss(a - e))) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_check_grads_on_complex_functions(x64):
    """`test_util.check_grads` projects as JAX's does (conj(vjp(conj(ct))))
    and so holds for complex functions, holomorphic or not, and still
    catches a conjugated rule."""
    a = _hpd(4, np.complex128)
    check_grads(jnp.linalg.cholesky, (a,), order=1, modes=("fwd", "rev"))
    check_grads(lambda a: jnp.linalg.solve(a, np.ones((4, 1))), (a,), order=2,
                modes=("fwd", "rev"))
    check_grads(lambda z: jnp.abs(z) * jnp.conj(z), (a,), order=2, modes=("fwd", "rev"))

    @jax.custom_vjp
    def times_2j(x):
        return x * 2j

    times_2j.defvjp(lambda x: (times_2j(x), None), lambda _, g: (g * -2j,))  # conjugated
    with pytest.raises(AssertionError):
        check_grads(times_2j, (a,), order=1, modes=("rev",))
    times_2j.defvjp(lambda x: (times_2j(x), None), lambda _, g: (g * 2j,))
    check_grads(times_2j, (a,), order=1, modes=("rev",))


def _check_eigh(a, v, w, tol):
    a64 = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    v, w = np.asarray(v).astype(a64.dtype), np.asarray(w)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a64), rtol=tol, atol=tol)
    np.testing.assert_allclose(a64 @ v, v * w[..., None, :], rtol=tol, atol=tol)
    np.testing.assert_allclose(np.swapaxes(v.conj(), -1, -2) @ v,
                               np.broadcast_to(np.eye(a.shape[-1]), a.shape), atol=tol)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-10),
                                       (np.complex64, 1e-4), (np.complex128, 1e-10)])
def test_eigh_values_and_vectors(dtype, tol, x64):
    rng = np.random.default_rng(18)
    a = rng.standard_normal((2, 6, 6))
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal((2, 6, 6))
    a = (a + np.swapaxes(a.conj(), -1, -2)).astype(dtype)
    w, v = jax.jit(jnp.linalg.eigh)(a)
    assert w.dtype == np.real(np.zeros((), dtype)).dtype and v.dtype == dtype
    _check_eigh(a, v, w, tol)
    np.testing.assert_allclose(np.asarray(jnp.linalg.eigvalsh(a)), np.linalg.eigvalsh(a),
                               rtol=tol, atol=tol)


def test_eigh_reads_one_triangle_and_runs_large():
    a = _spd(200) - np.eye(200, dtype=np.float32)
    junk = a + np.triu(np.full((200, 200), 9.0, np.float32), 1)
    v, w = lax.linalg.eigh(junk, symmetrize_input=False)
    _check_eigh(a, v, w, 2e-3)
    w_upper, _ = jnp.linalg.eigh(a + np.tril(np.full((200, 200), 9.0, np.float32), -1),
                                 UPLO="U", symmetrize_input=False)
    np.testing.assert_allclose(np.asarray(w_upper), np.asarray(w), rtol=1e-4, atol=1e-4)


def test_eigh_without_lapack():
    a = _spd(7, (2,)) - 0.5 * np.eye(7, dtype=np.float32)
    c = _hpd(3, np.complex64)
    try:
        for name in compiler.LAPACK_FUNCTIONS:
            _ember_runtime.set_lapack_function(name, 0)
        w, v = jnp.linalg.eigh(a)
        wc, _ = jnp.linalg.eigh(c)
    finally:
        compiler._use_openblas()
    _check_eigh(a, v, w, 1e-4)
    assert np.isnan(np.asarray(wc)).all()  # complex eigh needs LAPACK


def test_eigh_derivatives(x64):
    rng = np.random.default_rng(19)
    a = rng.standard_normal((4, 4))
    a = a + a.T
    # eigenvalues, and eigenvectors through a sign-invariant function of them
    check_grads(lambda a: jnp.linalg.eigh(a)[0], (a,), order=2, modes=("fwd", "rev"))
    check_grads(lambda a: jnp.abs(jnp.linalg.eigh(a)[1]), (a,), order=1, modes=("fwd", "rev"))
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    c = c + c.conj().T
    check_grads(lambda c: jnp.linalg.eigh(c)[0], (c,), order=1, modes=("fwd", "rev"))
    w_b, v_b = jax.vmap(jnp.linalg.eigh)(np.stack([a, 2 * a]))
    np.testing.assert_allclose(np.asarray(w_b[1]), 2 * np.linalg.eigvalsh(a), rtol=1e-10)


def test_results_are_jax_named_tuples():
    a = _spd(3)
    res = jnp.linalg.eigh(a)
    assert type(res).__name__ == "EighResult" and res._fields == ("eigenvalues", "eigenvectors")
    assert jnp.linalg.slogdet(a)._fields == ("sign", "logabsdet")
    assert jnp.linalg.qr(a)._fields == ("Q", "R")
    assert jnp.linalg.svd(a)._fields == ("U", "S", "Vh")
    assert not isinstance(jnp.linalg.qr(a, mode="r"), tuple)
    assert not isinstance(jnp.linalg.svd(a, compute_uv=False), tuple)
    out = jax.jit(jnp.linalg.eigh)(a)  # a pytree through jit
    assert type(out).__name__ == "EighResult"
    np.testing.assert_allclose(np.asarray(out.eigenvalues), np.linalg.eigvalsh(a), rtol=1e-4)


# QR and SVD: `ember.qr` (geqrf + orgqr/ungqr) and `ember.svd` (gesdd).

def _rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _eye_stack(x):
    """Identity matrices with x's batch shape and x's trailing size."""
    return np.broadcast_to(np.eye(x.shape[-1]), x.shape[:-2] + (x.shape[-1],) * 2)


_DTYPES = [(np.float32, 1e-4), (np.float64, 1e-10), (np.complex64, 1e-4),
           (np.complex128, 1e-10)]


@pytest.mark.parametrize("dtype,tol", _DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 3), (2, 1, 3, 5)])
def test_qr_matches_lapack(shape, dtype, tol, x64):
    a = _rand(shape, dtype, 30)
    for mode in ("reduced", "complete"):
        q, r = jax.jit(jnp.linalg.qr, static_argnames="mode")(a, mode=mode)
        qn, rn = np.linalg.qr(a, mode=mode)  # LAPACK too: the same signs
        assert q.dtype == dtype and q.shape == qn.shape and r.shape == rn.shape
        np.testing.assert_allclose(np.asarray(q), qn, rtol=tol * 10, atol=tol * 10)
        np.testing.assert_allclose(np.asarray(r), rn, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(np.asarray(jnp.linalg.qr(a, mode="r")),
                               np.linalg.qr(a, mode="r"), rtol=tol * 10, atol=tol * 10)
    q, r = lax.linalg.qr(a, full_matrices=False)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, rtol=tol * 10, atol=tol * 10)


def _check_svd(a, u, s, vh, tol, full):
    a = np.asarray(a)
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    m, n = a.shape[-2:]
    k = min(m, n)
    assert s.dtype == np.real(np.zeros((), a.dtype)).dtype
    assert u.shape[-2:] == (m, m if full else k) and vh.shape[-2:] == (n if full else k, n)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol)
    assert (np.diff(s, axis=-1) <= 0).all()
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a,
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(np.swapaxes(u.conj(), -1, -2) @ u, _eye_stack(u), atol=tol)
    np.testing.assert_allclose(vh @ np.swapaxes(vh.conj(), -1, -2),
                               _eye_stack(np.swapaxes(vh, -1, -2)), atol=tol)


@pytest.mark.parametrize("dtype,tol", _DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 3), (0, 3)])
def test_svd_values_and_vectors(shape, dtype, tol, x64):
    a = _rand(shape, dtype, 31)
    for full in (False, True):
        u, s, vh = jax.jit(jnp.linalg.svd, static_argnames="full_matrices")(
            a, full_matrices=full)
        _check_svd(a, u, s, vh, tol * 10, full)
        # gesdd on a itself (LAPACKE transposes): NumPy's and JAX's signs
        un, _, vhn = np.linalg.svd(a, full_matrices=full)
        np.testing.assert_allclose(np.asarray(u), un, rtol=tol * 10, atol=tol * 10)
        np.testing.assert_allclose(np.asarray(vh), vhn, rtol=tol * 10, atol=tol * 10)
    s = jnp.linalg.svdvals(a)
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a, compute_uv=False),
                               rtol=tol * 10, atol=tol * 10)


def test_svd_hermitian_subset_and_derived(x64):
    rng = np.random.default_rng(32)
    h = rng.standard_normal((5, 5)) + 1j * rng.standard_normal((5, 5))
    h = h + h.conj().T
    u, s, vh = jnp.linalg.svd(h, hermitian=True)
    _check_svd(h, u, s, vh, 1e-10, True)
    np.testing.assert_allclose(np.asarray(jnp.linalg.svd(h, hermitian=True, compute_uv=False)),
                               np.linalg.svd(h, compute_uv=False), rtol=1e-10)
    a = _rand((6, 4), np.complex128, 33)
    u, s, vh = lax.linalg.svd(a, full_matrices=False, subset_by_index=(1, 3))
    un, sn, vhn = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), sn[1:3], rtol=1e-10)
    np.testing.assert_allclose(np.abs(np.asarray(u)), np.abs(un[:, 1:3]), atol=1e-10)
    np.testing.assert_allclose(np.abs(np.asarray(vh)), np.abs(vhn[1:3]), atol=1e-10)
    with pytest.raises(ValueError, match="subset_by_index"):
        lax.linalg.svd(a, subset_by_index=(0, 9))
    # complex pinv / lstsq / matrix_rank / cond (JAX allows them; NumPy agrees)
    np.testing.assert_allclose(np.asarray(jnp.linalg.pinv(a)), np.linalg.pinv(a), atol=1e-10)
    b = _rand((6, 2), np.complex128, 34)
    x, resid, rank, sv = jnp.linalg.lstsq(a, b)
    xn, residn, rankn, svn = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(np.asarray(x), xn, atol=1e-10)
    np.testing.assert_allclose(np.asarray(resid), residn, atol=1e-10)
    assert int(rank) == rankn == 4
    low_rank = a[:, :2] @ _rand((2, 4), np.complex128, 35)
    assert int(jnp.linalg.matrix_rank(low_rank)) == np.linalg.matrix_rank(low_rank) == 2
    np.testing.assert_allclose(float(jnp.linalg.cond(a)), np.linalg.cond(a), rtol=1e-10)


def test_qr_svd_without_lapack(x64):
    """The runtime's loops: Householder QR with LAPACK's signs, one-sided
    Jacobi SVD (real; complex SVD needs LAPACK and gives NaNs)."""
    a = _rand((2, 5, 3), np.float64, 36)
    w = _rand((3, 5), np.float64, 37)
    c = _rand((4, 3), np.complex128, 38)
    rank1 = np.outer(np.arange(1.0, 5.0), np.ones(3))  # zero singular values
    try:
        for name in compiler.LAPACK_FUNCTIONS:
            _ember_runtime.set_lapack_function(name, 0)
        qr_out = [jnp.linalg.qr(x, mode="complete") for x in (a, w, c)]
        svd_out = [jnp.linalg.svd(x, full_matrices=full)
                   for x in (a, w, rank1) for full in (False, True)]
        bad = jnp.linalg.svd(c, compute_uv=False)
    finally:
        compiler._use_openblas()
    for x, (q, r) in zip((a, w, c), qr_out):
        qn, rn = np.linalg.qr(x, mode="complete")
        np.testing.assert_allclose(np.asarray(q), qn, atol=1e-12)
        np.testing.assert_allclose(np.asarray(r), rn, atol=1e-12)
    for i, x in enumerate((a, w, rank1)):
        for j, full in enumerate((False, True)):
            _check_svd(x, *svd_out[2 * i + j], 1e-10, full)
    assert np.isnan(np.asarray(bad)).all()


def test_qr_svd_derivatives(x64):
    """JVPs and VJPs against finite differences (U and V through
    sign-invariant functions of them where signs could flip)."""
    for shape in ((5, 3), (3, 3), (3, 5)):
        a = _rand(shape, np.float64, 40)
        check_grads(lambda a: jnp.linalg.qr(a), (a,), order=2, modes=("fwd", "rev"))
        check_grads(lambda a: jnp.linalg.svd(a, compute_uv=False), (a,), order=2,
                    modes=("fwd", "rev"))
        check_grads(lambda a: jnp.linalg.svd(a, full_matrices=False), (a,), order=1,
                    modes=("fwd", "rev"))
        check_grads(jnp.linalg.pinv, (a,), order=1, modes=("fwd", "rev"))
    c = _rand((4, 3), np.complex128, 41)
    check_grads(lambda a: jnp.linalg.qr(a), (c,), order=1, modes=("fwd", "rev"))
    check_grads(lambda a: jnp.linalg.svd(a, compute_uv=False), (c,), order=1,
                modes=("fwd", "rev"))
    # complex U and V are unique up to a phase per column: check a
    # phase-invariant function, U diag(s) V^H itself
    check_grads(lambda a: (lambda u, s, vh: (u * s[None, :].astype(u.dtype)) @ vh)(
        *jnp.linalg.svd(a, full_matrices=False)), (c,), order=1, modes=("fwd", "rev"))
    check_grads(lambda a: jnp.linalg.qr(a, mode="complete"), (_rand((3, 3), np.float64, 42),),
                order=1, modes=("fwd",))


def test_qr_svd_vmap_and_unsupported_derivatives():
    a = _rand((3, 5, 4), np.float32, 43)
    q, r = jax.vmap(jnp.linalg.qr)(a)
    s = jax.vmap(jnp.linalg.svdvals)(a)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(q[i]), np.linalg.qr(a[i])[0], atol=1e-5)
        np.testing.assert_allclose(np.asarray(s[i]), np.linalg.svd(a[i], compute_uv=False),
                                   rtol=1e-5)
    # (the message names the line that called qr)
    with pytest.raises(NotImplementedError, match=r"full_matrices[\s\S]*test_lapack.py:\d+"):
        jax.jvp(lambda a: jnp.linalg.qr(a, mode="complete"), (a[0],), (a[0],))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        jax.grad(lambda a: jnp.sum(jnp.linalg.svd(a)[0]))(a[0])
    q, r, p = lax.linalg.qr(a[0], pivoting=True)  # (37th session: geqp3)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), np.asarray(a[0])[:, np.asarray(p)],
                               atol=1e-4)


def test_large_qr_svd_are_one_call():
    a = _rand((300, 200), np.float32, 44)
    f = jax.jit(lambda a: (jnp.linalg.qr(a), jnp.linalg.svd(a, full_matrices=False)))
    (q, r), (u, s, vh) = f(a)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-4)
    _check_svd(a, u, s, vh, 1e-3, False)
    text = f.lower(a).as_text()
    assert text.count("ember.qr") == 1 and text.count("ember.svd") == 1
