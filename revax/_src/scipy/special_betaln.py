"""log|B(a, b)| as jax computes it (after scipy's and TOMS 708's betaln): lgamma's sum while the
larger argument is below 8, else lgamma(a) plus `algdiv`, the series for
log(Gamma(b) / Gamma(a + b)). For large b this is finite where the plain lgamma difference
cancels to 0 or NaN (betaln(1, 1e30) = -69.08, as jax's)."""
from __future__ import annotations

from revax._src import lax
from revax._src.numpy import ufuncs

_C = (0.0833333333333333, -0.00277777777760991, 0.00079365066682539, -0.00059520293135187,
      0.000837308034031215, -0.00165322962780713)


def algdiv(a, b):
  """log(Gamma(b) / Gamma(a + b)) for b >= 8 (TOMS 708's ALGDIV, as jax's third_party copy).

  Args:
    a, b: arrays of one inexact dtype.

  Returns:
    An array of that dtype.
  """
  c0, c1, c2, c3, c4, c5 = _C
  h = a / b
  c = h / (1.0 + h)
  x = h / (1.0 + h)
  d = b + (a - 0.5)
  x2 = x * x
  s3 = 1.0 + (x + x2)
  s5 = 1.0 + (x + x2 * s3)
  s7 = 1.0 + (x + x2 * s5)
  s9 = 1.0 + (x + x2 * s7)
  s11 = 1.0 + (x + x2 * s9)
  t = (1.0 / b) ** 2
  w = ((((c5 * s11 * t + c4 * s9) * t + c3 * s7) * t + c2 * s5) * t + c1 * s3) * t + c0
  w = w * (c / b)
  u = d * lax.log1p(a / b)
  v = a * (lax.log(b) - 1.0)
  return ufuncs.where(u <= v, w - v - u, w - u - v)


def betaln(a, b):
  """log|B(a, b)| of two arrays of one inexact dtype (promoted by the caller).

  Args:
    a, b: arrays of one inexact dtype.

  Returns:
    An array of that dtype.
  """
  a, b = ufuncs.minimum(a, b), ufuncs.maximum(a, b)
  small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
  large_b = lax.lgamma(a) + algdiv(a, b)
  return ufuncs.where(b < 8.0, small_b, large_b)
