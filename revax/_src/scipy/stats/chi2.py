"""The chi-squared distribution with `df` degrees of freedom (as jax.scipy.stats.chi2): a gamma
distribution of shape df / 2 and scale 2 scale."""
from __future__ import annotations

from revax._src.scipy.stats import gamma
from revax._src.scipy.stats._common import promote


def logpdf(x, df, loc=0, scale=1):
  """Log of the chi-squared density.

  Args:
    x: points; df: degrees of freedom; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
  return gamma.logpdf(x, df / 2.0, loc, scale * 2.0)


def pdf(x, df, loc=0, scale=1):
  """The chi-squared density."""
  x, df, loc, scale = promote("chi2.pdf", x, df, loc, scale)
  return gamma.pdf(x, df / 2.0, loc, scale * 2.0)


def cdf(x, df, loc=0, scale=1):
  """The chi-squared CDF."""
  x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
  return gamma.cdf(x, df / 2.0, loc, scale * 2.0)


def logcdf(x, df, loc=0, scale=1):
  """log of the chi-squared CDF."""
  x, df, loc, scale = promote("chi2.logcdf", x, df, loc, scale)
  return gamma.logcdf(x, df / 2.0, loc, scale * 2.0)


def sf(x, df, loc=0, scale=1):
  """The chi-squared survival function."""
  x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
  return gamma.sf(x, df / 2.0, loc, scale * 2.0)


def logsf(x, df, loc=0, scale=1):
  """log of the chi-squared survival function."""
  x, df, loc, scale = promote("chi2.logsf", x, df, loc, scale)
  return gamma.logsf(x, df / 2.0, loc, scale * 2.0)
