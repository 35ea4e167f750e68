"""`ember.experimental.mesh_utils`: JAX's device-mesh builders. Ember's
devices have no physical torus topology to follow, so a mesh is the devices
in their order (by id, as JAX orders GPU devices), reshaped."""

import collections
import math
import operator

import numpy as np

from ember._src import core
from ember._src import devices as _devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]


def _canonicalize_axis_sizes(mesh_shape):
    try:
        return tuple(operator.index(s) for s in mesh_shape)
    except TypeError:
        return None


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                       allow_split_physical_axes=False):
    """An ndarray of `devices` (default: all devices) of shape `mesh_shape`,
    for `ember.sharding.Mesh`."""
    if devices is None:
        devices = _devices.devices()
    new_mesh_shape = _canonicalize_axis_sizes(mesh_shape)
    if new_mesh_shape is None:
        raise ValueError("`mesh_shape` passed to `create_device_mesh` should be a sequence of "
                         f"ints. Got {mesh_shape} (at {core.where()})")
    if math.prod(new_mesh_shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {new_mesh_shape} (at {core.where()})")
    ordered = sorted(devices, key=lambda d: getattr(d, "id", 0))
    out = np.empty(len(ordered), dtype=object)
    out[:] = ordered
    return out.reshape(new_mesh_shape)


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
                              process_is_granule=False, should_sort_granules_by_key=True,
                              allow_split_physical_axes=False):
    """A mesh of shape `mesh_shape * dcn_mesh_shape`: one `mesh_shape` block
    of devices per granule (slice, or process with `process_is_granule`),
    the blocks laid out by `dcn_mesh_shape`."""
    if devices is None:
        devices = _devices.devices()
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                         f"`process_is_granule` option. (at {core.where()})")
    granule_dict = collections.defaultdict(list)
    for dev in devices:
        granule_dict[getattr(dev, attr)].append(dev)
    granules = ([granule_dict[k] for k in sorted(granule_dict)]
                if should_sort_granules_by_key else list(granule_dict.values()))
    if np.prod(dcn_mesh_shape) != len(granules):
        raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                         f"dcn_mesh_shape {dcn_mesh_shape} (at {core.where()})")
    per_granule = [create_device_mesh(mesh_shape, g) for g in granules]
    granule_mesh = np.arange(len(granules)).reshape(dcn_mesh_shape)
    blocks = np.vectorize(lambda i: per_granule[i], otypes=[object])(granule_mesh)
    return np.block(blocks.tolist())
