"""The Faddeeva function w(z) = exp(-z^2) erfc(-i z) for revax.scipy.special (wofz).

Weideman's rational approximation (SIAM J. Numer. Anal. 31, 1994) with N = 32 terms: with
L = sqrt(N / sqrt(2)) and Z = (L + i z) / (L - i z),
w(z) = 2 p(Z) / (L - i z)^2 + 1 / (sqrt(pi) (L - i z)), where the polynomial p's coefficients
are the Fourier coefficients of exp(-t^2) (L^2 + t^2) at t = L tan(theta / 2), computed here
with NumPy's FFT at import. It holds in the closed upper half plane (the real axis included);
below it, w(z) = 2 exp(-z^2) - w(-z).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes
from revax._src.numpy import creation, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["wofz"]

_N = 32


def _weideman_coefficients(n):
  m = 2 * n
  k = np.arange(-m + 1, m)
  length = math.sqrt(n / math.sqrt(2))
  t = length * np.tan(k * np.pi / m / 2)
  samples = np.concatenate([[0.0], np.exp(-t * t) * (length * length + t * t)])
  coeffs = np.real(np.fft.fft(np.fft.fftshift(samples))) / (2 * m)
  return length, coeffs[1:n + 1][::-1]  # highest power first


_L, _COEFFS = _weideman_coefficients(_N)


def _upper(z):
  """w(z) for Im z >= 0."""
  denom = _L - 1j * z
  big_z = (_L + 1j * z) / denom
  p = creation.zeros_like(z)
  for c in _COEFFS:
    p = p * big_z + float(c)
  return 2.0 * p / (denom * denom) + (1 / math.sqrt(math.pi)) / denom


def wofz(z):
  """The Faddeeva function exp(-z^2) erfc(-i z).

  Args:
    z: an array (real inputs are promoted to complex).

  Returns:
    A complex array (complex64 for float32 and complex64 inputs).
  """
  check_arraylike("wofz", z)
  (z,) = promote_args_inexact("wofz", z)
  dtype = aval_of(z).dtype
  cdtype = dtype if dtypes.is_complex(dtype) else (
      dtypes.complex128 if dtype == dtypes.float64 else dtypes.complex64)
  z = z.astype(cdtype)
  below = ufuncs.imag(z) < 0
  zu = ufuncs.where(below, -z, z).astype(cdtype)
  w = _upper(zu)
  return ufuncs.where(below, 2.0 * ufuncs.exp(-z * z) - w, w).astype(cdtype)
