"""`ember.experimental.shard_map`: the old spelling of `ember.shard_map`
(positional `mesh, in_specs, out_specs` and `check_rep`)."""

from ember._src import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f, mesh, in_specs, out_specs, check_rep=True, auto=frozenset()):
    """`ember.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
    check_vma=check_rep)`."""
    return _shard_map.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                check_vma=check_rep)
