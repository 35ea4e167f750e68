"""The TPU-flavoured Pallas API (`jax.experimental.pallas.tpu`): memory
spaces, compiler parameters, scalar prefetch, DMAs and semaphores,
`emit_pipeline`. Kernels run on the CPU in the traced interpreter (DMAs
complete when started: grid steps run one at a time), in the checked one
(`InterpretParams`, tpu_interpret.py), and lower for TPU (tpu_kernel.py)."""

import contextlib
import copy
import enum
import itertools
import math

import numpy as np

from ..._mlir import ir
from .. import control_flow, core, lax, state
from ..numpy import lax_numpy as jnp
from . import core as pl_core
from . import lanes, prng_state, tpu_interpret, tpu_kernel
from .pipeline_mode import Buffered
from .tpu_interpret import InterpretError as InterpretError
from .tpu_interpret import InterpretParams as InterpretParams

ANY = pl_core.ANY
VMEM = pl_core.MemorySpace("VMEM")
SMEM = pl_core.MemorySpace("SMEM")
HBM = pl_core.MemorySpace("HBM")
SEMAPHORE = pl_core.MemorySpace("SEMAPHORE")

PARALLEL = "parallel"
ARBITRARY = "arbitrary"
CORE_PARALLEL = "core_parallel"


class GridDimensionSemantics:
    PARALLEL = PARALLEL
    ARBITRARY = ARBITRARY
    CORE_PARALLEL = CORE_PARALLEL


class CompilerParams(pl_core.CompilerParams):
    """Mosaic TPU's parameters (`dimension_semantics`, `vmem_limit_bytes`,
    ...); accepted, unused on the CPU."""


class _Semaphore:
    """`pltpu.SemaphoreType.DMA` and friends: one semaphore as a scratch
    buffer, or an array of them when called with a shape."""

    shape, dtype, memory_space = (), np.dtype(np.int32), SEMAPHORE

    def __init__(self, name):
        self.name = name
        self.semaphore_kind = name

    def __call__(self, shape=()):
        ref = pl_core.MemoryRef(shape, np.int32, SEMAPHORE)
        ref.semaphore_kind = self.name
        return ref

    def __repr__(self):
        return f"SemaphoreType.{self.name}"


class SemaphoreType:
    DMA = _Semaphore("DMA")
    REGULAR = _Semaphore("REGULAR")
    BARRIER = _Semaphore("BARRIER")


class PrefetchScalarGridSpec(pl_core.GridSpec):
    """A grid spec whose first `num_scalar_prefetch` operands are passed to
    every index map (after the program ids) and to the kernel first."""

    def __init__(self, num_scalar_prefetch, grid=(), in_specs=pl_core.no_block_spec,
                 out_specs=pl_core.no_block_spec, scratch_shapes=()):
        super().__init__(grid, in_specs, out_specs, scratch_shapes)
        self.num_scalar_prefetch = int(num_scalar_prefetch)


class AsyncCopyDescriptor:
    def __init__(self, src, dst, add=False, sem=None):
        self.src, self.dst, self.add, self.sem = src, dst, add, sem

    def start(self, priority=0):
        if (checker := tpu_interpret.active()) is not None:
            return checker.start(self)
        if tpu_kernel.tracing():
            # Traced for the TPU target: the copy as a DMA (tpu_kernel.py).
            return tpu_kernel.dma(self, "start")
        v = state.load(self.src, ())
        if self.add:
            v = state.load(self.dst, ()) + v
        state.store(self.dst, (), v)

    def wait(self):
        """The copy completed when it started (on the CPU)."""
        if (checker := tpu_interpret.active()) is not None:
            return checker.wait(self)
        if tpu_kernel.tracing():
            tpu_kernel.dma(self, "wait")

    def wait_send(self):
        """The copy completed when it started."""

    def wait_recv(self):
        """The copy completed when it started."""


def make_async_copy(src_ref, dst_ref, sem):
    return AsyncCopyDescriptor(src_ref, dst_ref, sem=sem)


def async_copy(src_ref, dst_ref, sem, *, priority=0, add=False):
    desc = AsyncCopyDescriptor(src_ref, dst_ref, add, sem)
    desc.start(priority)
    return desc


def sync_copy(src_ref, dst_ref, *, add=False):
    """JAX's `pltpu.sync_copy`: copies `src_ref` into `dst_ref` (pytrees of
    refs) and waits. In a kernel traced for the TPU target, DMAs on a
    scoped DMA semaphore, all started, then all waited for (as JAX writes
    it)."""
    from .. import tree_util

    srcs, dsts = tree_util.tree_leaves(src_ref), tree_util.tree_leaves(dst_ref)
    if len(srcs) != len(dsts):
        raise ValueError(f"sync_copy: {len(srcs)} source refs for {len(dsts)} destinations "
                         f"(at {core.where()})")
    if not tpu_kernel.tracing():
        for s, d in zip(srcs, dsts):
            async_copy(s, d, None, add=add)
        return

    def body(sem):
        copies = [AsyncCopyDescriptor(s, d, add, sem) for s, d in zip(srcs, dsts)]
        for c in copies:
            c.start()
        for c in copies:
            c.wait()

    pl_core.run_scoped(body, SemaphoreType.DMA(()))


class DeviceIdType:
    """How `device_id` names a device: mesh coordinates or a logical id."""

    MESH = "mesh"
    LOGICAL = "logical"


def _remote(device_id, what):
    """(axis name, this device's index, the target's index) of a remote
    operation: inside `shard_map` over one mesh axis (the devices are lanes
    of one program on the CPU), or, with `device_id` a dict naming one axis
    (`{'core': c}`: the other coordinates held), along that axis (the cores
    of a `pl.core_map` are lanes too)."""
    from .. import parallel

    if isinstance(device_id, dict):
        if len(device_id) != 1:
            raise NotImplementedError(
                f"pltpu.{what}: a device_id dict naming {len(device_id)} mesh axes (one is "
                f"supported; at {core.where()})")
        (axis, target), = device_id.items()
        if not parallel.is_bound(axis):
            raise NameError(f"pltpu.{what}: device_id names the axis {axis!r}, which is not "
                            f"a mesh axis here (at {core.where()})")
        return axis, parallel.axis_index(axis), jnp.asarray(target, np.int32)
    frames = [f for f in parallel._env.frames if f[0] not in _core_axes]
    if len(frames) != 1:
        raise NotImplementedError(
            f"pltpu.{what} with device_id needs the kernel inside shard_map over exactly one "
            f"mesh axis (at {core.where()})")
    axis = frames[0][0]
    if isinstance(device_id, (tuple, list)):
        if len(device_id) != 1:
            raise ValueError(f"pltpu.{what}: device_id {device_id!r} must have one coordinate "
                             f"per mesh axis (at {core.where()})")
        device_id = device_id[0]
    return axis, parallel.axis_index(axis), jnp.asarray(device_id, np.int32)


