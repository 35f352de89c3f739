"""functools.wraps/update_wrapper for the transformations, tolerant as JAX's `api_util.wraps`.

A transformed callable may be any object: an equinox Module, a partial, an instance whose
`__name__` is not a string. JAX copies the wrapped function's metadata as far as it can and
never fails because of it; `functools.update_wrapper` raises (TypeError: "__name__ must be set
to a string object"). These copy the same attributes and stop quietly where one cannot be set.
"""
from __future__ import annotations

import functools

__all__ = ["update_wrapper", "wraps"]


def update_wrapper(wrapper, wrapped, assigned=functools.WRAPPER_ASSIGNMENTS,
                   updated=functools.WRAPPER_UPDATES):
  """`functools.update_wrapper` that never fails: like JAX's `api_util.wraps`, it copies the
  wrapped callable's attributes in order and stops quietly at the first it cannot set (then
  without `__wrapped__`, as JAX's).

  Args:
    wrapper, wrapped, assigned, updated: as functools.update_wrapper's.

  Returns:
    `wrapper`.

  Example:
    >>> from revax._src.core.wrapping import update_wrapper
    >>> class Odd:
    ...   __name__ = 3  # not a string: functools.update_wrapper would raise
    ...   def __call__(self, x): return x
    >>> hasattr(update_wrapper(lambda x: x, Odd()), "__wrapped__")
    False
  """
  try:
    for attr in updated:
      getattr(wrapper, attr).update(getattr(wrapped, attr, {}))
    for attr in assigned:
      try:
        value = getattr(wrapped, attr)
      except AttributeError:
        continue
      setattr(wrapper, attr, value)
    wrapper.__wrapped__ = wrapped
  except (TypeError, AttributeError):
    pass
  return wrapper


def wraps(wrapped, assigned=functools.WRAPPER_ASSIGNMENTS, updated=functools.WRAPPER_UPDATES):
  """`functools.wraps`, through the tolerant `update_wrapper`.

  Args:
    wrapped, assigned, updated: as functools.wraps's.

  Returns:
    A decorator applying `update_wrapper(wrapper, wrapped, ...)`.

  Example:
    >>> from revax._src.core.wrapping import wraps
    >>> def f(x): return x
    >>> wraps(f)(lambda x: x).__name__
    'f'
  """
  return functools.partial(update_wrapper, wrapped=wrapped, assigned=assigned, updated=updated)
