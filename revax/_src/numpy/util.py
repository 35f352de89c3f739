"""Argument handling shared by revax.numpy: type promotion and conversion of operands.

revax.numpy promotes with JAX's lattice (`dtypes.promote_types_weak`): Python scalars are weakly
typed, so `x_f16 + 1.0` stays float16 and `x_i8 + 1` stays int8.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.trace import Tracer
from revax._src.lax.conversion import convert_element_type
from revax._src.runtime.array import Array

_PY_SCALARS = (bool, int, float, complex)


def check_arraylike(fun_name: str, *args) -> None:
  for i, a in enumerate(args):
    if not (isinstance(a, (Array, Tracer, np.ndarray, np.generic)) or type(a) in _PY_SCALARS):
      msg = (f"{fun_name} requires ndarray or scalar arguments, but got {type(a).__name__} at "
             f"position {i}.")
      if isinstance(a, (list, tuple)):
        msg += " Use revax.numpy.array(x) to convert a list or tuple first."
      raise TypeError(msg)


def result_type_of(*args):
  """(dtype, weak_type) that JAX's promotion gives for these operands."""
  return dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in map(get_aval, args)))


def promote_dtypes(*args):
  """Convert operands to their common dtype (weakly typed if all of them were)."""
  if len(args) < 2:
    return list(args)
  avals = [get_aval(a) for a in args]
  first = avals[0]
  if all(a.dtype == first.dtype and a.weak_type == first.weak_type for a in avals[1:]):
    return list(args)
  dtype, weak = dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in avals))
  return [convert_element_type(x, dtype, weak) if (a.dtype != dtype or a.weak_type != weak)
          else x for x, a in zip(args, avals, strict=True)]


def promote_args(fun_name: str, *args):
  check_arraylike(fun_name, *args)
  return promote_dtypes(*args)


def promote_args_inexact(fun_name: str, *args):
  """Promote, then make integer and bool operands floating (as np.sin(int_array) does)."""
  check_arraylike(fun_name, *args)
  args = promote_dtypes(*args)
  avals = [get_aval(a) for a in args]
  if avals and not dtypes.is_inexact(avals[0].dtype):
    return [convert_element_type(a, dtypes.default_float_dtype(), av.weak_type)
            for a, av in zip(args, avals, strict=True)]
  return args


def is_operand(x) -> bool:
  """Whether `x` can be an operand of revax's arithmetic operators."""
  return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in _PY_SCALARS
