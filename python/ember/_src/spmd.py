"""`jit` over the processes of an MPI job, partitioned by MLIR (#22).

Where every process of a multi-process run (`distributed.initialize()`)
calls a jitted function on arrays split over a mesh whose devices are the
processes (one device each, mesh position i on process i), the program is
compiled for one process: the traced module gets the mesh as a
`shard.grid`, each argument's PartitionSpec as `ember.split_axes`, and the
process's rank and the number of processes in its DLTI map. The CPU
pipeline's `ember-partition` then propagates the shardings and runs MLIR's
shard-partition (or, for programs upstream does not cover, gathers the
split arguments at the entry), and `ember-shard-to-mpi` lowers the
collectives through MLIR's `mpi` dialect to MPICH's C API. Each process
passes its own blocks of the (global) arguments and gets the whole results,
as the replicated computation it replaces did. docs/design.md, "`jit`
partitioned over the processes"; one-axis meshes only (plan_for).

The CPU devices of one process run the same program, one thread each
(`ThreadsPlan`): compiled once with the rank read at run time, its MPI
calls are the runtime's collectives among the threads (lib/Runtime/
Devices.cpp); design.md, "In-process devices as threads".
"""

import collections
import ctypes
import re

import numpy as np

from . import config as _config
from .mesh import NamedSharding, PartitionSpec

_GRID = "grid"
# How the partitioned programs of this process were compiled (Plan.record).
compiled = collections.Counter()
# This process's rank and the number of processes of the MPI job
# (distributed.initialize sets them: the layer above registers itself).
_processes = (0, 1)


def set_processes(rank, size):
    global _processes
    _processes = (rank, size)


_mpi_loaded = [False]


def _load_mpi_symbols():
    """The compiled program calls MPI_Allreduce & co. by name: the MPI
    library mpi4py loaded (privately, as Python loads extension modules and
    what they link) is opened again with RTLD_GLOBAL so that the JIT's
    lookup in the process finds them."""
    if _mpi_loaded[0]:
        return
    from mpi4py import MPI  # noqa: F401  (loads and initializes MPI)

    path = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            m = re.search(r"(/\S*/lib(?:mpich|mpi)\.so[.\d]*)$", line.strip())
            if m:
                path = m.group(1)
                break
    ctypes.CDLL(path or "libmpich.so.12", mode=ctypes.RTLD_GLOBAL)
    _mpi_loaded[0] = True


class Plan:
    """How one call is partitioned: the mesh (its grid), each argument's
    split axes (per dimension, mesh axis indices) and this process's
    position in the grid."""

    threads = False

    def __init__(self, mesh, splits, rank, size):
        self.mesh, self.splits, self.rank, self.size = mesh, splits, rank, size
        self.coords = np.unravel_index(rank, mesh.devices.shape)
        self.key = ("spmd", tuple(mesh.devices.shape), splits, rank, size)

    def local_aval(self, aval, split):
        shape = list(aval.shape)
        for d, axes in enumerate(split):
            for a in axes:
                shape[d] //= self.mesh.devices.shape[a]
        return aval.update(shape=tuple(shape))

    def local_avals(self, avals):
        return [self.local_aval(a, s) for a, s in zip(avals, self.splits)]

    def block_index(self, shape, split, coords=None):
        """The index of this process's block of a global array of `shape`,
        or of the block of the device at mesh position `coords`."""
        coords = self.coords if coords is None else coords
        index = []
        for d, axes in enumerate(split):
            n, i = 1, 0
            for a in axes:
                size = self.mesh.devices.shape[a]
                n, i = n * size, i * size + int(coords[a])
            step = shape[d] // n
            index.append(slice(i * step, (i + 1) * step))
        return tuple(index)

    def block(self, value, split, coords=None):
        """This process's block of a global array (a view, no copy), or
        the block of the device at mesh position `coords`."""
        index = self.block_index(value.shape, split, coords)
        return value[index] if index else value

    def out_splits(self, out_avals):
        """How each result is split: the results of a process of an MPI job
        are whole."""
        return tuple(((),) * len(a.shape) for a in out_avals)

    def blocks(self, values, coords=None):
        return [np.ascontiguousarray(self.block(v, s, coords)) if any(s) else v
                for v, s in zip(values, self.splits)]

    def annotate(self, module, out_splits=()):
        """The traced module as this process's: the grid, the arguments'
        splits (and the results', `out_splits`), the rank and the number
        of processes."""
        from .._mlir import ir
        from .compiler import context

        with context(), ir.Location.unknown():
            func = module.body.operations[0]
            shape = "x".join(str(s) for s in self.mesh.devices.shape)
            grid = ir.Operation.parse(f"shard.grid @{_GRID}(shape = {shape})")
            module.body.append(grid)
            _set_split_axes(func, "arg_attrs", self.splits)
            if any(any(split) for split in out_splits):
                _set_split_axes(func, "res_attrs", out_splits)
            rank = "" if self.rank is None else \
                f'"MPI:comm_world-rank" = {self.rank} : i32, '
            module.operation.attributes["dlti.map"] = ir.Attribute.parse(
                f'#dlti.map<"MPI:Implementation" = "MPICH", {rank}'
                f'"MPI:comm_world-size" = {self.size} : i32>')
            if self.threads:
                module.operation.attributes["ember.device_threads"] = ir.UnitAttr.get()


    @staticmethod
    def record(module):
        """Counts in `compiled` how ember-partition compiled `module`
        (lowered in place), and returns it: "spmd" (partitioned by MLIR) or
        "gathered" (on whole arrays); "cached" when it came from the
        persistent cache."""
        found = []

        def visit(op):
            if "ember.partition" in op.attributes:
                found.append(str(op.attributes["ember.partition"]).strip('"'))
                return ir.WalkResult.INTERRUPT
            return ir.WalkResult.ADVANCE

        from .._mlir import ir
        from .compiler import context

        with context():
            module.operation.walk(visit)
        kind = found[0] if found else "cached"
        compiled[kind] += 1
        return kind


