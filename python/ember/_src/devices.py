"""Platforms and devices, as JAX names them: `devices()`, `default_backend()`,
`local_device_count()`, `default_device`, and the `Device` objects arrays
report.

The platforms come from EMBER_PLATFORMS or JAX_PLATFORMS (comma-separated,
in order of preference: "cpu", "cuda" or "gpu"); by default every platform
that is present, CPU last as in JAX. CUDA devices are found through the
driver (`libcuda.so.1`, loaded only when the cuda platform is asked for or
the default list is probed); without a driver or a GPU nothing CUDA is
loaded and the CPU is the only platform.

The CPU platform has EMBER_NUM_CPU_DEVICES devices (or XLA_FLAGS'
--xla_force_host_platform_device_count; one by default), all in this
process's memory; after `distributed.initialize()` the list holds every MPI
process's devices (`process_index` says whose).

Arrays live in host memory unless `device_put` places them on a GPU
(`core.GpuArray`, in the memory of the CUDA runtime, lib/Runtime/Cuda.cpp);
computations on such arrays run on the GPU (the cuda target) and their
results stay there. The CPU stays the default backend when a GPU is merely
present, since the cuda target has not run on a real GPU yet: docs/design.md,
"CUDA target". Naming the platforms
chooses: the first of EMBER_PLATFORMS/JAX_PLATFORMS is the default backend,
so `JAX_PLATFORMS=cuda` or `cuda,cpu` puts new arrays and computations on
GPU 0, as `with default_device(gpu)` does.
"""

import contextlib
import ctypes
import os
import threading

from .config import _validators, config

_GPU_NAMES = ("cuda", "gpu")


class Device:
    """One device: `platform` ("cpu" or "gpu"), `id`, `device_kind`."""

    def __init__(self, platform, id, device_kind, process_index=0):
        self.platform = platform
        self.id = id
        self.device_kind = device_kind
        self.process_index = process_index

    @property
    def host_id(self):
        return self.process_index

    def __repr__(self):
        kind = "CpuDevice" if self.platform == "cpu" else "CudaDevice"
        return f"{kind}(id={self.id})"

    def __str__(self):
        return f"{'cpu' if self.platform == 'cpu' else 'cuda'}:{self.id}"

    @property
    def client(self):
        return None


cpu_device = Device("cpu", 0, "cpu")


def _cpu_device_count():
    """`jax_num_cpu_devices` when set, else EMBER_NUM_CPU_DEVICES, else XLA's
    --xla_force_host_platform_device_count in XLA_FLAGS, else 1."""
    if config.jax_num_cpu_devices is not None:
        return int(config.jax_num_cpu_devices)
    text = os.environ.get("EMBER_NUM_CPU_DEVICES")
    if not text:
        for flag in os.environ.get("XLA_FLAGS", "").split():
            if flag.startswith("--xla_force_host_platform_device_count="):
                text = flag.split("=", 1)[1]
    if not text:
        return 1
    try:
        n = int(text)
    except ValueError:
        raise RuntimeError(f"the number of CPU devices must be an integer, got {text!r}") from None
    if n < 1:
        raise RuntimeError(f"the number of CPU devices must be at least 1, got {n}")
    return n


class SingleDeviceSharding:
    """JAX's sharding of an array that lives whole on one device (every
    Ember array, until #22 brings meshes)."""

    def __init__(self, device, *, memory_kind=None):
        self._device = device
        self.memory_kind = memory_kind

    @property
    def device_set(self):
        return {self._device}

    @property
    def addressable_devices(self):
        return {self._device}

    is_fully_replicated = True
    is_fully_addressable = True
    num_devices = 1

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device is self._device

    def __hash__(self):
        return hash(("SingleDeviceSharding", self._device.id))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"


def _requested():
    # (`config.update("jax_platforms", ...)` before the first use of a
    # device, as JAX reads it; `jax_platform_name` is its older spelling.)
    text = (config.jax_platforms or config.jax_platform_name
            or os.environ.get("EMBER_PLATFORMS") or os.environ.get("JAX_PLATFORMS") or "")
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    for n in names:
        if n not in ("cpu", "cuda", "gpu"):
            raise RuntimeError(f"Unknown platform {n!r} in JAX_PLATFORMS/EMBER_PLATFORMS "
                               "(Ember knows: cpu, cuda)")
    return ["cuda" if n == "gpu" else n for n in names]


def _cuda_devices():
    """The GPUs the CUDA driver reports, or (None, reason)."""
    path = os.environ.get("EMBER_CUDA_DRIVER") or "libcuda.so.1"
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None, f"the CUDA driver ({path}) is not installed"
    if lib.cuInit(0) != 0:
        return None, "cuInit failed (no usable GPU)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return None, "the CUDA driver reports no GPU"
    devs = []
    for i in range(count.value):
        name = ctypes.create_string_buffer(256)
        dev = ctypes.c_int(0)
        lib.cuDeviceGet(ctypes.byref(dev), i)
        lib.cuDeviceGetName(name, 256, dev)
        devs.append(Device("gpu", i, name.value.decode(errors="replace")))
    return devs, None


_lock = threading.Lock()
_backends = None  # {"cpu": [...], "cuda": [...]}: the platforms present, in order


def _check_num_cpu_devices(n):
    # JAX's rule: the count is fixed once the devices exist.
    if _backends is not None and n != _cpu_device_count():
        raise RuntimeError("jax_num_cpu_devices config should be updated before backends "
                           "are initialized i.e. before any JAX operation is executed. You "
                           "should initialize this config immediately after `import jax`.")
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"jax_num_cpu_devices must be a positive integer, got {n!r}")


_validators["jax_num_cpu_devices"] = _check_num_cpu_devices


