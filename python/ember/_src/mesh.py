"""Meshes and shardings with JAX's API: `Mesh`, `AxisType`, `make_mesh`,
`PartitionSpec` (`P`), `NamedSharding`, `set_mesh`/`use_mesh`, and the
shards of an array.

Ember's devices share one address space (the CPU devices of one process,
`EMBER_NUM_CPU_DEVICES` or XLA's `--xla_force_host_platform_device_count`),
so a sharding says where each block of an array belongs while the data stays
one host buffer; `shard_map` computes per block (`parallel.py`)."""

import abc
import contextlib
import dataclasses
import enum
import math
import threading

import numpy as np

from . import devices as devices_lib


class Sharding(abc.ABC):  # noqa: B024  (no abstract methods: JAX's has none to share)
    """`jax.sharding.Sharding`: what every sharding is an instance of
    (`NamedSharding`; `devices.SingleDeviceSharding`, a layer below, is
    registered)."""


Sharding.register(devices_lib.SingleDeviceSharding)


@dataclasses.dataclass(frozen=True, slots=True)
class AbstractDevice:
    """`jax.sharding.AbstractDevice`: a kind of device, without an id."""
    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self):
        return (f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform})")


class ManualAxisType:
    """`jax.sharding.ManualAxisType`: the mesh axes a value of a manual
    (shard_map) computation varies over, or is unreduced or reduced over;
    interned (equal ones are the same object)."""

    __slots__ = ("varying", "unreduced", "reduced", "__weakref__")
    _interned = {}

    def __new__(cls, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        varying, unreduced, reduced = (frozenset(a) for a in (varying, unreduced, reduced))
        if varying & unreduced:
            raise ValueError("varying and unreduced cannot have common mesh axes. Got "
                             f"varying={varying} and unreduced={unreduced}")
        if varying & reduced:
            raise ValueError("varying and reduced cannot have common mesh axes. Got "
                             f"varying={varying} and reduced={reduced}")
        key = (varying, unreduced, reduced)
        obj = cls._interned.get(key)
        if obj is None:
            obj = object.__new__(cls)
            object.__setattr__(obj, "varying", varying)
            object.__setattr__(obj, "unreduced", unreduced)
            object.__setattr__(obj, "reduced", reduced)
            cls._interned[key] = obj
        return obj

    def __setattr__(self, name, value):
        raise AttributeError("ManualAxisType is immutable")

    def __repr__(self):
        return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
                f"reduced={self.reduced})")

    def __getnewargs_ex__(self):
        return (), {"varying": self.varying, "unreduced": self.unreduced,
                    "reduced": self.reduced}

    def update(self, **kwargs):
        for name in ("varying", "unreduced", "reduced"):
            kwargs.setdefault(name, getattr(self, name))
        return ManualAxisType(**kwargs)


class AxisType(enum.Enum):
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


class Mesh:
    """A named grid of devices (`devices` an ndarray of `Device`s)."""

    def __init__(self, devices, axis_names, axis_types=None):
        devs = np.asarray(devices, dtype=object)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if devs.ndim != len(axis_names):
            raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal "
                             f"the length of its second argument (`axis_names`), but got "
                             f"devices.ndim == {devs.ndim} and len(axis_names) == "
                             f"{len(axis_names)}.")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(axis_names)
        axis_types = tuple(axis_types)
        if len(axis_types) != len(axis_names):
            raise ValueError("Number of axis names should match the number of axis_types")
        self.devices = devs
        self.axis_names = axis_names
        self.axis_types = axis_types

    @property
    def shape(self):
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self):
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self):
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self):
        return int(self.devices.size)

    @property
    def empty(self):
        return self.devices.size == 0

    @property
    def device_ids(self):
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self):
        return list(self.devices.flat)

    @property
    def abstract_mesh(self):
        platform = self.devices.flat[0].platform if self.devices.size else None
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            device_kind=platform, platform=platform)

    def update_axis_types(self, name_to_type):
        return Mesh(self.devices, self.axis_names,
                    tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names,
                                                                  self.axis_types)))

    auto_axes = property(lambda self: _axes_of(self, AxisType.Auto))
    explicit_axes = property(lambda self: _axes_of(self, AxisType.Explicit))
    manual_axes = property(lambda self: _axes_of(self, AxisType.Manual))

    def _key(self):
        return (self.axis_names, self.axis_types, self.devices.shape,
                tuple(d.id for d in self.devices.flat))

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        axes = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.devices.shape))
        return f"Mesh({axes}, axis_types={self.axis_types!r})"

    def __repr__(self):
        return (f"Mesh(axis_sizes={self.axis_sizes!r}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types!r})")

    def __enter__(self):
        _mesh_stack().append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack().pop()
        return False


