"""The TPU-flavoured Pallas API (`jax.experimental.pallas.tpu`), for running
TPU kernels on the CPU: memory spaces, compiler parameters, scalar
prefetch, and DMAs (which complete when started: grid steps run one at a
time)."""

import numpy as np

from .. import state
from . import core as pl_core
from . import tpu_kernel

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
        if tpu_kernel.tracing():
            # Traced for the TPU target: the copy as a DMA (tpu_kernel.py).
            return tpu_kernel.dma(self, "start")
        v = state.load(self.src, ())
        if self.add:
            v = state.load(self.dst, ()) + v
        state.store(self.dst, (), v)

    def wait(self):
        """The copy completed when it started (on the CPU)."""
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

