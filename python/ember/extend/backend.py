"""`jax.extend.backend`: the backends as objects (a platform's devices and
versions), for code that asks JAX's runtime about them."""

import ember as _ember
from ember._src import api_extras as _api_extras
from ember._src import devices as _devices


class _Backend:
    """A platform's client, as far as users ask it things."""

    def __init__(self, platform):
        self.platform = platform

    @property
    def platform_version(self):
        return f"ember {_ember.__version__}"

    def devices(self):
        return _devices.devices(self.platform)

    def local_devices(self):
        return _devices.local_devices(backend=self.platform)

    def device_count(self):
        return _devices.device_count(self.platform)

    def local_device_count(self):
        return _devices.local_device_count(self.platform)

    def process_index(self):
        return _devices.process_index()

    def __repr__(self):
        return f"<ember backend {self.platform}>"


def get_backend(platform=None):
    """The backend of `platform` (None: the default backend)."""
    return _Backend(_devices.default_backend() if platform is None else
                    ("gpu" if platform in ("gpu", "cuda") else platform))


def backends():
    """The backends present, by platform name."""
    names = ["cpu"] + (["gpu"] if _devices.default_gpu() is not None else [])
    return {n: _Backend(n) for n in names}


def get_default_device():
    return _ember.devices()[0] if _ember.config.jax_default_device is None else \
        _ember.config.jax_default_device


def clear_backends():
    """Drops what was compiled (Ember keeps no other per-backend state)."""
    _api_extras.clear_caches()


__all__ = ["backends", "clear_backends", "get_backend", "get_default_device"]
