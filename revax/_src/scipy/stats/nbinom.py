"""The negative binomial distribution (as jax.scipy.stats.nbinom)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpmf(k, n, p, loc=0):
  """log of Gamma(n + x) / (Gamma(x + 1) Gamma(n)) p^n (1 - p)^x, x = k - loc >= 0 (-inf below).

  Args:
    k: failures; n: successes; p: success probability; loc: shift (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
  x = k - loc
  log_comb = special.gammaln(n + x) - special.gammaln(x + 1.0) - special.gammaln(n)
  value = log_comb + n * ufuncs.log(p) + special.xlog1py(x, -p)
  return select(x < 0.0, -np.inf, value, value)


def pmf(k, n, p, loc=0):
  """The negative binomial probability mass."""
  return ufuncs.exp(logpmf(k, n, p, loc))
