"""revax.errors' classes are raised where JAX raises its own, with messages that name the traced
function and argument; escaped tracers are reported as such; tracebacks hide revax's frames
(issue 14 item 13)."""
import traceback

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.errors
import revax.numpy as rnp


def _raised(fn):
  try:
    fn()
  except Exception as e:  # noqa: BLE001 - the test compares what was raised
    return e
  raise AssertionError("nothing raised")


def _branch(x, y):
  if x > y:
    return x
  return y


def _index_with(x, n):
  return [1, 2, 3][n]


def _to_numpy(x):
  return np.sin(x)


def _as_int(x):
  return int(x)


def _bool_mask(x):
  return x[x > 0]


CASES = [
    ("TracerBoolConversionError", _branch, (1.0, 2.0)),
    ("TracerIntegerConversionError", _index_with, (1.0, 1)),
    ("TracerArrayConversionError", _to_numpy, (np.ones(3, np.float32),)),
    ("ConcretizationTypeError", _as_int, (1.0,)),
    ("NonConcreteBooleanIndexError", _bool_mask, (np.ones(3, np.float32),)),
]


@pytest.mark.parametrize("name,fun,args", CASES, ids=[c[0] for c in CASES])
def test_same_error_class_as_jax(name, fun, args):
  ours = _raised(lambda: revax.jit(fun)(*args))
  theirs = _raised(lambda: jax.jit(fun)(*args))
  assert type(theirs) is getattr(jax.errors, name)
  assert type(ours) is getattr(revax.errors, name), repr(ours)


def test_traced_control_flow_names_function_and_arguments():
  msg = str(_raised(lambda: revax.jit(_branch)(1.0, 2.0)))
  assert "while tracing the function _branch at" in msg and "test_errors.py" in msg
  assert "for jit" in msg
  assert "depends on the values of the arguments x and y" in msg
  msg = str(_raised(lambda: revax.jit(lambda a, b: _branch(a, 0.0) + b)(1.0, 2.0)))
  assert "depends on the value of the argument a." in msg
  msg = str(_raised(lambda: revax.jit(lambda p: _branch(p["w"][1], 0.0))(
      {"w": (1.0, 2.0)})))
  assert "argument p['w'][1]" in msg


def test_static_args_are_not_named_as_traced():
  msg = str(_raised(lambda: revax.jit(lambda s, x: x if x > s else s, static_argnums=0)(
      0.0, 1.0)))
  assert "argument x." in msg


def test_leaked_tracer_is_an_unexpected_tracer_error_before_compiling():
  leaked = []

  @revax.jit
  def keep(x):
    leaked.append(x)
    return x * 2
  keep(1.0)
  for use in (lambda y: y + leaked[0], lambda y: leaked[0], lambda y: rnp.sin(leaked[0]) * y):
    e = _raised(lambda: revax.jit(use)(1.0))
    assert isinstance(e, revax.errors.UnexpectedTracerError), repr(e)
    assert "keep" in str(e) and "unexpected tracer" in str(e)
  # used outside any transformation
  e = _raised(lambda: rnp.sin(leaked[0]))
  assert isinstance(e, revax.errors.UnexpectedTracerError)
  # JAX raises the same class
  jleaked = []
  jax.jit(lambda x: jleaked.append(x) or x)(1.0)
  assert isinstance(_raised(lambda: jax.jit(lambda y: y + jleaked[0])(1.0)),
                    jax.errors.UnexpectedTracerError)


def test_bool_of_empty_array_says_so():
  for m in (rnp, jnp):
    for shape in ((0,), (0, 3)):
      with pytest.raises(ValueError, match="truth value of an empty array is ambiguous"):
        bool(m.zeros(shape))
  with pytest.raises(ValueError, match="more than one element"):
    bool(rnp.zeros(2))
  assert bool(rnp.ones(())) and bool(rnp.ones((1, 1)))


def _user_function(x):
  return x[x > 0]


def test_traceback_hides_revax_frames_by_default():
  e = _raised(lambda: revax.jit(_user_function)(np.ones(3, np.float32)))
  files = [f.filename for f in traceback.extract_tb(e.__traceback__)]
  revax_files = [f for f in files if "/revax/" in f and "/tests/" not in f]
  assert any(f.endswith("test_errors.py") for f in files)
  assert len(revax_files) <= 1, revax_files  # at most the boundary itself
  assert any("jax_traceback_filtering" in n for n in getattr(e, "__notes__", []))
  with revax.config.override("jax_traceback_filtering", "off"):
    e = _raised(lambda: revax.jit(_user_function)(np.ones(3, np.float32)))
  files = [f.filename for f in traceback.extract_tb(e.__traceback__)]
  assert len([f for f in files if "/revax/_src/" in f]) > 3
  assert not getattr(e, "__notes__", [])


def test_errors_keep_their_builtin_bases():
  assert issubclass(revax.errors.ConcretizationTypeError, TypeError)
  assert issubclass(revax.errors.TracerBoolConversionError, revax.errors.ConcretizationTypeError)
  assert issubclass(revax.errors.NonConcreteBooleanIndexError, IndexError)
  assert issubclass(revax.errors.JaxRuntimeError, RuntimeError)
  from revax._src.runtime.pjrt import CompileError, RuntimeBackendError
  assert issubclass(RuntimeBackendError, revax.errors.JaxRuntimeError)
  assert issubclass(CompileError, revax.errors.JaxRuntimeError)
  assert rnp.NonConcreteBooleanIndexError is revax.errors.NonConcreteBooleanIndexError
