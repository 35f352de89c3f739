"""The parts of jax.dtypes beyond NumPy's dtypes: the `extended` category (dtypes such as typed
PRNG keys' `key<fry>`, which are not NumPy dtypes), and the helpers that know about it."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from revax._src.core import dtypes


class extended(np.generic):
  """Category of the dtypes that are not NumPy dtypes (e.g. typed PRNG keys)."""


class prng_key(extended):
  """Category of the dtypes of typed PRNG keys."""


TypePromotionError = dtypes.TypePromotionError  # (one class: the strict lattice raises it)


def is_extended(dtype) -> bool:
  """Whether `dtype` is an extended dtype (not a NumPy one), e.g. typed PRNG keys' key<fry>."""
  return isinstance(getattr(dtype, "type", None), type) and issubclass(dtype.type, extended)


_is_extended = is_extended


def issubdtype(a, b) -> bool:
  """Like `np.issubdtype`, also for bfloat16 and the extended dtypes (`key<fry>` is a
  subdtype of `prng_key` and of `extended`).

  Args:
    a: a dtype (or something convertible to one), or None.
    b: a dtype or a category such as `np.floating` or `extended`.

  Returns:
    Whether `a` belongs to `b`.
  """
  if a is None or b is None:
    return a is b
  if _is_extended(a):
    if isinstance(b, type):
      return issubclass(a.type, b)
    return a == b
  if isinstance(b, type) and issubclass(b, extended):
    return False
  if _is_extended(b):
    return False
  return dtypes.issubdtype(a, b)


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False):
  """The dtype revax computes in for `dtype` (64-bit types become 32-bit ones without x64).

  Args:
    dtype: a dtype, or something convertible to one.
    allow_extended_dtype: return extended dtypes (typed-key dtypes) unchanged instead of
      raising.
  """
  if _is_extended(dtype):
    if allow_extended_dtype:
      return dtype
    raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype} with "
                     "allow_extended_dtype=False")
  return dtypes.canonicalize_dtype(dtype)


def scalar_type_of(x) -> type:
  """The Python scalar type (bool, int, float or complex) of the values of `x`."""
  dtype = np.asarray(x).dtype if not hasattr(x, "dtype") else np.dtype(x.dtype)
  if dtype == np.bool_:
    return bool
  if dtypes.issubdtype(dtype, np.integer):
    return int
  if dtypes.issubdtype(dtype, np.floating) or dtype in (dtypes.bfloat16,):
    return float
  if dtypes.issubdtype(dtype, np.complexfloating):
    return complex
  raise TypeError(f"Invalid scalar value {x!r}")


def itemsize_bits(dtype) -> int:
  """The number of bits of one element of `dtype` (4 for int4, 16 for bfloat16, 8 for bool)."""
  if dtype is None:
    raise ValueError("dtype cannot be None.")
  dtype = np.dtype(dtype)
  if dtype.kind == "V":  # ml_dtypes' types: sub-byte ints and small floats
    for info in (ml_dtypes.iinfo, ml_dtypes.finfo):
      try:
        return info(dtype).bits
      except (ValueError, TypeError):
        pass
  return dtype.itemsize * 8
