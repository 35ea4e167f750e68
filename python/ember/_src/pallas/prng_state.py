"""The state of Pallas TPU's stateful PRNG (`pltpu.prng_seed`,
`pltpu.prng_random_bits`, `pltpu.stateful_*`) while a kernel runs in an
interpreter: a hidden SMEM scratch buffer of two uint32 words that
`pallas_call`'s interpreters allocate for every kernel (carried across the
grid, as the hardware's state persists between grid steps) and push here for
the PRNG ops to read and write (pallas/tpu.py)."""

import numpy as np

from .. import core

SHAPE, DTYPE = (2,), np.dtype(np.uint32)

# The state refs of the kernels running on this thread, innermost last.
refs = core._ThreadStack()

# Pushed instead of a state ref while a grid's independent groups of points
# are traced (core._run): the groups run concurrently, so a kernel using
# the PRNG state (carried from point to point) must run its grid in order.
FORBIDDEN = object()


class SequentialNeeded(Exception):
    """A kernel traced for concurrent groups of grid points used the PRNG
    state: core._run traces its grid again, in order."""
