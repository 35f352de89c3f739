"""The Poisson distribution with mean `mu` (as jax.scipy.stats.poisson)."""
from __future__ import annotations

import math

import numpy as np

from revax._src.numpy import reductions, ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select
from revax._src.scipy.stats._discrete import is_integer


def logpmf(k, mu, loc=0):
  """log P(k) = k log mu - mu - log k! for integer k - loc >= 0 (-inf elsewhere).

  Args:
    k: counts; mu: mean; loc: shift (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  k, mu, loc = promote("poisson.logpmf", k, mu, loc)
  x = k - loc
  value = special.xlogy(x, mu) - special.gammaln(x + 1.0) - mu
  return select((x < 0.0) | ~is_integer(x), -np.inf, value, value)


def pmf(k, mu, loc=0):
  """The Poisson probability mass."""
  return ufuncs.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  """P(K <= k) = Q(floor(k - loc) + 1, mu) (0 below loc)."""
  k, mu, loc = promote("poisson.cdf", k, mu, loc)
  x = k - loc
  value = special.gammaincc(ufuncs.floor(ufuncs.maximum(x, 0.0)) + 1.0, mu)
  return select(x < 0.0, 0.0, value, value)


_ENTROPY_TERMS = 2000


def entropy(mu, loc=0):
  """The entropy -sum_k P(k) log P(k): summed over k = 0 .. 1999 for mu < 100, by its Stirling
  series above.

  Args:
    mu: mean; loc: shift (ignored by the entropy, as a shift does not change it).

  Returns:
    An array of mu's promoted inexact dtype and shape.
  """
  mu, loc = promote("poisson.entropy", mu, loc)
  from revax._src.numpy import creation, shape_ops
  ks = creation.arange(_ENTROPY_TERMS, dtype=mu.dtype)
  mu_b = shape_ops.expand_dims(mu, -1)
  log_p = special.xlogy(ks, mu_b) - special.gammaln(ks + 1.0) - mu_b
  direct = -reductions.sum(special.xlogy(ufuncs.exp(log_p), ufuncs.exp(log_p)), axis=-1)
  # large means: the Stirling series 1/2 log(2 pi e mu) - 1/(12 mu) - 1/(24 mu^2) - 19/(360 mu^3)
  stirling = (0.5 * ufuncs.log(2 * math.pi * math.e * mu) - 1.0 / (12.0 * mu)
              - 1.0 / (24.0 * mu * mu) - 19.0 / (360.0 * mu * mu * mu))
  return select(mu >= 100.0, stirling, direct, direct) + 0.0 * loc
