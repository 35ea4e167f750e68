"""Multi-process runs over MPI (`ember.distributed`,
`ember.experimental.multihost_utils`).

`initialize()` under `mpirun` (MPICH's PMI_RANK/PMI_SIZE, Open MPI's
OMPI_COMM_WORLD_RANK/SIZE) makes every process's devices part of
`ember.devices()`: process p owns the EMBER_NUM_CPU_DEVICES devices (one by
default) with ids p*L .. p*L+L-1. A mesh whose first axis is split over the
processes (each process's devices a contiguous block of it) can be used by
`shard_map`: each process computes its own lanes of that axis (a named vmap
over its L lanes), and a collective over the axis is the local collective
followed by the MPI collective across the processes (mpi4py on
MPI_COMM_WORLD), run from the compiled program through a host callback.
Every process passes the same global arguments and gets the whole global
result (gathered with MPI_Allgather).

The MPI calls are host callbacks that read and write the compiled code's
buffers in place (`callback.in_place_callback`), with vmap_method
"sequential": where a value is batched over this process's lanes each lane
makes its own call, in the same order in every process.

Reverse mode: the MPI parts are custom_vjp functions whose backward passes
are MPI collectives again (an allreduce transposes to an allreduce under
vmap semantics and to the identity for an invariant psum; the cross-process
pvary transposes to an allreduce; a gather to a reduce and a slice).
"""

import os

import numpy as np

from . import compiler, core, parallel, spmd, tree_util
from . import devices as devices_lib
from .ad import custom_vjp
from .callback import in_place_callback
from .core import as_value


class _State:
    comm = None
    rank = 0
    size = 1


_state = _State()


