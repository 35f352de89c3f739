"""JAX's `source_info_util` (`jax.extend.source_info_util`) and the traceback filtering names of
`jax._src.traceback_util`, for libraries that register their files or mark API boundaries.

revax keeps no per-equation source information and does not rewrite tracebacks, so registering
an exclusion records the path (readable in `excluded_paths`) and `api_boundary` returns the
function it is given; name stacks are kept so that `extend_name_stack` and friends nest.
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ["register_exclusion", "excluded_paths", "api_boundary", "SourceInfo", "NameStack",
           "current", "new_source_info", "current_name_stack", "extend_name_stack",
           "new_name_stack", "reset_name_stack", "set_name_stack", "transform_name_stack",
           "summarize", "user_context"]

excluded_paths: list[str] = []


def register_exclusion(path: str) -> None:
  """Record `path` as a library file to leave out of user-facing tracebacks.

  Example:
    >>> from revax.extend import source_info_util
    >>> source_info_util.register_exclusion("/tmp/mylib.py")
  """
  excluded_paths.append(path)


def api_boundary(fun=None, *, repro_api_name=None, repro_user_func=False):
  """Mark `fun` as an API boundary (JAX filters tracebacks there; revax returns `fun` as is).

  Example:
    >>> from revax._src.extend.source_info import api_boundary
    >>> api_boundary(len)([1, 2])
    2
  """
  del repro_api_name, repro_user_func
  if fun is None:
    return lambda f: f
  return fun


class NameStack(tuple):
  """A stack of names (scopes and transformations) as a tuple of strings."""

  def extend(self, name) -> "NameStack":
    return NameStack((*self, *(name if isinstance(name, tuple) else (name,))))

  def wrap_name(self, name: str) -> str:
    return "/".join((*self, name))

  def transform(self, name: str) -> "NameStack":
    return self.extend(name)

  def __str__(self):
    return "/".join(self)


class SourceInfo:
  """Where an equation came from (revax records none: an empty traceback and a name stack)."""
  __slots__ = ("traceback", "name_stack")

  def __init__(self, traceback=None, name_stack=NameStack()):
    self.traceback = traceback
    self.name_stack = name_stack

  def replace(self, traceback=None, name_stack=None) -> "SourceInfo":
    return SourceInfo(traceback if traceback is not None else self.traceback,
                      name_stack if name_stack is not None else self.name_stack)


class _State(threading.local):
  def __init__(self):
    self.name_stack = NameStack()


_state = _State()


def current() -> SourceInfo:
  """The source info new equations get."""
  return SourceInfo(None, _state.name_stack)


def new_source_info() -> SourceInfo:
  """A SourceInfo with no frame and an empty name stack (revax records no user frames)."""
  return SourceInfo(None, NameStack())


def current_name_stack() -> NameStack:
  """The name stack in force (the names of the transformations and scopes entered)."""
  return _state.name_stack


@contextlib.contextmanager
def set_name_stack(stack: NameStack):
  """A context in which `stack` is the name stack."""
  saved, _state.name_stack = _state.name_stack, NameStack(stack)
  try:
    yield
  finally:
    _state.name_stack = saved


def extend_name_stack(name: str):
  """A context in which `name` is pushed on the name stack."""
  return set_name_stack(_state.name_stack.extend(name))


def new_name_stack(name: str = "") -> NameStack:
  """A name stack holding `name` (empty for "")."""
  return NameStack((name,)) if name else NameStack()


def reset_name_stack():
  """A context with an empty name stack."""
  return set_name_stack(NameStack())


def transform_name_stack(name: str):
  """A context in which the name stack is marked as transformed by `name` (e.g. "jvp")."""
  return set_name_stack(_state.name_stack.transform(name))


def summarize(source_info: SourceInfo, num_frames=1) -> str:
  """A one-line description of where an equation came from: "unknown" (revax records no user
  frames)."""
  del source_info, num_frames
  return "unknown"


@contextlib.contextmanager
def user_context(c, *, name_stack=None):
  """A context that would attach user frames to equations (revax records none)."""
  del c
  if name_stack is None:
    yield
  else:
    with set_name_stack(name_stack):
      yield
