"""The checked interpreter of TPU Pallas kernels (`interpret=
pltpu.InterpretParams(...)` on concrete arrays, outside `jit`).

The kernel runs eagerly, grid step by grid step (last axis fastest), on
refs that watch their accesses, with DMAs asynchronous: a copy reads its
source when it starts and lands in its destination when it is waited for
(`dma_execution_mode="on_wait"`; "eager" lands it at the start). Misuse is
an `InterpretError` naming the kernel's lines:

- reading or writing a window a DMA in flight writes (not waited for);
- writing a window a DMA in flight still reads;
- starting a DMA into a window another DMA in flight reads or writes;
- waiting on a semaphore no DMA in flight signals (a wait that never
  returns), and a DMA never waited for when the kernel ends;
- waiting on a regular semaphore for more than it holds (a deadlock on one
  device), and regular semaphores left non-zero at the end;
- VMEM the kernel needs beyond its limit: the windowed blocks (two of each,
  as the pipeline double-buffers them) plus VMEM scratch, against
  `CompilerParams(vmem_limit_bytes=)` or Ember's default of 16 MiB; SMEM
  (scalar prefetch, SMEM blocks and scratch) against
  `InterpretParams(smem_limit_bytes=)` when given.

Under `jit` (or another transformation) the same `pallas_call` runs the
traced interpreter of `core.py` instead, which does not check.
"""

import itertools
import threading

import numpy as np

from .. import core, state
from ..config import config as _config
from ..numpy import lax_numpy as jnp
from . import prng_state


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
    """The checker of the kernel running on this thread, if any."""
    return getattr(_local, "checker", None)


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


class _Ref(state.Ref):
    """A kernel buffer whose accesses the checker watches."""

    def __init__(self, value, name, checker):
        super().__init__(value)
        self.name, self.checker = name, checker

    def _access(self, kind, norm):
        c = self.checker
        if c.internal:
            return
        c.access(self, kind, _region(norm, self.shape), core.where())


def _end(ref, what):
    """(base ref, region, index) of a DMA end or semaphore (ref or view)."""
    if isinstance(ref, state.RefView):
        base, norm = ref.base, ref.norm
    else:
        base, norm = ref, ref.compose((), what)
    if not isinstance(base, _Ref):
        raise TypeError(f"{what}: expected a kernel buffer, got {type(base).__name__} "
                        f"(at {core.where()})")
    return base, norm, _region(norm, base.shape)


class _Dma:
    def __init__(self, src, src_region, dst, dst_norm, dst_region, sem, data, where):
        self.src, self.src_region, self.dst = src, src_region, dst
        self.dst_norm, self.dst_region, self.sem = dst_norm, dst_region, sem
        self.data, self.where, self.landed = data, where, False


class Checker:
    def __init__(self, params, kname):
        self.params, self.kname = params, kname
        self.pending = []
        self.sems = {}  # (semaphore ref id, index) -> count of regular semaphores
        self.sem_names = {}
        self.internal = False

    def error(self, msg):
        raise InterpretError(f"in kernel {self.kname}: {msg}")

    # -- accesses ------------------------------------------------------------
    def access(self, ref, kind, region, where):
        if not self.params.detect_races:
            return
        for d in self.pending:
            if d.dst is ref and _overlap(d.dst_region, region):
                verb = "reads" if kind == "load" else "writes"
                self.error(f"{where} {verb} {ref.name} while the DMA into it started at "
                           f"{d.where} is in flight (wait for it first)")
            if kind != "load" and d.src is ref and _overlap(d.src_region, region):
                self.error(f"{where} overwrites {ref.name} while the DMA started at "
                           f"{d.where} is still reading it (wait for it first)")

    def scoped(self, t):
        """A `pl.run_scoped` buffer of scratch type `t`, watched as the
        kernel's own buffers are (semaphores start at zero)."""
        self.scoped_count = getattr(self, "scoped_count", 0) + 1
        init = (jnp.zeros(t.shape, t.dtype) if getattr(t, "semaphore_kind", None)
                else state.uninitialized(tuple(t.shape), t.dtype))
        return _Ref(init, f"scoped buffer {self.scoped_count - 1}", self)

    def _raw(self, fn):
        self.internal = True
        try:
            return fn()
        finally:
            self.internal = False

    # -- DMAs ----------------------------------------------------------------
    def _sem_key(self, sem, what):
        base, norm, region = _end(sem, what)
        key = (id(base), tuple(lo for lo, _ in region))
        self.sem_names[key] = base.name + "".join(f"[{lo}]" for lo, _ in region)
        return key

    def start(self, desc):
        where = core.where()
        if desc.sem is None:
            self.error(f"the DMA started at {where} has no semaphore")
        src, _, src_region = _end(desc.src, "DMA source")
        dst, dst_norm, dst_region = _end(desc.dst, "DMA destination")
        if self.params.detect_races:
            for d in self.pending:
                if (d.dst is dst and _overlap(d.dst_region, dst_region)) or (
                        d.src is dst and _overlap(d.src_region, dst_region)):
                    what = "writes" if d.dst is dst else "still reads"
                    self.error(f"the DMA started at {where} copies into {dst.name}, which the "
                               f"DMA started at {d.where} {what} (wait for it first)")
                if d.dst is src and _overlap(d.dst_region, src_region):
                    self.error(f"the DMA started at {where} reads {src.name} while the DMA "
                               f"into it started at {d.where} is in flight")
        data = self._raw(lambda: state.load(desc.src, ()))
        if desc.add:
            data = self._raw(lambda: state.load(desc.dst, ())) + data
        d = _Dma(src, src_region, dst, dst_norm, dst_region,
                 self._sem_key(desc.sem, "DMA semaphore"), data, where)
        self.pending.append(d)
        if self.params.dma_execution_mode == "eager":
            self._land(d)

    def _land(self, d):
        if not d.landed:
            self._raw(lambda: state.store(state.RefView(d.dst, d.dst_norm), (), d.data))
            d.landed = True

    def wait(self, desc):
        where = core.where()
        key = self._sem_key(desc.sem, "DMA semaphore")
        dst, _, dst_region = _end(desc.dst, "DMA destination")
        for k, d in enumerate(self.pending):
            if d.sem == key and d.dst is dst and d.dst_region == dst_region:
                self._land(d)
                del self.pending[k]
                return
        for k, d in enumerate(self.pending):
            if d.sem == key:  # the same semaphore, another copy: JAX waits by bytes
                self._land(d)
                del self.pending[k]
                return
        self.error(f"the wait at {where} on semaphore {self.sem_names[key]} has no DMA in "
                   f"flight that signals it: it would never return")

    # -- regular semaphores --------------------------------------------------
    def signal(self, sem, inc):
        key = self._sem_key(sem, "semaphore_signal")
        self.sems[key] = self.sems.get(key, 0) + int(inc)

    def wait_sem(self, sem, value):
        where = core.where()
        key = self._sem_key(sem, "semaphore_wait")
        have = self.sems.get(key, 0)
        if have < int(value):
            self.error(f"the wait at {where} for {int(value)} on semaphore "
                       f"{self.sem_names[key]}, which holds {have}, would never return "
                       f"(nothing else signals it on this device)")
        self.sems[key] = have - int(value)

    def read_sem(self, sem):
        return jnp.int32(self.sems.get(self._sem_key(sem, "semaphore_read"), 0))

    def finish(self):
        if self.pending:
            d = self.pending[0]
            self.error(f"the DMA started at {d.where} into {d.dst.name} was never waited for")
        for key, n in self.sems.items():
            if n:
                self.error(f"semaphore {self.sem_names[key]} holds {n} when the kernel ends "
                           f"(every signal needs its wait)")


