"""The normal distribution truncated to [a, b] in standard units (as jax.scipy.stats.truncnorm).

Probabilities of intervals are differences of normal CDFs, taken in log space on the side of
the mean where they do not cancel: log(Phi(hi) - Phi(lo)) = log Phi(hi) + log1p(-e^(log Phi(lo)
- log Phi(hi))) below the mean, and the same with the survival function (Phi(-x)) above it.
"""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats import norm
from revax._src.scipy.stats._common import promote, select


def _log_diff_ndtr(lo, hi):
  """log(Phi(hi) - Phi(lo)) for lo <= hi, computed on the tail side of both."""
  left = special.log_ndtr(hi) + _log1m_exp(special.log_ndtr(lo) - special.log_ndtr(hi))
  right = special.log_ndtr(-lo) + _log1m_exp(special.log_ndtr(-hi) - special.log_ndtr(-lo))
  return select(lo > 0.0, right, left, left)


def _log1m_exp(x):
  """log(1 - e^x) for x <= 0, accurate near 0 and for very negative x."""
  return select(x > -0.6931472, ufuncs.log(-ufuncs.expm1(x)), ufuncs.log1p(-ufuncs.exp(x)), x)


def logpdf(x, a, b, loc=0, scale=1):
  """Log of the truncated normal density on [a, b] (standard units), -inf outside.

  Args:
    x: points; a, b: truncation bounds in standard units; loc, scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
  z = (x - loc) / scale
  value = norm.logpdf(z) - ufuncs.log(scale) - _log_diff_ndtr(a, b)
  return select((z < a) | (z > b), -np.inf, value, value)


def pdf(x, a, b, loc=0, scale=1):
  """The truncated normal density."""
  return ufuncs.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """log of the CDF: log(Phi(z) - Phi(a)) - log(Phi(b) - Phi(a)), -inf below a, 0 above b."""
  x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
  z = (x - loc) / scale
  zc = ufuncs.clip(z, a, b).astype(z.dtype)
  value = _log_diff_ndtr(a, zc) - _log_diff_ndtr(a, b)
  return select(z <= a, -np.inf, select(z >= b, 0.0, value, value), value)


def cdf(x, a, b, loc=0, scale=1):
  """The truncated normal CDF."""
  return ufuncs.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """log of the survival function: log(Phi(b) - Phi(z)) - log(Phi(b) - Phi(a))."""
  x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
  z = (x - loc) / scale
  zc = ufuncs.clip(z, a, b).astype(z.dtype)
  value = _log_diff_ndtr(zc, b) - _log_diff_ndtr(a, b)
  return select(z <= a, 0.0, select(z >= b, -np.inf, value, value), value)


def sf(x, a, b, loc=0, scale=1):
  """The truncated normal survival function."""
  return ufuncs.exp(logsf(x, a, b, loc, scale))