def _set_split_axes(func, name, splits):
    """`ember.split_axes` of each split argument or result (`name`:
    arg_attrs or res_attrs) added to the function's attributes there."""
    from .._mlir import ir

    old = func.attributes[name] if name in func.attributes else None
    attrs = []
    for k, split in enumerate(splits):
        entries = {}
        if old is not None:
            d = ir.DictAttr(old[k])
            entries = {d[i].name: d[i].attr for i in range(len(d))}
        if any(split):
            entries["ember.split_axes"] = ir.Attribute.parse(
                "[" + ", ".join("[" + ", ".join(str(a) for a in axes) + "]"
                                for axes in split) + "]")
        attrs.append(ir.DictAttr.get(entries))
    func.attributes[name] = ir.ArrayAttr.get(attrs)


class ThreadsPlan(Plan):
    """A call partitioned over the CPU devices of this process: one program
    (the rank read at run time) that each device runs on a thread of its
    own, on its blocks (`Kernel.call_on_devices`)."""

    threads = True

    def __init__(self, mesh, splits):
        super().__init__(mesh, splits, 0, mesh.size)
        self.rank = None
        self.key = ("threads", tuple(mesh.devices.shape), splits)

    def device_blocks(self, values):
        """Each device's blocks of `values`, in rank (mesh position) order."""
        shape = self.mesh.devices.shape
        return [self.blocks(values, np.unravel_index(r, shape)) for r in range(self.size)]

    def out_splits(self, out_avals):
        """Results split over this mesh stay each device's block (no
        gather); the others are whole on every device."""
        splits = []
        for a in out_avals:
            s, split = a.sharding, None
            if isinstance(s, NamedSharding) and s.mesh == self.mesh and \
                    isinstance(s.spec, PartitionSpec) and not (s.spec.unreduced or s.spec.reduced):
                split = _split_axes(s.spec, self.mesh, len(a.shape))
            if split is not None and all(
                    a.shape[d] % int(np.prod([self.mesh.devices.shape[i] for i in axes])) == 0
                    for d, axes in enumerate(split)):
                splits.append(split)
            else:
                splits.append(((),) * len(a.shape))
        return tuple(splits)

    def shared_results(self, out_splits, out_avals):
        """For each result split along its first dimension only (each
        device's block contiguous in the whole array), the whole array's
        bytes and each device's byte offset in it: the devices write their
        blocks there (`Executable.call_on_devices`); None for the others."""
        shared = []
        mesh_shape = self.mesh.devices.shape
        for split, aval in zip(out_splits, out_avals):
            if not split or not split[0] or any(split[1:]):
                shared.append(None)
                continue
            row = int(np.prod(aval.shape[1:], dtype=np.int64)) * np.dtype(aval.dtype).itemsize
            offsets = [self.block_index(aval.shape, split,
                                        np.unravel_index(r, mesh_shape))[0].start * row
                       for r in range(self.size)]
            shared.append((row * aval.shape[0], offsets))
        return shared

    def assemble(self, per_device, out_splits, out_avals, shared=None):
        """The whole results from each device's (blocks of split results;
        `shared` ones are whole already)."""
        outs = []
        mesh_shape = self.mesh.devices.shape
        for i, (split, aval) in enumerate(zip(out_splits, out_avals)):
            if not any(split) or (shared and shared[i] is not None):
                outs.append(per_device[0][i])
                continue
            whole = np.empty(aval.shape, per_device[0][i].dtype)
            for r, results in enumerate(per_device):
                index = self.block_index(aval.shape, split, np.unravel_index(r, mesh_shape))
                whole[index] = results[i]
            whole.flags.writeable = False
            outs.append(whole)
        return outs