def _deliver(axis, me, target, value):
    """Per device: the sum of the values sent to it (`value` is sent to
    `target`), and whether any was. A device inside a `pl.when` that does
    not hold for it sends nothing (`state.masked`)."""
    from .. import parallel

    if (mask := state.lane_mask()) is not None:
        target = jnp.where(mask, target, jnp.asarray(-1, np.int32))
    targets = parallel.all_gather(target, axis)
    values = parallel.all_gather(value, axis)
    hit = targets == me
    mask = jnp.reshape(hit, hit.shape + (1,) * (values.ndim - 1))
    return jnp.sum(jnp.where(mask, values, jnp.zeros_like(values)), axis=0), jnp.any(hit)


class AsyncRemoteCopyDescriptor:
    """`make_async_remote_copy`: `src` on this device into `dst` on device
    `device_id`. In the traced interpreter (devices are lanes of one
    program under shard_map) every device's copy lands when they start;
    the checked interpreter runs it asynchronously (tpu_interpret.py)."""

    def __init__(self, src, dst, send_sem, recv_sem, device_id, device_id_type):
        self.src, self.dst, self.device_id = src, dst, device_id
        self.send_sem, self.recv_sem = send_sem, recv_sem
        self.device_id_type = device_id_type
        # (As tpu_kernel.dma reads a descriptor: the receiving semaphore.)
        self.sem, self.add = recv_sem, False

    def start(self, priority=0):
        if (checker := tpu_interpret.active()) is not None:
            return checker.start(self, checker.target(self.device_id, "make_async_remote_copy"),
                                 self.send_sem)
        if tpu_kernel.tracing():
            # Lowered for TPU: an enqueue_dma to the target device.
            self.target = tpu_kernel.device_index(self.device_id, self.device_id_type)
            return tpu_kernel.dma(self, "start")
        axis, me, target = _remote(self.device_id, "make_async_remote_copy")
        incoming, any_in = _deliver(axis, me, target, state.load(self.src, ()))
        old = state.load(self.dst, ())
        with state.unmasked():  # (what was sent here lands here)
            state.store(self.dst, (), jnp.where(any_in, incoming.astype(old.dtype), old))

    def wait(self):
        """Waits for the send, then the receive (landed when started on
        the CPU)."""
        self.wait_send()
        self.wait_recv()

    def wait_send(self):
        """Until the source is read (landed when started on the CPU)."""
        if (checker := tpu_interpret.active()) is not None:
            return checker.wait_send(self.send_sem)
        if tpu_kernel.tracing():
            self.target = tpu_kernel.device_index(self.device_id, self.device_id_type)
            tpu_kernel.dma(self, "wait_send")

    def wait_recv(self):
        """Until the destination is written (landed when started on the
        CPU)."""
        if (checker := tpu_interpret.active()) is not None:
            return checker.wait(self)
        if tpu_kernel.tracing():
            self.target = tpu_kernel.device_index(self.device_id, self.device_id_type)
            tpu_kernel.dma(self, "wait")


def make_async_remote_copy(src_ref, dst_ref, send_sem, recv_sem, device_id,
                           device_id_type=DeviceIdType.MESH):
    return AsyncRemoteCopyDescriptor(src_ref, dst_ref, send_sem, recv_sem, device_id,
                                     device_id_type)


def async_remote_copy(src_ref, dst_ref, send_sem, recv_sem, device_id,
                      device_id_type=DeviceIdType.MESH):
    """JAX's `pltpu.async_remote_copy`: a remote copy, started."""
    desc = make_async_remote_copy(src_ref, dst_ref, send_sem, recv_sem, device_id,
                                  device_id_type)
    desc.start()
    return desc


def semaphore_signal(sem, inc=1, *, device_id=None, device_id_type=None, core_index=None):
    """Adds `inc` to a regular semaphore (of device `device_id`)."""
    if device_id is None and core_index is not None and (_core_axes or tpu_kernel.tracing()):
        # Another TensorCore of this device (a core_map's lanes).
        device_id = {_core_axis(): core_index}
    if device_id is not None and tpu_kernel.tracing():
        # Lowered for TPU: a signal of the target device's (or core's)
        # semaphore.
        return tpu_kernel.semaphore("signal", sem, inc, tpu_kernel.device_index(
            device_id, device_id_type or DeviceIdType.MESH))
    if device_id is not None and (checker := tpu_interpret.active()) is not None:
        return checker.signal(sem, inc, checker.target(device_id, "semaphore_signal"))
    if device_id is not None:
        axis, me, target = _remote(device_id, "semaphore_signal")
        inc, _ = _deliver(axis, me, target, jnp.asarray(inc, np.int32))
        with state.unmasked():
            state.store(sem, (), state.load(sem, ()) + inc)
        return
    if (checker := tpu_interpret.active()) is not None:
        return checker.signal(sem, inc)
    if tpu_kernel.tracing():
        return tpu_kernel.semaphore("signal", sem, inc)
    state.store(sem, (), state.load(sem, ()) + inc)


def get_barrier_semaphore():
    """The kernel's barrier semaphore, which devices signal each other to
    meet (the kernel needs `CompilerParams(collective_id=...)`). Lowered for
    TPU as Mosaic's `sem_barrier`; in the checked interpreter a regular
    semaphore of each device that the others signal; in the traced one
    the devices are lanes of one program, already in step, so it is a
    fresh regular semaphore."""
    if tpu_kernel.tracing():
        return tpu_kernel.barrier_semaphore()
    if (checker := tpu_interpret.active()) is not None:
        return checker.barrier_semaphore()
    return state.Ref(jnp.zeros((), np.int32))


