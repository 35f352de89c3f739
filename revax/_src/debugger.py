"""`revax.debug.breakpoint`: a pdb-style prompt (`(jdb) `) at run time, eagerly and inside
jit, vmap, scan and the other transformations, as jax.debug.breakpoint.

At the call, the Python stack above it is captured (revax's own frames left out unless
`filter_frames=False`): each frame's file, line, source and locals. Locals that are tracers are
passed to a debug callback (so under jit they arrive as the values computed at run time; under
vmap the prompt opens once per example); the others are kept as they are. When the callback
runs, the prompt evaluates expressions in the chosen frame's locals:

  p EXPR / pp EXPR / EXPR   print (pretty-print) a value
  u(p), d(own)              move between frames (the breakpoint's caller is the bottom one)
  l(ist)                    the source around the current line
  w(here), bt               the captured stack
  c(ont(inue))              resume the program
  q(uit), exit, EOF         exit the process (SystemExit), as JAX's

The prompt reads `sys.stdin` and writes `sys.stdout` at the time it opens (tests feed stdin).
"""
from __future__ import annotations

import cmd
import dataclasses
import inspect
import pprint
import sys
import threading
import traceback
from typing import Any

from revax._src import tree_util
from revax._src.core.trace import Tracer
from revax._src.core.traceback_util import is_revax_frame
from revax._src.lax import callbacks

__all__ = ["breakpoint", "register_debugger"]


class _CantFlatten:
  __repr__ = lambda _: "<cant_flatten>"


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
  """One captured Python frame: where it is, its source and its locals."""
  filename: str
  locals: dict
  globals: dict
  code_context: Any
  source: list
  lineno: int
  offset: int | None

  @classmethod
  def from_frameinfo(cls, info) -> "DebuggerFrame":
    try:
      _, start = inspect.getsourcelines(info.frame)
      source = inspect.getsource(info.frame).split("\n")
      offset = info.lineno - max(start, 1)
      if offset >= len(source):
        source, offset = [], None
    except (OSError, TypeError):
      source, offset = [], None
    return cls(info.filename, dict(info.frame.f_locals), {}, info.code_context, source,
               info.lineno, offset)


def _split_frames(frames):
  """(tracer leaves, a function rebuilding the frames from values for them)."""
  parts = []
  leaves = []
  for frame in frames:
    names, values = [], []
    for name, value in frame.locals.items():
      try:
        flat, tree = tree_util.tree_flatten(value)
      except Exception:  # (anything: an object whose flattening fails is shown as such)
        flat, tree = [_CantFlatten()], None
      names.append(name)
      is_traced = [isinstance(leaf, Tracer) for leaf in flat]
      values.append((flat, tree, is_traced))
      leaves.extend(leaf for leaf, t in zip(flat, is_traced) if t)
    parts.append((frame, names, values))

  def rebuild(concrete):
    it = iter(concrete)
    out = []
    for frame, names, values in parts:
      local = {}
      for name, (flat, tree, is_traced) in zip(names, values):
        flat = [next(it) if t else leaf for leaf, t in zip(flat, is_traced)]
        local[name] = flat[0] if tree is None else tree_util.tree_unflatten(tree, flat)
      out.append(dataclasses.replace(frame, locals=local))
    return out
  return leaves, rebuild