def _axes_of(mesh, axis_type):
    return tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == axis_type)


class AbstractMesh:
    """A mesh's axis sizes, names and types without devices (JAX's
    `AbstractMesh`: what `get_abstract_mesh()` reports, and what
    `use_abstract_mesh` sets; shardings made under it take the devices of
    the concrete mesh in context, see `concrete_mesh`)."""

    def __init__(self, axis_sizes, axis_names, axis_types=None, *, device_kind=None,
                 platform=None, abstract_device=None):
        if abstract_device is not None:
            device_kind, platform = abstract_device.device_kind, abstract_device.platform
        self.axis_sizes = tuple(int(n) for n in axis_sizes)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"Length of axis_sizes {self.axis_sizes} and axis_names "
                             f"{self.axis_names} should match")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(self.axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(self.axis_names)
        self.axis_types = tuple(axis_types)
        self._device = (device_kind, platform)

    shape = property(lambda self: dict(zip(self.axis_names, self.axis_sizes)))
    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
    size = property(lambda self: math.prod(self.axis_sizes))
    empty = property(lambda self: not self.axis_names)
    abstract_mesh = property(lambda self: self)
    auto_axes = property(lambda self: _axes_of(self, AxisType.Auto))
    explicit_axes = property(lambda self: _axes_of(self, AxisType.Explicit))
    manual_axes = property(lambda self: _axes_of(self, AxisType.Manual))

    def update_axis_types(self, name_to_type):
        return AbstractMesh(self.axis_sizes, self.axis_names,
                            tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names,
                                                                          self.axis_types)),
                            device_kind=self._device[0], platform=self._device[1])

    def _key(self):
        return (self.axis_sizes, self.axis_names, self.axis_types)

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple) or "()"
        types = ", ".join(repr(t) for t in self.axis_types)
        dev = ("" if self._device[0] is None else
               f", device_kind={self._device[0]}, num_cores=None, platform={self._device[1]}")
        return (f"AbstractMesh({axes}, axis_types=({types}"
                f"{',' if len(self.axis_types) == 1 else ''}){dev})")

    @property
    def devices(self):
        raise ValueError("devices is not implemented for `jax.sharding.AbstractMesh`")

    @property
    def abstract_device(self):
        """The kind of device the mesh stands for (the default device's kind
        when it was made without one)."""
        kind, platform = self._device
        if platform is None:
            dev = devices_lib.devices()[0]
            kind, platform = dev.device_kind, dev.platform
        return AbstractDevice(kind or platform, None, platform)


_state = threading.local()


def _mesh_stack():
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


_global_mesh = None


def current_mesh():
    """The mesh of the innermost `with mesh:`/`use_mesh`/`set_mesh` (None
    when there is none), with the axes of an enclosing `use_abstract_mesh`
    (`concrete_mesh`)."""
    stack = _mesh_stack()
    mesh = stack[-1] if stack else _global_mesh
    abstract = getattr(_state, "abstract", None)
    if abstract:
        return concrete_mesh(abstract[-1], mesh)
    return mesh


def concrete_mesh(abstract, like=None):
    """`abstract` on devices: those of `like` (the concrete mesh in
    context, of the same size), else the first devices."""
    if isinstance(abstract, Mesh):
        return abstract
    if like is not None and like.size == abstract.size:
        devs = like.devices.reshape(abstract.axis_sizes)
    else:
        all_devs = devices_lib.devices()
        if abstract.size > len(all_devs):
            raise ValueError(f"the abstract mesh {abstract} needs {abstract.size} devices; "
                             f"there are {len(all_devs)}")
        devs = np.empty(abstract.size, dtype=object)
        devs[:] = all_devs[:abstract.size]
        devs = devs.reshape(abstract.axis_sizes)
    return Mesh(devs, abstract.axis_names, abstract.axis_types)


