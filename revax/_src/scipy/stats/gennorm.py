"""The generalized normal distribution with shape `beta` (as jax.scipy.stats.gennorm)."""
from __future__ import annotations


from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote


def logpdf(x, beta):
  """Log of the density beta / (2 Gamma(1/beta)) exp(-|x|^beta).

  Args:
    x: points; beta: shape (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, beta = promote("gennorm.logpdf", x, beta)
  return (ufuncs.log(0.5 * beta) - special.gammaln(1.0 / beta)
          - ufuncs.power(ufuncs.abs(x), beta))


def pdf(x, beta):
  """The generalized normal density."""
  return ufuncs.exp(logpdf(x, beta))


def cdf(x, beta):
  """The CDF 1/2 + sign(x) P(1/beta, |x|^beta) / 2."""
  x, beta = promote("gennorm.cdf", x, beta)
  p = special.gammainc(1.0 / beta, ufuncs.power(ufuncs.abs(x), beta))
  return 0.5 + 0.5 * ufuncs.sign(x) * p


