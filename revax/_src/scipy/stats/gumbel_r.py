"""The right-skewed Gumbel distribution (as jax.scipy.stats.gumbel_r), computed with jax's
formulas: NaN where scale <= 0 (or is NaN)."""
from __future__ import annotations

import numpy as np

from revax._src.nn.more_functions import log1mexp
from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpdf(x, loc=0, scale=1):
  """Log of the density exp(-z - e^-z) / scale, z = (x - loc) / scale.

  Args:
    x: points; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype (NaN where scale <= 0).

  Example:
    >>> revax.scipy.stats.gumbel_r.logpdf(jnp.array([0.0, 1.0]), scale=jnp.array([1.0, -1.0]))
    Array([-1., nan], dtype=float32)
  """
  x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
  z = (x - loc) / scale
  log_pdf = special.xlogy(-1.0, scale) + -(z + ufuncs.exp(-z))
  return select(scale > 0.0, log_pdf, np.nan, log_pdf)


def pdf(x, loc=0, scale=1):
  """The density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """log of the CDF, -e^-z."""
  x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
  log_cdf = -ufuncs.exp(-((x - loc) / scale))
  return select(scale > 0.0, log_cdf, np.nan, log_cdf)


def cdf(x, loc=0, scale=1):
  """The CDF exp(-e^-z)."""
  return ufuncs.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """log of the survival function, log(1 - exp(-e^-z))."""
  x, loc, scale = promote("gumbel_r.logsf", x, loc, scale)
  log_sf = log1mexp(ufuncs.exp((loc - x) / scale))
  return select(scale > 0.0, log_sf, np.nan, log_sf)


def sf(x, loc=0, scale=1):
  """The survival function 1 - exp(-e^-z)."""
  x, loc, scale = promote("gumbel_r.sf", x, loc, scale)
  value = 1.0 - ufuncs.exp(-ufuncs.exp((loc - x) / scale))
  return select(scale > 0.0, value, np.nan, value)


def ppf(p, loc=0, scale=1):
  """The quantile function loc - scale log(-log p) (NaN outside (0, 1))."""
  p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
  quantile = loc - scale * ufuncs.log(special.xlogy(-1.0, p))
  return select((p > 0.0) & (p < 1.0), quantile, np.nan, quantile)
