"""Student's t distribution with `df` degrees of freedom (as jax.scipy.stats.t)."""
from __future__ import annotations

import math

from revax._src import lax
from revax._src.numpy import ufuncs
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
  scaled_x = (x - loc) / scale
  df_over_two = df / 2.0
  df_plus_one_over_two = df_over_two + 0.5
  normalize_term_const = (scale * scale) * math.pi
  normalize_term_tmp = ufuncs.log(normalize_term_const * df) / 2.0
  normalize_term = (lax.lgamma(df_over_two) + normalize_term_tmp) - lax.lgamma(
      df_plus_one_over_two)
  quadratic = (scaled_x * scaled_x) / df
  return -(normalize_term + df_plus_one_over_two * ufuncs.log1p(quadratic))


def pdf(x, df, loc=0, scale=1):
  """The t density."""
  return ufuncs.exp(logpdf(x, df, loc, scale))
