"""Error messages name the traced function as jax's do (`__name__` and its source line, not the
qualified name): jit and scan bodies that return a mutable array reference, for nested
functions, methods and lambdas, against jax."""
import jax
import pytest

import revax


class _Holder:
  def method(self, r):
    return r


def _nested():
  def inner(r):
    return r
  return inner


FUNCTIONS = {"nested": _nested(), "method": _Holder().method, "lambda": lambda r: r}


def _message(lib, kind, fn):
  r = lib.new_ref(0.0)
  try:
    if kind == "jit":
      lib.jit(fn)(r)
    else:
      lib.lax.scan(lambda c, x: (fn(c), None), r, None, length=1)
  except ValueError as e:
    return str(e)
  return None


@pytest.mark.parametrize("kind", ["jit", "scan"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_returned_ref_errors_name_the_function_as_jax(kind, name):
  want = _message(jax, kind, FUNCTIONS[name])
  got = _message(revax, kind, FUNCTIONS[name])
  assert want is not None and got == want
