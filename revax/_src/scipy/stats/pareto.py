"""The Pareto distribution with shape `b` (as jax.scipy.stats.pareto), computed with jax's
formulas: the support test is x < loc + scale, so NaN, infinite and invalid parameters give
jax's values."""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote, select


def _scaled(fun_name, x, b, loc, scale):
  x, b, loc, scale = promote(fun_name, x, b, loc, scale)
  return (x - loc) / scale, b, x < loc + scale, scale


def logpdf(x, b, loc=0, scale=1):
  """Log of the Pareto density b / (scale y^(b+1)) for y = (x - loc) / scale >= 1 (-inf below).

  Args:
    x: points; b: shape; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype.

  Example:
    >>> revax.scipy.stats.pareto.logpdf(jnp.array([0.5, 1.0]), 3.0)
    Array([-inf, 1.0986123], dtype=float32)
  """
  y, b, below, scale = _scaled("pareto.logpdf", x, b, loc, scale)
  log_probs = -(ufuncs.log(scale / b) + (b + 1.0) * ufuncs.log(y))
  return select(below, -np.inf, log_probs, log_probs)


def pdf(x, b, loc=0, scale=1):
  """The Pareto density."""
  return ufuncs.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  """The CDF 1 - y^-b (0 below loc + scale)."""
  y, b, below, _ = _scaled("pareto.cdf", x, b, loc, scale)
  value = 1.0 - lax.pow(y, -b)
  return select(below, 0.0, value, value)


def logcdf(x, b, loc=0, scale=1):
  """log of the CDF, log1p(-y^-b)."""
  y, b, below, _ = _scaled("pareto.logcdf", x, b, loc, scale)
  value = ufuncs.log1p(-lax.pow(y, -b))
  return select(below, -np.inf, value, value)


def sf(x, b, loc=0, scale=1):
  """The survival function y^-b (1 below loc + scale)."""
  return ufuncs.exp(logsf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
  """log of the survival function, -b log y (0 below loc + scale)."""
  y, b, below, _ = _scaled("pareto.logsf", x, b, loc, scale)
  value = -(b * ufuncs.log(y))
  return select(below, 0.0, value, value)


def ppf(q, b, loc=0, scale=1):
  """The quantile function loc + scale (1 - q)^(-1/b) (NaN outside [0, 1])."""
  q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
  value = loc + scale * lax.pow(1.0 - q, -(1.0 / b))
  return select(ufuncs.isnan(q) | (q < 0.0) | (q > 1.0), np.nan, value, value)
