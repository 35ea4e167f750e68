"""jnp.linalg's eig, eigvals, multi_dot, tensorinv and tensorsolve
(`ember._src.numpy.linalg`). eig / eigvals run LAPACK's geev on the host
(a pure_callback); the literals were recorded from JAX 0.10.2 (x64 off)."""

import importlib.util

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.numpy.linalg import _chain_order, _eig

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None

R3 = np.array([[1., 2., 0.], [-3., 1., 4.], [0.5, 2., -1.]], np.float32)
R4 = np.array([[2., -1., 0., 3.], [1., 0., -2., 1.], [4., 1., 1., 0.], [-1., 3., 2., -2.]],
              np.float32)
C3 = np.array([[1 + 1j, 2, 0.5j], [-1, 3 - 1j, 1], [2j, 0, -1 + 0.5j]], np.complex64)

# JAX 0.10.2: jnp.linalg.eig(R3), eig(R4), eig(C3).
R3_W = np.array([-2.3250735 + 0.j, 1.6625371 + 1.4025016j, 1.6625371 - 1.4025016j])
R3_V = np.array([[0.3469065 + 0.j, -0.71284556 + 0.j, -0.71284556 - 0.j],
                 [-0.57674456 + 0.j, -0.2361429 - 0.49988306j, -0.2361429 + 0.49988306j],
                 [0.7396091 + 0.j, -0.3984757 - 0.16559525j, -0.3984757 + 0.16559525j]])
R4_W = np.array([-1.8731242 + 2.7891815j, -1.8731242 - 2.7891815j, 2.746248 + 0.j,
                 2.0000005 + 0.j])
R4_V = np.array([[0.40272102 + 0.23050132j, 0.40272102 - 0.23050132j, 0.4490707 + 0.j,
                  -0.32579198 + 0.j],
                 [0.24863388 - 0.23050144j, 0.24863388 + 0.23050144j, -0.42058274 + 0.j,
                  0.62196624 + 0.j],
                 [-0.21291119 - 0.4473708j, -0.21291119 + 0.4473708j, 0.78780335 + 0.j,
                  -0.6812012 + 0.j],
                 [-0.651355 + 0.j, -0.651355 - 0.j, -0.02848831 + 0.j, 0.20732206 + 0.j]])
C3_W = np.array([-0.67194647 + 0.85540295j, 1.3886988 + 1.245032j, 2.2832468 - 1.6004354j])
C3_V = np.array([[0.16943017 - 0.15639184j, 0.7471927 + 0.j, 0.28455454 + 0.46727794j],
                 [-0.15294607 - 0.11987337j, 0.28775233 + 0.04708645j, 0.7885859 + 0.j],
                 [0.95345306 + 0.j, 0.17782655 + 0.57014245j, -0.28066635 - 0.00621726j]])


def check(actual, expected, dtype=None, rtol=1e-5, atol=1e-5):
    if dtype is not None:
        assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def check_vectors(v, expected, real_input):
    # Float32 real input runs SciPy's sgeev (JAX's); without SciPy, NumPy's
    # double-precision geev may flip a real eigenvector's sign.
    if real_input and not HAVE_SCIPY:
        check(np.abs(np.asarray(v)), np.abs(expected))
    else:
        check(v, expected)


def residual(a, w, v):
    a = np.asarray(a, np.complex128)
    return np.abs(a @ np.asarray(v) - np.asarray(v) * np.asarray(w)[..., None, :]).max()


# --------------------------------------------------------------------------
# eig / eigvals
# --------------------------------------------------------------------------


@pytest.mark.parametrize("a, w_ref, v_ref", [(R3, R3_W, R3_V), (R4, R4_W, R4_V),
                                             (C3, C3_W, C3_V)])
def test_eig_matches_jax(a, w_ref, v_ref):
    w, v = jnp.linalg.eig(a)
    check(w, w_ref, np.complex64)  # JAX's order
    assert v.dtype == np.complex64
    check_vectors(v, v_ref, a.dtype.kind == "f")
    check(np.linalg.norm(np.asarray(v), axis=0), np.ones(a.shape[0]))
    check(jnp.linalg.eigvals(a), w_ref, np.complex64)
    res = jnp.linalg.eig(a)
    assert type(res).__name__ == "EigResult"
    assert res.eigenvalues is res[0] and res.eigenvectors is res[1]


