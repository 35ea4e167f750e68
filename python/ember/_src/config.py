"""Configuration: `ember.config` (`jax_enable_x64`, `jax_disable_jit`).

The bottom of the package: it imports nothing from Ember. Layers above that
cache anything depending on the configuration (compiled code, MLIR types)
register a function with `on_change`, called after every `config.update`.
"""

_on_change = []


def on_change(fn):
    """Registers `fn()` to run after each `config.update` (cache invalidation)."""
    _on_change.append(fn)
    return fn


class _Config:
    def __init__(self):
        self.jax_enable_x64 = False
        self.jax_disable_jit = False
        # Compiled programs kept in memory (core._program_cache).
        self.ember_program_cache_size = 1024

    def update(self, name, value):
        if not hasattr(self, name):
            raise AttributeError(f"Unrecognized config option: {name}")
        setattr(self, name, value)
        for fn in _on_change:  # compiled code depends on the config
            fn()


config = _Config()
