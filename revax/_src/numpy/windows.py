"""Window functions for signal processing: bartlett, blackman, hamming, hanning and kaiser.

Each returns `M` float32 samples (float64 with x64) of the symmetric window; M < 1 gives an
empty array and M == 1 gives [1.].
"""
from __future__ import annotations

import math
import operator

from revax._src import lax
from revax._src.core import dtypes
from revax._src.numpy import util


def _centered(M):
  """(n, denominator): n = 1 - M, 3 - M, ..., M - 1 (float), and M - 1."""
  dt = dtypes.default_float_dtype()
  n = lax.convert_element_type(lax.iota(dtypes.int32, M), dt)
  n = lax.sub(lax.mul(n, util.scalar_constant(2, dt)), util.scalar_constant(M - 1, dt))
  return n, util.scalar_constant(M - 1, dt)


def _check_M(fun_name, M):
  M = operator.index(util.concrete_scalar(M, fun_name, "M"))
  return M


def _special(M):
  dt = dtypes.default_float_dtype()
  if M < 1:
    return util.full_of((0,), 0, dt)
  return util.full_of((1,), 1, dt)


def _cosine_window(fun_name, M, coefficients):
  M = _check_M(fun_name, M)
  if M <= 1:
    return _special(M)
  n, den = _centered(M)
  out = util.full_of((M,), coefficients[0], dtypes.default_float_dtype())
  for k, c in enumerate(coefficients[1:], start=1):
    angle = lax.div(lax.mul(n, util.constant_like(n, k * math.pi)), den)
    out = lax.add(out, lax.mul(util.constant_like(n, c), lax.cos(angle)))
  return out


def bartlett(M):
  """The Bartlett (triangular) window of M samples."""
  M = _check_M("bartlett", M)
  if M <= 1:
    return _special(M)
  n, den = _centered(M)
  return lax.sub(util.constant_like(n, 1), lax.div(lax.abs(n), den))


def blackman(M):
  """The Blackman window of M samples."""
  return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def hamming(M):
  """The Hamming window of M samples."""
  return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M):
  """The Hann window of M samples."""
  return _cosine_window("hanning", M, (0.5, 0.5))


def kaiser(M, beta):
  """The Kaiser window of M samples with shape parameter `beta`: i0(beta sqrt(1 - t^2)) /
  i0(beta) for t from -1 to 1."""
  from revax._src.numpy.float_parts import i0
  M = _check_M("kaiser", M)
  util.check_arraylike("kaiser", beta)
  if M <= 1:
    return _special(M)
  n, den = _centered(M)
  t = lax.div(n, den)
  beta = lax.convert_element_type(util.as_array(beta), dtypes.default_float_dtype())
  arg = lax.mul(beta, lax.sqrt(lax.max(lax.sub(util.constant_like(t, 1), lax.mul(t, t)),
                                       util.constant_like(t, 0))))
  return lax.div(i0(arg), i0(beta))
