"""Host plans: eager operators on host arrays take the one-primitive shortcut only where it runs
exactly what the general path runs, and give the same values, dtypes and weak types."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.interpreters import host_plans
from revax._src.numpy.array_methods import _BINARY, _COMPARE
from revax._src.runtime.array import Array

OPERATORS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__truediv__",
             "__floordiv__", "__mod__", "__pow__", "__lt__", "__eq__", "__and__", "__or__",
             "__lshift__", "__matmul__"]

VALUES = [
    np.arange(1, 7, dtype=np.float32).reshape(2, 3),
    np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
    np.array([[True, False, True], [False, False, True]]),
    np.linspace(-1, 1, 6).astype(np.float16).reshape(2, 3),
]


def _general(op, x, y):
  """The operator through the general eager path: the revax.numpy function it stands for."""
  name = op.strip("_")
  swap = name.startswith("r") and name[1:] in _BINARY
  name = name[1:] if swap else name
  fn = getattr(rnp, _BINARY.get(name) or _COMPARE[name])
  return fn(y, x) if swap else fn(x, y)


@pytest.mark.parametrize("op", OPERATORS)
def test_operators_match_the_general_path(op):
  for xv in VALUES:
    for yv in VALUES:
      x, y = rnp.asarray(xv), rnp.asarray(yv.T if op == "__matmul__" else yv)
      try:
        expected = _general(op, x, y)
      except TypeError as e:
        with pytest.raises(TypeError, match=str(e)[:30].replace("(", r"\(").replace("[", r"\[")):
          getattr(x, op)(y)
        continue
      got = getattr(x, op)(y)
      assert type(got) is Array and got.is_on_host
      assert got.aval == expected.aval, (op, xv.dtype, yv.dtype)
      np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_same_type_operands_take_a_plan_and_mixed_types_do_not():
  x = rnp.asarray(np.ones(3, np.float32))
  y = rnp.asarray(np.arange(3, dtype=np.float32))
  i = rnp.asarray(np.arange(3, dtype=np.int32))
  add_plans = type(x).__add__.__closure__  # the method closes over its PlanCache
  cache = next(c.cell_contents for c in add_plans
               if isinstance(c.cell_contents, host_plans.PlanCache))
  cache.clear()
  x + y
  assert cache[(x.aval, y.aval)]  # one `add` of the two inputs: a plan
  x + i
  assert cache[(x.aval, i.aval)] is False  # a convert_element_type first: no plan
  np.testing.assert_array_equal(np.asarray(x + i), np.ones(3) + np.arange(3))


def test_weak_types_are_kept():
  w = rnp.asarray(2.0) * 1.0  # a weakly typed scalar array
  assert w.weak_type
  out = w + w
  assert out.weak_type and out.dtype == np.float32


def test_config_changes_drop_plans():
  x = rnp.asarray(np.ones(3, np.float32))
  x + x
  assert any(len(c) for c in host_plans._caches)
  revax.config.update("enable_x64", revax.config.x64_enabled)
  assert not any(len(c) for c in host_plans._caches)


def test_tracers_and_device_arrays_take_the_general_path():
  x = revax.device_put(np.ones(3, np.float32))
  out = x + x
  np.testing.assert_array_equal(np.asarray(out), 2 * np.ones(3))
  grads = revax.grad(lambda a: (a * a).sum())(rnp.asarray(np.arange(3.0, dtype=np.float32)))
  np.testing.assert_array_equal(np.asarray(grads), 2 * np.arange(3.0))
