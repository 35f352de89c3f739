"""Shape primitives: every validation raises jax.lax's exception type with a message naming the
offending shapes/dims; params are normalized tuples; a few differential checks against jax."""
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.lax as lax

x23 = np.arange(6, dtype=np.float32).reshape(2, 3)


def _eqns(fun, *args):
  return revax.make_jaxpr(fun)(*args).jaxpr.eqns


# --- broadcast_in_dim and its wrappers -----------------------------------------------------------
def test_broadcast_in_dim_errors():
  with pytest.raises(TypeError, match=r"one entry per operand dimension: operand shape \(2, 3\)"):
    lax.broadcast_in_dim(x23, (2, 3), (0,))
  with pytest.raises(TypeError, match=r"strictly increasing and in range for output rank 2"):
    lax.broadcast_in_dim(x23, (2, 3), (1, 0))
  with pytest.raises(TypeError, match=r"operand dimension sizes must either be 1, or be equal "
                                      r"to their corresponding dimensions in the target "
                                      r"broadcast shape; got operand of shape \(2, 3\), target "
                                      r"broadcast shape \(2, 4\), broadcast_dimensions "
                                      r"\(0, 1\) $"):
    lax.broadcast_in_dim(x23, (2, 4), (0, 1))
  with pytest.raises(TypeError, match="non-negative sizes"):
    lax.broadcast(x23, (-1,))


def test_expand_dims_and_broadcast_bind_broadcast_in_dim():
  (eqn,) = _eqns(lambda a: lax.expand_dims(a, [0, -1]), x23)
  assert eqn.primitive.name == "broadcast_in_dim"
  assert eqn.params == {"shape": (1, 2, 3, 1), "broadcast_dimensions": (1, 2)}
  (eqn,) = _eqns(lambda a: lax.broadcast(a, [4]), x23)
  assert eqn.params == {"shape": (4, 2, 3), "broadcast_dimensions": (1, 2)}
  # as jax's: an Array of rank >= `rank` comes back itself, a NumPy array as an Array owning a
  # copy (issue 33, class 8: never the caller's array)
  a23 = revax.numpy.asarray(x23)
  assert lax.broadcast_to_rank(a23, 1) is a23
  out = lax.broadcast_to_rank(x23, 1)
  assert isinstance(out, revax.Array) and np.array_equal(out, x23)


def test_expand_dims_errors():
  with pytest.raises(ValueError, match="axis 5 is out of bounds for array of dimension 3"):
    lax.expand_dims(x23, (5,))
  with pytest.raises(ValueError, match=r"repeated axis in lax.expand_dims: \(0, 0\)"):
    lax.expand_dims(x23, (0, 0))
  with pytest.raises(ValueError, match=r"repeated axis in lax.expand_dims: \(0, -4\)"):
    lax.expand_dims(x23, (0, -4))


# --- reshape -------------------------------------------------------------------------------------
def test_reshape_errors():
  with pytest.raises(TypeError, match=r"reshape new_sizes must all be non-negative, got \(-1,\)"):
    lax.reshape(x23, (-1,))
  with pytest.raises(TypeError, match=r"total size must be unchanged, got new_sizes \(4,\) for "
                                      r"shape \(2, 3\)"):
    lax.reshape(x23, (4,))
  with pytest.raises(TypeError, match=r"dimensions must be a permutation of operand dimensions, "
                                      r"got dimensions \(0, 0\) for shape \(2, 3\)"):
    lax.reshape(x23, (3, 2), (0, 0))
  with pytest.raises(TypeError, match="reshape new_sizes must be a sequence of integers"):
    lax.reshape(x23, (6.0,))


def test_reshape_params_and_identity():
  (eqn,) = _eqns(lambda a: lax.reshape(a, [np.int64(3), 2], [1, 0]), x23)
  assert eqn.params == {"new_sizes": (3, 2), "dimensions": (1, 0)}
  (eqn,) = _eqns(lambda a: lax.reshape(a, (6,), (0, 1)), x23)
  assert eqn.params["dimensions"] is None  # the identity permutation is dropped
  assert _eqns(lambda a: lax.reshape(a, (2, 3)), x23) == []


