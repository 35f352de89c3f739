"""Multinomial random counts with JAX's algorithm (so the same key gives the same values): walk
the categories in order, drawing each one's count as a binomial of the trials not yet assigned
with probability p_i / (p_i + ... + p_k), the category's share of the probability left."""
from __future__ import annotations

import functools

from revax._src.jit import jit
from revax._src.lax import prng, sorting
from revax._src.lax.control_flow.loops import scan
from revax._src.numpy import shape_ops, ufuncs
from revax._src.numpy import util as jnp_util
from revax._src.random import binomial as binomial_lib
from revax._src.random import samplers
from revax._src.random.keys import canonicalize_shape, check_prng_key


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Multinomial random counts: `n` trials spread over the categories of `p`.

  Args:
    key: a PRNG key.
    n: the number(s) of trials, broadcast-compatible with p.shape[:-1] (floats, as binomial's).
    p: the categories' probabilities along the last axis (normalized by their sum).
    shape: the full result shape, whose last axis is the categories' (default: p's shape); p
      broadcasts to it and n to shape[:-1].
    dtype: the result dtype (default float32, or float64 with x64 enabled); the counts are
      computed in the promoted dtype of n and p.
    unroll: the `unroll` of the scan over the categories.

  Returns:
    An array of counts of `shape` whose last axis sums to n.

  Example:
    >>> revax.random.multinomial(revax.random.key(0), 10, jnp.array([0.2, 0.3, 0.5]))
    Array([1., 1., 8.], dtype=float32)
  """
  data, _ = check_prng_key("multinomial", key)
  n, p = jnp_util.promote_args_inexact("multinomial", n, p)
  shape = (tuple(jnp_util.aval_of(p).shape) if shape is None
           else canonicalize_shape(shape, "multinomial"))
  dtype = samplers._dtype(dtype, float)
  n = jnp_util.broadcast_to(n, shape[:-1])
  p = jnp_util.broadcast_to(p, shape)
  return _multinomial(data, n, p, dtype, unroll)


@functools.partial(jit, static_argnums=(3, 4))
def _multinomial(key, n, p, dtype, unroll):
  p = shape_ops.moveaxis(p, -1, 0)
  left = sorting.cumsum(p, 0, reverse=True)
  ratios = p / ufuncs.where(left == 0, 1, left)
  keys = prng.split_keys(key, (ratios.shape[0],))
  count_dtype = n.dtype

  def draw(remainder, ratio_and_key):
    ratio, category_key = ratio_and_key
    count = binomial_lib._binomial(category_key, remainder, ufuncs.clip(ratio, 0, 1),
                                   tuple(remainder.shape), count_dtype)
    return remainder - count, count

  _, counts = scan(draw, n, (ratios, keys), unroll=unroll)
  return shape_ops.moveaxis(counts, 0, -1).astype(dtype)

