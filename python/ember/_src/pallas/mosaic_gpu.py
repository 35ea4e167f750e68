"""`plgpu` (JAX's `jax.experimental.pallas.mosaic_gpu`) and its interpreter.

`kernel(body, out_shape, grid=..., cluster=..., num_threads=...)` runs `body`
on the CPU the way the GPU runs it: every block of a cluster (and every
thread group of a block, `num_threads`) is a Python thread, and they take
turns, switching only where a GPU thread could wait (barrier waits), so the
blocks of a cluster really run concurrently with respect to the kernel's
synchronization. Clusters run one after another. Shared memory (SMEM
scratch) is per block; global memory (inputs and outputs) is shared.

Misuse is reported as an error naming the kernel's line, found by tracking
happens-before with vector clocks (each thread, and each asynchronous copy
or MMA, is an agent; barrier arrivals release, waits acquire):

- reading SMEM before the barrier of the copy that writes it completed;
- overwriting SMEM (a copy, a multicast copy into another block of the
  cluster, or a store) that a thread may still be reading, i.e. whose read
  is not ordered before the write by a barrier;
- a barrier wait that can never complete (waiting more times than the
  barrier was armed), reported with the line of each stuck wait;
- a barrier whose last phase got fewer arrivals than it counts;
- an async copy to GMEM of SMEM written without `commit_smem()`, and
  writing SMEM an unfinished async copy or wgmma still reads.

Race-free kernels compute what the GPU computes: an asynchronous copy
lands when it is issued (a race-free kernel cannot tell the difference).
The kernel body runs under `disable_jit`, as Python over concrete arrays.
"""

import enum
import functools
import itertools
import math
import sys
import threading
import weakref

import numpy as np

from .. import core, lax, state, tree_util
from ..config import config as _config
from ..numpy import lax_numpy as jnp
from . import core as pl_core
from . import mosaic_gpu_compile as _compile
from . import scheduler

# --------------------------------------------------------------------------
# Types of buffers


class _MemorySpace:
    def __init__(self, name):
        self.name = name

    def __call__(self, shape, dtype, *, transforms=()):
        return _BufferType(tuple(shape), dtype, self, transforms)

    def __repr__(self):
        return self.name


GMEM = _MemorySpace("GMEM")
SMEM = _MemorySpace("SMEM")


class _BufferType:
    def __init__(self, shape, dtype, space, transforms=()):
        self.shape, self.dtype, self.space = tuple(shape), np.dtype(dtype), space
        self.transforms = tuple(transforms)


class TilingTransform:
    """A tiled SMEM layout. The interpreter keeps logical layouts."""

    def __init__(self, tiling):
        self.tiling = tuple(tiling)


class SwizzleTransform:
    """A swizzled SMEM layout. The interpreter keeps logical layouts."""

    def __init__(self, swizzle):
        self.swizzle = int(swizzle)


class Barrier:
    """`num_barriers` mbarriers in SMEM, each completing a phase after
    `num_arrivals` arrivals (a `copy_gmem_to_smem` is one)."""

    def __init__(self, num_arrivals=1, num_barriers=1, orders_tensor_core=False):
        if num_arrivals < 1 or num_barriers < 1:
            raise ValueError(f"Barrier: num_arrivals and num_barriers must be positive, got "
                             f"{num_arrivals} and {num_barriers} (at {core.where()})")
        self.num_arrivals, self.num_barriers = int(num_arrivals), int(num_barriers)


class ClusterBarrier:
    """Barriers shared by the blocks of a cluster along `collective_axes`:
    an arrival reaches the barrier of every block of the group, and a phase
    completes after `num_arrivals` arrivals from each of them."""

    def __init__(self, collective_axes, num_arrivals=1, num_barriers=1,
                 orders_tensor_core=False):
        if isinstance(collective_axes, str):
            collective_axes = (collective_axes,)
        self.collective_axes = tuple(collective_axes)
        self.num_arrivals, self.num_barriers = int(num_arrivals), int(num_barriers)


