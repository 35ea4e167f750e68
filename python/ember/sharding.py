"""`jax.sharding`: meshes, partition specs and shardings (`_src/mesh.py`)."""

from ember._src.devices import SingleDeviceSharding as SingleDeviceSharding
from ember._src.mesh import AxisType as AxisType
from ember._src.mesh import Mesh as Mesh
from ember._src.mesh import NamedSharding as NamedSharding
from ember._src.mesh import PartitionSpec as PartitionSpec
from ember._src.mesh import get_abstract_mesh as get_abstract_mesh
from ember._src.mesh import set_mesh as set_mesh
from ember._src.mesh import use_mesh as use_mesh

__all__ = ["AxisType", "Mesh", "NamedSharding", "PartitionSpec", "SingleDeviceSharding",
           "get_abstract_mesh", "set_mesh", "use_mesh"]