@contextlib.contextmanager
def use_abstract_mesh(mesh):
    """Within: the mesh in context has `mesh`'s axis sizes, names and types
    (JAX requires the same total size as the concrete mesh)."""
    if not isinstance(mesh, AbstractMesh):
        raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got {type(mesh)}")
    stack = _state.__dict__.setdefault("abstract", [])
    stack.append(mesh)
    try:
        yield mesh
    finally:
        stack.pop()


class _MeshSetting:
    """What `set_mesh` returns: the mesh is set at once; as a context
    manager the previous one comes back at exit."""

    def __init__(self, previous):
        self._previous = previous

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _global_mesh
        _global_mesh = self._previous
        return False


def set_mesh(mesh):
    global _global_mesh
    previous = _global_mesh
    _global_mesh = mesh
    return _MeshSetting(previous)


@contextlib.contextmanager
def use_mesh(mesh):
    _mesh_stack().append(mesh)
    try:
        yield mesh
    finally:
        _mesh_stack().pop()


def get_abstract_mesh():
    """The mesh in context without its devices (an empty AbstractMesh when
    there is none)."""
    abstract = getattr(_state, "abstract", None)
    if abstract:
        return abstract[-1]
    mesh = current_mesh()
    return AbstractMesh((), ()) if mesh is None else mesh.abstract_mesh


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
    """A mesh over the first prod(axis_shapes) devices (Explicit axes by
    default, as in JAX 0.10)."""
    axis_shapes = tuple(int(s) for s in axis_shapes)
    if isinstance(axis_names, str):
        axis_names = (axis_names,)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"Length of axis_shapes {axis_shapes} and axis_names {axis_names} "
                         "should match")
    devs = list(devices) if devices is not None else devices_lib.devices()
    need = math.prod(axis_shapes)
    if need > len(devs) or (devices is not None and need != len(devs)):
        raise ValueError(f"Number of devices {len(devs)} must be >= the product of mesh_shape "
                         f"{axis_shapes}")
    devs = devs[:need]
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(axis_names)
    arr = np.empty(need, dtype=object)
    arr[:] = devs
    return Mesh(arr.reshape(axis_shapes), axis_names, axis_types)


class PartitionSpec(tuple):
    """How each dimension of an array is split over mesh axes: None, an
    axis name, or a tuple of names (major to minor). `unreduced`: the mesh
    axes over which the array is a sum of per-device partial sums, awaiting
    their reduction; `reduced`: axes over which it is replicated and whose
    cotangents are unreduced (JAX's sharding-in-AD states, design.md
    "Unreduced and reduced")."""

    UNCONSTRAINED = "unconstrained"

    def __new__(cls, *parts, unreduced=frozenset(), reduced=frozenset()):
        for p in parts:
            if not (p is None or isinstance(p, str) or p is cls.UNCONSTRAINED or
                    (isinstance(p, (tuple, list)) and all(isinstance(q, str) for q in p))):
                raise TypeError(f"PartitionSpec entries must be None, an axis name or a tuple "
                                f"of axis names, got {p!r}")
        for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
            if not isinstance(axes, (set, frozenset)):
                raise TypeError(f"{what} argument of PartitionSpec should of type `frozenset` "
                                f"or `set`. Got type {axes!r}")
        self = super().__new__(cls, tuple(tuple(p) if isinstance(p, list) else p for p in parts))
        self._unreduced, self._reduced = frozenset(unreduced), frozenset(reduced)
        used = {a for p in self if p is not None and p is not cls.UNCONSTRAINED
                for a in ((p,) if isinstance(p, str) else p)}
        for what, axes in (("unreduced", self._unreduced), ("reduced", self._reduced)):
            if used & axes:
                raise ValueError(f"partitions cannot overlap with {what} axes passed to "
                                 f"PartitionSpec. Got partitions: {tuple(self)} and {what} "
                                 f"axes: {axes}")
        if self._unreduced & self._reduced:
            raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot "
                             f"overlap. Got unreduced: {self._unreduced} and reduced: "
                             f"{self._reduced}")
        return self

    @property
    def unreduced(self):
        return self._unreduced

    @property
    def reduced(self):
        return self._reduced

    @property
    def partitions(self):
        return tuple(self)

    def update(self, **kwargs):
        """This spec with `partitions`, `unreduced` or `reduced` replaced."""
        return PartitionSpec(*kwargs.get("partitions", tuple(self)),
                             unreduced=kwargs.get("unreduced", self._unreduced),
                             reduced=kwargs.get("reduced", self._reduced))

    def __repr__(self):
        parts = [repr(p) for p in self]
        for what, axes in (("unreduced", self._unreduced), ("reduced", self._reduced)):
            if axes:
                parts.append(what + "={" + ", ".join(repr(a) for a in sorted(axes)) + "}")
        if len(self) == 1 and len(parts) == 1:
            return f"P({self[0]!r},)"
        return "P(" + ", ".join(parts) + ")"

    def _normalized(self):
        spec = tuple(self)
        while spec and spec[-1] is None:
            spec = spec[:-1]
        return spec

    def _key(self):
        """What two specs that place an array alike share."""
        return self._normalized(), self._unreduced, self._reduced

    def __eq__(self, other):
        if isinstance(other, PartitionSpec):
            return tuple.__eq__(self, other) and (self._unreduced, self._reduced) == \
                (other._unreduced, other._reduced)
        if isinstance(other, tuple):
            return tuple.__eq__(self, other) and not self._unreduced and not self._reduced
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        # (A spec without unreduced or reduced axes equals its tuple, and
        # hashes as it.)
        if not self._unreduced and not self._reduced:
            return tuple.__hash__(self)
        return hash((tuple(self), self._unreduced, self._reduced))

    def __reduce__(self):
        return (_partition_spec, (tuple(self), self._unreduced, self._reduced))

    def axes(self, dim):
        """The mesh axes dimension `dim` is split over, major first."""
        if dim >= len(self) or self[dim] is None or self[dim] is self.UNCONSTRAINED:
            return ()
        return (self[dim],) if isinstance(self[dim], str) else tuple(self[dim])

    def all_axes(self):
        out = []
        for d in range(len(self)):
            out.extend(self.axes(d))
        return out


