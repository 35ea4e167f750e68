"""ember.experimental: ode, checkify, mesh_utils, pjit, shard_map,
multihost_utils. Reference values were recorded from JAX 0.10.2."""

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.experimental import checkify, mesh_utils, multihost_utils
from ember.experimental.ode import odeint
from ember.experimental.pjit import pjit
from ember.experimental.shard_map import shard_map
from ember.sharding import Mesh, NamedSharding
from ember.sharding import PartitionSpec as P

# --------------------------------------------------------------------------
# odeint


def decay(y, t, k):
    return -k * y


def osc(y, t, w, damp):
    x, v = y
    return jnp.stack([v, -w ** 2 * x - damp * v])


T = jnp.linspace(0., 2., 5)
T2 = jnp.array([0., 0.5, 1.3, 3.0])


def osc_loss(y0, w, d):
    ys = odeint(osc, y0, T2, w, d)
    return (ys[:, 0] ** 2).sum() + ys[-1, 1]


def test_odeint_decay_values_and_grads():
    ys = odeint(decay, jnp.float32(1.5), T, 0.7)
    np.testing.assert_allclose(ys, [1.5, 1.0570327, 0.7448775, 0.5249067, 0.3698954],
                               rtol=2e-6)
    np.testing.assert_allclose(ys, 1.5 * np.exp(-0.7 * np.asarray(T)), rtol=1e-5)
    g = jax.grad(lambda y0, k: odeint(decay, y0, T, k).sum(), argnums=(0, 1))(1.5, 0.7)
    np.testing.assert_allclose([float(x) for x in g], [2.797807216644287, -2.800544261932373],
                               rtol=2e-5)
    # analytic: d/dy0 sum(y0 e^{-kt}) and d/dk
    tt = np.asarray(T, np.float64)
    np.testing.assert_allclose(float(g[0]), np.exp(-0.7 * tt).sum(), rtol=1e-5)
    np.testing.assert_allclose(float(g[1]), (-1.5 * tt * np.exp(-0.7 * tt)).sum(), rtol=1e-4)


def test_odeint_oscillator_values_grads_and_finite_differences():
    y0 = jnp.array([1.0, 0.0])
    ys = odeint(osc, y0, T2, 2.0, 0.1)
    np.testing.assert_allclose(ys, [[1., 0.], [0.5477383, -1.6415737],
                                    [-0.79047334, -0.9677262], [0.81992054, 0.4842425]],
                               rtol=1e-5, atol=1e-6)
    g = jax.grad(osc_loss, argnums=(0, 1, 2))(y0, 2.0, 0.1)
    np.testing.assert_allclose(g[0], [5.6785078048706055, 0.7006025910377502], rtol=1e-5)
    np.testing.assert_allclose(float(g[1]), -2.8275575637817383, rtol=1e-5)
    np.testing.assert_allclose(float(g[2]), -3.72979998588562, rtol=1e-5)
    eps = 1e-2
    fd_w = (float(osc_loss(y0, 2.0 + eps, 0.1)) - float(osc_loss(y0, 2.0 - eps, 0.1))) / (2 * eps)
    np.testing.assert_allclose(float(g[1]), fd_w, rtol=2e-2)
    fd_x = (float(osc_loss(y0 + jnp.array([eps, 0.]), 2.0, 0.1))
            - float(osc_loss(y0 - jnp.array([eps, 0.]), 2.0, 0.1))) / (2 * eps)
    np.testing.assert_allclose(float(g[0][0]), fd_x, rtol=2e-2)


