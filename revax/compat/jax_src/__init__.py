"""`jax._src` in the jax-compatibility mode: shims for the private JAX names that major libraries
import, one module per JAX module. Each gives the behaviour the library relies on, built on
revax's public API, and says which library uses it and for what. A `jax._src` module not here is
refused with an ImportError naming it."""

import importlib as _importlib


def __getattr__(name):
  # jax imports these modules with the package, so libraries read `jax._src.xla_bridge`
  # without importing it (chex.fake): shims are imported on first access
  if not name.startswith("__"):
    try:
      return _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
      pass
  raise AttributeError(f"module 'jax._src' has no attribute {name!r} (revax's "
                       "jax-compatibility mode has no shim for it)")
