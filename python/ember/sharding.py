"""`jax.sharding`: meshes, partition specs and shardings (`_src/mesh.py`)."""

import numpy as np

from ember._src.api import auto_axes as auto_axes
from ember._src.api import explicit_axes as explicit_axes
from ember._src.api import reshard as reshard
from ember._src.devices import SingleDeviceSharding as SingleDeviceSharding
from ember._src.mesh import AbstractDevice as AbstractDevice
from ember._src.mesh import AbstractMesh as AbstractMesh
from ember._src.mesh import AxisType as AxisType
from ember._src.mesh import ManualAxisType as ManualAxisType
from ember._src.mesh import Mesh as Mesh
from ember._src.mesh import NamedSharding as NamedSharding
from ember._src.mesh import PartitionSpec as PartitionSpec
from ember._src.mesh import Sharding as Sharding
from ember._src.mesh import get_abstract_mesh as get_abstract_mesh
from ember._src.mesh import set_mesh as set_mesh
from ember._src.mesh import use_abstract_mesh as use_abstract_mesh
from ember._src.mesh import use_mesh as use_mesh


def get_mesh():
    """The concrete mesh set with `set_mesh` (or `use_mesh`); an empty Mesh
    when there is none. Outside of `jit` only."""
    from ember._src import core, mesh

    if core.current_trace() is not None:
        raise ValueError("`get_mesh` can only be used outside of `jax.jit`. Maybe you want "
                         "`jax.sharding.get_abstract_mesh()`?")
    m = mesh.current_mesh()
    return Mesh(np.empty((), dtype=object), ()) if m is None else m


def make_single_device_sharding(device, *, memory_kind=None):
    """A SingleDeviceSharding on `device`."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh",
           "NamedSharding", "PartitionSpec", "Sharding", "SingleDeviceSharding", "auto_axes",
           "explicit_axes", "get_abstract_mesh", "get_mesh", "make_single_device_sharding",
           "reshard", "set_mesh", "use_abstract_mesh", "use_mesh"]
