"""ember.scipy.linalg beyond Cholesky and triangular solves: the special
matrices, LU, expm / expm_frechet, polar, qr_multiply and pivoted QR,
eigh_tridiagonal, Hessenberg / Schur and what builds on them (rsf2csf,
sqrtm, funm, solve_sylvester), against SciPy; dtypes and errors as JAX's."""

import numpy as np
import pytest
import scipy.linalg as sl

import ember
import ember.numpy as jnp
import ember.scipy.linalg as esl

# dir(jax.scipy.linalg) of JAX 0.10.2 (public names).
JAX_NAMES = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
    "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
    "fiedler", "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg",
    "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve",
    "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester",
    "solve_triangular", "sqrtm", "svd", "toeplitz",
]


def _rand(shape, seed, dtype=np.float32, scale=1.0):
    r = np.random.RandomState(seed)
    x = r.randn(*shape) * scale
    if np.dtype(dtype).kind == "c":
        x = x + 1j * r.randn(*shape) * scale
    return x.astype(dtype)


A4 = _rand((4, 4), 0)
B3 = _rand((3, 3), 1)
C43 = _rand((4, 3), 2)
A4C = _rand((4, 4), 3, np.complex64)
SPD4 = (A4 @ A4.T + np.eye(4)).astype(np.float32)


