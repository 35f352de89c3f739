"""make_user_context: a value that jit's caches depend on, as jax.make_user_context.

Each context is one more entry of the configuration's tracing key: while `with ctx(value):`
holds, functions jitted under a different value are traced, lowered and compiled again (and
the earlier executables are reused when the value comes back). Like revax's config overrides,
the value is process-wide.
"""
from __future__ import annotations

import contextlib

from revax._src.core.config import config

__all__ = ["make_user_context", "UserContext"]


class UserContext:
  """A jit-cache-sensitive value: `with ctx(value): ...` sets it; `ctx.value` reads it."""

  def __init__(self, default_value=None):
    self._index = config.add_user_context(default_value)

  @property
  def value(self):
    return config._user_values[self._index]

  @contextlib.contextmanager
  def __call__(self, value):
    old = self.value
    config.set_user_context(self._index, value)
    try:
      yield
    finally:
      config.set_user_context(self._index, old)


def make_user_context(default_value=None) -> UserContext:
  """A new context whose value jit's tracing, lowering and compilation caches depend on.

  Args:
    default_value: the value outside any `with ctx(value):` block (hashable).

  Returns:
    A `UserContext`: call it with a value to get a context manager.

  Example:
    >>> traces = []
    >>> @revax.jit
    ... def f(x):
    ...   traces.append(x)  # runs once per trace
    ...   return x * 2
    >>> ctx = revax.make_user_context(default_value=None)
    >>> with ctx(1):
    ...   _ = f(1.)
    >>> with ctx(2):
    ...   _ = f(1.)  # a new context value: traced again
    >>> with ctx(1):
    ...   _ = f(1.)  # cached
    >>> len(traces)
    2
  """
  return UserContext(default_value)
