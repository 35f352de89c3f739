"""The gamma distribution with shape `a` (as jax.scipy.stats.gamma)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpdf(x, a, loc=0, scale=1):
  """Log of the gamma density y^(a-1) e^-y / (Gamma(a) scale), y = (x - loc) / scale >= 0.

  Args:
    x: points; a: shape; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype (-inf below loc).
  """
  x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
  ok = x >= loc
  y = select(ok, (x - loc) / scale, 1.0, x)
  log_linear_term = special.xlogy(a - 1.0, y) - y
  log_probs = log_linear_term - (special.gammaln(a) + ufuncs.log(scale))
  return select(ok, log_probs, -np.inf, log_probs)


def pdf(x, a, loc=0, scale=1):
  """The gamma density."""
  return ufuncs.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  """The CDF, the regularized lower incomplete gamma function P(a, y) (0 below loc)."""
  x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
  y = (x - loc) / scale
  return special.gammainc(a, ufuncs.maximum(y, 0.0).astype(y.dtype))


def logcdf(x, a, loc=0, scale=1):
  """log of the CDF."""
  return ufuncs.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  """The survival function Q(a, y) (1 below loc)."""
  x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
  y = (x - loc) / scale
  return select(y < 0.0, 1.0, special.gammaincc(a, y), y)


def logsf(x, a, loc=0, scale=1):
  """log of the survival function."""
  return ufuncs.log(sf(x, a, loc, scale))
