"""Summary statistics of jax.scipy.stats: mode, rankdata and sem."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from revax._src.core import dtypes
from revax._src.numpy import creation, reductions, shape_ops, sorting, ufuncs
from revax._src.numpy.util import aval_of, as_array, canonicalize_axis, check_arraylike


class ModeResult(NamedTuple):
  mode: object
  count: object


def _check_nan_policy(fun_name, nan_policy):
  if nan_policy not in ("propagate", "omit", "raise"):
    raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                     "{'propagate', 'omit', 'raise'}")
  if nan_policy == "raise":
    raise NotImplementedError(
        f"In order to best JIT compile `{fun_name}`, we cannot know whether `x` contains nans. "
        f"Please check if nans exist in `x` outside of the `{fun_name}` function.")
  if nan_policy == "omit":
    raise NotImplementedError("Logic for `nan_policy` of omit is not implemented")


def _pairwise(a):
  """(a_j op a_i) comparisons along the last axis: a[..., None, :] and a[..., :, None]."""
  return shape_ops.expand_dims(a, -2), shape_ops.expand_dims(a, -1)


def mode(a, axis=0, nan_policy: str = "propagate", keepdims: bool = False):
  """The most common value along `axis` (the smallest one on ties) and how often it occurs.

  Args:
    a: an array.
    axis: the axis (None: the flattened array).
    nan_policy: only 'propagate' (NaNs count as values that equal nothing).
    keepdims: keep the reduced axis as size 1.

  Returns:
    ModeResult(mode, count), count as int32.
  """
  check_arraylike("mode", a)
  _check_nan_policy("mode", nan_policy)
  a = as_array(a)
  if axis is None:
    a, axis = shape_ops.ravel(a), 0
    out_ndim_axis = None
  else:
    axis = canonicalize_axis(axis, aval_of(a).ndim)
    out_ndim_axis = axis
  if aval_of(a).shape[axis] == 0:
    raise ValueError("mode of an empty axis is undefined")
  s = sorting.sort(shape_ops.moveaxis(a, axis, -1), axis=-1)
  others, mine = _pairwise(s)
  counts = reductions.sum(others == mine, axis=-1, dtype=dtypes.int32)
  best = reductions.argmax(counts, axis=-1, keepdims=True)
  from revax._src.numpy.indexing import take_along_axis
  mode_value = shape_ops.squeeze(take_along_axis(s, best, axis=-1), -1)
  count = reductions.max(counts, axis=-1)
  if keepdims:
    where = 0 if out_ndim_axis is None else out_ndim_axis
    if out_ndim_axis is None:
      mode_value = shape_ops.reshape(mode_value, (1,) * aval_of(a).ndim)
      count = shape_ops.reshape(count, (1,) * aval_of(a).ndim)
    else:
      mode_value = shape_ops.expand_dims(mode_value, where)
      count = shape_ops.expand_dims(count, where)
  return ModeResult(mode_value, count)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(a, method: str = "average", *, axis=None, nan_policy: str = "propagate"):
  """Ranks (1-based) of the data along `axis` (flattened if None), ties broken by `method`.

  Args:
    a: an array.
    method: 'average', 'min', 'max', 'dense' or 'ordinal' (as scipy.stats.rankdata).
    axis: the axis, or None.
    nan_policy: only 'propagate' (any NaN along the axis makes all its ranks NaN).

  Returns:
    A float array of ranks (a's shape, flattened if axis is None).
  """
  check_arraylike("rankdata", a)
  if method not in _RANK_METHODS:
    raise ValueError(f"unknown method '{method}'")
  _check_nan_policy("rankdata", nan_policy)
  a = as_array(a)
  if axis is None:
    a, axis = shape_ops.ravel(a), 0
  axis = canonicalize_axis(axis, aval_of(a).ndim)
  x = shape_ops.moveaxis(a, axis, -1)
  float_dtype = dtypes.default_float_dtype()
  others, mine = _pairwise(x)
  less = reductions.sum(others < mine, axis=-1).astype(float_dtype)
  equal = reductions.sum(others == mine, axis=-1).astype(float_dtype)
  if method == "average":
    ranks = less + (equal + 1.0) / 2.0
  elif method == "min":
    ranks = less + 1.0
  elif method == "max":
    ranks = less + equal
  elif method == "dense":
    weight = 1.0 / shape_ops.expand_dims(equal, -2)  # each distinct smaller value counts once
    ranks = reductions.sum(ufuncs.where(others < mine, weight, 0.0), axis=-1) + 1.0
    ranks = ufuncs.round(ranks)
  else:
    n = aval_of(x).shape[-1]
    earlier = creation.arange(n)[None, :] < creation.arange(n)[:, None]
    ties_before = reductions.sum((others == mine) & earlier, axis=-1).astype(float_dtype)
    ranks = less + ties_before + 1.0
  ranks = ranks.astype(float_dtype)
  if dtypes.is_inexact(aval_of(x).dtype):
    has_nan = reductions.any(ufuncs.isnan(x), axis=-1, keepdims=True)
    ranks = ufuncs.where(has_nan, np.nan, ranks).astype(float_dtype)
  return shape_ops.moveaxis(ranks, -1, axis)


def sem(a, axis=0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False):
  """The standard error of the mean, std(a, ddof) / sqrt(n), along `axis`.

  Args:
    a: an array.
    axis: the axis, or None (all elements).
    ddof: delta degrees of freedom of the standard deviation.
    nan_policy: 'propagate' or 'omit' (NaNs left out of each axis' count).
    keepdims: keep the reduced axis as size 1.

  Returns:
    A float array.
  """
  check_arraylike("sem", a)
  if nan_policy not in ("propagate", "omit"):
    raise ValueError(f"{nan_policy} is not supported")
  a = as_array(a)
  if not dtypes.is_inexact(aval_of(a).dtype):
    a = a.astype(dtypes.default_float_dtype())
  if nan_policy == "omit":
    valid = ~ufuncs.isnan(a)
    n = reductions.sum(valid, axis=axis, keepdims=True).astype(aval_of(a).dtype)
    mean = reductions.sum(ufuncs.where(valid, a, 0.0), axis=axis, keepdims=True) / n
    sq = ufuncs.where(valid, (a - mean) * (a - mean), 0.0)
    var = reductions.sum(sq, axis=axis, keepdims=True) / (n - ddof)
    out = ufuncs.sqrt(var / n).astype(aval_of(a).dtype)
    return out if keepdims else _squeeze_axis(out, axis)
  n = aval_of(a).size if axis is None else aval_of(a).shape[canonicalize_axis(axis, aval_of(a).ndim)]
  std = reductions.std(a, axis=axis, ddof=ddof, keepdims=keepdims)
  return std / np.sqrt(n).astype(aval_of(a).dtype)


def _squeeze_axis(x, axis):
  if axis is None:
    return shape_ops.reshape(x, ())
  return shape_ops.squeeze(x, axis)


