"""The uniform distribution on [loc, loc + scale] (as jax.scipy.stats.uniform)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.numpy import rearrange
from revax._src.scipy.stats._common import cast, promote, select


def logpdf(x, loc=0, scale=1):
  """-log(scale) on [loc, loc + scale], -inf outside.

  Args:
    x: points; loc, scale: parameters (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, loc, scale = promote("uniform.logpdf", x, loc, scale)
  outside = (x < loc) | (x > loc + scale)
  return select(outside, -np.inf, -ufuncs.log(scale), x)


def pdf(x, loc=0, scale=1):
  """1 / scale on [loc, loc + scale], 0 outside."""
  return ufuncs.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The CDF (x - loc) / scale clipped to [0, 1]."""
  x, loc, scale = promote("uniform.cdf", x, loc, scale)
  hi = loc + scale
  conds = [x < loc, x > hi, (x >= loc) & (x <= hi)]
  return cast(rearrange.select(conds, [0.0, 1.0, (x - loc) / scale]), x)


def ppf(q, loc=0, scale=1):
  """The quantile function loc + q scale (NaN outside [0, 1])."""
  q, loc, scale = promote("uniform.ppf", q, loc, scale)
  out = loc + scale * q
  return select(ufuncs.isnan(q) | (q < 0.0) | (q > 1.0), np.nan, out, out)
