"""More samplers of jax.random, built on uniform, normal, exponential and gamma draws with JAX's
algorithms, so that the same key gives the same values (bit for bit where the algorithm is
deterministic): laplace, logistic, gumbel, cauchy, rademacher, t, chisquare, f, pareto,
lognormal, weibull_min, triangular, maxwell, double_sided_maxwell, generalized_normal, ball,
rayleigh, wald, geometric, poisson; and clone and key_dtype.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.jit import jit
from revax._src.lax import (binary, comparison, conversion, prng, prng_keys, reductions, shapes,
                            slicing, unary)
from revax._src.lax.control_flow.loops import while_loop
from revax._src.lax.sharding_constraint import placed
from revax._src.numpy import util as jnp_util
from revax._src.random import samplers
from revax._src.random.keys import canonicalize_shape, check_prng_key, key_dtype  # noqa: F401
from revax._src.random.keys import PRNGKeyArray, return_typed, tracing, typed_keys

_c = lambda value, dtype: np.asarray(value, dtype)


def _int_dtype(name, dtype):
  dtype = samplers._dtype(dtype, int)
  if not dtypes.is_integer(dtype):
    raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dtype}")
  return dtype


def _check_safe_cast(name, dtype, *args):
  """TypeError (JAX's TypePromotionError is a ValueError; JAX raises it for complex -> float)."""
  for x in args:
    if dtypes.is_complex(get_aval(x).dtype) and not dtypes.is_complex(dtype):
      from revax._src.core.extended_dtypes import TypePromotionError
      raise TypePromotionError(f"In arguments to {name}, cannot safely cast argument of type "
                               f"{get_aval(x).dtype} to {dtype}")


def _full(x, dtype, shape):
  return jnp_util.broadcast_to(conversion.convert_element_type(x, dtype), shape)


def _no_params_sampler(name, fn):
  """The public wrapper of a sampler with only (key, shape, dtype)."""

  def sampler(key, shape=(), dtype=None, *, out_sharding=None):
    return placed(fn(*samplers._key_dtype_shape(name, key, shape, dtype)), out_sharding)

  return sampler


# --- location-scale families from one uniform draw ---------------------------------------------
@functools.partial(jit, static_argnums=(1, 2))
def _laplace(key, shape, dtype):
  u = prng.uniform_floats(key, shape, dtype, _c(-1.0 + dtypes.finfo(dtype).epsneg, dtype),
                          _c(1.0, dtype))
  return binary.mul(unary.sign(u), unary.log1p(unary.neg(unary.abs(u))))


@functools.partial(jit, static_argnums=(1, 2))
def _logistic(key, shape, dtype):
  x = prng.uniform_floats(key, shape, dtype, _c(dtypes.finfo(dtype).tiny, dtype), _c(1.0, dtype))
  return binary.sub(unary.log(x), unary.log1p(unary.neg(x)))


@functools.partial(jit, static_argnums=(1, 2))
def _cauchy(key, shape, dtype):
  u = prng.uniform_floats(key, shape, dtype, _c(dtypes.finfo(dtype).eps, dtype), _c(1.0, dtype))
  return unary.tan(binary.mul(_c(np.pi, dtype), binary.sub(u, _c(0.5, dtype))))


laplace = _no_params_sampler("laplace", _laplace)
laplace.__doc__ = """Standard Laplace random values (density e^-|x| / 2).

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
logistic = _no_params_sampler("logistic", _logistic)
logistic.__doc__ = """Standard logistic random values (log(u / (1 - u)) for uniform u).

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
cauchy = _no_params_sampler("cauchy", _cauchy)
cauchy.__doc__ = """Standard Cauchy random values (tan(pi (u - 1/2)) for uniform u).

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """


def gumbel(key, shape=(), dtype=None, mode=None, *, out_sharding=None):
  """Standard Gumbel random values, -log(-log(u)).

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).
    mode: "low" (default) or "high" (uses two uniform draws for a finer left tail).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = samplers._key_dtype_shape("gumbel", key, shape, dtype)
  mode = samplers._check_gumbel_mode(mode)
  return placed(_gumbel(data, shape, dtype, mode), out_sharding)


@functools.partial(jit, static_argnums=(1, 2, 3))
def _gumbel(key, shape, dtype, mode):
  return samplers._gumbel(key, shape, dtype, mode)


def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
  """Random signs: -1 or +1 with equal probability.

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: an int dtype (default int32, or int64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, _ = check_prng_key("rademacher", key)
  dtype = samplers._dtype(dtype, int)
  shape = canonicalize_shape(shape, "rademacher")
  return placed(_rademacher(data, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(1, 2))
def _rademacher(key, shape, dtype):
  b = samplers._bernoulli(key, _c(0.5, np.float32), shape, "low")
  b = conversion.convert_element_type(b, dtype)
  return binary.sub(binary.mul(_c(2, dtype), b), _c(1, dtype))


# --- families with parameters --------------------------------------------------------------------
def _param_sampler_prologue(name, key, shape, dtype, *params):
  data, _ = check_prng_key(name, key)
  dtype = samplers._float_dtype(name, dtype)
  samplers._check_arraylike(name, *params)
  shape = samplers._check_broadcast_shapes(name, shape, *params)
  _check_safe_cast(name, dtype, *params)
  return data, shape, dtype


def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
  """Pareto random values with shape parameter `b` (density b / x^(b+1) on x >= 1).

  Args:
    key: a PRNG key.
    b: float shape parameter(s), broadcast-compatible with `shape`.
    shape: the result shape (default: b's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("pareto", key, shape, dtype, b)
  return placed(_pareto(data, b, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(2, 3))
def _pareto(key, b, shape, dtype):
  e = prng.exponential_floats(key, shape, dtype)
  return unary.exp(binary.div(e, _full(b, dtype, shape)))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None, *, out_sharding=None):
  """Log-normal random values exp(sigma * n) for standard normal n.

  Args:
    key: a PRNG key.
    sigma: the standard deviation(s) of the underlying normal.
    shape: the result shape (default: sigma's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("lognormal", key, shape, dtype, sigma)
  return placed(_lognormal(data, sigma, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(2, 3))
def _lognormal(key, sigma, shape, dtype):
  n = prng.normal_floats(key, shape, dtype)
  return unary.exp(binary.mul(n, _full(sigma, dtype, shape)))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull random values: scale * (-log(1 - u)) ** (1 / concentration).

  Args:
    key: a PRNG key.
    scale: the scale parameter(s).
    concentration: the concentration (shape) parameter(s).
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = samplers._key_dtype_shape("weibull_min", key, shape, dtype)
  return _weibull_min(data, scale, concentration, shape, dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _weibull_min(key, scale, concentration, shape, dtype):
  u = prng.uniform_floats(key, shape, dtype, _c(0.0, dtype), _c(1.0, dtype))
  base = unary.neg(unary.log1p(unary.neg(u)))
  exponent = binary.div(_c(1.0, dtype), _full(concentration, dtype, shape))
  return binary.mul(binary.pow(base, exponent), _full(scale, dtype, shape))


def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
  """Triangular random values on [left, right] with peak at `mode`.

  Args:
    key: a PRNG key.
    left, mode, right: the parameters, broadcast together and with `shape`.
    shape: the result shape (default: the parameters' broadcast shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("triangular", key, shape, dtype, left, mode, right)
  return placed(_triangular(data, left, mode, right, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(4, 5))
def _triangular(key, left, mode, right, shape, dtype):
  left, mode, right = (_full(v, dtype, shape) for v in (left, mode, right))
  width = binary.sub(right, left)
  fc = binary.div(binary.sub(mode, left), width)
  u = prng.uniform_floats(key, shape, dtype)
  out1 = binary.add(left, unary.sqrt(binary.mul(binary.mul(u, width), binary.sub(mode, left))))
  out2 = binary.sub(right, unary.sqrt(binary.mul(binary.mul(binary.sub(_c(1, dtype), u), width),
                                                 binary.sub(right, mode))))
  return comparison.select_n(comparison.lt(u, fc), out2, out1)


def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
  """Rayleigh random values: scale * sqrt(-2 log u).

  Args:
    key: a PRNG key.
    scale: the scale parameter(s).
    shape: the result shape (default: scale's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("rayleigh", key, shape, dtype, scale)
  return placed(_rayleigh(data, scale, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(2, 3))
def _rayleigh(key, scale, shape, dtype):
  u = prng.uniform_floats(key, shape, dtype)
  scale = _full(scale, dtype, shape)
  return binary.mul(scale, unary.sqrt(binary.mul(unary.log(u), _c(-2, dtype))))


def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
  """Wald (inverse Gaussian) random values with the given mean and unit scale.

  Args:
    key: a PRNG key.
    mean: the mean(s).
    shape: the result shape (default: mean's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("wald", key, shape, dtype, mean)
  return placed(_wald(data, mean, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(2, 3))
def _wald(key, mean, shape, dtype):
  k1, k2 = samplers._split2(key)
  mean = _full(mean, dtype, shape)
  v = prng.normal_floats(k1, shape, dtype)
  z = prng.uniform_floats(k2, shape, dtype)
  y = unary.integer_pow(v, 2)
  y_sq = unary.integer_pow(y, 2)
  mean_sq = unary.integer_pow(mean, 2)
  sqrt_term = unary.sqrt(binary.add(binary.mul(binary.mul(_c(4, dtype), mean), y),
                                    binary.mul(mean_sq, y_sq)))
  x = binary.sub(binary.add(mean, binary.div(binary.mul(mean_sq, y), _c(2, dtype))),
                 binary.mul(binary.div(mean, _c(2, dtype)), sqrt_term))
  accept = comparison.le(z, binary.div(mean, binary.add(mean, x)))
  return comparison.select_n(accept, binary.div(mean_sq, x), x)


def maxwell(key, shape=(), dtype=None, *, out_sharding=None):
  """Maxwell random values: the norm of a standard normal 3-vector.

  Args:
    key: a PRNG key.
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = samplers._key_dtype_shape("maxwell", key, shape, dtype)
  return placed(_maxwell(data, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(1, 2))
def _maxwell(key, shape, dtype):
  n = prng.normal_floats(key, shape + (3,), dtype)
  return unary.sqrt(reductions.reduce_sum(binary.mul(n, n), (len(shape),)))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """Double-sided Maxwell random values: loc + scale * (random sign) * maxwell.

  Args:
    key: a PRNG key.
    loc, scale: the location and scale parameters.
    shape: the leading result shape (the parameters' broadcast shape follows it).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of shape `shape + broadcast(loc, scale).shape` and `dtype`.
  """
  data, shape, dtype = samplers._key_dtype_shape("double_sided_maxwell", key, shape, dtype)
  return _double_sided_maxwell(data, loc, scale, shape, dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _double_sided_maxwell(key, loc, scale, shape, dtype):
  params_shape = jnp_util.broadcast_shapes(tuple(get_aval(loc).shape),
                                           tuple(get_aval(scale).shape))
  shape = (shape or params_shape) if not shape else shape + params_shape
  k_maxwell, k_sign = samplers._split2(key)
  m = _maxwell(k_maxwell, shape, dtype)
  sign = _rademacher(k_sign, shape, dtype)
  return binary.add(binary.mul(binary.mul(sign, m), _full(scale, dtype, shape)),
                    _full(loc, dtype, shape))


# --- gamma-based families ------------------------------------------------------------------------
def t(key, df, shape=None, dtype=None, *, out_sharding=None):
  """Student's t random values with `df` degrees of freedom.

  Args:
    key: a PRNG key.
    df: degrees of freedom, broadcast-compatible with `shape`.
    shape: the result shape (default: df's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("t", key, shape, dtype, df)
  key_n, key_g = samplers._split2(data)
  n = prng.normal_floats(key_n, shape, dtype)
  half_df = binary.div(_full(df, dtype, shape), _c(2, dtype))
  g = samplers._gamma(key_g, half_df, shape, dtype, log_space=False)
  return placed(binary.mul(n, unary.sqrt(binary.div(half_df, g))), out_sharding)


def chisquare(key, df, shape=None, dtype=None, *, out_sharding=None):
  """Chi-square random values with `df` degrees of freedom (2 * gamma(df / 2)).

  Args:
    key: a PRNG key.
    df: degrees of freedom, broadcast-compatible with `shape`.
    shape: the result shape (default: df's shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("chisquare", key, shape, dtype, df)
  return placed(_chisquare(data, df, shape, dtype), out_sharding)


def _chisquare(key, df, shape, dtype):
  half_df = binary.div(conversion.convert_element_type(df, dtype), _c(2, dtype))
  log_g = samplers._gamma(key, half_df, shape, dtype, log_space=True)
  return _exp_times_two(log_g)


@jit
def _exp_times_two(x):  # XLA's exp, as in JAX's jitted chisquare (NumPy's rounds differently)
  return binary.mul(unary.exp(x), _c(2, get_aval(x).dtype))


def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
  """F random values: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden).

  Args:
    key: a PRNG key.
    dfnum, dfden: degrees of freedom of numerator and denominator.
    shape: the result shape (default: their broadcast shape).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, shape, dtype = _param_sampler_prologue("f", key, shape, dtype, dfnum, dfden)
  dfnum = conversion.convert_element_type(dfnum, dtype)
  dfden = conversion.convert_element_type(dfden, dtype)
  key_dfd, key_dfn = samplers._split2(data)
  num = binary.div(_chisquare(key_dfn, dfnum, shape, dtype), dfnum)
  den = binary.div(_chisquare(key_dfd, dfden, shape, dtype), dfden)
  return placed(binary.div(num, den), out_sharding)


def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
  """Generalized normal random values (density proportional to exp(-|x|^p)).

  Args:
    key: a PRNG key.
    p: the power (p = 2 is a normal with variance 1/2, p = 1 a Laplace).
    shape: the result shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, _ = check_prng_key("generalized_normal", key)
  dtype = samplers._float_dtype("generalized_normal", dtype)
  samplers._check_arraylike("generalized_normal", p)
  shape = canonicalize_shape(shape, "generalized_normal")
  return placed(_generalized_normal(data, p, shape, dtype), out_sharding)


def _generalized_normal(key, p, shape, dtype):
  k_gamma, k_sign = samplers._split2(key)
  p = conversion.convert_element_type(p, dtype)
  inv_p = binary.div(_c(1, dtype), p)
  g = samplers._gamma(k_gamma, inv_p, shape, dtype, log_space=False)
  r = _rademacher(k_sign, shape, dtype)
  return _signed_power(r, g, _full(inv_p, dtype, shape))


@jit
def _signed_power(sign, g, exponent):  # XLA's pow, as in JAX's jitted generalized_normal
  return binary.mul(sign, binary.pow(g, exponent))


def ball(key, d, p=2, shape=(), dtype=None, *, out_sharding=None):
  """Points drawn uniformly from the unit p-norm ball in d dimensions.

  Args:
    key: a PRNG key.
    d: the dimension (a nonnegative int).
    p: the norm's power (default 2).
    shape: the batch shape (default ()).
    dtype: a float dtype (default float32, or float64 with x64 enabled).

  Returns:
    An array of shape `shape + (d,)` and `dtype`.
  """
  data, _ = check_prng_key("ball", key)
  dtype = samplers._float_dtype("ball", dtype)
  if not isinstance(d, (int, np.integer)) or d < 0:
    raise ValueError(f"d must be a nonnegative int, got {d!r}")
  shape = canonicalize_shape(shape, "ball")
  k_g, k_e = samplers._split2(data)
  g = _generalized_normal(k_g, p, (*shape, int(d)), dtype)
  e = prng.exponential_floats(k_e, shape, dtype)
  p_ = _c(p, dtype)
  norm = reductions.reduce_sum(binary.pow(unary.abs(g), p_), (len(shape),))
  scale = binary.pow(binary.add(norm, e), binary.div(_c(1, dtype), p_))
  return placed(binary.div(g, shapes.expand_dims(scale, (len(shape),))), out_sharding)


# --- discrete ------------------------------------------------------------------------------------
def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
  """Geometric random values: the number of Bernoulli(p) trials up to the first success.

  Args:
    key: a PRNG key.
    p: success probability(ies).
    shape: the result shape (default: p's shape).
    dtype: an int dtype (default int32, or int64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype` (values >= 1).
  """
  data, _ = check_prng_key("geometric", key)
  dtype = _int_dtype("geometric", dtype)
  samplers._check_arraylike("geometric", p)
  shape = samplers._check_broadcast_shapes("geometric", shape, p)
  return placed(_geometric(data, p, shape, dtype), out_sharding)


@functools.partial(jit, static_argnums=(2, 3))
def _geometric(key, p, shape, dtype):
  (p,) = jnp_util.promote_args_inexact("geometric", p)
  fdtype = get_aval(p).dtype
  u = prng.uniform_floats(key, shape, fdtype)
  u = comparison.select_n(comparison.eq(u, _c(0, fdtype)), u, jnp_util.broadcast_to(
      _c(1, fdtype), shape))
  log_one_minus_p = jnp_util.broadcast_to(unary.log1p(unary.neg(p)), shape)
  g = binary.add(unary.floor(binary.div(unary.log(u), log_one_minus_p)), _c(1, fdtype))
  return conversion.convert_element_type(g, dtype)


def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
  """Poisson random values with rate(s) `lam` (Knuth's algorithm for lam < 10, transformed
  rejection above, as JAX does).

  Args:
    key: a PRNG key.
    lam: rate parameter(s) (>= 0).
    shape: the result shape (default: lam's shape).
    dtype: an int dtype (default int32, or int64 with x64 enabled).

  Returns:
    An array of `shape` and `dtype`.
  """
  data, _ = check_prng_key("poisson", key)
  dtype = _int_dtype("poisson", dtype)
  if isinstance(data, prng.KeyBits):  # as JAX's
    raise NotImplementedError(f"`poisson` is only implemented for the threefry2x32 RNG, not "
                              f"{data.impl}")
  samplers._check_arraylike("poisson", lam)
  shape = samplers._check_broadcast_shapes("poisson", shape, lam)
  lam = conversion.convert_element_type(lam, np.float32)
  return placed(_poisson(data, jnp_util.broadcast_to(lam, shape), shape, dtype), out_sharding)


def _poisson_knuth(key, lam, shape, dtype, max_iters):
  def body(carry):
    i, k, rng, log_prod = carry
    rng, subkey = samplers._split2(rng)
    k = comparison.select_n(comparison.gt(log_prod, unary.neg(lam)), k,
                            binary.add(k, _c(1, dtype)))
    u = prng.uniform_floats(subkey, shape, np.float32)
    return binary.add(i, _c(1, np.int32)), k, rng, binary.add(log_prod, unary.log(u))

  def cond(carry):
    i, _, _, log_prod = carry
    going = reductions.reduce_or(comparison.gt(log_prod, unary.neg(lam)), tuple(range(len(shape))))
    return binary.bitwise_and(going, comparison.lt(i, _c(max_iters, np.int32)))

  init = (_c(0, np.int32), jnp_util.broadcast_to(_c(0, dtype), shape), key,
          jnp_util.broadcast_to(_c(0, np.float32), shape))
  k = while_loop(cond, body, init)[1]
  return binary.sub(k, _c(1, dtype))


def _poisson_rejection(key, lam, shape, dtype, max_iters):
  fdtype = get_aval(lam).dtype
  c = lambda v: _c(v, fdtype)
  log_lam = unary.log(lam)
  b = binary.add(c(0.931), binary.mul(c(2.53), unary.sqrt(lam)))
  a = binary.add(c(-0.059), binary.mul(c(0.02483), b))
  inv_alpha = binary.add(c(1.1239), binary.div(c(1.1328), binary.sub(b, c(3.4))))
  v_r = binary.sub(c(0.9277), binary.div(c(3.6224), binary.sub(b, c(2))))

  def body(carry):
    i, k_out, accepted, rng = carry
    rng, k0, k1 = prng.unstack_keys(prng.split_keys(rng, (3,)))
    u = binary.sub(prng.uniform_floats(k0, shape, fdtype), c(0.5))
    v = prng.uniform_floats(k1, shape, fdtype)
    u_shifted = binary.sub(c(0.5), unary.abs(u))
    k = unary.floor(binary.add(binary.add(binary.mul(
        binary.add(binary.div(binary.mul(c(2), a), u_shifted), b), u), lam), c(0.43)))
    s = unary.log(binary.div(binary.mul(v, inv_alpha),
                             binary.add(binary.div(a, binary.mul(u_shifted, u_shifted)), b)))
    t_ = binary.sub(binary.add(unary.neg(lam), binary.mul(k, log_lam)),
                    unary.lgamma(binary.add(k, c(1))))
    accept1 = binary.bitwise_and(comparison.ge(u_shifted, c(0.07)), comparison.le(v, v_r))
    reject = binary.bitwise_or(comparison.lt(k, c(0)), binary.bitwise_and(
        comparison.lt(u_shifted, c(0.013)), comparison.gt(v, u_shifted)))
    accept2 = comparison.le(s, t_)
    accept = binary.bitwise_or(accept1, binary.bitwise_and(unary.bitwise_not(reject), accept2))
    k_out = comparison.select_n(accept, k_out, k)
    return binary.add(i, _c(1, np.int32)), k_out, binary.bitwise_or(accepted, accept), rng

  def cond(carry):
    i, _, accepted, _ = carry
    going = reductions.reduce_or(unary.bitwise_not(accepted), tuple(range(len(shape))))
    return binary.bitwise_and(going, comparison.lt(i, _c(max_iters, np.int32)))

  init = (_c(0, np.int32), jnp_util.broadcast_to(c(-1), shape), jnp_util.broadcast_to(
      _c(False, np.bool_), shape), key)
  k = while_loop(cond, body, init)[1]
  return conversion.convert_element_type(k, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _poisson(key, lam, shape, dtype):
  use_knuth = binary.bitwise_or(comparison.ne(lam, lam), comparison.lt(lam, _c(10, get_aval(lam).dtype)))
  zeros = jnp_util.broadcast_to(_c(0.0, get_aval(lam).dtype), shape)
  lam_knuth = comparison.select_n(use_knuth, zeros, lam)
  lam_rejection = comparison.select_n(use_knuth, lam, jnp_util.broadcast_to(
      _c(1e5, get_aval(lam).dtype), shape))
  max_iters = int(min(dtypes.iinfo(dtype).max, np.iinfo(np.int32).max))
  result = comparison.select_n(use_knuth,
                               _poisson_rejection(key, lam_rejection, shape, dtype, max_iters),
                               _poisson_knuth(key, lam_knuth, shape, dtype, max_iters))
  return comparison.select_n(comparison.eq(lam, _c(0, get_aval(lam).dtype)), result,
                             jnp_util.broadcast_to(_c(0, dtype), shape))


# --- keys ----------------------------------------------------------------------------------------
def clone(key):
  """A copy of `key` that may be reused (revax does not check key reuse, so this is `key`).

  Args:
    key: a PRNG key (raw or typed).

  Returns:
    The same key.
  """
  if tracing():  # (JAX's random_clone, the identity, on typed keys or raw key data)
    if isinstance(key, PRNGKeyArray):
      keys, _ = typed_keys("clone", key, allow_batched=True)
      return return_typed(True, prng_keys.random_clone(keys))
    check_prng_key("clone", key, allow_batched=True)
    return prng_keys.random_clone(key)
  check_prng_key("clone", key, allow_batched=True)
  return key
