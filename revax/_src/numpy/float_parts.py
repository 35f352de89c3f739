"""Elementwise functions on the parts and neighbourhood of floating-point numbers: frexp, ldexp,
modf, spacing, nan_to_num and the modified Bessel function i0.
"""
from __future__ import annotations

import math

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands

_INT_OF_WIDTH = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


def frexp(x, /):
  """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1 (0, inf and
  NaN give themselves and exponent 0).

  Returns:
    The mantissa (x's floating dtype) and the exponent (int32).
  """
  util.check_arraylike("frexp", x)
  (x,) = util.promote_args_inexact("frexp", x)
  dt = aval_of(x).dtype
  if dtypes.is_complex(dt):
    raise TypeError("frexp does not support complex-valued inputs")
  compute = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
  xc = lax.convert_element_type(x, compute)
  info = np.finfo(compute)
  nmant = info.nmant
  int_t = _INT_OF_WIDTH[np.dtype(compute).itemsize]
  bits = lax.bitcast_convert_type(xc, int_t)
  exp_mask = ((1 << info.nexp) - 1) << nmant
  exp_field = lax.bitwise_and(lax.shift_right_logical(bits, util.constant_like(bits, nmant)),
                              util.constant_like(bits, (1 << info.nexp) - 1))
  bias = info.maxexp - 1
  exponent = lax.sub(exp_field, util.constant_like(exp_field, bias - 1))
  mant_bits = lax.bitwise_or(lax.bitwise_and(bits, util.constant_like(bits, ~exp_mask)),
                             util.constant_like(bits, (bias - 1) << nmant))
  mantissa = lax.bitcast_convert_type(mant_bits, compute)
  special = lax.bitwise_or(lax.eq(xc, util.constant_like(xc, 0)),
                           lax.bitwise_not(lax.is_finite(xc)))
  mantissa = lax.select_n(special, mantissa, xc)
  exponent = lax.select_n(special, exponent, lax.full_like(exponent, 0))
  return (lax.convert_element_type(mantissa, dt),
          lax.convert_element_type(exponent, dtypes.int32))


def ldexp(x1, x2, /):
  """x1 * 2**x2 elementwise (`x2` integer or bool), without overflowing the power of two on its
  own. As jax's, a complex `x1` or a floating `x2` is a ValueError."""
  from revax._src.numpy.ufuncs import exp2
  util.check_arraylike("ldexp", x1, x2)
  x1_dtype, x2_dtype = aval_of(x1).dtype, aval_of(x2).dtype
  if dtypes.is_complex(x1_dtype) or dtypes.is_inexact(x2_dtype):
    raise ValueError(f"ldexp not supported for input types {(x1_dtype, x2_dtype)}")
  if dtypes.is_bool(x2_dtype):
    x2 = lax.convert_element_type(x2, dtypes.default_int_dtype())
  (x1,) = util.promote_args_inexact("ldexp", x1)
  x1, x2 = util.broadcast_arrays_of(util.as_array(x1), util.as_array(x2))
  half = lax.div(x2, util.constant_like(x2, 2))
  rest = lax.sub(x2, half)
  f = lambda e: exp2(lax.convert_element_type(e, aval_of(x1).dtype))
  return lax.mul(lax.mul(x1, f(half)), f(rest))


def modf(x, /, out=None):
  """(fractional part, integral part) of x, both with x's sign."""
  from revax._src.numpy.ufuncs import trunc
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
  util.check_arraylike("modf", x)
  (x,) = util.promote_args_inexact("modf", x)
  whole = trunc(x)
  return lax.sub(x, whole), whole


