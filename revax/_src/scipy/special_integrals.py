"""The dilogarithm and Bessel functions of the first kind for revax.scipy.special (spence,
bessel_jn), written with fixed-length series so that they lower to straight-line XLA code and
differentiate through (the exponential integrals are in special_expint, as jax computes them).

- spence(x) = Li_2(1 - x): the series of Li_2 on |w| <= 1/2, Euler's reflection on (0, 1/2) and
  Li_2(1 - x) + Li_2(1 - 1/x) = -log(x)^2 / 2 above 1.
- J_0 ... J_v (bessel_jn): Miller's backward recurrence J_{k-1} = (2k / z) J_k - J_{k+1} from
  order n_iter, normalized by J_0 + 2 sum_k J_2k = 1, exactly as jax's (which overflows to NaN
  in float32 for |z| below about 3).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core.trace import Tracer
from revax._src.numpy import creation, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["spence", "bessel_jn"]


def _cast(x, like):
  return x.astype(aval_of(like).dtype)


_SPENCE_TERMS = 60


def _li2_series(w):
  """Li_2(w) = sum_k w^k / k^2, for |w| <= 1/2."""
  total = creation.zeros_like(w)
  power = creation.ones_like(w)
  for k in range(1, _SPENCE_TERMS):
    power = power * w
    total = total + power / (k * k)
  return total


def spence(x):
  """Spence's function int_1^x log(t) / (1 - t) dt = Li_2(1 - x) for x >= 0 (NaN below).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  check_arraylike("spence", x)
  (x,) = promote_args_inexact("spence", x)
  big = x > 1.0
  y = _cast(ufuncs.where(big, 1.0 / ufuncs.where(big, x, 1.0), x), x)  # y in [0, 1]
  low = y < 0.5
  y_low = _cast(ufuncs.where(low & (y > 0.0), y, 0.25), x)
  y_high = _cast(ufuncs.where(low, 0.75, y), x)
  from_low = (math.pi ** 2 / 6 - ufuncs.log(1.0 - y_low) * ufuncs.log(y_low)
              - _li2_series(y_low))
  from_high = _li2_series(1.0 - y_high)
  value = ufuncs.where(low, from_low, from_high)
  value = ufuncs.where(y == 0.0, math.pi ** 2 / 6, value)
  log_x = ufuncs.log(_cast(ufuncs.where(big, x, 1.0), x))
  value = ufuncs.where(big, -value - 0.5 * log_x * log_x, value)
  return _cast(ufuncs.where((x < 0.0) | ufuncs.isnan(x) | (x == np.inf), np.nan, value), x)


def bessel_jn(z, *, v: int, n_iter: int = 50):
  """Bessel functions of the first kind J_0(z) ... J_v(z).

  Args:
    z: real-valued array.
    v: the highest order, a concrete non-negative integer.
    n_iter: the backward recurrence starts at order n_iter; it is accurate while |z| stays
      well below n_iter (and, in float32, above about 3, where jax's overflows too).

  Returns:
    An array of shape (min(v, n_iter) + 1,) + z.shape.
  """
  check_arraylike("bessel_jn", z)
  if not isinstance(v, int) and not isinstance(v, np.integer):
    raise TypeError(f"bessel_jn requires a concrete integer v, got {v!r}")
  if isinstance(v, Tracer) or isinstance(n_iter, Tracer):
    raise TypeError("bessel_jn requires concrete integers v and n_iter")
  v, n_iter = int(v), int(n_iter)
  if v < 0:
    raise ValueError(f"bessel_jn requires v >= 0, got {v}")
  (z,) = promote_args_inexact("bessel_jn", z)
  # jax's recurrence: f_k = 2 (k + 1) f_{k+1} / z - f_{k+2} from k = n_iter down to 0, started
  # at f = 1e-16, normalized by J_0 + 2 sum J_2k = 1. In float32 it overflows for small |z|
  # (NaN, as jax's), and divides by z = 0.
  f0 = creation.zeros_like(z)
  f1 = creation.full_like(z, 1e-16)
  bs = creation.zeros_like(z)
  values = {}
  for k in range(n_iter, -1, -1):
    f = 2.0 * (k + 1.0) * f1 / z - f0
    if k % 2 == 0:
      bs = bs + 2.0 * f
    f0, f1 = f1, f
    if k <= v:
      values[k] = f
  return shape_ops.stack([_cast(values[k] / (bs - values[0]), z)
                          for k in range(min(v, n_iter) + 1)])
