"""`jax.profiler` on the host: annotations, traces and memory profiles.

Ember has no device profiler. A trace (`start_trace`/`stop_trace`, `trace`)
records the `TraceAnnotation`s, `StepTraceAnnotation`s and annotated
functions entered while it runs, with their wall-clock times and thread,
and writes them in the Chrome trace-event format (which TensorBoard's
profile plugin and Perfetto open) to
`log_dir/plugins/profile/<date_time>/<host>.trace.json.gz`. Annotations
outside a trace cost a clock read. `device_memory_profile` is an empty pprof
profile (gzipped; Ember does not track allocations); the profiler server is
a stand-in that serves nothing.
"""

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time

from . import core

__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "register_subprocess", "save_device_memory_profile",
           "start_server", "start_trace", "stop_server", "stop_trace", "trace"]


class ProfileOptions:
    """Options of a trace (JAX's fields; recorded, Ember traces the host
    only)."""

    def __init__(self):
        self.host_tracer_level = 2
        self.python_tracer_level = 0
        self.enable_hlo_proto = True
        self.start_timestamp_ns = 0
        self.duration_ms = 0
        self.repository_path = ""
        self.raise_error_on_start_failure = False
        self.advanced_configuration = {}


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.log_dir = None
        self.events = None
        self.start = None


_state = _State()


def start_trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
                profiler_options=None):
    """Starts recording annotations into a trace written to `log_dir`."""
    with _state.lock:
        if _state.events is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be "
                               "run at a time.")
        _state.log_dir = os.fspath(log_dir)
        _state.events = []
        _state.start = time.perf_counter_ns()


def _record(name, begin_ns, end_ns, args):
    with _state.lock:
        if _state.events is None:
            return
        _state.events.append({
            "name": name, "ph": "X", "pid": os.getpid(), "tid": threading.get_ident(),
            "ts": (begin_ns - _state.start) / 1000.0, "dur": (end_ns - begin_ns) / 1000.0,
            "args": {k: str(v) for k, v in args.items()}})


def stop_trace():
    """Stops the trace and writes it; returns nothing."""
    with _state.lock:
        if _state.events is None:
            raise RuntimeError("No profile started")
        events, log_dir = _state.events, _state.log_dir
        _state.reset()
    run = time.strftime("%Y_%m_%d_%H_%M_%S")
    path = os.path.join(log_dir, "plugins", "profile", run)
    os.makedirs(path, exist_ok=True)
    with gzip.open(os.path.join(path, f"{socket.gethostname()}.trace.json.gz"), "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options=None):
    """A trace of the body (`start_trace` ... `stop_trace`)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """A named span of host time in a trace (a context manager)."""

    def __init__(self, name, **kwargs):
        self.name = name
        self.kwargs = kwargs

    def __enter__(self):
        self._begin = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        _record(self.name, self._begin, time.perf_counter_ns(), self.kwargs)


class StepTraceAnnotation(TraceAnnotation):
    """A training step's span (`step_num` in its arguments)."""

    def __init__(self, name, **kwargs):
        super().__init__(name, **kwargs)


def annotate_function(func, name=None, **decorator_kwargs):
    """`func` whose calls are TraceAnnotations named `name` (default: its
    qualified name)."""
    name = name or getattr(func, "__qualname__", None) or getattr(func, "__name__", "fun")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


class _Server:
    def __init__(self, port):
        self.port = port

    def stop(self):
        pass


_server = None


def start_server(port, requires_backend=True):
    """A stand-in profiler server (Ember has no remote profiling)."""
    global _server
    if _server is not None:
        raise ValueError("Only one profiler server can be active at a time.")
    _server = _Server(port)
    return _server


def stop_server():
    global _server
    if _server is None:
        raise ValueError("No active profiler server.")
    _server.stop()
    _server = None


def register_subprocess(pid, port):
    """Accepted; returns the function that unregisters it."""
    return lambda: None


def device_memory_profile(backend=None):
    """The device memory profile in pprof's gzipped format: empty (Ember
    does not track its allocations)."""
    del backend
    return gzip.compress(b"")


def save_device_memory_profile(filename, backend=None):
    """Writes `device_memory_profile(backend)` to `filename`."""
    profile = device_memory_profile(backend)
    try:
        with open(filename, "wb") as f:
            f.write(profile)
    except OSError as e:
        raise OSError(f"{e} (at {core.where()})") from e
