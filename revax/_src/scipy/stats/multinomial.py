"""The multinomial distribution (as jax.scipy.stats.multinomial)."""
from __future__ import annotations

import numpy as np

from revax._src.numpy import reductions, ufuncs
from revax._src.scipy import special
from revax._src.core import dtypes
from revax._src.numpy.util import promote_args_numeric
from revax._src.scipy.stats._common import dtype_of, promote, select


def logpmf(x, n, p):
  """log of n! prod_i p_i^x_i / x_i! over the last axis, -inf where sum(x) != n.

  Args:
    x: integer counts (last axis: categories); n: integer trials; p: category probabilities.

  Returns:
    An array of the promoted inexact dtype without the last axis.
  """
  (p,) = promote("multinomial.logpmf", p)
  x, n = promote_args_numeric("multinomial.logpmf", x, n)
  if not (dtypes.is_integer(dtype_of(x)) and dtypes.is_integer(dtype_of(n))):
    raise ValueError(f"x and n must be of integer type; got x.dtype={dtype_of(x)}, "
                     f"n.dtype={dtype_of(n)}")
  x, n = x.astype(p.dtype), n.astype(p.dtype)
  value = special.gammaln(n + 1.0) + reductions.sum(
      special.xlogy(x, p) - special.gammaln(x + 1.0), axis=-1)
  return select(reductions.sum(x, axis=-1) != n, -np.inf, value, value)


def pmf(x, n, p):
  """The multinomial probability mass."""
  return ufuncs.exp(logpmf(x, n, p))
