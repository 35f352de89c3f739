"""The normal distribution truncated to [a, b] in standard units (as jax.scipy.stats.truncnorm),
computed with jax's formulas (so NaN, infinite and empty intervals a >= b give jax's values).

The log mass of [a, b] is log(Phi(b) - Phi(a)) as a log-difference of log_ndtr on the tail side
(both ends below 0, or both above: mirrored), and log1p(-Phi(a) - Phi(-b)) where the interval
straddles 0.
"""
from __future__ import annotations

import numpy as np

from revax._src.nn.functions import logsumexp
from revax._src.numpy import creation, rearrange, shape_ops, ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats import norm
from revax._src.scipy.stats._common import cast, promote, select


def _log_diff(x, y):
  """log(e^x - e^y), as jax's: a logsumexp with weights 1 and -1."""
  return logsumexp(shape_ops.stack([x, y]), axis=0, b=shape_ops.stack(
      [creation.ones_like(x), -creation.ones_like(y)]))


def _log_gauss_mass(a, b):
  """log(Phi(b) - Phi(a))."""
  a, b = shape_ops.broadcast_arrays(a, b)
  case_left = b <= 0.0
  case_right = a > 0.0
  case_central = ~(case_left | case_right)
  a_tail = select(case_right, -b, a, a)
  b_tail = select(case_right, -a, b, b)
  mass_tail = _log_diff(special.log_ndtr(b_tail), special.log_ndtr(a_tail))
  mass_central = ufuncs.log1p(-special.ndtr(a) - special.ndtr(-b))
  return select(case_central, mass_central, mass_tail, mass_tail)


def logpdf(x, a, b, loc=0, scale=1):
  """Log of the truncated normal density on [a, b] (standard units), -inf outside.

  Args:
    x: points; a, b: truncation bounds in standard units; loc, scale: location and scale (all
      broadcast).

  Returns:
    An array of the promoted inexact dtype (NaN where a >= b).

  Example:
    >>> revax.scipy.stats.truncnorm.logpdf(jnp.array([0.5, 3.0]), 0.0, 1.0)
    Array([0.03092384,       -inf], dtype=float32)
  """
  x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
  val = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
  x_scaled = (x - loc) / scale
  val = select((x_scaled < a) | (x_scaled > b), -np.inf, val, val)
  return select(a >= b, np.nan, val, val)


def pdf(x, a, b, loc=0, scale=1):
  """The truncated normal density."""
  return ufuncs.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """log of the CDF: log mass of [a, z] minus that of [a, b] (through the survival function
  where the CDF is near 1), -inf below a, 0 above b."""
  x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
  x, a, b = shape_ops.broadcast_arrays(x, a, b)
  x = (x - loc) / scale
  lgm_ab = _log_gauss_mass(a, b)
  log_cdf = _log_gauss_mass(a, x) - lgm_ab
  log_sf = _log_gauss_mass(x, b) - lgm_ab
  log_cdf = cast(rearrange.select(
      [x >= b, x <= a, log_cdf > -0.1, x > a],
      [0.0, -np.inf, ufuncs.log1p(-ufuncs.exp(log_sf)), log_cdf]), log_cdf)
  return select(a >= b, np.nan, log_cdf, log_cdf)


def cdf(x, a, b, loc=0, scale=1):
  """The truncated normal CDF."""
  return ufuncs.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """log of the survival function, logcdf of the mirrored distribution."""
  x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
  """The truncated normal survival function."""
  return ufuncs.exp(logsf(x, a, b, loc, scale))
