"""The left-skewed Gumbel distribution (as jax.scipy.stats.gumbel_l), computed with jax's
formulas: NaN where scale <= 0 (or is NaN)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpdf(x, loc=0, scale=1):
  """Log of the density exp(z - e^z) / scale, z = (x - loc) / scale.

  Args:
    x: points; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype (NaN where scale <= 0).

  Example:
    >>> revax.scipy.stats.gumbel_l.logpdf(jnp.array([0.0, 1.0]), scale=jnp.array([1.0, 0.0]))
    Array([-1., nan], dtype=float32)
  """
  x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
  z = (x - loc) / scale
  log_pdf = special.xlogy(-1.0, scale) + (z - ufuncs.exp(z))
  return select(scale > 0.0, log_pdf, np.nan, log_pdf)


def pdf(x, loc=0, scale=1):
  """The density."""
  return ufuncs.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """log of the CDF, log(-expm1(-e^z))."""
  x, loc, scale = promote("gumbel_l.logcdf", x, loc, scale)
  log_cdf = ufuncs.log(-ufuncs.expm1(-ufuncs.exp((x - loc) / scale)))
  return select(scale > 0.0, log_cdf, np.nan, log_cdf)


def cdf(x, loc=0, scale=1):
  """The CDF 1 - exp(-e^z)."""
  return ufuncs.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """log of the survival function, -e^z."""
  x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
  log_sf = -ufuncs.exp((x - loc) / scale)
  return select(scale > 0.0, log_sf, np.nan, log_sf)


def sf(x, loc=0, scale=1):
  """The survival function exp(-e^z)."""
  return ufuncs.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  """The quantile function loc + scale log(-log1p(-p)) (NaN outside (0, 1))."""
  p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
  quantile = loc + scale * ufuncs.log(special.xlog1py(-1.0, -p))
  return select((p > 0.0) & (p < 1.0), quantile, np.nan, quantile)
