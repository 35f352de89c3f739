"""Dawson's integral, the sine and cosine integrals and the Fresnel integrals for
revax.scipy.special (dawsn, sici, fresnel), in straight-line code:

- dawsn(x) = e^(-x^2) int_0^x e^(t^2) dt: the positive series sum x^(2k+1) / (k! (2k+1)) times
  e^(-x^2) up to |x| = 5 (no cancellation), the asymptotic series 1/(2x) sum (2k-1)!! / (2x^2)^k
  beyond.
- sici(x): the power series of Si and Ci below |x| = 2; above, E_1(i x) = -Ci(x) + i (Si(x) -
  pi/2) from the continued fraction of E_1 in complex arithmetic (60 terms from the tail).
- fresnel(x): the power series below |x| = 1.5; above, C + i S = (1 + i)/2 erf(sqrt(pi) (1 - i)
  x / 2) with erfc from its Laplace continued fraction in complex arithmetic.
16-bit inputs are computed in float32.
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes
from revax._src.numpy import creation, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["dawsn", "sici", "fresnel"]

_EULER = 0.5772156649015329
_CF_TERMS = 60


def _float_operand(fun_name, x):
  check_arraylike(fun_name, x)
  (x,) = promote_args_inexact(fun_name, x)
  dtype = aval_of(x).dtype
  if dtypes.is_complex(dtype):
    raise TypeError(f"{fun_name} does not accept complex arguments")
  work = dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
  return x.astype(work), dtype


def _complex_dtype(dtype):
  return dtypes.complex128 if dtype == dtypes.float64 else dtypes.complex64


def _fill(x, mask, value):
  return ufuncs.where(mask, x, value).astype(aval_of(x).dtype)


_DAWSON_SWITCH = 5.0


def dawsn(x):
  """Dawson's integral e^(-x^2) int_0^x e^(t^2) dt.

  Args:
    x: real-valued array.

  Returns:
    An array of x's (inexact) dtype.
  """
  x, dtype = _float_operand("dawsn", x)
  ax = ufuncs.abs(x)
  small = ax <= _DAWSON_SWITCH
  xs = _fill(ax, small, 1.0)
  x2 = xs * xs
  term, total = xs, xs
  for k in range(1, 90):
    term = term * x2 / k
    total = total + term / (2 * k + 1)
  series = total * ufuncs.exp(-x2)
  xl = _fill(ax, ~small, 2 * _DAWSON_SWITCH)
  inv = 1.0 / (2.0 * xl * xl)
  term, asym = creation.ones_like(xl), creation.ones_like(xl)
  for k in range(1, 20):
    term = term * (2 * k - 1) * inv
    asym = asym + term
  asym = asym / (2.0 * xl)
  out = ufuncs.where(small, series, ufuncs.where(ax == np.inf, 0.0, asym))
  return (ufuncs.sign(x) * out).astype(dtype)


_SICI_SWITCH = 2.0


def sici(x):
  """The sine and cosine integrals Si(x) = int_0^x sin(t)/t dt and Ci(x) = gamma + log|x| +
  int_0^|x| (cos(t) - 1)/t dt (Ci of |x| for negative x, as jax's).

  Args:
    x: real-valued array.

  Returns:
    (si, ci), arrays of x's (inexact) dtype.
  """
  x, dtype = _float_operand("sici", x)
  ax = ufuncs.abs(x)
  small = ax < _SICI_SWITCH
  xs = _fill(ax, small, 1.0)
  x2 = xs * xs
  si_term, si = xs, xs  # x^(2k+1) / (2k+1)! with signs
  ci_term, ci = creation.ones_like(xs), creation.zeros_like(xs)  # x^(2k) / (2k)!
  for k in range(1, 20):
    si_term = -si_term * x2 / ((2 * k) * (2 * k + 1))
    si = si + si_term / (2 * k + 1)
    ci_term = -ci_term * x2 / ((2 * k - 1) * (2 * k))
    ci = ci + ci_term / (2 * k)
  ci = _EULER + ufuncs.log(xs) + ci
  xl = _fill(ax, ~small & (ax != np.inf), 2 * _SICI_SWITCH)
  z = (1j * xl).astype(_complex_dtype(aval_of(xl).dtype))
  tail = creation.zeros_like(z)
  for i in range(_CF_TERMS, 0, -1):
    tail = -(i * i) / (z + (1.0 + 2 * i) + tail)
  e1 = ufuncs.exp(-z) / (z + 1.0 + tail)
  si_large = ufuncs.imag(e1) + math.pi / 2
  ci_large = -ufuncs.real(e1)
  si = ufuncs.where(small, si, ufuncs.where(ax == np.inf, math.pi / 2, si_large))
  ci = ufuncs.where(small, ci, ufuncs.where(ax == np.inf, 0.0, ci_large))
  ci = ufuncs.where(ax == 0.0, -np.inf, ci)
  ci = ufuncs.where(x == -np.inf, np.nan, ci)  # as jax's: Ci(-inf) is NaN, Ci(inf) is 0
  return (ufuncs.sign(x) * si).astype(dtype), ufuncs.where(ufuncs.isnan(x), np.nan, ci).astype(dtype)


_FRESNEL_SWITCH = 1.5
_FRESNEL_LARGE = 36974.0


def _sincospisquaredhalf(x):
  """sin and cos of pi x^2 / 2 for x >= 0, reducing x^2 / 2 modulo 2 exactly (as jax's)."""
  s = ufuncs.fmod(x, 2.0)
  r = ufuncs.fmod(s * (x - s / 2), 2.0)
  sinpi = ufuncs.where(r < 0.5, ufuncs.sin(np.pi * r), ufuncs.where(
      r > 1.5, ufuncs.sin(np.pi * (r - 2.0)), -ufuncs.sin(np.pi * (r - 1.0))))
  cospi = ufuncs.where(r == 0.5, 0.0, ufuncs.where(
      r < 1.0, -ufuncs.sin(np.pi * (r - 0.5)), ufuncs.sin(np.pi * (r - 1.5))))
  return sinpi, cospi


def fresnel(x):
  """The Fresnel integrals S(x) = int_0^x sin(pi t^2 / 2) dt and C(x) = int_0^x cos(pi t^2 / 2) dt.

  Args:
    x: real-valued array.

  Returns:
    (S, C), arrays of x's (inexact) dtype.
  """
  x, dtype = _float_operand("fresnel", x)
  ax = ufuncs.abs(x)
  small = ax < _FRESNEL_SWITCH
  xs = _fill(ax, small, 1.0)
  u = (math.pi / 2) * xs * xs
  s_term = u * xs  # (pi/2)^(2k+1) x^(4k+3) / (2k+1)! with signs
  c_term = xs  # (pi/2)^(2k) x^(4k+1) / (2k)! with signs
  s_sum, c_sum = s_term / 3.0, c_term
  for k in range(1, 16):
    c_term = -c_term * u * u / ((2 * k - 1) * (2 * k))
    s_term = -s_term * u * u / ((2 * k) * (2 * k + 1))
    c_sum = c_sum + c_term / (4 * k + 1)
    s_sum = s_sum + s_term / (4 * k + 3)
  xl = _fill(ax, ~small & (ax != np.inf), 2 * _FRESNEL_SWITCH)
  cdtype = _complex_dtype(aval_of(xl).dtype)
  z = (xl * (math.sqrt(math.pi) / 2)).astype(cdtype) * (1 - 1j)
  tail = creation.zeros_like(z)
  for k in range(_CF_TERMS, 0, -1):
    tail = (k / 2) / (z + tail)
  erfc = ufuncs.exp(-z * z) / math.sqrt(math.pi) / (z + tail)
  w = (1 - erfc) * (0.5 + 0.5j)
  s = ufuncs.where(small, s_sum, ufuncs.where(ax == np.inf, 0.5, ufuncs.imag(w)))
  c = ufuncs.where(small, c_sum, ufuncs.where(ax == np.inf, 0.5, ufuncs.real(w)))
  # beyond |x| = 36974 (where the continued fraction overflows), jax's limits: 1/2 in float32,
  # 1/2 -+ cos, sin(pi x^2 / 2) / (pi x) in float64
  big = ax > _FRESNEL_LARGE
  if aval_of(x).dtype == dtypes.float64:
    xb = _fill(ax, big & (ax != np.inf), 2 * _FRESNEL_LARGE)
    sinpi, cospi = _sincospisquaredhalf(xb)
    s_large, c_large = 0.5 - cospi / (np.pi * xb), 0.5 + sinpi / (np.pi * xb)
  else:
    s_large = c_large = 0.5
  s = ufuncs.where(big, s_large, s)
  c = ufuncs.where(big, c_large, c)
  sign = ufuncs.sign(x)
  return (sign * s).astype(dtype), (sign * c).astype(dtype)
