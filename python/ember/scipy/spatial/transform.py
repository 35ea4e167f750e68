"""ember.scipy.spatial.transform: the jax.scipy.spatial.transform API.

`Rotation` holds 3-D rotations as quaternions in scalar-last order
(x, y, z, w): one rotation is a quaternion of shape (4,), a batch is an array
of shape (..., 4). `Slerp` interpolates between key rotations at key times.
Both are named tuples, hence pytrees, so they go through `jit`, `vmap` and
`grad` like a tuple of arrays.

Every helper below works on the trailing axis (or the trailing two for
matrices) and broadcasts over the leading ones, the way a function vectorized
over its core dimensions would. Euler axis sequences are Python strings, so
their index bookkeeping happens in Python and only the arithmetic on the
quaternions is traced. Flags (`degrees`, `inverse`) may be Python bools or
boolean arrays; arrays select elementwise, as in JAX.

Behaviour follows JAX rather than SciPy where the two part ways: quaternions
come back without a sign convention unless `as_quat(canonical=True)` is
asked for, Euler angles are wrapped into [-pi, pi), `from_euler` wants as
many angles in the last axis as the sequence has axes, `concatenate` joins
the quaternion arrays along their first axis as they are, `Slerp` checks
neither that its key times increase nor that the times asked for lie between
them (see `Slerp.__call__`), and `Rotation.random` is not implemented."""

from __future__ import annotations

import typing

import numpy as np

import ember.numpy as jnp
from ember._src import dtypes as _dt
from ember._src.numpy.lax_numpy import _check_arraylike

Array = typing.Any

_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}

# Below this angle (radians) the rotation-vector scale factors use their
# Taylor series instead of sin(angle / 2) / angle and its inverse.
_SMALL_ANGLE = 1e-3

# How close to 0 or pi the middle Euler angle must be to count as gimbal lock.
_GIMBAL_EPS = 1e-7


# ----------------------------------------------------------------------------
# Helpers on quaternion arrays (..., 4)
# ----------------------------------------------------------------------------


def _inexact(x):
    """`x` as an array of an inexact dtype (the default float for integers and
    booleans)."""
    x = jnp.asarray(x)
    if not _dt.is_inexact(np.dtype(x.dtype)):
        x = x.astype(_dt.default_float())
    return x


def _apply_if(flag, fn, x, core_ndim):
    """`fn(x)` where `flag` holds and `x` elsewhere. A Python bool picks one
    statically; an array flag broadcasts over the batch axes of `x` (those in
    front of its last `core_ndim`) and selects."""
    if isinstance(flag, (bool, np.bool_)):
        return fn(x) if flag else x
    flag = jnp.asarray(flag)
    flag = jnp.reshape(flag, flag.shape + (1,) * core_ndim)
    return jnp.where(flag, fn(x), x)


def _norm(v):
    """Euclidean norm over the last axis."""
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _unit(q):
    q = jnp.asarray(q)
    return q / _norm(q)[..., None]


def _parts(q):
    return tuple(q[..., n] for n in range(4))


def _product(p, q):
    """The Hamilton product p q (apply q, then p); batch axes broadcast."""
    px, py, pz, pw = _parts(p)
    qx, qy, qz, qw = _parts(q)
    return jnp.stack([
        pw * qx + qw * px + (py * qz - pz * qy),
        pw * qy + qw * py + (pz * qx - px * qz),
        pw * qz + qw * pz + (px * qy - py * qx),
        pw * qw - px * qx - py * qy - pz * qz,
    ], axis=-1)


def _conjugate(q):
    return q * jnp.array([-1, -1, -1, 1], dtype=q.dtype)


def _angle(q):
    """The rotation angle in [0, pi] of (unit) quaternions."""
    return 2. * jnp.arctan2(_norm(q[..., :3]), jnp.abs(q[..., 3]))


def _canonical(q):
    """q or -q, whichever has its first nonzero entry, scanning w, x, y, z,
    positive."""
    neg = q < 0
    zero = q == 0
    flip = neg[..., 0] | (zero[..., 0] & (neg[..., 1] | (zero[..., 1] & neg[..., 2])))
    flip = neg[..., 3] | (zero[..., 3] & flip)
    return jnp.where(flip[..., None], -q, q)