class TMEM:
    """A buffer in a block's tensor memory (Blackwell): `shape` is (lanes,
    columns); at most 512 32-bit columns per block."""

    def __init__(self, shape, dtype, *, layout=None, collective=False, packed=None):
        self.shape, self.dtype, self.collective = tuple(shape), np.dtype(dtype), collective
        if len(self.shape) != 2 or self.shape[0] not in (64, 128):
            raise ValueError(f"TMEM: the shape must be (64 or 128 lanes, columns), got "
                             f"{self.shape} (at {core.where()})")
        if self.columns() > 512:
            raise ValueError(f"TMEM: {self.shape} {self.dtype} needs {self.columns()} 32-bit "
                             f"columns; a block has 512 (at {core.where()})")

    def columns(self):
        return -(-self.shape[1] * self.dtype.itemsize // 4)


class ACC:
    """A wgmma accumulator (registers), initialized to zeros."""

    def __init__(self, shape, dtype=np.float32):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    def initial_value(self):
        """What a fresh accumulator holds (`pl.run_scoped`): zeros."""
        return jnp.zeros(self.shape, self.dtype)

    @staticmethod
    def init(value):
        """The initial value of an accumulator made with `pl.run_state`."""
        if _compile.active() is not None or interpreting():
            return _compile.AccInit(value)
        return value


class Layout:
    """Register layouts (`layout_cast`). The interpreter keeps logical
    arrays, so a layout is a name only."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Layout.{self.name}"

    def reduce(self, axes):
        """The layout of a reduction over `axes` of an array in this one:
        `Layout.WGMMA.reduce(1)` is `WGMMA_ROW` (a value per row)."""
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        known = {("WGMMA", (1,)): "WGMMA_ROW", ("WGMMA", (0,)): "WGMMA_COL",
                 ("TCGEN05", (1,)): "TCGEN05_ROW", ("TCGEN05", (0,)): "TCGEN05_COL"}
        return Layout(known.get((self.name, axes), f"{self.name}.reduce{axes}"))


for _name in ("WGMMA", "WGMMA_ROW", "WGMMA_COL", "WG_SPLAT", "WG_STRIDED", "TCGEN05",
              "TCGEN05_ROW", "TCGEN05_COL", "TCGEN05_TMEM_NATIVE"):
    setattr(Layout, _name, Layout(_name))


def layout_cast(x, new_layout):
    """`x` in another register layout: the same array on the CPU; in a
    kernel compiled for the GPU, `Layout.WGMMA` puts it in wgmma's
    accumulator layout, `Layout.WGMMA_ROW` (`WGMMA.reduce(1)`) and
    `WGMMA_COL` (`WGMMA.reduce(0)`) in the layouts of its rows and columns
    (other layouts are names only)."""
    kind = {"WGMMA": "wgmma", "WGMMA_ROW": "wgmma_row",
            "WGMMA_COL": "wgmma_col"}.get(getattr(new_layout, "name", None))
    if (kc := _compile.active()) is not None and kind is not None:
        return kc.to_wgmma_tracer(core.as_value(x), kind)
    return x


class LoweringSemantics(enum.Enum):
    """JAX's `plgpu.LoweringSemantics` (`CompilerParams(lowering_semantics=)`):
    whether JAX lowers a kernel thread by thread or warpgroup by warpgroup.
    Both give the same results; Ember's compiler has one lowering (arrays
    spread over the warpgroup), so the choice is accepted and kept only."""

    Lane = "lane"
    Warpgroup = "warpgroup"


class CompilerParams:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class InterpretError(RuntimeError):
    """A kernel misused barriers, SMEM or asynchronous operations."""


# --------------------------------------------------------------------------
# The scheduler: one Python thread per GPU thread group, one running at a
# time, switching at waits.


_Abort = scheduler.Abort


class _Worker(scheduler.Worker):
    def __init__(self, sched, name, block, thread, coords, scope=""):
        super().__init__(name)
        self.sched, self.block, self.thread = sched, block, thread
        # Workers of one scope (the warpgroups; the k-th warp of each
        # `core_map(WarpMesh)`) share `run_scoped` buffers along the thread
        # axis (`scoped_allocator`).
        self.scope = scope
        self.coords = coords  # {axis name: index}
        self.vc = {name: 1}
        self.pending_stores = []  # async SMEM->GMEM copies, oldest first
        self.pending_mma = []  # wgmma groups
        self.pending_tc = []  # tcgen05 MMAs not yet committed
        self.pending_loads = []  # TMEM loads
        self.pipeline_calls = {}  # warp-specialized pipelines entered, by call site
        self.children = {}  # warps of `core_map(WarpMesh)`, kept across calls
        self.waits = {}  # barrier instance -> phases waited
        self.scoped_calls = 0  # pl.run_scoped calls made (scoped_allocator)


_local = threading.local()


def _me():
    w = getattr(_local, "worker", None)
    if w is None:
        raise ValueError(f"this plgpu operation can only be used inside a plgpu kernel "
                         f"(at {core.where()})")
    return w


def _deadlock(stuck):
    return InterpretError(
        "deadlock: no thread of the cluster can proceed; every barrier wait below waits "
        "for a phase that never completes (more waits than the barrier was armed for?):\n  "
        + "\n  ".join(stuck))


class _Scheduler(scheduler.Scheduler):
    def __init__(self):
        super().__init__(_local, _deadlock)

    def spawn(self, parent, children, fn):
        """Runs `fn()` in each of `children` (new threads of execution that
        start knowing what `parent` knows) and waits for them all; the
        parent then knows what they know."""
        for c in children:
            c.done, c.waiting = False, None
            c.event.clear()
            _join(c.vc, parent.vc)
            if c not in self.workers:
                self.workers.append(c)
            self.start(c, fn)
        self.block_until(parent, lambda: all(c.done for c in children),
                         f"waits for its {len(children)} warps at {core.where()}")
        for c in children:
            _join(parent.vc, c.vc)
        parent.vc[parent.name] += 1


def _join(a, b):
    for k, v in b.items():
        if a.get(k, 0) < v:
            a[k] = v


_agents = itertools.count()


def _agent(kind):
    return f"{kind}#{next(_agents)}"


# --------------------------------------------------------------------------
# Barriers


class _BarrierInst:
    """One mbarrier of one block."""

    def __init__(self, num_arrivals, where):
        self.n, self.where = num_arrivals, where
        self.arrived, self.expect, self.delivered = 0, 0, 0
        self.pending = {}
        self.phases = []  # the clock each completed phase publishes

    def arrive(self, vc, deliveries=0):
        self.arrived += 1
        self.expect += deliveries
        _join(self.pending, vc)
        self._complete()

    def deliver(self, vc):
        self.delivered += 1
        _join(self.pending, vc)
        self._complete()

    def _complete(self):
        while self.arrived >= self.n and self.delivered >= self.expect:
            self.phases.append(self.pending)
            self.arrived -= self.n
            self.delivered -= self.expect
            self.expect, self.pending = 0, {}


class _BarrierRef:
    """The kernel's handle on barriers: one instance per block; `at[i]`
    selects one of `num_barriers`."""

    def __init__(self, kind, insts, index=None):
        self.kind, self.insts, self.index = kind, insts, index

    @property
    def at(self):
        ref = self

        class _At:
            def __getitem__(self, i):
                return _BarrierRef(ref.kind, ref.insts, int(i))

        return _At()

    def inst(self, block):
        row = self.insts[block]
        if self.index is None:
            if len(row) != 1:
                raise ValueError(f"a group of {len(row)} barriers needs an index: "
                                 f"barrier.at[i] (at {core.where()})")
            return row[0]
        return row[self.index]


def barrier_arrive(barrier):
    if (kc := _compile.active()) is not None:
        return kc.barrier_arrive(barrier)
    w = _me()
    if isinstance(barrier.kind, ClusterBarrier):
        for b in _group(w, barrier.kind.collective_axes):
            barrier.inst(b).arrive(dict(w.vc))
    else:
        barrier.inst(w.block).arrive(dict(w.vc))
    w.vc[w.name] += 1


def barrier_wait(barrier):
    if (kc := _compile.active()) is not None:
        return kc.barrier_wait(barrier)
    w = _me()
    inst = barrier.inst(w.block)
    k = w.waits.get(id(inst), 0)
    where = core.where()
    w.sched.block_until(
        w, lambda: len(inst.phases) > k,
        f"barrier_wait at {where} waits for phase {k + 1}; the barrier completed "
        f"{len(inst.phases)}, its current phase has {inst.arrived} of {inst.n} arrivals")
    _join(w.vc, inst.phases[k])
    w.waits[id(inst)] = k + 1


# --------------------------------------------------------------------------
# SMEM with shadow state


class _Write:
    __slots__ = ("lo", "hi", "agent", "clk", "where", "is_async", "issuer", "uncommitted")

    def __init__(self, lo, hi, agent, clk, where, is_async, issuer, uncommitted):
        self.lo, self.hi, self.agent, self.clk, self.where = lo, hi, agent, clk, where
        self.is_async, self.issuer, self.uncommitted = is_async, issuer, uncommitted


class _Shadow:
    """What the race checks know of one SMEM/TMEM buffer, per row (index of
    the leading dimension) and column interval (of the last dimension): the
    writes not yet overwritten (`_Write`) and the reads since (lo, hi,
    agent, clock, line)."""

    def __init__(self, shape, block, name, space="SMEM"):
        self.block, self.name, self.space = block, name, space
        nrows = shape[0] if shape else 1
        self.ncols = shape[-1] if len(shape) >= 2 else 1
        self.writes = [[] for _ in range(nrows)]
        self.reads = [[] for _ in range(nrows)]

    def region(self, norm):
        """(rows, (lo, hi)) an index (normalized against the buffer) covers."""
        rows = _span(norm[0], len(self.writes)) if norm else range(len(self.writes))
        if len(norm) < 2:
            return list(rows), (0, 1)
        cols = _span(norm[-1], self.ncols)
        return list(rows), (min(cols, default=0), max(cols, default=-1) + 1)

    def check_read(self, region, vc, who, where):
        rows, (lo, hi) = region
        for r in rows:
            for wr in self.writes[r]:
                if wr.lo < hi and lo < wr.hi and vc.get(wr.agent, 0) < wr.clk:
                    raise InterpretError(self._unordered_read(wr, who, where))

    def _unordered_read(self, wr, who, where):
        what = f"{who} reads {self.space} {self.name} of block {self.block} at {where}"
        op = "an MMA" if wr.agent.startswith("mma#") else "a copy"
        if wr.is_async and wr.issuer != who:
            return (f"{what}, which {op} issued by {wr.issuer} at {wr.where} wrote without "
                    f"this thread having waited for it: {op} into a buffer still in use, or "
                    f"its completion not awaited (guard the reuse with a barrier, e.g. a "
                    f"ClusterBarrier across the cluster)")
        if wr.is_async:
            return (f"{what} before the barrier of {op} issued at {wr.where} completed "
                    f"(wait on it first)")
        return f"{what}, written at {wr.where} by {wr.agent} without a barrier between them"

    def check_write(self, region, vc, who, where, in_order=None):
        """`in_order`: the kind of asynchronous agent (e.g. "mma") whose
        earlier writes issued by `who` complete before this one (a thread's
        tensor-core MMAs run in issue order)."""
        rows, (lo, hi) = region
        what = f"{who} overwrites {self.space} {self.name} of block {self.block} at {where}"
        for r in rows:
            for rlo, rhi, agent, clk, line in self.reads[r]:
                if rlo < hi and lo < rhi and agent != who and vc.get(agent, 0) < clk:
                    raise InterpretError(
                        f"{what} while {agent} may still be reading it (read at {line}); a "
                        f"barrier must order the read before the write")
            for wr in self.writes[r]:
                ordered = (in_order is not None and wr.is_async and wr.issuer == who
                           and wr.agent.startswith(in_order + "#"))
                if (wr.lo < hi and lo < wr.hi and wr.agent != who and not ordered
                        and vc.get(wr.agent, 0) < wr.clk):
                    raise InterpretError(f"{what} while the write at {wr.where} by {wr.agent} "
                                         f"may still be in flight")

    def record_read(self, region, agent, clk, where):
        rows, (lo, hi) = region
        for r in rows:
            reads = [x for x in self.reads[r] if not (x[2] == agent and x[0] == lo and x[1] == hi)]
            reads.append((lo, hi, agent, clk, where))
            self.reads[r] = reads

    def record_write(self, region, agent, clk, where, is_async, issuer, uncommitted):
        rows, (lo, hi) = region
        for r in rows:
            self.reads[r] = [x for x in self.reads[r] if not (lo <= x[0] and x[1] <= hi)]
            self.writes[r] = [x for x in self.writes[r] if not (lo <= x.lo and x.hi <= hi)]
            self.writes[r].append(_Write(lo, hi, agent, clk, where, is_async, issuer,
                                         uncommitted))

    def uncommitted_in(self, region):
        rows, (lo, hi) = region
        for r in rows:
            for wr in self.writes[r]:
                if wr.lo < hi and lo < wr.hi and wr.uncommitted is not None:
                    return wr.uncommitted
        return None

    def commit(self, w):
        for writes in self.writes:
            for wr in writes:
                if wr.uncommitted is not None and (
                        wr.uncommitted == w.name or w.vc.get(wr.uncommitted, 0) >= wr.clk):
                    wr.uncommitted = None


def _span(entry, n):
    """The indices one normalized index entry covers along a dimension."""
    k, s = entry
    if k == "at":
        return [int(s)]
    if k == "gather":
        return sorted({int(i) for i in np.asarray(s).ravel()})
    start = int(s.start)
    return [i for i in range(start, start + s.size * s.stride, s.stride) if 0 <= i < n]


class _AccRef(state.Ref):
    """A wgmma accumulator (`plgpu.ACC`): as in JAX, reading it waits for
    the calling warpgroup's wgmmas in flight (`wgmma_accumulator_load`
    reads it without waiting for all of them)."""

    wait_n = 0

    def _access(self, kind, norm):
        if kind == "load" and self.wait_n is not None and interpreting():
            wgmma_wait(self.wait_n)


def acc_ref(value):
    """An accumulator holding `value` (`pl.run_state` of `ACC.init`)."""
    return _AccRef(core.as_value(value))


def wgmma_accumulator_load(acc, *, wait_n=0):
    """JAX's `plgpu.wgmma_accumulator_load`: `acc[...]` once at most
    `wait_n` wgmmas are in flight (None: no wait)."""
    if wait_n is not None and wait_n < 0:
        raise ValueError(f"wait_n must be non-negative, got wait_n={wait_n} "
                         f"(at {core.where()})")
    if (kc := _compile.active()) is not None:
        return kc.acc_read(acc, wait_n)
    if not isinstance(acc, _AccRef):
        raise TypeError(f"wgmma_accumulator_load: expected a plgpu.ACC ref, got "
                        f"{type(acc).__name__} (at {core.where()})")
    if wait_n is not None:
        wgmma_wait(wait_n)
    return _raw_load(acc)


class _SmemRef(state.Ref):
    def __init__(self, value, shadow):
        super().__init__(value)
        self.shadow = shadow

    def _access(self, kind, norm):
        w = getattr(_local, "worker", None)
        if w is None:
            return
        sh = self.shadow
        region = sh.region(norm)
        where = core.where()
        if kind == "load":
            sh.check_read(region, w.vc, w.name, where)
            sh.record_read(region, w.name, w.vc[w.name], where)
        else:
            sh.check_write(region, w.vc, w.name, where)
            sh.record_write(region, w.name, w.vc[w.name], where, False, w.name, w.name)


def _smem_target(ref, block):
    """The ref (or view) `ref` names, in the SMEM of `block`."""
    base = ref.base if isinstance(ref, state.RefView) else ref
    if not isinstance(base, _SmemRef):
        raise TypeError(f"expected an SMEM ref, got {type(base).__name__} (at {core.where()})")
    twin = base.twins[block]
    norm = ref.norm if isinstance(ref, state.RefView) else base.compose((), "copy")
    return twin, norm


def _async_write(dst, norm, data, vc, agent, who, where, part=(0, 1)):
    """An asynchronous copy's write of `data` into `dst` (at `norm`). A
    multicast copy is issued by every block of its group, each delivering
    part `part[0]` of `part[1]` of the rows: only those are checked and
    marked (all parts carry the same data)."""
    sh = dst.shadow
    rows, cols = sh.region(norm)
    k, n = part
    region = (rows[len(rows) * k // n:len(rows) * (k + 1) // n], cols)
    sh.check_write(region, vc, who, where)
    _raw_store(state.RefView(dst, norm) if norm else dst, data)
    sh.record_write(region, agent, 1, where, True, who, None)


class _unwatched:
    """Accesses the interpreter itself makes (an async copy landing) are
    checked where they are issued, not as the thread's own."""

    def __enter__(self):
        self.saved, _local.worker = _local.worker, None

    def __exit__(self, *exc):
        _local.worker = self.saved


