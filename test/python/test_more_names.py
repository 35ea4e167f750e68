"""jax.lax.linalg, jax.debug, jax.sharding and top-level names added for
JAX 0.10.2 (values against JAX 0.10.2 recorded literals, NumPy or SciPy)."""

import logging

import numpy as np
import pytest
import scipy.linalg

import ember as jax
import ember.numpy as jnp
from ember.lax import linalg as L


def test_lax_linalg_enums():
    assert [e.value for e in L.EigImplementation] == ["cusolver", "magma", "lapack"]
    assert [e.value for e in L.EighImplementation] == ["qr", "jacobi", "qdwh"]
    assert [e.value for e in L.SvdAlgorithm] == ["default", "QR", "Jacobi", "polar",
                                                "divide_and_conquer"]


def test_eig():
    a = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, 1.0], [0.0, -1.0, 1.0]], np.float32)
    w, v = L.eig(a, compute_left_eigenvectors=False)
    assert w.dtype == np.complex64 and v.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(a) @ np.asarray(v), np.asarray(v) * np.asarray(w),
                               atol=1e-5)
    np.testing.assert_allclose(np.sort_complex(np.asarray(w)),
                               np.sort_complex(np.linalg.eigvals(a)), atol=1e-5)
    (w2,) = L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    np.testing.assert_allclose(np.asarray(w2), np.asarray(w), atol=1e-6)
    # Left eigenvectors (LAPACK's geev, as JAX's CPU eig): vl^H a = w vl^H,
    # unit norm; the same vectors as SciPy's geev (which JAX 0.10.2 matches).
    w, vl, vr = L.eig(a)
    vl = np.asarray(vl)
    np.testing.assert_allclose(vl.conj().T @ a, np.asarray(w)[:, None] * vl.conj().T,
                               atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vl, axis=0), 1.0, rtol=1e-5)
    sw, svl, svr = scipy.linalg.eig(a, left=True, right=True)
    np.testing.assert_allclose(vl, svl, atol=1e-5)
    np.testing.assert_allclose(np.asarray(vr), svr, atol=1e-5)
    b = (a * (1 + 0.5j)).astype(np.complex64)
    w, vl = L.eig(b, compute_right_eigenvectors=False)
    np.testing.assert_allclose(np.asarray(vl), scipy.linalg.eig(b, left=True, right=False)[1],
                               atol=1e-5)
    jitted = jax.jit(lambda m: L.eig(m)[1])(a)
    np.testing.assert_allclose(np.asarray(jitted), svl, atol=1e-5)


def test_tridiagonal_solve():
    dl = np.array([0.0, 1.0, 2.0, 3.0])
    d = np.array([4.0, 5.0, 6.0, 7.0])
    du = np.array([1.0, 1.0, 1.0, 0.0])
    b = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    # JAX 0.10.2 (float64)
    want = [[0.13430656934306567, 0.35036496350364965], [0.46277372262773725, 0.5985401459854015],
            [0.5518248175182481, 0.6569343065693429], [0.7635036496350366, 0.8613138686131387]]
    x = L.tridiagonal_solve(*(t.astype(np.float32) for t in (dl, d, du, b)))
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-5)
    # batched, under jit, against a dense solve
    rng = np.random.default_rng(0)
    dl, du = rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
    d = rng.normal(size=(3, 6)) + 6
    dl[:, 0] = du[:, -1] = 0
    b = rng.normal(size=(3, 6, 2))
    dense = np.stack([np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1)
                      for i in range(3)])
    f = jax.jit(L.tridiagonal_solve)
    x = f(*(t.astype(np.float32) for t in (dl, d, du, b)))
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(dense, b), rtol=1e-4, atol=1e-5)


def test_householder_product():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(5, 3))
    (qr_, tau), _ = scipy.linalg.qr(a, mode="raw")
    q = L.householder_product(qr_.astype(np.float32), tau.astype(np.float32))
    want = scipy.linalg.qr(a, mode="economic")[0]
    np.testing.assert_allclose(np.asarray(q), want, atol=1e-5)


