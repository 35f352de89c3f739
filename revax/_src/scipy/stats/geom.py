"""The geometric distribution on 1, 2, ... (as jax.scipy.stats.geom)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpmf(k, p, loc=0):
  """log of (1 - p)^(x - 1) p, x = k - loc >= 1 (-inf below).

  Args:
    k: trials until the first success; p: success probability; loc: shift (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  k, p, loc = promote("geom.logpmf", k, p, loc)
  x = k - loc
  value = special.xlog1py(x - 1.0, -p) + ufuncs.log(p)
  return select(x < 1.0, -np.inf, value, value)


def pmf(k, p, loc=0):
  """The geometric probability mass."""
  return ufuncs.exp(logpmf(k, p, loc))