def _to_matrix(q):
    x, y, z, w = _parts(q)
    xx, yy, zz, ww = x * x, y * y, z * z, w * w
    xy, xz, xw = x * y, x * z, x * w
    yz, yw, zw = y * z, y * w, z * w
    rows = [
        [xx - yy - zz + ww, 2 * (xy - zw), 2 * (xz + yw)],
        [2 * (xy + zw), -xx + yy - zz + ww, 2 * (yz - xw)],
        [2 * (xz - yw), 2 * (yz + xw), -xx - yy + zz + ww],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m):
    """Shepperd's method: build the quaternion from whichever of the diagonal
    entries and the trace is largest, then normalize."""
    m = jnp.asarray(m)

    def e(r, c):
        return m[..., r, c]

    trace = e(0, 0) + e(1, 1) + e(2, 2)
    pick = jnp.argmax(jnp.stack([e(0, 0), e(1, 1), e(2, 2), trace], axis=-1), axis=-1)
    q = jnp.stack([e(2, 1) - e(1, 2), e(0, 2) - e(2, 0), e(1, 0) - e(0, 1), 1 + trace],
                  axis=-1)
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        c = [None] * 4
        c[i] = 1 - trace + 2 * e(i, i)
        c[j] = e(j, i) + e(i, j)
        c[k] = e(k, i) + e(i, k)
        c[3] = e(k, j) - e(j, k)
        q = jnp.where((pick == i)[..., None], jnp.stack(c, axis=-1), q)
    return _unit(q)


def _from_rotvec(v, degrees):
    v = _apply_if(degrees, jnp.deg2rad, _inexact(v), 1)
    angle = _norm(v)
    a2 = angle * angle
    series = 0.5 - a2 / 48 + a2 * a2 / 3840
    scale = jnp.where(angle <= _SMALL_ANGLE, series, jnp.sin(angle / 2) / angle)
    return jnp.concatenate([scale[..., None] * v, jnp.cos(angle / 2)[..., None]], axis=-1)


def _to_rotvec(q, degrees):
    q = jnp.where(q[..., 3:4] < 0, -q, q)  # w >= 0: the angle lies in [0, pi]
    angle = 2. * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
    a2 = angle * angle
    series = 2 + a2 / 12 + 7 * a2 * a2 / 2880
    scale = jnp.where(angle <= _SMALL_ANGLE, series, angle / jnp.sin(angle / 2))
    scale = _apply_if(degrees, jnp.rad2deg, scale, 0)
    return scale[..., None] * q[..., :3]


def _from_mrp(p):
    p = jnp.asarray(p)
    s = jnp.sum(p * p, axis=-1) + 1
    return jnp.concatenate([2 * p[..., :3], (2 - s)[..., None]], axis=-1) / s[..., None]


def _to_mrp(q):
    w = q[..., 3]
    sign = jnp.where(w < 0, -1., 1.)
    return sign[..., None] * q[..., :3] / (1. + sign * w)[..., None]


# ----------------------------------------------------------------------------
# Euler angles
# ----------------------------------------------------------------------------


def _parse_seq(seq, lengths):
    """(axis indices, intrinsic) of an Euler sequence such as 'xyz' (extrinsic)
    or 'ZXZ' (intrinsic); ValueError for a malformed one."""
    if len(seq) not in lengths:
        if lengths == (3,):
            raise ValueError(f"Expected 3 axes, got {seq}.")
        raise ValueError("Expected axis specification to be a non-empty string of upto "
                         f"3 characters, got {seq}")
    if not (set(seq) <= set("xyz") or set(seq) <= set("XYZ")):
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return [_AXIS_INDEX[a] for a in seq.lower()], seq.isupper()


def _elementary(axis, angle):
    half = angle / 2.
    comps = [jnp.zeros_like(half)] * 4
    comps[3] = jnp.cos(half)
    comps[axis] = jnp.sin(half)
    return jnp.stack(comps, axis=-1)


def _from_euler(angles, axes, intrinsic, degrees):
    angles = _apply_if(degrees, jnp.deg2rad, _inexact(angles), 1)
    q = _elementary(axes[0], angles[..., 0])
    for n in range(1, len(axes)):
        e = _elementary(axes[n], angles[..., n])
        # Intrinsic: each rotation is about the already rotated axes (post-
        # multiply); extrinsic: about the fixed axes (pre-multiply).
        q = _product(q, e) if intrinsic else _product(e, q)
    return q


