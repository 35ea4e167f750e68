"""`jax.experimental.multihost_utils` over MPI (`_src/distributed.py`)."""

from ember._src.distributed import broadcast_one_to_all as broadcast_one_to_all
from ember._src.distributed import process_allgather as process_allgather
from ember._src.distributed import sync_global_devices as sync_global_devices