def _partition_spec(parts, unreduced, reduced):
    return PartitionSpec(*parts, unreduced=unreduced, reduced=reduced)


P = PartitionSpec


class IndivisibleError(ValueError):
    """JAX's error for an array whose dimension its sharding's devices do
    not divide (Auto or Manual axes; Explicit ones fail as a type)."""


def indivisible_type_error(mesh, spec, d, shape):
    """JAX's ValueError for the type of an array of `shape` whose Explicit
    sharding by `spec` does not divide dimension `d` evenly."""
    axes = tuple(spec.axes(d))
    k = math.prod(mesh.shape[n] for n in axes)
    return ValueError(
        f"Sharding spec {axes} implies that array axis {d} is partitioned {k} times, but "
        f"does not evenly divide the dimension size {shape[d]}. Got shape: {tuple(shape)} "
        f"and sharding {NamedSharding(mesh.abstract_mesh, spec)}")


def check_spec(spec, mesh, shape, what, divisible=True):
    """JAX's checks of a spec against a mesh and an array shape (its sizes
    too with `divisible`)."""
    names = spec.all_axes()
    for n in names + sorted(spec.unreduced | spec.reduced):
        if n not in mesh.axis_names:
            raise ValueError(f"Resource axis: {n} of {spec!r} is not found in mesh: "
                             f"{tuple(mesh.axis_names)}.")
    if len(set(names)) != len(names):
        raise ValueError(f"A single {what} specification can map every mesh axis to at most "
                         f"one positional dimension, but {spec!r} has duplicate entries")
    if shape is not None and len(spec) > len(shape):
        raise ValueError(f"{what} {spec!r} has length {len(spec)}, which is longer than the "
                         f"rank {len(shape)} of the array of shape {tuple(shape)}")
    if shape is not None and divisible:
        for d in range(len(spec)):
            k = math.prod(mesh.shape[n] for n in spec.axes(d))
            if shape[d] % k:
                raise ValueError(f"One of {what} was given the resource assignment of {spec!r}, "
                                 f"which implies that the global size of its dimension {d} "
                                 f"should be divisible by {k}, but it is equal to {shape[d]} "
                                 f"(full shape: {tuple(shape)})")


