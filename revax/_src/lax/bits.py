"""Bit-level elementwise primitives: population_count, clz (count leading zeros),
reduce_precision (round floats to fewer exponent and mantissa bits, as XLA's ReducePrecision)
and mulhi (the high word of an integer product).

Each primitive is one block: its public wrapper, then its rules, then their registration.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import shapes, standard
from revax._src.lax.standard import naryop, unop

__all__ = ["population_count", "clz", "reduce_precision", "mulhi",
           "population_count_p", "clz_p", "reduce_precision_p", "mulhi_p"]


def _as_unsigned(x: np.ndarray) -> np.ndarray:
  return x.view(np.dtype(f"uint{x.dtype.itemsize * 8}"))


# --- population_count ----------------------------------------------------------------------------
def population_count(x):
  """Elementwise number of set bits of an integer array (of its two's complement pattern).

  Args:
    x: an integer array.

  Returns:
    An array of x's shape and dtype.

  Example:
    >>> lax.population_count(jnp.array([0, 7, -1], jnp.int8))
    Array([0, 3, 8], dtype=int8)
  """
  return population_count_p.bind(x)


def _population_count_numpy(x):
  return np.bitwise_count(_as_unsigned(np.asarray(x))).astype(x.dtype)


population_count_p = unop("population_count", "int", _population_count_numpy, "stablehlo.popcnt")
ad.not_differentiable(population_count_p, "integer operand and output")
inv.not_invertible(population_count_p, "many-to-one: many bit patterns share a count")


# --- clz -----------------------------------------------------------------------------------------
def clz(x):
  """Elementwise number of leading zero bits of an integer array (its full width for 0).

  Args:
    x: an integer array.

  Returns:
    An array of x's shape and dtype.

  Example:
    >>> lax.clz(jnp.array([1, 0, -1], jnp.int32))
    Array([31, 32,  0], dtype=int32)
  """
  return clz_p.bind(x)


def _clz_numpy(x):
  u = _as_unsigned(np.asarray(x)).astype(np.uint64)
  width = x.dtype.itemsize * 8
  count = np.zeros(u.shape, np.int64)
  # binary search for the highest set bit: shift while the top half is empty
  for step in (32, 16, 8, 4, 2, 1):
    if step >= width:
      continue
    top_empty = (u >> np.uint64(width - step)) == 0
    count = np.where(top_empty, count + step, count)
    u = np.where(top_empty, (u << np.uint64(step)) & np.uint64((1 << width) - 1), u)
  count = np.where((u >> np.uint64(width - 1)) == 0, count + 1, count)  # x == 0: width
  return count.astype(x.dtype)


clz_p = unop("clz", "int", _clz_numpy, "stablehlo.count_leading_zeros")
ad.not_differentiable(clz_p, "integer operand and output")
inv.not_invertible(clz_p, "many-to-one: many values share a count")


# --- reduce_precision ----------------------------------------------------------------------------
def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  """Round floats to the values of a format with `exponent_bits` exponent bits and
  `mantissa_bits` mantissa bits (round to nearest even; overflow to inf, values below the
  format's smallest normal to zero), keeping the operand's dtype.

  Args:
    operand: a floating-point array (or Python float).
    exponent_bits: exponent bits of the target format (>= 1).
    mantissa_bits: explicit mantissa bits of the target format (>= 0).

  Returns:
    An array of the operand's shape and dtype.

  Example:
    >>> lax.reduce_precision(np.float32(1 / 3), 8, 7)  # to bfloat16's precision
    Array(0.33398438, dtype=float32)
  """
  exponent_bits, mantissa_bits = _check_bits(exponent_bits, mantissa_bits)
  return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                 mantissa_bits=mantissa_bits)


def _check_bits(exponent_bits, mantissa_bits):
  for name, v, low in (("exponent_bits", exponent_bits, 1), ("mantissa_bits", mantissa_bits, 0)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
      raise TypeError(f"reduce_precision: {name} must be an int, got {v!r}")
    if v < low:
      raise ValueError(f"reduce_precision: {name} must be >= {low}, got {v}")
  return int(exponent_bits), int(mantissa_bits)


def _reduce_precision_abstract_eval(x: ShapedArray, *, exponent_bits, mantissa_bits):
  if not dtypes.is_float(x.dtype):
    raise TypeError(f"reduce_precision requires a floating-point operand, got {x.dtype.name}")
  return x


def _reduce_precision_numpy(x, *, exponent_bits, mantissa_bits):
  x = np.asarray(x)
  info = dtypes.finfo(x.dtype)
  n_mant, n_exp = int(info.nmant), int(info.nexp)
  width = x.dtype.itemsize * 8
  utype = np.dtype(f"uint{width}")
  bits = x.view(utype).astype(np.uint64)
  one = np.uint64(1)
  if mantissa_bits < n_mant:
    drop = np.uint64(n_mant - mantissa_bits)
    last_kept = one << drop
    half_minus_one = (last_kept >> one) - one
    bias = half_minus_one + ((bits & last_kept) >> drop)  # ties go to the even neighbour
    bits = (bits + bias) & ~(last_kept - one) & np.uint64((1 << width) - 1)
  if exponent_bits < n_exp:
    sign = bits & np.uint64(1 << (width - 1))
    exp_mask = np.uint64(((1 << n_exp) - 1) << n_mant)
    bias_src = (1 << (n_exp - 1)) - 1
    bias_dst = (1 << (exponent_bits - 1)) - 1
    exp = bits & exp_mask
    overflow = exp > np.uint64((bias_src + bias_dst) << n_mant)
    underflow = exp <= np.uint64((bias_src - bias_dst) << n_mant)
    bits = np.where(overflow, sign | exp_mask, np.where(underflow, sign, bits))
  out = bits.astype(utype).view(x.dtype)
  out = np.where(np.isnan(x), x, out)  # NaN stays NaN, as XLA keeps it
  return np.asarray(out, x.dtype)


def _reduce_precision_transpose(ct, x, *, exponent_bits, mantissa_bits):
  return [reduce_precision_p.bind(ad.instantiate_zeros(ct), exponent_bits=exponent_bits,
                                  mantissa_bits=mantissa_bits)]


def _reduce_precision_lower(ctx, x, *, exponent_bits, mantissa_bits):
  return ctx.op1("stablehlo.reduce_precision", [x],
                 props={"exponent_bits": f"{exponent_bits} : i32",
                        "mantissa_bits": f"{mantissa_bits} : i32"})


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.def_abstract_eval(_reduce_precision_abstract_eval)
dispatch.def_numpy_impl(reduce_precision_p, _reduce_precision_numpy)
ad.deflinear(reduce_precision_p, _reduce_precision_transpose)  # JAX treats it as linear
batching.defvectorized(reduce_precision_p)
mlir.register_lowering(reduce_precision_p, _reduce_precision_lower)
inv.not_invertible(reduce_precision_p, "many-to-one: rounding")


# --- mulhi ---------------------------------------------------------------------------------------
def mulhi(x, y, /):
  """Elementwise multiply-high: the high half of the full-width product of two integer arrays
  (x * y has twice their width; this is its upper word), signed or unsigned by the dtype.

  Args:
    x, y: integer arrays of one dtype. If neither is a scalar, they must have the same number
      of dimensions and be broadcast compatible.

  Returns:
    An array of that dtype.

  Raises:
    TypeError: the operands are not integers of one dtype, or have different ranks.

  Example:
    >>> lax.mulhi(jnp.array([2 ** 30, -3], jnp.int32), jnp.array([8, 2 ** 31 - 1], jnp.int32))
    Array([ 2, -2], dtype=int32)
  """
  from revax._src.lax.strict_operands import check_same_rank
  check_same_rank("mulhi", x, y)
  return mulhi_p.bind(x, y)


def _mulhi_numpy(x, y):
  """The high word of the exact product (Python integers for 64-bit operands)."""
  x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
  dtype = x.dtype
  info = dtypes.iinfo(dtype)
  if info.bits <= 32:
    wide = np.int64 if info.min < 0 else np.uint64
    prod = x.astype(wide) * y.astype(wide)
  else:
    prod = np.asarray(x.astype(object) * y.astype(object))
  return np.asarray(prod >> info.bits).astype(dtype)


def _mulhi_lower(ctx, x, y):
  dtype = ctx.avals_in[0].dtype
  expansion = _mulhi_widened if dtype.itemsize * 8 != dtypes.iinfo(dtype).bits \
      else _mulhi_expansion
  return mlir.lower_fun(expansion, multiple_results=False)(ctx, x, y)


def _mulhi_widened(x, y):
  """mulhi of the sub-byte integers (int4, uint4): the product in 32 bits, shifted."""
  from revax._src.lax import binary, conversion
  dtype = get_aval(x).dtype
  info = dtypes.iinfo(dtype)
  wide = np.dtype(np.int32 if info.min < 0 else np.uint32)
  prod = binary.mul(conversion.convert_element_type(x, wide),
                    conversion.convert_element_type(y, wide))
  shift = binary.shift_right_arithmetic if info.min < 0 else binary.shift_right_logical
  return conversion.convert_element_type(shift(prod, np.asarray(info.bits, wide)), dtype)


def _mulhi_expansion(x, y):
  """mulhi from half-word partial products (no wider integer type needed): XLA has no mulhi
  operation, so this is the lowering."""
  from revax._src.lax import binary, comparison, creation
  from revax._src.lax.conversion import bitcast_convert_type
  dtype = get_aval(x).dtype
  shape = standard.broadcast_shapes(get_aval(x).shape, get_aval(y).shape)
  x = shapes.broadcast_in_dim(x, shape, tuple(range(len(shape) - get_aval(x).ndim, len(shape))))
  y = shapes.broadcast_in_dim(y, shape, tuple(range(len(shape) - get_aval(y).ndim, len(shape))))
  width = dtype.itemsize * 8
  udtype = np.dtype(f"uint{width}")
  signed = dtype != udtype
  ux = bitcast_convert_type(x, udtype) if signed else x
  uy = bitcast_convert_type(y, udtype) if signed else y
  half = np.asarray(width // 2, udtype)
  mask = np.asarray((1 << (width // 2)) - 1, udtype)
  lo = lambda v: binary.bitwise_and(v, mask)
  hi = lambda v: binary.shift_right_logical(v, half)
  x0, x1, y0, y1 = lo(ux), hi(ux), lo(uy), hi(uy)
  p00, p01, p10, p11 = (binary.mul(x0, y0), binary.mul(x0, y1), binary.mul(x1, y0),
                        binary.mul(x1, y1))
  mid = binary.add(binary.add(hi(p00), lo(p01)), lo(p10))
  out = binary.add(binary.add(binary.add(p11, hi(p01)), hi(p10)), hi(mid))
  if signed:  # two's complement: the high word loses the other operand where one is negative
    zero, uzero = np.asarray(0, dtype), creation.full(shape, 0, udtype)
    out = binary.sub(out, comparison.select_n(comparison.lt(x, zero), uzero, uy))
    out = binary.sub(out, comparison.select_n(comparison.lt(y, zero), uzero, ux))
    out = bitcast_convert_type(out, dtype)
  return out


mulhi_p = naryop("mulhi", ("int", "int"), _mulhi_numpy, None)
mlir.register_lowering(mulhi_p, _mulhi_lower)
ad.zero_output_jvp(mulhi_p, "integer operands and output")
inv.not_invertible(mulhi_p, "many-to-one: many products share a high word")
