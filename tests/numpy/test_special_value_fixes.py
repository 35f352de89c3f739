"""Values where revax differed from JAX or where eager and jit disagreed (issue 14 item 16):
heaviside at NaN, cumulative_sum's accumulation dtype and include_initial, hard_sigmoid keeping a
NumPy bfloat16 input's dtype, sign and sums of -0.0, complex() of infinities."""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp


def _eager_and_jit(fun, *args, **kwargs):
  return fun(*args, **kwargs), revax.jit(lambda *a: fun(*a, **kwargs))(*args)


def _same_bits(a, b):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape
  np.testing.assert_array_equal(a, b)
  if a.dtype.kind == "f":
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def test_heaviside_of_nan_is_nan():
  x = np.array([np.nan, 0.0, -0.0, -1.0, 2.0, np.inf, -np.inf], np.float32)
  want = jnp.heaviside(x, np.float32(0.5))
  for got in _eager_and_jit(rnp.heaviside, x, np.float32(0.5)):
    _same_bits(got, want)
  assert np.isnan(float(rnp.heaviside(np.nan, 0.5)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.bool_,
                                   np.float16, ml_dtypes.bfloat16, np.float32])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_sum_matches_jax(dtype, include_initial):
  x = (np.arange(12).reshape(3, 4) * 40 % 7 + 100).astype(dtype)
  want = jnp.cumulative_sum(x, axis=1, include_initial=include_initial)
  for got in _eager_and_jit(rnp.cumulative_sum, x, axis=1, include_initial=include_initial):
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=1e-2)


def test_cumulative_sum_int8_does_not_wrap():
  x = np.array([100, 100, 100], np.int8)
  for got in _eager_and_jit(rnp.cumulative_sum, x):
    np.testing.assert_array_equal(got, [100, 200, 300])
    assert got.dtype == np.int32
  assert rnp.cumulative_sum(x, dtype=np.int8).dtype == np.int8  # an explicit dtype wraps


@pytest.mark.parametrize("dtype", [np.int8, np.bool_, np.float32])
def test_cumulative_prod_matches_jax(dtype):
  x = np.array([[1, 2, 3], [2, 2, 2]], dtype)
  for kw in ({"axis": 1}, {"axis": 0, "include_initial": True}):
    want = jnp.cumulative_prod(x, **kw)
    got = rnp.cumulative_prod(x, **kw)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_cumulative_sum_errors_like_jax():
  for m in (rnp, jnp):
    with pytest.raises(ValueError, match="axis was not set"):
      m.cumulative_sum(np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-scalar"):
      m.cumulative_sum(np.float32(1))


def test_hard_sigmoid_keeps_numpy_bfloat16():
  x = np.array([-4, -1, 0, 1, 4], ml_dtypes.bfloat16)
  want = jax.nn.hard_sigmoid(x)
  for got in _eager_and_jit(revax.nn.hard_sigmoid, x):
    assert got.dtype == want.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_sign_of_signed_zero_eager_equals_jit_and_jax(dtype):
  x = np.array([-0.0, 0.0, -2.0, 3.0, np.nan], dtype)
  want = jnp.sign(x)
  for got in _eager_and_jit(rnp.sign, x):
    _same_bits(np.asarray(got, np.float32), np.asarray(want, np.float32))


def test_sums_of_negative_zeros():
  x = np.array([[-0.0, -0.0, -0.0]], np.float32)
  for got in _eager_and_jit(rlax.cumsum, x, axis=1):
    _same_bits(got, jax.lax.cumsum(x, axis=1))
  z = np.float32(-0.0)
  for got in _eager_and_jit(lambda v: rlax.reduce_sum(v, ()), z):
    _same_bits(got, jax.jit(lambda v: jax.lax.reduce_sum_p.bind(v, axes=(), out_sharding=None))(z))


def test_complex_of_infinities():
  re = np.array([np.inf, 0.0, -0.0, np.nan], np.float32)
  im = np.array([0.0, np.inf, -np.inf, 1.0], np.float32)
  want = jax.lax.complex(re, im)
  for got in _eager_and_jit(rlax.complex, re, im):
    np.testing.assert_array_equal(np.asarray(got).real, np.asarray(want).real)
    np.testing.assert_array_equal(np.asarray(got).imag, np.asarray(want).imag)


_XOR_INPUTS = [
    ([np.nan, np.inf, -np.inf, 0., -0., 1., -1., 0.5, 2.5], [np.nan, np.inf, -np.inf, 0.]),
    ([np.nan, 1.], [np.nan, 1.]), ([np.nan, np.nan, 1.], [1., np.nan]), ([1., 2.], [2., 3.]),
    ([-3., -2.], [-2., 5.]), ([-3., -2.], [-2., -3.]), ([], [np.nan]), ([np.nan, 4.], [5.]),
    (np.array([1, 2, 2], np.int32), np.array([2, 5], np.int32))]


@pytest.mark.parametrize("a,b", _XOR_INPUTS)
@pytest.mark.parametrize("size,fill_value", [(None, None), (0, None), (0, 7.), (2, None),
                                             (6, None), (6, 7.), (14, None)])
def test_setxor1d_nan_and_padding_match_jax(a, b, size, fill_value):
  """jax's setxor1d keeps one NaN per input holding any (NaN is never in both), pads with the
  smallest result (NaN among them: NaN; none: 0), refuses size=0 without a fill, and a float
  fill promotes integer results."""
  a, b = (np.asarray(v, np.float32) if not isinstance(v, np.ndarray) else v for v in (a, b))
  kw = {} if size is None else dict(size=size, fill_value=fill_value)
  try:
    want = jnp.setxor1d(a, b, **kw)
  except ValueError:
    with pytest.raises(ValueError):
      rnp.setxor1d(a, b, **kw)
    return
  outs = _eager_and_jit(rnp.setxor1d, a, b, **kw) if size is not None else [
      rnp.setxor1d(a, b)]
  for got in outs:
    got, w = np.asarray(got), np.asarray(want)
    assert got.dtype == w.dtype and got.shape == w.shape
    np.testing.assert_array_equal(got, w)
