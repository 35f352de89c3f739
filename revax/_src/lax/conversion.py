"""dtype conversions: convert_element_type and bitcast_convert_type.

Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util
from revax._src.lax.comparison import compare
from revax._src.runtime.array import Array


__all__ = [
  "convert_element_type",
  "bitcast_convert_type",
  "convert_element_type_p",
  "bitcast_convert_type_p",
]

# --- convert_element_type ------------------------------------------------------------------------
def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Convert `operand` to `new_dtype` (canonicalized: float64 becomes float32 without x64).

  Float to int conversion rounds toward zero and saturates at the integer type's bounds (NaN
  becomes 0); int to int conversion wraps around; to bool tests `!= 0`; complex to real keeps
  the real part (so complex to bool tests the real part). Returns the operand itself when nothing
  changes.

  Example:
    >>> lax.convert_element_type(jnp.arange(3), jnp.float32)
    Array([0., 1., 2.], dtype=float32)
  """
  if tree_util.is_array_leaf(operand):  # typed keys: to their own dtype only, as in JAX
    return operand.as_array(new_dtype)
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
  if new_dtype == dtypes.bool_:
    return x != 0
  if dtypes.is_float(x.dtype) and dtypes.is_integer(new_dtype):
    return _float_to_int(x, new_dtype)
  with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf, as XLA does
    return x.astype(new_dtype)


def _float_to_int(x, new_dtype):
  """Round toward zero and saturate, NaN to 0: what XLA's convert does on every backend."""
  info = dtypes.iinfo(new_dtype)
  lo, hi = float(info.min), float(info.max) + 1.0  # powers of two (or 0): exact in float64
  t = np.trunc(x.astype(np.float64))
  in_range = (t >= lo) & (t < hi)  # false for NaN
  out = np.where(in_range, t, 0).astype(new_dtype)
  out = np.where(t >= hi, info.max, out)
  out = np.where(t < lo, info.min, out)
  return out.astype(new_dtype, copy=False)


def _convert_element_type_lower(ctx, x, *, new_dtype, weak_type):
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if aval_in.dtype == new_dtype:
    return x  # only the weak type changes
  if dtypes.is_complex(aval_in.dtype) and not dtypes.is_complex(new_dtype):
    aval_in = aval_in.update(dtype=_real_dtype(aval_in.dtype))
    x = ctx.op1("stablehlo.real", [x], aval_in)
  if new_dtype == dtypes.bool_ and aval_in.dtype != dtypes.bool_:
    zeros = ctx.constant(np.zeros(aval_in.shape, aval_in.dtype), aval_in)
    return compare(ctx, x, zeros, "NE", aval_in, aval_out)
  return ctx.op1("stablehlo.convert", [x], aval_out)


def _real_dtype(dtype):
  return np.finfo(dtype).dtype if dtypes.is_complex(dtype) else np.dtype(dtype)


def _convert_element_type_jvp(primals, tangents, *, new_dtype, weak_type):
  """Between inexact dtypes the conversion is linear (complex to real keeps the real part);
  an integer or bool result is piecewise constant: a symbolic zero tangent."""
  (x,), (t,) = primals, tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
  if not dtypes.is_inexact(new_dtype):
    return out, ad.Zero(ad.tangent_aval(get_aval(out)))
  return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_transpose(ct, x, *, new_dtype, weak_type):
  """Convert the cotangent back (real to complex gives a zero imaginary part)."""
  aval = x.aval
  if type(ct) is ad.Zero:
    return [ad.Zero(aval)]
  if not (dtypes.is_inexact(aval.dtype) and dtypes.is_inexact(new_dtype)):
    raise ValueError(f"convert_element_type from {aval.dtype.name} to {np.dtype(new_dtype).name} "
                     f"is not linear: only conversions between inexact dtypes transpose")
  return [convert_element_type(ct, aval.dtype, aval.weak_type)]


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_abstract_eval(_convert_element_type_abstract_eval)
dispatch.def_numpy_impl(convert_element_type_p, _convert_element_type_numpy)
mlir.register_lowering(convert_element_type_p, _convert_element_type_lower)
ad.primitive_jvps[convert_element_type_p] = _convert_element_type_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_element_type_transpose
batching.defvectorized(convert_element_type_p)
inv.definverse(  # between inexact types (a narrowing conversion rounds the rebuilt input)
    convert_element_type_p,
    lambda outs, ins, avals_in, *, new_dtype, weak_type: [
        convert_element_type(outs[0], avals_in[0].dtype, avals_in[0].weak_type)],
    solves=lambda known, eqn, facts: dtypes.is_inexact(eqn.invars[0].aval.dtype)
    and dtypes.is_inexact(eqn.params["new_dtype"]))


