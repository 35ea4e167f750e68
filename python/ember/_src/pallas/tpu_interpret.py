"""The checked interpreter of TPU Pallas kernels (`interpret=
pltpu.InterpretParams(...)`).

The kernel runs eagerly, grid step by grid step (last axis fastest), on
refs that watch their accesses, with DMAs asynchronous: a copy reads its
source when it starts and lands in its destination when it is waited for
(`dma_execution_mode="on_wait"`; "eager" lands it at the start). Inside
`shard_map` over one mesh axis every device runs the kernel in a thread of
its own (`scheduler.py`: one at a time, switching only at waits), with its
own buffers; remote DMAs (`make_async_remote_copy`) copy into the same
buffer of another device and remote `semaphore_signal`s count there, so
devices really wait for each other.

Races are found with vector clocks, whatever the interleaving: every
device and every DMA is an agent; a semaphore signal (a DMA's completion
signals its semaphores) publishes the signaller's clock and a wait
acquires it, and each buffer keeps the accesses not yet ordered before
the others. Misuse is an `InterpretError` naming the kernel's lines:

- reading or writing a window a DMA writes before waiting for it;
- writing a window a DMA still reads (its send not waited for);
- a DMA into a window another DMA reads or writes, or (from another
  device) into a window its device accessed with no semaphore ordering
  that access before the copy (the receiver may still be reading it);
- waiting on a semaphore that no DMA or signal will reach (on one device
  at once; over several, when no device can proceed: a deadlock, with
  each device's stuck wait), and a DMA never waited for when the kernel
  ends (on either side of a remote copy);
- regular semaphores left non-zero at the end;
- VMEM the kernel needs beyond its limit: the windowed blocks (two of each,
  as the pipeline double-buffers them) plus VMEM scratch, against
  `CompilerParams(vmem_limit_bytes=)` or Ember's default of 16 MiB; SMEM
  (scalar prefetch, SMEM blocks and scratch) against
  `InterpretParams(smem_limit_bytes=)` when given.

Under `jit` (or another transformation) the same interpreter runs on the
call's values through a host callback (pallas/core.py).
"""

import itertools
import threading

import numpy as np

from .. import core, parallel, state
from ..config import config as _config
from ..numpy import lax_numpy as jnp
from . import prng_state, scheduler


class InterpretParams:
    """JAX's `pltpu.InterpretParams`: interpret the kernel on the CPU with
    race and semaphore checks. Other JAX options are accepted and unused."""

    def __init__(self, *, detect_races=True, dma_execution_mode="on_wait",
                 smem_limit_bytes=None, **kw):
        if dma_execution_mode not in ("on_wait", "eager"):
            raise ValueError(f"InterpretParams: dma_execution_mode must be 'on_wait' or "
                             f"'eager', got {dma_execution_mode!r}")
        self.detect_races = bool(detect_races)
        self.dma_execution_mode = dma_execution_mode
        self.smem_limit_bytes = smem_limit_bytes
        self.options = kw


DEFAULT_VMEM_LIMIT = 16 * 1024 * 1024


def _space_name(space):
    name = getattr(space, "name", None) or "VMEM"
    return name.rsplit(".", 1)[-1].upper()


def check_capacity(kname, prefetch, in_blocks, out_blocks, scratch_types, compiler_params,
                   params):
    """The VMEM (and, when limited, SMEM) a kernel needs fits."""
    smem = sum(int(np.prod(p.shape)) * np.dtype(p.dtype).itemsize for p in prefetch)
    vmem = 0
    for b in in_blocks + out_blocks:
        space = _space_name(b.memory_space)
        if b.whole and space in ("ANY", "HBM"):
            continue
        nbytes = int(np.prod(b.sizes)) * b.dtype.itemsize
        if space == "SMEM":
            smem += nbytes
        else:
            vmem += 2 * nbytes  # double-buffered by the pipeline
    for t in scratch_types:
        space = _space_name(getattr(t, "memory_space", None))
        nbytes = int(np.prod(t.shape)) * np.dtype(t.dtype).itemsize
        if space == "SMEM":
            smem += nbytes
        elif space == "VMEM":
            vmem += nbytes
    limit = getattr(compiler_params, "vmem_limit_bytes", None) or DEFAULT_VMEM_LIMIT
    if vmem > limit:
        raise InterpretError(
            f"in kernel {kname}: the kernel needs {vmem} bytes of VMEM (its blocks, two of "
            f"each, and VMEM scratch), over the limit of {limit} (raise it with "
            f"pltpu.CompilerParams(vmem_limit_bytes=...) or use smaller blocks)")
    if params.smem_limit_bytes is not None and smem > params.smem_limit_bytes:
        raise InterpretError(
            f"in kernel {kname}: the kernel needs {smem} bytes of SMEM, over the limit of "
            f"{params.smem_limit_bytes}")


