"""`jax.ffi`: call foreign functions written against XLA's FFI (see
`ember._src.ffi`)."""

from ember._src.ffi import build_ffi_lowering_function as build_ffi_lowering_function
from ember._src.ffi import ffi_call as ffi_call
from ember._src.ffi import ffi_lowering as ffi_lowering
from ember._src.ffi import include_dir as include_dir
from ember._src.ffi import pycapsule as pycapsule
from ember._src.ffi import register_ffi_target as register_ffi_target
from ember._src.ffi import (
    register_ffi_target_as_batch_partitionable as register_ffi_target_as_batch_partitionable,
)
from ember._src.ffi import register_ffi_type as register_ffi_type
from ember._src.ffi import register_ffi_type_id as register_ffi_type_id

__all__ = ["build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir", "pycapsule",
           "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id"]
