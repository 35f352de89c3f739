"""revax.scipy.cluster.vq.vq: assign observations to their nearest code (as
jax.scipy.cluster.vq)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import reductions, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = ["vq"]


def vq(obs, code_book, check_finite: bool = True):
  """The index of the nearest code for each observation, and the Euclidean distance to it.

  Args:
    obs: observations, shape (n, d) or (n,) for one feature.
    code_book: codes, shape (k, d) or (k,).
    check_finite: accepted for SciPy compatibility; not checked (as in JAX).

  Returns:
    (codes, distances): int32 indices of shape (n,) and distances of the promoted dtype.

  Example:
    >>> import revax.scipy.cluster.vq
    >>> obs, codebook = jnp.array([[1.0], [3.0]]), jnp.array([[0.0], [5.0]])
    >>> revax.scipy.cluster.vq.vq(obs, codebook)  # (codes, distances)
    (Array([0, 1], dtype=int32), Array([1., 2.], dtype=float32))
  """
  del check_finite
  check_arraylike("vq", obs, code_book)
  obs, code_book = promote_args_inexact("vq", obs, code_book)
  if aval_of(obs).ndim != aval_of(code_book).ndim:
    raise ValueError("Observation and code_book should have the same rank")
  if aval_of(obs).ndim == 1:
    obs, code_book = obs[:, None], code_book[:, None]
  if aval_of(obs).ndim != 2:
    raise ValueError("ndim different than 1 or 2 are not supported")
  if aval_of(obs).shape[1] != aval_of(code_book).shape[1]:
    raise ValueError("obs and code_book should have the same number of features, got "
                     f"{aval_of(obs).shape[1]} and {aval_of(code_book).shape[1]}")
  diff = obs[:, None, :] - code_book[None, :, :]
  dist = ufuncs.sqrt(reductions.sum(diff * diff, axis=-1))
  code = reductions.argmin(dist, axis=1).astype(np.int32)
  return code, reductions.min(dist, axis=1)


