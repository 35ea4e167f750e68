"""`ember.dlpack` as `jax.dlpack`: arrays from DLPack producers."""

import ml_dtypes as _ml_dtypes
import numpy as _np

from ember._src.numpy.lax_numpy import from_dlpack as from_dlpack

_SUPPORTED = frozenset(_np.dtype(t) for t in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", _ml_dtypes.bfloat16, "float32", "float64", "complex64", "complex128", "bool"))


def is_supported_dtype(dtype):
    """Whether arrays of `dtype` can be exchanged through DLPack."""
    if dtype is None:
        raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
    return _np.dtype(dtype) in _SUPPORTED
