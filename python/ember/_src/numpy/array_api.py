"""The Array API standard's inspection namespace for `ember.numpy`
(`__array_namespace_info__`)."""

import numpy as np

from .. import dtypes
from ..config import config
from ..devices import cpu_device

__array_api_version__ = "2024.12"

_KINDS = {
    "bool": ["bool"],
    "signed integer": ["int8", "int16", "int32", "int64"],
    "unsigned integer": ["uint8", "uint16", "uint32", "uint64"],
    "real floating": ["float32", "float64"],
    "complex floating": ["complex64", "complex128"],
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]


class _Info:
    """What `ember.numpy` supports, in the standard's terms."""

    def capabilities(self):
        # Shapes are static and boolean indexing needs a static result size.
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self):
        # (The GPU when it is the default device, as ember.devices()[0].)
        from .. import devices as devices_lib

        return devices_lib.default_gpu() or cpu_device

    def devices(self):
        from .. import devices as devices_lib

        return devices_lib.devices()

    def default_dtypes(self, *, device=None):
        return {"real floating": np.dtype(dtypes.default_float()),
                "complex floating": np.dtype(dtypes.default_complex()),
                "integral": np.dtype(dtypes.default_int()),
                "indexing": np.dtype(dtypes.default_int())}

    def dtypes(self, *, device=None, kind=None):
        wide = config.jax_enable_x64
        names = []
        for k in (kind,) if isinstance(kind, str) else (kind or ("bool", "numeric")):
            if k not in _KINDS:
                raise ValueError(f"unknown dtype kind {k!r}")
            names += [n for n in _KINDS[k] if n not in names]
        if not wide:
            names = [n for n in names if n not in ("int64", "uint64", "float64", "complex128")]
        return {n: np.dtype(n) for n in names}


def __array_namespace_info__():
    return _Info()
