"""Segment reductions, as jax.ops: segment_sum, segment_prod, segment_max and segment_min.

`segment_op(data, segment_ids, num_segments)` combines the rows of `data` (its leading axis)
that share a segment id into row `id` of a `(num_segments,) + data.shape[1:]` result, starting
from the operation's identity (0, 1, the dtype's lowest or highest value), so an empty segment
holds the identity. It is an `.at[segment_ids]` scatter into that identity-filled result. As in
JAX, ids are not wrapped: a negative or too-large id is out of bounds, dropped by default
(mode 'fill'/'drop') or clamped with mode='clip'; `num_segments` defaults to `max(ids) + 1`,
which needs concrete ids. With `bucket_size`, the rows are scattered into one partial result
per bucket of `bucket_size` consecutive rows, then those are reduced (for accuracy of long sums
and products).
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.numpy import creation, reductions, ufuncs, util
from revax._src.numpy.indexing import _Mode, _parse_mode

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def _identity(op: str, dtype):
  if op == "add":
    return 0
  if op == "mul":
    return 1
  if dtypes.is_bool(dtype):
    return op == "min"
  if dtypes.is_inexact(dtype):
    return -np.inf if op == "max" else np.inf
  info = dtypes.iinfo(dtype)
  return info.min if op == "max" else info.max


def _segment(name, op, reducer, data, segment_ids, num_segments, indices_are_sorted,
             unique_indices, bucket_size, mode):
  util.check_arraylike(name, data, segment_ids)
  data, ids = util.as_array(data), util.as_array(segment_ids)
  if not dtypes.is_integer(ids.dtype):
    raise TypeError(f"{name}: segment_ids must be integers, got dtype {ids.dtype.name}")
  if num_segments is None:
    try:
      num_segments = int(np.max(np.asarray(ids))) + 1
    except Exception:  # noqa: BLE001 (a tracer: the number of segments must be static)
      raise TypeError(f"{name}: num_segments must be given when segment_ids are traced "
                      f"(the result's shape depends on it)") from None
  num_segments = int(num_segments)
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  # ids are never wrapped: a negative id is out of bounds, like one >= num_segments
  if _parse_mode(mode, _Mode.FILL_OR_DROP) is _Mode.CLIP:
    ids = ufuncs.clip(ids, 0, max(num_segments - 1, 0))
  else:
    ids = ufuncs.where(ids < 0, num_segments, ids)
  kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
  fill = _identity(op, data.dtype)
  if bucket_size is None:
    out = creation.full((num_segments,) + data.shape[1:], fill, dtype=data.dtype)
    return getattr(out.at[ids], op)(data, **kw)
  num_buckets = -(-ids.size // bucket_size)
  out = creation.full((num_buckets, num_segments) + data.shape[1:], fill, dtype=data.dtype)
  buckets = creation.arange(ids.shape[0]) // bucket_size
  out = getattr(out.at[buckets, ids], op)(data, **kw)
  return reducer(out, axis=0).astype(data.dtype)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """The sum of the rows of `data` in each segment (0 for an empty one).

  Example:
    >>> revax.ops.segment_sum(jnp.arange(5.0), jnp.array([0, 0, 1, 2, 2]), num_segments=4)
    Array([1., 2., 7., 0.], dtype=float32)
  """
  return _segment("segment_sum", "add", reductions.sum, data, segment_ids, num_segments,
                  indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
  """The product of the rows of `data` in each segment (1 for an empty one)."""
  return _segment("segment_prod", "mul", reductions.prod, data, segment_ids, num_segments,
                  indices_are_sorted, unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """The maximum of the rows of `data` in each segment (-inf, or the lowest integer, for an
  empty one)."""
  return _segment("segment_max", "max", reductions.max, data, segment_ids, num_segments,
                  indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """The minimum of the rows of `data` in each segment (inf, or the highest integer, for an
  empty one)."""
  return _segment("segment_min", "min", reductions.min, data, segment_ids, num_segments,
                  indices_are_sorted, unique_indices, bucket_size, mode)
