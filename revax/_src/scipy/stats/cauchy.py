"""The Cauchy distribution (as jax.scipy.stats.cauchy)."""
from __future__ import annotations

import math

from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
  """Log of the Cauchy density 1 / (pi scale (1 + z^2)), z = (x - loc) / scale.

  Args:
    x: points; loc, scale: parameters (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
  z = (x - loc) / scale
  return -math.log(math.pi) - ufuncs.log(scale) - ufuncs.log1p(z * z)


def pdf(x, loc=0, scale=1):
  """The Cauchy density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The Cauchy CDF 1/2 + arctan(z) / pi."""
  x, loc, scale = promote("cauchy.cdf", x, loc, scale)
  return 0.5 + (1.0 / math.pi) * ufuncs.arctan((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
  """log of the Cauchy CDF."""
  return ufuncs.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """The survival function, cdf of the reflected point."""
  x, loc, scale = promote("cauchy.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  """log of the survival function."""
  x, loc, scale = promote("cauchy.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
  """The quantile function loc + scale tan(pi q - pi / 2) (as jax's: no special case at the
  ends, so ppf(1) is tan's large finite value at float32's nearest point to pi / 2)."""
  q, loc, scale = promote("cauchy.ppf", q, loc, scale)
  unscaled = ufuncs.tan(math.pi * q - math.pi / 2)
  return unscaled * scale + loc


def isf(q, loc=0, scale=1):
  """The inverse survival function loc + scale tan(pi / 2 - pi q)."""
  q, loc, scale = promote("cauchy.isf", q, loc, scale)
  unscaled = ufuncs.tan(math.pi / 2 - math.pi * q)
  return unscaled * scale + loc
