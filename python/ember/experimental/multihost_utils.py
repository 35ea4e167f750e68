"""`jax.experimental.multihost_utils` over MPI (`_src/distributed.py`).

With one process (no `ember.distributed.initialize` with others) every
utility is local, as JAX's on one host: gathers add a leading axis of size 1,
broadcasts and barriers return at once, and host-local arrays are the global
arrays."""

import contextlib

import numpy as np

from ember._src import core, tree_util
from ember._src import devices as _devices
from ember._src import distributed as _distributed
from ember._src.distributed import broadcast_one_to_all as broadcast_one_to_all
from ember._src.distributed import process_allgather as process_allgather
from ember._src.distributed import sync_global_devices as sync_global_devices
from ember._src.numpy import lax_numpy as _jnp

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "live_devices", "process_allgather",
           "reached_preemption_sync_point", "sync_global_devices"]


def _multi_process():
    return _distributed._require()


def assert_equal(in_tree, fail_message=""):
    """Verifies that all the processes have the same tree of values."""
    out = process_allgather(in_tree, tiled=True)

    def expected(x):
        x = np.atleast_1d(np.asarray(x))
        return np.concatenate([x] * _devices.process_count())

    exp = tree_util.tree_map(expected, in_tree)
    same = tree_util.tree_map(
        lambda a, b: bool(np.all(np.equal(np.atleast_1d(a), b))), out, exp)
    if not all(tree_util.tree_leaves(same)):
        raise AssertionError(f"{fail_message}. Expected: {out}; got: {in_tree}.")


def _not_multi(name, what):
    raise NotImplementedError(
        f"multihost_utils.{name} across processes needs {what}, which Ember's MPI "
        f"distributed runtime does not provide; with one process it is local "
        f"(at {core.where()})")


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
    """The global arrays of host-local data. With one process the local data
    is the whole array."""
    if _multi_process():
        _not_multi("host_local_array_to_global_array",
                   "arrays spanning devices of several processes")
    return tree_util.tree_map(_jnp.asarray, local_inputs)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
    """Each process's part of global arrays. With one process that is the
    whole array."""
    if _multi_process():
        _not_multi("global_array_to_host_local_array",
                   "arrays spanning devices of several processes")
    return tree_util.tree_map(_jnp.asarray, global_inputs)


def reached_preemption_sync_point(step_id):
    """Whether the processes reached the step at which to save after a
    preemption notice. Ember has no preemption notice service: never (JAX's
    answer when no notice was received)."""
    del step_id
    return False


@contextlib.contextmanager
def live_devices(devices):
    """The devices whose processes are alive (all of them with one process)."""
    if _multi_process():
        _not_multi("live_devices", "a process-liveness service")
    yield list(devices)
