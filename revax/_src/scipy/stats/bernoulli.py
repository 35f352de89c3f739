"""The Bernoulli distribution with success probability `p` (as jax.scipy.stats.bernoulli)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpmf(k, p, loc=0):
  """log P(k): log p at k - loc = 1, log(1 - p) at 0, -inf elsewhere.

  Args:
    k: outcomes; p: success probability; loc: shift (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  k, p, loc = promote("bernoulli.logpmf", k, p, loc)
  x = k - loc
  value = special.xlogy(x, p) + special.xlog1py(1.0 - x, -p)
  # as JAX: -inf outside [0, 1] only (NaN stays NaN; a fractional x gets the formula's value)
  return select((x < 0.0) | (x > 1.0), -np.inf, value, value)


def pmf(k, p, loc=0):
  """The Bernoulli probability mass."""
  return ufuncs.exp(logpmf(k, p, loc))


def cdf(k, p):
  """P(K <= k): 0 below 0, 1 - p on [0, 1), 1 from 1 (NaN for p outside [0, 1])."""
  k, p = promote("bernoulli.cdf", k, p)
  value = select(k < 0.0, 0.0, select(k < 1.0, 1.0 - p, 1.0, p), p)
  bad = (p < 0.0) | (p > 1.0) | ufuncs.isnan(k) | ufuncs.isnan(p)  # NaN p too, as JAX
  return select(bad, np.nan, value, value)


def ppf(q, p):
  """The smallest k in {0, 1} with cdf(k) >= q (NaN for q or p outside [0, 1])."""
  q, p = promote("bernoulli.ppf", q, p)
  value = select(q <= 1.0 - p, 0.0, 1.0, q)
  bad = (q < 0.0) | (q > 1.0) | (p < 0.0) | (p > 1.0) | ufuncs.isnan(q) | ufuncs.isnan(p)
  return select(bad, np.nan, value, value)
