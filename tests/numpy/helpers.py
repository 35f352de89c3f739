"""Shared pieces of the revax.numpy tests: dtypes, input values per domain, comparisons, and JAX
as the oracle of result dtypes (through jax.eval_shape, which compiles nothing)."""
import ml_dtypes
import numpy as np
import pytest

import revax
from revax._src.lax.conversion import convert_element_type

jax = pytest.importorskip("jax")
jnp = jax.numpy

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16,
                                np.float32, np.complex64)]
FLOATS = [np.dtype(d) for d in (np.float16, BF16, np.float32)]
INTS = [np.dtype(d) for d in (np.int8, np.uint8, np.int32)]

_DOMAINS = {  # float values per domain; integer dtypes take the integers among them
    "real": [-2.5, -1.0, -0.5, 0.0, 0.5, 1.5, 3.0],
    "pos": [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 10.0],
    "unit": [-1.0, -0.75, -0.5, 0.0, 0.25, 0.5, 1.0],
    "open": [-0.9, -0.5, -0.25, 0.0, 0.25, 0.5, 0.9],
    "ge1": [1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0],
    "nonzero": [-2.5, -1.0, -0.5, 0.25, 0.5, 1.5, 3.0],
    "small": [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0],
}
_INT_DOMAINS = {
    "real": [-3, -2, -1, 0, 1, 2, 3], "pos": [1, 2, 3, 4, 5, 6, 7], "unit": [-1, 0, 1, 0, 1, -1, 0],
    "open": [0, 0, 0, 0, 0, 0, 0], "ge1": [1, 2, 3, 4, 5, 6, 7], "nonzero": [-3, -2, -1, 1, 2, 3, 5],
    "small": [0, 1, 2, 3, 0, 1, 2],
}


def values(dtype, domain="real", shift=0):
  """Seven deterministic values of `dtype` in `domain` (rolled by `shift`)."""
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    v = np.array([True, False, True, True, False, False, True]) if domain not in (
        "nonzero", "pos", "ge1") else np.ones(7, bool)
  elif np.issubdtype(dtype, np.integer):
    v = np.array(_INT_DOMAINS[domain])
    if np.issubdtype(dtype, np.unsignedinteger):
      v = np.abs(v)
  else:
    v = np.array(_DOMAINS[domain])
    if np.issubdtype(dtype, np.complexfloating):
      v = v + 0.5j * np.array([1, -1, 0.5, 0, -0.5, 1, 0.25]) * (domain not in ("ge1",))
  return np.roll(v, shift).astype(dtype)


def tol(dtype):
  dtype = np.dtype(dtype)
  return {np.dtype(np.float16): 2e-3, BF16: 1.6e-2}.get(dtype, 2e-6 if dtype.kind in "fc"
                                                        else 0)


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, msg=""):
  actual = np.asarray(actual)
  expected = np.asarray(expected)
  assert actual.shape == expected.shape, f"{msg}: shape {actual.shape} != {expected.shape}"
  dtype = actual.dtype if dtype is None else np.dtype(dtype)
  t = tol(dtype) if rtol is None else rtol
  if dtype.kind in "fcV" or dtype == BF16:
    a = actual.astype(np.complex128 if actual.dtype.kind == "c" else np.float64)
    e = expected.astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
    np.testing.assert_allclose(a, e, rtol=max(t, 1e-7) * 4, atol=(t * 4 if atol is None
                                                                    else atol), equal_nan=True,
                               err_msg=msg)
  else:
    np.testing.assert_array_equal(actual, expected, err_msg=msg)


def weak(value, dtype):
  """A weakly typed revax array of `dtype` (what a Python scalar becomes inside revax)."""
  return convert_element_type(np.asarray(value), dtype, weak_type=True)


def jax_arg(x):
  """The abstract JAX counterpart of a revax/NumPy operand, for jax.eval_shape."""
  if isinstance(x, (bool, int, float, complex)):
    return x
  a = np.asarray(x)
  return jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=bool(getattr(x, "weak_type", False)))


def jax_result(fn, *args, **kwargs):
  """(dtype, weak_type) of a jnp function on abstract args, or the exception type it raises."""
  try:
    out = jax.eval_shape(lambda *a: fn(*a, **kwargs), *map(jax_arg, args))
  except (TypeError, ValueError, NotImplementedError) as e:
    return type(e)
  leaves = jax.tree_util.tree_leaves(out)
  return [(np.dtype(o.dtype), bool(o.weak_type)) for o in leaves]


def revax_result(out):
  return [(np.dtype(o.dtype), bool(o.weak_type)) for o in
          (out if isinstance(out, (tuple, list)) else [out])]


def jit(fn):
  return revax.jit(fn)
