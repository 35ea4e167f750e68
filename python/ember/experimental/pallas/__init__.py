"""`ember.experimental.pallas`: JAX's Pallas kernel language (`pl`).

Kernels run through the same compiler as the rest of Ember: on the CPU,
`interpret=True` and the default give the same compiled program (see
`ember._src.pallas.core`).
"""

from ember._src.pallas.core import ANY as ANY
from ember._src.pallas.core import HOST as HOST
from ember._src.pallas.core import Blocked as Blocked
from ember._src.pallas.core import BlockSpec as BlockSpec
from ember._src.pallas.core import CompilerParams as CompilerParams
from ember._src.pallas.core import CostEstimate as CostEstimate
from ember._src.pallas.core import Element as Element
from ember._src.pallas.core import GridSpec as GridSpec
from ember._src.pallas.core import MemoryRef as MemoryRef
from ember._src.pallas.core import MemorySpace as MemorySpace
from ember._src.pallas.core import Squeezed as Squeezed
from ember._src.pallas.core import align_to as align_to
from ember._src.pallas.core import broadcast_to as broadcast_to
from ember._src.pallas.core import cdiv as cdiv
from ember._src.pallas.core import core_map as core_map
from ember._src.pallas.core import debug_check as debug_check
from ember._src.pallas.core import debug_print as debug_print
from ember._src.pallas.core import delay as delay
from ember._src.pallas.core import empty as empty
from ember._src.pallas.core import empty_like as empty_like
from ember._src.pallas.core import empty_ref_like as empty_ref_like
from ember._src.pallas.core import enable_debug_checks as enable_debug_checks
from ember._src.pallas.core import enable_poison_buffers as enable_poison_buffers
from ember._src.pallas.core import kernel as kernel
from ember._src.pallas.core import loop as loop
from ember._src.pallas.core import multiple_of as multiple_of
from ember._src.pallas.core import next_power_of_2 as next_power_of_2
from ember._src.pallas.core import no_block_spec as no_block_spec
from ember._src.pallas.core import num_programs as num_programs
from ember._src.pallas.core import pallas_call as pallas_call
from ember._src.pallas.core import program_id as program_id
from ember._src.pallas.core import reciprocal as reciprocal
from ember._src.pallas.core import run_scoped as run_scoped
from ember._src.pallas.core import run_state as run_state
from ember._src.pallas.core import squeezed as squeezed
from ember._src.pallas.core import strides_from_shape as strides_from_shape
from ember._src.pallas.core import when as when
from ember._src.pallas.core import with_scoped as with_scoped
from ember._src.pallas.cost_estimate import estimate_cost as estimate_cost
from ember._src.pallas.pipeline_mode import Buffered as Buffered
from ember._src.pallas.pipeline_mode import RevisitMode as RevisitMode
from ember._src.pallas.tpu import DeviceIdType as DeviceIdType
from ember._src.pallas.tpu import semaphore_read as semaphore_read
from ember._src.pallas.tpu import semaphore_signal as semaphore_signal
from ember._src.pallas.tpu import semaphore_wait as semaphore_wait
from ember._src.state import Slice as Slice
from ember._src.state import ds as ds

dslice = ds
