"""The right-skewed Gumbel distribution (as jax.scipy.stats.gumbel_r)."""
from __future__ import annotations

from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote


def _z(fun_name, x, loc, scale):
  x, loc, scale = promote(fun_name, x, loc, scale)
  return (x - loc) / scale, scale


def logpdf(x, loc=0, scale=1):
  """Log of the density exp(-z - e^-z) / scale, z = (x - loc) / scale.

  Args:
    x: points; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  z, scale = _z("gumbel_r.logpdf", x, loc, scale)
  return -z - ufuncs.exp(-z) - ufuncs.log(scale)


def pdf(x, loc=0, scale=1):
  """The density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """log of the CDF, -e^-z."""
  z, _ = _z("gumbel_r.logcdf", x, loc, scale)
  return -ufuncs.exp(-z)


def cdf(x, loc=0, scale=1):
  """The CDF exp(-e^-z)."""
  return ufuncs.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """log of the survival function, log(-expm1(-e^-z))."""
  z, _ = _z("gumbel_r.logsf", x, loc, scale)
  return ufuncs.log(-ufuncs.expm1(-ufuncs.exp(-z)))


def sf(x, loc=0, scale=1):
  """The survival function -expm1(-e^-z)."""
  z, _ = _z("gumbel_r.sf", x, loc, scale)
  return -ufuncs.expm1(-ufuncs.exp(-z))


def ppf(p, loc=0, scale=1):
  """The quantile function loc - scale log(-log p) (NaN outside [0, 1])."""
  p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
  return loc - scale * ufuncs.log(-ufuncs.log(p))