def test_odeint_pytree_state_time_grad_closure_jit_vmap():
    def tree_f(y, t, a):
        return {"p": y["q"] * a, "q": -y["p"] + jnp.sin(t)}

    y0 = {"p": jnp.array([1., 2.]), "q": jnp.array([0., 0.5])}
    yt = odeint(tree_f, y0, T, 1.3)
    np.testing.assert_allclose(yt["p"][-1], [0.40547114610671997, 0.18647374212741852],
                               rtol=1e-5)
    np.testing.assert_allclose(yt["q"][2], [-0.387431263923645, -0.9757020473480225],
                               rtol=1e-5)
    gy, ga = jax.grad(lambda y0, a: sum(v.sum() for v in odeint(tree_f, y0, T, a).values()),
                      argnums=(0, 1))(y0, 1.3)
    np.testing.assert_allclose(gy["p"], [-1.3354883193969727] * 2, rtol=1e-5)
    np.testing.assert_allclose(gy["q"], [5.114323616027832] * 2, rtol=1e-5)
    np.testing.assert_allclose(float(ga), -0.8818542957305908, rtol=1e-5)

    tg = jax.grad(lambda t: odeint(decay, 1.5, t, 0.7).sum())(T)
    np.testing.assert_allclose(tg, [1.8876986503601074, -0.7399228811264038,
                                    -0.5214142799377441, -0.36743468046188354,
                                    -0.25892677903175354], rtol=1e-5)
    cg = jax.grad(lambda c: odeint(lambda y, t: -c * y, 1.0, T).sum())(0.5)
    np.testing.assert_allclose(float(cg), -2.4402387142181396, rtol=1e-5)

    vm = jax.jit(jax.vmap(lambda y0: odeint(decay, y0, T, 0.3)))(jnp.array([1., 2., 3.]))
    np.testing.assert_allclose(vm[:, -1], [0.5488111972808838, 1.0976232290267944,
                                           1.6464346647262573], rtol=1e-5)
    np.testing.assert_allclose(odeint(decay, 1.5, T, 0.7, mxstep=2),
                               [1.5, 1.0530943870544434, 0.7455092668533325,
                                0.5262341499328613, 0.36966580152511597], rtol=1e-5)
    np.testing.assert_allclose(odeint(decay, 1.5, T, 0.7, hmax=0.05, rtol=1e-4, atol=1e-4),
                               [1.5, 1.0570350885391235, 0.7448773384094238,
                                0.5249065160751343, 0.36989521980285645], rtol=1e-5)


def test_odeint_errors():
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(decay, 1.0, jnp.arange(3), 0.5)
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(decay, 1.0, T, "k")


# --------------------------------------------------------------------------
# checkify (messages from JAX 0.10.2 running the checkify guide)


def guide_f(x, i):
    checkify.check(i >= 0, "index needs to be non-negative, got {i}", i=i)
    y = x[i]
    return jnp.sin(y)


OOB = ("out-of-bounds indexing for array of shape (5,): index 100 is out of bounds "
       "for axis 0 with size 5. ")


def test_checkify_user_check_under_jit():
    err, z = jax.jit(checkify.checkify(guide_f))(jnp.ones((5,)), -2)
    assert err.get() == "index needs to be non-negative, got -2 (`check` failed)"
    err, z = jax.jit(checkify.checkify(guide_f))(jnp.ones((5,)), 2)
    assert err.get() is None and str(err) == "Error(None)"
    err.throw()
    np.testing.assert_allclose(z, np.sin(1.0), rtol=1e-6)

    def g(x):
        checkify.check(x > 0., "{} must be positive!", x)
        return jnp.log(x)

    err, _ = jax.jit(checkify.checkify(g))(-1.)
    assert err.get() == "-1.0 must be positive! (`check` failed)"
    assert str(err) == "Error(-1.0 must be positive! (`check` failed))"
    with pytest.raises(checkify.JaxRuntimeError, match="must be positive") as info:
        err.throw()
    assert isinstance(info.value, ValueError)