# --- transpose -----------------------------------------------------------------------------------
@pytest.mark.parametrize("perm", [(0, 0), (0,), (-1, 0), (0, 1, 2)])
def test_transpose_not_a_permutation(perm):
  with pytest.raises(TypeError, match=rf"transpose permutation isn't a permutation of operand "
                                      rf"dimensions, got permutation \({perm[0]}, ?.*for operand "
                                      rf"shape \(2, 3\)"):
    lax.transpose(x23, perm)


def test_transpose_identity_binds_nothing():
  assert _eqns(lambda a: lax.transpose(a, (0, 1)), x23) == []


# --- squeeze -------------------------------------------------------------------------------------
def test_squeeze_errors():
  with pytest.raises(ValueError, match=r"cannot select an axis to squeeze out which has size not "
                                       r"equal to one, got shape=\(2, 3\) and dimensions=\(0,\)"):
    lax.squeeze(x23, (0,))
  with pytest.raises(ValueError, match="axis 5 is out of bounds for array of dimension 2"):
    lax.squeeze(x23, (5,))
  with pytest.raises(ValueError, match="axis 0 is out of bounds for array of dimension 0"):
    lax.squeeze(np.float32(1), (0,))
  with pytest.raises(ValueError, match=r"dimensions are not unique: \(1, -1\)"):
    lax.squeeze(np.ones((2, 1)), (1, -1))


def test_squeeze_normalizes_and_sorts_dims():
  (eqn,) = _eqns(lambda a: lax.squeeze(a, [-1, 0]), np.ones((1, 3, 1), np.float32))
  assert eqn.params == {"dimensions": (0, 2)}


# --- rev -----------------------------------------------------------------------------------------
def test_rev_errors():
  with pytest.raises(TypeError, match=r"rev dimensions must all be less than operand ndim, got "
                                      r"dimensions \(2,\) for operand ndim 2"):
    lax.rev(x23, (2,))
  with pytest.raises(TypeError, match=r"rev dimensions must be unique, got \(0, 0\)"):
    lax.rev(x23, (0, 0))
  with pytest.raises(TypeError, match=r"rev dimensions must have every element be nonnegative, "
                                      r"got \(-1,\)"):
    lax.rev(x23, (-1,))


# --- pad -----------------------------------------------------------------------------------------
def test_pad_errors():
  with pytest.raises(ValueError, match=r"length of padding_config must equal the number of axes "
                                       r"of operand, got padding_config \(\(0, 0, 0\),\) for "
                                       r"operand shape \(2, 3\)"):
    lax.pad(x23, 0.0, [(0, 0, 0)])
  with pytest.raises(ValueError, match=r"interior padding in padding_config must be nonnegative"):
    lax.pad(x23, 0.0, [(0, 0, -1), (0, 0, 0)])
  with pytest.raises(ValueError, match=r"Dimension size after padding is not at least 0, got "
                                       r"result shape \(-1, 3\)"):
    lax.pad(x23, 0.0, [(-2, -1, 0), (0, 0, 0)])
  with pytest.raises(TypeError, match="pad operand and padding_value must be same dtype: got "
                                      "float32 and int32"):
    lax.pad(x23, np.int32(0), [(0, 0, 0), (0, 0, 0)])
  with pytest.raises(ValueError, match=r"padding_value must be a scalar; got shape \(2,\)"):
    lax.pad(x23, np.zeros(2, np.float32), [(0, 0, 0), (0, 0, 0)])
  with pytest.raises(ValueError, match=r"entries must be \(low, high, interior\) triples, got "
                                       r"\(1, 1\)"):
    lax.pad(x23, 0.0, [(1, 1), (0, 0, 0)])


def test_pad_matches_jax_with_negative_and_interior_padding():
  import jax
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  config = ((-1, 2, 3), (1, -2, 1), (-3, -1, 2))
  expected = np.asarray(jax.lax.pad(x, np.float32(-1), config))
  np.testing.assert_array_equal(lax.pad(x, -1.0, config), expected)
  np.testing.assert_array_equal(revax.jit(lambda a: lax.pad(a, -1.0, config))(x), expected)


