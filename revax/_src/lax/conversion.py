"""dtype conversions: convert_element_type and bitcast_convert_type.

Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import dispatch, mlir
from revax._src.runtime.array import Array


__all__ = [
  "convert_element_type",
  "convert_element_type_p",
]

# --- convert_element_type ------------------------------------------------------------------------
def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Convert `operand` to `new_dtype` (canonicalized: float64 becomes float32 without x64).

  Float to int conversion rounds toward zero; to bool tests `!= 0`. Returns the operand itself
  when nothing changes.

  Example:
    >>> convert_element_type(revax.numpy.arange(3), revax.numpy.float32)
  """
  new_dtype = dtypes.canonicalize_dtype(new_dtype)
  weak_type = bool(weak_type)
  aval = get_aval(operand)
  if isinstance(operand, (bool, int, float, complex, np.ndarray, np.generic)):
    # A constant: convert it now, so traced programs see a literal rather than a conversion.
    value = _convert_element_type_numpy(np.asarray(operand, aval.dtype), new_dtype=new_dtype,
                                        weak_type=weak_type)
    value = np.asarray(value, new_dtype)
    value.flags.writeable = False
    return Array(ShapedArray(value.shape, new_dtype, weak_type), npy=value)
  if aval.dtype == new_dtype and aval.weak_type == weak_type:
    return operand
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_abstract_eval(x, *, new_dtype, weak_type):
  return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_element_type_numpy(x, *, new_dtype, weak_type):
  if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype):
    x = x.real
  if (dtypes.is_inexact(x.dtype) and dtypes.is_integer(new_dtype)):
    with np.errstate(invalid="ignore"):
      info = dtypes.iinfo(new_dtype)
      x = np.where(np.isnan(x), 0, np.clip(np.trunc(x), info.min, info.max))
  if new_dtype == dtypes.bool_:
    return x != 0
  return x.astype(new_dtype)


def _convert_element_type_lower(ctx, x, *, new_dtype, weak_type):
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if aval_in.dtype == new_dtype:
    return x  # only the weak type changes
  if dtypes.is_complex(aval_in.dtype) and not dtypes.is_complex(new_dtype):
    aval_in = aval_in.update(dtype=_real_dtype(aval_in.dtype))
    x = ctx.op1("stablehlo.real", [x], aval_in)
  if new_dtype == dtypes.bool_ and aval_in.dtype != dtypes.bool_:
    zeros = ctx.constant(np.zeros(aval_in.shape, aval_in.dtype), aval_in)
    return ctx.op1("stablehlo.compare", [x, zeros], aval_out,
                   props={"comparison_direction": "#stablehlo<comparison_direction NE>"})
  return ctx.op1("stablehlo.convert", [x], aval_out)


def _real_dtype(dtype):
  return np.finfo(dtype).dtype if dtypes.is_complex(dtype) else np.dtype(dtype)


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_abstract_eval(_convert_element_type_abstract_eval)
dispatch.def_numpy_impl(convert_element_type_p, _convert_element_type_numpy)
mlir.register_lowering(convert_element_type_p, _convert_element_type_lower)