def test_eig_against_numpy_x64(x64):
    rng = np.random.default_rng(0)
    for a in (rng.standard_normal((5, 5)),
              rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))):
        w, v = jnp.linalg.eig(a)
        nw, nv = np.linalg.eig(a)
        assert w.dtype == v.dtype == np.complex128
        check(w, nw, rtol=1e-12, atol=1e-12)
        check(v, nv, rtol=1e-12, atol=1e-12)
        check(jnp.linalg.eigvals(a), np.linalg.eigvals(a), np.complex128, rtol=1e-12,
              atol=1e-12)


def test_eig_dtypes_and_edge_cases():
    assert jnp.linalg.eigvals(np.eye(2, dtype=np.int32)).dtype == np.complex64
    w, v = jnp.linalg.eig(np.zeros((0, 0), np.float32))
    assert w.shape == (0,) and v.shape == (0, 0) and w.dtype == np.complex64
    w, v = jnp.linalg.eig(np.zeros((2, 0, 0), np.float32))
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)
    # A non-finite matrix: NaNs for it only (JAX's failed-geev result).
    bad = np.stack([R3, R3])
    bad[0, 0, 0] = np.nan
    w, v = jnp.linalg.eig(bad)
    assert np.isnan(np.asarray(w[0])).all() and np.isnan(np.asarray(v[0])).all()
    check(w[1], R3_W)
    with pytest.raises(ValueError):
        jnp.linalg.eig(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError):
        jnp.linalg.eigvals(np.zeros(3, np.float32))


def test_eig_batched_jit_vmap():
    batch = np.stack([R3, R3.T, 2 * R3, R4[:3, :3]])
    w, v = jnp.linalg.eig(batch)
    assert w.shape == (4, 3) and v.shape == (4, 3, 3)
    check(w[0], R3_W)
    assert residual(batch, w, v) < 1e-4
    for f in (ember.jit(jnp.linalg.eig), ember.vmap(jnp.linalg.eig),
              ember.jit(ember.vmap(jnp.linalg.eig))):
        w2, v2 = f(batch)
        check(w2, w)
        check(v2, v)
    check(ember.jit(jnp.linalg.eigvals)(R4), R4_W)
    check(ember.vmap(jnp.linalg.eigvals)(batch), w)
    # vmap over a middle axis, inside jit, with other ops around.
    f = ember.jit(ember.vmap(lambda a: jnp.linalg.eigvals(2.0 * a) / 2.0, in_axes=1))
    check(f(np.moveaxis(batch, 0, 1)), w, rtol=1e-5, atol=1e-5)


def test_eigvals_jvp():
    # JAX 0.10.2: jax.jvp(jnp.linalg.eigvals, (R3,), (R4[:3, :3],)).
    w, dw = ember.jvp(jnp.linalg.eigvals, (R3,), (R4[:3, :3],))
    check(w, R3_W)
    check(dw, [1.7485235 + 0j, 0.625738 - 2.8466375j, 0.62573826 + 2.8466372j],
          np.complex64, atol=1e-4)
    # Finite differences (central, in float64 on the host).
    a, da = R3.astype(np.float64), R4[:3, :3].astype(np.float64)
    eps = 1e-6
    fd = (np.linalg.eigvals(a + eps * da) - np.linalg.eigvals(a - eps * da)) / (2 * eps)
    check(dw, fd, rtol=1e-4, atol=1e-4)
    # Under jit, and vmapped.
    check(ember.jit(lambda a, t: ember.jvp(jnp.linalg.eigvals, (a,), (t,)))(R3, da)[1], dw,
          atol=1e-4)
    ws, dws = ember.vmap(lambda a, t: ember.jvp(jnp.linalg.eigvals, (a,), (t,)))(
        np.stack([R3, R3]), np.stack([R4[:3, :3], R4[:3, :3]]))
    check(dws[1], dw, atol=1e-4)