def spacing(x, /):
  """The distance from x to the next representable number away from zero, computed as jax's
  (float16 towards +inf; a zero distance is the smallest subnormal with x's sign; jax's
  infinity constant makes the result strong unless x is a weak scalar)."""
  from revax._src.numpy.ufuncs import copysign
  util.check_arraylike("spacing", x)
  (x,) = util.promote_args_inexact("spacing", x)
  dt = aval_of(x).dtype
  if dtypes.is_complex(dt):
    raise ValueError("jnp.spacing is not defined for complex inputs.")
  inf = util.lax_const(x, np.inf)
  if dt == dtypes.float16:
    return lax.sub(lax.nextafter(*util.promote_dtypes(x, inf)), x)
  result = lax.sub(lax.nextafter(*util.promote_dtypes(x, copysign(inf, x))), x)
  # (finfo's smallest_subnormal is a NumPy scalar in jax: strongly typed)
  tiny = copysign(util.scalar_constant(dtypes.finfo(dt).smallest_subnormal, dt), x)
  result, tiny = util.promote_dtypes(result, tiny)
  result, tiny = util.broadcast_arrays_of(result, tiny)
  return lax.select_n(lax.eq(result, util.lax_const(result, 0)), result, tiny)


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
  """x with NaN replaced by `nan` and infinities by `posinf`/`neginf` (default: the dtype's
  largest and smallest finite values); complex values are treated part by part."""
  util.check_arraylike("nan_to_num", x)
  x = util.as_array(x)
  dt = aval_of(x).dtype
  if not dtypes.is_inexact(dt):
    return x
  if dtypes.is_complex(dt):
    re = nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf)
    im = nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf)
    return lax.complex(re, im)
  info = dtypes.finfo(dt)  # (bfloat16 and the float8 types too)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  # as jax's: jnp.where with the replacements as strongly typed arrays of x's dtype (a strong
  # result; replacement arrays broadcast)
  from revax._src.numpy.creation import asarray
  from revax._src.numpy.ufuncs import isnan, isneginf, isposinf, where
  out = where(isnan(x), asarray(nan, dtype=dt), x)
  out = where(isposinf(out), asarray(posinf, dtype=dt), out)
  return where(isneginf(out), asarray(neginf, dtype=dt), out)


_I0_SERIES_TERMS = 40
_I0_SWITCH = 15.0
_I0_ASYMPTOTIC_TERMS = 10


def i0(x):
  """The modified Bessel function of the first kind of order 0, elementwise (real inputs).

  Below |x| = 15 it sums the power series sum_k ((x/2)^2)^k / (k!)^2; above, the asymptotic
  expansion e^|x| / sqrt(2 pi |x|) * sum_k a_k / |x|^k. Both are differentiable.
  """
  util.check_arraylike("i0", x)
  (x,) = util.promote_args_inexact("i0", x)
  if dtypes.is_complex(aval_of(x).dtype):
    raise ValueError("i0 does not support complex-valued inputs.")
  dt = aval_of(x).dtype
  compute = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
  ax = lax.abs(lax.convert_element_type(x, compute))
  small = lax.lt(ax, util.constant_like(ax, _I0_SWITCH))
  xs = lax.min(ax, util.constant_like(ax, _I0_SWITCH))
  y = lax.mul(lax.mul(xs, xs), util.constant_like(xs, 0.25))
  term = lax.full_like(xs, 1)
  total = term
  for k in range(1, _I0_SERIES_TERMS + 1):
    term = lax.mul(term, lax.div(y, util.constant_like(y, float(k * k))))
    total = lax.add(total, term)
  xl = lax.max(ax, util.constant_like(ax, _I0_SWITCH))
  inv = lax.div(lax.full_like(xl, 1), xl)
  coef, series, power = 1.0, lax.full_like(xl, 1), lax.full_like(xl, 1)
  for k in range(1, _I0_ASYMPTOTIC_TERMS + 1):
    coef *= (2 * k - 1) ** 2 / (8.0 * k)
    power = lax.mul(power, inv)
    series = lax.add(series, lax.mul(util.constant_like(power, coef), power))
  # e^x / sqrt(2 pi x), as e^(x/2) twice so large x overflows only when the result does
  half_exp = lax.exp(lax.mul(xl, util.constant_like(xl, 0.5)))
  large = lax.mul(lax.mul(half_exp, lax.div(half_exp, lax.sqrt(lax.mul(
      util.constant_like(xl, 2 * math.pi), xl)))), series)
  # (jax's i0 keeps the weak type of its operand)
  return lax.convert_element_type(lax.select_n(small, large, total), dt, aval_of(x).weak_type)

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("nan_to_num",))