def _raw_load(ref):
    with _unwatched():
        return state.load(ref, ())


def _raw_store(ref, value):
    with _unwatched():
        state.store(ref, (), value)


def _async_read(w, ref, agent, where, block=None):
    """Checks that `w` may read `ref` (in `block`'s memory, by default its
    own) and records the read as `agent`'s, pending until observed."""
    twin, norm = _smem_target(ref, w.block if block is None else block)
    sh = twin.shadow
    region = sh.region(norm)
    sh.check_read(region, w.vc, w.name, where)
    sh.record_read(region, agent, 1, where)
    return twin, norm, region


def _commit(w, space):
    """The stores to `space` that happened before this point of the thread
    (its own, and other threads' it synchronized with) become visible to
    asynchronous operations."""
    for ref in w.sched.smem_refs[w.block]:
        if ref.shadow.space == space:
            ref.shadow.commit(w)


def _group(w, axes):
    """The blocks of `w`'s cluster that differ from it only along `axes`."""
    sched = w.sched
    for a in axes:
        if a not in sched.cluster_names:
            raise ValueError(f"collective axis {a!r} is not a cluster axis "
                             f"{sched.cluster_names} (at {core.where()})")
    me = w.coords
    return [b for b, c in enumerate(sched.block_coords)
            if all(c[n] == me[n] for n in sched.cluster_names if n not in axes)]


# --------------------------------------------------------------------------
# Asynchronous copies, fences, MMA


class CopyPartition:
    """How a leader-tracked collective copy splits its source:
    `PARTITIONED(axis)` gives block i of the group the i-th slice of the
    source along `axis`; `REPLICATED` gives every block all of it."""

    def __init__(self, axis=None):
        self.axis = axis

    @classmethod
    def PARTITIONED(cls, axis):  # noqa: N802 - JAX's name
        return cls(int(axis))


CopyPartition.REPLICATED = CopyPartition(None)


def copy_gmem_to_smem(src, dst, barrier, *, collective_axes=None, leader_tracked=None,
                      oob_mode=None):
    if (kc := _compile.active()) is not None:
        return kc.copy_gmem_to_smem(src, dst, barrier, collective_axes, leader_tracked)
    w = _me()
    where = core.where()
    data = _raw_load(src)
    agent = _agent("copy")
    vc = dict(w.vc)
    vc[agent] = 1
    if leader_tracked is not None:
        # Each block receives its part into its own SMEM; only the group's
        # first block tracks the copies: its barrier gets an arrival from its
        # own call and a delivery from every block's part.
        if collective_axes is None:
            raise ValueError(f"copy_gmem_to_smem: leader_tracked needs collective_axes "
                             f"(at {where})")
        axes = (collective_axes,) if isinstance(collective_axes, str) else tuple(collective_axes)
        group = _group(w, axes)
        rank = group.index(w.block)
        if leader_tracked.axis is not None:
            ax = leader_tracked.axis
            size = data.shape[ax] // len(group)
            data = lax.slice_in_dim(data, rank * size, (rank + 1) * size, axis=ax)
        twin, norm = _smem_target(dst, w.block)
        _async_write(twin, norm, data, vc, agent, w.name, where)
        leader = group[0]
        barrier.inst(leader).deliver(vc)
        if w.block == leader:
            barrier.inst(leader).arrive({}, deliveries=len(group))
    elif collective_axes is None:
        twin, norm = _smem_target(dst, w.block)
        _async_write(twin, norm, data, vc, agent, w.name, where)
        barrier.inst(w.block).arrive(vc)
    else:
        axes = (collective_axes,) if isinstance(collective_axes, str) else tuple(collective_axes)
        group = _group(w, axes)
        # Every block of the group issues this copy; each delivers its part
        # into the SMEM of all of them, and a block's barrier completes once
        # all parts arrived.
        part = (group.index(w.block), len(group))
        for b in group:
            twin, norm = _smem_target(dst, b)
            _async_write(twin, norm, data, vc, agent, w.name, where, part)
            barrier.inst(b).deliver(vc)
        barrier.inst(w.block).arrive({}, deliveries=len(group))
    w.vc[w.name] += 1


