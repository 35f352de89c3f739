"""Operands that NumPy's broadcasting rule refuses, through every binary elementwise function of
jax.numpy: the exception type (and message) are jax's. jax.numpy broadcasts operands of different
ranks itself (promote_shapes: lax.broadcast_shapes' ValueError) and leaves operands of one rank
to lax (its TypeError, "add got incompatible shapes for broadcasting: (2,), (3,).")."""
import numpy as np
import pytest

import revax.numpy as rnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
          "mod", "fmod", "power", "float_power", "maximum", "minimum", "fmax", "fmin",
          "arctan2", "hypot", "copysign", "nextafter", "logaddexp", "logaddexp2", "heaviside",
          "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
          "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
          "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm", "divmod"]
SHAPES = [((2, 3), (4,)), ((2,), (3,)), ((5, 1, 3), (2, 4)), ((3,), (2, 2))]


def _outcome(lib, name, a, b):
  x = np.ones(a, np.int32 if name in ("gcd", "lcm") or "bitwise" in name or "shift" in name
              else np.float32)
  y = np.ones(b, x.dtype)
  try:
    getattr(lib, name)(x, y)
  except Exception as e:  # noqa: BLE001 -- the outcome is the exception
    return type(e).__name__, str(e)
  return "ok", ""


@pytest.mark.parametrize("name", BINARY)
def test_unbroadcastable_operands_raise_as_jax(name):
  for a, b in SHAPES:
    got, want = _outcome(rnp, name, a, b), _outcome(jnp, name, a, b)
    assert got[0] == want[0], (name, a, b, got, want)
    if want[0] == "ValueError":  # (heaviside's names the shapes of jax's inner where)
      assert got[1].startswith("Incompatible shapes for broadcasting: shapes=["), got[1]