def test_eigvals_grad():
    # d/dA sum(w^2) = d/dA trace(A @ A) = 2 A^T (JAX: the same, up to rounding).
    def f(a):
        return jnp.sum(jnp.real(jnp.linalg.eigvals(a) ** 2))

    check(ember.grad(f)(R4), 2 * R4.T, np.float32, atol=2e-5)
    check(ember.jit(ember.grad(f))(R4), 2 * R4.T, atol=2e-5)
    check(ember.grad(lambda a: jnp.sum(jnp.abs(jnp.linalg.eigvals(a))))(R3),
          _fd_grad(lambda a: np.abs(np.linalg.eigvals(a)).sum(), R3), atol=1e-3)


def _fd_grad(f, a, eps=1e-6):
    a = a.astype(np.float64)
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = eps
        g[idx] = (f(a + e) - f(a - e)) / (2 * eps)
    return g


def test_eig_derivatives():
    # JAX's jnp.linalg.eig is not differentiable (NotImplementedError:
    # enable_eigvec_derivs=False); Ember's eig is a plain host callback, so
    # differentiating it is Ember's pure-callback error.
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        ember.jvp(lambda a: jnp.linalg.eig(a)[0], (R3,), (R3,))
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        ember.grad(lambda a: jnp.sum(jnp.real(jnp.linalg.eig(a)[1])))(R3)
    # An eig that does not depend on what is differentiated is fine (as JAX).
    check(ember.grad(lambda x: x * jnp.real(jnp.linalg.eig(R3)[0][0]))(1.0), R3_W[0].real)

    def loss(x, data):
        w, v = jnp.linalg.eig(data * 2.0)
        return x * jnp.real(w[0])

    check(ember.grad(loss)(1.0, R3), 2 * R3_W[0].real, rtol=1e-5)
    check(ember.jit(ember.grad(loss))(1.0, R3), 2 * R3_W[0].real, rtol=1e-5)


def test_eigvec_jvp_enabled(x64):
    # lax.linalg.eig's enable_eigvec_derivs=True rule (JAX's formula), against
    # finite differences of geev's normalized eigenvectors.
    a = R4.astype(np.float64)
    da = np.random.default_rng(1).standard_normal(a.shape)

    def f(x):
        return tuple(_eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True))

    (w, v), (dw, dv) = ember.jvp(f, (a,), (da,))
    eps = 1e-6
    wp, vp = np.linalg.eig(a + eps * da)
    wm, vm = np.linalg.eig(a - eps * da)
    check(dw, (wp - wm) / (2 * eps), rtol=1e-6, atol=1e-6)
    check(dv, (vp - vm) / (2 * eps), rtol=1e-6, atol=1e-6)
    (_, _), (dw2, dv2) = ember.jit(lambda x, t: ember.jvp(f, (x,), (t,)))(a, da)
    check(dv2, dv, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------
# multi_dot, tensorinv, tensorsolve
# --------------------------------------------------------------------------


def test_multi_dot():
    rng = np.random.default_rng(2)
    shapes = [(10, 5), (5, 100), (100, 3), (3, 7), (7, 20)]
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    for k in range(2, len(arrs) + 1):
        check(jnp.linalg.multi_dot(arrs[:k]), np.linalg.multi_dot(arrs[:k]), np.float32,
              rtol=1e-4, atol=1e-4)
    v0, v1 = rng.standard_normal(10), rng.standard_normal(20)
    for ops in ([v0] + arrs, arrs + [v1], [v0] + arrs + [v1], [v0, arrs[0]],
                [arrs[-1], v1]):
        out = jnp.linalg.multi_dot(ops)
        ref = np.linalg.multi_dot(ops)
        assert out.shape == ref.shape
        check(out, ref, rtol=1e-4, atol=1e-3)
    check(jnp.linalg.multi_dot([np.arange(3.), np.ones((3, 4)), np.arange(4.)]), 18.0,
          np.float32)  # JAX 0.10.2
    check(ember.jit(jnp.linalg.multi_dot)(arrs), np.linalg.multi_dot(arrs), rtol=1e-4,
          atol=1e-3)
    check(jnp.linalg.multi_dot(arrs[:3], precision="highest"), np.linalg.multi_dot(arrs[:3]),
          rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="at least two"):
        jnp.linalg.multi_dot([arrs[0]])
    with pytest.raises(ValueError, match="two-dimensional"):
        jnp.linalg.multi_dot([arrs[0], np.ones((5, 2, 2))])
    with pytest.raises(ValueError, match="must match"):
        jnp.linalg.multi_dot([arrs[0], arrs[0]])


def test_multi_dot_order():
    # NumPy's dynamic program: the same splits.
    from numpy.linalg import _linalg
    rng = np.random.default_rng(3)
    for _ in range(20):
        dims = [int(d) for d in rng.integers(1, 50, size=int(rng.integers(3, 8)))]
        arrs = [np.empty((dims[i], dims[i + 1])) for i in range(len(dims) - 1)]
        np_split = _linalg._multi_dot_matrix_chain_order(arrs, return_costs=False)
        ours = _chain_order(dims)
        n = len(arrs)
        for i in range(n):
            for j in range(i + 1, n):
                assert ours[i][j] == np_split[i, j], (dims, i, j)


def test_tensorinv():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 6, 8, 3)).astype(np.float32)
    check(jnp.linalg.tensorinv(a, ind=2), np.linalg.tensorinv(a, ind=2), np.float32,
          rtol=1e-3, atol=1e-4)
    b = rng.standard_normal((24, 2, 3, 4)).astype(np.float32)
    out = jnp.linalg.tensorinv(b, ind=1)
    assert out.shape == (2, 3, 4, 24)
    check(out, np.linalg.tensorinv(b, ind=1), rtol=1e-3, atol=1e-4)
    check(ember.jit(jnp.linalg.tensorinv, static_argnums=1)(a, 2),
          np.linalg.tensorinv(a, ind=2), rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="positive"):
        jnp.linalg.tensorinv(a, ind=0)
    with pytest.raises(ValueError, match="product of the first"):
        jnp.linalg.tensorinv(a, ind=1)