def commit_smem():
    """Makes the thread's SMEM stores visible to asynchronous copies."""
    if (kc := _compile.active()) is not None:
        return kc.commit_smem()
    _commit(_me(), "SMEM")


def copy_smem_to_gmem(src, dst, predicate=None, *, commit_group=True, reduction_op=None):
    if (kc := _compile.active()) is not None:
        return kc.copy_smem_to_gmem(src, dst, predicate, reduction_op)
    if predicate is not None and not bool(core.as_value(predicate)):
        return
    w = _me()
    where = core.where()
    agent = _agent("store")
    twin, _, region = _async_read(w, src, agent, where)
    sh = twin.shadow
    if (u := sh.uncommitted_in(region)) is not None:
        raise InterpretError(f"copy_smem_to_gmem at {where} reads SMEM {sh.name} written by "
                             f"{u} without commit_smem() after the write")
    data = _raw_load(src)
    if reduction_op is not None:
        old = _raw_load(dst)
        data = {"add": lambda a, b: a + b, "max": jnp.maximum, "min": jnp.minimum}[
            reduction_op](old, data)
    _raw_store(dst, data)
    w.pending_stores.append(agent)


def wait_smem_to_gmem(n, wait_read_only=False):
    if (kc := _compile.active()) is not None:
        return kc.wait_smem_to_gmem(n, wait_read_only)
    w = _me()
    done = w.pending_stores[:max(len(w.pending_stores) - int(n), 0)]
    w.pending_stores = w.pending_stores[len(done):]
    for agent in done:
        w.vc[agent] = 1


def commit_smem_to_gmem_group():
    """Copies commit their group when issued; nothing more to do."""


class TransposedRef:
    """`transpose_ref(ref, permutation)`: `ref` seen with its dimensions
    permuted (dimension i of the view is dimension `permutation[i]` of
    `ref`); reads and writes go to `ref`."""

    def __init__(self, ref, permutation):
        perm = tuple(int(p) for p in permutation)
        if sorted(perm) != list(range(len(ref.shape))):
            raise ValueError(f"transpose_ref: {permutation} is not a permutation of the "
                             f"{len(ref.shape)} dimensions of a {tuple(ref.shape)} ref "
                             f"(at {core.where()})")
        self.ref, self.permutation = ref, perm
        self.shape = tuple(ref.shape[p] for p in perm)
        self.dtype = ref.dtype

    def _base_index(self, idx):
        """The index of `ref` that `idx` of the view reads, and the
        permutation that puts the result's dimensions in the view's order."""
        idx = idx if isinstance(idx, tuple) else (idx,)
        if any(i is Ellipsis for i in idx):
            k = idx.index(Ellipsis)
            idx = idx[:k] + (slice(None),) * (len(self.shape) - len(idx) + 1) + idx[k + 1:]
        idx = idx + (slice(None),) * (len(self.shape) - len(idx))
        base = [None] * len(self.shape)
        for i, p in enumerate(self.permutation):
            base[p] = idx[i]
        kept = [p for p in range(len(self.shape)) if not isinstance(base[p], (int, np.integer))
                or isinstance(base[p], slice)]
        order = [kept.index(p) for i, p in enumerate(self.permutation) if p in kept]
        return tuple(base), order

    def __getitem__(self, idx):
        base, order = self._base_index(idx)
        return jnp.transpose(self.ref[base], order)

    def __setitem__(self, idx, value):
        base, order = self._base_index(idx)
        self.ref[base] = jnp.transpose(jnp.asarray(value), np.argsort(order))

    def load(self):
        """The whole view's value, without race checks (`_raw_load`)."""
        return jnp.transpose(_raw_load(self.ref), self.permutation)


def transpose_ref(ref, permutation):
    """JAX's `plgpu.transpose_ref`: `ref` with its dimensions permuted (a
    K-major B of `wgmma` is `transpose_ref(b_smem, (1, 0))`)."""
    if (kc := _compile.active()) is not None:
        return kc.transpose_ref(ref, permutation)
    return TransposedRef(ref, permutation)


def set_max_registers(n, *, action):
    """JAX's `plgpu.set_max_registers`: the calling warpgroup's threads hold
    `n` registers from here (`setmaxnreg`; nothing in the interpreter)."""
    if action not in ("increase", "decrease"):
        raise ValueError(f"set_max_registers: action must be 'increase' or 'decrease', got "
                         f"{action!r} (at {core.where()})")
    n = int(n)
    if n % 8 or not 24 <= n <= 256:
        raise ValueError(f"set_max_registers: the count must be a multiple of 8 from 24 to "
                         f"256, got {n} (at {core.where()})")
    if (kc := _compile.active()) is not None:
        return kc.set_max_registers(n, action == "increase")
    _me()


def broadcasted_iota(dtype, shape, dimension, *, layout=None):
    """JAX's `plgpu.broadcasted_iota`: `lax.broadcasted_iota` in `layout`
    (compiled for the GPU in wgmma's layout, each thread computes its
    elements' indices)."""
    if (kc := _compile.active()) is not None and getattr(layout, "name", None) == "WGMMA":
        return kc.iota(core.ShapedArray(tuple(shape), np.dtype(dtype)), int(dimension), "wgmma")
    x = lax.broadcasted_iota(dtype, shape, dimension)
    return x if layout is None else layout_cast(x, layout)


def load(src, idx=Ellipsis, *, layout=None, optimized=True):
    """JAX's `plgpu.load`: `src[idx]` (SMEM or GMEM) in `layout`."""
    x = src[idx]
    return x if layout is None else layout_cast(x, layout)


def wgmma(acc, a, b):
    """`acc += a @ b` (f32 accumulation), asynchronous until `wgmma_wait`:
    `a` and `b` (SMEM) must not be overwritten before then."""
    if (kc := _compile.active()) is not None:
        return kc.wgmma(acc, a, b)
    w = _me()
    where = core.where()
    agent = _agent("wgmma")
    vals = []
    for x in (a, b):
        if isinstance(x, TransposedRef):
            if isinstance(x.ref, (state.Ref, state.RefView)):
                base = x.ref.base if isinstance(x.ref, state.RefView) else x.ref
                if isinstance(base, _SmemRef):
                    _async_read(w, x.ref, agent, where)
            vals.append(x.load())
        elif isinstance(x, (state.Ref, state.RefView)):
            base = x.base if isinstance(x, state.RefView) else x
            if isinstance(base, _SmemRef):
                _async_read(w, x, agent, where)
            vals.append(_raw_load(x))
        else:
            vals.append(core.as_value(x))
    prod = jnp.matmul(vals[0], vals[1], preferred_element_type=acc.dtype)
    acc._value = acc._value + prod
    w.pending_mma.append(agent)


def wgmma_wait(n):
    if (kc := _compile.active()) is not None:
        return kc.wgmma_wait(n)
    w = _me()
    done = w.pending_mma[:max(len(w.pending_mma) - int(n), 0)]
    w.pending_mma = w.pending_mma[len(done):]
    for agent in done:
        w.vc[agent] = 1


