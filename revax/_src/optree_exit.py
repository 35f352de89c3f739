"""optree's exit callbacks, kept for the real exit of the interpreter.

Importing optree registers atexit callbacks that clear its registry of pytree node types (its
support for sub-interpreters). A program that runs the atexit callbacks itself before it ends
(`atexit._run_exitfuncs()`; chex's test of unchecked chexify assertions does) would be left with
every pytree function of the process broken: tuples, lists and dicts become leaves, and so every
later jit, vmap or tree_map fails. JAX's own pytrees have no such callback. revax imports optree
first, here (every revax module is imported after this one), holding those callbacks back: they
run when the interpreter exits, not when Python code runs the atexit callbacks by hand.
"""
from __future__ import annotations

import atexit
import sys


def _import_optree_holding_its_exit_callbacks() -> None:
  if "optree" in sys.modules:  # imported before revax: its callbacks are registered already
    return
  held = []
  register = atexit.register

  def hold(func, *args, **kwargs):
    held.append((func, args, kwargs))
    return func

  atexit.register = hold
  try:
    import optree  # noqa: F401
  finally:
    atexit.register = register
  if held:
    atexit.register(_at_exit, held)


def _at_exit(held) -> None:
  """optree's callbacks (last registered first, as atexit runs them), only at the real exit:
  there the interpreter calls this with no Python frame below it."""
  try:
    sys._getframe(1)
  except ValueError:
    for func, args, kwargs in reversed(held):
      func(*args, **kwargs)


_import_optree_holding_its_exit_callbacks()
