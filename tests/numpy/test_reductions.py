"""Reductions, cumulative ops and sorting: values against NumPy, dtypes against jax.numpy, every
axis form and keepdims, jit vs eager, masks/initial/ddof, empty reductions, errors."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.numpy.helpers import BF16, DTYPES, assert_close, jax_result, jnp, revax_result

SHAPE = (2, 3, 4)
AXES = [None, 0, -1, (0, 2), (), (2, 1, 0)]


def _data(dtype, shape=SHAPE):
  n = int(np.prod(shape))
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    v = (np.arange(n) % 3) != 0
  elif dtype.kind == "u":
    v = np.arange(n) % 5
  elif dtype.kind == "i":
    v = (np.arange(n) % 7) - 3
  elif dtype.kind == "c":
    v = ((np.arange(n) % 7) - 3) * 0.5 + 0.25j * (np.arange(n) % 3)
  else:
    v = (((np.arange(n) * 5) % 11) - 5) * 0.25
  return v.reshape(shape).astype(dtype)


def _wide(x):
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) \
      if x.dtype.kind in "fc" or x.dtype == BF16 else x


# name, NumPy reference, takes a tuple axis
REDUCTIONS = [
    ("sum", np.sum, True), ("prod", np.prod, True), ("max", np.max, True), ("min", np.min, True),
    ("mean", np.mean, True), ("var", np.var, True), ("std", np.std, True), ("any", np.any, True),
    ("all", np.all, True), ("ptp", np.ptp, True), ("count_nonzero", np.count_nonzero, True),
    ("argmax", np.argmax, False), ("argmin", np.argmin, False),
]


def _axes_for(takes_tuple):
  return AXES if takes_tuple else [None, 0, -1, 2]


@pytest.mark.parametrize("name,np_fn,takes_tuple", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reductions_against_numpy_and_jax_dtypes(name, np_fn, takes_tuple):
  for dtype in DTYPES:
    x = _data(dtype)
    for axis in _axes_for(takes_tuple):
      for keepdims in (False, True):
        kw = {"axis": axis, "keepdims": keepdims}
        msg = f"{name}({dtype}, {kw})"
        expected = jax_result(getattr(jnp, name), x, **kw)
        if name in ("argmax", "argmin") and dtype.kind == "c":
          expected = TypeError  # jax fails when it lowers the comparison; revax says so at once
        if isinstance(expected, type):
          with pytest.raises((TypeError, ValueError)):
            getattr(rnp, name)(x, **kw)
            pytest.fail(f"{msg} accepted what jax refuses")
          continue
        out = getattr(rnp, name)(x, **kw)
        assert revax_result(out) == expected, msg
        with np.errstate(all="ignore"):
          ref = np_fn(_wide(x) if name not in ("argmax", "argmin", "ptp") else x, **kw)
        assert_close(out, np.asarray(ref).astype(out.dtype) if out.dtype.kind in "biu"
                     else np.asarray(ref), out.dtype, msg=msg)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int32)], ids=str)
def test_jit_matches_eager(dtype):
  x = _data(dtype)
  calls = [(name, axis, keepdims) for name, _, takes_tuple in REDUCTIONS
           for axis in _axes_for(takes_tuple)[:4] for keepdims in (False, True)]
  calls += [(name, axis, False) for name in ("cumsum", "cumprod", "sort", "argsort")
            for axis in (None, 0, -1)]

  def run(a):
    return [getattr(rnp, n)(a, axis=ax, keepdims=k) if k else getattr(rnp, n)(a, axis=ax)
            for n, ax, k in calls]

  for call, e, j in zip(calls, run(x), revax.jit(run)(x), strict=True):
    assert e.dtype == j.dtype and e.shape == j.shape, call
    assert_close(j, e, msg=str(call))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_against_numpy_and_jax_dtypes(name):
  for dtype in DTYPES:
    x = _data(dtype)
    for axis in (None, 0, 1, -1):
      out = getattr(rnp, name)(x, axis=axis)
      assert revax_result(out) == jax_result(getattr(jnp, name), x, axis=axis), (dtype, axis)
      ref = getattr(np, name)(_wide(x) if dtype.kind not in "biu" else x, axis=axis)
      assert_close(out, ref.astype(out.dtype) if out.dtype.kind in "biu" else ref, out.dtype)
  np.testing.assert_array_equal(rnp.cumsum(np.ones(3, np.int8), dtype=np.float32), [1, 2, 3])


def test_sort_and_argsort():
  x = np.array([[3.0, np.nan, 1.0, -0.0, 1.0], [0.0, 2.0, -1.0, 2.0, np.inf]], np.float32)
  for axis in (None, 0, -1):
    np.testing.assert_array_equal(rnp.sort(x, axis=axis), np.sort(x, axis=axis))
    np.testing.assert_array_equal(rnp.argsort(x, axis=axis), np.argsort(x, axis=axis,
                                                                         stable=True))
    np.testing.assert_array_equal(rnp.sort(x, axis=axis, descending=True),
                                  np.asarray(jnp.sort(x, axis=axis, descending=True)))
    np.testing.assert_array_equal(rnp.argsort(x, axis=axis, descending=True),
                                  np.asarray(jnp.argsort(x, axis=axis, descending=True)))
  np.testing.assert_array_equal(rnp.arange(3)[::-1].sort(), [0, 1, 2])


def test_dtype_arguments_and_integer_promotion():
  x = np.arange(1, 7, dtype=np.int8).reshape(2, 3)
  assert rnp.sum(x).dtype == np.int32
  assert rnp.sum(x, promote_integers=False).dtype == np.int8
  assert rnp.sum(x.astype(np.uint8)).dtype == np.uint32
  assert rnp.sum(x, dtype=np.float16).dtype == np.float16
  assert rnp.prod(x, dtype=np.float32) == 720.0
  assert rnp.mean(x, dtype=BF16).dtype == BF16
  assert rnp.sum(np.array([True, True, False])) == 2
  h = np.full(4096, 0.1, np.float16)  # float16 sums accumulate in float32, as in JAX
  assert abs(float(rnp.sum(h)) - 409.6) < 0.5
  np.testing.assert_allclose(rnp.std(x, dtype=np.float32), np.std(x))


def test_where_initial_ddof():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  m = x % 3 != 0
  for name in ("sum", "prod", "mean", "any", "all", "var"):
    np.testing.assert_allclose(getattr(rnp, name)(x, axis=1, where=m),
                               getattr(np, name)(x, axis=1, where=m), rtol=1e-6, err_msg=name)
  np.testing.assert_array_equal(rnp.max(x, axis=0, where=m, initial=-1.0),
                                np.max(x, axis=0, where=m, initial=-1.0))
  np.testing.assert_array_equal(rnp.min(x, initial=-5.0), -5.0)
  assert rnp.sum(x, initial=10.0) == x.sum() + 10
  np.testing.assert_allclose(rnp.var(x, axis=0, ddof=1), np.var(x, axis=0, ddof=1), rtol=1e-6)
  np.testing.assert_allclose(rnp.std(x, correction=2), np.std(x, ddof=2), rtol=1e-6)
  np.testing.assert_allclose(revax.jit(lambda a: rnp.var(a, axis=1, where=a > 2, ddof=1))(x),
                             np.var(x, axis=1, where=x > 2, ddof=1), rtol=1e-6)
  c = np.array([1 + 2j, 3 - 1j, -2j], np.complex64)
  np.testing.assert_allclose(rnp.var(c), np.var(c), rtol=1e-6)


def test_empty_reductions():
  e = np.zeros((0, 3), np.float32)
  np.testing.assert_array_equal(rnp.sum(e, axis=0), np.zeros(3))
  np.testing.assert_array_equal(rnp.prod(e), 1.0)
  assert rnp.max(e, axis=1).shape == (0,)
  assert rnp.max(e, initial=2.0) == 2.0
  assert np.isnan(rnp.mean(e))
  assert not rnp.any(e) and rnp.all(e)


def test_reduction_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
    rnp.sum(x, axis=2)
  with pytest.raises(ValueError, match=r"duplicate value in 'axis': \(0, -2\)"):
    rnp.sum(x, axis=(0, -2))
  with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments, but got list"):
    rnp.sum([1, 2])
  with pytest.raises(ValueError, match="zero-size array to reduction operation max which has no "
                                       "identity"):
    rnp.max(np.ones((0, 3)))
  with pytest.raises(ValueError, match="reduction operation min with where requires initial"):
    rnp.min(x, where=x > 0)
  with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
    rnp.argmax(np.ones(0))
  with pytest.raises(NotImplementedError, match="The 'out' argument to mean is not supported"):
    rnp.mean(x, out=x)
  with pytest.raises(ValueError, match="ddof and correction can't be provided simultaneously"):
    rnp.var(x, ddof=1, correction=1)
  with pytest.raises(TypeError, match="axis must be an integer"):
    rnp.argmax(x, axis=(0,))


def test_var_without_degrees_of_freedom_is_nan_as_in_jax():
  """ddof >= N (or nothing to reduce) gives NaN, as jax.numpy does (NumPy gives inf); found by
  the bad-input campaign (tests/bad_inputs)."""
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  for args in ((x[0],), (x,), (np.zeros((0,), np.float32),)):
    for ddof in (0, 3, 5):
      got = rnp.var(*args, axis=-1, ddof=ddof)
      np.testing.assert_array_equal(got, jnp.var(*args, axis=-1, ddof=ddof))
  np.testing.assert_array_equal(revax.jit(lambda a: rnp.std(a, ddof=4))(x[0]), np.nan)