def _tensor_core_read(w, x, agent, where, block=None):
    """The value of MMA operand `x` (an SMEM/TMEM ref of `block`), read by
    the tensor core as `agent` until the MMA's completion is observed."""
    twin, norm, region = _async_read(w, x, agent, where, block)
    sh = twin.shadow
    if sh.space == "TMEM" and (u := sh.uncommitted_in(region)) is not None:
        raise InterpretError(f"tcgen05_mma at {where} reads TMEM {sh.name} stored by {u} "
                             f"without commit_tmem() after the store")
    return _raw_load(state.RefView(twin, norm))


def tcgen05_mma(acc, a, b, barrier=None, *, a_scale=None, b_scale=None,
                a_sparse_metadata=None, accumulate=True, collective_axis=None):
    """`acc (TMEM) = acc * accumulate + a @ b`, run by the tensor core
    asynchronously: its completion is observed through
    `tcgen05_commit_arrive` (or `barrier`). With `collective_axis` (a
    cluster axis of size 2), the pair of blocks computes
    `[acc0; acc1] += [a0; a1] @ [b0 | b1]`; the first block of the pair
    issues it and it reads and writes both blocks' buffers."""
    if (kc := _compile.active()) is not None:
        if a_scale is not None or b_scale is not None or a_sparse_metadata is not None:
            raise NotImplementedError(f"tcgen05_mma: block-scaled and sparse MMAs are not "
                                      f"compiled (at {core.where()})")
        return kc.tcgen05_mma(acc, a, b, barrier, accumulate, collective_axis)
    if a_scale is not None or b_scale is not None or a_sparse_metadata is not None:
        raise NotImplementedError(f"tcgen05_mma: block-scaled and sparse MMAs are not "
                                  f"supported by the interpreter (at {core.where()})")
    w = _me()
    where = core.where()
    if collective_axis is None:
        blocks = [w.block]
    else:
        blocks = _group(w, (collective_axis,))
        if len(blocks) != 2:
            raise ValueError(f"tcgen05_mma: the collective axis {collective_axis!r} must have "
                             f"size 2, got {len(blocks)} (at {where})")
        if w.block != blocks[0]:
            return  # the pair's MMA is issued by its first block
    agent = _agent("mma")
    a_vals = [_tensor_core_read(w, a, agent, where, blk) for blk in blocks]
    b_vals = [_tensor_core_read(w, b, agent, where, blk) for blk in blocks]
    rhs = jnp.concatenate(b_vals, axis=1) if len(blocks) > 1 else b_vals[0]
    for blk, av in zip(blocks, a_vals):
        twin, norm = _smem_target(acc, blk)
        sh = twin.shadow
        region = sh.region(norm)
        sh.check_write(region, w.vc, w.name, where, in_order="mma")
        old = _raw_load(state.RefView(twin, norm))
        prod = jnp.matmul(av, rhs, preferred_element_type=np.float32)
        new = prod if not bool(core.as_value(accumulate)) else old.astype(np.float32) + prod
        _raw_store(state.RefView(twin, norm), new.astype(twin.dtype))
        sh.record_write(region, agent, 1, where, True, w.name, None)
    w.pending_tc.append(agent)
    if barrier is not None:
        tcgen05_commit_arrive(barrier, collective_axis=collective_axis)


def tcgen05_commit_arrive(barrier, collective_axis=None):
    """Arrives on `barrier` (of both blocks of the pair, with
    `collective_axis`) once every MMA the thread issued completed."""
    if (kc := _compile.active()) is not None:
        return kc.tcgen05_commit_arrive(barrier, collective_axis)
    w = _me()
    # A commit covers every MMA the thread issued before it, not only those
    # since the previous commit.
    w.pending_tc = [a for a in w.pending_tc if w.vc.get(a, 0) < 1]
    vc = dict(w.vc)
    for agent in w.pending_tc:
        vc[agent] = 1
    blocks = [w.block] if collective_axis is None else _group(w, (collective_axis,))
    if collective_axis is not None and w.block != blocks[0]:
        return  # the pair's MMAs are committed by its first block
    for blk in blocks:
        barrier.inst(blk).arrive(vc)
    w.vc[w.name] += 1


def async_load_tmem(src, *, layout=None):
    """The value of a TMEM ref; the read completes at `wait_load_tmem`."""
    if (kc := _compile.active()) is not None:
        return kc.async_load_tmem(src)
    w = _me()
    agent = _agent("tmem-load")
    _async_read(w, src, agent, core.where())
    w.pending_loads.append(agent)
    return _raw_load(src)


def wait_load_tmem():
    if (kc := _compile.active()) is not None:
        return kc.wait_load_tmem()
    w = _me()
    for agent in w.pending_loads:
        w.vc[agent] = 1
    w.pending_loads = []


def async_store_tmem(ref, value):
    """Stores `value` into a TMEM ref; visible to MMAs after `commit_tmem`."""
    if (kc := _compile.active()) is not None:
        return kc.async_store_tmem(ref, value)
    state.store(ref, (), value)


def commit_tmem():
    if (kc := _compile.active()) is not None:
        return kc.commit_tmem()
    _commit(_me(), "TMEM")


def find_swizzle(minor_dim_bits):
    """The largest TMA swizzle (bytes) whose span divides a row of
    `minor_dim_bits` bits."""
    for swizzle in (128, 64, 32, 16):
        if minor_dim_bits % (swizzle * 8) == 0:
            return swizzle
    raise ValueError(f"find_swizzle: no swizzle fits a row of {minor_dim_bits} bits "
                     f"(at {core.where()})")


def planar_snake(lin_idx, shape, minor_dim, tile_width):
    """The position of linear index `lin_idx` on a snake through `shape`: the
    minor dimension is cut into tiles `tile_width` wide (the last one may be
    narrower), each walked minor-fastest, every other tile with the major
    dimension reversed."""
    # (Array ops, so that a kernel compiled for the GPU computes it per
    # thread from a run-time index.)
    i = jnp.asarray(lin_idx, jnp.int32)
    minor_size, major_size = int(shape[minor_dim]), int(shape[1 - minor_dim])
    tile = i // (tile_width * major_size)
    width = jnp.minimum(tile_width, minor_size - tile * tile_width)
    within = i - tile * tile_width * major_size
    minor = tile * tile_width + within % width
    major = within // width
    major = jnp.where(tile % 2 == 1, major_size - 1 - major, major)
    pos = (minor, major) if minor_dim == 0 else (major, minor)
    return tuple(jnp.asarray(p, jnp.int32) for p in pos)


class NDLoopInfo:
    """One step of `nd_loop`: `index` (grid indices), `local_index` (the
    step's number in this block's share), `num_local_steps`."""

    def __init__(self, index, local_index, num_local_steps):
        self.index, self.local_index = index, local_index
        self.num_local_steps = num_local_steps


def _axes_position(w, axes):
    """(index, size) of the calling block along the named grid/cluster axes
    (row-major when several)."""
    sched, index, size = w.sched, 0, 1
    for a in axes:
        n = _compile.axis_extent(a, sched.grid_names, sched.grid, sched.cluster_names,
                                 sched.cluster)
        index, size = index * n + int(w.coords[a]), size * n
    return index, size


def nd_loop(grid, *, collective_axes, tiling=None, init_carry=None):
    """JAX's `plgpu.nd_loop`: runs the decorated `body(NDLoopInfo)` over the
    points of `grid` that fall to the calling block, the flat iteration
    space dealt out round robin over `collective_axes` (a persistent
    kernel's loop)."""
    if tiling is not None:
        raise NotImplementedError(f"nd_loop: tiling is not supported (at {core.where()})")
    axes = (collective_axes,) if isinstance(collective_axes, str) else tuple(collective_axes)
    grid = tuple(int(g) for g in grid)

    def decorator(body):
        if (kc := _compile.active()) is not None:
            return kc.run_nd_loop(grid, axes, init_carry, body, NDLoopInfo)
        w = _me()
        me, size = _axes_position(w, axes)
        flat = list(range(me, math.prod(grid), size))
        carry = init_carry
        for local, lin in enumerate(flat):
            idx, rest = [], lin
            for n in reversed(grid):
                idx.append(jnp.int32(rest % n))
                rest //= n
            info = NDLoopInfo(tuple(reversed(idx)), jnp.int32(local), len(flat))
            if init_carry is None:
                body(info)
            else:
                carry = body(info, carry=carry)
        return carry

    return decorator


