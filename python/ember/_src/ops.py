"""`jax.ops`: segment reductions (`segment_sum`, `segment_prod`,
`segment_max`, `segment_min`), each one scatter into `num_segments` rows
that start at the reduction's identity. As JAX's, out-of-range segment ids
(negative ones too) are dropped unless `mode` says otherwise, and
`num_segments` must be static under `jit` (without it, it is read from the
ids: `max(segment_ids) + 1`). `indices_are_sorted`, `unique_indices` and
`bucket_size` are JAX's performance hints: they do not change the result,
and Ember's scatter does not use them."""

import numpy as np

from . import core, dtypes, lax
from .numpy import lax_numpy as jnp


def _identity(kind, dtype):
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dtypes.is_inexact(dtype):
        return -np.inf if kind == "max" else np.inf
    if dtype == np.bool_:
        return kind == "min"
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def _segment(kind, data, segment_ids, num_segments, mode, out_sharding):
    data = jnp.asarray(data)
    ids = jnp.asarray(segment_ids)
    if not dtypes.is_int(ids.dtype) and not dtypes.is_unsigned(ids.dtype):
        raise core.type_error(f"segment_{kind}: segment_ids must be integers, got {ids.dtype}")
    if ids.shape != data.shape[:ids.ndim]:
        raise core.value_error(
            f"segment_{kind}: segment_ids of shape {ids.shape} must match the leading "
            f"dimensions of data of shape {data.shape}")
    if num_segments is None:
        num_segments = int(jnp.max(ids)) + 1 if ids.size else 0
    num_segments = core.canonicalize_dim(num_segments)
    rest = data.shape[ids.ndim:]
    operand = lax.full((num_segments,) + rest, _identity(kind, data.dtype), data.dtype)
    updates = data.reshape((-1,) + rest)
    idx = lax.convert_element_type(ids.reshape(-1, 1), np.int32)
    fn = {"sum": lax.scatter_add, "prod": lax.scatter_mul, "max": lax.scatter_max,
          "min": lax.scatter_min}[kind]
    dn = lax.ScatterDimensionNumbers(update_window_dims=tuple(range(1, updates.ndim)),
                                     inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    out = fn(operand, idx, updates, dn, mode="fill" if mode is None else mode)
    return out if out_sharding is None else core.with_out_sharding(out, out_sharding)


def _make(kind):
    def segment(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
        return _segment(kind, data, segment_ids, num_segments, mode, out_sharding)
    segment.__name__ = segment.__qualname__ = f"segment_{kind}"
    segment.__doc__ = (f"The {kind} of `data`'s rows with equal `segment_ids`, for each of "
                       "`num_segments` segments (empty segments hold the identity).")
    return segment


segment_sum = _make("sum")
segment_prod = _make("prod")
segment_max = _make("max")
segment_min = _make("min")