class NamedSharding(Sharding):
    """A mesh and a PartitionSpec: block i of the array belongs to the
    devices at mesh position i (replicated over the unnamed axes)."""

    def __init__(self, mesh, spec=None, *, memory_kind=None):
        if spec is None:
            spec = PartitionSpec()
        elif not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec) if isinstance(spec, (tuple, list)) else spec
        check_spec(spec, mesh, None, "NamedSharding spec")
        self.mesh = mesh
        self.spec = spec
        self.memory_kind = memory_kind

    def __repr__(self):
        if isinstance(self.mesh, AbstractMesh):  # a type's sharding (`typeof`)
            return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"

    def __eq__(self, other):
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and \
            self.spec._key() == other.spec._key()

    def __hash__(self):
        return hash((self.mesh, self.spec._key()))

    @property
    def device_set(self):
        return set(self.mesh.devices.flat)

    @property
    def addressable_devices(self):
        return self.device_set

    @property
    def num_devices(self):
        return self.mesh.size

    @property
    def is_fully_addressable(self):
        return True

    @property
    def is_fully_replicated(self):
        return not self.spec.all_axes() and not self.spec.unreduced

    def shard_shape(self, global_shape):
        shape = list(global_shape)
        check_spec(self.spec, self.mesh, shape, "NamedSharding", divisible=False)
        ways = [math.prod(self.mesh.shape[n] for n in self.spec.axes(d)) if d < len(self.spec)
                else 1 for d in range(len(shape))]
        for d, (size, k) in enumerate(zip(shape, ways)):
            if size % k == 0:
                continue
            if all(n in self.mesh.explicit_axes for n in self.spec.axes(d)):
                raise indivisible_type_error(self.mesh, self.spec, d, shape)
            raise IndivisibleError(
                f"{self} implies that array axis {d} is partitioned {k} times, but the "
                f"dimension size is {size} (full shape: {tuple(shape)}, per-dimension tiling "
                f"factors: {ways} should evenly divide the shape)")
        return tuple(size // k for size, k in zip(shape, ways))

    def devices_indices_map(self, global_shape):
        """Each device's block of an array of `global_shape`, as slices."""
        local = self.shard_shape(global_shape)
        names = self.mesh.axis_names
        out = {}
        for pos in np.ndindex(*self.mesh.devices.shape):
            coord = dict(zip(names, pos))
            index = []
            for d in range(len(global_shape)):
                axes = self.spec.axes(d)
                if not axes:
                    index.append(slice(None))
                    continue
                k = 0
                for n in axes:
                    k = k * self.mesh.shape[n] + coord[n]
                index.append(slice(k * local[d], (k + 1) * local[d]))
            out[self.mesh.devices[pos]] = tuple(index)
        return out

    def addressable_devices_indices_map(self, global_shape):
        return self.devices_indices_map(global_shape)

    def update(self, *, mesh=None, spec=None, memory_kind=None):
        return NamedSharding(self.mesh if mesh is None else mesh,
                             self.spec if spec is None else spec,
                             memory_kind=self.memory_kind if memory_kind is None else memory_kind)

    def with_spec(self, spec):
        return NamedSharding(self.mesh, spec)


class Shard:
    """One device's block of an array."""

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data!r})")


def shard_indices(sharding, shape):
    """(device, index, replica_id) of each block of an array of `shape`."""
    if not isinstance(sharding, NamedSharding):
        return [(next(iter(sharding.device_set)), tuple(slice(None) for _ in shape), 0)]
    seen = {}
    out = []
    for dev, index in sharding.devices_indices_map(shape).items():
        key = tuple((s.start, s.stop) for s in index)
        replica = seen.get(key, 0)
        seen[key] = replica + 1
        out.append((dev, index, replica))
    return out


def cotangent_sharding(sharding):
    """The sharding of a cotangent of a value sharded so: the same, with
    its unreduced and reduced axes swapped (JAX's rule: a reduced primal
    has unreduced cotangents, and the other way round)."""
    if not isinstance(sharding, NamedSharding) or not (sharding.spec.unreduced or
                                                       sharding.spec.reduced):
        return sharding
    return sharding.with_spec(sharding.spec.update(unreduced=sharding.spec.reduced,
                                                   reduced=sharding.spec.unreduced))


