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
  y = ufuncs.floor(k) - loc
  combiln = -(ufuncs.log1p(n) + special.betaln(n - y + 1.0, y + 1.0))
  beta_lns = special.betaln(y + a, n - y + b) - special.betaln(a, b)
  log_probs = combiln + beta_lns
  log_probs = select((y == 0.0) & (n == 0.0), 0.0, log_probs, log_probs)
  y_cond = (y < -loc) | (y > n) | (y + a <= 0.0)
  log_probs = select(y_cond, -np.inf, log_probs, log_probs)
  n_a_b_cond = (n < 0.0) | (a <= 0.0) | (b <= 0.0)
  return select(n_a_b_cond, np.nan, log_probs, log_probs)


def pmf(k, n, a, b, loc=0):
  """The beta-binomial probability mass."""
  return ufuncs.exp(logpmf(k, n, a, b, loc))
