"""The logistic distribution (as jax.scipy.stats.logistic)."""
from __future__ import annotations

from revax._src import lax
from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
  """Log of the logistic density e^-z / (scale (1 + e^-z)^2), z = (x - loc) / scale.

  Args:
    x: points; loc, scale: parameters (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, loc, scale = promote("logistic.logpdf", x, loc, scale)
  z = (x - loc) / scale
  a = ufuncs.abs(z)  # the density is even in z: -|z| - 2 log1p(e^-|z|) stays finite
  return -a - 2.0 * ufuncs.log1p(ufuncs.exp(-a)) - ufuncs.log(scale)


def pdf(x, loc=0, scale=1):
  """The logistic density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The logistic CDF expit(z)."""
  x, loc, scale = promote("logistic.cdf", x, loc, scale)
  return lax.logistic((x - loc) / scale)


def sf(x, loc=0, scale=1):
  """The survival function expit(-z)."""
  x, loc, scale = promote("logistic.sf", x, loc, scale)
  return lax.logistic((loc - x) / scale)


def ppf(x, loc=0, scale=1):
  """The quantile function loc + scale logit(q)."""
  x, loc, scale = promote("logistic.ppf", x, loc, scale)
  return special.logit(x) * scale + loc


def isf(x, loc=0, scale=1):
  """The inverse survival function loc - scale logit(q)."""
  x, loc, scale = promote("logistic.isf", x, loc, scale)
  return loc - special.logit(x) * scale
