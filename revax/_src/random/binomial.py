"""Binomial random values with JAX's algorithm (so the same key gives the same values): for
small mean, inversion (count the geometric waiting times until their sum passes n); otherwise
Hormann's BTRS transformed rejection with a Stirling-series tail correction. q = min(p, 1 - p)
is sampled and mirrored back for p >= 1/2."""
from __future__ import annotations

import functools

import numpy as np

from revax._src.jit import jit
from revax._src.lax import prng, shapes, slicing
from revax._src.lax.control_flow.loops import while_loop
from revax._src.numpy import creation, reductions, ufuncs
from revax._src.numpy import util as jnp_util
from revax._src.random import samplers
from revax._src.random.keys import check_prng_key

_MAX_ITERS = np.iinfo(np.int32).max


def binomial(key, n, p, shape=None, dtype=None):
  """Binomial random values: the number of successes in `n` trials of probability `p`.

  Args:
    key: a PRNG key.
    n: the number(s) of trials (floats; inf gives inf, negative or NaN gives NaN).
    p: the success probability(ies) (outside [0, 1] or NaN gives NaN).
    shape: the result shape (default: the broadcast shape of n and p).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, _ = check_prng_key("binomial", key)
  samplers._check_arraylike("binomial", n, p)
  dtype = samplers._float_dtype("binomial", dtype)
  shape = samplers._check_broadcast_shapes("binomial", shape, n, p)
  return _binomial(data, n, p, shape, dtype)


def _split3(key):
  return prng.unstack_keys(prng.split_keys(key, (3,)))


def _stirling_tail(k):
  """log(k!) minus its Stirling approximation: a table for k <= 9, the series beyond."""
  table = creation.asarray([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                            0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                            0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                            0.00833056343336287], dtype=k.dtype)
  small = k <= 9
  kc = ufuncs.clip(k, 0.0, 9.0)
  kp1sq = (kc + 1) * (kc + 1)
  series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (kc + 1)
  return ufuncs.where(small, table[ufuncs.floor(kc).astype(np.int32)], series)


def _inversion(key, count, prob, shape, dtype):
  log1mp = ufuncs.log1p(-prob)

  def body(carry):
    i, num_geom, geom_sum, key = carry
    subkey, key = samplers._split2(key)
    num_geom = ufuncs.where(geom_sum <= count, num_geom + 1, num_geom)
    u = prng.uniform_floats(subkey, shape, prob.dtype)
    geom_sum = geom_sum + ufuncs.ceil(ufuncs.log(u) / log1mp)
    return i + 1, num_geom, geom_sum, key

  def cond(carry):
    i, _, geom_sum, _ = carry
    return reductions.any(geom_sum <= count) & (i < _MAX_ITERS)

  zeros = creation.zeros(shape, prob.dtype)
  k = while_loop(cond, body, (np.int32(0), zeros, zeros, key))[1]
  return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype):
  stddev = ufuncs.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = ufuncs.floor((count + 1) * prob)

  def body(carry):
    i, k_out, accepted, key = carry
    key, k0, k1 = _split3(key)
    u = prng.uniform_floats(k0, shape, prob.dtype) - 0.5
    v = prng.uniform_floats(k1, shape, prob.dtype)
    us = 0.5 - ufuncs.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = ufuncs.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = ufuncs.log(v * alpha / (a / (us * us) + b))
    bound = ((m + 0.5) * ufuncs.log((m + 1) / (r * (count - m + 1)))
             + (count + 1) * ufuncs.log((count - m + 1) / (count - k + 1))
             + (k + 0.5) * ufuncs.log(r * (count - k + 1) / (k + 1))
             + _stirling_tail(m) + _stirling_tail(count - m)
             - _stirling_tail(k) - _stirling_tail(count - k))
    accept = accept1 | (~reject & (v <= bound))
    return i + 1, ufuncs.where(accept, k, k_out), accepted | accept, key

  def cond(carry):
    i, _, accepted, _ = carry
    return reductions.any(~accepted) & (i < _MAX_ITERS)

  init = (np.int32(0), creation.full(shape, -1, prob.dtype), creation.full(shape, False, bool),
          key)
  return while_loop(cond, body, init)[1].astype(dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _binomial(key, count, prob, shape, dtype):
  (prob,) = jnp_util.promote_args_inexact("binomial", prob)
  count = jnp_util.broadcast_to(creation.asarray(count).astype(prob.dtype), shape)
  prob = jnp_util.broadcast_to(prob, shape)
  p_lt_half = prob < 0.5
  q = ufuncs.where(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = ufuncs.isnan(count) | (count < 0.0)
  count_inf = ufuncs.isinf(count)
  q_is_nan = ufuncs.isnan(q)
  q_l_0 = q < 0.0
  q = ufuncs.where(q_is_nan | q_l_0, creation.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = ufuncs.floor(count)
  count_inv = ufuncs.where(use_inversion, count, creation.full_like(count, 0.0))
  count_btrs = ufuncs.where(use_inversion, creation.full_like(count, 1e4), count)
  q_btrs = ufuncs.where(use_inversion, creation.full_like(q, 0.5), q)
  samples = ufuncs.where(use_inversion, _inversion(key, count_inv, q, shape, dtype),
                         _btrs(key, count_btrs, q_btrs, shape, dtype))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = ufuncs.where(invalid, creation.full_like(samples, np.nan, dtype), samples)
  samples = ufuncs.where(count_inf & ~invalid, creation.full_like(samples, np.inf, dtype),
                         samples)
  return ufuncs.where(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)

