"""revax.debug.print / revax.debug.callback against jax.debug: the printed text (captured from
stdout) eager, under jit, vmap (once per example), grad (primal values), scan and cond, ordered;
the format checks and the two-call form."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
import revax
import revax.numpy as rnp
from tests.platform_tolerances import printed_lines

x3 = np.array([0.5, 1.0, 2.0], np.float32)


def _printed(capsys, lib, fn, *args):
  capsys.readouterr()
  out = fn(lib)(*args)
  lib.block_until_ready(out)
  return capsys.readouterr().out


def _same_output(capsys, fn, *args, unordered=False):
  """What revax prints equals what jax prints; `unordered`: prints whose order is XLA's schedule
  (compared as sorted lines on a TPU, whose order is its own: platform_tolerances.PRINT_ORDER)."""
  r = _printed(capsys, revax, fn, *args)
  j = _printed(capsys, jax, fn, *args)
  same = printed_lines(r) == printed_lines(j) if unordered else r == j
  assert same, f"revax printed:\n{r}\njax printed:\n{j}"
  assert r  # something was printed
  return r


def _basic(lib):
  def f(x):
    lib.debug.print("x = {x}, sum = {}", x.sum(), x=x)
    lib.debug.print("no placeholders:", x[0], 3, skip_format_check=True)
    lib.debug.print("{a[0]} {a[1]:} {b}", a=(x[1], x[2]), b="static")
    return x * 2
  return f


@pytest.mark.parametrize("jit", [False, True])
def test_print_eager_and_jit(capsys, jit):
  _same_output(capsys, lambda lib: lib.jit(_basic(lib)) if jit else _basic(lib), x3,
               unordered=jit)


def test_print_under_vmap_once_per_example(capsys):
  def fn(lib):
    def f(x, y):
      lib.debug.print("x={x} y={y}", x=x, y=y)
      return x + y
    return lib.jit(lib.vmap(f, in_axes=(0, None)))
  out = _same_output(capsys, fn, x3, np.float32(1.0), unordered=True)
  assert out.count("\n") == 3


def test_print_under_grad_prints_primals(capsys):
  def fn(lib):
    def f(x):
      y = lib.numpy.sin(x)
      lib.debug.print("y={}", y)
      return (y * y).sum()
    return lib.jit(lib.grad(f))
  _same_output(capsys, fn, x3)
  _same_output(capsys, lambda lib: lib.grad(lambda x: _basic(lib)(x).sum()), x3)


def test_print_in_scan_and_cond_ordered(capsys):
  def fn(lib):
    def f(xs):
      def body(c, x):
        lib.debug.print("step {} carry {}", x, c, ordered=True)
        return c + x, None
      c, _ = lib.lax.scan(body, np.float32(0.0), xs)
      lib.lax.cond(c > 1, lambda: lib.debug.print("big {}", c, ordered=True),
                   lambda: lib.debug.print("small {}", c, ordered=True))
      lib.debug.print("done {}", c, ordered=True)
      return c
    return lib.jit(f)
  out = _same_output(capsys, fn, x3)
  assert out.splitlines()[-1] == "done 3.5"


def test_print_options_and_two_call_form(capsys):
  def fn(lib):
    def f(x):
      lib.debug.print(ordered=True)("{x}", x=x / 3)
      return x
    return lib.jit(f)
  with np.printoptions(precision=2):
    _same_output(capsys, fn, x3)


def test_format_errors():
  for lib in (revax, jax):
    with pytest.raises(ValueError, match="Unused keyword arguments"):
      lib.debug.print("hello", x=1.0)
    with pytest.raises(ValueError, match="Unused positional arguments"):
      lib.debug.print("{}", 1.0, 2.0)
    with pytest.raises(TypeError, match="two-call form"):
      lib.debug.print(None, 1.0)


def test_debug_callback_values_and_dce(capsys):
  def run(lib):
    seen = []

    def f(x):
      lib.debug.callback(lambda a, b: seen.append((a.tolist(), b)), x * 2, b="tag")
      return x  # the callback's result is unused: it must run anyway
    lib.jit(f)(x3)
    lib.vmap(f)(x3)
    return seen
  assert run(revax) == run(jax)


def test_debug_callback_raising_reaches_caller():
  def boom(a):
    raise ZeroDivisionError("in debug callback")
  f = revax.jit(lambda x: revax.debug.callback(boom, x) or x)
  with pytest.raises(RuntimeError, match="in debug callback") as info:
    f(x3)
  assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_debug_log_emits_records_with_the_callers_line(caplog):
  import logging

  def f(x):
    revax.debug.log("value {x}", x=x)  # the line the record names
    return x
  with caplog.at_level(logging.INFO, logger="revax._src.debugging"):
    revax.jit(f)(x3)
  (record,) = [r for r in caplog.records if r.name == "revax._src.debugging"]
  assert record.getMessage() == "value [0.5 1.  2. ]"
  assert record.pathname == __file__ and record.levelno == logging.INFO