def close(actual, expected, tol=2e-5):
    """actual (ember, or a tuple of them) equals expected (NumPy / SciPy)
    in shape and, to a float32 tolerance relative to expected's scale, in
    value."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            close(a, e, tol)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale)


def test_jax_names_are_present():
    missing = [n for n in JAX_NAMES if not callable(getattr(esl, n, None))]
    assert not missing


# ----------------------------------------------------------------------------
# Special matrices
# ----------------------------------------------------------------------------

X5 = _rand((5,), 4)
Y4 = _rand((4,), 5)


@pytest.mark.parametrize("name,args", [
    ("toeplitz", (X5,)), ("toeplitz", (X5, Y4)), ("toeplitz", (X5 + 1j * X5[::-1],)),
    ("hankel", (X5,)), ("hankel", (X5, Y4)), ("circulant", (X5,)), ("companion", (X5,)),
    ("fiedler", (X5,)), ("leslie", (X5, Y4)), ("fiedler_companion", (X5 + 3,)),
    ("fiedler_companion", (Y4 + 3,)), ("fiedler_companion", (np.float32([2, 3]),)),
])
def test_vector_matrices(name, args):
    out = getattr(esl, name)(*args)
    want = getattr(sl, name)(*args)
    close(out, want)
    assert out.dtype == want.dtype


@pytest.mark.parametrize("n", [2, 3, 6, 7, 8])
def test_fiedler_companion_roots(n):
    a = _rand((n,), n) + 2
    close(esl.fiedler_companion(a), sl.fiedler_companion(a))
    ev = np.sort_complex(np.linalg.eigvals(np.asarray(esl.fiedler_companion(a), np.float64)))
    np.testing.assert_allclose(ev, np.sort_complex(np.roots(a.astype(np.float64))), atol=1e-4)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolution_matrix(mode):
    for m in (1, 2, 3, 4, 5):
        for n in (1, 2, 3, 4, 6):
            a = X5[:m]
            out = esl.convolution_matrix(a, n, mode)
            close(out, sl.convolution_matrix(a, n, mode))
            v = _rand((n,), 7)
            close(out @ v, np.convolve(a, v, mode), 1e-5)


def test_fixed_matrices():
    close(esl.block_diag(np.ones((2, 2)), X5, 3.0, np.zeros((0, 2))),
          sl.block_diag(np.ones((2, 2)), X5, 3.0, np.zeros((0, 2))).astype(np.float32))
    assert esl.block_diag().shape == (1, 0)
    assert esl.block_diag(np.eye(2, dtype=np.int32), np.ones(2, np.int8)).dtype == np.int32
    for n in (1, 2, 8):
        out = esl.hadamard(n)
        close(out, sl.hadamard(n))
        assert out.dtype == np.int32
    assert esl.hadamard(4, np.float32).dtype == np.float32
    close(esl.hadamard(2, np.complex64), sl.hadamard(2).astype(np.complex64))
    for n in (1, 5):
        close(esl.helmert(n), sl.helmert(n))
        close(esl.helmert(n, full=True), sl.helmert(n, full=True))
    for n in (0, 1, 6):
        close(esl.hilbert(n), sl.hilbert(n))
        close(esl.invhilbert(n), sl.invhilbert(n, exact=True).astype(np.float64), 1e-6)
        assert esl.hilbert(n).dtype == esl.invhilbert(n).dtype == np.float32
        for kind in (None, "symmetric", "lower", "upper"):
            close(esl.pascal(n, kind), sl.pascal(n, kind or "symmetric").astype(np.float64))
            close(esl.invpascal(n, kind),
                  sl.invpascal(n, kind or "symmetric").astype(np.float64))
            assert esl.pascal(n, kind).dtype == np.float32
    close(esl.invpascal(7) @ esl.pascal(7), np.eye(7), 1e-4)
    for scale in (None, "sqrtn", "n"):
        out = esl.dft(6, scale)
        close(out, sl.dft(6, scale))
        assert out.dtype == np.complex64
    assert esl.dft(0).shape == (0, 0)


def test_special_matrix_dtypes():
    # As JAX's: integers stay integers where no division is involved.
    assert esl.toeplitz(np.int32([1, 2, 3])).dtype == np.int32
    assert esl.toeplitz(np.int32(5)).shape == (1, 1)
    assert esl.hankel(np.int32([1, 2]), np.float32([3, 4])).dtype == np.float32
    assert esl.circulant(np.int32([1, 2])).dtype == np.int32
    assert esl.convolution_matrix(np.int32([1, 2]), 3).dtype == np.int32
    assert esl.leslie(np.int32([1, 2]), np.int32([3])).dtype == np.int32
    assert esl.companion(np.int32([1, 2, 3])).dtype == np.float32
    assert esl.fiedler_companion(np.int32([1, 2, 3])).dtype == np.float32
    assert esl.fiedler(np.complex64([1, 2j])).dtype == np.float32
    assert esl.fiedler(np.int32([1, 4])).dtype == np.int32
    assert esl.fiedler_companion(np.float32(1)).shape == (0, 0)
    np.testing.assert_array_equal(esl.hadamard(2, np.uint8), [[1, 1], [1, 255]])


def test_special_matrices_batched():
    c = _rand((2, 3, 4), 8)
    r = _rand((3, 5), 9)
    close(esl.toeplitz(c, r), np.stack([[sl.toeplitz(c[i, j], r[j]) for j in range(3)]
                                        for i in range(2)]))
    close(esl.hankel(c, r), np.stack([[sl.hankel(c[i, j], r[j]) for j in range(3)]
                                      for i in range(2)]))
    m = c[0]
    for name in ("circulant", "companion", "fiedler"):
        close(getattr(esl, name)(m), np.stack([getattr(sl, name)(v) for v in m]))
    close(esl.fiedler_companion(m + 3), np.stack([sl.fiedler_companion(v + 3) for v in m]))
    close(esl.leslie(m, r[:, :3]), np.stack([sl.leslie(m[i], r[i, :3]) for i in range(3)]))
    close(esl.convolution_matrix(m, 3), np.stack([sl.convolution_matrix(v, 3) for v in m]))


def test_special_matrices_jit():
    f = ember.jit(lambda c, r: (esl.toeplitz(c, r), esl.hankel(c, r), esl.circulant(c),
                                esl.companion(c), esl.fiedler(c), esl.fiedler_companion(c),
                                esl.leslie(c, r), esl.block_diag(c, r),
                                esl.convolution_matrix(c, 3, "same")))
    out = f(X5, Y4)
    want = (sl.toeplitz(X5, Y4), sl.hankel(X5, Y4), sl.circulant(X5), sl.companion(X5),
            sl.fiedler(X5), sl.fiedler_companion(X5), sl.leslie(X5, Y4),
            sl.block_diag(X5, Y4), sl.convolution_matrix(X5, 3, "same"))
    close(out, want)


def test_special_matrix_errors():
    with pytest.raises(TypeError, match="ndarray or scalar"):
        esl.toeplitz([1, 2, 3])
    with pytest.raises(TypeError, match="ndarray or scalar"):
        esl.hankel(X5, [1, 2])
    with pytest.raises(TypeError, match="ndarray or scalar"):
        esl.circulant([1, 2])
    with pytest.raises(ValueError, match="at most 2"):
        esl.block_diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="at least 2"):
        esl.companion(np.float32([1]))
    with pytest.raises(ValueError, match="positive integer"):
        esl.convolution_matrix(X5, 0)
    with pytest.raises(ValueError, match="mode"):
        esl.convolution_matrix(X5, 2, "foo")
    with pytest.raises(ValueError, match="1-dimensional"):
        esl.convolution_matrix(np.float32(2), 3)
    with pytest.raises(ValueError, match="at least 1"):
        esl.convolution_matrix(np.zeros(0), 3)
    with pytest.raises(ValueError, match="scale"):
        esl.dft(3, "x")
    with pytest.raises(ValueError, match="complex"):
        esl.dft(3, dtype=np.float32)
    with pytest.raises(ValueError, match="power of 2"):
        esl.hadamard(3)
    with pytest.raises(ValueError, match="power of 2"):
        esl.hadamard(0)
    with pytest.raises(ValueError, match="positive integer"):
        esl.helmert(0)
    with pytest.raises(ValueError, match="kind"):
        esl.pascal(3, "x")
    with pytest.raises(ValueError, match="kind"):
        esl.invpascal(3, "x")
    with pytest.raises(ValueError, match="one less"):
        esl.leslie(np.float32([1, 2]), np.float32([3, 4]))
    with pytest.raises(ValueError, match="at least 2"):
        esl.leslie(np.float32([1]), np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="1-dimensional"):
        esl.hankel(np.float32(3))
    with pytest.raises(ValueError, match="nonzero length"):
        esl.fiedler_companion(np.zeros(0))


# ----------------------------------------------------------------------------
# LU
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("a", [A4, C43, C43.T, A4C], ids=["square", "tall", "wide", "complex"])
def test_lu(a):
    p, low, up = esl.lu(a)
    close((p, low, up), sl.lu(a))
    assert p.dtype == np.real(a).dtype  # (a real permutation, as JAX 0.10.2's)
    close(esl.lu(a, permute_l=True), sl.lu(a, permute_l=True))
    lu_, piv = esl.lu_factor(a)
    want_lu, want_piv = sl.lu_factor(a)
    close(lu_, want_lu)
    np.testing.assert_array_equal(piv, want_piv)
    assert piv.dtype == np.int32


def test_lu_batched_and_int():
    a = np.stack([A4, 2 * A4 + 1])
    p, low, up = esl.lu(a)
    for i in range(2):
        close((p[i], low[i], up[i]), sl.lu(a[i]))
    lu_, piv = esl.lu_factor(a)
    for i in range(2):
        close(lu_[i], sl.lu_factor(a[i])[0])
    assert all(x.dtype == np.float32 for x in esl.lu(np.eye(3, dtype=np.int32)))
    with pytest.raises(TypeError):
        esl.lu(np.ones(3, np.float32))


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_solve(trans):
    b = _rand((4, 2), 10)
    lf = esl.lu_factor(A4)
    close(esl.lu_solve(lf, b, trans=trans), sl.lu_solve(sl.lu_factor(A4), b, trans=trans), 1e-4)
    close(esl.lu_solve(lf, b[:, 0], trans=trans),
          sl.lu_solve(sl.lu_factor(A4), b[:, 0], trans=trans), 1e-4)
    close(esl.lu_solve(esl.lu_factor(A4C), b, trans=trans),
          sl.lu_solve(sl.lu_factor(A4C), b, trans=trans), 1e-4)


def test_lu_solve_shapes_and_errors():
    lf = esl.lu_factor(np.stack([A4, A4 + 2]))
    want = [np.linalg.solve(m, np.ones((4, 2))) for m in (A4, A4 + 2)]
    # As JAX's: b of lu's rank minus one whose last axis matches is a batch
    # of vectors; otherwise (a batch of) matrices, broadcast against lu.
    close(esl.lu_solve(lf, np.ones((4, 2), np.float32)), np.stack(want), 1e-4)
    close(esl.lu_solve(lf, np.ones((2, 4), np.float32)), np.stack(want)[:, :, 0], 1e-4)
    single = esl.lu_factor(A4)
    assert esl.lu_solve(single, np.ones((3, 4, 2))).shape == (3, 4, 2)
    assert esl.lu_solve(single, np.ones(4, np.int32)).dtype == np.float32
    assert esl.lu_solve(single, np.ones(4, np.complex64)).dtype == np.complex64
    with pytest.raises(ValueError, match="trans"):
        esl.lu_solve(single, np.ones(4), trans=3)
    with pytest.raises(ValueError):
        esl.lu_solve(single, np.ones((3, 4)))
    with pytest.raises(ValueError):
        esl.lu_solve(esl.lu_factor(C43), np.ones(4))


def test_lu_jit():
    f = ember.jit(lambda a, b: (esl.lu(a), esl.lu_solve(esl.lu_factor(a), b, trans=1)))
    (p, low, up), x = f(A4, C43)
    close((p, low, up), sl.lu(A4))
    close(x, np.linalg.solve(A4.T, C43), 1e-4)


# ----------------------------------------------------------------------------
# expm and expm_frechet
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [1e-3, 0.05, 0.3, 1.0, 3.0, 20.0])
def test_expm(scale):
    a = A4 * scale
    want = sl.expm(a.astype(np.float64))
    out = esl.expm(a)
    assert out.dtype == np.float32
    close(out, want, 2e-5 * max(1, scale))
    c = A4C * scale
    close(esl.expm(c), sl.expm(c.astype(np.complex128)), 2e-5 * max(1, scale))


def test_expm_float64(x64):
    a = _rand((5, 5), 11, np.float64)
    for scale in (1e-4, 0.01, 0.1, 0.5, 1.5, 4.0, 30.0):
        out = esl.expm(a * scale)
        assert out.dtype == np.float64
        want = sl.expm(a * scale)
        tol = 1e-12 * max(1, scale)   # (the conditioning grows with the norm)
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol * np.abs(want).max())


def test_expm_options_and_errors():
    close(esl.expm(np.stack([A4, -A4])), np.stack([sl.expm(A4), sl.expm(-A4)]), 1e-4)
    t = np.triu(A4)
    close(esl.expm(t, upper_triangular=True), sl.expm(t), 1e-4)
    close(esl.expm(np.eye(2, dtype=np.int32)), np.e * np.eye(2), 1e-6)
    assert esl.expm(np.zeros((0, 0), np.float32)).shape == (0, 0)
    # more squarings needed than allowed: NaN (as JAX)
    big = np.diag(np.float32([1e6, 1.0]))
    assert np.isnan(np.asarray(esl.expm(big))).all()
    assert np.isnan(np.asarray(esl.expm(-1e4 * np.eye(2, dtype=np.float32),
                                        max_squarings=3))).all()
    close(esl.expm(np.diag(np.float32([-1e4, 0.5]))), np.diag([0, np.exp(0.5)]), 1e-3)
    assert np.isnan(np.asarray(esl.expm(np.diag(np.float32([np.nan, 1]))))).all()
    with pytest.raises(ValueError, match="square"):
        esl.expm(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="square"):
        esl.expm(C43)
    with pytest.raises(TypeError, match="float16"):
        esl.expm(A4.astype(np.float16))


def test_expm_jit():
    f = ember.jit(lambda a: esl.expm(a))
    for scale in (0.1, 2.0, 10.0):   # one compiled program, every branch
        close(f(A4 * scale), sl.expm(A4.astype(np.float64) * scale), 3e-5 * scale)


def test_expm_grad(x64):
    r = np.random.RandomState(12)
    w = r.randn(4, 4)
    for scale in (0.05, 1.0, 3.0):
        a = r.randn(4, 4) * scale

        def f(x):
            return jnp.sum(jnp.sin(esl.expm(x)) * w)

        g = np.asarray(ember.jit(ember.grad(f))(a))
        fd = np.zeros_like(a)
        h = 1e-6
        for i in range(4):
            for j in range(4):
                d = np.zeros_like(a)
                d[i, j] = h
                fd[i, j] = (float(f(a + d)) - float(f(a - d))) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5 * np.abs(fd).max())
        # the adjoint of the Frechet derivative is the derivative at A^T
        cot = np.cos(sl.expm(a)) * w
        np.testing.assert_allclose(g, sl.expm_frechet(a.T, cot, compute_expm=False),
                                   rtol=1e-8, atol=1e-8 * np.abs(g).max())


def test_expm_frechet():
    e = _rand((4, 4), 13)
    out = esl.expm_frechet(A4, e)
    close(out, sl.expm_frechet(A4.astype(np.float64), e.astype(np.float64)), 1e-4)
    assert out[1].dtype == np.float32
    close(esl.expm_frechet(A4, e, compute_expm=False, method="SPS"),
          sl.expm_frechet(A4, e, compute_expm=False), 1e-4)
    eb = np.stack([e, -e])
    close(esl.expm_frechet(np.stack([A4, A4]), eb)[1],
          np.stack([sl.expm_frechet(A4, x)[1] for x in eb]), 1e-4)
    jitted = ember.jit(lambda a, e: esl.expm_frechet(a, e))(A4, e)
    close(jitted, sl.expm_frechet(A4, e), 1e-4)
    with pytest.raises(ValueError, match="E to be"):
        esl.expm_frechet(A4, C43)
    with pytest.raises(ValueError, match="same shape"):
        esl.expm_frechet(A4, B3)
    with pytest.raises(ValueError, match="A to be"):
        esl.expm_frechet(np.ones(3), np.ones(3))


# ----------------------------------------------------------------------------
# polar
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["qdwh", "svd"])
def test_polar(method):
    close(esl.polar(A4, method=method), sl.polar(A4), 1e-4)
    close(esl.polar(C43, method=method), sl.polar(C43), 1e-4)
    close(esl.polar(C43.T, side="left", method=method), sl.polar(C43.T, side="left"), 1e-4)
    close(esl.polar(A4C, method=method), sl.polar(A4C), 1e-4)
    u, p = esl.polar(np.stack([A4, SPD4]), method=method)
    close((u[1], p[1]), sl.polar(SPD4), 1e-4)
    ill = (A4 @ np.diag([1, 1e-2, 1e-4, 1]) @ A4.T).astype(np.float32)
    u, p = esl.polar(ill, method=method)
    close(u @ p, ill, 1e-4)
    close(u.T @ u, np.eye(4), 1e-4)


def test_polar_svd_shapes_and_errors():
    close(esl.polar(C43.T, method="svd"), sl.polar(C43.T), 1e-4)
    close(esl.polar(C43, side="left", method="svd"), sl.polar(C43, side="left"), 1e-4)
    # as JAX's qdwh: a tall or square a for side="right", a wide one for "left"
    with pytest.raises(NotImplementedError, match="qdwh"):
        esl.polar(C43.T)
    with pytest.raises(NotImplementedError, match="qdwh"):
        esl.polar(A4, side="left")
    with pytest.raises(ValueError, match="Unknown"):
        esl.polar(A4, method="foo")
    with pytest.raises(ValueError, match="side"):
        esl.polar(A4, side="foo")
    with pytest.raises(ValueError, match="2-D"):
        esl.polar(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="inexact"):
        esl.polar(np.eye(3, dtype=np.int32))
    close(ember.jit(lambda a: esl.polar(a))(A4), sl.polar(A4), 1e-4)
    u, _ = esl.polar(A4, eps=1e-3, max_iterations=2)   # looser: stops early
    assert u.shape == (4, 4)


# ----------------------------------------------------------------------------
# QR with pivoting, qr_multiply
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("a", [A4, C43, C43.T, A4C], ids=["square", "tall", "wide", "complex"])
def test_qr_pivoting(a):
    q, r, p = esl.qr(a, pivoting=True)
    wq, wr, wp = sl.qr(a, pivoting=True)
    np.testing.assert_array_equal(p, wp)
    assert p.dtype == np.int32
    close((q, r), (wq, wr), 1e-5)
    close(esl.qr(a, pivoting=True, mode="economic")[:2],
          sl.qr(a, pivoting=True, mode="economic")[:2], 1e-5)
    r_only, p_only = esl.qr(a, pivoting=True, mode="r")
    close(r_only, sl.qr(a, pivoting=True, mode="r")[0], 1e-5)
    close(esl.qr(a, mode="r"), sl.qr(a, mode="r"), 1e-5)
    with pytest.raises(ValueError, match="mode"):
        esl.qr(a, mode="raw")


def test_qr_multiply():
    c = _rand((2, 4), 14)
    cl = _rand((3, 2), 15)
    close(esl.qr_multiply(C43, c), sl.qr_multiply(C43, c), 1e-5)
    close(esl.qr_multiply(C43, cl, mode="left"), sl.qr_multiply(C43, cl, mode="left"), 1e-5)
    close(esl.qr_multiply(C43, c, pivoting=True)[:2], sl.qr_multiply(C43, c, pivoting=True)[:2],
          1e-5)
    np.testing.assert_array_equal(esl.qr_multiply(C43, c, pivoting=True)[2],
                                  sl.qr_multiply(C43, c, pivoting=True)[2])
    close(esl.qr_multiply(C43.T, c[:, :3]), sl.qr_multiply(C43.T, c[:, :3]), 1e-5)
    ac = _rand((4, 3), 16, np.complex64)
    cc = _rand((2, 4), 17, np.complex64)
    close(esl.qr_multiply(ac, cc, conjugate=True), sl.qr_multiply(ac, cc, conjugate=True), 1e-5)
    close(esl.qr_multiply(ac, cc[:, :3].T, mode="left", conjugate=True),
          sl.qr_multiply(ac, cc[:, :3].T, mode="left", conjugate=True), 1e-5)
    # vectors
    out, r = esl.qr_multiply(C43, c[0])
    assert out.shape == (3,) and r.shape == (3, 3)
    close(out, sl.qr_multiply(C43, c[0])[0], 1e-5)
    out, _ = esl.qr_multiply(C43, cl[:, 0], mode="left")
    close(out, sl.qr_multiply(C43, cl[:, 0], mode="left")[0], 1e-5)
    # batches broadcast (as JAX's)
    out, r = esl.qr_multiply(np.stack([C43, 2 * C43]), np.stack([c, c]))
    assert out.shape == (2, 2, 3) and r.shape == (2, 3, 3)
    close(out[1], sl.qr_multiply(2 * C43, c)[0], 1e-5)
    out = ember.jit(lambda a, c: esl.qr_multiply(a, c))(C43, c)
    close(out, sl.qr_multiply(C43, c), 1e-5)
    with pytest.raises(ValueError, match="c @ Q"):
        esl.qr_multiply(C43, np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match="Q @ c"):
        esl.qr_multiply(C43, np.ones((4, 2), np.float32), mode="left")
    with pytest.raises(ValueError, match="right"):
        esl.qr_multiply(C43, c, mode="foo")


# ----------------------------------------------------------------------------
# eigh_tridiagonal
# ----------------------------------------------------------------------------

D6 = _rand((6,), 18)
E5 = _rand((5,), 19)


def test_eigh_tridiagonal():
    w = esl.eigh_tridiagonal(D6, E5, eigvals_only=True)
    close(w, sl.eigh_tridiagonal(D6, E5, eigvals_only=True), 1e-5)
    assert w.dtype == np.float32
    close(esl.eigh_tridiagonal(D6, E5, eigvals_only=True, select="i", select_range=(2, 4)),
          sl.eigh_tridiagonal(D6, E5, eigvals_only=True, select="i", select_range=(2, 4)), 1e-5)
    t = np.diag(D6) + np.diag(E5, 1) + np.diag(E5, -1)
    w, v = esl.eigh_tridiagonal(D6, E5)
    close(t @ v, v * w, 1e-5)
    close(v.T @ v, np.eye(6), 1e-5)
    w, v = esl.eigh_tridiagonal(D6, E5, select="i", select_range=(1, 3))
    assert w.shape == (3,) and v.shape == (6, 3)
    close(t @ v, v * w, 1e-5)
    # a loose tolerance: fewer bisection steps, still within it
    w = esl.eigh_tridiagonal(D6, E5, eigvals_only=True, tol=1e-2)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(t), atol=1e-2)
    # complex off-diagonal: Hermitian, e above the diagonal
    ec = (E5 * np.exp(1j * np.arange(5))).astype(np.complex64)
    tc = np.diag(D6) + np.diag(ec, 1) + np.diag(ec.conj(), -1)
    w, v = esl.eigh_tridiagonal(D6.astype(np.complex64), ec)
    assert w.dtype == np.float32 and v.dtype == np.complex64
    close(w, np.linalg.eigvalsh(tc), 1e-5)
    close(tc @ v, v * w, 1e-5)
    close(esl.eigh_tridiagonal(D6[:1], E5[:0], eigvals_only=True), D6[:1])
    assert esl.eigh_tridiagonal(D6[:0], E5[:0], eigvals_only=True).shape == (0,)


def test_eigh_tridiagonal_float64_and_jit(x64):
    d, e = _rand((30,), 20, np.float64), _rand((29,), 21, np.float64)
    np.testing.assert_allclose(esl.eigh_tridiagonal(d, e, eigvals_only=True),
                               sl.eigh_tridiagonal(d, e, eigvals_only=True), atol=1e-13)
    f = ember.jit(lambda d, e: esl.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                                    select_range=(3, 7)))
    np.testing.assert_allclose(f(d, e), sl.eigvalsh_tridiagonal(d, e, select="i",
                                                                select_range=(3, 7)),
                               atol=1e-13)


def test_eigh_tridiagonal_errors():
    with pytest.raises(NotImplementedError, match="select='v'"):
        esl.eigh_tridiagonal(D6, E5, eigvals_only=True, select="v", select_range=(0, 1))
    with pytest.raises(ValueError, match="select"):
        esl.eigh_tridiagonal(D6, E5, select="x")
    with pytest.raises(ValueError, match="select_range"):
        esl.eigh_tridiagonal(D6, E5, select="i")
    with pytest.raises(ValueError, match="out of range"):
        esl.eigh_tridiagonal(D6, E5, select="i", select_range=(2, 9))
    with pytest.raises(TypeError, match="float32 and float64"):
        esl.eigh_tridiagonal(np.int32([1, 2]), np.int32([1]))
    with pytest.raises(TypeError, match="same dtype"):
        esl.eigh_tridiagonal(D6.astype(np.complex64), E5)
    with pytest.raises(TypeError):
        esl.eigh_tridiagonal(D6, D6)


# ----------------------------------------------------------------------------
# Hessenberg and Schur
# ----------------------------------------------------------------------------

def test_hessenberg():
    close(esl.hessenberg(A4), sl.hessenberg(A4), 1e-5)
    close(esl.hessenberg(A4, calc_q=True), sl.hessenberg(A4, calc_q=True), 1e-5)
    close(esl.hessenberg(A4C, calc_q=True), sl.hessenberg(A4C, calc_q=True), 1e-5)
    h, q = esl.hessenberg(np.stack([A4, SPD4]), calc_q=True)
    close((h[1], q[1]), sl.hessenberg(SPD4, calc_q=True), 1e-5)
    close(ember.jit(lambda a: esl.hessenberg(a))(A4), sl.hessenberg(A4), 1e-5)
    with pytest.raises(TypeError, match="dtype int32"):
        esl.hessenberg(np.eye(3, dtype=np.int32))
    with pytest.raises(ValueError, match="n, n"):
        esl.hessenberg(C43)
    with pytest.raises(TypeError, match="rank"):
        esl.hessenberg(np.ones(3, np.float32))


def _match_eigenvalues(got, want):
    got = list(got)
    for x in want:
        k = int(np.argmin(np.abs(np.asarray(got) - x)))
        assert abs(got[k] - x) <= 1e-4 * max(1, abs(x)), (got[k], x)
        got.pop(k)


def _check_real_schur(a, t, z, tol=1e-5):
    t, z = np.asarray(t, np.float64), np.asarray(z, np.float64)
    n = a.shape[-1]
    close(z @ t @ z.T, a, tol)
    close(z.T @ z, np.eye(n), tol)
    assert not np.tril(t, -2).any()
    sub = np.diag(t, -1)
    assert not (sub[:-1] != 0)[sub[1:] != 0].any()          # no overlapping blocks
    for k in np.nonzero(sub)[0]:                              # LAPACK's standard form
        blk = t[k:k + 2, k:k + 2]
        assert abs(blk[0, 0] - blk[1, 1]) <= 1e-5 * max(1, np.abs(blk).max())
        assert blk[0, 1] * blk[1, 0] < 0
    _match_eigenvalues(np.linalg.eigvals(t), np.linalg.eigvals(a.astype(np.float64)))


def _check_complex_schur(a, t, z, tol=1e-5):
    t, z = np.asarray(t, np.complex128), np.asarray(z, np.complex128)
    n = a.shape[-1]
    close(z @ t @ z.conj().T, a, tol)
    close(z.conj().T @ z, np.eye(n), tol)
    assert not np.tril(t, -1).any()
    _match_eigenvalues(np.diag(t), np.linalg.eigvals(a.astype(np.complex128)))


HARD = {
    "random": _rand((6, 6), 22),
    "symmetric": (lambda m: m + m.T)(_rand((6, 6), 23)),
    "permutation": np.roll(np.eye(6, dtype=np.float32), 1, 0),
    "rotations": sl.block_diag(*[np.float32([[0, 1], [-1, 0]])] * 3),
    "zeros": np.zeros((6, 6), np.float32),
    "companion": sl.companion(_rand((7,), 24)).astype(np.float32),
    "integers": np.random.RandomState(25).randint(-2, 3, (6, 6)).astype(np.float32),
    "jordan": (np.eye(6) + np.eye(6, k=1)).astype(np.float32),
}


@pytest.mark.parametrize("name", list(HARD))
def test_schur(name):
    a = HARD[name]
    t, z = esl.schur(a)
    assert t.dtype == z.dtype == np.float32
    _check_real_schur(a, t, z)
    t, z = esl.schur(a, output="complex")
    assert t.dtype == z.dtype == np.complex64
    _check_complex_schur(a, t, z)
    ac = (a + 1j * _rand((6, 6), 26)).astype(np.complex64)
    t, z = esl.schur(ac)          # complex input: complex Schur form, as JAX's
    assert t.dtype == np.complex64
    _check_complex_schur(ac, t, z)


def test_schur_small_batched_jit_and_errors():
    for n in (1, 2):
        a = _rand((n, n), 27)
        _check_real_schur(a, *esl.schur(a))
        _check_complex_schur(a, *esl.schur(a, "complex"))
    t, z = esl.schur(np.float32([[1, 2], [-3, 1]]))       # a complex pair
    _check_real_schur(np.float32([[1, 2], [-3, 1]]), t, z)
    assert esl.schur(np.zeros((0, 0), np.float32))[0].shape == (0, 0)
    t, z = esl.schur(np.stack([A4, 2 * A4]))
    _check_real_schur(2 * A4, t[1], z[1])
    t, z = ember.jit(lambda a: esl.schur(a))(A4)
    _check_real_schur(A4, t, z)
    with pytest.raises(ValueError, match="output"):
        esl.schur(A4, output="x")
    with pytest.raises(TypeError, match="dtype int32"):
        esl.schur(np.eye(3, dtype=np.int32))
    with pytest.raises(ValueError, match="square"):
        esl.schur(C43)
    with pytest.raises(TypeError, match="rank"):
        esl.schur(np.ones(3, np.float32))


def test_schur_float64(x64):
    a = _rand((8, 8), 28, np.float64)
    t, z = esl.schur(a)
    assert t.dtype == np.float64
    np.testing.assert_allclose(np.asarray(z) @ np.asarray(t) @ np.asarray(z).T, a, atol=1e-12)
    _check_real_schur(a, t, z, 1e-12)
    t, z = esl.schur(a, "complex")
    _check_complex_schur(a, t, z, 1e-12)


def test_rsf2csf():
    t, z = sl.schur(A4)
    close(esl.rsf2csf(t, z), sl.rsf2csf(t, z), 1e-5)
    t, z = sl.schur(HARD["rotations"])
    close(esl.rsf2csf(t, z), sl.rsf2csf(t, z), 1e-5)
    tc, zc = esl.rsf2csf(*esl.schur(HARD["random"]))
    assert tc.dtype == zc.dtype == np.complex64
    _check_complex_schur(HARD["random"], tc, zc)
    tc, zc = ember.jit(lambda t, z: esl.rsf2csf(t, z))(t, z)
    close((tc, zc), sl.rsf2csf(t, z), 1e-5)
    assert esl.rsf2csf(np.eye(2, dtype=np.int32), np.eye(2, dtype=np.int32))[0].dtype \
        == np.complex64
    with pytest.raises(ValueError, match="'T' must be square"):
        esl.rsf2csf(C43, A4)
    with pytest.raises(ValueError, match="'Z' must be square"):
        esl.rsf2csf(A4, C43)
    with pytest.raises(ValueError, match="must match"):
        esl.rsf2csf(A4, B3)


# ----------------------------------------------------------------------------
# sqrtm, funm, solve_sylvester
# ----------------------------------------------------------------------------

def test_sqrtm():
    x = esl.sqrtm(SPD4)
    assert x.dtype == np.complex64               # always complex, as JAX's
    close(x, sl.sqrtm(SPD4.astype(np.float64)), 1e-4)
    close(esl.sqrtm(A4), sl.sqrtm(A4.astype(np.complex128)), 1e-4)
    close(esl.sqrtm(A4C), sl.sqrtm(A4C.astype(np.complex128)), 1e-4)
    x = ember.jit(esl.sqrtm)(A4)
    close(x @ x, A4, 1e-4)
    assert np.isnan(np.asarray(esl.sqrtm(np.float32([[0, 1], [0, 0]])))).all()
    with pytest.raises(NotImplementedError, match="Blocked"):
        esl.sqrtm(A4, blocksize=2)
    with pytest.raises(ValueError, match="square"):
        esl.sqrtm(C43)


def test_funm():
    f = esl.funm(A4, jnp.exp)
    assert f.dtype == np.complex64
    close(f, sl.expm(A4.astype(np.float64)), 1e-4)
    close(esl.funm(SPD4, jnp.sin), sl.funm(SPD4.astype(np.float64), np.sin), 1e-4)
    close(esl.funm(A4C, jnp.cos), sl.funm(A4C.astype(np.complex128), np.cos), 1e-4)
    f, err = esl.funm(A4, jnp.exp, disp=False)
    want_f, want_err = sl.funm(A4, np.exp, disp=False)
    assert err.dtype == np.float32
    np.testing.assert_allclose(err, want_err, rtol=0.1)
    # coinciding eigenvalues of a diagonalizable matrix
    close(esl.funm(np.eye(3, dtype=np.float32), jnp.exp), np.e * np.eye(3), 1e-5)
    close(ember.jit(lambda a: esl.funm(a, jnp.exp))(A4), sl.expm(A4), 1e-4)
    with pytest.raises(ValueError, match="square"):
        esl.funm(np.stack([A4, A4]), jnp.exp)
    with pytest.raises(TypeError, match="dtype int32"):
        esl.funm(np.eye(2, dtype=np.int32), jnp.exp)


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(method):
    x = esl.solve_sylvester(A4, B3, C43, method=method)
    assert x.dtype == np.float32
    close(x, sl.solve_sylvester(A4.astype(np.float64), B3.astype(np.float64), C43), 1e-4)
    close(A4 @ x + x @ B3, C43, 1e-4)
    xc = esl.solve_sylvester(A4C, B3, C43, method=method)
    assert xc.dtype == np.complex64
    close(A4C @ xc + xc @ B3, C43, 1e-4)   # (scipy 1.17 is wrong for complex a, real b)
    b3c = B3.astype(np.complex128)
    close(esl.solve_sylvester(A4C, b3c, C43, method=method),
          sl.solve_sylvester(A4C.astype(np.complex128), b3c, C43), 1e-4)
    xb = esl.solve_sylvester(np.stack([A4, 2 * A4]), B3, C43, method=method)
    close(xb[1], sl.solve_sylvester(2 * A4.astype(np.float64), B3, C43), 1e-4)
    eye = np.eye(2, dtype=np.float32)
    assert np.isnan(np.asarray(esl.solve_sylvester(eye, -eye, eye, method=method))).all()
    close(esl.solve_sylvester(np.eye(2, dtype=np.int32), np.eye(2, dtype=np.int32),
                              np.eye(2, dtype=np.int32), method=method), eye / 2)


def test_solve_sylvester_jit_and_errors():
    x = ember.jit(lambda a, b, c: esl.solve_sylvester(a, b, c))(A4, B3, C43)
    close(x, sl.solve_sylvester(A4, B3, C43), 1e-4)
    with pytest.raises(ValueError, match="Unrecognized method"):
        esl.solve_sylvester(A4, B3, C43, method="foo")
    with pytest.raises(ValueError, match="Incompatible shapes"):
        esl.solve_sylvester(A4, B3, C43.T)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        esl.solve_sylvester(np.ones(3), B3, C43)


# ----------------------------------------------------------------------------
# The older functions, with scipy's signatures
# ----------------------------------------------------------------------------

def test_signatures_of_existing_functions():
    w, v = esl.eigh(A4)            # as JAX's: the Hermitian part
    close(w, np.linalg.eigvalsh((A4 + A4.T) / 2), 1e-5)
    close(esl.eigh(SPD4, eigvals_only=True, lower=False), np.linalg.eigvalsh(SPD4), 1e-4)
    with pytest.raises(NotImplementedError, match="b=None"):
        esl.eigh(SPD4, SPD4)
    with pytest.raises(NotImplementedError, match="type"):
        esl.eigh(SPD4, type=2)
    u, s, vh = esl.svd(A4, lapack_driver="gesvd")
    close(u * s @ vh, A4, 1e-5)
    close(esl.svd(A4, compute_uv=False), np.linalg.svd(A4, compute_uv=False), 1e-5)
    close(esl.det(A4, overwrite_a=True, check_finite=False), np.linalg.det(A4), 1e-5)
    close(esl.inv(A4, check_finite=False), np.linalg.inv(A4), 1e-4)
    b = np.ones(4, np.float32)
    up = np.triu(A4) + 5 * np.eye(4, dtype=np.float32)
    close(esl.solve(up, b, assume_a="pos", lower=False),
          sl.solve(up, b, assume_a="pos", lower=False), 1e-5)
    close(esl.solve(SPD4, b, assume_a="sym"), np.linalg.solve(SPD4, b), 1e-4)
    with pytest.raises(ValueError, match="assume_a"):
        esl.solve(SPD4, b, assume_a="foo")