def run(kernel, kname, grid, prefetch, ins, in_blocks, out_blocks, scratch_types, aliases,
        params, compiler_params, grid_env):
    """The kernel's outputs (flat), interpreted with checks (module doc);
    `grid_env` is the stack `pl.program_id` reads (pallas/core.py)."""
    check_capacity(kname, prefetch, in_blocks, out_blocks, scratch_types, compiler_params,
                   params)
    checker = Checker(params, kname)
    pf = [_Ref(p, f"scalar prefetch {k}", checker) for k, p in enumerate(prefetch)]
    padded_in = [np.asarray(b.padded(x)) for b, x in zip(in_blocks, ins)]
    outs = []
    for k, b in enumerate(out_blocks):
        x = ins[[i for i, o in aliases.items() if o == k][0]] if k in aliases.values() \
            else state.uninitialized(b.shape, b.dtype)
        outs.append(np.array(b.padded(x)))
    whole = {}  # refs of operands in pl.ANY (not windowed), kept across steps
    for k, (b, x) in enumerate(zip(in_blocks, padded_in)):
        if b.whole:
            whole[("in", k)] = _Ref(jnp.asarray(x), f"input {k}", checker)
    for k, (b, x) in enumerate(zip(out_blocks, outs)):
        if b.whole:
            whole[("out", k)] = _Ref(jnp.asarray(x), f"output {k}", checker)
    scratch = [_Ref(jnp.zeros(t.shape, t.dtype) if getattr(t, "semaphore_kind", None)
                    else state.uninitialized(tuple(t.shape), t.dtype), f"scratch {k}", checker)
               for k, t in enumerate(scratch_types)]
    # Pallas TPU's PRNG state (prng_state.py), kept across the grid.
    prng = _Ref(jnp.zeros(prng_state.SHAPE, prng_state.DTYPE), "the PRNG state", checker)
    prev, _config.jax_disable_jit = _config.jax_disable_jit, True
    prev_kernel, _config.ember_interpreting_kernel = _config.ember_interpreting_kernel, True
    _local.checker = checker
    # The window each output block had at the previous grid step: a block
    # stays in VMEM while its window repeats (an accumulator over the last
    # grid dimension); a new window's VMEM buffer is not loaded from HBM on a
    # TPU (aliased or not), so it starts uninitialized, as in JAX's
    # interpreter (NaN for floats).
    prev_windows = [None] * len(out_blocks)
    try:
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
                return _Ref(value, f"{kind}put {k}", checker), sl

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
                    x[sl] = np.asarray(checker._raw(lambda r=r: r._value)).reshape(b.sizes)
                prev_windows[k] = sl
        checker.finish()
    finally:
        _local.checker = None
        _config.jax_disable_jit = prev
        _config.ember_interpreting_kernel = prev_kernel
    results = []
    for k, (b, x) in enumerate(zip(out_blocks, outs)):
        if b.whole:
            x = np.asarray(whole[("out", k)]._value)
        results.append(b.unpadded(jnp.asarray(x)))
    return results
