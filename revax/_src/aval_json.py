"""Avals as JSON: `[shape, dtype name, weak type]`, the form in which an export (export.py) and
a serialized executable (executable_payload.py) record their argument and result types (and a
memory space other than the device's own as a fourth entry)."""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray
from revax._src.core.memory_space import MemorySpace

__all__ = ["aval_to_json", "aval_from_json"]

_DTYPE_NAMES = {"bfloat16": dtypes.bfloat16}  # names NumPy does not know by itself


def aval_to_json(aval) -> list:
  """`[shape, dtype name, weak type]` of `aval` (float0 by name, which NumPy lacks), with its
  memory space's name last where it is not the device's own (`"Host"`)."""
  code = [list(aval.shape), np.dtype(aval.dtype).name if aval.dtype != dtypes.float0
          else "float0", bool(aval.weak_type)]
  space = getattr(aval, "memory_space", MemorySpace.Device)
  return code if space is MemorySpace.Device else code + [space.name]


def aval_from_json(code) -> ShapedArray:
  """The ShapedArray that `aval_to_json` wrote as `code`."""
  shape, name, weak = code[:3]
  dtype = dtypes.float0 if name == "float0" else np.dtype(_DTYPE_NAMES.get(name, name))
  space = MemorySpace[code[3]] if len(code) > 3 else MemorySpace.Device
  return ShapedArray(tuple(int(d) for d in shape), dtype, bool(weak), memory_space=space)
