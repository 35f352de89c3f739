"""The binomial distribution (as jax.scipy.stats.binom)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpmf(k, n, p, loc=0):
  """log of C(n, x) p^x (1 - p)^(n - x) for x = k - loc in [0, n] (-inf outside; non-integer x
  gives the gamma-function interpolation, as in JAX).

  Args:
    k: successes; n: trials; p: success probability; loc: shift (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
  x = k - loc
  log_comb = special.gammaln(n + 1.0) - special.gammaln(x + 1.0) - special.gammaln(n - x + 1.0)
  value = log_comb + special.xlogy(x, p) + special.xlog1py(n - x, -p)
  return select((x < 0.0) | (x > n), -np.inf, value, value)


def pmf(k, n, p, loc=0):
  """The binomial probability mass."""
  return ufuncs.exp(logpmf(k, n, p, loc))
