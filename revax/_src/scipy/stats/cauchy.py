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
  return 0.5 + ufuncs.arctan((x - loc) / scale) / math.pi


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
  """The quantile function loc + scale tan(pi (q - 1/2)), computed as -cot(pi q) below 1/2 and
  cot(pi (1 - q)) above so that the tails keep their accuracy (+-inf at 1 and 0, as SciPy)."""
  q, loc, scale = promote("cauchy.ppf", q, loc, scale)
  upper = q > 0.5
  r = ufuncs.where(upper, 1.0 - q, q).astype(q.dtype)
  z = -1.0 / ufuncs.tan(math.pi * r)
  z = ufuncs.where(upper, -z, z).astype(q.dtype)
  z = ufuncs.where(q == 1.0, float("inf"), ufuncs.where(q == 0.0, -float("inf"), z))
  z = ufuncs.where((q < 0.0) | (q > 1.0), float("nan"), z).astype(z.dtype)
  return loc + scale * z


def isf(q, loc=0, scale=1):
  """The inverse survival function loc - scale * ppf_standard(q) (the distribution is
  symmetric)."""
  q, loc, scale = promote("cauchy.isf", q, loc, scale)
  return loc - (ppf(q) * scale)
