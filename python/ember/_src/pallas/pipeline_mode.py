"""`pl.Buffered` and `pl.RevisitMode`: a BlockSpec's `pipeline_mode`, read by
`pallas_call`'s TPU lowering (tpu_kernel.py) and `pltpu.emit_pipeline`
(tpu.py)."""

import dataclasses
import enum


class RevisitMode(enum.Enum):
    """JAX's `pl.RevisitMode`: whether an output block may be revisited only
    at the next step (IMMEDIATE, the default) or at any step (ANY)."""

    IMMEDIATE = "immediate"
    ANY = "any"


@dataclasses.dataclass(frozen=True)
class Buffered:
    """JAX's `pl.Buffered`, a BlockSpec's `pipeline_mode`: how many VMEM
    buffers hold the operand's blocks in a pipeline (`pallas_call` on TPU:
    1, synchronous, or 2; `pltpu.emit_pipeline`: any number for inputs, at
    most 2 for outputs). `use_lookahead` and `revisit` as JAX's."""

    buffer_count: int
    use_lookahead: bool = False
    revisit: RevisitMode | None = None
