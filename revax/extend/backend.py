"""revax.extend.backend: revax's PJRT clients for libraries (jax.extend.backend).
clear_in_memory_compilation_cache drops every compiled program (revax.clear_caches)."""
from revax._src.extend.backend import backends as backends
from revax._src.extend.backend import backend_xla_version as backend_xla_version
from revax._src.runtime.client import get_backend as get_backend
from revax._src.runtime.placement import default_device as get_default_device
from revax._src.api_extras import clear_caches as clear_in_memory_compilation_cache
from revax._src.api_extras import register_cache as register_backend_cache