class WarpMesh:
    """The 4 warps of a thread group, for `pl.core_map`: each runs the body,
    concurrently, with `lax.axis_index(axis_name)` its warp index. A warp
    keeps its barrier phases from one `core_map` to the next."""

    num_warps = 4

    def __init__(self, axis_name):
        self.axis_name = axis_name

    def run(self, fn):
        if (kc := _compile.active()) is not None:
            return kc.warp_map(self.axis_name, fn)
        w = _me()
        children = []
        for i in range(self.num_warps):
            key = (self.axis_name, i)
            if key not in w.children:
                c = _Worker(w.sched, f"{w.name} warp {i}", w.block, w.thread,
                            dict(w.coords, **{self.axis_name: i}),
                            scope=f"{w.scope}/{self.axis_name} {i}")
                w.children[key] = c
            children.append(w.children[key])
        w.sched.spawn(w, children, fn)


def _axis_index(name):
    if (kc := _compile.active()) is not None:
        return kc.axis_index(name)
    w = getattr(_local, "worker", None)
    if w is None or name not in w.coords:
        return None
    return jnp.int32(w.coords[name])


lax.axis_index_providers.append(_axis_index)


def _grid_env():
    w = getattr(_local, "worker", None)
    if w is None:
        return None
    sched = w.sched
    return tuple(jnp.int32(w.coords[n]) for n in sched.grid_names), sched.grid


pl_core.grid_env_providers.append(_grid_env)


class BlockSpec(pl_core.BlockSpec):
    """A GPU BlockSpec: `transforms` (SMEM layout; the interpreter keeps
    logical layouts), `delay_release` (pipeline steps a slot stays in use
    after its step: asynchronous wgmma still reading it), `collective_axes`."""

    def __init__(self, block_shape=None, index_map=None, pipeline_mode=None, *,
                 memory_space=None, transforms=(), delay_release=0, collective_axes=()):
        super().__init__(block_shape, index_map, pipeline_mode, memory_space=memory_space)
        self.transforms, self.delay_release = tuple(transforms), int(delay_release)
        self.collective_axes = tuple(collective_axes)


def _alloc(w, shape, dtype, name):
    """SMEM allocated while the kernel runs (emit_pipeline's buffers), in the
    calling thread's block."""
    shape = tuple(shape)
    ref = _SmemRef(state.uninitialized(shape, dtype),
                   _Shadow(shape, w.block, name))
    ref.twins = {w.block: ref}
    w.sched.smem_refs[w.block].append(ref)
    return ref


def _block_shared(w, key, make):
    """What `make()` returns, made once per block for `key`: buffers and
    barriers that every thread group of the block shares."""
    table = w.sched.shared_allocs
    if (w.block, key) not in table:
        table[(w.block, key)] = make()
    return table[(w.block, key)]


def emit_pipeline_warp_specialized(body, *, grid, memory_registers=None, in_specs=(),
                                   out_specs=(), max_concurrent_steps=2, wg_axis,
                                   num_compute_wgs, pipeline_state=None,
                                   manual_consumed_barriers=False, compute_context=None,
                                   memory_thread_idx=None):
    """JAX's warp-specialized pipeline: one thread group (`memory_thread_idx`,
    by default the last) copies input blocks into a ring of SMEM slots; the
    `num_compute_wgs` compute groups wait for a slot, run `body(indices,
    *in_smem, [carry])`, and release the slot to the memory group through a
    barrier. Reading the accumulator at the end of a step completes the
    step's wgmma (as JAX's accumulator dereference does). With
    `compute_context`, the compute groups run `compute_context(pipeline)`,
    where `pipeline(init_carry)` runs the steps and returns the last carry.
    Every thread group of the block meets at a barrier when the pipeline
    ends. With `manual_consumed_barriers`, each input has its own consumed
    barriers: the body gets the step's one of each after its SMEM refs and
    arrives on them itself (a slot of an input is refilled once the
    compute groups released it)."""
    if out_specs:
        raise NotImplementedError(
            f"emit_pipeline_warp_specialized: output specs are not supported "
            f"(at {core.where()})")
    nconsumed = len(in_specs) if manual_consumed_barriers else 1
    grid = tuple(int(g) for g in grid)
    steps = list(itertools.product(*[range(g) for g in grid]))
    slots = int(max_concurrent_steps)
    mem = memory_thread_idx if memory_thread_idx is not None else num_compute_wgs

    def run(*gmem_refs):
        kc = _compile.active()
        if kc is not None:
            # Compiled: the body is traced once for every warpgroup; the
            # buffers and barriers are the block's, and the warpgroup's
            # index picks its role at run time.
            nthreads = kc.nthreads
            bufs = [kc.alloc_smem((slots,) + tuple(s.block_shape), r.dtype, f"pipeline input {i}",
                                  getattr(s, "transforms", ()), shared=True)
                    for i, (s, r) in enumerate(zip(in_specs, gmem_refs))]
            full = kc.alloc_barriers(len(in_specs), slots, shared=True)
            consumed = [kc.alloc_barriers(num_compute_wgs, slots, shared=True)
                        for _ in range(nconsumed)]
            done = kc.alloc_barriers(nthreads, 1, shared=True)
        else:
            w = _me()
            where = core.where()
            nthreads = w.sched.nthreads
            # Every thread group builds its own pipeline object; they share
            # the buffers of the same call (site and count) in the block.
            k = w.pipeline_calls[where] = w.pipeline_calls.get(where, 0) + 1

            def make():
                bufs = [_alloc(w, (slots,) + tuple(s.block_shape), r.dtype,
                               f"pipeline input {i}")
                        for i, (s, r) in enumerate(zip(in_specs, gmem_refs))]
                for b in bufs:  # shared by the block's thread groups
                    b.twins = {w.block: b}
                full = _BarrierRef(Barrier(len(in_specs), slots), {w.block: [
                    _BarrierInst(len(in_specs), where) for _ in range(slots)]})
                consumed = [_BarrierRef(Barrier(num_compute_wgs, slots), {w.block: [
                    _BarrierInst(num_compute_wgs, where) for _ in range(slots)]})
                    for _ in range(nconsumed)]
                done = _BarrierRef(Barrier(nthreads), {w.block: [_BarrierInst(nthreads, where)]})
                return bufs, full, consumed, done

            bufs, full, consumed, done = _block_shared(w, (where, k), make)

        def memory():
            for t, point in enumerate(steps):
                slot = t % slots
                idx = tuple(jnp.int32(i) for i in point)
                for i, (spec, ref, buf) in enumerate(zip(in_specs, gmem_refs, bufs)):
                    if t >= slots and (manual_consumed_barriers or i == 0):
                        barrier_wait(consumed[i].at[slot])
                    copy_gmem_to_smem(_gmem_block(ref, spec, idx), buf.at[slot], full.at[slot])

        def pipeline(init_carry=None):
            c = init_carry
            for t, point in enumerate(steps):
                slot = t % slots
                barrier_wait(full.at[slot])
                idx = tuple(jnp.int32(i) for i in point)
                views = [buf.at[slot] for buf in bufs]
                if manual_consumed_barriers:
                    views += [b.at[slot] for b in consumed]
                if compute_context is None:
                    body(idx, *views)
                else:
                    c = body(idx, *views, c)
                if not manual_consumed_barriers:
                    wgmma_wait(0)
                    barrier_arrive(consumed[0].at[slot])
            return c

        def compute():
            return pipeline() if compute_context is None else compute_context(pipeline)

        carry = None
        if kc is not None:
            wg = _axis_index(wg_axis)
            # With `memory_registers`, the memory group gives registers up
            # and the compute groups take them (setmaxnreg).
            regs = kc.register_split(memory_registers, num_compute_wgs)

            def role(f, count, more):
                def run_role():
                    if count is not None:
                        kc.set_max_registers(count, more)
                    f()
                return run_role

            kc.run_when(wg == mem, role(memory, regs[0], False))
            # (A carry leaves the compute groups' branch through their refs
            # only: the compiled pipeline returns None.)
            kc.run_when(wg != mem, role(compute, regs[1], True))
        elif int(w.coords[wg_axis]) == mem:
            memory()
        else:
            carry = compute()
        barrier_arrive(done)
        barrier_wait(done)
        return carry

    return run


