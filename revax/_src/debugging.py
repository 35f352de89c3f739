"""revax.debug: printing and callbacks that work inside jit, vmap, grad and loops.

`print(fmt, *args, **kwargs)` formats like `str.format` with the array arguments as revax Arrays
(as JAX's are jax Arrays), under NumPy's print options as they were when `print` was called, and
writes the line to stdout when the program reaches it: at run time under jit, once per example
under vmap, on the primal values under grad. `callback(fn, *args)` calls any function the same
way. Both lower to the `debug_callback` primitive (lax/callbacks.py).
"""
from __future__ import annotations

import copy
import functools
import logging
import os
import string
import sys

import numpy as np

from revax._src.lax.callbacks import debug_callback

__all__ = ["debug_print", "debug_log", "callback"]

logger = logging.getLogger(__name__)
_SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # revax/


def _user_record(level: int) -> logging.LogRecord:
  """A log record naming the first caller outside revax (filled with the message later)."""
  frame = sys._getframe(1)
  while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_SRC):
    frame = frame.f_back
  file_name, line_no = ((frame.f_code.co_filename, frame.f_lineno) if frame is not None
                        else ("(unknown file)", 0))
  return logger.makeRecord(logger.name, level, file_name, line_no, "", (), None)


class _FormatChecker(string.Formatter):
  """Checks that a format string uses exactly the arguments given, without formatting."""

  def format_field(self, value, format_spec):
    return ""

  def check_unused_args(self, used_args, args, kwargs):
    unused_args = [arg for i, arg in enumerate(args) if i not in used_args]
    unused_kwargs = [k for k in kwargs if k not in used_args]
    if unused_args:
      raise ValueError(f"Unused positional arguments to `revax.debug.print`: {unused_args}")
    if unused_kwargs:
      raise ValueError(
          f"Unused keyword arguments to `revax.debug.print`: {unused_kwargs}. You may be "
          "passing an f-string (i.e, `f\"{x}\"`) into `revax.debug.print` and instead should "
          "pass in a regular string.")


_checker = _FormatChecker()


def _has_placeholders(fmt: str) -> bool:
  if not fmt:
    return False
  _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
  return field_name is not None


def debug_print(fmt: str | None = None, *args, ordered: bool = False, partitioned: bool = False,
                skip_format_check: bool = False, _use_logging: bool = False, **kwargs):
  """Print from inside transformed code: `revax.debug.print("x = {x}", x=x)`.

  Args:
    fmt: a `str.format` string (not an f-string: formatting happens when the program runs).
      Without placeholders, the arguments are printed after it, separated by spaces.
    *args, **kwargs: values to format (arrays, pytrees, Python values).
    ordered: print in program order with the other ordered prints and callbacks.
    partitioned: accepted for JAX compatibility (revax prints whole arrays).
    skip_format_check: do not check that `fmt` uses every argument.

  Returns:
    None; with `fmt` omitted, a function taking `(fmt, *args, **kwargs)` (the two-call form
    `revax.debug.print(ordered=True)("x={x}", x=x)`).

  Example:
    >>> @revax.jit
    ... def f(x):
    ...   revax.debug.print("x = {x}", x=x)
    ...   return x * 2
    >>> f(jnp.arange(3.0))
    x = [0. 1. 2.]
    Array([0., 2., 4.], dtype=float32)
  """
  del partitioned

  def emit(fmt: str, *c_args, **c_kwargs):
    if not skip_format_check:
      _checker.format(fmt, *c_args, **c_kwargs)
    placeholders = _has_placeholders(fmt)
    options = dict(np.get_printoptions())
    record = _user_record(logging.INFO) if _use_logging else None

    def write(*p_args, **p_kwargs):
      if placeholders:
        with np.printoptions(**options):
          message = fmt.format(*p_args, **p_kwargs)
      else:
        message = " ".join((fmt, *(str(a) for a in p_args)))
      if record is not None:
        entry = copy.copy(record)
        entry.msg = message
        logger.handle(entry)
      else:
        sys.stdout.write(message + "\n")

    debug_callback(write, *c_args, ordered=ordered, **c_kwargs)

  if fmt is not None:
    emit(fmt, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError(f"debug_print received unexpected arguments in the two-call form: "
                    f"args={args} kwargs={kwargs}")
  return emit


debug_log = functools.partial(debug_print, _use_logging=True)
debug_log.__doc__ = """`debug_print` that emits an INFO record on the `revax._src.debugging` logger
(naming the caller's file and line) instead of writing to stdout."""


def callback(callback=None, *args, ordered: bool = False, partitioned: bool = False, **kwargs):
  """Call `callback(*args, **kwargs)` for its side effect from inside transformed code.

  Array leaves reach the callback as revax Arrays (as JAX passes jax Arrays), at run time under
  jit, once per example under vmap, with primal values under grad; its return value is ignored.

  Args:
    callback: the function (omit it for the decorator form `@revax.debug.callback(ordered=True)`).
    *args, **kwargs: its arguments (pytrees).
    ordered: run in program order with the other ordered callbacks.
    partitioned: accepted for JAX compatibility.

  Returns:
    None (or, without `callback`, a function taking it).

  Example:
    >>> revax.jit(lambda x: revax.debug.callback(print, x))(1.0)
    1.0
  """
  del partitioned
  if callback is None:
    if args or kwargs:
      raise TypeError("debug.callback without a callback takes no other arguments")
    return lambda fn, *a, **k: debug_callback(fn, *a, ordered=ordered, **k)
  if not callable(callback):
    raise TypeError(f"debug.callback expects a callable, got {type(callback).__name__}")
  debug_callback(callback, *args, ordered=ordered, **kwargs)
  return None
