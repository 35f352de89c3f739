"""Error paths of sort/top_k/cumulative reductions, and differential checks against jax.lax."""
import jax
import numpy as np
import pytest

import revax
import revax.lax as lax

jax.config.update("jax_platforms", "cpu")

_SPECIALS = np.array([1.0, np.nan, 3.0, 3.0, -np.inf, -0.0, 0.0, np.inf, -np.nan, 0.0, -0.0, -1.0],
                     np.float32)
_PARITY = np.array([1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1], np.int32)


# --- errors --------------------------------------------------------------------------------------
def test_sort_errors():
  with pytest.raises(TypeError, match="sort requires at least one operand"):
    lax.sort(())
  with pytest.raises(TypeError, match=r"sort arguments must have the same shape, got \(3,\), "
                                      r"\(4,\)"):
    lax.sort((np.zeros(3), np.zeros(4)))
  with pytest.raises(ValueError, match=r"sort num_keys must be between 1 and the number of "
                                       r"operands \(2\), got num_keys=3"):
    lax.sort((np.zeros(3), np.zeros(3)), num_keys=3)
  with pytest.raises(ValueError, match="got num_keys=0"):
    lax.sort(np.zeros(3), num_keys=0)
  with pytest.raises(ValueError, match=r"sort dimension 2 is out of bounds for operands of shape "
                                       r"\(2, 3\) \(rank 2\)"):
    lax.sort(np.zeros((2, 3)), dimension=2)
  with pytest.raises(ValueError, match=r"sort dimension -1 is out of bounds for operands of "
                                       r"shape \(\) \(rank 0\)"):
    lax.sort(np.float32(1.0))


def test_top_k_errors():
  with pytest.raises(ValueError, match="k argument to top_k must be nonnegative, got -1"):
    lax.top_k(np.zeros(3), -1)
  with pytest.raises(ValueError, match=r"k argument to top_k must be no larger than the size of "
                                       r"axis 0; got k=4 for operand shape \(3,\)"):
    lax.top_k(np.zeros(3), 4)
  with pytest.raises(ValueError, match=r"top_k axis 2 is out of bounds for operand of shape "
                                       r"\(2, 3\)"):
    lax.top_k(np.zeros((2, 3)), 1, axis=2)
  with pytest.raises(TypeError, match="top_k does not accept dtype complex64"):
    lax.top_k(np.zeros(3, np.complex64), 1)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
def test_cumulative_errors(name):
  fn = getattr(lax, name)
  with pytest.raises(TypeError, match=f"{name} does not accept dtype bool. Accepted dtypes are "
                                      "subtypes of number."):
    fn(np.zeros(3, np.bool_))
  with pytest.raises(ValueError, match=rf"{name} axis 1 is out of bounds for operand of shape "
                                       r"\(3,\) \(rank 1\)"):
    fn(np.zeros(3, np.float32), 1)
  with pytest.raises(ValueError, match=rf"{name} axis -3 is out of bounds"):
    fn(np.zeros((2, 2), np.float32), -3)


# --- properties ----------------------------------------------------------------------------------
def test_sort_params_and_outputs():
  k, v = np.array([2, 1, 2, 1], np.int32), np.arange(4.0, dtype=np.float32)
  closed = revax.make_jaxpr(lambda k, v: lax.sort((k, v), dimension=-1))(k, v)
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "sort" and len(eqn.outvars) == 2
  assert eqn.params == {"dimension": 0, "is_stable": True, "num_keys": 1}
  out = lax.sort([k, v])
  assert isinstance(out, tuple) and len(out) == 2
  np.testing.assert_array_equal(np.asarray(out[1]), [1.0, 3.0, 0.0, 2.0])  # stable