def shard_data(sharding, value, device, index):
    """A device's block of an array's value. An array unreduced over mesh
    axes is held as its reduced value (Ember's arrays are global, mesh.py),
    so its pieces are that value on the first device along those axes and
    zeros on the others: partial sums that add up to it, as JAX's
    `reshard(x, P(unreduced=...))` places a replicated array."""
    block = value[index]
    if isinstance(sharding, NamedSharding) and sharding.spec.unreduced:
        pos = dict(zip(sharding.mesh.axis_names,
                       [int(i[0]) for i in np.nonzero(sharding.mesh.devices == device)]))
        if any(pos[n] for n in sharding.spec.unreduced):
            block = np.zeros_like(block)
    return block


def sharding_of(spec_or_sharding, what="device_put"):
    """A sharding from a PartitionSpec (on the current mesh) or a sharding."""
    if isinstance(spec_or_sharding, PartitionSpec):
        mesh = current_mesh()
        if mesh is None:
            raise ValueError(f"{what} was given a PartitionSpec {spec_or_sharding!r} with no "
                             "mesh set: use jax.set_mesh(mesh) or pass a NamedSharding")
        return NamedSharding(mesh, spec_or_sharding)
    return spec_or_sharding


def visualize(shape, sharding, scale=1.0, min_width=9, max_width=80):
    """A picture of which devices hold which block of a 1-D or 2-D array,
    drawn as JAX draws it without colours (its `rich` table with square
    box lines): a cell per block, about 25 characters and 10 lines for the
    whole array scaled by its aspect ratio (`scale`), each cell at least
    `min_width` and at most `max_width` wide, naming its devices."""
    if len(shape) not in (1, 2):
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    blocks = {}  # (row, column) -> (device ids, width fraction, height fraction)
    for dev, index, _ in shard_indices(sharding, tuple(shape)):
        chunk, fracs = [], []
        for size, s in zip(shape, index):
            start = s.start or 0
            stop = size if s.stop is None else s.stop
            chunk.append(start // (stop - start) if stop > start else 0)
            fracs.append((stop - start) / size)
        if len(shape) == 1:
            chunk, fracs = [0] + chunk, [None] + fracs
        ids, _, _ = blocks.setdefault(tuple(chunk), (set(), fracs[1], fracs[0]))
        ids.add(dev.id)
    kind = next(iter(sharding.device_set)).platform.upper()
    rows = max(r for r, _ in blocks) + 1
    cols = max(c for _, c in blocks) + 1
    cells = {}  # (row, column) -> (text, top, right, bottom, left)
    for key, (ids, width_frac, height_frac) in blocks.items():
        text = f"{kind} " + ",".join(str(i) for i in sorted(ids))
        width = min(max(int(width_frac * base_width * 2.5), min_width), max_width)
        height = 1 if height_frac is None else int(height_frac * base_height)
        left, extra = divmod(width - len(text) - 2, 2)
        top, extra_v = divmod(height - 2, 2)
        cells[key] = (text, max(top, 0), max(left + extra, 0), max(top + extra_v, 0),
                      max(left, 0))
    widths = [max(len(t) + r + lf for (_, c), (t, _, r, _, lf) in cells.items() if c == j)
              for j in range(cols)]
    room = max_width - cols - 1
    if sum(widths) > room:
        # Wider than the console: the columns shrink in proportion to fill
        # it (the first ones take what rounding leaves; a cell's name is
        # dropped where its padding leaves it no room).
        total = sum(widths)
        narrow = [max(w * room // total, 1) for w in widths]
        widths = [w + (k < room - sum(narrow)) for k, w in enumerate(narrow)]

    def lines_of(key, width):
        text, top, right, bottom, left = cells[key]
        room = width - left - right
        body = [text[:room].center(room)] if room > 0 else []
        return ([" " * width] * top
                + [(" " * left + b + " " * right)[:width].ljust(width) for b in body]
                + [" " * width] * bottom)

    def rule(a, mid, b):
        return a + mid.join("\u2500" * w for w in widths) + b

    out = [rule("\u250c", "\u252c", "\u2510")]
    for i in range(rows):
        parts = [lines_of((i, j), widths[j]) for j in range(cols)]
        height = max(1, max(len(p) for p in parts))
        parts = [p + [" " * widths[j]] * (height - len(p)) for j, p in enumerate(parts)]
        out += ["\u2502" + "\u2502".join(p[k] for p in parts) + "\u2502"
                for k in range(height)]
        if i + 1 < rows:
            out.append(rule("\u251c", "\u253c", "\u2524"))
    out.append(rule("\u2514", "\u2534", "\u2518"))
    return "\n".join(out)
