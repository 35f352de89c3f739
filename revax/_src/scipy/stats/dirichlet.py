"""The Dirichlet distribution (as jax.scipy.stats.dirichlet)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of
from revax._src.scipy import special
from revax._src.scipy.stats._common import promote, select


def logpdf(x, alpha):
  """log of Gamma(sum alpha) / prod Gamma(alpha_i) prod x_i^(alpha_i - 1), -inf off the simplex.

  Args:
    x: points with the K categories on axis 0 (shape (K, ...)); or K - 1 of them, the last one
      being 1 minus their sum.
    alpha: concentrations, shape (K,).

  Returns:
    An array of shape x.shape[1:].
  """
  x, alpha = promote("dirichlet.logpdf", x, alpha)
  k = aval_of(alpha).shape
  if len(k) != 1:
    raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={k}")
  if aval_of(x).ndim == 0 or aval_of(x).shape[0] not in (k[0], k[0] - 1):
    raise ValueError("`x` must have either the same number of entries as `alpha` or one entry "
                     f"fewer; got x.shape={aval_of(x).shape}, alpha.shape={k}")
  if aval_of(x).shape[0] == k[0] - 1:
    rest = 1.0 - reductions.sum(x, axis=0, keepdims=True)
    x = shape_ops.concatenate([x, rest.astype(x.dtype)], axis=0)
  a = shape_ops.reshape(alpha, k + (1,) * (aval_of(x).ndim - 1))
  normalizer = reductions.sum(special.gammaln(alpha)) - special.gammaln(reductions.sum(alpha))
  value = reductions.sum(special.xlogy(a - 1.0, x), axis=0) - normalizer
  on_simplex = reductions.all((x >= 0.0) & (x <= 1.0), axis=0) & (
      ufuncs.abs(reductions.sum(x, axis=0) - 1.0) < 1e-6)
  return select(on_simplex, value, -np.inf, value)


def pdf(x, alpha):
  """The Dirichlet density."""
  return ufuncs.exp(logpdf(x, alpha))