def test_lu_pivots_to_permutation():
    piv = jnp.array([[2, 2, 3], [1, 0, 2]], jnp.int32)
    perm = L.lu_pivots_to_permutation(piv, 5)
    assert perm.dtype == np.int32
    assert perm.tolist() == [[2, 0, 3, 1, 4], [0, 1, 2, 3, 4]]  # JAX 0.10.2
    lu_, pivots, permutation = L.lu(jnp.array(np.random.default_rng(2).normal(size=(4, 4)),
                                              jnp.float32))
    assert L.lu_pivots_to_permutation(pivots, 4).tolist() == permutation.tolist()


def test_symmetric_product():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    c = np.array([[1.0, 2.0, 3.0], [0.0, 5.0, 6.0], [0.0, 0.0, 9.0]], np.float32)
    out = L.symmetric_product(a, c, alpha=2.0, beta=0.5, symmetrize_output=True)
    assert out.tolist() == [[10.5, 22.0, 34.0], [22.0, 52.5, 78.0],
                            [34.0, 78.0, 126.5]]  # JAX 0.10.2
    plain = L.symmetric_product(a, c, alpha=2.0, beta=0.5)
    np.testing.assert_allclose(np.tril(np.asarray(plain)), np.tril(2 * a @ a.T + 0.5 * c))


def test_cholesky_update():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(4, 4))
    a = m @ m.T + 4 * np.eye(4)
    w = rng.normal(size=4)
    r = np.linalg.cholesky(a).T
    new = L.cholesky_update(r, w)
    np.testing.assert_allclose(np.asarray(new), np.linalg.cholesky(a + np.outer(w, w)).T,
                               rtol=1e-4, atol=1e-5)


def test_inspect_array_sharding():
    x = jnp.arange(4.0)
    seen = []
    jax.debug.inspect_array_sharding({"a": x, "b": x}, callback=seen.append)
    assert len(seen) == 2 and all(isinstance(s, jax.sharding.Sharding) for s in seen)
    assert seen[0] == x.sharding

    traced = []

    @jax.jit
    def f(x):
        jax.debug.inspect_array_sharding(x, callback=traced.append)
        return x * 2

    f(x)
    assert len(traced) == 1 and isinstance(traced[0], jax.sharding.Sharding)
    f(x)  # cached: not traced again
    assert len(traced) == 1


def test_debug_log(caplog):
    x = jnp.arange(3.0)
    with caplog.at_level(logging.INFO):
        jax.debug.log("x={x}", x=x)
        jax.jit(lambda x: jax.debug.log(ordered=True)("y {}", x + 1) or x)(x)
        jax.effects_barrier()
    msgs = [r.getMessage() for r in caplog.records]
    assert "x=[0. 1. 2.]" in msgs and "y [1. 2. 3.]" in msgs
    assert all(r.levelno == logging.INFO for r in caplog.records)
    with pytest.raises(TypeError):
        jax.debug.log(None, 1)


def test_sharding_names():
    S = jax.sharding
    x = jnp.ones(2)
    assert isinstance(x.sharding, S.Sharding)
    assert issubclass(S.NamedSharding, S.Sharding)
    assert issubclass(S.SingleDeviceSharding, S.Sharding)
    mesh = jax.make_mesh((1,), ("x",))
    assert isinstance(S.NamedSharding(mesh, S.PartitionSpec("x")), S.Sharding)
    assert S.get_mesh().axis_names == ()
    with jax.set_mesh(mesh):
        assert S.get_mesh() is mesh
    with pytest.raises(ValueError):
        jax.jit(lambda x: S.get_mesh() and x)(x)
    s = S.make_single_device_sharding(jax.devices()[0])
    assert s == x.sharding
    m = S.ManualAxisType(varying={"x"})
    assert m is S.ManualAxisType(varying=frozenset({"x"}))
    assert m.update(reduced={"y"}).reduced == frozenset({"y"})
    with pytest.raises(ValueError):
        S.ManualAxisType(varying={"x"}, unreduced={"x"})
    d = S.AbstractDevice("cpu", None, "cpu")
    assert d == S.AbstractDevice(device_kind="cpu", num_cores=None, platform="cpu")
    assert repr(d) == "AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)"