class CliDebugger(cmd.Cmd):
  """The text debugger (JAX's `jdb`)."""
  prompt = "(jdb) "

  def __init__(self, frames, thread_id, stdin=None, stdout=None, completekey="tab"):
    super().__init__(stdin=stdin, stdout=stdout, completekey=completekey)
    self.use_rawinput = stdin is None
    self.frames = frames
    self.frame_index = 0
    self.thread_id = thread_id
    self.intro = "Entering jdb:"

  def evaluate(self, expr):
    frame = self.frames[self.frame_index]
    return eval(expr, {}, {**frame.globals, **frame.locals})  # noqa: S307 (a debugger's job)

  def _error_message(self):
    msg = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
    print("***", msg, file=self.stdout)

  def default(self, line):
    """Evaluates an expression."""
    try:
      print(repr(self.evaluate(line)), file=self.stdout)
    except Exception:
      self._error_message()

  def print_backtrace(self):
    lines = ["Traceback:"]
    for frame in self.frames[::-1]:
      lines.append(f'  File "{frame.filename}", line {frame.lineno}')
      lines.append("    <no source>" if frame.offset is None else
                   f"    {frame.source[frame.offset].strip()}")
    print("\n".join(lines), file=self.stdout)

  def print_context(self, num_lines=2):
    frame = self.frames[self.frame_index]
    lines = [f"> {frame.filename}({frame.lineno})"]
    if frame.offset is not None:
      for i, line in enumerate(frame.source):
        if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
          lines.append(f"->  {line}" if i == frame.offset else f"    {line}")
    print("\n".join(lines), file=self.stdout)

  def do_p(self, arg):
    """p expression
    Evaluates and prints the value of an expression
    """
    self.default(arg)

  def do_pp(self, arg):
    """pp expression
    Evaluates and pretty-prints the value of an expression
    """
    try:
      print(pprint.pformat(self.evaluate(arg)), file=self.stdout)
    except Exception:
      self._error_message()

  def do_up(self, arg, /):
    """u(p)
    Move up a stack frame.
    """
    if self.frame_index == len(self.frames) - 1:
      print("At topmost frame.", file=self.stdout)
    else:
      self.frame_index += 1
    self.print_context()
  do_u = do_up

  def do_down(self, arg, /):
    """d(own)
    Move down a stack frame.
    """
    if self.frame_index == 0:
      print("At bottommost frame.", file=self.stdout)
    else:
      self.frame_index -= 1
    self.print_context()
  do_d = do_down

  def do_list(self, _):
    """l(ist)
    List source code for the current file.
    """
    self.print_context(num_lines=5)
  do_l = do_list

  def do_continue(self, _):
    """c(ont(inue))
    Continue the program's execution.
    """
    return True
  do_c = do_cont = do_continue

  def do_quit(self, _):
    """q(uit)\n(exit)
    Quit the debugger. The program is given an exit command.
    """
    sys.exit(0)
  do_q = do_EOF = do_exit = do_quit

  def do_where(self, _):
    """w(here)
    Prints a stack trace with the most recent frame on the bottom.
    'bt' is an alias for this command.
    """
    self.print_backtrace()
  do_w = do_bt = do_where

  def run(self):
    while True:
      try:
        self.cmdloop()
        break
      except KeyboardInterrupt:
        print("--KeyboardInterrupt--", file=sys.stdout)


def _run_cli(frames, thread_id, **kwargs):
  CliDebugger(frames, thread_id, **kwargs).run()


_debuggers: dict = {"cli": (-1, _run_cli)}
_lock = threading.Lock()


def register_debugger(name: str, debugger, priority: int) -> None:
  """Add a debugger backend: `debugger(frames, thread_id, **kwargs)`; the highest priority
  one is used unless `breakpoint(backend=name)` names one."""
  if name in _debuggers:
    raise ValueError(f'Debugger with name "{name}" already registered.')
  _debuggers[name] = (priority, debugger)


def _get_debugger(backend):
  if backend is not None and backend in _debuggers:
    return _debuggers[backend][1]
  return max(_debuggers.values(), key=lambda pd: pd[0])[1]


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
  """Open an interactive debugger (a `(jdb) ` prompt) when the program reaches this point.

  Args:
    backend: the debugger backend's name (default: the highest-priority one, the CLI).
    filter_frames: leave revax's internal frames out of the stack shown.
    num_frames: how many frames above this one to capture (default: all).
    ordered: run in program order with other ordered debug callbacks.
    token: instead of `ordered`: an array (pytree) the breakpoint waits for and returns
      unchanged (pass it on, or the breakpoint is pruned as dead code).
    **kwargs: passed to the debugger (the CLI takes `stdin` and `stdout`).

  Returns:
    `token` if given, else None.

  Example:
    >>> import io
    >>> def f(x):
    ...   y = x * 2
    ...   revax.debug.breakpoint(stdin=io.StringIO("p y\\nc\\n"))
    ...   return y
    >>> revax.jit(f)(1.5)  # doctest: +ELLIPSIS
    Entering jdb:
    (jdb) Array(3., dtype=float32)
    (jdb) Array(3., dtype=float32...)
  """
  if token is not None and ordered:
    raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
  infos = inspect.stack()[1:]
  frames = [DebuggerFrame.from_frameinfo(info) for info in infos
            if not (filter_frames and is_revax_frame(info.frame))]
  del infos
  if num_frames is not None:
    frames = frames[:num_frames]
  leaves, rebuild = _split_frames(frames)

  def run(*values):
    thread_id = None
    if threading.current_thread() is not threading.main_thread():
      thread_id = threading.get_ident()
    with _lock:
      _get_debugger(backend)(rebuild(values), thread_id, **kwargs)

  if token is None:
    callbacks.debug_callback(run, *leaves, ordered=ordered)
    return None
  from revax._src.lax.stop_gradient import stop_gradient  # beside the callbacks

  def run_and_pass(tok, *values):
    run(*values)
    return tok
  token, leaves = stop_gradient((token, leaves))
  return callbacks.pure_callback(run_and_pass, token, token, *leaves)