class InterpretError(RuntimeError):
    """Misuse of DMAs or semaphores found by the checked interpreter."""


_local = threading.local()


def active():
    """The device (`_Device`) whose kernel runs on this thread, if any."""
    return getattr(_local, "worker", None)


def _region(norm, shape):
    """Per-dimension [lo, hi) intervals an index covers."""
    out = []
    for kind, s in norm:
        if kind == "ds":
            lo = int(s.start)
            out.append((lo, lo + (s.size - 1) * s.stride + 1 if s.size else lo))
        elif kind == "at":
            i = int(s)
            out.append((i, i + 1))
        else:
            idx = np.asarray(s).ravel()
            out.append((int(idx.min()), int(idx.max()) + 1) if idx.size else (0, 0))
    out += [(0, n) for n in shape[len(out):]]
    return tuple(out)


def _overlap(a, b):
    return all(lo1 < hi2 and lo2 < hi1 for (lo1, hi1), (lo2, hi2) in zip(a, b))


def _inside(a, b):
    return all(lo2 <= lo1 and hi1 <= hi2 for (lo1, hi1), (lo2, hi2) in zip(a, b))


class _Access:
    """An access of a buffer: by `agent` (a device's or a DMA's name) at
    its clock `clk`; `dma` is the DMA for its accesses."""

    __slots__ = ("region", "write", "agent", "clk", "where", "dma")

    def __init__(self, region, write, agent, clk, where, dma):
        self.region, self.write, self.agent, self.clk = region, write, agent, clk
        self.where, self.dma = where, dma


class _Ref(state.Ref):
    """A kernel buffer of one device, whose accesses the checker watches;
    `slot` names the same buffer on every device (remote DMAs)."""

    def __init__(self, value, name, device, slot):
        super().__init__(value)
        self.name, self.device, self.slot = name, device, slot
        self.log = []  # accesses not superseded (_Access)

    @property
    def label(self):
        if len(self.device.world.devices) == 1:
            return self.name
        return f"{self.name} of device {self.device.index}"

    def _access(self, kind, norm):
        dev = active()
        if dev is None or dev.world.internal:
            return
        dev.access(self, kind != "load", _region(norm, self.shape), core.where())

    def record(self, acc):
        """Adds an access, dropping those it supersedes and those every
        device has synchronized with (any later access is ordered after
        them)."""
        devices = self.device.world.devices

        def stale(a):
            if acc.write and _inside(a.region, acc.region):
                return True
            if not acc.write and not a.write and a.agent == acc.agent and a.region == acc.region:
                return True
            return all(d.vc.get(a.agent, 0) >= a.clk for d in devices)

        self.log = [a for a in self.log if not stale(a)]
        self.log.append(acc)


def _end(ref, what):
    """(base ref, normalized index, region) of a DMA end or semaphore."""
    if isinstance(ref, state.RefView):
        base, norm = ref.base, ref.norm
    else:
        base, norm = ref, ref.compose((), what)
    if not isinstance(base, _Ref):
        raise TypeError(f"{what}: expected a kernel buffer, got {type(base).__name__} "
                        f"(at {core.where()})")
    return base, norm, _region(norm, base.shape)


class _Dma:
    """A DMA in flight: it read `data` from its source when it started and
    writes it into `dst` (on the receiving device) when it lands."""

    def __init__(self, name, origin, where, src, dst, dst_norm, dst_region, recv_key, send_key,
                 data, vc):
        self.name, self.origin, self.where = name, origin, where
        self.src, self.dst, self.dst_norm, self.dst_region = src, dst, dst_norm, dst_region
        self.recv_key, self.send_key = recv_key, send_key  # send_key None: a local DMA
        self.data, self.vc = data, vc
        self.landed = self.received = False
        self.sent = send_key is None

    @property
    def at(self):
        """Where it started, for messages."""
        if len(self.origin.world.devices) == 1:
            return self.where
        return f"{self.where} on device {self.origin.index}"


