"""Student's t distribution with `df` degrees of freedom (as jax.scipy.stats.t)."""
from __future__ import annotations

import math

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote


def logpdf(x, df, loc=0, scale=1):
  """Log of the t density Gamma((df+1)/2) / (Gamma(df/2) sqrt(df pi) scale)
  (1 + z^2 / df)^(-(df+1)/2), z = (x - loc) / scale.

  Args:
    x: points; df: degrees of freedom; loc, scale: location and scale (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
  z = (x - loc) / scale
  half = (df + 1.0) / 2.0
  norm_term = (special.gammaln(half) - special.gammaln(df / 2.0)
               - 0.5 * ufuncs.log(df * math.pi) - ufuncs.log(scale))
  return norm_term - half * ufuncs.log1p(z * z / df)


def pdf(x, df, loc=0, scale=1):
  """The t density."""
  return ufuncs.exp(logpdf(x, df, loc, scale))
