"""Module `__getattr__`s for names JAX keeps only as deprecated attributes (as
`jax._src.deprecations.deprecation_getattr`): reading one warns with DeprecationWarning and
returns the object; the module's `dir()` does not list it."""
from __future__ import annotations

import functools
import warnings


def deprecation_getattr(module: str, deprecations: dict):
  """A module-level `__getattr__` for `deprecations`: {name: (message, object or None)}; a None
  object means the name is gone (AttributeError with the message)."""
  @functools.cache
  def getattr(name):  # noqa: A001 (a module's __getattr__)
    if name in deprecations:
      message, fn = deprecations[name]
      if fn is None:
        raise AttributeError(message)
      warnings.warn(message, DeprecationWarning, stacklevel=2)
      return fn
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
  return getattr
