"""The Pareto distribution with shape `b` (as jax.scipy.stats.pareto)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote, select


def _standard(fun_name, x, b, loc, scale):
  x, b, loc, scale = promote(fun_name, x, b, loc, scale)
  return (x - loc) / scale, b, scale


def logpdf(x, b, loc=0, scale=1):
  """Log of the Pareto density b / (scale y^(b+1)) for y = (x - loc) / scale >= 1 (-inf below).

  Args:
    x: points; b: shape; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  y, b, scale = _standard("pareto.logpdf", x, b, loc, scale)
  value = ufuncs.log(b) - ufuncs.log(scale) - (b + 1.0) * ufuncs.log(y)
  return select(y < 1.0, -np.inf, value, value)


def pdf(x, b, loc=0, scale=1):
  """The Pareto density."""
  return ufuncs.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  """The CDF 1 - y^-b (0 below y = 1)."""
  y, b, scale = _standard("pareto.cdf", x, b, loc, scale)
  value = -ufuncs.expm1(-b * ufuncs.log(y))
  return select(y < 1.0, 0.0, value, value)


def logcdf(x, b, loc=0, scale=1):
  """log of the CDF, log1p(-y^-b)."""
  y, b, scale = _standard("pareto.logcdf", x, b, loc, scale)
  value = ufuncs.log1p(-ufuncs.exp(-b * ufuncs.log(y)))
  return select(y < 1.0, -np.inf, value, value)


def sf(x, b, loc=0, scale=1):
  """The survival function y^-b (1 below y = 1)."""
  return ufuncs.exp(logsf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
  """log of the survival function, -b log y (0 below y = 1)."""
  y, b, scale = _standard("pareto.logsf", x, b, loc, scale)
  value = -b * ufuncs.log(y)
  return select(y < 1.0, 0.0, value, value)


def ppf(q, b, loc=0, scale=1):
  """The quantile function loc + scale (1 - q)^(-1/b) (NaN outside [0, 1])."""
  q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
  value = loc + scale * ufuncs.exp(-ufuncs.log1p(-q) / b)
  return select((q < 0.0) | (q > 1.0), np.nan, value, value)