def _gmem_block(ref, spec, idx):
    """The window of GMEM `ref` that `spec` maps pipeline step `idx` to."""
    block = spec.index_map(*idx)
    if not isinstance(block, (tuple, list)):
        block = (block,)
    return ref.at[tuple(state.Slice(b * n, n) for b, n in zip(block, spec.block_shape))]


def emit_pipeline(body, *, grid, in_specs=(), out_specs=(), max_concurrent_steps=1,
                  delay_release=0, init_carry=None):
    """JAX's `plgpu.emit_pipeline`: a function of GMEM refs that runs
    `body(indices, *in_smem, *out_smem)` for every point of `grid`,
    streaming input blocks into a ring of `max_concurrent_steps` SMEM slots
    with TMA-style copies and barriers (and output blocks back out). A slot
    is refilled `delay_release` steps after its step (asynchronous wgmma
    still reading it; the race checks hold the body to that)."""
    grid = tuple(int(g) for g in grid)
    delay = max([delay_release] + [getattr(s, "delay_release", 0) for s in in_specs])
    slots = int(max_concurrent_steps)
    if slots <= delay:
        raise ValueError(f"emit_pipeline: max_concurrent_steps ({slots}) must exceed "
                         f"delay_release ({delay}) (at {core.where()})")
    steps = list(itertools.product(*[range(g) for g in grid]))

    def run(*gmem_refs):
        # Buffers and barriers of the calling thread group: the
        # interpreter's, or those of the kernel being compiled.
        if (kc := _compile.active()) is not None:
            alloc, barriers = kc.alloc_smem, kc.alloc_barriers
        else:
            w = _me()

            def alloc(shape, dtype, name, transforms=()):
                return _alloc(w, shape, dtype, name)

            def barriers(arrivals, n):
                return _BarrierRef(Barrier(arrivals, n),
                                   {w.block: [_BarrierInst(arrivals, core.where())
                                              for _ in range(n)]})

        ins, outs = gmem_refs[:len(in_specs)], gmem_refs[len(in_specs):]
        in_bufs = [alloc((slots,) + tuple(s.block_shape), r.dtype, f"pipeline input {k}",
                         getattr(s, "transforms", ()))
                   for k, (s, r) in enumerate(zip(in_specs, ins))]
        out_bufs = [alloc((slots,) + tuple(s.block_shape), r.dtype, f"pipeline output {k}",
                          getattr(s, "transforms", ()))
                    for k, (s, r) in enumerate(zip(out_specs, outs))]
        bars = barriers(len(in_specs), slots)

        def fetch(t):
            idx = tuple(jnp.int32(i) for i in steps[t])
            for spec, ref, buf in zip(in_specs, ins, in_bufs):
                copy_gmem_to_smem(_gmem_block(ref, spec, idx), buf.at[t % slots],
                                  bars.at[t % slots])

        if in_specs:
            for t in range(min(slots - delay, len(steps))):
                fetch(t)
        carry = init_carry
        for t, point in enumerate(steps):
            idx = tuple(jnp.int32(i) for i in point)
            if in_specs:
                barrier_wait(bars.at[t % slots])
            if out_specs and t >= slots:
                wait_smem_to_gmem(slots - 1, wait_read_only=True)
            views = [buf.at[t % slots] for buf in in_bufs + out_bufs]
            if init_carry is None:
                body(idx, *views)
            else:
                carry = body(idx, *views, carry)
            if out_specs:
                commit_smem()
                for spec, ref, buf in zip(out_specs, outs, out_bufs):
                    copy_smem_to_gmem(buf.at[t % slots], _gmem_block(ref, spec, idx))
            nxt = t + slots - delay
            if in_specs and nxt < len(steps):
                fetch(nxt)
        if out_specs:
            wait_smem_to_gmem(0)
        return carry

    return run


# --------------------------------------------------------------------------
# kernel


def kernel(body=None, out_shape=None, *, out_type=None, scratch_shapes=(), scratch_types=(),
           compiler_params=None, grid=(), grid_names=(), cluster=(), cluster_names=(),
           num_threads=None, thread_name=None, interpret=None, **mesh_kwargs):
    """JAX's `plgpu.kernel`: `kernel(body, out_shape, ...)(*inputs)` runs
    `body(*input_refs, *output_refs, *scratch_refs)` once per thread group
    of every block. `grid` counts clusters; `lax.axis_index` of a grid,
    cluster or thread name is the calling block's (or group's) index."""
    if body is None:
        return lambda b: kernel(b, out_shape, out_type=out_type, scratch_shapes=scratch_shapes,
                                scratch_types=scratch_types, compiler_params=compiler_params,
                                grid=grid, grid_names=grid_names, cluster=cluster,
                                cluster_names=cluster_names, num_threads=num_threads,
                                thread_name=thread_name, interpret=interpret)
    out = out_type if out_type is not None else out_shape
    scratch = scratch_types or scratch_shapes
    kernel_body = body
    # Under JAX's Warpgroup lowering semantics SMEM transforms are inferred.
    warpgroup_semantics = getattr(compiler_params, "lowering_semantics",
                                  None) is LoweringSemantics.Warpgroup
    grid, cluster = tuple(int(g) for g in grid), tuple(int(c) for c in cluster)
    if len(grid_names) != len(grid) or len(cluster_names) != len(cluster):
        raise ValueError(f"plgpu.kernel: grid_names and cluster_names must name every grid "
                         f"and cluster dimension (at {core.where()})")
    if (num_threads is None) != (thread_name is None):
        raise ValueError(f"plgpu.kernel: num_threads and thread_name go together "
                         f"(at {core.where()})")

    def call(*args):
        leaves = tree_util.tree_leaves(args)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        body = _structured(kernel_body, args, out)

        def interpret(*xs):
            return _interpret(body, [core.as_value(x) for x in xs], out_leaves, scratch, grid,
                              tuple(grid_names), cluster, tuple(cluster_names),
                              num_threads or 1, thread_name)

        if any(isinstance(x, core.Tracer) for x in leaves) or core._trace_stack:
            outs = traced(body, leaves, out_leaves, interpret)
        else:
            outs = interpret(*leaves)
        return tree_util.tree_unflatten(out_tree, outs)

    def traced(body, leaves, out_leaves, interpret):
        """Inside jit (and vmap: one example at a time) the interpreter runs
        on the host when the compiled program reaches the kernel, from a
        private function that also carries the kernel compiled for the GPU
        (which a program lowered for cuda launches instead, when the kernel
        needs no TMA descriptors: targets/cuda.py)."""
        from ..._mlir import ir
        from .. import ad
        from ..callback import pure_callback
        from ..targets import cuda as cuda_target

        flat = [core.as_value(x) for x in leaves]
        specs = [core.ShapeDtypeStruct(o.shape, o.dtype) for o in out_leaves]

        def host(*xs):
            return pure_callback(lambda *ys: interpret(*ys), specs, *xs,
                                 vmap_method="sequential")

        kname = getattr(body, "__name__", "kernel")
        name, out_avals, captured = core.trace_subfunction(
            host, [v.aval for v in flat], name=f"plgpu_{kname}", sources=flat)
        in_avals = [core.ShapedArray(v.shape, v.dtype) for v in flat]
        outs_k = [core.ShapedArray(tuple(o.shape), np.dtype(o.dtype)) for o in out_leaves]

        def make():
            return _compile.lower(body, in_avals, outs_k, scratch, grid, tuple(grid_names),
                                  cluster, tuple(cluster_names), num_threads or 1,
                                  thread_name, name=f"{name}_gpu",
                                  infer_transforms=warpgroup_semantics).kernel_text()

        key = cuda_target.register_kernel(f"plgpu:{id(body)}:{name}:{in_avals}", make)
        with core.context():
            core.find_function(name).attributes[cuda_target.KERNEL_ATTR] = \
                ir.StringAttr.get(key)
        return ad._call(name, flat + captured, out_avals)

    def lower(*args, chip=None):
        """Ember (not in JAX): the kernel compiled for an NVIDIA GPU, for
        arguments shaped like `args` (arrays or ShapeDtypeStructs); see
        `mosaic_gpu_compile.CompiledKernel`."""
        body = _structured(kernel_body, args, out)
        in_avals = [core.ShapedArray(tuple(x.shape), np.dtype(x.dtype))
                    for x in tree_util.tree_leaves(args)]
        out_avals = [core.ShapedArray(tuple(o.shape), np.dtype(o.dtype))
                     for o in tree_util.tree_leaves(out)]
        return _compile.lower(body, in_avals, out_avals, scratch, grid, tuple(grid_names),
                              cluster, tuple(cluster_names), num_threads or 1, thread_name,
                              chip, infer_transforms=warpgroup_semantics)

    call.lower = lower
    return call


