"""`ember.scipy.spatial.transform` (`Rotation`, `Slerp`) against SciPy's
`scipy.spatial.transform` (float64 references, float32 results), plus the
places where JAX parts from SciPy, with values recorded from JAX 0.10.2, and
`jit` / `vmap` / `grad` through the pytree classes."""

import itertools
import warnings

import numpy as np
import pytest

sst = pytest.importorskip("scipy.spatial.transform")

import ember  # noqa: E402
import ember.numpy as jnp  # noqa: E402
from ember import tree_util  # noqa: E402
from ember.scipy.spatial.transform import Rotation, Slerp  # noqa: E402

SR = sst.Rotation
SSlerp = sst.Slerp

RNG = np.random.default_rng(0)
QUATS = RNG.standard_normal((7, 4)).astype(np.float32)  # unnormalized on purpose
QUAT1 = QUATS[0]
VECS = RNG.standard_normal((7, 3)).astype(np.float32)
ROTVECS = np.array([[0.1, 0.2, 0.3], [1., -0.5, 0.2], [-0.3, 0.4, 2.0]], np.float32)

EXTRINSIC = ["".join(p) for p in itertools.permutations("xyz")] + [
    a + b + a for a in "xyz" for b in "xyz" if a != b]
SEQS = EXTRINSIC + [s.upper() for s in EXTRINSIC]  # all 24 conventions

TOL = 2e-5