def _join(a, b):
    for k, v in b.items():
        if a.get(k, 0) < v:
            a[k] = v


class _World:
    """The devices of one checked kernel call, their DMAs in flight and
    their regular semaphores (counts and published clocks)."""

    def __init__(self, params, kname, ndevices, axis):
        self.params, self.kname, self.axis = params, kname, axis
        self.devices = [_Device(self, d) for d in range(ndevices)]
        self.dmas = []
        self.ndmas = 0
        self.sems, self.sem_clocks, self.sem_names = {}, {}, {}
        self.internal = False
        self.sched = scheduler.Scheduler(_local, self._deadlock) if ndevices > 1 else None

    def error(self, msg):
        raise InterpretError(f"in kernel {self.kname}: {msg}")

    def _deadlock(self, stuck):
        return InterpretError(f"in kernel {self.kname}: deadlock: no device can proceed; each "
                              f"waits for what no other device will send:\n  "
                              + "\n  ".join(stuck))

    def raw(self, fn):
        """`fn()` with the checker's own accesses unwatched."""
        self.internal = True
        try:
            return fn()
        finally:
            self.internal = False

    def finish(self):
        for d in self.dmas:
            if not d.received:
                where = ("" if len(self.devices) == 1 or d.dst.device is d.origin
                         else f" (on device {d.dst.device.index})")
                self.error(f"the DMA started at {d.at} into {d.dst.label} was never waited "
                           f"for{where}")
            self.error(f"the DMA started at {d.at} into {d.dst.label} was never waited for on "
                       f"its sending side (wait_send, or wait)")
        for key, n in self.sems.items():
            if n:
                self.error(f"semaphore {self.sem_names[key]} holds {n} when the kernel ends "
                           f"(every signal needs its wait)")


