"""The wrapped Cauchy distribution on [0, 2 pi] (as jax.scipy.stats.wrapcauchy)."""
from __future__ import annotations

import math

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy.stats._common import promote, select


def logpdf(x, c):
  """Log of the density (1 - c^2) / (2 pi (1 + c^2 - 2 c cos x)) for x in [0, 2 pi] and
  0 < c < 1 (-inf for x outside, NaN for c outside).

  Args:
    x: angles; c: shape (broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  x, c = promote("wrapcauchy.logpdf", x, c)
  value = (ufuncs.log(1.0 - c * c) - math.log(2 * math.pi)
           - ufuncs.log(1.0 + c * c - 2.0 * c * ufuncs.cos(x)))
  value = select((x >= 0.0) & (x <= 2 * math.pi), value, -np.inf, value)
  return select((c > 0.0) & (c < 1.0), value, np.nan, value)


def pdf(x, c):
  """The wrapped Cauchy density."""
  return ufuncs.exp(logpdf(x, c))
