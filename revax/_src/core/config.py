"""Process-wide configuration flags (`revax.config.update("enable_x64", True)`)."""
from __future__ import annotations

import os

_TRUE = ("1", "true", "yes", "on")


class Config:
  """Holds revax's flags. Flags read their default from the environment (REVAX_<NAME>)."""

  _defaults = {"enable_x64": False, "debug_nans": False}

  def __init__(self):
    self._values = {}
    for name, default in self._defaults.items():
      env = os.environ.get("REVAX_" + name.upper())
      self._values[name] = (env.lower() in _TRUE) if env is not None else default
    self._listeners = []

  def update(self, name: str, value) -> None:
    """Set flag `name` (e.g. "enable_x64") to `value`.

    Example:
      >>> revax.config.update("enable_x64", True)
    """
    if name not in self._values:
      raise ValueError(f"unknown config option {name!r}; known options: {sorted(self._values)}")
    self._values[name] = bool(value)
    for fn in self._listeners:
      fn(name)

  def read(self, name: str):
    return self._values[name]

  def on_change(self, fn) -> None:
    self._listeners.append(fn)

  def __getattr__(self, name):
    if name.startswith("_"):
      raise AttributeError(name)
    key = name[len("jax_"):] if name.startswith("jax_") else name
    try:
      return self._values[key]
    except KeyError:
      raise AttributeError(f"revax.config has no option {name!r}") from None

  @property
  def x64_enabled(self) -> bool:
    return self._values["enable_x64"]


config = Config()
