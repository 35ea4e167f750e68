"""Colocated Python (`ember.experimental.colocated_python`): a Python
function that runs in the processes owning the devices of its arguments.

In one process every device is local, so the function simply runs. Across
MPI processes (`distributed.initialize`), an argument sharded over the
processes' devices along its first dimension is seen by each owning process
as its own block (the shards on its devices), the function runs there on
that block, and the blocks of its results are gathered in process order
into the global result (so results keep the argument's layout). When the
arguments' devices all belong to one process, the function runs only
there and the other processes receive its results. `specialize(devices=)`
says where a function without array arguments runs; `out_specs_fn` (JAX's
way to give result types without running) is accepted and its result's
shapes are checked against what the function returns.
"""

import functools

import numpy as np

from . import core, distributed, tree_util
from . import devices as devices_lib
from .mesh import NamedSharding


def _owners(leaves, devices):
    """The process indices owning the devices of the arguments (or of
    `devices`)."""
    if devices is not None:
        return sorted({d.process_index for d in devices})
    owners = set()
    for x in leaves:
        if isinstance(x, core.Array):
            owners |= {d.process_index for d in x.sharding.device_set}
    return sorted(owners) or [devices_lib.process_index()]


def _local_block(x, rank, nprocs):
    """This process's block of `x` when `x` is split over the processes
    along its first dimension; `x` itself otherwise."""
    s = x.aval.sharding if isinstance(x, core.Array) else None
    if not isinstance(s, NamedSharding) or nprocs == 1:
        return x, False
    first = s.spec.axes(0)
    owners = {d.process_index for d in s.device_set}
    if len(owners) == 1 or not first or s.mesh.axis_names[0] != first[0]:
        return x, False
    n = x.shape[0] // nprocs
    return core.Array(np.asarray(x)[rank * n:(rank + 1) * n], x.weak_type), True


class _Colocated:
    def __init__(self, fun, devices=None, out_specs_fn=None):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.devices = devices
        self.out_specs_fn = out_specs_fn

    def specialize(self, devices=None, out_specs_fn=None, in_specs=None):
        return _Colocated(self.fun, devices if devices is not None else self.devices,
                          out_specs_fn if out_specs_fn is not None else self.out_specs_fn)

    def __call__(self, *args, **kwargs):
        if core._trace_stack:
            raise TypeError("colocated_python functions run on concrete arrays: call them "
                            "outside jit and other transformations")
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        rank, nprocs = devices_lib.process_index(), devices_lib.process_count()
        owners = _owners(leaves, self.devices)
        split = False
        local = []
        for x in leaves:
            y, s = _local_block(x, rank, nprocs)
            split |= s
            local.append(y)
        if nprocs == 1:
            return self._check(self.fun(*args, **kwargs), args, kwargs)
        # Every process makes the call (one program in each): the owners
        # run the function.
        comm = distributed._state.comm
        if split:  # every process runs on its block; blocks are gathered
            a, k = tree_util.tree_unflatten(tree, local)
            out = self.fun(*a, **k)

            def gather(v):
                arr = np.asarray(v)
                parts = comm.allgather(arr)
                return core.Array(np.concatenate(parts, axis=0) if arr.ndim else parts[0])
            out = tree_util.tree_map(gather, out)
            return self._check(out, args, kwargs)
        root = owners[0]  # the owning process runs it; the others get its results
        out = self.fun(*args, **kwargs) if rank == root else None
        out = comm.bcast(tree_util.tree_map(np.asarray, out) if rank == root else None,
                         root=root)
        return self._check(tree_util.tree_map(core.Array, out), args, kwargs)

    def _check(self, out, args, kwargs):
        if self.out_specs_fn is None:
            return out
        specs = self.out_specs_fn(*[tree_util.tree_map(
            lambda x: core.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype), a)
            for a in args])
        got = [(tuple(np.shape(o)), np.asarray(o).dtype) for o in tree_util.tree_leaves(out)]
        want = [(tuple(s.shape), np.dtype(s.dtype)) for s in tree_util.tree_leaves(specs)]
        if got != want:
            raise ValueError(f"colocated_python: the function returned {got}, but out_specs_fn "
                             f"says {want}")
        return out


def colocated_python(fun):
    return _Colocated(fun)


def colocated_python_class(cls):
    """A class whose instances are made, and whose methods run, colocated
    with the arrays the methods are given (each process holds an instance)."""

    class Colocated(cls):
        pass

    for name, member in list(vars(cls).items()):
        if callable(member) and not name.startswith("__"):
            setattr(Colocated, name, _method(member))
    Colocated.__name__ = cls.__name__
    Colocated.__qualname__ = cls.__qualname__
    return Colocated


def _method(fn):
    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        return _Colocated(lambda *a, **k: fn(self, *a, **k))(*args, **kwargs)
    return call


def colocated_cpu_devices(devices):
    """JAX's `colocated_cpu_devices`: the CPU devices of the hosts of
    `devices`, one per device (a CPU device is its own; an accelerator's is
    the CPU device of its process)."""
    out = []
    for d in devices:
        if d.platform == "cpu":
            out.append(d)
            continue
        cpus = [c for c in devices_lib.devices("cpu") if c.process_index == d.process_index]
        if not cpus:
            raise ValueError(f"no CPU device in the process of {d}")
        out.append(cpus[0])
    return out
