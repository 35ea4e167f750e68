"""`ember.experimental.pallas.tpu`: JAX's `pltpu` pieces that TPU Pallas
kernels need to run on the CPU (see `ember._src.pallas.tpu`)."""

from ember._src.pallas.tpu import ANY as ANY
from ember._src.pallas.tpu import ARBITRARY as ARBITRARY
from ember._src.pallas.tpu import CORE_PARALLEL as CORE_PARALLEL
from ember._src.pallas.tpu import HBM as HBM
from ember._src.pallas.tpu import PARALLEL as PARALLEL
from ember._src.pallas.tpu import SEMAPHORE as SEMAPHORE
from ember._src.pallas.tpu import SMEM as SMEM
from ember._src.pallas.tpu import VMEM as VMEM
from ember._src.pallas.tpu import AsyncCopyDescriptor as AsyncCopyDescriptor
from ember._src.pallas.tpu import AsyncRemoteCopyDescriptor as AsyncRemoteCopyDescriptor
from ember._src.pallas.tpu import CompilerParams as CompilerParams
from ember._src.pallas.tpu import DeviceIdType as DeviceIdType
from ember._src.pallas.tpu import GridDimensionSemantics as GridDimensionSemantics
from ember._src.pallas.tpu import InterpretError as InterpretError
from ember._src.pallas.tpu import InterpretParams as InterpretParams
from ember._src.pallas.tpu import PrefetchScalarGridSpec as PrefetchScalarGridSpec
from ember._src.pallas.tpu import SemaphoreType as SemaphoreType
from ember._src.pallas.tpu import async_copy as async_copy
from ember._src.pallas.tpu import bitcast as bitcast
from ember._src.pallas.tpu import emit_pipeline as emit_pipeline
from ember._src.pallas.tpu import get_barrier_semaphore as get_barrier_semaphore
from ember._src.pallas.tpu import make_async_copy as make_async_copy
from ember._src.pallas.tpu import make_async_remote_copy as make_async_remote_copy
from ember._src.pallas.tpu import repeat as repeat
from ember._src.pallas.tpu import roll as roll
from ember._src.pallas.tpu import semaphore_read as semaphore_read
from ember._src.pallas.tpu import semaphore_signal as semaphore_signal
from ember._src.pallas.tpu import semaphore_wait as semaphore_wait
from ember._src.pallas.tpu import sync_copy as sync_copy
from ember._src.pallas.tpu_kernel import LoweringException as LoweringException