def test_tensorsolve():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 4, 2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((6, 4)).astype(np.float32)
    x = jnp.linalg.tensorsolve(a, b)
    assert x.shape == (2, 3, 4) and x.dtype == np.float32
    check(x, np.linalg.tensorsolve(a, b), rtol=1e-3, atol=1e-4)
    a2 = np.moveaxis(a, -1, 0)  # (4, 6, 4, 2, 3): axes=(0,) moves axis 0 to the end
    x2 = jnp.linalg.tensorsolve(a2, b, axes=(0,))
    assert x2.shape == (2, 3, 4)
    check(x2, np.linalg.tensorsolve(a2, b, axes=(0,)), rtol=1e-3, atol=1e-4)
    check(ember.jit(jnp.linalg.tensorsolve)(a, b), np.linalg.tensorsolve(a, b), rtol=1e-3,
          atol=1e-4)
    with pytest.raises(ValueError, match="leading shape"):
        jnp.linalg.tensorsolve(a, b.T)
    with pytest.raises(ValueError, match="prod"):
        jnp.linalg.tensorsolve(np.ones((6, 4, 5)), b)


# --------------------------------------------------------------------------
# roots / poly through eigvals (JAX's order)
# --------------------------------------------------------------------------


def test_roots_poly_through_eigvals():
    p = np.array([[1.0, -6, 11, -6], [1.0, 0, 0, -1]], np.float32)
    f = ember.vmap(lambda q: jnp.roots(q, strip_zeros=False))
    for g in (f, ember.jit(f)):
        r = g(p)
        check(r[0], jnp.roots(p[0]))
        check(r[1], jnp.roots(p[1]))
    # d(sum of roots)/dp = d(-p1/p0)/dp: [p1/p0^2, -1/p0, 0, 0].
    check(ember.grad(lambda q: jnp.sum(jnp.real(jnp.roots(q))))(p[0]), [-6, -1, 0, 0],
          atol=1e-4)
    check(ember.jit(jnp.poly)(R3), np.poly(R3), np.complex64, rtol=1e-5, atol=1e-5)
