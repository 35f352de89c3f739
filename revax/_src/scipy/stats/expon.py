"""The exponential distribution (as jax.scipy.stats.expon).

Each function computes as jax's does, so NaN, infinite and invalid parameters (scale <= 0) give
jax's values: the support test is on x < loc only, the formula runs everywhere else.
"""
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

  Example:
    >>> revax.scipy.stats.expon.logpdf(jnp.array([-1.0, 0.0, 1.0]))
    Array([-inf,  -0., -1.], dtype=float32)
  """
  x, loc, scale = promote("expon.logpdf", x, loc, scale)
  log_probs = -((x - loc) / scale + ufuncs.log(scale))
  return select(x < loc, -np.inf, log_probs, log_probs)


def pdf(x, loc=0, scale=1):
  """The exponential density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The CDF 1 - exp(-(x - loc) / scale) (0 below loc)."""
  x, loc, scale = promote("expon.cdf", x, loc, scale)
  neg_scaled_x = (loc - x) / scale
  return select(x < loc, 0.0, -ufuncs.expm1(neg_scaled_x), neg_scaled_x)


def logcdf(x, loc=0, scale=1):
  """log of the CDF, log1p(-sf)."""
  return ufuncs.log1p(-sf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """The survival function exp(-(x - loc) / scale) (1 below loc)."""
  return ufuncs.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """log of the survival function, -(x - loc) / scale (0 below loc)."""
  x, loc, scale = promote("expon.sf", x, loc, scale)
  neg_scaled_x = (loc - x) / scale
  return select(x < loc, 0.0, neg_scaled_x, neg_scaled_x)


def ppf(q, loc=0, scale=1):
  """The quantile function loc - scale log1p(-q) (NaN outside [0, 1])."""
  q, loc, scale = promote("expon.ppf", q, loc, scale)
  out = loc - scale * ufuncs.log1p(-q)
  return select(ufuncs.isnan(q) | (q < 0.0) | (q > 1.0), np.nan, out, out)
