"""Configuration: `ember.config` (`jax_enable_x64`, `jax_disable_jit`).

The bottom of the package: it imports nothing from Ember but the table of
JAX's other options (`jax_options.py`). Layers above that
cache anything depending on the configuration (compiled code, MLIR types)
register a function with `on_change`, called after every `config.update`.
"""

import os

from .jax_options import RECORDED as _RECORDED

_on_change = []
# option name -> function checking a new value before it is set (registered
# by the layer the option belongs to).
_validators = {}
# Options compiled code does not depend on (no cache is cleared for them).
_RUNTIME_ONLY = {"jax_debug_nans", "jax_debug_infs", "jax_num_cpu_devices"} | set(_RECORDED)


def _typed_like(name, default):
    """A validator: new values of `name` have the type of its default."""
    kinds = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}[type(default)]

    def check(v):
        if not isinstance(v, kinds) or (bool not in kinds and isinstance(v, bool)):
            what = {bool: "a bool", int: "an int", float: "a float", str: "a string"}
            raise TypeError(f"{name}: {what[type(default)]} is required, got {v!r}")
    return check


_validators["ember_mpi_partition"] = _typed_like("ember_mpi_partition", True)
_validators["ember_device_threads"] = _typed_like("ember_device_threads", True)
for _name, _default in _RECORDED.items():
    if _default is not None:
        _validators[_name] = _typed_like(_name, _default)


def on_change(fn):
    """Registers `fn()` to run after each `config.update` (cache invalidation)."""
    _on_change.append(fn)
    return fn


class _Config:
    def __init__(self):
        self.jax_enable_x64 = False
        self.jax_disable_jit = False
        # Set (with jax_disable_jit) while a Pallas interpreter runs a kernel
        # eagerly: control flow runs in Python, but a fori_loop's index stays
        # an array, as a kernel sees it when traced (JAX's interpreters trace).
        self.ember_interpreting_kernel = False
        # Compiled programs kept in memory (core._program_cache).
        self.ember_program_cache_size = 1024
        # The persistent compilation cache (compilation_cache.py), JAX's names.
        self.jax_compilation_cache_dir = None
        self.jax_persistent_cache_min_compile_time_secs = 1.0
        self.jax_persistent_cache_min_entry_size_bytes = 0
        self.jax_persistent_cache_enable_xla_caches = "none"
        # A jitted call on arrays split over the processes of an MPI job
        # compiles one process's partitioned program (spmd.py).
        self.ember_mpi_partition = os.environ.get("EMBER_MPI_PARTITION", "1") != "0"
        # A jitted call on arrays split over a mesh of this process's CPU
        # devices runs the partitioned program on a thread per device
        # (spmd.py).
        self.ember_device_threads = os.environ.get("EMBER_DEVICE_THREADS", "1") != "0"
        # CPU devices (devices.py; None: EMBER_NUM_CPU_DEVICES or XLA_FLAGS).
        self.jax_num_cpu_devices = None
        # Results checked for NaN/Inf (api.py's jit, core.eager_apply).
        self.jax_debug_nans = False
        self.jax_debug_infs = False
        # JAX's other options, recorded (jax_options.py; devices.py reads
        # jax_platforms, jax_platform_name and jax_default_device).
        for name, value in _RECORDED.items():
            setattr(self, name, value)
        # (Read by export.py; JAX's environment variable sets the default.)
        version = os.environ.get("JAX_EXPORT_CALLING_CONVENTION_VERSION")
        if version:
            self.jax_export_calling_convention_version = int(version)

    def update(self, name, value):
        if not hasattr(self, name):
            raise AttributeError(f"Unrecognized config option: {name}")
        if name in _validators:
            _validators[name](value)
        setattr(self, name, value)
        if name in _RUNTIME_ONLY:
            return
        for fn in _on_change:  # compiled code depends on the config
            fn()


config = _Config()


class _State:
    """JAX's top-level configuration states (`jax.enable_x64`): `.value`
    reads the option, and calling it with a value gives a context manager
    that sets the option for its body and restores it after."""

    def __init__(self, name):
        self._name = name

    @property
    def value(self):
        return getattr(config, self._name)

    def __call__(self, value=True):
        import contextlib

        @contextlib.contextmanager
        def scope():
            old = getattr(config, self._name)
            config.update(self._name, value)
            try:
                yield
            finally:
                config.update(self._name, old)

        return scope()

    def __repr__(self):
        return f"State({self._name}={self.value!r})"


enable_x64 = _State("jax_enable_x64")
# (JAX's export guide sets it for a block: `with config.<name>(10):`.)
jax_export_calling_convention_version = _State("jax_export_calling_convention_version")
debug_nans = _State("jax_debug_nans")
debug_infs = _State("jax_debug_infs")