def semaphore_wait(sem, value=1):
    """Waits until a regular semaphore holds `value`, then takes it (on the
    CPU, single device: takes it; the checked interpreter reports a wait
    that could never return)."""
    if (checker := tpu_interpret.active()) is not None:
        return checker.wait_sem(sem, value)
    if tpu_kernel.tracing():
        return tpu_kernel.semaphore("wait", sem, value)
    state.store(sem, (), state.load(sem, ()) - value)


def semaphore_read(sem):
    """The count of a regular semaphore."""
    if (checker := tpu_interpret.active()) is not None:
        return checker.read_sem(sem)
    if tpu_kernel.tracing():
        return tpu_kernel.semaphore("read", sem)
    return state.load(sem, ())


def emit_pipeline(body, *, grid, in_specs=(), out_specs=(), tiling=None, core_axis=None,
                  core_axis_name=None, dimension_semantics=None, trace_scopes=True,
                  no_pipelining=False):
    """JAX's `pltpu.emit_pipeline`: a pipeline inside a kernel. The returned
    function takes the refs (inputs, then outputs; usually in HBM) and runs
    `body(*input blocks, *output blocks, *scratches)` at every point of
    `grid` (last axis fastest) on the blocks the specs' index maps choose.

    In a kernel lowered for TPU, and in the checked interpreter, the blocks
    are VMEM buffers filled and emptied by DMAs, two per operand (`_pipelined`:
    the next input block is fetched while the body runs, an output block is
    copied out when the next step's index moves on, as JAX's pipeline does).
    In the traced interpreter the blocks are views of the refs (a race-free
    pipeline computes the same)."""
    grid = tuple(grid)
    if not all(isinstance(g, (int, np.integer)) for g in grid):
        raise NotImplementedError(
            f"pltpu.emit_pipeline: grids of run-time size are not supported (at {core.where()})")
    grid = tuple(int(g) for g in grid)
    in_specs = list(in_specs) if isinstance(in_specs, (list, tuple)) else [in_specs]
    out_specs = list(out_specs) if isinstance(out_specs, (list, tuple)) else [out_specs]
    if core_axis is not None and core_axis_name is not None:
        raise ValueError("core_axis and core_axis_name cannot both be provided.")

    def pipeline(*refs, scratches=None, allocations=None, body_prologue=None):
        # Split over the cores of `core_axis`(`_name`): each runs its part.
        axis = core_axis_name if core_axis is None else core_axis
        grid_, offsets = _partition_grid(grid, axis, dimension_semantics)
        specs = [_shifted(sp, offsets) for sp in in_specs + out_specs]
        _run_pipeline(body, grid_, specs, len(in_specs), refs, scratches, allocations,
                      body_prologue)

    return pipeline


def _partition_grid(grid, core_axis, dimension_semantics):
    """(the grid of this core, the offsets of its indices) for a pipeline
    split over the cores of `core_axis` (a grid axis of the kernel, or a
    core_map's axis name): the first PARALLEL dimension the number of
    cores divides is cut into equal parts, core c taking the c-th, as JAX
    splits it."""
    if core_axis is None:
        return grid, (0,) * len(grid)
    if isinstance(core_axis, int):
        cores, me = pl_core.num_programs(core_axis), pl_core.program_id(core_axis)
    else:
        from .. import parallel

        cores, me = parallel.axis_size(core_axis), parallel.axis_index(core_axis)
    if not isinstance(cores, (int, np.integer)):
        raise NotImplementedError(
            f"Cannot partition grid over dynamic number of cores: {core_axis=}")
    if cores == 1:
        return grid, (0,) * len(grid)
    semantics = tuple(dimension_semantics or (ARBITRARY,) * len(grid))
    if len(semantics) != len(grid):
        raise ValueError("dimension_semantics must be the same length as grid.")
    parallel_dims = [i for i, d in enumerate(semantics) if d == PARALLEL]
    if not parallel_dims:
        raise NotImplementedError(
            f"Cannot partition over cores without parallel grid dimensions: "
            f"dimension_semantics={semantics}")
    even = [i for i in parallel_dims if grid[i] % cores == 0]
    if not even:
        raise NotImplementedError(
            f"pltpu.emit_pipeline: no PARALLEL grid dimension of {grid} divides into "
            f"{cores} cores (the uneven split JAX makes has a run-time grid, which Ember's "
            f"emit_pipeline does not support; at {core.where()})")
    d = even[0]
    size = grid[d] // cores
    offsets = [0] * len(grid)
    offsets[d] = jnp.asarray(me, np.int32) * size
    return grid[:d] + (size,) + grid[d + 1:], tuple(offsets)


def _shifted(spec, offsets):
    """`spec` whose index map sees the grid indices plus `offsets` (a core's
    part of a split pipeline; its body's `program_id` stays local)."""
    if all(isinstance(o, int) and o == 0 for o in offsets) or spec is None or \
            getattr(spec, "index_map", None) is None:
        return spec
    out = copy.copy(spec)
    out.index_map = lambda *ids: spec.index_map(*[i + o for i, o in zip(ids, offsets)])
    return out


def _run_pipeline(body, grid, specs, nin, refs, scratches, allocations, body_prologue):
    """The pipeline of `emit_pipeline` over `refs` (inputs, then outputs)."""
    if len(refs) != len(specs):
        raise ValueError(
            f"pltpu.emit_pipeline: {len(refs)} refs for {nin} input and "
            f"{len(specs) - nin} output specs (at {core.where()})")
    extra = tuple(scratches or ())
    for k, sp in enumerate(specs):
        _buffer_count(sp, k >= nin)  # JAX's checks of pipeline_mode
    if allocations is not None:
        raise NotImplementedError(
            f"pltpu.emit_pipeline: allocations= (buffers made outside the pipeline) is "
            f"not supported (at {core.where()})")
    if tpu_kernel.tracing() or tpu_interpret.active() is not None:
        return _pipelined(body, grid, refs, specs, nin, extra, body_prologue)

    def step(ids):
        with _grid(ids, grid):
            if body_prologue is not None:
                body_prologue()
            body(*[_block_view(r, sp, _block_index(sp, ids, r))
                   for r, sp in zip(refs, specs)], *extra)

    if not core._trace_stack:
        for ids in itertools.product(*[range(n) for n in grid]):
            step(tuple(ids))
        return
    n = math.prod(grid)

    def loop_body(i, carry):
        step(pl_core._unravel(i, grid))
        return carry

    if n:
        control_flow.fori_loop(0, n, loop_body, jnp.int32(0))


