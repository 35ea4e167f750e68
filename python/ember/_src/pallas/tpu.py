"""The TPU-flavoured Pallas API (`jax.experimental.pallas.tpu`), for running
TPU kernels on the CPU: memory spaces, compiler parameters, scalar
prefetch, and DMAs (which complete when started: grid steps run one at a
time)."""

import numpy as np

from .. import core, state
from . import core as pl_core
from . import tpu_interpret, tpu_kernel
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
    async_copy(src_ref, dst_ref, None, add=add)


def _no_remote(device_id, what):
    if device_id is not None:
        raise NotImplementedError(
            f"pltpu.{what} with device_id (remote semaphores) is not supported yet "
            f"(at {core.where()})")


def _regular(what):
    if tpu_kernel.tracing():
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: pltpu.{what} (regular semaphores) is not "
            f"supported yet (at {core.where()})")


def semaphore_signal(sem, inc=1, *, device_id=None, device_id_type=None, core_index=None):
    """Adds `inc` to a regular semaphore."""
    _no_remote(device_id, "semaphore_signal")
    if (checker := tpu_interpret.active()) is not None:
        return checker.signal(sem, inc)
    _regular("semaphore_signal")
    state.store(sem, (), state.load(sem, ()) + inc)


def semaphore_wait(sem, value=1):
    """Waits until a regular semaphore holds `value`, then takes it (on the
    CPU, single device: takes it; the checked interpreter reports a wait
    that could never return)."""
    if (checker := tpu_interpret.active()) is not None:
        return checker.wait_sem(sem, value)
    _regular("semaphore_wait")
    state.store(sem, (), state.load(sem, ()) - value)


def semaphore_read(sem):
    """The count of a regular semaphore."""
    if (checker := tpu_interpret.active()) is not None:
        return checker.read_sem(sem)
    _regular("semaphore_read")
    return state.load(sem, ())
