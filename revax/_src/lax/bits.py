"""Bit-level elementwise primitives: population_count, clz (count leading zeros) and
reduce_precision (round floats to fewer exponent and mantissa bits, as XLA's ReducePrecision).

Each primitive is one block: its public wrapper, then its rules, then their registration.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax.standard import unop

__all__ = ["population_count", "clz", "reduce_precision",
           "population_count_p", "clz_p", "reduce_precision_p"]


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