@pytest.mark.parametrize("name,default,other", [
    ("softmax_custom_jvp", False, True), ("enable_custom_prng", False, True),
    ("no_tracing", False, True), ("no_execution", False, True),
    ("thread_guard", False, True), ("remove_size_one_mesh_axis_from_type", False, True),
    ("threefry_partitionable", True, False), ("allow_f16_reductions", True, False),
    ("auto_pcast", True, False), ("default_prng_impl", "threefry2x32", "rbg"),
    ("legacy_prng_key", "allow", "warn"), ("array_garbage_collection_guard", None, "log"),
])
def test_config_states(name, default, other):
    state = getattr(jax, name)
    assert state.value == default
    with state(other):
        assert state.value == other
        assert getattr(jax.config, "jax_" + name) == other
    assert state.value == default
    with pytest.raises((TypeError, ValueError)):
        with state("not-a-value" if isinstance(default, bool) else 3):
            pass


def test_bool_states_without_argument():
    with jax.no_tracing():
        assert jax.no_tracing.value is True
    assert jax.no_tracing.value is False


def test_ds_typing_version():
    assert jax.ds(None) == slice(None)
    s = jax.ds(1, 2, 2)
    assert (s.start, s.size, s.stride) == (1, 2, 2)
    assert jax.typing.ArrayLike is not None
    assert isinstance(jax.__version__, str)


def test_indexing_with_ds():
    # JAX takes jax.ds as an array index: a dynamic slice (start clamped).
    x = jnp.arange(10.0)
    np.testing.assert_array_equal(np.asarray(x[jax.ds(2, 3)]), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda v, i: v[jax.ds(i, 3)])(x, 4)),
                                  [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(np.asarray(x[jax.ds(8, 3)]), [7.0, 8.0, 9.0])  # JAX's value
    m = jnp.arange(20.0).reshape(4, 5)
    np.testing.assert_array_equal(np.asarray(m[None, jax.ds(1, 2), jax.ds(0, 3, 2)]),
                                  [[[5.0, 7.0, 9.0], [10.0, 12.0, 14.0]]])


def test_qr_raw_pivoting_and_ormqr():
    # jnp.linalg.qr(mode="raw") is LAPACK's geqrf form (NumPy's); lax's qr
    # with pivoting is geqp3 (SciPy's permutation); ormqr applies Q, Q^H
    # from either side without forming Q (values as JAX 0.10.2 gives them).
    a = np.arange(12.0, dtype=np.float32).reshape(4, 3) + np.array(
        [[1, 0, 2], [0, 3, 0], [1, 1, 0], [0, 0, 5]], np.float32)
    h, tau = jnp.linalg.qr(a, mode="raw")
    nh, ntau = np.linalg.qr(a, mode="raw")
    np.testing.assert_allclose(np.asarray(h), nh, atol=1e-4)
    np.testing.assert_allclose(np.asarray(tau), ntau, atol=1e-5)
    q, r, p = L.qr(a, pivoting=True)
    sq, sr, sp = scipy.linalg.qr(a, pivoting=True)
    np.testing.assert_array_equal(np.asarray(p), sp)
    np.testing.assert_allclose(np.abs(np.asarray(r)), np.abs(sr), atol=1e-4)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a[:, sp], atol=1e-4)
    q2, r2, _ = L.qr(a, pivoting=True, full_matrices=False)
    assert q2.shape == (4, 3) and r2.shape == (3, 3)
    qf = np.asarray(jnp.linalg.qr(a, mode="complete")[0])
    c = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    hT = np.asarray(h).T
    np.testing.assert_allclose(np.asarray(L.ormqr(hT, tau, c)), qf @ c, atol=1e-4)
    np.testing.assert_allclose(np.asarray(L.ormqr(hT, tau, c, transpose=True)), qf.T @ c,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(L.ormqr(hT, tau, c.T, left=False)), c.T @ qf,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(L.ormqr(hT, tau, c.T, left=False, transpose=True)),
                               c.T @ qf.T, atol=1e-4)
    z = (a + 1j * a[::-1]).astype(np.complex64)
    hz, tz = jnp.linalg.qr(z, mode="raw")
    nhz, ntz = np.linalg.qr(z, mode="raw")
    np.testing.assert_allclose(np.asarray(tz), ntz, atol=1e-4)
    qz = np.asarray(L.ormqr(np.asarray(hz).T, tz, np.eye(4, dtype=np.complex64)))
    np.testing.assert_allclose(qz.conj().T @ qz, np.eye(4), atol=1e-4)
    batched = jnp.linalg.qr(np.stack([a, 2 * a]), mode="raw")[1]
    np.testing.assert_allclose(np.asarray(batched)[1], np.linalg.qr(2 * a, mode="raw")[1],
                               atol=1e-5)
