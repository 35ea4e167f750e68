"""`jax.sharding`: the one sharding Ember arrays have today (meshes and
named shardings are #22)."""

from ember._src.devices import SingleDeviceSharding as SingleDeviceSharding

__all__ = ["SingleDeviceSharding"]
