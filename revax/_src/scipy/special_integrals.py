"""Exponential integrals, the dilogarithm and Bessel functions of the first kind for
revax.scipy.special (exp1, expi, expn, spence, bessel_jn), written with fixed-length series and
continued fractions so that they lower to straight-line XLA code and differentiate through.

- E_n(x) (expn; E_1 = exp1): the power series below x = 1, the continued fraction
  e^-x / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...))) above, evaluated from its
  tail (a fixed number of terms: it converges geometrically for x >= 1).
- Ei(x) (expi): -E_1(-x) for x < 0; for x > 0 the series gamma + log x + sum x^k / (k k!) up to
  x = 40 and the asymptotic series e^x / x sum k! / x^k beyond.
- spence(x) = Li_2(1 - x): the series of Li_2 on |w| <= 1/2, Euler's reflection on (0, 1/2) and
  Li_2(1 - x) + Li_2(1 - 1/x) = -log(x)^2 / 2 above 1.
- J_0 ... J_v (bessel_jn): Miller's backward recurrence J_{k-1} = (2k / z) J_k - J_{k+1} from
  order n_iter, normalized by J_0 + 2 sum_k J_2k = 1, exactly as jax's (which overflows to NaN
  in float32 for |z| below about 3).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.numpy import creation, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["exp1", "expi", "expn", "spence", "bessel_jn"]

_EULER = 0.5772156649015329
_SERIES_TERMS = 40
_CF_TERMS = 60


def _cast(x, like):
  return x.astype(aval_of(like).dtype)


def _expn_series(n, x):
  """E_n(x) for 0 < x <= 1 (n >= 1): (-x)^(n-1) / (n-1)! (psi(n) - log x)
  - sum_{k != n-1} (-x)^k / ((k - n + 1) k!)."""
  from revax._src import lax
  nm1 = n - 1.0
  psi = lax.digamma(ufuncs.maximum(n, 1.0).astype(aval_of(x).dtype))
  total = creation.zeros_like(x)
  term = creation.ones_like(x)  # (-x)^k / k!
  for k in range(_SERIES_TERMS):
    if k > 0:
      term = term * (-x) / k
    denom = k - nm1
    regular = ufuncs.where(denom == 0.0, 0.0, -term / ufuncs.where(denom == 0.0, 1.0, denom))
    special = term * (psi - ufuncs.log(x))
    total = total + ufuncs.where(denom == 0.0, special, regular)
  return _cast(total, x)


def _expn_continued_fraction(n, x):
  """E_n(x) for x >= 1, evaluated from the tail of its continued fraction."""
  tail = creation.zeros_like(x)
  for i in range(_CF_TERMS, 0, -1):
    tail = -(i * (n + i - 1.0)) / (x + n + 2.0 * i + tail)
  return _cast(ufuncs.exp(-x) / (x + n + tail), x)


def _expn(n, x):
  small = x <= 1.0
  xs = _cast(ufuncs.where(small, x, 0.5), x)
  xl = _cast(ufuncs.where(small, 2.0, x), x)
  out = ufuncs.where(small, _expn_series(n, xs), _expn_continued_fraction(n, xl))
  out = ufuncs.where(n == 0.0, ufuncs.exp(-x) / x, out)
  out = ufuncs.where(x == 0.0, ufuncs.where(n > 1.0, 1.0 / ufuncs.maximum(n - 1.0, 1.0), np.inf),
                     out)
  out = ufuncs.where(x == np.inf, 0.0, out)
  bad = (x < 0.0) | (n < 0.0) | ufuncs.isnan(x)
  return _cast(ufuncs.where(bad, np.nan, out), x)


def expn(n, x):
  """The generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt.

  Args:
    n: non-negative integer orders (an integer dtype, as JAX requires).
    x: non-negative points; n and x broadcast.

  Returns:
    A float array (NaN for x < 0 or n < 0).
  """
  check_arraylike("expn", n, x)
  n_dtype = aval_of(n).dtype if not isinstance(n, int) else dtypes.int32
  if not dtypes.is_integer(n_dtype):
    raise ValueError(f"Argument `n` to expn must be of integer type. Got dtype {n_dtype}.")
  n, x = promote_args_inexact("expn", n, x)
  return _expn(n, x)


def exp1(x):
  """The exponential integral E_1(x) = int_x^inf e^-t / t dt (NaN for x < 0).

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  check_arraylike("exp1", x)
  (x,) = promote_args_inexact("exp1", x)
  return _expn(creation.ones_like(x), x)


_EXPI_SWITCH = 40.0
_EXPI_ASYMPTOTIC_TERMS = 30


def expi(x):
  """The exponential integral Ei(x) = -PV int_-x^inf e^-t / t dt.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype (-inf at 0).
  """
  check_arraylike("expi", x)
  (x,) = promote_args_inexact("expi", x)
  negative = x < 0.0
  neg_part = -_expn(creation.ones_like(x), _cast(ufuncs.where(negative, -x, 1.0), x))
  small = x <= _EXPI_SWITCH
  xs = _cast(ufuncs.where(negative | ~small, 1.0, x), x)
  series = creation.zeros_like(xs)
  term = creation.ones_like(xs)
  for k in range(1, 3 * int(_EXPI_SWITCH)):
    term = term * xs / k
    series = series + term / k
  series = _EULER + ufuncs.log(xs) + series
  xl = _cast(ufuncs.where(small, 2 * _EXPI_SWITCH, x), x)
  asym = creation.ones_like(xl)
  term = creation.ones_like(xl)
  for k in range(1, _EXPI_ASYMPTOTIC_TERMS):
    term = term * k / xl
    asym = asym + term
  asym = ufuncs.exp(xl) / xl * asym
  out = ufuncs.where(negative, neg_part, ufuncs.where(small, series, asym))
  out = ufuncs.where(x == 0.0, -np.inf, ufuncs.where(x == np.inf, np.inf, out))
  return _cast(out, x)


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
