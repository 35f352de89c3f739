"""The Poisson distribution with mean `mu` (as jax.scipy.stats.poisson)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import creation, reductions, shape_ops, ufuncs
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpmf(k, mu, loc=0):
  """log P(k) = k log mu - mu - log k! for integer k - loc >= 0 (-inf elsewhere).

  Args:
    k: counts; mu: mean; loc: shift (all broadcast).

  Returns:
    An array of the promoted inexact dtype.
  """
  k, mu, loc = promote("poisson.logpmf", k, mu, loc)
  x = k - loc
  log_probs = special.xlogy(x, mu) - special.gammaln(x + 1.0) - mu
  return select((x < 0.0) | (ufuncs.round(k) != k), -np.inf, log_probs, log_probs)


def pmf(k, mu, loc=0):
  """The Poisson probability mass."""
  return ufuncs.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  """P(K <= k) = Q(floor(k - loc) + 1, mu) (0 below loc)."""
  k, mu, loc = promote("poisson.cdf", k, mu, loc)
  x = k - loc
  value = special.gammaincc(ufuncs.floor(ufuncs.maximum(x, 0.0)) + 1.0, mu)
  return select(x < 0.0, 0.0, value, value)


def entropy(mu, loc=0):
  """The entropy -sum_k P(k) log P(k), as jax computes it: 0 at mu = 0; for mu < 10 the sum
  over k < min(35, ceil(mu + 20)), for mu < 100 over k < min(250, ceil(mu + 10 sqrt(mu) + 20)),
  above the asymptotic 1/2 log(2 pi e mu) - 1/(12 mu). `loc` only broadcasts (a shift does not
  change the entropy).

  Args:
    mu: mean; loc: shift.

  Returns:
    An array of the promoted inexact dtype and the broadcast shape of mu and loc.

  Example:
    >>> revax.scipy.stats.poisson.entropy(jnp.array([0.0, 1.0]))
    Array([0.       , 1.3048419], dtype=float32)
  """
  mu, loc = promote("poisson.entropy", mu, loc)
  result_shape = shape_ops.broadcast_shapes(mu.shape, loc.shape)
  mu_flat = shape_ops.ravel(mu)
  result = select(mu_flat == 0.0, 0.0, select(
      mu_flat < 10.0, _entropy_sum(mu_flat, 35, mu_flat + 20.0),
      select(mu_flat < 100.0, _entropy_sum(mu_flat, 250,
                                           mu_flat + 10.0 * ufuncs.sqrt(mu_flat) + 20.0),
             _entropy_large_mu(mu_flat), mu_flat), mu_flat), mu_flat)
  return shape_ops.broadcast_to(shape_ops.reshape(result, mu.shape), result_shape)


def _entropy_sum(mu, max_k, upper):
  k = creation.arange(max_k, dtype=mu.dtype)[:, None]
  probs = pmf(k, mu, 0)
  mask = k < ufuncs.ceil(upper)[None, :]
  probs_masked = select(mask, probs, 0.0, probs)
  return reductions.sum(special.entr(probs_masked), axis=0)


def _entropy_large_mu(mu):
  return 0.5 * ufuncs.log(2 * np.pi * np.e * mu) - 1.0 / (12 * mu)