@contextlib.contextmanager
def _grid(ids, grid):
    """`pl.program_id`/`num_programs` in an emit_pipeline body: the
    pipeline's grid point, as in JAX."""
    pl_core._grid_env.append((tuple(ids), grid))
    try:
        yield
    finally:
        pl_core._grid_env.pop()


def _blocked(spec):
    """Whether an emit_pipeline operand is cut into blocks (else the body
    gets the ref itself)."""
    return (spec is not None and getattr(spec, "block_shape", None) is not None
            and getattr(spec, "memory_space", None) is not pl_core.ANY)


def _block_index(spec, ids, ref):
    """The block indices the spec's index map gives at grid point `ids`."""
    if not _blocked(spec):
        return ()
    idx = spec.index_map(*ids) if spec.index_map is not None else (0,) * ref.ndim
    return tuple(idx) if isinstance(idx, (tuple, list)) else (idx,)


def _block_parts(spec, idx):
    """(index parts of the block at block indices `idx`, the block's shape
    without its squeezed dimensions)."""
    parts, shape = [], []
    for i, b in zip(idx, spec.block_shape):
        if b is None or isinstance(b, pl_core.Squeezed):
            parts.append(i)
        else:
            n = b.block_size if isinstance(b, pl_core.Blocked) else int(b)
            parts.append(state.Slice(i * n, n))
            shape.append(n)
    return tuple(parts), tuple(shape)


def _block_view(ref, spec, idx):
    return ref.at[_block_parts(spec, idx)[0]] if _blocked(spec) else ref


def _buffer_count(spec, output):
    """The number of VMEM buffers of an operand: its BlockSpec's
    `pipeline_mode=pl.Buffered(n)`, else 2 (JAX's checks and errors)."""
    mode = getattr(spec, "pipeline_mode", None)
    if mode is None:
        return 2
    if not isinstance(mode, Buffered):
        raise ValueError(f"pltpu.emit_pipeline: unsupported pipeline mode {mode} "
                         f"(at {core.where()})")
    if mode.buffer_count < 1:
        raise ValueError(f"buffer_count must be at least 1, got {mode.buffer_count}")
    if output and mode.use_lookahead:
        raise ValueError("Output buffering does not support lookahead.")
    if output and mode.buffer_count > 2:
        raise NotImplementedError("Buffer count >2 not supported for output buffered refs.")
    if mode.use_lookahead:
        raise NotImplementedError(
            f"pltpu.emit_pipeline: pl.Buffered(use_lookahead=True) (fetching blocks more "
            f"than one step ahead) is not supported (at {core.where()})")
    return int(mode.buffer_count)


def _pipelined(body, grid, refs, specs, nin, extra, body_prologue=None):
    """emit_pipeline with its blocks in VMEM (see `emit_pipeline`). Each
    blocked operand gets a (c, *block) VMEM buffer and c DMA semaphores
    (`pl.run_scoped`), c its buffer count (`pl.Buffered(c)`, 2 by default),
    the slots used in turn. An input's block is waited for at the first
    step that uses it (after the next different block was started into the
    next slot); with one buffer it is fetched and waited for then. An output
    block stays in its slot while the index map returns the same block (so
    the body may accumulate into it), is copied out at the last step that
    uses it, and the copy is waited for before the body writes that slot
    again (or at the end; at once with one buffer)."""
    n = math.prod(grid)
    if n == 0:
        return
    blocked = [k for k, sp in enumerate(specs) if _blocked(sp)]
    counts = {k: _buffer_count(specs[k], k >= nin) for k in blocked}
    zeros = (0,) * len(grid)
    shapes = {k: _block_parts(specs[k], _block_index(specs[k], zeros, refs[k]))[1]
              for k in blocked}
    types = ([VMEM((counts[k], *shapes[k]), refs[k].dtype) for k in blocked]
             + [SemaphoreType.DMA((counts[k],)) for k in blocked])

    def index(k, i):
        ids = pl_core._unravel(jnp.asarray(i, np.int32), grid)
        return tuple(jnp.asarray(v, np.int32) for v in _block_index(specs[k], ids, refs[k]))

    def differ(a, b):
        out = jnp.asarray(False)
        for x, y in zip(a, b):
            out = out | (x != y)
        return out

    def scoped(*allocs):
        bufs = dict(zip(blocked, allocs[:len(blocked)]))
        sems = dict(zip(blocked, allocs[len(blocked):]))

        def copy(k, idx, slot, out):
            hbm = refs[k].at[_block_parts(specs[k], idx)[0]]
            vmem, sem = bufs[k].at[slot], sems[k].at[slot]
            return make_async_copy(vmem, hbm, sem) if out else make_async_copy(hbm, vmem, sem)

        def following(k, slot):
            """The slot after `slot` in operand k's ring of buffers."""
            return jnp.where(slot + 1 == counts[k], 0, slot + 1).astype(np.int32)

        def fetch_now(k, cur):
            c = copy(k, cur, 0, False)
            c.start()
            c.wait()

        ins = [k for k in blocked if k < nin]
        outs = [k for k in blocked if k >= nin]
        for k in ins:
            if counts[k] > 1:
                copy(k, index(k, 0), 0, False).start()

        def step(i, carry):
            slots, pending, prev = carry
            slots = list(slots)
            first = i == 0
            last = i + 1 == n
            before = jnp.maximum(i - 1, 0)
            after = jnp.minimum(i + 1, n - 1)
            for j, k in enumerate(ins):
                cur = index(k, i)
                new = first | differ(cur, index(k, before))
                if counts[k] == 1:  # fetched when needed, no prefetch
                    pl_core.when(new)(lambda k=k, cur=cur: fetch_now(k, cur))
                    continue
                slot = jnp.where(new & ~first, following(k, slots[j]), slots[j]).astype(np.int32)
                # The next block into the next slot (the body is done with
                # it), then the wait for this one.
                nxt = index(k, after)
                pl_core.when(~last & differ(nxt, cur))(
                    lambda k=k, nxt=nxt, slot=slot: copy(k, nxt, following(k, slot),
                                                         False).start())
                pl_core.when(new)(lambda k=k, cur=cur, slot=slot:
                                  copy(k, cur, slot, False).wait())
                slots[j] = slot
            views = {k: bufs[k].at[slots[j]] for j, k in enumerate(ins)}
            views.update({k: bufs[k].at[slots[len(ins) + j]] for j, k in enumerate(outs)})
            with _grid(pl_core._unravel(jnp.asarray(i, np.int32), grid), grid):
                if body_prologue is not None:
                    body_prologue()
                body(*[views[k] if k in views else refs[k] for k in range(len(refs))], *extra)
            pending, prev = list(pending), list(prev)
            for j, k in enumerate(outs):
                slot = slots[len(ins) + j]
                cur = index(k, i)
                flush = last | differ(index(k, after), cur)
                if counts[k] == 1:  # copied out and waited for at once
                    def out_now(k=k, cur=cur):
                        c = copy(k, cur, 0, True)
                        c.start()
                        c.wait()

                    pl_core.when(flush)(out_now)
                    continue
                pl_core.when(flush)(lambda k=k, cur=cur, slot=slot:
                                    copy(k, cur, slot, True).start())
                pl_core.when(flush & (pending[j] != 0))(
                    lambda k=k, p=prev[j], slot=slot: copy(k, p, 1 - slot, True).wait())
                slots[len(ins) + j] = jnp.where(flush, 1 - slot, slot).astype(np.int32)
                pending[j] = jnp.where(flush, 1, pending[j]).astype(np.int32)
                prev[j] = tuple(jnp.where(flush, c, p).astype(np.int32)
                                for c, p in zip(cur, prev[j]))
            return tuple(slots), tuple(pending), tuple(prev)

        init = (tuple(jnp.int32(0) for _ in blocked), tuple(jnp.int32(0) for _ in outs),
                tuple(index(k, 0) for k in outs))
        slots, pending, prev = control_flow.fori_loop(0, n, step, init)
        for j, k in enumerate(outs):
            last_slot = slots[len(ins) + j]
            pl_core.when(pending[j] != 0)(
                lambda k=k, p=prev[j], slot=last_slot: copy(k, p, 1 - slot, True).wait())

    pl_core.run_scoped(scoped, *types)


