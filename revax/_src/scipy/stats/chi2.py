"""The chi-squared distribution with `df` degrees of freedom (as jax.scipy.stats.chi2): a gamma
distribution of shape df / 2 and scale 2 scale, computed with jax's formulas (so NaN, infinite
and invalid parameters give jax's values)."""
from __future__ import annotations

import math

import numpy as np

from revax._src import lax
from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpdf(x, df, loc=0, scale=1):
  """Log of the chi-squared density.

  Args:
    x: points; df: degrees of freedom; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype (-inf below loc).

  Example:
    >>> revax.scipy.stats.chi2.logpdf(jnp.array([-1.0, 2.0]), 2.0)
    Array([-inf, -1.6931472], dtype=float32)
  """
  x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
  y = (x - loc) / scale
  df_on_two = df / 2.0
  kernel = (df_on_two - 1.0) * ufuncs.log(y) - y / 2.0
  nrml_cnst = -(lax.lgamma(df_on_two) + math.log(2.0) * df / 2.0)
  log_probs = (nrml_cnst - ufuncs.log(scale)) + kernel
  return select(x < loc, -np.inf, log_probs, log_probs)


def pdf(x, df, loc=0, scale=1):
  """The chi-squared density."""
  return ufuncs.exp(logpdf(x, df, loc, scale))


def _clamped(x, loc, scale):
  y = (x - loc) / (scale * 2.0)
  return lax.clamp(np.array(0, y.dtype), y, np.array(np.inf, y.dtype))


def cdf(x, df, loc=0, scale=1):
  """The chi-squared CDF P(df / 2, (x - loc) / (2 scale))."""
  x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
  return special.gammainc(df / 2.0, _clamped(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
  """log of the chi-squared CDF."""
  return ufuncs.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
  """The chi-squared survival function Q(df / 2, (x - loc) / (2 scale))."""
  x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
  return special.gammaincc(df / 2.0, _clamped(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
  """log of the chi-squared survival function."""
  return ufuncs.log(sf(x, df, loc, scale))
