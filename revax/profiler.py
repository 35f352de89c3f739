"""revax.profiler: trace annotations and a device memory profile (as jax.profiler; see
revax._src.profiler for what revax records)."""
from revax._src.profiler import ProfileOptions as ProfileOptions
from revax._src.profiler import StepTraceAnnotation as StepTraceAnnotation
from revax._src.profiler import TraceAnnotation as TraceAnnotation
from revax._src.profiler import annotate_function as annotate_function
from revax._src.profiler import device_memory_profile as device_memory_profile
from revax._src.profiler import register_subprocess as register_subprocess
from revax._src.profiler import save_device_memory_profile as save_device_memory_profile
from revax._src.profiler import start_server as start_server
from revax._src.profiler import start_trace as start_trace
from revax._src.profiler import stop_server as stop_server
from revax._src.profiler import stop_trace as stop_trace
from revax._src.profiler import trace as trace
