"""Integer arithmetic and bit manipulation: gcd, lcm, bitwise_count, packbits and unpackbits.
"""
from __future__ import annotations

import operator

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import util
from revax._src.numpy.util import aval_of



def _require_int(fun_name, *args):
  for a in args:
    if not (dtypes.is_integer(aval_of(a).dtype) or dtypes.is_bool(aval_of(a).dtype)):
      raise ValueError(f"Arguments to jax.numpy.{fun_name} must be integers, got "
                       f"{aval_of(a).dtype}")


def _refuse_bools(fun_name, *args):
  """jax refuses operands that promote to bool (all bools), before promoting them to int."""
  if all(dtypes.is_bool(aval_of(a).dtype) for a in args):
    raise ValueError(f"Arguments to jax.numpy.{fun_name} must be integers.")


def gcd(x1, x2, /):
  """The greatest common divisor of |x1| and |x2| elementwise (Euclid's algorithm in a
  while_loop that runs until every pair is done)."""
  util.check_arraylike("gcd", x1, x2)
  _refuse_bools("gcd", x1, x2)
  x1, x2 = util.broadcasting(util.promote_args_numeric)("gcd", x1, x2)
  _require_int("gcd", x1, x2)
  a, b = util.broadcast_arrays_of(lax.abs(util.as_array(x1)) if not dtypes.is_unsigned_integer(
      aval_of(x1).dtype) else util.as_array(x1), lax.abs(util.as_array(x2)) if not
      dtypes.is_unsigned_integer(aval_of(x2).dtype) else util.as_array(x2))
  if not util.lax_const(b, 0).weak_type:
    # jax's loop puts its own constants (strong unless b is a weak scalar) into the carry
    a, b = (lax.convert_element_type(v, aval_of(v).dtype, False) for v in (a, b))

  def cond(state):
    _, b = state
    return lax.reduce_or(lax.ne(b, util.constant_like(b, 0)), tuple(range(aval_of(b).ndim)))

  def body(state):
    a, b = state
    nonzero = lax.ne(b, util.constant_like(b, 0))
    safe_b = lax.select_n(nonzero, lax.full_like(b, 1), b)
    return (lax.select_n(nonzero, a, b),
            lax.select_n(nonzero, b, lax.rem(a, safe_b)))

  return lax.while_loop(cond, body, (a, b))[0]


def lcm(x1, x2, /):
  """The least common multiple of |x1| and |x2| elementwise (0 if either is 0)."""
  util.check_arraylike("lcm", x1, x2)
  _refuse_bools("lcm", x1, x2)
  x1, x2 = util.broadcasting(util.promote_args_numeric)("lcm", x1, x2)
  _require_int("lcm", x1, x2)
  g = gcd(x1, x2)
  zero = lax.eq(g, util.constant_like(g, 0))
  safe_g = lax.select_n(zero, g, lax.full_like(g, 1))
  x1, x2 = util.broadcast_arrays_of(util.as_array(x1), util.as_array(x2))
  absf = (lambda v: v) if dtypes.is_unsigned_integer(aval_of(x1).dtype) else lax.abs
  out = lax.mul(absf(lax.div(x1, safe_g)), absf(x2))
  return lax.select_n(zero, out, lax.full_like(out, 0))


def bitwise_count(x, /):
  """The number of 1 bits in |x| elementwise, as uint8: `population_count(abs(x))`, as jax's."""
  util.check_arraylike("bitwise_count", x)
  x = util.as_array(x)
  dt = aval_of(x).dtype
  if dtypes.is_bool(dt):
    return lax.convert_element_type(x, dtypes.uint8)
  if not dtypes.is_integer(dt):
    raise TypeError(f"bitwise_count requires integer inputs, got {dt}")
  if dtypes.is_signed_integer(dt):
    x = lax.abs(x)
  return lax.convert_element_type(lax.population_count(x), dtypes.uint8)


def _bit_weights(bitorder):
  if bitorder not in ("big", "little"):
    raise ValueError("'order' must be either 'little' or 'big'")
  weights = [1 << i for i in range(8)]
  return weights[::-1] if bitorder == "big" else weights


def packbits(a, axis=None, bitorder: str = "big"):
  """The elements of the bool/integer `a` (nonzero = 1) packed 8 to a uint8 along `axis` (the
  flattened array if None), zero-padded to a multiple of 8."""
  from revax._src.numpy.shape_ops import ravel, swapaxes
  util.check_arraylike("packbits", a)
  dt = aval_of(a).dtype
  if not (dtypes.is_integer(dt) or dtypes.is_bool(dt)):
    raise TypeError("Expected an input array of integer or boolean data type")
  weights = _bit_weights(bitorder)
  a = util.as_array(a)
  if axis is None:
    a, axis = ravel(a), 0
  bits = lax.convert_element_type(lax.ne(a, util.constant_like(a, 0)), dtypes.uint8)
  bits = swapaxes(bits, axis, -1)  # (as jax's: a bad axis is swapaxes' IndexError)
  shape = aval_of(bits).shape
  n = shape[-1]
  pad = -n % 8
  if pad:
    bits = lax.pad(bits, util.scalar_constant(0, dtypes.uint8),
                   [(0, 0, 0)] * (len(shape) - 1) + [(0, pad, 0)])
  bits = lax.reshape(bits, shape[:-1] + ((n + pad) // 8, 8))
  w = lax.broadcast_in_dim(util.as_array(_uint8(weights)), aval_of(bits).shape,
                           (len(shape),))
  packed = lax.reduce_sum(lax.mul(bits, w), (len(shape),))
  return swapaxes(packed, axis, -1)


def _uint8(values):
  import numpy as np
  return np.asarray(values, dtype=np.uint8)


def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
  """The bits of the uint8 array `a` as a uint8 array of 0/1, 8 per element along `axis` (the
  flattened array if None); `count` keeps only that many (negative: drops that many)."""
  from revax._src.numpy.shape_ops import ravel, swapaxes
  util.check_arraylike("unpackbits", a)
  if aval_of(a).dtype != dtypes.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  weights = _bit_weights(bitorder)
  a = util.as_array(a)
  if axis is None:
    a, axis = ravel(a), 0
  a = swapaxes(a, axis, -1)  # (as jax's: a bad axis is swapaxes' IndexError)
  shape = aval_of(a).shape
  nd = len(shape)
  w = lax.broadcast_in_dim(util.as_array(_uint8(weights)), shape + (8,), (nd,))
  bits = lax.ne(lax.bitwise_and(lax.broadcast_in_dim(a, shape + (8,), tuple(range(nd))), w),
                util.scalar_constant(0, dtypes.uint8))
  bits = lax.reshape(lax.convert_element_type(bits, dtypes.uint8), shape[:-1] + (shape[-1] * 8,))
  if count is not None:
    total = shape[-1] * 8
    count = operator.index(count)
    keep = total + count if count < 0 else count
    keep = max(keep, 0)
    if keep <= total:
      bits = lax.slice(bits, (0,) * nd, shape[:-1] + (keep,))
    else:
      bits = lax.pad(bits, util.scalar_constant(0, dtypes.uint8),
                     [(0, 0, 0)] * (nd - 1) + [(0, keep - total, 0)])
  return swapaxes(bits, axis, -1)