def close(got, want, atol=TOL, rtol=TOL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


def f32(x):
    assert np.asarray(x).dtype == np.float32, np.asarray(x).dtype
    return np.asarray(x)


def sp(quat):
    """The SciPy rotation of (float32) quaternions, in float64."""
    return SR.from_quat(np.asarray(quat, np.float64))


def same_rotation(q_got, q_want, atol=TOL):
    """Quaternions describing the same rotations (q and -q are equal)."""
    q_got = np.asarray(q_got, np.float64)
    q_want = np.asarray(q_want, np.float64)
    assert q_got.shape == q_want.shape, (q_got.shape, q_want.shape)
    dots = np.abs(np.sum(q_got * q_want, axis=-1))
    np.testing.assert_allclose(dots, np.ones_like(dots), atol=atol)


def wrapped_diff(a, b, period):
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    return (d + period / 2) % period - period / 2


# --------------------------------------------------------------------------
# API surface
# --------------------------------------------------------------------------

# Recorded from JAX 0.10.2: sorted(n for n in dir(cls) if not n.startswith('__')).
JAX_ROTATION_NAMES = [
    "_asdict", "_field_defaults", "_fields", "_make", "_replace", "apply", "as_euler",
    "as_matrix", "as_mrp", "as_quat", "as_rotvec", "concatenate", "count", "from_euler",
    "from_matrix", "from_mrp", "from_quat", "from_rotvec", "identity", "index", "inv",
    "magnitude", "mean", "quat", "random", "single"]
JAX_SLERP_NAMES = [
    "_asdict", "_field_defaults", "_fields", "_make", "_replace", "count", "index", "init",
    "rotations", "rotvecs", "timedelta", "times"]


def test_names_match_jax():
    assert sorted(n for n in dir(Rotation) if not n.startswith("__")) == JAX_ROTATION_NAMES
    assert sorted(n for n in dir(Slerp) if not n.startswith("__")) == JAX_SLERP_NAMES
    for dunder in ("__mul__", "__getitem__", "__len__"):
        assert dunder in vars(Rotation)
    assert "__call__" in vars(Slerp)
    assert Rotation._fields == ("quat",)
    assert Slerp._fields == ("times", "timedelta", "rotations", "rotvecs")
    assert issubclass(Rotation, tuple) and issubclass(Slerp, tuple)


def test_lazy_module_access():
    import ember.scipy

    assert "spatial" in dir(ember.scipy)
    assert ember.scipy.spatial.transform.Rotation is Rotation
    assert ember.scipy.spatial.transform.Slerp is Slerp


def test_pytree_structure():
    r = Rotation.from_quat(QUATS)
    leaves, treedef = tree_util.tree_flatten(r)
    assert len(leaves) == 1 and leaves[0] is r.quat
    assert str(treedef) == "PyTreeDef(CustomNode(namedtuple[Rotation], [*]))"
    s = Slerp.init(jnp.array([0., 1., 3.]), Rotation.from_rotvec(ROTVECS))
    # Recorded from JAX 0.10.2: jax.tree_util.tree_structure(slerp).
    assert str(tree_util.tree_structure(s)) == (
        "PyTreeDef(CustomNode(namedtuple[Slerp], "
        "[*, *, CustomNode(namedtuple[Rotation], [*]), *]))")
    back = tree_util.tree_unflatten(treedef, [jnp.ones(4)])
    assert isinstance(back, Rotation) and back.quat.shape == (4,)
    assert repr(Rotation.identity()) == "Rotation(quat=Array([0., 0., 0., 1.], dtype=float32))"


# --------------------------------------------------------------------------
# Constructors and conversions against SciPy
# --------------------------------------------------------------------------


@pytest.mark.parametrize("q", [QUAT1, QUATS], ids=["single", "batch"])
def test_from_quat_and_as_quat(q):
    r = Rotation.from_quat(q)
    assert r.single == (q.ndim == 1)
    ref = sp(q)
    close(f32(r.quat), ref.as_quat())
    close(r.as_quat(), ref.as_quat())
    close(r.as_quat(canonical=True), ref.as_quat(canonical=True))
    close(r.as_quat(scalar_first=True), ref.as_quat(scalar_first=True))
    close(r.as_quat(canonical=True, scalar_first=True),
          ref.as_quat(canonical=True, scalar_first=True))


def test_as_quat_canonical_ties():
    # w == 0: the sign of the first nonzero of x, y, z decides.
    q = np.array([[0., 0., 0., -1.], [-1., 0., 0., 0.], [0., -1., 0., 0.], [0., 0., -1., 0.],
                  [0., 0.6, -0.8, 0.], [0.6, 0., -0.8, 0.]], np.float32)
    got = Rotation.from_quat(q).as_quat(canonical=True)
    close(np.abs(got), np.abs(q))
    close(got, sp(q).as_quat(canonical=True))


def test_from_quat_dtypes_and_lists():
    r = Rotation.from_quat([0, 0, 0, 2])
    assert r.quat.dtype == np.float32
    close(r.quat, [0., 0., 0., 1.])
    assert Rotation.from_quat(jnp.array([0, 3, 0, 4])).quat.dtype == np.float32


@pytest.mark.parametrize("q", [QUAT1, QUATS], ids=["single", "batch"])
def test_as_matrix_and_from_matrix(q):
    ref = sp(q)
    m = Rotation.from_quat(q).as_matrix()
    close(f32(m), ref.as_matrix())
    r2 = Rotation.from_matrix(ref.as_matrix().astype(np.float32))
    close(f32(r2.as_matrix()), ref.as_matrix(), atol=5e-5)
    same_rotation(r2.quat, ref.as_quat())


def test_from_matrix_every_branch():
    # Largest of (m00, m11, m22, trace) picks the formula; cover all four.
    mats = np.stack([SR.from_rotvec(v).as_matrix() for v in
                     ([0.1, 0.2, 0.3], [3.0, 0.1, 0.2], [0.1, 3.0, -0.2], [-0.2, 0.1, 3.0],
                      [np.pi, 0, 0], [0, 0, np.pi])]).astype(np.float32)
    got = Rotation.from_matrix(mats)
    close(got.as_matrix(), mats.astype(np.float64), atol=5e-5)
    same_rotation(got.quat, SR.from_matrix(mats.astype(np.float64)).as_quat())
    # Recorded from JAX 0.10.2: from_matrix(diag(1, -1, -1)).quat.
    close(Rotation.from_matrix(jnp.diag(jnp.array([1., -1., -1.]))).quat, [1., 0., 0., 0.])
    close(Rotation.from_matrix([[1, 0, 0], [0, 1, 0], [0, 0, 1]]).quat, [0., 0., 0., 1.])


@pytest.mark.parametrize("degrees", [False, True])
@pytest.mark.parametrize("single", [True, False])
def test_rotvec_roundtrip(degrees, single):
    v = ROTVECS[0] if single else np.concatenate([ROTVECS, [[1e-4, -2e-4, 3e-4], [0., 0., 0.]]])
    v = (np.rad2deg(v) if degrees else v).astype(np.float32)
    ref = SR.from_rotvec(v.astype(np.float64), degrees=degrees)
    r = Rotation.from_rotvec(v, degrees=degrees)
    close(f32(r.quat), ref.as_quat())
    back = r.as_rotvec(degrees=degrees)
    close(f32(back), ref.as_rotvec(degrees=degrees), atol=2e-3 if degrees else TOL)


def test_as_rotvec_batch_and_small_angles():
    close(Rotation.from_quat(QUATS).as_rotvec(), sp(QUATS).as_rotvec(), atol=5e-5)
    q = np.array([[1e-5, 2e-5, -1e-5, 1.], [1e-4, 0., 0., -1.]], np.float32)
    close(Rotation.from_quat(q).as_rotvec(), sp(q).as_rotvec(), atol=1e-8, rtol=1e-4)
    # Recorded from JAX 0.10.2: w < 0 is flipped first.
    close(Rotation.from_quat(jnp.array([0.1, 0.2, 0.3, -0.9])).as_rotvec(),
          [-0.21060240268707275, -0.4212048053741455, -0.6318072080612183])


def test_from_rotvec_int_and_list_inputs():
    r = Rotation.from_rotvec(jnp.array([1, 0, 0]))
    assert r.quat.dtype == np.float32
    close(r.quat, SR.from_rotvec([1., 0., 0.]).as_quat())
    close(Rotation.from_rotvec([90., 0., 0.], degrees=True).quat,
          SR.from_rotvec([90., 0., 0.], degrees=True).as_quat())


@pytest.mark.parametrize("q", [QUAT1, QUATS], ids=["single", "batch"])
def test_mrp_roundtrip(q):
    ref = sp(q)
    r = Rotation.from_quat(q)
    close(f32(r.as_mrp()), ref.as_mrp())
    back = Rotation.from_mrp(ref.as_mrp().astype(np.float32))
    same_rotation(back.quat, ref.as_quat())
    close(f32(Rotation.from_mrp(ref.as_mrp().astype(np.float32)).as_matrix()), ref.as_matrix(),
          atol=5e-5)
    close(Rotation.from_mrp([0.1, 0.2, 0.3]).quat, SR.from_mrp([0.1, 0.2, 0.3]).as_quat())


def test_magnitude_and_inv():
    for q in (QUAT1, QUATS):
        ref = sp(q)
        r = Rotation.from_quat(q)
        close(f32(r.magnitude()), ref.magnitude())
        close(r.inv().as_matrix(), ref.inv().as_matrix())
        close((r * r.inv()).magnitude(), np.zeros(ref.magnitude().shape), atol=1e-3)


@pytest.mark.parametrize("seq", SEQS)
def test_from_euler_all_sequences(seq):
    angles = RNG.uniform(-3, 3, (5, 3)).astype(np.float32)
    ref = SR.from_euler(seq, angles.astype(np.float64))
    close(f32(Rotation.from_euler(seq, angles).quat), ref.as_quat())
    close(f32(Rotation.from_euler(seq, angles[1]).quat), ref.as_quat()[1])
    deg = np.rad2deg(angles).astype(np.float32)
    close(Rotation.from_euler(seq, deg, degrees=True).quat,
          SR.from_euler(seq, deg.astype(np.float64), degrees=True).as_quat())


@pytest.mark.parametrize("seq", ["x", "Y", "xy", "ZX"])
def test_from_euler_short_sequences(seq):
    angles = RNG.uniform(-3, 3, (4, len(seq))).astype(np.float32)
    close(Rotation.from_euler(seq, angles).quat,
          SR.from_euler(seq, angles.astype(np.float64)).as_quat())
    close(Rotation.from_euler(seq, angles[0]).quat,
          SR.from_euler(seq, angles[0].astype(np.float64)).as_quat())


def test_from_euler_scalar_angle_and_ints():
    close(Rotation.from_euler("z", 90, degrees=True).quat,
          SR.from_euler("z", 90, degrees=True).as_quat())
    r = Rotation.from_euler("z", 1)
    assert r.quat.dtype == np.float32 and r.quat.shape == (4,)
    close(r.quat, SR.from_euler("z", 1.).as_quat())
    # Recorded from JAX 0.10.2: one angle per row for a one-axis sequence.
    close(Rotation.from_euler("Y", jnp.array([[10.], [200.]]), degrees=True).quat,
          [[0.0, 0.08715573698282242, 0.0, 0.9961947202682495],
           [0.0, 0.9848077297210693, 0.0, -0.1736481934785843]])


@pytest.mark.parametrize("seq", SEQS)
@pytest.mark.parametrize("degrees", [False, True])
def test_as_euler_all_sequences(seq, degrees):
    ref = sp(QUATS).as_euler(seq, degrees=degrees)
    got = f32(Rotation.from_quat(QUATS).as_euler(seq, degrees=degrees))
    assert got.shape == ref.shape
    period = 360. if degrees else 2 * np.pi
    np.testing.assert_allclose(wrapped_diff(got, ref, period), 0, atol=5e-3 if degrees else 1e-4)
    single = f32(Rotation.from_quat(QUAT1).as_euler(seq, degrees=degrees))
    np.testing.assert_allclose(single, got[0], atol=1e-5 * period)
    hi = 180. if degrees else np.pi
    assert np.all(got >= -hi) and np.all(got < hi)


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "zxz", "XYX"])
def test_euler_roundtrip(seq):
    angles = np.array([[0.3, 0.7, -1.1], [-2.5, 1.2, 2.9]], np.float32)
    if seq[0].lower() == seq[2].lower():
        angles[:, 1] = np.abs(angles[:, 1])  # proper Euler: middle angle in [0, pi]
    back = Rotation.from_euler(seq, angles).as_euler(seq)
    close(back, angles.astype(np.float64), atol=5e-5)


