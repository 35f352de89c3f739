"""The exponential distribution (as jax.scipy.stats.expon)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote, select


def logpdf(x, loc=0, scale=1):
  """Log of the exponential density exp(-(x - loc) / scale) / scale on x >= loc (-inf below).

  Args:
    x: points; loc, scale: parameters (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, loc, scale = promote("expon.logpdf", x, loc, scale)
  z = (x - loc) / scale
  return select(z < 0.0, -np.inf, -z - ufuncs.log(scale), z)


def pdf(x, loc=0, scale=1):
  """The exponential density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The CDF 1 - exp(-z) (0 below loc)."""
  x, loc, scale = promote("expon.cdf", x, loc, scale)
  z = (x - loc) / scale
  return select(z < 0.0, 0.0, -ufuncs.expm1(-z), z)


def logcdf(x, loc=0, scale=1):
  """log of the CDF, log(-expm1(-z))."""
  x, loc, scale = promote("expon.logcdf", x, loc, scale)
  z = (x - loc) / scale
  return select(z < 0.0, -np.inf, ufuncs.log(-ufuncs.expm1(-z)), z)


def sf(x, loc=0, scale=1):
  """The survival function exp(-z) (1 below loc)."""
  return ufuncs.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """log of the survival function, -z (0 below loc)."""
  x, loc, scale = promote("expon.logsf", x, loc, scale)
  z = (x - loc) / scale
  return select(z < 0.0, 0.0, -z, z)


def ppf(q, loc=0, scale=1):
  """The quantile function loc - scale log1p(-q) (NaN outside [0, 1])."""
  q, loc, scale = promote("expon.ppf", q, loc, scale)
  out = loc - scale * ufuncs.log1p(-q)
  return select((q < 0.0) | (q > 1.0), np.nan, out, out)
