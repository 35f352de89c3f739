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
  y = k - loc
  comb_term = special.gammaln(n + 1.0) - (special.gammaln(y + 1.0)
                                          + special.gammaln(n - y + 1.0))
  log_linear_term = special.xlogy(y, p) + special.xlog1py(n - y, -p)
  log_probs = comb_term + log_linear_term
  y_n_cond = ((y == 0.0) & (n == 0.0)) | (log_linear_term == 0.0)
  log_probs = select(y_n_cond, 0.0, log_probs, log_probs)
  return select((k >= loc) & (k < loc + n + 1.0), log_probs, -np.inf, log_probs)


def pmf(k, n, p, loc=0):
  """The binomial probability mass."""
  return ufuncs.exp(logpmf(k, n, p, loc))