def test_checkify_automatic_checks():
    errors = checkify.user_checks | checkify.index_checks | checkify.float_checks
    checked_f = checkify.checkify(guide_f, errors=errors)
    cases = [((jnp.ones((5,)), jnp.int32(100)), OOB),
             ((jnp.ones((5,)), jnp.int32(-1)),
              "index needs to be non-negative, got -1 (`check` failed)"),
             ((jnp.array([jnp.inf, 1]), jnp.int32(0)), "nan generated by primitive: sin."),
             ((jnp.array([5., 1.]), jnp.int32(0)), None)]
    for args, msg in cases:
        err, _ = checked_f(*args)
        assert err.get() == msg
        if msg is None:
            err.throw()
        else:
            with pytest.raises(checkify.JaxRuntimeError) as info:
                err.throw()
            assert str(info.value) == msg
    err, _ = jax.jit(checkify.checkify(lambda x, i: x[i], errors=checkify.index_checks))(
        jnp.ones((5,)), 100)
    assert err.get() == OOB
    err, _ = checkify.checkify(jax.jit(lambda x, i: x[i]), errors=checkify.index_checks)(
        jnp.ones((5,)), 100)
    assert err.get() == OOB
    err, _ = checkify.checkify(jax.jit(lambda x, i: x[i]))(jnp.ones((5,)), 100)
    assert err.get() is None
    err, _ = checkify.checkify(lambda x: x / x, errors=checkify.float_checks)(
        jnp.array([0., 1.]))
    assert err.get() == "division by zero"
    err, _ = checkify.checkify(lambda x: x // x, errors=checkify.div_checks)(jnp.array([0, 1]))
    assert err.get() == "division by zero"


def test_checkify_vmap_of_checkify_is_batched():
    def h(x, i):
        checkify.check(i >= 0, "index needs to be non-negative!")
        return x[i]

    cf = checkify.checkify(h, errors=checkify.all_checks)
    errs, _ = jax.vmap(cf)(jnp.ones((3, 5)), jnp.array([-1, 2, 100]))
    assert errs.get() == ("at mapped index 0: index needs to be non-negative! (`check` failed)"
                          "\nat mapped index 2: " + OOB)
    # throw raises the first mapped index's error, as JAX 0.10.2 does.
    with pytest.raises(checkify.JaxRuntimeError,
                       match=r"^index needs to be non-negative! \(`check` failed\)$"):
        errs.throw()


def test_checkify_check_outside_and_errors():
    checkify.check(True, "ok")
    with pytest.raises(checkify.JaxRuntimeError, match=r"^bad 3 \(`check` failed\)$"):
        checkify.check(False, "bad {}", jnp.int32(3))
    with pytest.raises(ValueError, match="Cannot abstractly evaluate a checkify.check"):
        jax.jit(guide_f)(jnp.ones((5,)), -1)
    with pytest.raises(TypeError, match="check takes a scalar pred"):
        checkify.check(jnp.array([True, False]), "x")
    with pytest.raises(TypeError, match="need to be PyTrees of arrays"):
        checkify.check(True, "x", 3)
    err, _ = checkify.checkify(lambda x: (checkify.debug_check(x != 0, "cannot be zero!"), x)[1])(0)
    assert err.get() == "cannot be zero! (`check` failed)"
    checkify.debug_check(False, "dropped outside checkify")

    def kk(x):
        checkify.check(x > 0, "{x} needs to be positive!", x=x)
        return 1 / x

    err, _ = jax.jit(checkify.checkify(kk))(-3.)
    assert err.get() == "-3.0 needs to be positive! (`check` failed)"
    err, _ = checkify.checkify(lambda x: (checkify.check(x > 0, "a"),
                                          checkify.check(x > 1, "b"), x)[2])(jnp.float32(0.5))
    assert err.get() == "b (`check` failed)"
    assert checkify.automatic_checks == checkify.all_checks - checkify.user_checks
    assert checkify.float_checks == checkify.nan_checks | checkify.div_checks
    assert checkify.init_error.get() is None


def test_checkify_check_error():
    def with_inner(x):
        e, o = jax.jit(checkify.checkify(
            lambda x: (checkify.check(x > 0, "must be positive!"), x)[1]))(x)
        checkify.check_error(e)
        return o

    assert int(with_inner(1)) == 1
    with pytest.raises(checkify.JaxRuntimeError, match="must be positive!"):
        with_inner(-1)
    err, _ = checkify.checkify(with_inner)(-1)
    assert err.get() == "must be positive! (`check` failed)"
    with pytest.raises(TypeError, match="check_error takes an Error"):
        checkify.check_error(3)


def test_checkify_checks_in_loops_conds_and_inner_jits():
    # Messages and values as JAX 0.10.2 reports them for the same programs
    # (checks threaded out of loop bodies, branches and inner jits; the first
    # failure's values are kept).
    lax = jax.lax

    def body(i, c):
        checkify.check(c < 10.0, "c too big at step {i}: {c}", i=i, c=c)
        return c * 2.0
    f = checkify.checkify(lambda x: lax.fori_loop(0, 5, body, x))
    assert f(0.5)[0].get() is None
    err, out = f(1.0)
    assert err.get() == "c too big at step 4: 16.0 (`check` failed)" and float(out) == 32.0

    def w(x):
        def wbody(c):
            checkify.check(c[1] < 100.0, "value {v} at iteration {i}", v=c[1], i=c[0])
            return c[0] + 1, c[1] * 3.0
        return lax.while_loop(lambda c: c[0] < 6, wbody, (0, x))[1]
    err, _ = jax.jit(checkify.checkify(w))(2.0)
    assert err.get() == "value 162.0 at iteration 4 (`check` failed)"

    def nest(x):
        def ob(i, c):
            def ib(j, d):
                checkify.check(d < 50.0, "inner loop {i},{j}: {d}", i=i, j=j, d=d)
                return d + 1.0
            return lax.fori_loop(0, 3, ib, c) * 2.0
        return lax.fori_loop(0, 4, ob, x)
    err, out = checkify.checkify(nest)(1.0)
    assert err.get() == "inner loop 3,0: 50.0 (`check` failed)" and float(out) == 106.0

    @jax.jit
    def inner(x):
        checkify.check(x > 0, "inner got {x}", x=x)
        return jnp.log(x)
    err, _ = checkify.checkify(lambda x: inner(x) + inner(x - 5.0))(3.0)
    assert err.get() == "inner got -2.0 (`check` failed)"

    def sw(i, x):
        return lax.switch(i, [lambda x: x / 0.0, lambda x: jnp.sqrt(x), lambda x: x * 2.0], x)
    fc = checkify.checkify(sw, errors=checkify.float_checks)
    assert fc(0, 1.0)[0].get() == "division by zero"
    assert fc(1, -1.0)[0].get() == "nan generated by primitive: sqrt."
    assert fc(2, -1.0)[0].get() is None
    g = checkify.checkify(lambda x: lax.cond(x > 0, jnp.log, lambda x: jnp.log(-x - 1.0), x),
                          errors=checkify.float_checks)
    assert g(2.0)[0].get() is None and g(-0.5)[0].get() == "nan generated by primitive: log."

    def sc(xs, idx):
        return lax.scan(lambda c, i: (c + xs[i], None), 0.0, idx)[0]
    err, out = checkify.checkify(sc, errors=checkify.index_checks)(
        jnp.arange(4.0), jnp.array([0, 2, 7, 1]))
    assert err.get().startswith("out-of-bounds indexing for array of shape (4,): index 7 "
                                "is out of bounds for axis 0 with size 4.")
    err, _ = checkify.checkify(lambda x: lax.scan(lambda c, y: (c + 1.0 / y, c), 0.0, x),
                               errors=checkify.div_checks)(jnp.array([1.0, 0.0, 2.0]))
    assert err.get() == "division by zero"


def test_checkify_and_vmap():
    lax = jax.lax

    def lp(x):
        def body(i, c):
            checkify.check(c < 8.0, "too big {c}", c=c)
            return c * 2.0
        return lax.fori_loop(0, 3, body, x)
    err, out = jax.vmap(checkify.checkify(lp))(jnp.array([0.5, 2.0, 1.5]))
    assert err.get() == "at mapped index 1: too big 8.0 (`check` failed)"

    # checkify of vmap: one unmapped error (JAX's guide).
    @jax.vmap
    def vm(x, i):
        checkify.check(i >= 0, "index needs to be non-negative!")
        return x[i]
    err, out = checkify.checkify(vm, errors=checkify.all_checks)(
        jnp.ones((3, 5)), jnp.array([-1, 2, 100]))
    assert err.get() == "index needs to be non-negative! (`check` failed)"

    @jax.vmap
    def first_bad(x):
        checkify.check(x < 3.0, "bad {x}", x=x)
        return x
    err, _ = checkify.checkify(first_bad)(jnp.array([1.0, 5.0, 7.0]))
    assert err.get() == "bad 5.0 (`check` failed)"
    with pytest.raises(NotImplementedError, match="inside a vmapped function"):
        checkify.checkify(jax.vmap(lp))(jnp.ones(3))


# --------------------------------------------------------------------------
# mesh_utils, pjit, shard_map, multihost_utils


def test_mesh_utils():
    n = len(jax.devices())
    m = mesh_utils.create_device_mesh((n,))
    assert m.shape == (n,) and list(m) == sorted(jax.devices(), key=lambda d: d.id)
    assert mesh_utils.create_device_mesh([1, n]).shape == (1, n)
    with pytest.raises(ValueError, match=rf"Number of devices {n} must equal the product of "
                                         rf"mesh_shape \({n + 1},\)"):
        mesh_utils.create_device_mesh((n + 1,))
    with pytest.raises(ValueError, match="should be a sequence of ints"):
        mesh_utils.create_device_mesh(["a"])
    h = mesh_utils.create_hybrid_device_mesh([n], [1], process_is_granule=True)
    assert h.shape == (n,)
    with pytest.raises(ValueError, match="does not have attribute slice_index"):
        mesh_utils.create_hybrid_device_mesh([n], [1])
    with pytest.raises(ValueError, match=r"Number of slices 1 must equal the product of "
                                         r"dcn_mesh_shape \[2\]"):
        mesh_utils.create_hybrid_device_mesh([n], [2], process_is_granule=True)


def test_pjit_and_shard_map():
    mesh = Mesh(mesh_utils.create_device_mesh((1,), jax.devices()[:1]), ("x",))
    s = NamedSharding(mesh, P("x"))
    f = pjit(lambda x: x * 2, in_shardings=s, out_shardings=s)
    r = f(jnp.arange(4.))
    np.testing.assert_allclose(r, [0., 2., 4., 6.])
    assert r.sharding == s
    assert int(pjit(lambda x, n: x * n, static_argnums=1)(jnp.int32(2), 3)) == 6
    g = shard_map(lambda x: x + jax.lax.psum(x.sum(), "x"), mesh, in_specs=P("x"),
                  out_specs=P("x"), check_rep=False)
    np.testing.assert_allclose(g(jnp.arange(4.)), [6., 7., 8., 9.])


def test_multihost_utils_single_process():
    np.testing.assert_array_equal(multihost_utils.process_allgather(np.arange(3)),
                                  [[0, 1, 2]])
    np.testing.assert_array_equal(multihost_utils.process_allgather(np.arange(3), tiled=True),
                                  [0, 1, 2])
    np.testing.assert_array_equal(multihost_utils.broadcast_one_to_all(np.arange(2)), [0, 1])
    multihost_utils.sync_global_devices("x")
    multihost_utils.assert_equal({"a": np.arange(3), "b": 1.0})
    np.testing.assert_array_equal(
        multihost_utils.host_local_array_to_global_array(np.ones(2), None, P()), [1., 1.])
    np.testing.assert_array_equal(
        multihost_utils.global_array_to_host_local_array(np.ones(2), None, P()), [1., 1.])
    assert multihost_utils.reached_preemption_sync_point(3) is False
    with multihost_utils.live_devices(jax.devices()) as d:
        assert d == list(jax.devices())
