"""`jax.experimental.colocated_python` (`_src/colocated.py`)."""

from ember._src.colocated import colocated_cpu_devices as colocated_cpu_devices
from ember._src.colocated import colocated_python as colocated_python
from ember._src.colocated import colocated_python_class as colocated_python_class
