"""The normal distribution (as jax.scipy.stats.norm)."""
from __future__ import annotations

import math

from revax._src import lax
from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote

_TWO_PI = 2 * math.pi


def logpdf(x, loc=0, scale=1):
  """Log of the normal density with mean `loc` and standard deviation `scale`.

  Args:
    x: points; loc, scale: parameters (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, loc, scale = promote("norm.logpdf", x, loc, scale)
  scale_sqrd = lax.square(scale)
  log_normalizer = ufuncs.log(_TWO_PI * scale_sqrd)
  quadratic = lax.square(x - loc) / scale_sqrd
  return (log_normalizer + quadratic) / -2.0


def pdf(x, loc=0, scale=1):
  """The normal density (see `logpdf`)."""
  return ufuncs.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The normal CDF, ndtr((x - loc) / scale)."""
  x, loc, scale = promote("norm.cdf", x, loc, scale)
  return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
  """log of the normal CDF, accurate in the lower tail (log_ndtr)."""
  x, loc, scale = promote("norm.logcdf", x, loc, scale)
  return special.log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
  """The survival function 1 - cdf, computed as ndtr((loc - x) / scale)."""
  x, loc, scale = promote("norm.sf", x, loc, scale)
  return special.ndtr((loc - x) / scale)


def logsf(x, loc=0, scale=1):
  """log of the survival function, accurate in the upper tail."""
  x, loc, scale = promote("norm.logsf", x, loc, scale)
  return special.log_ndtr((loc - x) / scale)


def ppf(q, loc=0, scale=1):
  """The quantile function loc + scale * ndtri(q)."""
  q, loc, scale = promote("norm.ppf", q, loc, scale)
  return special.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
  """The inverse survival function ppf(1 - q)."""
  q, loc, scale = promote("norm.isf", q, loc, scale)
  return ppf(1.0 - q, loc, scale)
