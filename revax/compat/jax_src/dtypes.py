"""`jax._src.dtypes`: equinox imports `TypePromotionError` (raised by the strict dtype-promotion
mode) to catch it; flax's fp8_ops subclasses `extended` and `ExtendedDType` at import time and
calls `finfo` / `supports_inf`. The public dtype functions are revax.dtypes'."""
import abc as _abc

import numpy as _np

from revax.dtypes import *  # noqa: F401,F403  (the public names, as jax._src.dtypes has them)
from revax.dtypes import TypePromotionError as TypePromotionError
from revax.dtypes import canonicalize_dtype as canonicalize_dtype
from revax.dtypes import extended as extended
from revax.dtypes import finfo as finfo
from revax.dtypes import float0 as float0
from revax.dtypes import issubdtype as issubdtype

DType = _np.dtype


class ExtendedDType(_abc.ABC):
  """The abstract base of extended dtypes defined by libraries (flax's fp8 meta dtype); `type`
  is the scalar category, `_rules` its rule set. revax computes with none of them: defining one
  works, using it in an array is refused by revax's own operations."""

  @property
  @_abc.abstractmethod
  def type(self) -> type:
    ...

  _rules = None


def supports_inf(dtype) -> bool:
  """Whether `dtype` supports infinity, as jax's list says: False for non-floating dtypes and
  float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz and float8_e5m2fnuz."""
  dtype = _np.dtype(dtype)
  if dtype.name in ("float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    return False
  return issubdtype(dtype, _np.inexact)