def test_as_euler_jax_conventions():
    # JAX wraps angles into [-pi, pi) (SciPy keeps +pi) and, in float32,
    # detects gimbal lock only within 1e-7 rad. Recorded from JAX 0.10.2.
    r = Rotation.from_quat(jnp.array([1., 0., 0., 0.]))
    close(r.as_euler("xyz"), [-3.1415927410125732, 0.0, 0.0], atol=0)
    assert np.allclose(SR.from_quat([1., 0, 0, 0]).as_euler("xyz"), [np.pi, 0, 0])
    close(Rotation.from_quat(jnp.array([0., 1., 0., 0.])).as_euler("ZXZ", degrees=True),
          [-180.0, -180.0, 0.0], atol=0)
    close(Rotation.from_euler("zxz", jnp.array([0.3, np.pi, 0.4], np.float32)).as_euler("zxz"),
          [-2.84159255027771, 3.141592264175415, -2.7415926456451416], atol=1e-6)
    # A gimbal lock JAX does detect: the third angle is set to zero.
    close(Rotation.from_euler("XYZ", jnp.array([0.3, np.pi / 2, 0.4], np.float32))
          .as_euler("XYZ"), [0.7000000476837158, 1.570796251296997, 0.0], atol=1e-6)
    close(Rotation.from_euler("zyz", jnp.array([0.3, 0., 0.4], np.float32)).as_euler("zyz"),
          [0.7000000476837158, 0.0, 0.0], atol=1e-6)


