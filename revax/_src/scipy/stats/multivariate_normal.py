"""The multivariate normal distribution (as jax.scipy.stats.multivariate_normal).

The density uses the Cholesky factor L of the covariance: with y = L^-1 (x - mean),
log p(x) = -|y|^2 / 2 - n/2 log(2 pi) - sum(log diag L). The factorization and the triangular
solve are lax.linalg's primitives, imported where they are used.
"""
from __future__ import annotations

import math

from revax._src.numpy import reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of
from revax._src.scipy.stats._common import promote


def logpdf(x, mean, cov, allow_singular: None = None):
  """Log of the multivariate normal density.

  Args:
    x: points, shape (..., n) (or scalars when mean is a scalar).
    mean: the mean, shape (n,) (or a scalar).
    cov: the covariance, shape (n, n) (or a scalar), positive definite.
    allow_singular: must be None (singular covariances are not supported, as in JAX).

  Returns:
    An array of shape x.shape[:-1].
  """
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
  x, mean, cov = promote("multivariate_normal.logpdf", x, mean, cov)
  if aval_of(mean).ndim == 0:
    if aval_of(cov).ndim != 0:
      raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: mean.shape=() "
                       f"and cov.shape={aval_of(cov).shape}")
    diff = x - mean
    return -0.5 * diff * diff / cov - 0.5 * ufuncs.log(2 * math.pi * cov)
  n = aval_of(mean).shape[-1]
  if aval_of(cov).ndim != 2 or aval_of(cov).shape != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes: "
                     f"mean.shape={aval_of(mean).shape}, cov.shape={aval_of(cov).shape}")
  if aval_of(x).shape[-1:] != (n,):
    raise ValueError(f"multivariate_normal.logpdf got x.shape={aval_of(x).shape}, expected a "
                     f"last dimension of {n}")
  from revax._src.lax.linalg import cholesky, triangular_solve
  factor = cholesky(cov)
  diff = x - mean
  batch = aval_of(diff).shape[:-1]
  columns = shape_ops.reshape(diff, (-1, n)).T  # (n, m)
  y = triangular_solve(factor, columns, left_side=True, lower=True, transpose_a=False)
  quad = shape_ops.reshape(reductions.sum(y * y, axis=0), batch)
  eye = _eye_like(factor)
  log_det = reductions.sum(ufuncs.log(factor * eye + (1.0 - eye)))  # sum of log diag(L)
  return -0.5 * quad - 0.5 * n * math.log(2 * math.pi) - log_det


def _eye_like(m):
  from revax._src.numpy import creation
  n = aval_of(m).shape[-1]
  return creation.eye(n, dtype=aval_of(m).dtype)


def pdf(x, mean, cov):
  """The multivariate normal density."""
  return ufuncs.exp(logpdf(x, mean, cov))