def _split_axes(spec, mesh, rank):
    axes = []
    for d in range(rank):
        p = spec[d] if d < len(spec) else None
        if p is None:
            axes.append(())
        elif isinstance(p, str):
            axes.append((mesh.axis_names.index(p),))
        elif isinstance(p, tuple):
            axes.append(tuple(mesh.axis_names.index(q) for q in p))
        else:  # (UNCONSTRAINED)
            return None
    return tuple(axes)


def plan_for(avals):
    """The partitioning of a call on arguments of `avals` in this process,
    or None where the call is not one (no argument split over a mesh of all
    the processes; a mesh whose devices are not one per process in rank
    order; shardings on several meshes; unreduced or reduced specs;
    `config.ember_mpi_partition` off). In a single process: the
    `ThreadsPlan` over its CPU devices, if any."""
    rank, size = _processes
    if size == 1:
        return _threads_plan_for(avals)
    if not _config.config.ember_mpi_partition:
        return None
    found = _mesh_and_splits(avals)
    if found is None:
        return None
    mesh, splits = found
    # (One mesh axis: ember-shard-to-mpi then runs every collective on
    # MPI_COMM_WORLD. Over an axis of a larger mesh, convert-shard-to-mpi
    # splits a communicator on every call and never frees it, and
    # ember-partition computes whole arrays anyway: upstream reshards on
    # one-dimensional grids only.)
    if mesh.size != size or mesh.devices.ndim != 1:
        return None
    if [d.process_index for d in mesh.devices.flat] != list(range(size)):
        return None
    _load_mpi_symbols()
    return Plan(mesh, splits, rank, size)


def _threads_plan_for(avals):
    """The partitioning of a call on arrays split over a mesh of this
    process's CPU devices (`ThreadsPlan`), or None."""
    if not _config.config.ember_device_threads:
        return None
    found = _mesh_and_splits(avals)
    if found is None:
        return None
    mesh, splits = found
    # (Meshes of several axes too: the communicators the collectives split
    # off the world are found again by their members for the whole call.
    # Programs upstream cannot partition there, those resharding values,
    # keep the one program.)
    if mesh.size < 2:
        return None
    if any(d.platform != "cpu" or d.process_index != 0 for d in mesh.devices.flat):
        return None
    return ThreadsPlan(mesh, splits)


def _mesh_and_splits(avals):
    """The one mesh the arguments are split over and each argument's split
    axes, or None (no argument split; several meshes; unreduced or reduced
    specs; unconstrained dimensions; sizes the mesh does not divide)."""
    mesh, splits = None, []
    for a in avals:
        s = a.sharding
        if s is None:
            splits.append(((),) * len(a.shape))
            continue
        if not isinstance(s, NamedSharding) or not isinstance(s.spec, PartitionSpec):
            return None
        if mesh is None:
            mesh = s.mesh
        elif s.mesh != mesh:
            return None
        if s.spec.unreduced or s.spec.reduced:
            return None
        split = _split_axes(s.spec, mesh, len(a.shape))
        if split is None:
            return None
        for d, axes in enumerate(split):
            n = int(np.prod([mesh.devices.shape[i] for i in axes])) if axes else 1
            if a.shape[d] % n:
                return None
        splits.append(split)
    if mesh is None or not any(any(s) for s in splits):
        return None
    return mesh, tuple(splits)
