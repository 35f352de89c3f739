"""Colocated Python (`jax.experimental.colocated_python`): functions that run next to the CPU
devices of their arguments; revax runs one process, so they run in it."""
from revax._src.experimental.colocated_python import (
    colocated_cpu_devices as colocated_cpu_devices)
from revax._src.experimental.colocated_python import colocated_python as colocated_python
from revax._src.experimental.colocated_python import (
    colocated_python_class as colocated_python_class)
