"""Gaussian kernel density estimation (as jax.scipy.stats.gaussian_kde).

The estimate at x is sum_i w_i N(x; x_i, S) with S the weighted data covariance scaled by the
squared bandwidth factor (Scott's neff^(-1/(d+4)) by default). One-dimensional data need no
linear algebra; for d > 1 the covariance is inverted and factored with lax.linalg's cholesky and
triangular_solve (imported where used).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes
from revax._src.nn.functions import logsumexp
from revax._src.numpy import creation, reductions, shape_ops, ufuncs
from revax._src.numpy.contractions import matmul
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact
from revax._src.random import keys, matrix_samplers, samplers
from revax._src.scipy import special
from revax._src.tree_util import register_pytree_node_class


def _weighted_covariance(data, weights):
  """The unbiased weighted covariance of data (d, n) with normalized weights (n,)."""
  mean = reductions.sum(data * weights, axis=1, keepdims=True)
  centered = data - mean
  denom = 1.0 - reductions.sum(weights * weights)
  return matmul(centered * weights, centered.T) / denom


def _cholesky(m):
  if aval_of(m).shape == (1, 1):
    return ufuncs.sqrt(m)
  from revax._src.lax.linalg import cholesky
  return cholesky(m)


def _solve_lower(factor, b):
  """factor^-1 b for a lower-triangular factor (d, d) and b (d, m)."""
  if aval_of(factor).shape == (1, 1):
    return b / factor
  from revax._src.lax.linalg import triangular_solve
  return triangular_solve(factor, b, left_side=True, lower=True)


def _log_diag_sum(factor):
  d = aval_of(factor).shape[0]
  eye = creation.eye(d, dtype=aval_of(factor).dtype)
  return reductions.sum(ufuncs.log(factor * eye + (1.0 - eye)))


def _inverse(m):
  if aval_of(m).shape == (1, 1):
    return 1.0 / m
  factor = _cholesky(m)
  d = aval_of(m).shape[0]
  half = _solve_lower(factor, creation.eye(d, dtype=aval_of(m).dtype))
  return matmul(half.T, half)


@register_pytree_node_class
class gaussian_kde:  # noqa: N801 (JAX's name)
  """A Gaussian kernel density estimate of `dataset` (as jax.scipy.stats.gaussian_kde).

  Args:
    dataset: data, shape (n,) or (d, n).
    bw_method: "scott" (default), "silverman", a scalar factor, or a callable of the estimator.
    weights: optional weights of the n points.

  Attributes:
    dataset: the data points, shape (d, n).
    weights: their weights, shape (n,).
    neff: the effective number of points.
    covariance: the kernel covariance, shape (d, d); `inv_cov` is its inverse.
    d: the number of dimensions; `n` is the number of points.

  Example:
    >>> import revax.scipy.stats
    >>> kde = revax.scipy.stats.gaussian_kde(jnp.array([0.0, 1.0, 3.0]))
    >>> kde.evaluate(jnp.array([0.5]))
    Array([0.21316576], dtype=float32)
  """
  __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

  def __init__(self, dataset, bw_method=None, weights=None):
    check_arraylike("gaussian_kde", dataset)
    dataset = shape_ops.atleast_2d(dataset)
    if dtypes.is_complex(aval_of(dataset).dtype):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if not aval_of(dataset).size > 1:
      raise ValueError("`dataset` input should have multiple elements.")
    d, n = aval_of(dataset).shape
    if weights is not None:
      check_arraylike("gaussian_kde", weights)
      dataset, weights = promote_args_inexact("gaussian_kde", dataset, weights)
      weights = shape_ops.atleast_1d(weights)
      if aval_of(weights).ndim != 1:
        raise ValueError("`weights` input should be one-dimensional.")
      if aval_of(weights).shape[0] != n:
        raise ValueError("`weights` input should be of length n")
      weights = weights / reductions.sum(weights)
    else:
      (dataset,) = promote_args_inexact("gaussian_kde", dataset)
      weights = creation.full((n,), 1.0 / n, dtype=aval_of(dataset).dtype)
    self._set("dataset", dataset)
    self._set("weights", weights)
    neff = self._set("neff", 1.0 / reductions.sum(weights * weights))
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
      factor = neff ** (-1.0 / (d + 4))
    elif isinstance(bw_method, str) and bw_method == "silverman":
      factor = (neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
    elif np.isscalar(bw_method) and not isinstance(bw_method, str):
      factor = bw_method
    elif callable(bw_method):
      factor = bw_method(self)
    else:
      raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")
    data_cov = _weighted_covariance(dataset, weights)
    self._set("covariance", data_cov * factor ** 2)
    self._set("inv_cov", _inverse(data_cov) / factor ** 2)

  def _set(self, name, value):
    object.__setattr__(self, name, value)
    return value

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    kde = cls.__new__(cls)
    for name, value in zip(cls.__slots__, children, strict=True):
      kde._set(name, value)
    return kde

  @property
  def d(self):
    return aval_of(self.dataset).shape[0]

  @property
  def n(self):
    return aval_of(self.dataset).shape[1]

  def _points(self, points):
    check_arraylike("gaussian_kde", points)
    points = shape_ops.atleast_2d(points)
    d, m = aval_of(points).shape
    if d != self.d:
      if d == 1 and m == self.d:
        points = shape_ops.reshape(points, (self.d, 1))
      else:
        raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
    (points,) = promote_args_inexact("gaussian_kde", points)
    return points.astype(aval_of(self.dataset).dtype)

  def _log_kernel_terms(self, points):
    """log(w_i N(x_j; x_i, covariance)), shape (m, n)."""
    factor = _cholesky(self.covariance)
    diff = points[:, :, None] - self.dataset[:, None, :]  # (d, m, n)
    d, m, n = aval_of(diff).shape
    y = _solve_lower(factor, shape_ops.reshape(diff, (d, m * n)))
    quad = shape_ops.reshape(reductions.sum(y * y, axis=0), (m, n))
    log_norm = 0.5 * d * math.log(2 * math.pi) + _log_diag_sum(factor)
    return ufuncs.log(self.weights)[None, :] - 0.5 * quad - log_norm

  def evaluate(self, points):
    """The density estimate at `points` ((d, m), or (m,) for d = 1)."""
    return ufuncs.exp(self.logpdf(points))

  def __call__(self, points):
    return self.evaluate(points)

  def pdf(self, x):
    """The density estimate at x (same as evaluate)."""
    return self.evaluate(x)

  def logpdf(self, x):
    """log of the density estimate at x, summed in log space."""
    return logsumexp(self._log_kernel_terms(self._points(x)), axis=1)

  def integrate_box_1d(self, low, high):
    """The estimate's probability of [low, high] (1-D data)."""
    if self.d != 1:
      raise ValueError("integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("the limits of integration in integrate_box_1d must be scalars")
    sigma = ufuncs.sqrt(self.covariance[0, 0])
    lo = (low - self.dataset[0]) / sigma
    hi = (high - self.dataset[0]) / sigma
    return reductions.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

  def integrate_gaussian(self, mean, cov):
    """The integral of the estimate times the normal density N(mean, cov)."""
    mean = shape_ops.atleast_1d(shape_ops.squeeze(creation.asarray(mean)))
    cov = shape_ops.atleast_2d(cov)
    if aval_of(mean).shape != (self.d,):
      raise ValueError(f"mean does not have dimension {self.d}")
    if aval_of(cov).shape != (self.d, self.d):
      raise ValueError(f"covariance does not have dimension {self.d}")
    return self._convolve(self.covariance + cov, mean[:, None], self.dataset, self.weights)

  def integrate_kde(self, other):
    """The integral of the product of two estimates."""
    if other.d != self.d:
      raise ValueError("KDEs are not the same dimensionality")
    total = 0.0
    cov = self.covariance + other.covariance
    terms = self._convolve_terms(cov, other.dataset, self.dataset, self.weights)  # (m, n)
    total = reductions.sum(terms * other.weights[:, None])
    return total

  def _convolve_terms(self, cov, points, data, weights):
    factor = _cholesky(cov)
    diff = points[:, :, None] - data[:, None, :]
    d, m, n = aval_of(diff).shape
    y = _solve_lower(factor, shape_ops.reshape(diff, (d, m * n)))
    quad = shape_ops.reshape(reductions.sum(y * y, axis=0), (m, n))
    log_norm = 0.5 * d * math.log(2 * math.pi) + _log_diag_sum(factor)
    return weights[None, :] * ufuncs.exp(-0.5 * quad - log_norm)

  def _convolve(self, cov, points, data, weights):
    return reductions.sum(self._convolve_terms(cov, points, data, weights))

  def resample(self, key, shape=()):
    """Draws from the estimated density: data points chosen by weight, plus kernel noise.

    Args:
      key: a PRNG key.
      shape: the batch shape of the draws (default ()).

    Returns:
      An array of shape `(d,) + shape`.

    Example:
      >>> from revax.scipy.stats import gaussian_kde
      >>> kde = gaussian_kde(jnp.array([0., 1., 2., 3.]))
      >>> kde.resample(revax.random.key(0), (5,))
      Array([[-2.389676 ,  1.0083088,  3.2011025,  2.6540897,  2.2544916]], dtype=float32)
    """
    index_key, noise_key = keys.split(key)
    index = samplers.choice(index_key, self.n, shape=shape, p=self.weights)
    noise = matrix_samplers.multivariate_normal(
        noise_key, creation.zeros(self.d, aval_of(self.covariance).dtype), self.covariance,
        shape=shape, dtype=aval_of(self.dataset).dtype)
    # JAX adds noise.T: all axes reversed, so (d,) + shape only lines up for 1-D shapes
    return self.dataset[:, index] + shape_ops.transpose(noise)

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    """Not implemented (as in JAX)."""
    raise NotImplementedError("Unsupported method: integrate_box")

  def set_bandwidth(self, bw_method=None):
    """Not implemented (as in JAX: the estimator is immutable)."""
    raise NotImplementedError("Unsupported method: set_bandwidth")