def repeat(x, repeats, axis):
    """`x` repeated `repeats` times along `axis` (copies one after another)."""
    x = jnp.asarray(x)
    axis = int(axis) % x.ndim
    return jnp.tile(x, [int(repeats) if d == axis else 1 for d in range(x.ndim)])


def bitcast(x, ty):
    """Reinterprets the bits of `x` as `ty`, packing (or unpacking) rows of
    the second-minor dimension: for a narrower source, each group of
    consecutive rows forms one row of wider elements (the first row in the
    lowest bits), and the other way round."""
    x = jnp.asarray(x)
    ty = np.dtype(ty)
    if x.ndim < 2:
        raise ValueError(f"pltpu.bitcast: x needs 2 or more dimensions, got {x.shape} "
                         f"(at {core.where()})")
    src, dst = np.dtype(x.dtype).itemsize * 8, ty.itemsize * 8
    if x.shape[-2] * src % dst:
        raise ValueError(f"pltpu.bitcast: {x.shape[-2]} rows of {src}-bit elements do not "
                         f"pack into {dst}-bit ones (at {core.where()})")
    if src == dst:
        return lax.bitcast_convert_type(x, ty)
    *lead, m, n = x.shape
    if src < dst:
        k = dst // src
        parts = jnp.moveaxis(jnp.reshape(x, (*lead, m // k, k, n)), -2, -1)
        return lax.bitcast_convert_type(parts, ty)
    k = src // dst
    parts = lax.bitcast_convert_type(x, ty)  # (..., m, n, k)
    return jnp.reshape(jnp.moveaxis(parts, -1, -2), (*lead, m * k, n))


def roll(x, shift, axis, *, stride=None, stride_axis=None):
    """`jnp.roll(x, shift, axis)`; with `stride`, slice `i` along
    `stride_axis` rolls by `shift + i * stride`."""
    x = jnp.asarray(x)
    if isinstance(shift, int) and shift < 0:
        raise ValueError(f"pltpu.roll: shift must be non-negative (at {core.where()})")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"pltpu.roll: axis {axis} is out of range (at {core.where()})")
    if (stride is None) != (stride_axis is None):
        raise ValueError(f"pltpu.roll: stride and stride_axis go together (at {core.where()})")
    if stride is not None and (stride < 0 or not 0 <= stride_axis < x.ndim
                               or stride_axis == axis):
        raise ValueError(f"pltpu.roll: stride must be non-negative and stride_axis another "
                         f"axis in range (at {core.where()})")
    if tpu_kernel.tracing():  # lowered for TPU: Mosaic's dynamic_rotate
        return tpu_kernel.rotate(x, shift, axis, stride, stride_axis)
    if stride is None:
        return jnp.roll(x, shift, axis)
    rows = [jnp.roll(lax.slice_in_dim(x, i, i + 1, axis=stride_axis), shift + i * stride, axis)
            for i in range(x.shape[stride_axis])]
    return jnp.concatenate(rows, axis=stride_axis)


# -- the stateful PRNG ----------------------------------------------------------
#
# A TPU's hardware PRNG is sequential and its bits differ between generations
# (JAX's docs); JAX's interpret mode draws zeros. Lowered for TPU, the ops are
# Mosaic's (`ember_tpu.traced_prng_*` -> `prng_set_seed_32`,
# `prng_random_bits`). Ember's interpreters keep a
# state of two uint32 words per kernel (prng_state.py), carried across the grid:
# `prng_seed` sets it from the seeds through threefry2x32, `prng_random_bits`
# draws threefry2x32(state, counter) over the array's elements and moves the
# state on (threefry2x32(state, (1, 0))). Deterministic for a seed and a call
# sequence, as the hardware's; not its bits.


def _prng_ref(name):
    if not prng_state.refs:
        raise ValueError(f"pltpu.{name} is only available inside a Pallas kernel "
                         f"(at {core.where()})")
    if prng_state.refs[-1] is prng_state.FORBIDDEN:
        raise prng_state.SequentialNeeded
    return prng_state.refs[-1]


def _u32(x):
    x = jnp.asarray(x)
    if x.dtype == np.uint32:
        return x
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"All seed data must be scalar integers. Got {x.dtype}")
    return lax.convert_element_type(x, np.uint32)


def prng_seed(*seeds):
    """JAX's `pltpu.prng_seed`: sets the kernel's PRNG state from one or more
    integer seeds (scalars, or a Pallas key's words)."""
    words = []
    for s in seeds:
        data = getattr(s, "_base", s)  # a typed key: its words
        arr = jnp.asarray(data)
        words += [arr.reshape(-1)[i] for i in range(arr.size)] if arr.ndim else [arr]
    if tpu_kernel.tracing():  # lowered for TPU: the hardware's PRNG
        tpu_kernel.prng_seed([core.as_value(lax.bitcast_convert_type(_u32(w), np.int32))
                              for w in words])
        return
    ref = _prng_ref("prng_seed")
    k0 = k1 = jnp.zeros((), np.uint32)
    for i, w in enumerate(words):
        k0, k1 = lax.threefry2x32(k0, k1, _u32(w), jnp.asarray(i, np.uint32))
    ref[...] = jnp.stack([k0, k1])


def prng_random_bits(shape):
    """JAX's `pltpu.prng_random_bits`: int32 random bits of `shape` from the
    kernel's PRNG state, which moves on."""
    shape = tuple(int(d) for d in shape)
    if tpu_kernel.tracing():
        return tpu_kernel.prng_random_bits(shape)
    ref = _prng_ref("prng_random_bits")
    st = ref[...]
    k0, k1 = st[0], st[1]
    n = math.prod(shape)
    lo = lax.iota(np.uint32, n)
    hi = jnp.zeros((n,), np.uint32)
    b1, b2 = lax.threefry2x32(jnp.broadcast_to(k0, (n,)), jnp.broadcast_to(k1, (n,)), hi, lo)
    bits = jnp.reshape(lax.bitwise_xor(b1, b2), shape)
    n0, n1 = lax.threefry2x32(k0, k1, jnp.ones((), np.uint32), jnp.zeros((), np.uint32))
    ref[...] = jnp.stack([n0, n1])
    return lax.bitcast_convert_type(bits, np.int32)


class CoreType:
    """JAX's `pltpu.CoreType`: the kind of core a kernel runs on."""

    TC = "tc"
    SC_SCALAR_SUBCORE = "sc_scalar_subcore"
    SC_VECTOR_SUBCORE = "sc_vector_subcore"


class TensorCore:
    """One TensorCore of a TPU device (an element of a `TensorCoreMesh`)."""

    def __init__(self, id):  # noqa: A002 - JAX's field name
        self.id = int(id)

    def __repr__(self):
        return f"TensorCore(id={self.id})"

    def __eq__(self, other):
        return isinstance(other, TensorCore) and other.id == self.id

    def __hash__(self):
        return hash(("TensorCore", self.id))


# The axis names of the core_maps being traced (their lanes are cores of
# one device, not devices: `_remote` skips them for a device_id given as
# mesh coordinates).
_core_axes = lanes.core_axes


class TensorCoreMesh:
    """JAX's `pltpu.create_tensorcore_mesh(...)`: the TensorCores of one TPU
    device as a mesh of one axis, for `pl.core_map` and `pl.kernel`. On the
    CPU the cores are lanes of one program (as shard_map's devices are):
    each runs the body with `lax.axis_index(axis)` its index; remote copies
    and semaphore signals with `device_id={axis: core}` go to another core;
    memory outside the body (refs it closes over: the device's HBM) is
    shared, each element taking the value the core that wrote it left
    (a core sees the others' writes to it after the core_map, not during:
    they exchange data by remote copies, as on the TPU)."""

    default_memory_space = ANY
    # (For pl.core_map and pl.kernel: the body's closed-over refs are the
    # cores' shared memory.)
    shares_refs = True

    def __init__(self, devices, axis_names):
        self.devices = np.asarray(devices, dtype=object)
        self.axis_names = tuple(axis_names)
        if self.devices.ndim != 1 or len(self.axis_names) != 1:
            raise ValueError("A TensorCoreMesh has one axis of cores")

    @property
    def shape(self):
        return {self.axis_names[0]: self.devices.shape[0]}

    @property
    def size(self):
        return int(self.devices.size)

    def __repr__(self):
        return f"TensorCoreMesh(devices={self.devices!r}, axis_names={self.axis_names!r})"

    def run(self, fn):
        """`pl.core_map(self)(fn)`: `fn()` on every core."""
        from .. import batching

        axis = self.axis_names[0]
        _core_axes.add(axis)
        try:
            batching._vmap_traced(lambda: fn(), (), 0, self.size, (), {}, axis_name=axis,
                                  shared_refs=True)
        finally:
            _core_axes.discard(axis)

    def run_program(self, fn, compiler_params=None, name=None, args=(), out_types=(),
                    scratch_types=()):
        """`pl.core_map(self)` / `pl.kernel(mesh=self)` in a traced program:
        `fn(*refs)` on every core (`run`), with a ref per array of `args`
        (operands, in order) and an uninitialized one per `out_types`
        entry (results), then one per `scratch_types` entry (each core's
        scratch: kernel scratch operands), as a function of its own that the TPU target
        replaces by a Mosaic kernel, as JAX lowers a core_map over
        TensorCores: a `pallas_call` over a grid of the cores (one
        dimension; `lax.axis_index` is the grid index), every buffer in
        `pl.ANY` (HBM). Refs `fn` closes over are operands too, and each
        written one (and each written ref of `args`) an output aliased to
        its operand. Returns the outputs' values."""
        from .. import ad
        from ..targets import tpu as tpu_target

        if compiler_params is not None and getattr(
                compiler_params, "dimension_semantics", None) is not None:
            raise ValueError("dimension_semantics must be None for TensorCoreMesh")
        kname = name or getattr(fn, "__name__", "core_map")
        args = [core.as_value(a) for a in args]
        found = {}

        def cores(*vals):
            trace = core.current_trace()
            in_refs = [state.Ref(v) for v in vals]
            out_refs = [state.Ref(state.uninitialized(tuple(t.shape), t.dtype))
                        for t in out_types]
            with state.scope(in_refs + out_refs):
                self.run(lambda: pl_core.run_scoped(lambda *s: fn(*in_refs, *out_refs, *s),
                                                    *scratch_types))
            # The refs lifted into this function, by operand position.
            positions = list(trace.block.arguments)
            found["lifted"] = [(ref, positions.index(trace._capture_args[("ref", id(ref))]))
                               for ref, _ in trace.lifted]
            found["written_args"] = [k for k, r in enumerate(in_refs) if id(r) in trace.written]
            return ([r._value for r in out_refs]
                    + [in_refs[k]._value for k in found["written_args"]])

        written = []
        fname, out_avals, captured = core.trace_subfunction(
            cores, [a.aval for a in args], name=f"core_map_{kname}", sources=args,
            ref_outs=written)
        operands = args + list(captured)
        # Kernel outputs: the results, the written refs of `args`, the
        # written refs closed over (each aliased to its operand).
        position = {id(r): k for r, k in found["lifted"]}
        aliased = found["written_args"] + [position[id(r)] for r in written]
        try:
            if len(captured) != len(found["lifted"]):
                raise NotImplementedError(
                    "a core_map body lowered for TPU reads only refs (it closes over an "
                    "array value: make it a ref, or an operand of pl.kernel)")
            kernel_text, error = self._kernel_module(
                fn, kname, operands, found["lifted"], out_types, scratch_types, aliased,
                compiler_params), None
        except Exception as e:  # only lowering for TPU reports it
            kernel_text, error = None, f"{kname}: {type(e).__name__}: {e}"
        func = core.find_function(fname)
        with core.context():
            if error is None:
                func.attributes[tpu_target.KERNEL_ATTR] = ir.StringAttr.get(kernel_text)
                func.attributes[tpu_target.NAME_ATTR] = ir.StringAttr.get(kname)
                func.attributes[tpu_target.ALIASES_ATTR] = ir.DenseI64ArrayAttr.get(
                    [v for o, k in enumerate(aliased) for v in (k, len(out_types) + o)])
            else:
                func.attributes[tpu_target.ERROR_ATTR] = ir.StringAttr.get(error)
        outs = ad._call(fname, operands, out_avals)
        state.bind_written(written, outs[len(outs) - len(written):])
        return outs[:len(out_types)]

    def _kernel_module(self, fn, kname, operands, lifted, out_types, scratch_types, aliased,
                       compiler_params):
        """The Mosaic form of the cores' kernel (tpu_kernel.kernel_module):
        operands `operands` (the arrays of `args`, then the refs `lifted`
        at their positions), outputs `out_types` then the operands at
        positions `aliased`."""
        from .. import parallel

        # (run_program checked that every captured operand is a lifted ref:
        # they follow the arrays of `args`.)
        n_args = len(operands) - len(lifted)
        any_spec = pl_core.BlockSpec(memory_space=ANY)
        in_blocks = [pl_core._Block(any_spec, x.shape, x.dtype, f"operand {k}")
                     for k, x in enumerate(operands)]
        out_blocks = [pl_core._Block(any_spec, tuple(t.shape), t.dtype, f"output {j}")
                      for j, t in enumerate(out_types)] + [in_blocks[k] for k in aliased]
        params = copy.copy(compiler_params) if compiler_params is not None else CompilerParams()
        params.dimension_semantics = (PARALLEL,)
        axis, n, nin = self.axis_names[0], self.size, len(operands)

        def kernel(*krefs):
            # Each ref is a kernel buffer: a written one its output (aliased
            # to its operand), the others their operand.
            ins, kouts = krefs[:nin], krefs[nin:nin + len(out_blocks)]

            def home(k):
                if k in aliased:
                    return kouts[len(out_types) + aliased.index(k)]
                return ins[k]

            own = [home(k) for k in range(n_args)] + list(kouts[:len(out_types)])
            closed = [(r, home(p)) for r, p in lifted]
            saved = [(r, r._value, getattr(r, "_tpu_buffer", None)) for r, _ in closed]
            try:
                for r, h in closed:
                    r._value, r._tpu_buffer = h._value, h._tpu_buffer
                with state.scope([r for r, _ in closed]), \
                        parallel.kernel_axis(axis, pl_core.program_id(0), n):
                    fn(*own, *krefs[nin + len(out_blocks):])
                for r, h in closed:
                    h._value = r._value
            finally:
                for r, v, b in saved:
                    r._value = v
                    if b is None:
                        r.__dict__.pop("_tpu_buffer", None)
                    else:
                        r._tpu_buffer = b

        return tpu_kernel.kernel_module(kernel, kname, (n,), pl_core._grid_env, [], in_blocks,
                                        out_blocks, list(scratch_types), params)


def _core_axis():
    """The axis of the innermost core_map being traced (or lowered for TPU)."""
    from .. import parallel

    if not _core_axes and len(parallel._env.kernel_axes) == 1:
        return next(iter(parallel._env.kernel_axes))
    if len(_core_axes) != 1:
        raise NotImplementedError(f"core_index needs exactly one core_map axis "
                                  f"(at {core.where()})")
    return next(iter(_core_axes))


def run_on_first_core(core_axis_name):
    """JAX's `pltpu.run_on_first_core`: a decorator running the function on
    core 0 of `core_axis_name` only."""
    from .. import parallel

    def wrapped(f):
        if parallel.axis_size(core_axis_name) == 1:
            return f()
        pl_core.when(parallel.axis_index(core_axis_name) == 0)(f)

    return wrapped


def core_barrier(sem, *, core_axis_name):
    """JAX's `pltpu.core_barrier`: every core of `core_axis_name` signals
    `sem` of every other core, then waits for the others' signals."""
    from .. import parallel

    cores = parallel.axis_size(core_axis_name)
    if cores == 1:
        return
    me = parallel.axis_index(core_axis_name)
    for i in range(cores):
        @pl_core.when(me != i)
        def _(i=i):
            semaphore_signal(sem, 1, device_id={core_axis_name: i})

    semaphore_wait(sem, cores - 1)


def is_tpu_device():
    """JAX's `pltpu.is_tpu_device`: whether the default device is a TPU
    (never, for Ember: TPU kernels are interpreted or lowered)."""
    return False


def get_tpu_info():
    """JAX's `pltpu.get_tpu_info`: the TPU's hardware description. There
    is no TPU here; JAX raises the same error on a CPU."""
    from .. import devices as devices_lib

    kind = devices_lib.devices()[0].device_kind
    raise ValueError(f"Unsupported TPU device kind: {kind}")


class ChipVersion(enum.Enum):
    """JAX's `pltpu.ChipVersion`: the TPU generations by name."""

    TPU_V2 = "v2"
    TPU_V3 = "v3"
    TPU_V4I = "v4i"
    TPU_V4 = "v4"
    TPU_V5E = "v5e"
    TPU_V5P = "v5p"
    TPU_V6E = "v6e"
    TPU_7 = "7"
    TPU_7X = "7x"
    TPU_8I = "8i"

    def __str__(self):
        return self.value


def einshape(equation, x, assert_is_tile_preserving=False, **sizes):
    """JAX's `pltpu.einshape`: reshapes and transposes `x` as `equation`
    says: "a(bc)->(ba)c" splits the second dimension into b and c (its
    size from `sizes`, e.g. b=4, when it cannot be inferred), moves b
    before a and merges them. Names are single letters; parentheses group
    dimensions (split on the left, merged on the right)."""
    lhs, rhs = (_einshape_side(t) for t in _einshape_sides(equation))
    x = jnp.asarray(x)
    if len(lhs) != x.ndim:
        raise ValueError(f"einshape: {equation!r} names {len(lhs)} dimensions, the array has "
                         f"{x.ndim} (shape {x.shape})")
    names = [n for g in lhs for n in g]
    out_names = [n for g in rhs for n in g]
    if len(set(names)) != len(names) or len(set(out_names)) != len(out_names):
        raise ValueError(f"einshape: {equation!r} names a dimension twice")
    if sorted(names) != sorted(out_names):
        # (Dimensions added or dropped: not supported by JAX either.)
        raise NotImplementedError(f"einshape: {equation!r} must name the same dimensions on "
                                  f"both sides")
    dims = {}
    for group, size in zip(lhs, x.shape):
        unknown = [n for n in group if n not in sizes]
        known = math.prod(int(sizes[n]) for n in group if n in sizes)
        if len(unknown) > 1:
            raise ValueError(f"einshape: cannot infer the sizes of {unknown} in {equation!r}; "
                             f"give all but one of them")
        if unknown:
            if known == 0 or size % known:
                raise ValueError(f"einshape: dimension of size {size} cannot be split by "
                                 f"{known} in {equation!r}")
            dims[unknown[0]] = size // known
        elif known != size:
            raise ValueError(f"einshape: the sizes of {group} multiply to {known}, not the "
                             f"dimension's {size} in {equation!r}")
        dims.update((n, int(sizes[n])) for n in group if n in sizes)
    split = jnp.reshape(x, tuple(dims[n] for n in names))
    moved = jnp.transpose(split, [names.index(n) for n in out_names])
    return jnp.reshape(moved, tuple(math.prod(dims[n] for n in g) for g in rhs))


def _einshape_sides(equation):
    if equation.count("->") != 1:
        raise ValueError("Equation must contain exactly one '->'")
    return equation.split("->")


def _einshape_side(text):
    """"a(bc)d" -> [['a'], ['b', 'c'], ['d']]."""
    groups, i, text = [], 0, text.replace(" ", "")
    while i < len(text):
        if text[i] == "(":
            j = text.find(")", i)
            if j < 0 or "(" in text[i + 1:j]:
                raise ValueError(f"Unmatched parenthesis in {text!r}")
            groups.append(list(text[i + 1:j]))
            i = j + 1
        elif text[i] == ")":
            raise ValueError(f"Unmatched parenthesis in {text!r}")
        else:
            groups.append([text[i]])
            i += 1
    return groups


def create_tensorcore_mesh(axis_name, devices=None, num_cores=None):
    """JAX's `pltpu.create_tensorcore_mesh`: the TensorCores of a device
    (`num_cores` of them, or as many as the device has) as a mesh along
    `axis_name`. CPU devices have no TensorCores: give `num_cores` to run
    core_map kernels in the interpreter."""
    if devices is not None and num_cores is not None:
        raise ValueError("cannot specify both devices and num_cores")
    if num_cores is None:
        from .. import devices as devices_lib

        device = (devices or devices_lib.devices())[0]
        num_cores = getattr(device, "num_cores", None)
        if num_cores is None:
            raise ValueError(
                f"pltpu.create_tensorcore_mesh: {device} is not a TPU and has no TensorCores; "
                f"pass num_cores= to interpret core_map kernels on it (at {core.where()})")
    return TensorCoreMesh([TensorCore(i) for i in range(int(num_cores))], [axis_name])


class MemorySpace:
    """JAX's `pltpu.MemorySpace`: the TPU's memory spaces by name
    (`MemorySpace.VMEM` is `pltpu.VMEM`, ...)."""

    ANY = ANY
    VMEM = VMEM
    SMEM = SMEM
    HBM = HBM
    SEMAPHORE = SEMAPHORE


def load(ref, *, mask=None):
    """JAX's `pltpu.load`: all of `ref` (a ref or a view); with `mask`, the
    lanes where it is false are undefined (zero here)."""
    value = ref[...]
    return value if mask is None else jnp.where(mask, value, jnp.zeros_like(value))


def store(ref, val, *, mask=None):
    """JAX's `pltpu.store`: writes `val` into `ref`, only where `mask` is
    true when given."""
    state.store(ref, (), val, mask=mask)


def touch(ref):
    """JAX's `pltpu.touch`: a pretend read and write of `ref` (an ordering
    dependency for Mosaic; nothing for the interpreters, which keep program
    order)."""
    del ref


def trace_value(label, value):
    """JAX's `pltpu.trace_value`: a scalar for the profiler's trace (there
    is no TPU profiler here: nothing is recorded)."""
    del label, value


def with_memory_space_constraint(x, memory_space):
    """JAX's `pltpu.with_memory_space_constraint`: `x`, asked to live in
    `memory_space` (HBM, VMEM or SMEM) when it is a pallas_call's operand
    (placement is the TPU compiler's; the value is unchanged)."""
    if memory_space is ANY:
        return x
    if memory_space not in (HBM, VMEM, SMEM):
        raise NotImplementedError("with_memory_space_constraint only supports HBM, VMEM and "
                                  "SMEM.")
    return x
