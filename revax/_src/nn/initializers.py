"""revax.nn.initializers: functions `init(key, shape, dtype, out_sharding) -> array` for
parameters, as in jax.nn.initializers (`out_sharding`, a sharding or None, places the result;
the orthogonal ones refuse it, as JAX's do).

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
from revax._src.lax.sharding_constraint import placed
from revax._src.numpy import creation as jnp_creation
from revax._src.numpy import shape_ops as jnp_shape_ops
from revax._src.random import matrix_samplers, samplers

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]


def _shape(shape) -> tuple:
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  for d in shape:
    if not isinstance(d, (int, np.integer)) or d < 0:
      raise TypeError(f"initializer shapes must be tuples of non-negative ints, got {shape}")
  return tuple(int(d) for d in shape)


def _float(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)


def zeros(key, shape, dtype=None, out_sharding=None):
  """An array of zeros (the key is unused; dtype None: float32, or float64 with x64)."""
  return jnp_creation.zeros(_shape(shape), _float(dtype), out_sharding=out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
  """An array of ones (the key is unused; dtype None: float32, or float64 with x64)."""
  return jnp_creation.ones(_shape(shape), _float(dtype), out_sharding=out_sharding)


def constant(value, dtype=np.float32):
  """An initializer filling every entry with `value`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    return jnp_creation.full(_shape(shape), value, _float(dtype), out_sharding=out_sharding)
  return init


def uniform(scale=1e-2, dtype=np.float32):
  """An initializer drawing uniformly from [0, scale)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float(dtype)
    draw = samplers.uniform(key, _shape(shape), dtype)
    return placed(draw * jnp_creation.asarray(scale, dtype), out_sharding)
  return init


def normal(stddev=1e-2, dtype=np.float32):
  """An initializer drawing from a normal distribution with mean 0 and `stddev`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float(dtype)
    draw = samplers.normal(key, _shape(shape), dtype)
    return placed(draw * jnp_creation.asarray(stddev, dtype), out_sharding)
  return init


