"""The Laplace distribution (as jax.scipy.stats.laplace)."""
from __future__ import annotations

import math

from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote


def logpdf(x, loc=0, scale=1):
  """Log of the Laplace density exp(-|x - loc| / scale) / (2 scale).

  Args:
    x: points; loc, scale: parameters (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, loc, scale = promote("laplace.logpdf", x, loc, scale)
  return -math.log(2.0) - ufuncs.log(scale) - ufuncs.abs(x - loc) / scale


def pdf(x, loc=0, scale=1):
  """The Laplace density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The Laplace CDF: exp(z) / 2 below loc, 1 - exp(-z) / 2 above."""
  x, loc, scale = promote("laplace.cdf", x, loc, scale)
  z = (x - loc) / scale
  return ufuncs.where(z <= 0.0, 0.5 * ufuncs.exp(z), 1.0 - 0.5 * ufuncs.exp(-z)).astype(z.dtype)