def backends():
    global _backends
    with _lock:
        if _backends is None:
            requested = _requested()
            found = {}
            for name in requested or ["cuda", "cpu"]:
                if name == "cpu":
                    # Every process's devices (distributed.initialize): L per
                    # process, ids p*L .. p*L+L-1.
                    local = _cpu_device_count()
                    found["cpu"] = [cpu_device if i == 0 else
                                    Device("cpu", i, "cpu", process_index=i // local)
                                    for i in range(local * _processes[1])]
                    continue
                devs, why = _cuda_devices()
                if devs:
                    found["cuda"] = devs
                elif requested:
                    raise RuntimeError(f"Unable to initialize backend 'cuda': {why} "
                                       "(set JAX_PLATFORMS='' to choose automatically)")
            _backends = found
            global _gpu_default
            # Named first: the GPU is the default device of every thread.
            _gpu_default = bool(requested) and requested[0] == "cuda" and "cuda" in found
        return _backends


def _canonical(backend):
    if backend is None:
        return None
    if isinstance(backend, Device):
        backend = backend.platform
    backend = backend.lower()
    return "cuda" if backend in _GPU_NAMES else backend


def default_backend():
    """The platform computations on uncommitted arrays run on: the first
    platform named in EMBER_PLATFORMS/JAX_PLATFORMS, else the CPU (arrays
    put on a GPU carry their computations there)."""
    present = backends()
    if "cpu" not in present or _gpu_default:
        return "gpu"
    return "cpu"


_gpu_default = False  # the GPU was named first (see backends)


def set_default_device():
    """The device `default_device(...)` set for this thread, else GPU 0 when
    the GPU is the default backend; None when computations default to the
    CPU."""
    dev = getattr(_default, "device", None)
    if dev is None and config.jax_default_device is not None:
        dev = _configured_default()
    if dev is None and default_backend() == "gpu":
        dev = devices("gpu")[0]
    return dev


def _configured_default():
    """`config.jax_default_device`: a Device, or a platform name for its
    first device (JAX accepts both)."""
    d = config.jax_default_device
    return devices(d)[0] if isinstance(d, str) else d


def _check_default_device(value):
    global _defaults_set
    if value is not None and not isinstance(value, str):
        check_device(value)
    if isinstance(value, str):
        devices(value)  # (an unknown platform raises here)
    with _lock:
        # (Counted as an open default_device context while it is set.)
        _defaults_set += (value is not None) - (config.jax_default_device is not None)


_validators["jax_default_device"] = _check_default_device


def default_gpu():
    """The default device when it is a GPU (`default_device(gpu)`, or GPU 0
    when JAX_PLATFORMS names the GPU first), else None; cheap when neither
    is set."""
    if not _defaults_set:
        return None
    dev = set_default_device()
    return dev if dev is not None and dev.platform == "gpu" else None


def devices(backend=None):
    present = backends()
    name = _canonical(backend)
    if name is None:
        name = "cuda" if default_backend() == "gpu" else "cpu"
    if name not in present:
        shown = ", ".join("gpu" if p == "cuda" else p for p in present)
        raise RuntimeError(f"Unknown backend: '{backend}' requested, but no platforms that are "
                           f"instances of {backend} are present. Platforms present are: {shown}")
    return list(present[name])


_processes = (0, 1)  # (this process's index, the number of processes)


def set_processes(rank, size):
    """Called by distributed.initialize: the device list is made again."""
    global _processes, _backends
    with _lock:
        _processes = (rank, size)
        _backends = None


def local_devices(process_index=None, backend=None, host_id=None):
    p = _processes[0] if process_index is None else process_index
    return [d for d in devices(backend) if d.process_index == p]


def device_count(backend=None):
    return len(devices(backend))


def local_device_count(backend=None):
    return len(local_devices(backend=backend))


def process_index(backend=None):
    return _processes[0]


def process_count(backend=None):
    return _processes[1]


_default = threading.local()


def current_default_device():
    """The device of `default_device(...)`, else the default backend's first."""
    dev = getattr(_default, "device", None)
    return dev if dev is not None else devices()[0]


@contextlib.contextmanager
def default_device(device):
    """`with default_device(d):` puts new arrays and computations on `d`
    (None: the default backend's first device)."""
    global _defaults_set
    if device is not None:
        device = check_device(device)
    prev = getattr(_default, "device", None)
    _default.device = device
    with _lock:
        _defaults_set += 1
    try:
        yield
    finally:
        _default.device = prev
        with _lock:
            _defaults_set -= 1


# How many default_device contexts are open in any thread, plus one when
# JAX_PLATFORMS/EMBER_PLATFORMS names the GPU first: jit's fast path and
# the creation functions look at the default device only when some are.
_defaults_set = int(
    (os.environ.get("EMBER_PLATFORMS") or os.environ.get("JAX_PLATFORMS") or "")
    .split(",")[0].strip().lower() in _GPU_NAMES)


def check_device(device):
    """Raises unless arrays can live on `device` (a Device, or a platform name)."""
    if isinstance(device, str):
        device = devices(device)[0]
    if not isinstance(device, Device):
        raise TypeError(f"expected a Device, got {type(device).__name__}")
    if device.platform != "cpu":
        from ember._mlir._mlir_libs import _ember_runtime

        if _ember_runtime.cuda_device_count() == 0:
            raise RuntimeError(f"arrays on {device!r}: the CUDA runtime cannot use the GPU: "
                               f"{_ember_runtime.cuda_unavailable_reason()}")
        if device.id != 0:
            raise NotImplementedError(f"arrays on {device!r}: Ember's CUDA runtime uses "
                                      "GPU 0 only")
    return device
