"""Pausing Python's cyclic garbage collector while a program is traced or lowered.

Tracing and lowering are bursts of allocation in which nearly every object (tracers, variables,
equations, avals, text) lives until the burst ends: the collector's generational guess does
not hold there, and its automatic passes, which walk every tracked object of the process,
cost a third of the time of tracing a large program while finding almost nothing to free.
`paused_gc()` turns automatic collection off for the outermost such burst in the process and
back on when the last one ends, if it was on when the first began; `gc.collect()` still works
meanwhile, and memory is reclaimed by reference counting as usual (only cyclic garbage waits
for the burst to end).
"""
from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_depth = 0  # bursts running now, in every thread (the collector is process-wide)
_resume = False  # whether the first burst turned the collector off


@contextlib.contextmanager
def paused_gc():
  """Run the block with automatic cyclic garbage collection off (see the module docstring).

  Example:
    >>> import gc
    >>> from revax._src.core.gc_pause import paused_gc
    >>> was_on = gc.isenabled()
    >>> with paused_gc():
    ...   off_inside = not gc.isenabled()
    >>> off_inside, gc.isenabled() == was_on
    (True, True)
  """
  global _depth, _resume
  with _lock:
    if _depth == 0:
      _resume = gc.isenabled()
      if _resume:
        gc.disable()
    _depth += 1
  try:
    yield
  finally:
    with _lock:
      _depth -= 1
      if _depth == 0 and _resume:
        gc.enable()