def _launch_env():
    for rank, size in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                       ("PMIX_RANK", "PMIX_SIZE")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    return None


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None, **kwargs):
    """Joins the MPI job this process was started in (`mpirun -n N python
    ...`). The coordinator arguments are accepted for JAX compatibility:
    MPI finds the other processes itself."""
    if _state.comm is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    found = _launch_env()
    if found is None:
        raise RuntimeError("ember.distributed.initialize: this process was not started by an "
                           "MPI launcher (run it with `mpirun -n <processes> python ...`)")
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("ember.distributed needs mpi4py (make test installs it; "
                           f"`pip install mpi4py` against MPICH): {e}") from None
    comm = MPI.COMM_WORLD
    if (comm.Get_rank(), comm.Get_size()) != found:
        raise RuntimeError(f"MPI reports rank {comm.Get_rank()} of {comm.Get_size()}, the "
                           f"launcher {found[0]} of {found[1]}")
    if num_processes is not None and num_processes != comm.Get_size():
        raise ValueError(f"num_processes={num_processes}, but MPI has {comm.Get_size()}")
    if process_id is not None and process_id != comm.Get_rank():
        raise ValueError(f"process_id={process_id}, but MPI says {comm.Get_rank()}")
    _state.comm, _state.rank, _state.size = comm, comm.Get_rank(), comm.Get_size()
    # The processes on this host share its cores: OpenBLAS and the runtime's
    # pool would start a thread per core in each of them (measured: 8x
    # slower steps with 2 processes on 2 cores).
    on_host = int(os.environ.get("MPI_LOCALNRANKS", os.environ.get(
        "OMPI_COMM_WORLD_LOCAL_SIZE", _state.size)))
    compiler.set_threads(max(1, (os.cpu_count() or 1) // max(1, on_host)))
    devices_lib.set_processes(_state.rank, _state.size)
    spmd.set_processes(_state.rank, _state.size)
    parallel.cross_process = _CrossProcess()


def is_initialized():
    return _state.comm is not None


def shutdown():
    """Leaves the job (MPI itself is finalized at exit by mpi4py)."""
    if _state.comm is not None:
        _state.comm.Barrier()
    _state.comm = None
    parallel.cross_process = None
    devices_lib.set_processes(0, 1)
    spmd.set_processes(0, 1)


def _mpi_op(kind):
    from mpi4py import MPI

    return {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[kind]


def _contiguous(x):
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one.)
    return np.require(np.asarray(x), requirements="C")


def _allreduce_np(x, kind):
    x = _contiguous(x)
    out = np.empty_like(x)
    _state.comm.Allreduce(x, out, op=_mpi_op(kind))
    return out


def _allgather_np(x, axis):
    """The processes' `x` concatenated along `axis` (process order)."""
    x = _contiguous(x)
    out = np.empty((_state.size,) + x.shape, x.dtype)
    _state.comm.Allgather(x, out)
    return np.concatenate(list(out), axis=axis)


def _aval_of(x):
    return core.ShapedArray(x.shape, x.dtype)


def _mpi_call(fun, out_aval, x, name):
    """`fun(argument view, result view)` run from the compiled program."""
    return in_place_callback(lambda ins, outs: fun(ins[0], outs[0]), [out_aval], [x],
                             name)[0]


def _allreduce_into(kind):
    def run(x, out):
        _state.comm.Allreduce(_contiguous(x), out, op=_mpi_op(kind))
    return run


def _allgather_into(axis):
    def run(x, out):
        if axis == 0:
            _state.comm.Allgather(_contiguous(x), out)
        else:
            out[...] = _allgather_np(x, axis)
    return run


class _CrossProcess:
    """The MPI halves of the collectives over the process-split axis (the
    hook `parallel.cross_process`)."""

    @property
    def rank(self):
        return _state.rank

    @property
    def size(self):
        return _state.size

    def allreduce(self, x, kind, invariant):
        x = as_value(x)
        if kind != "sum":
            return _mpi_call(_allreduce_into(kind), _aval_of(x), x, "MPI_Allreduce")
        return (_psum_invariant if invariant else _psum_vmap)(x)

    def pvary(self, x):
        return _pvary(as_value(x))

    def allgather(self, x, axis):
        return _gather(as_value(x), axis)

    def gather_outputs(self, x):
        return gather_outputs(x)

    def own_lanes(self, x, lanes):
        return own_lanes(x, lanes)

    def ppermute(self, rows, pairs, lanes):
        return _ppermute_rows(as_value(rows), tuple(pairs), lanes)

    def all_to_all(self, blocks, lanes):
        return _all_to_all_rows(as_value(blocks), lanes)

    def reduce_scatter(self, x, lanes):
        return _reduce_scatter_rows(as_value(x), lanes)


def _allreduce(x):
    return _mpi_call(_allreduce_into("sum"), _aval_of(x), x, "MPI_Allreduce")


@custom_vjp
def _psum_vmap(x):
    return _allreduce(x)


_psum_vmap.defvjp(lambda x: (_allreduce(x), None), lambda _, ct: (_allreduce(ct),))


@custom_vjp
def _psum_invariant(x):
    return _allreduce(x)


_psum_invariant.defvjp(lambda x: (_allreduce(x), None), lambda _, ct: (ct,))


@custom_vjp
def _pvary(x):
    return x


_pvary.defvjp(lambda x: (x, None), lambda _, ct: (_allreduce(ct),))


def _gather(x, axis):
    """Concatenation of the processes' `x` along `axis`; its transpose sums
    the cotangents over the processes and keeps this process's block."""

    shape = list(x.shape)
    shape[axis] *= _state.size
    out_aval = core.ShapedArray(tuple(shape), x.dtype)

    def gather(v):
        return _mpi_call(_allgather_into(axis), out_aval, v, "MPI_Allgather")

    def scatter(ct):
        def bwd(c, out):
            block = x.shape[axis]
            total = _allreduce_np(c, "sum")
            index = [slice(None)] * c.ndim
            index[axis] = slice(_state.rank * block, (_state.rank + 1) * block)
            out[...] = total[tuple(index)]
        return _mpi_call(bwd, _aval_of(x), ct, "MPI_Allreduce")

    f = custom_vjp(gather)
    f.defvjp(lambda v: (gather(v), None), lambda _, ct: (scatter(ct),))
    return f(x)


def gather_outputs(x):
    """The processes' lanes of a shard_map result ([local lanes, ...])
    concatenated into all lanes; the transpose keeps this process's block
    of the (identical) cotangent."""
    x = as_value(x)
    shape = (x.shape[0] * _state.size,) + x.shape[1:]
    out_aval = core.ShapedArray(shape, x.dtype)

    def gather(v):
        return _mpi_call(_allgather_into(0), out_aval, v, "MPI_Allgather")

    def own(ct):
        n = x.shape[0]
        return ct[_state.rank * n:(_state.rank + 1) * n]

    f = custom_vjp(gather)
    f.defvjp(lambda v: (gather(v), None), lambda _, ct: (own(ct),))
    return f(x)


def own_lanes(x, lanes):
    """This process's `lanes` rows of a shard_map argument ([all lanes, ...]);
    the transpose gathers every process's rows of the cotangent, so that each
    process gets the gradient of the whole (global) argument."""
    x = as_value(x)

    def take(v):
        return v[_state.rank * lanes:(_state.rank + 1) * lanes]

    def gather(ct):
        return _mpi_call(_allgather_into(0), _aval_of(x), ct, "MPI_Allgather")

    f = custom_vjp(take)
    f.defvjp(lambda v: (take(v), None), lambda _, ct: (gather(ct),))
    return f(x)


# --------------------------------------------------------------------------
# Point-to-point and personalized exchanges between the processes' lanes.
# Each takes this process's `lanes` lanes stacked ([lanes, ...], the same on
# every lane) and gives the stacked rows of its lanes, moving over MPI only
# what another process needs.
# --------------------------------------------------------------------------


def _send_rows(x, out, pairs, lanes):
    """out[d] = x[s] for each (s, d) of `pairs` (global lane indices) that
    concerns this process; the other rows of `out` are zero."""
    from mpi4py import MPI

    x = _contiguous(x)
    rank, requests, staged = _state.rank, [], []
    reached = {d % lanes for _, d in pairs if d // lanes == rank}
    for d in range(lanes):
        if d not in reached:
            out[d] = 0
    for s, d in pairs:
        ps, pd = s // lanes, d // lanes
        if ps == rank and pd == rank:
            out[d % lanes] = x[s % lanes]
        elif ps == rank:
            requests.append(_state.comm.Isend(x[s % lanes], dest=pd, tag=d))
        elif pd == rank:
            row = out[d % lanes]
            if not row.flags.c_contiguous:
                row = np.empty_like(row)
                staged.append((d % lanes, row))
            requests.append(_state.comm.Irecv(row, source=ps, tag=d))
    MPI.Request.Waitall(requests)
    for i, row in staged:
        out[i] = row


def _ppermute_rows(rows, pairs, lanes):
    """Lane d's row is lane s's for (s, d) in `pairs`, zeros for lanes no
    pair reaches; only the rows that change process cross MPI (Isend/Irecv).
    The transpose is the exchange along the inverted pairs."""
    inverse = tuple((d, s) for s, d in pairs)

    def exchange(v, along):
        return _mpi_call(lambda x, out: _send_rows(x, out, along, lanes), _aval_of(v), v,
                         "MPI_Isend/Irecv")

    f = custom_vjp(lambda v: exchange(v, pairs))
    f.defvjp(lambda v: (exchange(v, pairs), None), lambda _, ct: (exchange(ct, inverse),))
    return f(rows)


def _transpose_blocks(x, out, lanes):
    """x: [lanes, senders' receivers (all lanes), ...] -> out: [lanes,
    senders (all lanes), ...] with out[j, i] = (lane i's x)[j]: one
    MPI_Alltoall of lanes * lanes blocks per pair of processes."""
    procs = _state.size
    x = _contiguous(x)
    block = x.shape[2:]
    send = np.ascontiguousarray(
        x.reshape((lanes, procs, lanes) + block).swapaxes(0, 1))  # [q, i, j, ...]
    recv = np.empty_like(send)  # [p, i, j, ...]: process p's lanes i to our lanes j
    _state.comm.Alltoall(send, recv)
    out[...] = np.moveaxis(recv, 2, 0).reshape(out.shape)


def _all_to_all_rows(blocks, lanes):
    """[lanes, all lanes, ...] -> [lanes, all lanes, ...], the block matrix
    over all lanes transposed (so the exchange is its own transpose)."""

    def exchange(v):
        return _mpi_call(lambda x, out: _transpose_blocks(x, out, lanes), _aval_of(v), v,
                         "MPI_Alltoall")

    f = custom_vjp(exchange)
    f.defvjp(lambda v: (exchange(v), None), lambda _, ct: (exchange(ct),))
    return f(blocks)


def _reduce_scatter_into(x, out):
    _state.comm.Reduce_scatter_block(_contiguous(x), out, op=_mpi_op("sum"))


def _reduce_scatter_rows(x, lanes):
    """x: [all lanes' blocks, ...] (this process's partial sums) -> the
    processes' sums of this process's rows ([lanes' blocks, ...]) by
    MPI_Reduce_scatter_block; the transpose gathers the rows (Allgather)."""
    rows = x.shape[0] // _state.size
    out_aval = core.ShapedArray((rows,) + x.shape[1:], x.dtype)

    def scatter(v):
        return _mpi_call(_reduce_scatter_into, out_aval, v, "MPI_Reduce_scatter_block")

    def gather(ct):
        return _mpi_call(_allgather_into(0), _aval_of(x), ct, "MPI_Allgather")

    f = custom_vjp(scatter)
    f.defvjp(lambda v: (scatter(v), None), lambda _, ct: (gather(ct),))
    return f(x)


# --------------------------------------------------------------------------
# multihost_utils
# --------------------------------------------------------------------------


def _require():
    """Whether there are other processes (else the utilities are local)."""
    return _state.comm is not None


def process_allgather(in_tree, tiled=False):
    """Every process's value of each leaf, stacked on a new leading axis
    (concatenated along axis 0 with `tiled`)."""
    def one(x):
        x = np.asarray(x)
        if not _require():
            return x if tiled else x[None]
        out = np.empty((_state.size,) + x.shape, x.dtype)
        _state.comm.Allgather(_contiguous(x), out)
        return out.reshape((-1,) + x.shape[1:]) if tiled else out
    return tree_util.tree_map(one, in_tree)


def sync_global_devices(name):
    """A barrier across the processes (`name` is checked to be the same)."""
    if not _require():
        return
    names = _state.comm.allgather(name)
    if any(n != name for n in names):
        raise AssertionError(f"sync_global_devices name mismatch: {names}")
    _state.comm.Barrier()


def broadcast_one_to_all(in_tree, is_source=None):
    """Process 0's value of each leaf (or the one process with is_source)."""
    if not _require():
        return tree_util.tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = _state.rank == 0
    sources = _state.comm.allgather(bool(is_source))
    if sum(sources) != 1:
        raise ValueError("broadcast_one_to_all needs exactly one source process")
    root = sources.index(True)

    def one(x):
        x = _contiguous(x).copy()
        _state.comm.Bcast(x, root=root)
        return x
    return tree_util.tree_map(one, in_tree)
