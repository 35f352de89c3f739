"""The beta-binomial distribution (as jax.scipy.stats.betabinom)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpmf(k, n, a, b, loc=0):
  """log of C(n, x) B(x + a, n - x + b) / B(a, b), x = k - loc in [0, n] (-inf elsewhere).

  Args:
    k: successes; n: trials; a, b: beta shapes; loc: shift (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
  x = k - loc
  log_comb = special.gammaln(n + 1.0) - special.gammaln(x + 1.0) - special.gammaln(n - x + 1.0)
  value = log_comb + special.betaln(x + a, n - x + b) - special.betaln(a, b)
  value = select((x < 0.0) | (x > n), -np.inf, value, value)
  return select((a <= 0.0) | (b <= 0.0), np.nan, value, value)


def pmf(k, n, a, b, loc=0):
  """The beta-binomial probability mass."""
  return ufuncs.exp(logpmf(k, n, a, b, loc))
