"""config jax_numpy_rank_promotion against jax: 'allow' broadcasts silently, 'warn' warns and
'raise' raises ValueError where NumPy broadcasting adds leading dimensions to a non-scalar
operand (jnp functions, Array operators, under jit), with jax's messages; scalars and
same-rank operands never trigger it. Each case uses shapes of its own (jax warns when it traces,
and its jitted ufuncs trace once per shape)."""
import warnings

import jax
import numpy as np
import pytest

import revax

CASES = {
    "add": (lambda m, a, b: m.numpy.add(a, b), (2, 3), (3,), True),
    "operator": (lambda m, a, b: m.numpy.asarray(a) - m.numpy.asarray(b), (4, 3), (3,), True),
    "arctan2": (lambda m, a, b: m.numpy.arctan2(a, b), (2, 5), (5,), True),
    "maximum": (lambda m, a, b: m.numpy.maximum(a, b), (3, 2, 2), (2, 2), True),
    "true_divide": (lambda m, a, b: m.numpy.true_divide(a, b), (2, 6), (1, 1, 6), True),
    "jit": (lambda m, a, b: m.jit(lambda x, y: x * y)(a, b), (5, 4), (4,), True),
    "scalar": (lambda m, a, b: m.numpy.multiply(a, 2.0), (2, 7), (), False),
    "rank0_array": (lambda m, a, b: m.numpy.add(a, b), (3, 7), (), False),
    "same_rank": (lambda m, a, b: m.numpy.add(a, b), (2, 8), (1, 8), False),
}


def _run(m, mode, call, sa, sb):
  a, b = np.ones(sa, np.float32), np.ones(sb, np.float32)
  with m.numpy_rank_promotion(mode), warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
      out = ("ok", np.asarray(call(m, a, b)).shape)
    except ValueError as e:
      out = ("ValueError", str(e))
  return out, [str(w.message) for w in caught if "rank promotion" in str(w.message)]


@pytest.mark.parametrize("mode", ["raise", "warn", "allow"])
@pytest.mark.parametrize("name", CASES)
def test_rank_promotion_like_jax(mode, name):
  call, sa, sb, promotes = CASES[name]
  (r_out, r_warn), (j_out, j_warn) = (_run(m, mode, call, sa, sb) for m in (revax, jax))
  assert r_out == j_out
  assert r_warn == j_warn
  assert (r_out[0] == "ValueError") == (promotes and mode == "raise")
  assert bool(r_warn) == (promotes and mode == "warn")


def test_option_reads_and_refuses_bad_values():
  with revax.numpy_rank_promotion("raise"):
    assert revax.config.jax_numpy_rank_promotion == "raise"
  assert revax.config.jax_numpy_rank_promotion == "allow"
  with pytest.raises(ValueError):
    revax.config.update("jax_numpy_rank_promotion", "sometimes")
