"""Pooling: max_pool and avg_pool over the spatial dimensions of channels-last arrays.

jax.nn has no pooling functions, so these follow flax.linen's `max_pool` and `avg_pool` (the
pooling most JAX code uses): inputs are (batch..., spatial..., features) (NHWC for 2-d
windows), the window covers the spatial dimensions only, `strides` default to 1, and `padding`
is 'VALID', 'SAME' or one (lo, hi) pair per spatial dimension. Any number of leading batch
dimensions works, none included (flax pads only the first of several). Both are one
`reduce_window` (reduce_window_max/reduce_window_sum), so they are differentiable in both modes
and batch under vmap. max_pool pads with the dtype's lowest value (-inf for floats), so it
accepts integer inputs too; avg_pool of integers averages in the default float dtype.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.lax import binary, conversion, windowed
from revax._src.lax.reductions import _max_identity

__all__ = ["max_pool", "avg_pool"]


def _pool(inputs, init, computation, window_shape, strides, padding):
  """reduce_window over the spatial dimensions of (batch..., spatial..., features) `inputs`."""
  shape = get_aval(inputs).shape
  window_shape = tuple(operator.index(w) for w in window_shape)
  n = len(window_shape)
  strides = (1,) * n if strides is None else tuple(operator.index(s) for s in strides)
  if len(strides) != n:
    raise ValueError(f"pooling strides {strides} must have one entry per window dimension "
                     f"(window_shape {window_shape})")
  num_batch = len(shape) - n - 1
  if num_batch < 0:
    raise ValueError(f"pooling inputs must have the window's {n} spatial dimensions and a "
                     f"features dimension (at least rank {n + 1}), got shape {shape} for "
                     f"window_shape {window_shape}")
  if not isinstance(padding, str):
    pairs = tuple(tuple(p) for p in padding)
    if len(pairs) != n or any(len(p) != 2 for p in pairs):
      raise ValueError(f"pooling padding {padding!r} must be 'SAME', 'VALID' or one (lo, hi) "
                       f"pair per window dimension ({n})")
    padding = ((0, 0),) * num_batch + pairs + ((0, 0),)
  dims = (1,) * num_batch + window_shape + (1,)
  strides = (1,) * num_batch + strides + (1,)
  return windowed.reduce_window(inputs, init, computation, dims, strides, padding)


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
  """The maximum of each window over the spatial dimensions, as flax.linen.max_pool.

  Args:
    inputs: an array of shape (batch..., spatial..., features), e.g. NHWC.
    window_shape: the window's size along each spatial dimension, e.g. (2, 2).
    strides: the step between windows along each spatial dimension (default 1).
    padding: 'VALID', 'SAME', or one (lo, hi) pair per spatial dimension; padding never wins.

  Returns:
    The pooled array, (batch..., pooled spatial..., features).

  Example:
    >>> x = jnp.arange(9.).reshape(1, 3, 3, 1)  # NHWC
    >>> revax.nn.max_pool(x, (2, 2), strides=(2, 2), padding=((0, 1), (0, 1)))[0, :, :, 0]
    Array([[4., 5.],
           [7., 8.]], dtype=float32)
  """
  dtype = get_aval(inputs).dtype
  return _pool(inputs, _max_identity(dtype), binary.max, window_shape, strides, padding)


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
  """The mean of each window over the spatial dimensions, as flax.linen.avg_pool.

  Args:
    inputs: an array of shape (batch..., spatial..., features), e.g. NHWC.
    window_shape: the window's size along each spatial dimension.
    strides: the step between windows along each spatial dimension (default 1).
    padding: 'VALID', 'SAME', or one (lo, hi) pair per spatial dimension (padding counts as 0).
    count_include_pad: divide by the window's size (True, the default) or by the number of
      input elements in each window (False).

  Returns:
    The pooled array, (batch..., pooled spatial..., features).

  Example:
    >>> x = jnp.arange(16.).reshape(1, 4, 4, 1)  # NHWC
    >>> y = revax.nn.avg_pool(x, (3, 3), strides=(2, 2), padding="SAME", count_include_pad=False)
    >>> y[0, :, :, 0]  # means over the in-bounds cells of each window
    Array([[ 5. ,  6.5],
           [11. , 12.5]], dtype=float32)
  """
  dtype = get_aval(inputs).dtype
  if not dtypes.is_inexact(dtype):
    dtype = dtypes.default_float_dtype()
    inputs = conversion.convert_element_type(inputs, dtype)
  summed = _pool(inputs, np.zeros((), dtype), binary.add, window_shape, strides, padding)
  if count_include_pad:
    return binary.div(summed, np.asarray(np.prod(window_shape), dtype))
  counts = _window_counts(get_aval(inputs).shape, window_shape, strides, padding)
  return binary.div(summed, counts.astype(dtype))


def _window_counts(shape, window_shape, strides, padding):
  """How many input elements each window holds, as an array that broadcasts against the
  pooled output (spatial dims, then features): a product of one count per spatial dimension."""
  n = len(window_shape)
  spatial = shape[len(shape) - n - 1:-1]
  strides = (1,) * n if strides is None else tuple(strides)
  if isinstance(padding, str):
    padding = windowed.padtype_to_pads(spatial, window_shape, strides, padding)
  counts = np.ones((), np.int64)
  for size, w, s, (lo, hi) in zip(spatial, window_shape, strides, padding, strict=True):
    out = max((size + lo + hi - w) // s + 1, 0)
    start = np.arange(out) * s - lo
    per_dim = np.clip(start + w, 0, size) - np.clip(start, 0, size)
    counts = np.multiply.outer(counts, per_dim)
  return counts[..., None]
