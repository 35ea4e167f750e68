"""`jax.sharding`: meshes, partition specs and shardings (`_src/mesh.py`)."""

from ember._src.api import auto_axes as auto_axes
from ember._src.api import explicit_axes as explicit_axes
from ember._src.api import reshard as reshard
from ember._src.devices import SingleDeviceSharding as SingleDeviceSharding
from ember._src.mesh import AbstractMesh as AbstractMesh
from ember._src.mesh import AxisType as AxisType
from ember._src.mesh import Mesh as Mesh
from ember._src.mesh import NamedSharding as NamedSharding
from ember._src.mesh import PartitionSpec as PartitionSpec
from ember._src.mesh import get_abstract_mesh as get_abstract_mesh
from ember._src.mesh import set_mesh as set_mesh
from ember._src.mesh import use_abstract_mesh as use_abstract_mesh
from ember._src.mesh import use_mesh as use_mesh

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "PartitionSpec",
           "SingleDeviceSharding", "auto_axes", "explicit_axes", "get_abstract_mesh", "reshard",
           "set_mesh", "use_abstract_mesh", "use_mesh"]
