"""The beta distribution (as jax.scipy.stats.beta)."""
from __future__ import annotations

import numpy as np

from revax._src import lax
from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpdf(x, a, b, loc=0, scale=1):
  """Log of the beta density y^(a-1) (1-y)^(b-1) / (B(a, b) scale), y = (x - loc) / scale in
  [0, 1] (-inf outside).

  Args:
    x: points; a, b: shapes; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
  shape_term = -special.betaln(a, b)
  y = (x - loc) / scale
  log_linear_term = special.xlogy(a - 1.0, y) + special.xlog1py(b - 1.0, -y)
  log_probs = (shape_term + log_linear_term) - ufuncs.log(scale)
  result = select((x > loc + scale) | (x < loc), -np.inf, log_probs, log_probs)
  return select((a <= 0.0) | (b <= 0.0) | (scale <= 0.0), np.nan, result, result)


def pdf(x, a, b, loc=0, scale=1):
  """The beta density."""
  return ufuncs.exp(logpdf(x, a, b, loc, scale))


def _clipped(x, loc, scale):
  y = (x - loc) / scale
  return lax.clamp(np.array(0, y.dtype), y, np.array(1, y.dtype))


def cdf(x, a, b, loc=0, scale=1):
  """The CDF, the regularized incomplete beta function I_y(a, b)."""
  x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
  return special.betainc(a, b, _clipped(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """log of the CDF."""
  return ufuncs.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  """The survival function I_{1-y}(b, a)."""
  x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
  return special.betainc(b, a, 1.0 - _clipped(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """log of the survival function."""
  return ufuncs.log(sf(x, a, b, loc, scale))
