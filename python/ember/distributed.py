"""`jax.distributed`: multi-process runs over MPI (`_src/distributed.py`)."""

from ember._src.distributed import initialize as initialize
from ember._src.distributed import is_initialized as is_initialized
from ember._src.distributed import shutdown as shutdown