_structured_bodies = weakref.WeakKeyDictionary()


def _structured(body, args, out):
    """`body` taking flat refs (the leaves of the operands, then of the
    outputs, then the scratch refs): as in JAX, the body gets one argument
    per operand and per element of a tuple or list `out_type` (one for any
    other `out_type`), each a pytree of refs shaped as that operand or
    element (None for a None element, which has no output). One wrapper
    per body and structure, so the compiled kernel is cached by it."""
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    trees = tuple(tree_util.tree_structure(x) for x in (*args, *outs))
    if all(t.num_leaves == 1 and t.num_nodes == 1 for t in trees):
        return body  # every argument a single ref: nothing to arrange
    try:
        cache = _structured_bodies.setdefault(body, {})
    except TypeError:  # not weakly referable: a wrapper per call
        cache = {}
    if trees not in cache:
        counts = [t.num_leaves for t in trees]

        @functools.wraps(body)
        def arranged(*refs, **scratch):
            grouped, k = [], 0
            for t, n in zip(trees, counts):
                grouped.append(tree_util.tree_unflatten(t, refs[k:k + n]))
                k += n
            return body(*grouped, *refs[k:], **scratch)

        cache[trees] = arranged
    return cache[trees]


def _make_scratch(t, nblocks, name, smem_refs, sched):
    """Per-block instances of one scratch type: a list indexed by block."""
    where = core.where()
    if isinstance(t, (Barrier, ClusterBarrier)):
        n = t.num_arrivals
        if isinstance(t, ClusterBarrier):  # every block of its group arrives
            n *= math.prod(sched.cluster[sched.cluster_names.index(a)]
                           for a in t.collective_axes if a in sched.cluster_names)
        insts = [[_BarrierInst(n, where) for _ in range(t.num_barriers)]
                 for _ in range(nblocks)]
        return _BarrierRef(t, insts)
    if isinstance(t, _BufferType) and t.space is GMEM:
        raise NotImplementedError(f"GMEM scratch is not supported (at {where})")
    shape, dtype = tuple(t.shape), np.dtype(t.dtype)
    space = "TMEM" if isinstance(t, TMEM) else "SMEM"
    twins = [_SmemRef(state.uninitialized(shape, dtype), _Shadow(shape, b, name, space))
             for b in range(nblocks)]
    for b, r in enumerate(twins):
        r.twins = twins
        smem_refs[b].append(r)
    return twins


def interpreting():
    """Whether this thread runs a kernel in the interpreter."""
    return getattr(_local, "worker", None) is not None


# `pl.run_scoped` and `pl.run_state` (pallas/core.py) ask this module
# whether a kernel runs here and for its buffers.
pl_core.kernel_interpreter = sys.modules[__name__]


def scoped_allocator(axes):
    """`pl.run_scoped` in a kernel the interpreter runs: a function making
    the buffer of a scratch type (SMEM with race checks, barriers, an
    accumulator), or None outside a kernel. Every thread of the kernel
    makes the same sequence of calls, so the k-th call of each shares its
    buffers with the k-th call of the others along `axes` (the thread axis:
    one allocation per block) and of its peer blocks (cluster copies see
    them as twins); the warps of a `core_map(WarpMesh)` are scopes of their
    own (warp i's calls pair with warp i's)."""
    w = getattr(_local, "worker", None)
    if w is None:
        return None
    sched = w.sched
    for a in axes:
        if a != sched.thread_name:
            raise NotImplementedError(f"run_scoped: collective_axes other than the kernel's "
                                      f"thread axis {sched.thread_name!r} (got {a!r}; at "
                                      f"{core.where()})")
    call = w.scoped_calls
    w.scoped_calls += 1
    k = 0

    def new(t):
        nonlocal k
        if t is None:
            return None
        if isinstance(t, ACC):
            return _AccRef(t.initial_value())
        key = (w.scope, call, k, None if axes else w.thread)
        k += 1
        if key not in sched.scoped:
            # (The first call is the kernel's own scratch.)
            name = (f"scratch {k - 1}" if call == 0 and not w.scope else
                    f"run_scoped buffer {call}.{k - 1}")
            sched.scoped[key] = _make_scratch(t, len(sched.block_coords), name,
                                              sched.smem_refs, sched)
        inst = sched.scoped[key]
        return inst[w.block] if isinstance(inst, list) else inst

    return new


def _interpret(body, ins, outs, scratch, grid, grid_names, cluster, cluster_names, nthreads,
               thread_name):
    gmem_in = [state.Ref(x) for x in ins]
    gmem_out = [state.Ref(state.uninitialized(o.shape, o.dtype)) for o in outs]
    cluster = cluster or ()
    nblocks = math.prod(cluster)
    prev, prev_kernel = _config.jax_disable_jit, _config.ember_interpreting_kernel
    _config.jax_disable_jit = _config.ember_interpreting_kernel = True
    try:
        for gidx in itertools.product(*[range(g) for g in grid]):
            _run_cluster(body, gmem_in, gmem_out, scratch, dict(zip(grid_names, gidx)), grid,
                         cluster, cluster_names, nblocks, nthreads, thread_name)
    finally:
        _config.jax_disable_jit, _config.ember_interpreting_kernel = prev, prev_kernel
    return [r._value for r in gmem_out]


def _run_cluster(body, gmem_in, gmem_out, scratch, grid_coords, grid_sizes, cluster,
                 cluster_names,
                 nblocks, nthreads, thread_name):
    sched = _Scheduler()
    sched.cluster_names = cluster_names
    sched.grid_names, sched.grid = tuple(grid_coords), tuple(grid_sizes)
    sched.cluster = tuple(cluster)
    sched.block_coords = [dict(zip(cluster_names, c))
                          for c in itertools.product(*[range(n) for n in cluster])] or [{}]
    sched.smem_refs = [[] for _ in range(nblocks)]
    sched.shared_allocs, sched.nthreads = {}, nthreads
    sched.thread_name, sched.scoped = thread_name, {}
    # As in JAX, the kernel's scratch is a `run_scoped` around the body,
    # shared by the thread groups of a block (`scoped_allocator`); scratch
    # given as a dict reaches the body as keyword arguments.
    if isinstance(scratch, dict):
        types, kw_types = [], scratch
    else:
        types = list(scratch) if isinstance(scratch, (list, tuple)) else [scratch]
        kw_types = {}
    workers = []
    for b in range(nblocks):
        for t in range(nthreads):
            coords = dict(grid_coords)
            coords.update(sched.block_coords[b])
            if thread_name is not None:
                coords[thread_name] = t
            name = f"block {b}" + (f" thread {t}" if nthreads > 1 else "")
            workers.append(_Worker(sched, name, b, t, coords))

    def run(w):
        def scoped(*refs, **kw_refs):
            if body(*gmem_in, *gmem_out, *refs, **kw_refs) is not None:
                raise ValueError("a plgpu kernel body must return None")

        pl_core.run_scoped(scoped, *types, collective_axes=thread_name or (), **kw_types)

    sched.run(workers, run)
    for s in sched.scoped.values():
        if isinstance(s, _BarrierRef):
            for b, row in enumerate(s.insts):
                for inst in row:
                    if inst.arrived:
                        raise InterpretError(
                            f"barrier allocated at {inst.where}: the last phase of block {b}'s "
                            f"barrier got {inst.arrived} of its {inst.n} arrivals")