def test_as_euler_gimbal_lock_matches_scipy_rotation():
    # Whatever the angles, they must describe the same rotation.
    locked = np.array([[0.3, 0., 0.4], [0.3, np.pi / 2, 0.4], [0.3, -np.pi / 2, 0.4]],
                      np.float32)
    for seq in ("xyz", "ZYX", "yzx"):
        r = Rotation.from_euler(seq, locked)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = SR.from_euler(seq, np.asarray(r.as_euler(seq), np.float64))
        close(back.as_matrix(), np.asarray(r.as_matrix(), np.float64), atol=1e-4)


# --------------------------------------------------------------------------
# Composition, application, containers
# --------------------------------------------------------------------------


def test_composition():
    a, b = Rotation.from_quat(QUATS), Rotation.from_quat(QUATS[::-1])
    ref = sp(QUATS) * sp(QUATS[::-1])
    close(f32((a * b).quat), ref.as_quat())
    close((a[0] * b).as_matrix(), (sp(QUATS[0]) * sp(QUATS[::-1])).as_matrix())
    close((a * b[2]).as_matrix(), (sp(QUATS) * sp(QUATS[::-1][2])).as_matrix())
    # The product is normalized (from_quat) even for unnormalized factors.
    raw = (Rotation(jnp.asarray(QUATS)) * Rotation(jnp.asarray(QUATS))).quat
    close(np.linalg.norm(np.asarray(raw), axis=-1), np.ones(7))
    # Batch axes broadcast as in JAX's vectorized composition: (2,) x (3, 1) -> (3, 2).
    c = Rotation.from_rotvec(jnp.ones((3, 1, 3))) * Rotation.from_rotvec(ROTVECS[:2])
    assert c.quat.shape == (3, 2, 4)


