"""Avals as JSON: `[shape, dtype name, weak type]`, the form in which an export (export.py) and
a serialized executable (executable_payload.py) record their argument and result types."""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray

__all__ = ["aval_to_json", "aval_from_json"]

_DTYPE_NAMES = {"bfloat16": dtypes.bfloat16}  # names NumPy does not know by itself


def aval_to_json(aval) -> list:
  """`[shape, dtype name, weak type]` of `aval` (float0 by name, which NumPy lacks)."""
  return [list(aval.shape), np.dtype(aval.dtype).name if aval.dtype != dtypes.float0 else "float0",
          bool(aval.weak_type)]


def aval_from_json(code) -> ShapedArray:
  """The ShapedArray that `aval_to_json` wrote as `code`."""
  shape, name, weak = code
  dtype = dtypes.float0 if name == "float0" else np.dtype(_DTYPE_NAMES.get(name, name))
  return ShapedArray(tuple(int(d) for d in shape), dtype, bool(weak))