def truncated_normal(stddev=1e-2, dtype=np.float32, lower=-2.0, upper=2.0):
  """An initializer drawing from a normal distribution truncated to [lower, upper] standard
  deviations, then scaled by `stddev`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float(dtype)
    draw = samplers.truncated_normal(key, lower, upper, _shape(shape), dtype)
    return placed(draw * jnp_creation.asarray(stddev, dtype), out_sharding)
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

  def init(key, shape, dtype=dtype, out_sharding=None):
    shape = _shape(shape)
    dtype = _float(dtype)
    fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    variance = np.asarray(scale / n, dtype)
    if dtypes.is_complex(dtype) and distribution != "normal":  # (as JAX: a disk, or a
      # normal on the complex plane with its modulus truncated to 2)
      if distribution == "truncated_normal":
        out = _complex_draw(key, shape, dtype, 2.0) * jnp_creation.asarray(
            np.sqrt(variance) / np.asarray(_COMPLEX_TRUNCATED_STDDEV, dtype), dtype)
      else:
        out = _complex_draw(key, shape, dtype, None) * jnp_creation.asarray(
            np.sqrt(variance), dtype)
      return placed(out, out_sharding)
    if distribution == "truncated_normal":
      stddev = np.sqrt(variance) / np.asarray(_TRUNCATED_STDDEV, dtype)
      out = samplers.truncated_normal(key, -2, 2, shape, dtype) * \
          jnp_creation.asarray(stddev, dtype)
    elif distribution == "normal":
      out = samplers.normal(key, shape, dtype) * jnp_creation.asarray(np.sqrt(variance), dtype)
    else:
      out = samplers.uniform(key, shape, dtype, -1) * \
          jnp_creation.asarray(np.sqrt(3 * variance), dtype)
    return placed(out, out_sharding)
  return init


_COMPLEX_TRUNCATED_STDDEV = .95311164380491208  # of a complex standard normal truncated to 2


def _complex_draw(key, shape, dtype, upper):
  """JAX's complex samples of unit variance: a modulus from a uniform disk (`upper` None) or
  from a complex normal truncated to `upper`, and a uniform angle (drawn as JAX draws them)."""
  from revax._src.numpy import ufuncs
  from revax._src.random.keys import split
  key_r, key_theta = split(key)
  real = np.array(0, dtype).real.dtype

  def as_complex(x):
    return jnp_shape_ops.astype(x, dtype)
  if upper is None:
    r = as_complex(ufuncs.sqrt(2 * samplers.uniform(key_r, shape, real)))
  else:
    t = (1 - ufuncs.exp(jnp_creation.array(-(upper ** 2), dtype))) * as_complex(
        samplers.uniform(key_r, shape, real))
    r = ufuncs.sqrt(-ufuncs.log(1 - t))
  theta = 2 * np.pi * as_complex(samplers.uniform(key_theta, shape, real))
  return r * ufuncs.exp(1j * theta)


glorot_uniform = xavier_uniform = functools.partial(variance_scaling, 1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = functools.partial(variance_scaling, 1.0, "fan_avg",
                                                  "truncated_normal")
lecun_uniform = functools.partial(variance_scaling, 1.0, "fan_in", "uniform")
lecun_normal = functools.partial(variance_scaling, 1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = functools.partial(variance_scaling, 2.0, "fan_in", "uniform")
he_normal = kaiming_normal = functools.partial(variance_scaling, 2.0, "fan_in",
                                               "truncated_normal")


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """An initializer of (semi-)orthogonal weights: viewed as a matrix whose columns lie along
  `column_axis` (the other axes flattened into rows), the weights have orthonormal rows or
  columns, whichever are fewer, times `scale`.

  Args:
    scale: the factor applied to the orthogonal matrix.
    column_axis: the axis holding the columns.
    dtype: the default dtype of the weights (None: float32, or float64 with x64 enabled).

  Returns:
    `init(key, shape, dtype=dtype)`; `shape` needs at least 2 dimensions.

  Example:
    >>> w = revax.nn.initializers.orthogonal()(revax.random.key(0), (3, 3))
    >>> w
    Array([[ 0.9554101 ,  0.29413575,  0.02599558],
           [-0.04628982,  0.23614088, -0.9706156 ],
           [-0.29163137,  0.9261326 ,  0.23922686]], dtype=float32)
    >>> bool(jnp.allclose(w @ w.T, jnp.eye(3), atol=1e-6))
    True
  """
  def init(key, shape, dtype=dtype, out_sharding=None):
    if out_sharding is not None:
      raise NotImplementedError("orthogonal initializer: out_sharding is not supported")
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = _shape(shape)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    if 0 in shape:
      return jnp_creation.zeros(shape, dtype)
    n_cols = shape[column_axis]
    n_rows = math.prod(shape) // n_cols
    q = matrix_samplers.orthogonal(key, n_rows, (), dtype, n_cols)
    rows_shape = tuple(np.delete(np.asarray(shape), column_axis).tolist())
    q = jnp_shape_ops.moveaxis(q.reshape(rows_shape + (n_cols,)), -1, column_axis)
    return jnp_creation.asarray(scale, dtype) * q
  return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """An initializer of delta-orthogonal convolution kernels (Xiao et al. 2018): zero except at
  the spatial centre, which holds an orthogonal (in_features, out_features) matrix.

  Args:
    scale: the factor applied to the orthogonal matrix.
    column_axis: the axis holding the columns of that matrix.
    dtype: the default dtype of the weights (None: float32, or float64 with x64 enabled).

  Returns:
    `init(key, shape, dtype=dtype)` for 3-D, 4-D or 5-D kernel shapes (spatial..., in, out) with
    in <= out.

  Example:
    >>> w = revax.nn.initializers.delta_orthogonal()(revax.random.key(0), (3, 3, 4, 4))
    >>> w.shape
    (3, 3, 4, 4)
    >>> bool(jnp.allclose(w[1, 1] @ w[1, 1].T, jnp.eye(4), atol=1e-6)), float(jnp.abs(w[0]).max())
    (True, 0.0)
  """
  def init(key, shape, dtype=dtype, out_sharding=None):
    if out_sharding is not None:
      raise NotImplementedError("delta_orthogonal initializer: out_sharding is not supported")
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = _shape(shape)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    return jnp_creation.zeros(shape, dtype).at[centre].set(matrix)
  return init


class Initializer(typing.Protocol):
  """What an initializer is: `init(key, shape, dtype, out_sharding) -> Array` (what
  jax.nn.initializers calls `Initializer`)."""

  def __call__(self, key, shape, dtype=np.float32, out_sharding=None):
    ...
