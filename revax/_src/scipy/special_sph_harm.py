"""Spherical harmonics for revax.scipy.special (sph_harm_y, SciPy's current convention: theta
is the polar angle, phi the azimuth, with the Condon-Shortley phase).

Y_n^m(theta, phi) = Pbar_n^|m|(cos theta) e^(i m phi), times (-1)^m for m < 0 (so that
Y_n^-m = (-1)^m conj(Y_n^m)), where Pbar is the associated Legendre function normalized over the
sphere. Pbar is computed per element by the stable recurrences
Pbar_m^m = (-1)^m sqrt((2m + 1) / (4 pi) prod_{i<=m} (2i - 1) / (2i)) sin(theta)^m (sin(theta)
as sqrt(1 - cos(theta)^2), as jax's),
Pbar_{m+1}^m = sqrt(2m + 3) cos(theta) Pbar_m^m, and for l >= m + 2
Pbar_l^m = a_l (cos(theta) Pbar_{l-1}^m - Pbar_{l-2}^m / a_{l-1}), a_l = sqrt((4l^2 - 1) /
(l^2 - m^2)), unrolled to the static maximum degree n_max with each element stopping at its n.
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.numpy import creation, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, as_array, check_arraylike, promote_args_inexact

__all__ = ["sph_harm_y"]


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
  """The spherical harmonic Y_n^m(theta, phi) (as scipy.special.sph_harm_y).

  Args:
    n: degrees (integers >= 0).
    m: orders (integers, |m| <= n; 0 where |m| > n, as SciPy).
    theta: polar angles; phi: azimuths (all four broadcast).
    diff_n: unsupported (as in JAX).
    n_max: the largest degree, static; required when n is traced, else max(n). Degrees above
      it are clipped to it (as JAX).

  Returns:
    A complex array (complex64 for float32 angles).
  """
  if diff_n is not None:
    raise NotImplementedError(
        "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
  check_arraylike("sph_harm_y", n, m, theta, phi)
  n, m = as_array(n), as_array(m)
  if not (dtypes.is_integer(aval_of(n).dtype) and dtypes.is_integer(aval_of(m).dtype)):
    raise TypeError("sph_harm_y: n and m must be of integer types, got "
                    f"{aval_of(n).dtype} and {aval_of(m).dtype}")
  if n_max is None:
    if isinstance(n, Tracer):
      raise TypeError("sph_harm_y: pass n_max (a static int) when n is traced")
    n_max = int(np.max(np.asarray(n))) if aval_of(n).size else 0
  theta, phi = promote_args_inexact("sph_harm_y", theta, phi)
  dtype = aval_of(theta).dtype
  shape = np.broadcast_shapes(aval_of(n).shape, aval_of(m).shape, aval_of(theta).shape,
                              aval_of(phi).shape)
  n = shape_ops.broadcast_to(ufuncs.minimum(n, n_max), shape)
  m = shape_ops.broadcast_to(m, shape)
  theta, phi = shape_ops.broadcast_to(theta, shape), shape_ops.broadcast_to(phi, shape)
  am = ufuncs.abs(m)
  # as jax's: a function of cos(theta), sin(theta) taken as sqrt(1 - cos^2) >= 0 (theta outside
  # [0, pi] folds back; near the poles this carries jax's float32 rounding)
  x = ufuncs.cos(theta)
  s = ufuncs.sqrt(1.0 - x * x)
  amf = am.astype(dtype)
  # Pbar_m^m, built one factor per i <= |m|
  p_mm = creation.full(shape, 1.0 / math.sqrt(4 * math.pi), dtype=dtype)
  for i in range(1, n_max + 1):
    factor = -math.sqrt((2 * i + 1) / (2 * i)) * s
    p_mm = ufuncs.where(am >= i, p_mm * factor, p_mm).astype(dtype)
  p_prev2 = p_mm
  p_prev1 = (math.sqrt(1.0) * ufuncs.sqrt(2.0 * amf + 3.0) * x * p_mm).astype(dtype)
  result = ufuncs.where(n == am, p_mm, ufuncs.where(n == am + 1, p_prev1, 0.0)).astype(dtype)
  # l = |m| + j for j = 2 .. n_max (elements whose |m| + j passes n are done)
  for j in range(2, n_max + 1):
    lf = amf + j
    a_l = ufuncs.sqrt((4.0 * lf * lf - 1.0) / (lf * lf - amf * amf))
    lm1 = lf - 1.0
    a_lm1 = ufuncs.sqrt((4.0 * lm1 * lm1 - 1.0) / ufuncs.maximum(lm1 * lm1 - amf * amf, 1.0))
    p_l = (a_l * (x * p_prev1 - p_prev2 / a_lm1)).astype(dtype)
    result = ufuncs.where(n == am + j, p_l, result).astype(dtype)
    p_prev2, p_prev1 = p_prev1, p_l
  result = ufuncs.where((am > n) | (n < 0), 0.0, result).astype(dtype)
  sign = ufuncs.where((m < 0) & (am % 2 == 1), -1.0, 1.0).astype(dtype)
  cdtype = dtypes.complex128 if dtype == dtypes.float64 else dtypes.complex64
  phase = ufuncs.exp((1j * (m.astype(dtype) * phi)).astype(cdtype))
  return ((sign * result).astype(cdtype) * phase).astype(cdtype)


