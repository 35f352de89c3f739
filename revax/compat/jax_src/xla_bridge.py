"""`jax._src.xla_bridge`: chex's `set_n_cpu_devices` reads `_backends` (the backends already
started, by platform) to refuse changing the CPU device count after the CPU backend started."""
from revax._src.api_extras import default_backend as default_backend
from revax._src.runtime import client as _client


def get_backend(platform=None):
  """The backend (a PJRT client) computations run on."""
  del platform
  return _client.get_backend()


def __getattr__(name):
  if name == "_backends":  # read at each access: the CPU backend starts on first use
    return {"cpu": _client._backend} if _client._backend is not None else {}
  raise AttributeError(f"module 'jax._src.xla_bridge' has no attribute {name!r} (revax's "
                       "jax-compatibility mode provides only _backends, get_backend and "
                       "default_backend)")