class _Device(scheduler.Worker):
    """One device running the kernel: its clock and its buffers by slot."""

    def __init__(self, world, index):
        super().__init__(f"device {index}")
        self.world, self.index = world, index
        self.vc = {self.name: 1}
        self.slots = {}
        self.scoped_count = 0

    def tick(self):
        self.vc[self.name] += 1

    def buffer(self, value, name, slot):
        r = self.slots.get(slot)
        if r is None or slot[0] in ("in", "out"):
            r = self.slots[slot] = _Ref(value, name, self, slot)
        return r

    def block(self, ready, what):
        """Waits until `ready()`; on one device a wait that cannot return
        now never will (`what` says why)."""
        if ready():
            return
        w = self.world
        if w.sched is None:
            w.error(what)
        w.sched.block_until(self, ready, what)

    # -- accesses ------------------------------------------------------------
    def ordered(self, acc, vc=None):
        return (self.vc if vc is None else vc).get(acc.agent, 0) >= acc.clk

    def access(self, ref, write, region, where):
        if not self.world.params.detect_races:
            return
        for a in ref.log:
            if a.dma is None or not _overlap(a.region, region) or self.ordered(a):
                continue
            if a.write:
                verb = "writes" if write else "reads"
                self.world.error(f"{where} {verb} {ref.label} while the DMA into it started at "
                                 f"{a.dma.at} is in flight (wait for it first)")
            if write:
                self.world.error(f"{where} overwrites {ref.label} while the DMA started at "
                                 f"{a.dma.at} is still reading it (wait for it first)")
        if len(self.world.devices) > 1:
            # (Only a copy from another device can be unordered with them.)
            ref.record(_Access(region, write, self.name, self.vc[self.name], where, None))

    def scoped(self, t):
        """A `pl.run_scoped` buffer of scratch type `t`, watched as the
        kernel's own buffers are (semaphores start at zero); the k-th of
        each device is the same buffer for remote DMAs."""
        self.scoped_count += 1
        init = (jnp.zeros(t.shape, t.dtype) if getattr(t, "semaphore_kind", None)
                else state.uninitialized(tuple(t.shape), t.dtype))
        return self.buffer(init, f"scoped buffer {self.scoped_count - 1}",
                           ("scoped", self.scoped_count - 1))

    def barrier_semaphore(self):
        return self.buffer(jnp.zeros((), np.int32), "get_barrier_semaphore()",
                           ("barrier",))

    # -- devices ---------------------------------------------------------------
    def target(self, device_id, what):
        """The index of the device `device_id` names (JAX's mesh
        coordinates or logical id, over the one mesh axis)."""
        w = self.world
        if isinstance(device_id, dict):
            if len(device_id) != 1 or w.axis not in device_id:
                raise NotImplementedError(
                    f"pltpu.{what}: device_id {device_id!r} in the checked interpreter must "
                    f"name the one mesh axis of its shard_map ({w.axis!r}) (at {core.where()})")
            device_id = device_id[w.axis]
        if isinstance(device_id, (tuple, list)):
            if len(device_id) != 1:
                raise ValueError(f"pltpu.{what}: device_id {device_id!r} must have one "
                                 f"coordinate per mesh axis (at {core.where()})")
            device_id = device_id[0]
        t = int(np.asarray(device_id))
        n = len(w.devices)
        if not 0 <= t < n:
            where = "" if w.axis is not None else " (not under shard_map)"
            w.error(f"{what} at {core.where()} names device {t}, but the kernel runs on {n} "
                    f"device{'s' if n > 1 else ''}{where}")
        return t

    def _sem_key(self, sem, what, device=None):
        base, _, region = _end(sem, what)
        dev = self if device is None else self.world.devices[device]
        idx = tuple(lo for lo, _ in region)
        key = (dev.index, base.slot, idx)
        name = base.name + "".join(f"[{i}]" for i in idx)
        if len(self.world.devices) > 1:
            name += f" of device {dev.index}"
        self.world.sem_names[key] = name
        return key

    # -- DMAs ----------------------------------------------------------------
    def start(self, desc, device=None, send_sem=None):
        """Starts the copy `desc` (into device `device`'s buffer for a
        remote copy, signalling `send_sem` here when its source is read)."""
        w, where = self.world, core.where()
        if desc.sem is None:
            w.error(f"the DMA started at {where} has no semaphore")
        src, _, src_region = _end(desc.src, "DMA source")
        dst, dst_norm, dst_region = _end(desc.dst, "DMA destination")
        if device is not None and device != self.index:
            tdev = w.devices[device]
            if dst.slot not in tdev.slots and dst.slot[0] == "scoped":
                # (Not yet entered there: scoped buffers are static.)
                tdev.buffer(state.uninitialized(dst.shape, dst.dtype), dst.name, dst.slot)
            dst = tdev.slots.get(dst.slot)
            if dst is None:
                w.error(f"the DMA started at {where} copies into a block of device {device} "
                        f"that device has not started (a remote copy goes to scratch, "
                        f"run_scoped or pl.ANY buffers)")
        w.ndmas += 1
        name = f"dma#{w.ndmas}"
        vc = dict(self.vc)
        vc[name] = 1
        self.tick()
        dma = _Dma(name, self, where, src, dst, dst_norm, dst_region,
                   self._sem_key(desc.sem, "DMA semaphore", dst.device.index),
                   None if send_sem is None else self._sem_key(send_sem, "DMA semaphore"),
                   None, vc)
        if w.params.detect_races:
            for a in src.log:
                if a.dma is not None and a.write and _overlap(a.region, src_region) \
                        and not self.ordered(a, vc):
                    w.error(f"the DMA started at {where} reads {src.label} while the DMA into "
                            f"it started at {a.dma.at} is in flight")
            for a in dst.log:
                if not _overlap(a.region, dst_region) or self.ordered(a, vc):
                    continue
                if a.dma is not None:
                    what = "writes" if a.write else "still reads"
                    w.error(f"the DMA started at {dma.at} copies into {dst.label}, which the "
                            f"DMA started at {a.dma.at} {what} (wait for it first)")
                verb = "writes" if a.write else "reads"
                w.error(f"the DMA started at {dma.at} copies into {dst.label}, which "
                        f"{a.agent} {verb} at {a.where} with nothing ordering the two: the "
                        f"copy may land while it is still in use (signal a semaphore after "
                        f"that access and wait for it before the copy)")
        src.record(_Access(src_region, False, name, 1, where, dma))
        dst.record(_Access(dst_region, True, name, 1, where, dma))
        data = w.raw(lambda: state.load(desc.src, ()))
        if desc.add:
            data = w.raw(lambda: state.load(state.RefView(dst, dst_norm), ())) + data
        dma.data = data
        w.dmas.append(dma)
        if w.params.dma_execution_mode == "eager":
            self._land(dma)

    def _land(self, d):
        if not d.landed:
            self.world.raw(lambda: state.store(state.RefView(d.dst, d.dst_norm), (), d.data))
            d.landed = True

    def _done(self, d):
        _join(self.vc, d.vc)
        if d.sent and d.received:
            self.world.dmas.remove(d)

    def wait(self, desc):
        """Waits for a DMA that signals `desc.sem` here (its receiving side),
        preferably one into `desc.dst`'s window (JAX waits by bytes)."""
        w, where = self.world, core.where()
        key = self._sem_key(desc.sem, "DMA semaphore")
        dst, _, dst_region = _end(desc.dst, "DMA destination")

        def found():
            live = [d for d in w.dmas if d.recv_key == key and not d.received]
            same = [d for d in live if d.dst.slot == dst.slot and d.dst_region == dst_region]
            return (same or live or [None])[0]

        self.block(lambda: found() is not None,
                   f"the wait at {where} on semaphore {w.sem_names[key]} has no DMA in "
                   f"flight that signals it: it would never return")
        d = found()
        self._land(d)
        d.received = True
        if d.send_key is None:
            d.sent = True
        self._done(d)

    def wait_send(self, send_sem):
        """Waits until a remote copy this device started read its source."""
        w, where = self.world, core.where()
        key = self._sem_key(send_sem, "DMA semaphore")
        d = next((d for d in w.dmas if d.send_key == key and not d.sent), None)
        if d is None:
            w.error(f"the wait_send at {where} on semaphore {w.sem_names[key]} has no remote "
                    f"DMA in flight that signals it: it would never return")
        d.sent = True
        self._done(d)

    # -- regular semaphores --------------------------------------------------
    def signal(self, sem, inc, device=None):
        w = self.world
        key = self._sem_key(sem, "semaphore_signal", device)
        w.sems[key] = w.sems.get(key, 0) + int(inc)
        _join(w.sem_clocks.setdefault(key, {}), self.vc)
        self.tick()

    def wait_sem(self, sem, value):
        w, where, value = self.world, core.where(), int(value)
        key = self._sem_key(sem, "semaphore_wait")
        have = w.sems.get(key, 0)
        self.block(lambda: w.sems.get(key, 0) >= value,
                   f"the wait at {where} for {value} on semaphore {w.sem_names[key]}, which "
                   f"holds {have}, would never return (nothing else signals it"
                   f"{' on this device' if len(w.devices) == 1 else ''})")
        w.sems[key] -= value
        _join(self.vc, w.sem_clocks.get(key, {}))

    def read_sem(self, sem):
        return jnp.int32(self.world.sems.get(self._sem_key(sem, "semaphore_read"), 0))


