"""Unsigned (and wider-than-int32) index values are never wrapped into negative or in-bounds
ones (issue 14 item 15): uint32 indices >= 2**31 and int64 indices >= 2**32 are out of bounds,
eager and under jit, for getitem, take, .at[].get/set/add and take_along_axis."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp

X = np.arange(5, dtype=np.float32)
U32 = np.array([2**31, 1, 2**32 - 1, 5, 4], np.uint32)

OPS = {
    "at_set": lambda m, a, i: a.at[i].set(9.0),
    "at_add": lambda m, a, i: a.at[i].add(1.0),
    "take": lambda m, a, i: m.take(a, i),
    "take_clip": lambda m, a, i: m.take(a, i, mode="clip"),
    "at_get_fill": lambda m, a, i: a.at[i].get(mode="fill", fill_value=-1.0),
}
TAKE_ALONG = lambda m, a, i: m.take_along_axis(a, m.atleast_1d(i), axis=0)  # noqa: E731


def _both(op, i):
  """revax eagerly and under jit (with `i` static-free: a NumPy array or a 0-d array)."""
  eager = np.asarray(op(rnp, rnp.asarray(X), i))
  jitted = np.asarray(revax.jit(lambda a, j: op(rnp, a, j))(X, i))
  return eager, jitted


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("scalar", [False, True], ids=["array", "scalar"])
def test_unsigned_out_of_bound_indices_match_jax(name, scalar):
  op = OPS[name]
  idx = U32[0] if scalar else U32
  want = np.asarray(jax.jit(lambda a, j: op(jnp, a, j))(X, idx))
  eager, jitted = _both(op, idx)
  np.testing.assert_array_equal(eager, want)
  np.testing.assert_array_equal(jitted, want)


def test_unsigned_getitem_clamps_large_indices_to_the_end():
  # Out-of-bound gathers clamp (JAX's getitem rule); a uint32 2**31 is past the end, never the
  # negative -2**31 (jax.numpy's array getitem wraps it to element 0 here; its scalar getitem,
  # take(mode='clip') and every scatter treat it as past the end, as revax does everywhere).
  for eager_or_jit in _both(lambda m, a, i: a[i], U32):
    np.testing.assert_array_equal(eager_or_jit, [4, 1, 4, 4, 4])
  for eager_or_jit in _both(lambda m, a, i: a[i], U32[0]):
    assert float(eager_or_jit) == 4.0
  assert float(jax.jit(lambda a, i: a[i])(X, U32[0])) == 4.0


def test_take_along_axis_unsigned():
  # jax.numpy wraps uint32 2**32-1 to -1 (element 4) here; it is out of bounds (NaN fill)
  for out in _both(TAKE_ALONG, U32):
    np.testing.assert_array_equal(out, [np.nan, 1, np.nan, np.nan, 4])


def test_scatter_with_uint32_2p31_does_not_write_the_last_element():
  for out in _both(OPS["at_set"], np.array([2**31], np.uint32)):
    np.testing.assert_array_equal(out, X)


def test_int64_indices_beyond_int32_under_x64():
  with revax.enable_x64(True):
    x = rnp.arange(5.0)
    i = rnp.asarray(np.array([2**32, 2**32 + 1, -(2**32), 2], np.int64))
    for out in (x.at[i].set(9.0), revax.jit(lambda a, j: a.at[j].set(9.0))(x, i)):
      np.testing.assert_array_equal(out, [0, 1, 9, 3, 4])
    for out in (rnp.take(x, i), revax.jit(rnp.take)(x, i)):
      np.testing.assert_array_equal(np.isnan(out), [True, True, True, False])


def test_small_unsigned_dtypes_unchanged():
  i = np.array([0, 4, 255], np.uint8)
  for out in _both(OPS["take"], i):
    np.testing.assert_array_equal(out, [0, 4, np.nan])