@pytest.mark.parametrize("inverse", [False, True])
def test_apply(inverse):
    r, ref = Rotation.from_quat(QUATS), sp(QUATS)
    close(f32(r.apply(VECS, inverse=inverse)), ref.apply(VECS.astype(np.float64), inverse=inverse))
    close(r.apply(VECS[0], inverse=inverse), ref.apply(VECS[0], inverse=inverse))
    close(r[2].apply(VECS, inverse=inverse), ref[2].apply(VECS, inverse=inverse))
    close(r[2].apply(VECS[1], inverse=inverse), ref[2].apply(VECS[1], inverse=inverse))
    assert r.apply(jnp.ones((3, 1, 3)), inverse=inverse).shape == (3, 7, 3)


def test_apply_lists_and_ints():
    # Recorded from JAX 0.10.2.
    r = Rotation.from_rotvec(jnp.array([0., 0., 1.]))
    close(f32(r.apply([1, 0, 0])), [0.5403023, 0.841471, 0.])
    close(r.apply([1., 0., 0.], inverse=True), [0.5403023, -0.841471, 0.])


def test_containers():
    r = Rotation.from_quat(QUATS)
    assert len(r) == 7 and not r.single
    assert r[3].single
    close(r[3].quat, r.quat[3])
    assert len(r[1:4]) == 3
    assert len(r[jnp.array([0, 2])]) == 2
    single = Rotation.from_quat(QUAT1)
    with pytest.raises(TypeError, match="Single rotation has no len"):
        len(single)
    with pytest.raises(TypeError, match="not subscriptable"):
        single[0]


def test_concatenate():
    a, b = Rotation.from_quat(QUATS[:3]), Rotation.from_quat(QUATS[3:])
    got = Rotation.concatenate([a, b])
    close(got.quat, SR.concatenate([sp(QUATS[:3]), sp(QUATS[3:])]).as_quat())
    # JAX joins the quaternion arrays as they are: two single rotations make
    # one (8,) "single" array, where SciPy would give two rotations.
    # Recorded from JAX 0.10.2.
    two = Rotation.concatenate([Rotation.from_rotvec(jnp.array([0.1, 0.2, 0.3])),
                                Rotation.identity()])
    close(two.quat, [0.04970884323120117, 0.09941768646240234, 0.14912652969360352,
                     0.9825509786605835, 0.0, 0.0, 0.0, 1.0])


def test_identity_and_random():
    r = Rotation.identity()
    assert r.single and r.quat.dtype == np.float32
    close(r.quat, [0., 0., 0., 1.])
    assert Rotation.identity(dtype=jnp.int32).quat.dtype == np.int32
    with pytest.raises(AssertionError):
        Rotation.identity(3)  # JAX supports only num=None
    with pytest.raises(NotImplementedError):
        Rotation.random(ember.random.key(0))


@pytest.mark.parametrize("weights", [None, np.array([1., 2., 0.5, 3.])])
def test_mean(weights):
    r = Rotation.from_quat(QUATS[:4] * np.array([1, 1, 1, 0.3], np.float32) + [0, 0, 0, 2])
    ref = sp(np.asarray(r.quat)).mean(weights)
    got = r.mean(weights)
    assert got.single
    same_rotation(got.quat, ref.as_quat(), atol=1e-5)
    close(got.as_matrix(), ref.as_matrix(), atol=5e-5)