def test_pad_lowers_to_stablehlo_pad():
  text = revax.jit(lambda a: lax.pad(a, 0.0, [(1, -1, 2), (0, 0, 0)])).lower(x23).as_text()
  for prop in ("edge_padding_low = array<i64: 1, 0>", "edge_padding_high = array<i64: -1, 0>",
               "interior_padding = array<i64: 2, 0>"):
    assert prop in text


# --- concatenate ---------------------------------------------------------------------------------
def test_concatenate_errors():
  with pytest.raises(ValueError, match="concatenate requires a non-empty sequence of arrays"):
    lax.concatenate([], 0)
  with pytest.raises(TypeError, match=r"Cannot concatenate arrays with different numbers of "
                                      r"dimensions: got \(2, 3\), \(3,\)"):
    lax.concatenate([x23, np.ones(3, np.float32)], 0)
  with pytest.raises(TypeError, match=r"requires arguments to have the same dtypes, got float32, "
                                      r"int32"):
    lax.concatenate([x23, x23.astype(np.int32)], 0)
  with pytest.raises(TypeError, match=r"shapes that differ in dimensions other than the one being "
                                      r"concatenated: concatenating along dimension 0 for shapes "
                                      r"\(2, 3\), \(2, 4\)"):
    lax.concatenate([x23, np.ones((2, 4), np.float32)], 0)
  with pytest.raises(TypeError, match=r"concatenate dimension out of bounds: dimension 2 for "
                                      r"shapes \(2, 3\), \(2, 3\)"):
    lax.concatenate([x23, x23], 2)
  with pytest.raises(TypeError, match="dimension -1 for shapes"):
    lax.concatenate([x23, x23], -1)
  with pytest.raises(TypeError, match=r"dimension 0 for shapes \(\), \(\)"):
    lax.concatenate([np.float32(1), np.float32(2)], 0)


def test_concatenate_of_one_binds_nothing():
  assert _eqns(lambda a: lax.concatenate([a], 0), x23) == []


# --- iota ----------------------------------------------------------------------------------------
def test_iota_errors():
  with pytest.raises(TypeError, match="iota does not accept dtype bool"):
    lax.iota(np.bool_, 3)
  with pytest.raises(TypeError, match=r"iota shape must have every element be nonnegative, got "
                                      r"\(-1,\)"):
    lax.iota(np.int32, -1)
  with pytest.raises(ValueError, match=r"iota dimension must be between 0 and len\(shape\), got "
                                       r"dimension=2 for shape=\(2, 3\)"):
    lax.broadcasted_iota(np.int32, (2, 3), 2)
  with pytest.raises(ValueError, match="got dimension=-1"):
    lax.broadcasted_iota(np.int32, (2, 3), -1)


def test_iota_params_like_jax():
  (eqn,) = _eqns(lambda: lax.broadcasted_iota(np.float64, [2, 3], 1))
  assert eqn.primitive.name == "iota"
  assert eqn.params == {"dtype": np.dtype(np.float32), "shape": (2, 3), "dimension": 1,
                        "sharding": None}  # (jax's, sharding included)
  assert not eqn.outvars[0].aval.weak_type


def test_iota_matches_jax_for_low_precision_dtypes():
  import jax
  for dtype, n in ((ml_dtypes.bfloat16, 1000), (np.float16, 5000), (np.uint8, 300)):
    expected = np.asarray(jax.lax.iota(dtype, n)).astype(np.float64)
    np.testing.assert_array_equal(np.asarray(lax.iota(dtype, n)).astype(np.float64), expected)
    got = revax.jit(lambda: lax.iota(dtype, n))()
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64), expected)


# --- weak types ----------------------------------------------------------------------------------
def test_shape_ops_keep_weak_type():
  def outs(fun):
    (v,) = revax.make_jaxpr(fun)().jaxpr.outvars
    return v.aval.weak_type

  weak = lambda: lax.broadcast(1.0, (3,))
  assert outs(lambda: lax.rev(weak(), (0,)))
  assert outs(lambda: lax.reshape(weak(), (3, 1)))
  assert outs(lambda: lax.pad(weak(), 0.0, [(1, 1, 0)]))
  assert not outs(lambda: lax.pad(weak(), np.float32(0), [(1, 1, 0)]))
  assert outs(lambda: lax.concatenate([weak(), weak()], 0))
  assert not outs(lambda: lax.concatenate([weak(), np.ones(3, np.float32)], 0))