def _to_euler(q, axes, extrinsic, degrees):
    """Euler angles of quaternions for a 3-axis sequence (Bernardes and
    Viollet, 2022: the middle angle from a two-argument arctangent, the outer
    two from their half sum and half difference). At gimbal lock the third
    angle is set to zero."""
    if extrinsic:
        first, third = 0, 2
        i, j, k = axes
    else:
        first, third = 2, 0
        i, j, k = axes[::-1]
    proper = i == k  # a proper Euler sequence such as 'zxz'
    if proper:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2  # +1 for a cyclic (i, j, k), else -1
    w = q[..., 3]
    if proper:
        a, b, c, d = w, q[..., i], q[..., j], q[..., k] * sign
    else:
        a = w - q[..., j]
        b = q[..., i] + q[..., k] * sign
        c = q[..., j] + w
        d = q[..., k] * sign - q[..., i]
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    at_zero = jnp.abs(middle) <= _GIMBAL_EPS
    regular = ~at_zero & ~(jnp.abs(middle - np.pi) <= _GIMBAL_EPS)
    half_sum = jnp.arctan2(b, a)
    half_diff = jnp.arctan2(d, c)
    locked = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    outer = {first: half_sum - half_diff, third: half_sum + half_diff}
    angles = [jnp.where(regular, outer[0], locked), middle,
              jnp.where(regular, outer[2], jnp.zeros_like(middle))]
    if not proper:
        angles[third] = angles[third] * sign
        angles[1] = angles[1] - np.pi / 2
    angles = jnp.stack(angles, axis=-1)
    angles = (angles + np.pi) % (2 * np.pi) - np.pi
    return _apply_if(degrees, jnp.rad2deg, angles, 1)


# ----------------------------------------------------------------------------
# Rotation
# ----------------------------------------------------------------------------


