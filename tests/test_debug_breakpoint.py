"""revax.debug.breakpoint against jax.debug.breakpoint: the same program, fed the same commands
on stdin, prints the same prompt session (values, frames, source context, errors), eagerly,
under jit, vmap and with a token; `q` exits the process as JAX's does."""
import contextlib
import io

import jax
import numpy as np
import pytest

import revax

SESSION = "p y\npp {'a': x, 'k': 1}\nw\nu\np z\nup\nd\nl\nbogus_name\n1 +\nc\n"


def _program(m, commands, **kwargs):
  def f(x):
    y = x * 2
    m.debug.breakpoint(stdin=io.StringIO(commands), num_frames=2, **kwargs)
    return y

  def outer(x):
    z = 10
    return f(x + 1) + z
  return outer


def _session(m, run):
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    result = run(m)
    if hasattr(result, "block_until_ready"):
      result.block_until_ready()
  return out.getvalue(), np.asarray(result)


def _same_session(run):
  (r_text, r_val), (j_text, j_val) = _session(revax, run), _session(jax, run)
  assert r_text == j_text
  np.testing.assert_array_equal(r_val, j_val)
  return r_text


def test_eager():
  text = _same_session(lambda m: _program(m, SESSION)(np.float32(1.0)))
  assert "(jdb) np.float32(4.0)" in text and "*** NameError" in text


def test_jit():
  text = _same_session(lambda m: m.jit(_program(m, SESSION))(np.float32(1.0)))
  assert "(jdb) Array(4., dtype=float32)" in text and "At topmost frame." in text


def test_vmap_one_prompt_per_example():
  def run(m):
    def f(x):
      y = x * 3
      m.debug.breakpoint(stdin=io.StringIO("p y\nc\n" * 3), num_frames=1)  # one stream
      return y
    return m.vmap(f)(np.arange(3.0, dtype=np.float32))
  text = _same_session(run)
  assert text.count("Entering jdb:") == 3


def test_token():
  def run(m):
    def g(x):
      y = x + 1
      t = m.debug.breakpoint(token=y, stdin=io.StringIO("p y\nc\n"), num_frames=1)
      return t * 2
    return m.jit(g)(np.float32(3))
  text = _same_session(run)
  assert "Array(4., dtype=float32)" in text


def test_quit_exits_and_errors():
  for m in (revax, jax):
    with pytest.raises(SystemExit), contextlib.redirect_stdout(io.StringIO()):
      _program(m, "q\n")(np.float32(1.0))
    with pytest.raises(ValueError, match="mutually exclusive"):
      m.debug.breakpoint(token=np.float32(1), ordered=True)


def test_custom_backend():
  seen = []
  revax._src.debugger.register_debugger("recorder", lambda frames, tid, **kw: seen.append(
      sorted(frames[0].locals)), 5)
  try:
    def h(x):
      w = x - 1
      revax.debug.breakpoint()
      return w
    revax.jit(h)(np.float32(2))
  finally:
    del revax._src.debugger._debuggers["recorder"]
  assert seen == [["w", "x"]]
