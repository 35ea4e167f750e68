"""`ember.profiler` as `jax.profiler` (host-side traces; see
ember._src.profiler for what is recorded)."""

from ember._src.profiler import ProfileOptions as ProfileOptions
from ember._src.profiler import StepTraceAnnotation as StepTraceAnnotation
from ember._src.profiler import TraceAnnotation as TraceAnnotation
from ember._src.profiler import annotate_function as annotate_function
from ember._src.profiler import device_memory_profile as device_memory_profile
from ember._src.profiler import register_subprocess as register_subprocess
from ember._src.profiler import save_device_memory_profile as save_device_memory_profile
from ember._src.profiler import start_server as start_server
from ember._src.profiler import start_trace as start_trace
from ember._src.profiler import stop_server as stop_server
from ember._src.profiler import stop_trace as stop_trace
from ember._src.profiler import trace as trace