def test_sort_keeps_signed_zero_order_and_puts_nans_last():
  x = np.array([0.0, -0.0, np.nan, -np.nan, 1.0, -1.0, -0.0, 0.0], np.float32)
  for f in (lax.sort, revax.jit(lax.sort)):
    out = np.asarray(f(x))
    np.testing.assert_array_equal(out[:6], [-1.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(np.signbit(out[1:5]), [False, True, True, False])  # stable
    assert np.isnan(out[6:]).all()


def test_cumsum_params():
  closed = revax.make_jaxpr(lambda x: lax.cumsum(x, -1, reverse=1))(np.zeros((2, 3)))
  (eqn,) = closed.jaxpr.eqns
  assert eqn.primitive.name == "cumsum" and eqn.params == {"axis": 1, "reverse": True}


# --- differential checks against jax -------------------------------------------------------------
def _both(f, *args):
  return f(jax.lax, *args), f(lax, *args), revax.jit(lambda *a: f(lax, *a))(*args)


def _assert_same(expected, *actuals, signed_zeros=True):
  expected = expected if isinstance(expected, (tuple, list)) else (expected,)
  for actual in actuals:
    actual = actual if isinstance(actual, (tuple, list)) else (actual,)
    for e, a in zip(expected, actual, strict=True):
      e, a = np.asarray(e), np.asarray(a)
      assert e.dtype == a.dtype
      np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)
      if signed_zeros and e.dtype.kind == "f":  # (the sign of a NaN is not specified)
        np.testing.assert_array_equal(np.signbit(a)[~np.isnan(e)], np.signbit(e)[~np.isnan(e)])


_FINITE = np.nan_to_num(_SPECIALS, nan=2.0, posinf=3.0, neginf=-3.0)
_DIFF = [
    ("sort", lambda m, x: m.sort(x), _SPECIALS),
    ("sort_2d_axis0", lambda m, x: m.sort(x, dimension=0), _SPECIALS.reshape(3, 4)),
    ("sort_key_val", lambda m, x: m.sort_key_val(x, np.arange(12, dtype=np.int32)), _SPECIALS),
    ("sort_two_keys", lambda m, x: m.sort((_PARITY, x, np.arange(12.0, dtype=np.float32)),
                                         num_keys=2), _SPECIALS),
    ("top_k_all", lambda m, x: m.top_k(x, 12), _SPECIALS),
    ("top_k_3", lambda m, x: m.top_k(x, 3), _SPECIALS),
    ("top_k_axis0", lambda m, x: m.top_k(x, 2, axis=0), _SPECIALS.reshape(4, 3)),
    ("cumsum", lambda m, x: m.cumsum(x), _FINITE),
    ("cummax_reverse", lambda m, x: m.cummax(x, reverse=True), _SPECIALS),
    ("cummin", lambda m, x: m.cummin(x, 1), _SPECIALS.reshape(3, 4)),
    ("cumprod_reverse", lambda m, x: m.cumprod(x, 0, True), _FINITE.reshape(4, 3)),
]


@pytest.mark.parametrize("name,f,x", _DIFF, ids=[n for n, _, _ in _DIFF])
def test_matches_jax(name, f, x):
  expected, eager, jitted = _both(f, x)
  # max(0.0, -0.0) may be either zero: only sorting promises an order of signed zeros
  _assert_same(expected, eager, jitted, signed_zeros=not name.startswith("cum"))


def test_int_top_k_and_cumsum_match_jax():
  x = np.array([[3, -1, 2**31 - 1, -2**31, 3, 0], [5, 5, 5, -7, 0, 2**30]], np.int32)
  for f in (lambda m, v: m.top_k(v, 4), lambda m, v: m.cumsum(v, 1),
            lambda m, v: m.cummax(v, 0, True), lambda m, v: m.sort(v, 0)):
    _assert_same(*_both(f, x))


def test_complex_keys_with_nan_parts_sort_as_jax_eager_and_jit():
  """jax's comparator orders a complex key by its real part, then its imaginary part, each with
  NaN last; NumPy's complex order (the eager path had used it) puts every x+nanj after every
  number, so 1+nanj came after 3+0j and inf+0j. Every pair of parts from a grid with NaN, +-inf
  and signed zeros, as one key and as the first of two keys."""
  parts = np.array([np.nan, -np.inf, -1., -0., 0., 1., np.inf], np.float32)
  re, im = (g.ravel() for g in np.meshgrid(parts, parts, indexing="ij"))
  x = np.empty(re.size, np.complex64)
  x.real, x.imag = re, im
  x = x[::-1]
  idx = np.arange(x.size, dtype=np.int32)
  want = [np.asarray(v) for v in jax.lax.sort_key_val(x, idx)]
  want2 = [np.asarray(v) for v in jax.lax.sort((x, idx[::-1] % 3, idx), num_keys=2)]
  for f in (lambda x, i: lax.sort_key_val(x, i), revax.jit(lambda x, i: lax.sort_key_val(x, i))):
    got = f(x, idx)
    np.testing.assert_array_equal(np.asarray(got[1]), want[1])
  for f in (lambda x, i: lax.sort((x, i[::-1] % 3, i), num_keys=2),
            revax.jit(lambda x, i: lax.sort((x, i[::-1] % 3, i), num_keys=2))):
    np.testing.assert_array_equal(np.asarray(f(x, idx)[2]), want2[2])
