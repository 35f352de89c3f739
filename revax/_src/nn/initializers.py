"""revax.nn.initializers: functions `init(key, shape, dtype) -> array` for parameters, as in
jax.nn.initializers.

The variance-scaling family draws from a distribution whose variance is `scale / n`, with `n`
the fan-in, the fan-out or their mean; the fans count a weight's input and output features
times its receptive field (the product of its remaining dimensions). The glorot (xavier),
lecun and he (kaiming) initializers are members of that family.
"""
from __future__ import annotations

import functools
import typing
import math

import numpy as np

from revax._src.core import dtypes
from revax._src.numpy import creation as jnp_creation
from revax._src.random import samplers

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal"]


def _shape(shape) -> tuple:
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  for d in shape:
    if not isinstance(d, (int, np.integer)) or d < 0:
      raise TypeError(f"initializer shapes must be tuples of non-negative ints, got {shape}")
  return tuple(int(d) for d in shape)


def zeros(key, shape, dtype=np.float32):
  """An array of zeros (the key is unused)."""
  return jnp_creation.zeros(_shape(shape), dtypes.canonicalize_dtype(dtype))


def ones(key, shape, dtype=np.float32):
  """An array of ones (the key is unused)."""
  return jnp_creation.ones(_shape(shape), dtypes.canonicalize_dtype(dtype))


def constant(value, dtype=np.float32):
  """An initializer filling every entry with `value`."""
  def init(key, shape, dtype=dtype):
    return jnp_creation.full(_shape(shape), value, dtypes.canonicalize_dtype(dtype))
  return init


def uniform(scale=1e-2, dtype=np.float32):
  """An initializer drawing uniformly from [0, scale)."""
  def init(key, shape, dtype=dtype):
    dtype = dtypes.canonicalize_dtype(dtype)
    return samplers.uniform(key, _shape(shape), dtype) * jnp_creation.asarray(scale, dtype)
  return init


def normal(stddev=1e-2, dtype=np.float32):
  """An initializer drawing from a normal distribution with mean 0 and `stddev`."""
  def init(key, shape, dtype=dtype):
    dtype = dtypes.canonicalize_dtype(dtype)
    return samplers.normal(key, _shape(shape), dtype) * jnp_creation.asarray(stddev, dtype)
  return init


def truncated_normal(stddev=1e-2, dtype=np.float32, lower=-2.0, upper=2.0):
  """An initializer drawing from a normal distribution truncated to [lower, upper] standard
  deviations, then scaled by `stddev`."""
  def init(key, shape, dtype=dtype):
    dtype = dtypes.canonicalize_dtype(dtype)
    draw = samplers.truncated_normal(key, lower, upper, _shape(shape), dtype)
    return draw * jnp_creation.asarray(stddev, dtype)
  return init


def _fans(shape, in_axis, out_axis, batch_axis):
  if len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                     "weights tensor. Must be at least 2D.")
  size = lambda axes: (shape[axes] if isinstance(axes, int)
                       else math.prod(shape[a] for a in axes))
  in_size, out_size, batch_size = size(in_axis), size(out_axis), size(batch_axis)
  receptive = math.prod(shape) / in_size / out_size / batch_size
  return in_size * receptive, out_size * receptive


# the standard deviation of a standard normal truncated to (-2, 2)
_TRUNCATED_STDDEV = 0.87962566103423978


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=np.float32):
  """An initializer with variance `scale / n`.

  Args:
    scale: the variance's numerator.
    mode: "fan_in", "fan_out" or "fan_avg" (which count `n` is).
    distribution: "truncated_normal", "normal" or "uniform".
    in_axis, out_axis, batch_axis: the axes (ints or sequences) holding the input features, the
      output features and batch dimensions; the rest form the receptive field.
    dtype: the default dtype of the result.
  """
  if mode not in ("fan_in", "fan_out", "fan_avg"):
    raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
  if distribution not in ("truncated_normal", "normal", "uniform"):
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

  def init(key, shape, dtype=dtype):
    shape = _shape(shape)
    dtype = dtypes.canonicalize_dtype(dtype)
    fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    variance = np.asarray(scale / n, dtype)
    if distribution == "truncated_normal":
      stddev = np.sqrt(variance) / np.asarray(_TRUNCATED_STDDEV, dtype)
      return samplers.truncated_normal(key, -2, 2, shape, dtype) * \
          jnp_creation.asarray(stddev, dtype)
    if distribution == "normal":
      return samplers.normal(key, shape, dtype) * jnp_creation.asarray(np.sqrt(variance), dtype)
    return samplers.uniform(key, shape, dtype, -1) * \
        jnp_creation.asarray(np.sqrt(3 * variance), dtype)
  return init


glorot_uniform = xavier_uniform = functools.partial(variance_scaling, 1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = functools.partial(variance_scaling, 1.0, "fan_avg",
                                                  "truncated_normal")
lecun_uniform = functools.partial(variance_scaling, 1.0, "fan_in", "uniform")
lecun_normal = functools.partial(variance_scaling, 1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = functools.partial(variance_scaling, 2.0, "fan_in", "uniform")
he_normal = kaiming_normal = functools.partial(variance_scaling, 2.0, "fan_in",
                                               "truncated_normal")


class Initializer(typing.Protocol):
  """What an initializer is: `init(key, shape, dtype) -> Array` (what jax.nn.initializers
  calls `Initializer`)."""

  def __call__(self, key, shape, dtype=np.float32):
    ...