class Rotation(typing.NamedTuple):
    """Rotations in three dimensions, stored as quaternions (x, y, z, w).

    Ember's version of `scipy.spatial.transform.Rotation`, with the API of
    `jax.scipy.spatial.transform.Rotation`: build one with a `from_*`
    classmethod, convert it with the `as_*` methods, compose rotations with
    `*` and rotate vectors with `apply`. A `Rotation` is a named tuple with
    the single field `quat`, so it is a pytree.

    Example: a quarter turn about z, then about x:

    >>> r = Rotation.from_euler('z', 90, degrees=True)
    >>> (Rotation.from_euler('x', 90, degrees=True) * r).as_matrix()
    """

    quat: Array

    # -- constructors ---------------------------------------------------------

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """Join the quaternion arrays of `rotations` along their first axis."""
        return cls(jnp.concatenate([r.quat for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles: Array, degrees: bool = False):
        """From Euler angles: `seq` names 1 to 3 axes, lower case for rotations
        about the fixed (extrinsic) axes, upper case for the rotating
        (intrinsic) ones; the last axis of `angles` holds one angle per axis."""
        axes, intrinsic = _parse_seq(seq, (1, 2, 3))
        _check_arraylike("atleast_1d", angles)
        angles = jnp.atleast_1d(angles)
        if angles.shape[-1] != len(axes):
            raise ValueError(f"from_euler: the sequence {seq!r} has {len(axes)} axes but the "
                             f"last axis of `angles` has size {angles.shape[-1]}.")
        return cls(_from_euler(angles, axes, intrinsic, degrees))

    @classmethod
    def from_matrix(cls, matrix: Array):
        """From rotation matrices (..., 3, 3)."""
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp: Array):
        """From Modified Rodrigues Parameters (..., 3)."""
        return cls(_from_mrp(mrp))

    @classmethod
    def from_quat(cls, quat: Array):
        """From quaternions (..., 4) in scalar-last order; they are normalized."""
        return cls(_unit(quat))

    @classmethod
    def from_rotvec(cls, rotvec: Array, degrees: bool = False):
        """From rotation vectors (..., 3): axis times angle."""
        return cls(_from_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation (only a single one: `num` must be None)."""
        assert num is None
        return cls(jnp.array([0., 0., 0., 1.], dtype=dtype))

    @classmethod
    def random(cls, random_key: Array, num: int | None = None):
        """Uniformly random rotations: not implemented (as in JAX)."""
        raise NotImplementedError()

    # -- container protocol ---------------------------------------------------

    def __getitem__(self, indexer):
        """The rotation(s) at `indexer` of a batch."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        """The number of rotations in a batch (first axis of `quat`)."""
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    @property
    def single(self) -> bool:
        """True when this holds one rotation rather than a batch."""
        return self.quat.ndim == 1

    # -- operations -----------------------------------------------------------

    def __mul__(self, other) -> Rotation:
        """`self * other`: apply `other`, then `self` (batches broadcast)."""
        return Rotation.from_quat(_product(self.quat, other.quat))

    def apply(self, vectors: Array, inverse: bool = False) -> Array:
        """Rotate `vectors` (..., 3) by these rotations, or by their inverses
        when `inverse` is true; batch axes broadcast."""
        m = _apply_if(inverse, lambda a: jnp.swapaxes(a, -1, -2), self.as_matrix(), 2)
        return jnp.matmul(m, jnp.asarray(vectors)[..., None])[..., 0]

    def inv(self):
        """The inverse rotation(s)."""
        return Rotation(_conjugate(self.quat))

    def magnitude(self) -> Array:
        """Rotation angles in radians, in [0, pi]."""
        return _angle(self.quat)

    def mean(self, weights: Array | None = None):
        """The (weighted) mean rotation of a batch: the quaternion that
        maximizes the weighted sum of squared dot products with the batch's,
        i.e. the top eigenvector of sum_n w_n q_n q_n^T. Its sign is whatever
        the eigensolver returns."""
        q = self.quat
        if weights is None:
            w = jnp.ones(q.shape[0], dtype=q.dtype)
        else:
            w = jnp.asarray(weights, dtype=q.dtype)
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError("Expected `weights` to have number of values equal to number "
                             f"of rotations, got {w.shape[0]} values and {len(self)} "
                             "rotations.")
        _, vecs = jnp.linalg.eigh(jnp.matmul(q.T * w, q))
        return Rotation(vecs[:, -1])

    # -- conversions ----------------------------------------------------------

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles (..., 3) for a 3-axis sequence (see `from_euler`),
        wrapped into [-pi, pi)."""
        axes, intrinsic = _parse_seq(seq, (3,))
        return _to_euler(self.quat, axes, not intrinsic, degrees)

    def as_matrix(self) -> Array:
        """Rotation matrices (..., 3, 3)."""
        return _to_matrix(self.quat)

    def as_mrp(self) -> Array:
        """Modified Rodrigues Parameters (..., 3), of norm at most 1."""
        return _to_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False) -> Array:
        """Rotation vectors (..., 3), of norm (the angle) at most pi."""
        return _to_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Array:
        """The quaternions, as stored or (`canonical`) with w >= 0 (ties broken
        by the first nonzero of x, y, z), in (x, y, z, w) order or
        (`scalar_first`) (w, x, y, z)."""
        q = _canonical(self.quat) if canonical else self.quat
        return jnp.roll(q, shift=1, axis=-1) if scalar_first else q


# ----------------------------------------------------------------------------
# Slerp
# ----------------------------------------------------------------------------


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between key rotations.

    Ember's version of `scipy.spatial.transform.Slerp`, with the API of
    `jax.scipy.spatial.transform.Slerp`: build it with `Slerp.init(times,
    rotations)` and call it with the times to interpolate at. Between two
    neighbouring keys the rotation turns at a constant rate about a fixed
    axis. A named tuple, hence a pytree.

    Fields: `times` (the key times), `timedelta` (their differences),
    `rotations` (the keys but the last) and `rotvecs` (the rotation vector
    from each key to the next, in the frame of the first).
    """

    times: Array
    timedelta: Array
    rotations: Rotation
    rotvecs: Array

    @classmethod
    def init(cls, times: Array, rotations: Rotation):
        """Interpolator through `rotations` (a batch of at least two) at the
        increasing 1-D `times` (not checked)."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, "
                             f"got {times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        quat = rotations.as_quat()
        starts = Rotation(quat[:-1])
        steps = starts.inv() * Rotation(quat[1:])
        return cls(times=times, timedelta=jnp.diff(times), rotations=starts,
                   rotvecs=steps.as_rotvec())

    def __call__(self, times: Array):
        """The interpolated rotation(s) at `times` (a scalar or 1-D).

        Nothing is range-checked: a time before the first key extrapolates
        along the first interval; for a time t after the last key the
        interval index runs one past the end and is clamped, which gives the
        rotation at times[-2] + (t - times[-1])."""
        t = jnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        scalar = t.ndim == 0
        t = jnp.atleast_1d(t)
        ind = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
        frac = (t - self.times[ind]) / self.timedelta[ind]
        out = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * frac[:, None])
        return out[0] if scalar else out