def test_mean_recorded_from_jax():
    # The sign is the eigensolver's; recorded from JAX 0.10.2.
    got = Rotation.from_rotvec(ROTVECS).mean(jnp.array([1., 2., 3.])).quat
    close(got, [-0.1033145934343338, -0.03696322441101074, -0.5700764656066895,
                -0.8142310380935669], atol=5e-6)


def test_mean_errors():
    r = Rotation.from_rotvec(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="1 dimensional"):
        r.mean(jnp.ones((2, 1)))
    with pytest.raises(ValueError, match="3 values and 2 rotations"):
        r.mean(jnp.ones(3))
    with pytest.raises(TypeError, match="Single rotation has no len"):
        Rotation.identity().mean()


@pytest.mark.parametrize("call, exc, match", [
    (lambda: Rotation.from_euler("xyzx", jnp.ones(4)), ValueError, "upto 3"),
    (lambda: Rotation.from_euler("", jnp.ones(1)), ValueError, "upto 3"),
    (lambda: Rotation.from_euler("xYz", jnp.ones(3)), ValueError, "Expected axes"),
    (lambda: Rotation.from_euler("xwz", jnp.ones(3)), ValueError, "Expected axes"),
    (lambda: Rotation.from_euler("xxz", jnp.ones(3)), ValueError, "consecutive"),
    # JAX (unlike SciPy) wants one angle per axis in the last axis.
    (lambda: Rotation.from_euler("z", jnp.ones(3)), ValueError, None),
    # JAX's atleast_1d rejects lists.
    (lambda: Rotation.from_euler("xyz", [0.1, 0.2, 0.3]), TypeError, "atleast_1d"),
    (lambda: Rotation.identity().as_euler("xy"), ValueError, "Expected 3 axes"),
    (lambda: Rotation.identity().as_euler("xyZ"), ValueError, "Expected axes"),
    (lambda: Rotation.identity().as_euler("xxy"), ValueError, "consecutive"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --------------------------------------------------------------------------
# Slerp
# --------------------------------------------------------------------------

KEY_TIMES = np.array([0., 1., 3., 3.5, 6.], np.float32)
KEY_QUATS = QUATS[:5]


def test_slerp_matches_scipy():
    s = Slerp.init(KEY_TIMES, Rotation.from_quat(KEY_QUATS))
    ref = SSlerp(KEY_TIMES.astype(np.float64), sp(KEY_QUATS))
    t = np.array([0., 0.25, 1., 2.2, 3., 3.4, 5.9, 6.], np.float32)
    got = s(t)
    assert not got.single and len(got) == len(t)
    close(got.as_matrix(), ref(t.astype(np.float64)).as_matrix(), atol=5e-5)
    one = s(2.2)
    assert one.single
    close(one.as_matrix(), ref(2.2).as_matrix(), atol=5e-5)
    close(s.timedelta, np.diff(KEY_TIMES))
    assert s.rotations.quat.shape == (4, 4) and s.rotvecs.shape == (4, 3)


def test_slerp_recorded_from_jax():
    # JAX does not range-check the times (SciPy raises): before the first key
    # it extrapolates along the first interval, after the last it uses
    # clamped indices. Nor does it check that key times increase.
    # Recorded from JAX 0.10.2.
    keys = Rotation.from_rotvec(ROTVECS)
    s = Slerp.init(jnp.array([0., 1., 3.]), keys)
    close(s(jnp.array([-1., 3.5, 5.])).quat,
          [[-0.3898005485534668, 0.404286652803421, 0.15655261278152466, 0.8124649524688721],
           [0.35489773750305176, -0.14521104097366333, 0.3366192579269409, 0.8600284457206726],
           [-0.12481352686882019, 0.16641804575920105, 0.8320896625518799, 0.5141530632972717]],
          atol=1e-6)
    s2 = Slerp.init(jnp.array([0., 2., 1.]), keys)
    close(s2(jnp.array([0.5, 1.5])).quat,
          [[0.16279292106628418, 0.014072907157242298, 0.13948428630828857, 0.9766496419906616],
           [0.37687820196151733, -0.15573976933956146, 0.11199893802404404, 0.9061810970306396]],
          atol=1e-6)
    with pytest.raises(ValueError):
        SSlerp([0., 1., 3.], SR.from_rotvec(ROTVECS.astype(np.float64)))([5.])


@pytest.mark.parametrize("call, exc, match", [
    (lambda: Slerp.init([0, 1], Rotation.identity()), ValueError, "at least 2"),
    (lambda: Slerp.init([0], Rotation.from_quat(jnp.array([[0., 0., 0., 1.]]))), ValueError,
     "at least 2"),
    (lambda: Slerp.init([0, 1], jnp.ones((2, 4))), TypeError, "Rotation"),
    (lambda: Slerp.init([[0, 1]], Rotation.from_rotvec(jnp.ones((2, 3)))), ValueError,
     "1 dimensional"),
    (lambda: Slerp.init([0, 1, 2], Rotation.from_rotvec(jnp.ones((2, 3)))), ValueError,
     "2 rotations and 3 timestamps"),
    (lambda: Slerp.init([0, 1], Rotation.from_rotvec(jnp.ones((2, 3))))([[0.5]]), ValueError,
     "at most 1-dimensional"),
])
def test_slerp_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --------------------------------------------------------------------------
# Transformations: jit, vmap, grad
# --------------------------------------------------------------------------


def test_jit():
    r = Rotation.from_quat(QUATS)
    built = ember.jit(Rotation.from_rotvec)(ROTVECS)
    assert isinstance(built, Rotation)
    close(built.quat, Rotation.from_rotvec(ROTVECS).quat)
    f = ember.jit(lambda r, v: (r * r.inv()[::-1]).apply(v, inverse=True))
    close(f(r, VECS), np.asarray((r * r.inv()[::-1]).apply(VECS, inverse=True)), atol=1e-5)
    g = ember.jit(lambda r: r.as_euler("ZXZ", degrees=True))
    close(g(r), np.asarray(r.as_euler("ZXZ", degrees=True)), atol=1e-3)
    h = ember.jit(lambda a: Rotation.from_euler("xyz", a, degrees=True).as_matrix())
    close(h(VECS * 50), SR.from_euler("xyz", VECS.astype(np.float64) * 50, degrees=True)
          .as_matrix(), atol=5e-5)
    m = ember.jit(lambda r, w: r.mean(w).as_matrix())
    close(m(r, jnp.arange(1., 8.)), sp(QUATS).mean(np.arange(1., 8.)).as_matrix(), atol=5e-5)


def test_jit_slerp():
    keys = Rotation.from_quat(KEY_QUATS)
    s = ember.jit(Slerp.init)(KEY_TIMES, keys)
    assert isinstance(s, Slerp) and isinstance(s.rotations, Rotation)
    t = jnp.array([0.5, 2.0, 5.0])
    out = ember.jit(lambda s, t: s(t))(s, t)
    close(out.quat, np.asarray(Slerp.init(KEY_TIMES, keys)(t).quat), atol=1e-6)


def test_traced_flags():
    # JAX selects with jnp.where, so the flags may be arrays (even traced).
    f = ember.jit(lambda v, d: Rotation.from_rotvec(v, degrees=d).as_rotvec(degrees=d))
    close(f(ROTVECS * 50, jnp.array(True)), ROTVECS * 50, atol=2e-3)
    close(f(ROTVECS, jnp.array(False)), ROTVECS, atol=1e-5)
    g = ember.jit(lambda r, v, inv: r.apply(v, inverse=inv))
    r = Rotation.from_quat(QUATS)
    close(g(r, VECS, jnp.array(True)), sp(QUATS).apply(VECS, inverse=True), atol=1e-5)
    e = ember.jit(lambda r, d: r.as_euler("xyz", degrees=d))
    close(e(r, jnp.array(True)), np.rad2deg(np.asarray(r.as_euler("xyz"), np.float64)),
          atol=2e-3)


def test_vmap():
    r = Rotation.from_quat(QUATS)
    out = ember.vmap(lambda r, v: r.apply(v))(r, VECS)
    close(out, sp(QUATS).apply(VECS), atol=1e-5)
    built = ember.vmap(lambda a: Rotation.from_euler("ZYX", a))(VECS)
    assert isinstance(built, Rotation) and built.quat.shape == (7, 4)
    close(built.quat, SR.from_euler("ZYX", VECS.astype(np.float64)).as_quat())
    eul = ember.vmap(lambda r: r.as_euler("yzy"))(r)
    close(eul, np.asarray(r.as_euler("yzy")), atol=1e-5)
    comp = ember.vmap(lambda a, b: a * b)(r, r.inv())
    close(comp.magnitude(), np.zeros(7), atol=1e-3)
    stacks = Rotation.from_rotvec(jnp.stack([ROTVECS, ROTVECS * 0.5]))
    means = ember.vmap(lambda r: r.mean().as_matrix())(stacks)
    close(means[1], SR.from_rotvec(ROTVECS.astype(np.float64) * 0.5).mean().as_matrix(),
          atol=5e-5)


def _fd(fn, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    return np.array([(fn(x + eps * d) - fn(x - eps * d)) / (2 * eps) for d in np.eye(x.size)])


def test_grad_against_finite_differences():
    v = np.array([0.3, -0.4, 1.2], np.float32)
    g = ember.grad(lambda v: Rotation.from_rotvec(v).magnitude())(v)
    close(g, _fd(lambda x: SR.from_rotvec(x).magnitude(), v), atol=1e-5)
    w = np.array([1., 2., 3.], np.float32)
    g2 = ember.grad(lambda v: Rotation.from_rotvec(v).apply(w)[0])(v)
    close(g2, _fd(lambda x: SR.from_rotvec(x).apply(w)[0], v), atol=1e-4)
    a = np.array([0.2, 0.5, -0.7], np.float32)
    g3 = ember.grad(lambda a: Rotation.from_euler("XYZ", a).as_matrix()[0, 1])(a)
    close(g3, _fd(lambda x: SR.from_euler("XYZ", x).as_matrix()[0, 1], a), atol=1e-4)


def test_grad_recorded_from_jax():
    # Recorded from JAX 0.10.2: the rotation-vector formula is not guarded
    # at zero, so its gradient there is NaN; elsewhere gradients flow through
    # Euler angles and through `mean`'s eigendecomposition.
    g0 = ember.grad(lambda v: Rotation.from_rotvec(v).as_matrix().sum())(jnp.zeros(3))
    assert np.all(np.isnan(np.asarray(g0)))
    q = jnp.array([0.1, 0.2, 0.3, 0.9])
    close(ember.grad(lambda q: Rotation.from_quat(q).as_euler("xyz").sum())(q),
          [1.4181383, 3.0875552, 1.7217638, -1.4176154], atol=2e-6, rtol=2e-6)
    qs = jnp.array([[0.1, 0.2, 0.3, 0.9], [0.3, 0.1, 0., 1.]])
    gm = ember.grad(lambda q: Rotation.from_quat(q).mean(jnp.ones(2)).as_matrix()[0, 1])(qs)
    close(gm, [[0.22503835, 0.27654052, -0.9114351, 0.21735403],
               [0.15335181, 0.21385802, -0.8911928, -0.06739137]], atol=5e-6, rtol=5e-6)


def test_float64(x64):
    angles = RNG.uniform(-3, 3, (5, 3))
    r = Rotation.from_euler("zyx", angles)
    assert r.quat.dtype == np.float64
    ref = SR.from_euler("zyx", angles)
    np.testing.assert_allclose(np.asarray(r.quat), ref.as_quat(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.as_euler("zyx")), ref.as_euler("zyx"), atol=1e-10)
    np.testing.assert_allclose(np.asarray(r.as_rotvec()), ref.as_rotvec(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.apply(VECS[:5].astype(np.float64), inverse=True)),
                               ref.apply(VECS[:5].astype(np.float64), inverse=True), atol=1e-12)
    assert Rotation.identity().quat.dtype == np.float64