# --- bitcast_convert_type ------------------------------------------------------------------------
def bitcast_convert_type(operand, new_dtype):
  """Reinterpret the bits of `operand` as `new_dtype`.

  Same-width types keep the shape. Converting to a narrower type adds a trailing dimension of
  size (old width / new width); converting to a wider type removes the trailing dimension, which
  must be (new width / old width). bool and complex values can only be "converted" to their own
  type. Bytes are read in the platform's byte order.

  Example:
    >>> lax.bitcast_convert_type(jnp.ones(3), jnp.int8).shape
    (3, 4)
  """
  new_dtype = dtypes.canonicalize_dtype(new_dtype)
  return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def _bitcast_convert_type_abstract_eval(x, *, new_dtype):
  old = x.dtype
  if old != new_dtype and any(dtypes.is_bool(d) or dtypes.is_complex(d) for d in (old, new_dtype)):
    raise TypeError(f"bitcast_convert_type does not support bool or complex values unless the "
                    f"operand and destination types match. Got operand dtype={old.name}, "
                    f"new_dtype={new_dtype.name}.")
  old_bits, new_bits = old.itemsize * 8, new_dtype.itemsize * 8
  if old_bits == new_bits:
    shape = x.shape
  elif old_bits > new_bits:
    shape = x.shape + (old_bits // new_bits,)
  else:
    last = x.shape[-1] if x.shape else 1
    if last * old_bits != new_bits:
      raise ValueError(f"Attempting to convert array of shape {x.shape} from {old.name} of size "
                       f"{old_bits} bits to {new_dtype.name} of size {new_bits} bits, but "
                       f"{last} * {old_bits} != {new_bits}: the last dimension must have size "
                       f"{new_bits // old_bits}")
    shape = x.shape[:-1]
  return ShapedArray(shape, new_dtype, False)


def _bitcast_convert_type_numpy(x, *, new_dtype):
  x = np.asarray(x, order="C")
  if x.dtype.itemsize >= new_dtype.itemsize:  # the new trailing dim (if any) from a new last axis
    out = x.reshape(x.shape + (1,)).view(new_dtype)
    return out if x.dtype.itemsize > new_dtype.itemsize else out.reshape(x.shape)
  return x.view(new_dtype).reshape(x.shape[:-1])


def _bitcast_convert_type_lower(ctx, x, *, new_dtype):
  return ctx.op1("stablehlo.bitcast_convert", [x])


def _bitcast_convert_type_batch(vals, dims, *, new_dtype):
  """Narrowing appends a trailing dim and same-width keeps the shape: the batch dim stays put.
  Widening consumes the operand's last dim, so a batch dim there moves to the front first."""
  (x,), (d,) = vals, dims
  aval = get_aval(x)
  if aval.dtype.itemsize < new_dtype.itemsize and d == aval.ndim - 1:
    x, d = batch_util.moveaxis(x, d, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.def_abstract_eval(_bitcast_convert_type_abstract_eval)
dispatch.def_numpy_impl(bitcast_convert_type_p, _bitcast_convert_type_numpy)
mlir.register_lowering(bitcast_convert_type_p, _bitcast_convert_type_lower)
# reinterpreting bits is piecewise constant for differentiation's purposes (JAX gives it a zero
# tangent), so code that branches on sign bits (copysign, signbit) differentiates
ad.zero_output_jvp(bitcast_convert_type_p, "it reinterprets bits: the result is not a smooth "
                   "function of the operand")
batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_convert_type_batch
inv.definverse(bitcast_convert_type_p, lambda outs, ins, avals_in, *, new_dtype: [
    bitcast_convert_type(outs[0], avals_in[0].dtype)], inv.all_unknown_ok)
