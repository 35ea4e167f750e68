"""ember.scipy: jax.scipy's modules that Ember provides.

`linalg` and `special` load with `ember`; the others load when first used
(`ember.scipy.signal` or `import ember.scipy.signal`), so that `import ember`
does not pay for them."""

import importlib as _importlib

from ember.scipy import (
    linalg,  # noqa: F401
    special,  # noqa: F401
)

_LAZY = ("cluster", "fft", "integrate", "interpolate", "ndimage", "optimize", "signal",
         "sparse", "spatial", "stats")


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f"ember.scipy.{name}")
    raise AttributeError(f"module 'ember.scipy' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
