"""Traceback filtering: errors raised through revax's API show the user's frames, not revax's.

`api_boundary(fun)` wraps a public entry point (jit's call, ...). When an exception leaves the
outermost boundary, the frames of revax's own files are removed from its traceback (the frames
of the user's functions that revax called stay), and a note says how to see everything. The
option `jax_traceback_filtering` ("auto" by default, env REVAX_TRACEBACK_FILTERING) selects:
"off" keeps tracebacks whole; "tracebackhide" marks nothing and keeps them whole too (revax's
frames carry no `__tracebackhide__`); "remove_frames" and "auto" remove the frames and add the
note; "quiet_remove_frames" removes them without the note.
"""
from __future__ import annotations

import functools
import os
import threading
import types

from revax._src.core.config import config

_REVAX_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_NOTE = ("For simplicity, revax has removed its internal frames from the traceback of this "
         "exception. Set revax.config.update('jax_traceback_filtering', 'off') (or env "
         "REVAX_TRACEBACK_FILTERING=off) to include them.")

_env = os.environ.get("REVAX_TRACEBACK_FILTERING")
if _env:
  config.update("traceback_filtering", _env)


class _Depth(threading.local):
  value = 0


_depth = _Depth()


def is_revax_frame(frame) -> bool:
  """Whether `frame` runs code from revax's package (not the user's code, not tests)."""
  filename = frame.f_code.co_filename
  return filename.startswith(_REVAX_DIR + os.sep)


def filter_traceback(tb):
  """A copy of the traceback chain `tb` without revax's frames."""
  kept = []
  while tb is not None:
    if not is_revax_frame(tb.tb_frame):
      kept.append(tb)
    tb = tb.tb_next
  out = None
  for entry in reversed(kept):
    out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
  return out


def filtered(e: Exception) -> Exception:
  """`e` as the outermost boundary raises it: its traceback without revax's frames (and a note),
  unless the option says otherwise or it was filtered already. Used by `api_boundary` and by
  entry points that inline its work (jit's call: its cached path cannot afford a wrapper)."""
  mode = config.traceback_filtering
  if mode in ("off", "tracebackhide") or getattr(e, "_revax_filtered", False):
    return e
  try:
    e._revax_filtered = True
  except Exception:  # noqa: BLE001 (exceptions with __slots__ cannot be marked)
    pass
  if mode != "quiet_remove_frames":
    e.add_note(_NOTE)
  return e.with_traceback(filter_traceback(e.__traceback__))


boundary_depth = _depth  # how many boundaries the current thread is inside


def api_boundary(fun):
  """Wrap a public entry point so that exceptions leaving revax have its frames filtered."""
  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    depth = _depth
    depth.value += 1
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      if depth.value != 1:
        raise
      raise filtered(e)
    finally:
      depth.value -= 1
  return wrapped
