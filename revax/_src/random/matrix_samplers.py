"""Samplers built on a matrix factorization, with JAX's signatures, errors and algorithms:
multivariate_normal (the mean plus a factor of the covariance times standard normal draws, the
factor from cholesky, eigh or svd) and orthogonal (the Q of a QR factorization of a Gaussian
matrix with the signs of R's diagonal folded in, which makes it Haar-distributed).

The normal draws are JAX's bits for the same key; the factorizations are revax's own algorithms
(XLA's cholesky expansion, lax-written QR/eigh/SVD) rather than LAPACK's, so the samples equal
JAX's to float rounding, not bit for bit.
"""
from __future__ import annotations

import functools
import operator


from revax._src.core import dtypes
from revax._src.jit import jit
from revax._src.lax.sharding_constraint import placed
from revax._src.numpy import contractions, shape_ops, ufuncs
from revax._src.numpy import linalg as jnp_linalg
from revax._src.numpy import util as jnp_util
from revax._src.random import samplers
from revax._src.random.keys import canonicalize_shape, check_prng_key

_METHODS = ("svd", "eigh", "cholesky")


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky", *,
                        out_sharding=None):
  """Multivariate normal random vectors with the given mean(s) and covariance(s).

  Each sample is `mean + F @ z` for standard normal `z` and a factor `F` with `F F^H = cov`.

  Args:
    key: a PRNG key.
    mean: the mean vector(s), shape (..., n).
    cov: the covariance matrix(es), shape (..., n, n); the batch shape must broadcast with
      mean's.
    shape: the batch shape of the result (the result's shape without its last axis); must be
      broadcast-compatible with mean.shape[:-1] and cov.shape[:-2] (default: their broadcast).
    dtype: a float dtype for the normal draws (default: the promoted dtype of mean and cov).
    method: how to factor `cov`: "cholesky" (default), or "eigh" / "svd" (which also work
      for singular, positive semi-definite covariances).

  Returns:
    An array of shape `shape + mean.shape[-1:]`.

  Example:
    >>> revax.random.multivariate_normal(revax.random.key(0), jnp.zeros(2), jnp.eye(2), (3,))
    Array([[ 1.6226422 ,  2.0252647 ],
           [-0.43359444, -0.07861735],
           [ 0.1760909 , -0.97208923]], dtype=float32)
  """
  data, _ = check_prng_key("multivariate_normal", key)
  mean, cov = jnp_util.promote_args_inexact("multivariate_normal", mean, cov)
  if method not in _METHODS:
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  dtype = jnp_util.aval_of(mean).dtype if dtype is None else samplers._dtype(dtype, None)
  if not dtypes.is_float(dtype):
    raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got "
                     f"{dtype}")
  mean_shape, cov_shape = jnp_util.aval_of(mean).shape, jnp_util.aval_of(cov).shape
  if len(mean_shape) < 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{len(mean_shape)}")
  if len(cov_shape) < 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                     f"{len(cov_shape)}")
  n = mean_shape[-1]
  if tuple(cov_shape[-2:]) != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                     f"got cov.shape == {tuple(cov_shape)}.")
  if shape is None:
    shape = jnp_util.broadcast_shapes(tuple(mean_shape[:-1]), tuple(cov_shape[:-2]))
  else:
    shape = canonicalize_shape(shape, "multivariate_normal")
    # JAX names the check "normal"
    samplers._check_shape("normal", shape, tuple(mean_shape[:-1]), tuple(cov_shape[:-2]))
  return placed(_multivariate_normal(data, mean, cov, shape, dtype, method), out_sharding)


@functools.partial(jit, static_argnums=(3, 4, 5))
def _multivariate_normal(key, mean, cov, shape, dtype, method):
  if method == "svd":
    u, s, _ = jnp_linalg.svd(cov)
    factor = u * ufuncs.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = jnp_linalg.eigh(cov)
    factor = v * ufuncs.sqrt(w[..., None, :])
  else:
    factor = jnp_linalg.cholesky(cov)
  z = samplers._normal(key, shape + tuple(mean.shape[-1:]), dtype)
  return mean + contractions.einsum("...ij,...j->...i", factor, z)


def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
  """Matrices drawn uniformly (Haar measure) from the orthogonal group O(n), or the unitary
  group U(n) for a complex dtype; for m != n, semi-orthogonal n x m matrices (orthonormal rows
  when n <= m, orthonormal columns when m <= n).

  Args:
    key: a PRNG key.
    n: the number of rows (a concrete int).
    shape: the batch shape (default ()).
    dtype: a float or complex dtype (default float32, or float64 with x64 enabled).
    m: the number of columns (default n).

  Returns:
    An array of shape `(*shape, n, m)` and `dtype`.

  Example:
    >>> q = revax.random.orthogonal(revax.random.key(0), 3)
    >>> q
    Array([[ 0.9554101 ,  0.29413575,  0.02599558],
           [-0.04628982,  0.23614088, -0.9706156 ],
           [-0.29163137,  0.9261326 ,  0.23922686]], dtype=float32)
    >>> bool(jnp.allclose(q @ q.T, jnp.eye(3), atol=1e-6))
    True
  """
  shape = canonicalize_shape(shape, "orthogonal")
  data, _ = check_prng_key("orthogonal", key)
  dtype = samplers._dtype(dtype, float)
  samplers._float_dtype("normal", dtype, "float or complex")  # what the draws accept
  # operator.index as JAX: a float n is a TypeError, not truncated
  n = operator.index(samplers._concrete(n, "orthogonal", "n"))
  m = n if m is None else operator.index(samplers._concrete(m, "orthogonal", "m"))
  return placed(_orthogonal(data, n, m, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(1, 2, 3, 4))
def _orthogonal(key, n, m, shape, dtype):
  z = samplers._normal(key, (*shape, max(n, m), min(n, m)), dtype)
  q, r = jnp_linalg.qr(z)
  # Q R = Z is unique once R's diagonal is made positive: fold its signs into Q's columns.
  q = q * ufuncs.sign(jnp_linalg.diagonal(r))[..., None, :]
  return shape_ops.matrix_transpose(q) if n < m else q