def run(kernel, kname, grid, devices, in_blocks, out_blocks, scratch_types, aliases, params,
        compiler_params, grid_env, axis=None):
    """The kernel's outputs (flat) for each of `devices`, a list of
    (scalar prefetch, inputs) per device, interpreted with checks (module
    doc); `axis` names the mesh axis the devices lie along (several
    devices); `grid_env` is the stack `pl.program_id` reads
    (pallas/core.py)."""
    check_capacity(kname, devices[0][0], in_blocks, out_blocks, scratch_types, compiler_params,
                   params)
    world = _World(params, kname, len(devices), axis)
    # Every device's buffers exist before any runs (remote copies reach
    # them); windows are made at each grid step.
    setups = []
    for dev, (prefetch, ins) in zip(world.devices, devices):
        pf = [dev.buffer(p, f"scalar prefetch {k}", ("prefetch", k))
              for k, p in enumerate(prefetch)]
        padded_in = [np.asarray(b.padded(x)) for b, x in zip(in_blocks, ins)]
        outs = []
        for k, b in enumerate(out_blocks):
            x = ins[[i for i, o in aliases.items() if o == k][0]] if k in aliases.values() \
                else state.uninitialized(b.shape, b.dtype)
            outs.append(np.array(b.padded(x)))
        whole = {}  # refs of operands in pl.ANY (not windowed), kept across steps
        for k, (b, x) in enumerate(zip(in_blocks, padded_in)):
            if b.whole:
                whole[("in", k)] = dev.buffer(jnp.asarray(x), f"input {k}", ("whole in", k))
        for k, (b, x) in enumerate(zip(out_blocks, outs)):
            if b.whole:
                whole[("out", k)] = dev.buffer(jnp.asarray(x), f"output {k}", ("whole out", k))
        scratch = [dev.buffer(jnp.zeros(t.shape, t.dtype) if getattr(t, "semaphore_kind", None)
                              else state.uninitialized(tuple(t.shape), t.dtype),
                              f"scratch {k}", ("scratch", k))
                   for k, t in enumerate(scratch_types)]
        # Pallas TPU's PRNG state (prng_state.py), kept across the grid.
        prng = dev.buffer(jnp.zeros(prng_state.SHAPE, prng_state.DTYPE), "the PRNG state",
                          ("prng",))
        setups.append((pf, padded_in, outs, whole, scratch, prng))

    def body(dev):
        pf, padded_in, outs, whole, scratch, prng = setups[dev.index]
        # The window each output block had at the previous grid step: a
        # block stays in VMEM while its window repeats (an accumulator over
        # the last grid dimension); a new window's VMEM buffer is not loaded
        # from HBM on a TPU (aliased or not), so it starts uninitialized, as
        # in JAX's interpreter (NaN for floats).
        prev_windows = [None] * len(out_blocks)
        for ids in itertools.product(*[range(n) for n in grid]):
            ids_pf = tuple(ids) + tuple(pf)
            windows = []

            def block_ref(b, x, kind, k, ids_pf=ids_pf):
                if b.whole:
                    return whole[(kind, k)], None
                starts = [int(s) for s in b.starts(ids_pf)]
                sl = tuple(slice(s, s + n) for s, n in zip(starts, b.sizes))
                if kind == "out" and sl != prev_windows[k]:
                    value = state.uninitialized(b.kernel_shape, b.dtype)
                else:
                    value = jnp.reshape(jnp.asarray(x[sl]), b.kernel_shape)
                return dev.buffer(value, f"{kind}put {k}", (kind, k)), sl

            in_refs = [block_ref(b, x, "in", k)[0]
                       for k, (b, x) in enumerate(zip(in_blocks, padded_in))]
            out_refs = []
            for k, (b, x) in enumerate(zip(out_blocks, outs)):
                r, sl = block_ref(b, x, "out", k)
                out_refs.append(r)
                windows.append(sl)
            grid_env.append((tuple(jnp.int32(i) for i in ids), grid))
            prng_state.refs.append(prng)
            try:
                with state.scope(pf + in_refs + out_refs + scratch + [prng]):
                    res = kernel(*pf, *in_refs, *out_refs, *scratch)
            finally:
                prng_state.refs.pop()
                grid_env.pop()
            if res is not None:
                raise ValueError(f"pallas_call: the kernel {kname} must return None")
            for k, (b, x, r, sl) in enumerate(zip(out_blocks, outs, out_refs, windows)):
                if sl is not None:
                    x[sl] = np.asarray(world.raw(lambda r=r: r._value)).reshape(b.sizes)
                prev_windows[k] = sl

    def on_device(dev):
        if axis is None:
            return body(dev)
        with parallel.kernel_axis(axis, jnp.int32(dev.index), len(world.devices)):
            return body(dev)

    prev, _config.jax_disable_jit = _config.jax_disable_jit, True
    prev_kernel, _config.ember_interpreting_kernel = _config.ember_interpreting_kernel, True
    try:
        if world.sched is None:
            _local.worker = world.devices[0]
            try:
                on_device(world.devices[0])
            finally:
                _local.worker = None
        else:
            world.sched.run(world.devices, on_device)
        world.finish()
    finally:
        _config.jax_disable_jit = prev
        _config.ember_interpreting_kernel = prev_kernel
    results = []
    for (_, _, outs, whole, _, _) in setups:
        res = []
        for k, (b, x) in enumerate(zip(out_blocks, outs)):
            if b.whole:
                x = np.asarray(whole[("out", k)]._value)
            res.append(b.unpadded(jnp.asarray(x)))
        results.append(res)
    return results
