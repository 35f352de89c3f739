"""Public submodules that `import revax` makes reachable as attributes without importing them
up front (as `jax.scipy` is after `import jax`): the first `revax.scipy` access imports it.
revax/__init__.py installs `module_getattr` as its module-level `__getattr__`."""
from __future__ import annotations

import importlib

_LAZY = ("scipy", "ops", "image", "custom_batching", "custom_derivatives", "profiler", "dlpack",
         "stages", "distributed", "core", "monitoring", "reversible", "export")


def module_getattr(name: str):
  if name in _LAZY:
    return importlib.import_module(f"revax.{name}")  # also sets the package attribute
  raise AttributeError(f"module 'revax' has no attribute {name!r}")
