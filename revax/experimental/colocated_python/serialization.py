"""`jax.experimental.colocated_python.serialization`: in JAX, how colocated functions and their
meshes and shardings are pickled for a remote Python process. revax runs colocated functions in
its own process (`revax.experimental.colocated_python`) and pickles nothing, so it has none of
this module's internals but `DeviceList` (jaxlib's sequence of devices, which orbax names in
its signatures at import time); the module exists so that code importing it (orbax's
checkpointing, which uses it only on Pathways) imports."""
from revax._src.experimental.colocated_python import DeviceList as DeviceList
