"""Set operations on arrays: unique (and the array-API unique_all/counts/inverse/values), isin,
intersect1d, union1d, setdiff1d and setxor1d.

Their results have data-dependent lengths. Eagerly the length is computed from the concrete
values; under jit a static `size=` fixes it: the first `size` elements are kept and the rest
filled (with `fill_value`, by default the smallest value for unique/union1d/setxor1d/intersect1d
and 0 for setdiff1d, as in JAX). Everything is sort, compare-with-neighbour, cumsum and scatter.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands

_INDEX = dtypes.int32


class _UniqueAllResult(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


class _UniqueCountsResult(NamedTuple):
  values: object
  counts: object


class _UniqueInverseResult(NamedTuple):
  values: object
  inverse_indices: object


def _ravel(a):
  from revax._src.numpy.shape_ops import ravel
  return ravel(util.as_array(a))


def _differs(x, y, equal_nan):
  """x != y elementwise, NaN equal to NaN when `equal_nan`."""
  ne = lax.ne(x, y)
  if equal_nan and dtypes.is_inexact(aval_of(x).dtype):
    ne = lax.bitwise_and(ne, lax.bitwise_not(lax.bitwise_and(lax.ne(x, x), lax.ne(y, y))))
  return ne


def _static_size(fun_name, size, mask):
  """`size` if given, else the number of true elements of the concrete `mask`."""
  if size is not None:
    size = operator.index(size)
    if size < 0:
      raise ValueError(f"{fun_name}: size must be non-negative, got {size}")
    return size
  if isinstance(mask, Tracer):
    raise ConcretizationTypeError(
        f"{fun_name} needs a static size= under jit: the number of unique values depends on "
        f"the data (got {mask.aval.str_short()}).")
  return int(np.count_nonzero(np.asarray(mask)))


def _compact(mask, values, size, fill):
  """The entries of `values` (leading axis) where `mask` holds, packed into `size` slots; the
  remaining slots hold `fill` (an array broadcast to one entry), or the first packed entry if
  `fill` is None."""
  n = aval_of(mask).shape[0]
  rank = lax.sub(lax.cumsum(lax.convert_element_type(mask, _INDEX), 0),
                 util.scalar_constant(1, _INDEX))
  target = lax.select_n(mask, util.full_of((n,), size, _INDEX), rank)
  entry = aval_of(values).shape[1:]
  out = util.full_of((size,) + entry, 0, aval_of(values).dtype, aval_of(values).weak_type)
  out = out.at[target].set(values, mode="drop")
  if size == 0:
    return out
  count = lax.reduce_sum(lax.convert_element_type(mask, _INDEX), (0,)) if n else \
      util.scalar_constant(0, _INDEX)
  valid = lax.lt(lax.iota(_INDEX, size), lax.broadcast_in_dim(count, (size,), ()))
  if fill is None:
    fill_entry = out[0]
  else:
    # (jax's full_like(values, fill): the weak type of the values)
    fill_entry = lax.convert_element_type(util.as_array(fill), aval_of(values).dtype,
                                          aval_of(values).weak_type)
  fill_block = util.broadcast_to(fill_entry, (size,) + entry)
  valid = lax.broadcast_in_dim(valid, (size,) + entry, (0,))
  return lax.select_n(valid, fill_block, out)


def unique(ar, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis=None, *, equal_nan: bool = True, size=None,
           fill_value=None, sorted: bool = True):  # noqa: A002 (JAX's name)
  """The sorted unique elements of `ar` (or unique slices along `axis`).

  Args:
    ar: the array (flattened when axis is None).
    return_index: also return the index of each value's first occurrence.
    return_inverse: also return, for each element, the index of its value in the result (of
      ar's shape when axis is None).
    return_counts: also return how often each value occurs.
    axis: unique slices along this axis instead of elements.
    equal_nan: treat NaNs as equal (one NaN in the result).
    size: a static length for the result (needed under jit).
    fill_value: what pads the result beyond the unique values (default: the smallest value);
      the index output pads with the first value's index and counts pad with 0.
    sorted: accepted for JAX compatibility; the result is always sorted.

  Returns:
    The unique values, or a tuple of it and the requested outputs (index, inverse, counts).

  Example:
    >>> x = jnp.array([3, 1, 3, 2, 1])
    >>> jnp.unique(x)
    Array([1, 2, 3], dtype=int32)
    >>> jnp.unique(x, size=4, fill_value=-1)  # a static size, as under jit
    Array([ 1,  2,  3, -1], dtype=int32)
  """
  util.check_arraylike("unique", ar)
  ar = util.as_array(ar)
  in_shape = aval_of(ar).shape
  if axis is None:
    rows = lax.reshape(_ravel(ar), (aval_of(ar).size, 1))
    moved_shape = None
  else:
    from revax._src.numpy.shape_ops import moveaxis
    axis = util.canonicalize_axis(axis, len(in_shape))
    moved = moveaxis(ar, axis, 0)
    moved_shape = aval_of(moved).shape
    rows = lax.reshape(moved, (moved_shape[0], int(np.prod(moved_shape[1:], dtype=int))))
  n, k = aval_of(rows).shape
  iota = lax.iota(_INDEX, n)
  columns = [rows[:, j] for j in range(k)]
  sorted_parts = lax.sort((*columns, iota), dimension=0, is_stable=True, num_keys=max(k, 1)) \
      if k else (iota,)
  sorted_cols, perm = list(sorted_parts[:-1]), sorted_parts[-1]
  if n == 0:
    first = util.full_of((0,), True, dtypes.bool_)
  else:
    diff = util.full_of((n - 1,), False, dtypes.bool_)
    for c in sorted_cols:
      diff = lax.bitwise_or(diff, _differs(c[1:], c[:-1], equal_nan))
    first = lax.concatenate([util.full_of((1,), True, dtypes.bool_), diff], 0)
  size_ = _static_size("unique", size, first)
  from revax._src.numpy.shape_ops import stack
  sorted_rows = stack(sorted_cols, axis=1) if k else util.full_of((n, 0), 0, aval_of(rows).dtype)
  values = _compact(first, sorted_rows, size_, fill_value)
  if axis is None:
    values = lax.reshape(values, (size_,))
  else:
    from revax._src.numpy.shape_ops import moveaxis
    values = moveaxis(lax.reshape(values, (size_,) + moved_shape[1:]), 0, axis)
  outs = [values]
  if return_index:
    outs.append(_compact(first, perm, size_, None))
  if return_inverse:
    group = lax.sub(lax.cumsum(lax.convert_element_type(first, _INDEX), 0),
                    util.scalar_constant(1, _INDEX))
    inverse = util.full_of((n,), 0, _INDEX).at[perm].set(group, unique_indices=True)
    outs.append(lax.reshape(inverse, in_shape) if axis is None else inverse)
  if return_counts:
    group = lax.sub(lax.cumsum(lax.convert_element_type(first, _INDEX), 0),
                    util.scalar_constant(1, _INDEX))
    counts = util.full_of((size_,), 0, _INDEX).at[group].add(util.full_of((n,), 1, _INDEX),
                                                             mode="drop")
    outs.append(counts)
  return outs[0] if len(outs) == 1 else tuple(outs)


def unique_values(x, /, *, size=None, fill_value=None):
  """The sorted unique values of `x` (array API)."""
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
  """(values, counts) of the unique values of `x` (array API)."""
  values, counts = unique(x, return_counts=True, equal_nan=False, size=size,
                          fill_value=fill_value)
  return _UniqueCountsResult(values, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
  """(values, inverse_indices) of the unique values of `x` (array API)."""
  values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size,
                           fill_value=fill_value)
  return _UniqueInverseResult(values, inverse)


def unique_all(x, /, *, size=None, fill_value=None):
  """(values, indices, inverse_indices, counts) of the unique values of `x` (array API)."""
  values, indices, inverse, counts = unique(x, True, True, True, equal_nan=False, size=size,
                                            fill_value=fill_value)
  return _UniqueAllResult(values, indices, inverse, counts)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *,
         method="auto"):
  """Whether each element of `element` occurs in `test_elements` (of element's shape).

  Args:
    method: 'auto', 'compare_all' (compare every pair), 'binary_search' or 'sort' (sort the
      test elements and search them).
  """
  from revax._src.numpy.searching import searchsorted
  from revax._src.numpy.sorting import sort
  util.check_arraylike("isin", element, test_elements)
  if method not in ("auto", "compare_all", "binary_search", "sort"):
    raise ValueError(f"method={method!r} not recognized")
  element, test = util.promote_dtypes(util.as_array(element), _ravel(test_elements))
  shape = aval_of(element).shape
  m = aval_of(test).shape[0]
  if m == 0:
    out = util.full_of(shape, False, dtypes.bool_)
  elif method in ("auto", "compare_all"):
    nd = len(shape)
    eq = lax.eq(lax.broadcast_in_dim(element, shape + (m,), tuple(range(nd))),
                lax.broadcast_in_dim(test, shape + (m,), (nd,)))
    out = lax.reduce_or(eq, (nd,))
  else:
    st = sort(test)
    idx = lax.min(searchsorted(st, element), util.scalar_constant(m - 1, _INDEX))
    out = lax.eq(st[idx], element)
  if method != "binary_search":  # (jax's compare_all and sort reduce with any: strong bools)
    out = lax.convert_element_type(out, dtypes.bool_, False)
  return lax.bitwise_not(out) if invert else out


def _sorted_first(a):
  """(sorted a, the index in `a` of each sorted element, where a sorted element is the first of
  its value)."""
  n = aval_of(a).shape[0]
  s, perm = lax.sort((a, lax.iota(_INDEX, n)), dimension=0, is_stable=True, num_keys=1)
  if n == 0:
    return s, perm, util.full_of((0,), True, dtypes.bool_)
  first = lax.concatenate([util.full_of((1,), True, dtypes.bool_), lax.ne(s[1:], s[:-1])], 0)
  return s, perm, first


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size=None, fill_value=None):
  """The sorted values present in both `ar1` and `ar2` (flattened).

  With `return_indices`, also the indices of those values' first occurrences in each input
  (padding entries hold len(ar1) and len(ar2)).
  """
  from revax._src.numpy.searching import searchsorted
  util.check_arraylike("intersect1d", ar1, ar2)
  a1, a2 = util.promote_dtypes(_ravel(ar1), _ravel(ar2))
  n1, n2 = aval_of(a1).shape[0], aval_of(a2).shape[0]
  s1, perm1, first1 = _sorted_first(a1)
  hit = lax.bitwise_and(first1, isin(s1, a2)) if n2 else util.full_of((n1,), False, dtypes.bool_)
  size_ = _static_size("intersect1d", size, hit)
  values = _compact(hit, s1, size_, fill_value)
  if size is not None:  # (jax gathers them into a strongly typed zeros array)
    values = lax.convert_element_type(values, aval_of(values).dtype, False)
  if not return_indices:
    return values
  idx1 = _compact(hit, perm1, size_, n1)
  s2, perm2, _ = _sorted_first(a2)
  if n2:
    pos2 = lax.min(searchsorted(s2, s1), util.scalar_constant(n2 - 1, _INDEX))
    idx2 = _compact(hit, perm2[pos2], size_, n2)
  else:
    idx2 = util.full_of((size_,), n2, _INDEX)
  return values, idx1, idx2


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """The sorted unique values of `ar1` and `ar2` together."""
  from revax._src.numpy.shape_ops import concatenate
  util.check_arraylike("union1d", ar1, ar2)
  a1, a2 = util.promote_dtypes(_ravel(ar1), _ravel(ar2))
  return unique(concatenate([a1, a2], 0), size=size, fill_value=fill_value)


def _differ_nan_equal(a, b):
  """a != b element-wise, where NaN equals NaN (complex: where both have a NaN part)."""
  differ = lax.ne(a, b)
  if not dtypes.is_inexact(aval_of(a).dtype):
    return differ
  both_nan = lax.bitwise_and(lax.ne(a, a), lax.ne(b, b))
  return lax.bitwise_and(differ, lax.bitwise_not(both_nan))


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
  """The sorted unique values of `ar1` that are not in `ar2` (fill_value defaults to 0)."""
  from revax._src.numpy.sorting import sort
  util.check_arraylike("setdiff1d", ar1, ar2)
  a1, a2 = _ravel(ar1), _ravel(ar2)  # (the result has ar1's type; isin compares promoted)
  n1 = aval_of(a1).shape[0]
  if assume_unique:
    keep_first = util.full_of((n1,), True, dtypes.bool_)
    s = a1
  else:
    s = sort(a1)
    # jax takes unique(ar1) first, where NaNs are equal (one NaN is kept)
    keep_first = lax.concatenate([util.full_of((1,), True, dtypes.bool_),
                                  _differ_nan_equal(s[1:], s[:-1])], 0) if n1 else \
        util.full_of((0,), True, dtypes.bool_)
  mask = lax.bitwise_and(keep_first, isin(s, a2, invert=True))
  size_ = _static_size("setdiff1d", size, mask)
  return _compact(mask, s, size_, 0 if fill_value is None else fill_value)


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
  """The sorted values in exactly one of `ar1` and `ar2`.

  As jax's: each input's NaNs count as one value, and a NaN is never in both, so the result
  has one NaN per input holding any; with `size` and no `fill_value`, the padding is the
  smallest result (NaN if a NaN is among them, 0 if there are none).
  """
  from revax._src.numpy.shape_ops import concatenate
  util.check_arraylike("setxor1d", ar1, ar2)
  a1, a2 = util.promote_dtypes(_ravel(ar1), _ravel(ar2))
  n1 = aval_of(a1).shape[0]
  s, perm, first = _sorted_first(concatenate([a1, a2], 0))
  if aval_of(s).shape[0]:
    only_one = lax.ne(isin(s, a1), isin(s, a2))
    if dtypes.is_inexact(aval_of(s).dtype):
      # the first NaN of each input (NaNs sort last, stably: ar1's before ar2's)
      no = util.full_of((1,), False, dtypes.bool_)
      nan = lax.ne(s, s)
      from_2 = lax.ge(perm, util.scalar_constant(n1, _INDEX))
      prev_nan = lax.concatenate([no, nan[:-1]], 0)
      prev_from_2 = lax.concatenate([no, from_2[:-1]], 0)
      first_nan = lax.bitwise_and(nan, lax.bitwise_or(
          lax.bitwise_not(prev_nan), lax.bitwise_and(from_2, lax.bitwise_not(prev_from_2))))
      only_one = lax.bitwise_or(only_one, first_nan)
    first = lax.bitwise_and(first, only_one)
  if size is None:
    return _compact(first, s, _static_size("setxor1d", size, first), None)
  size_ = _static_size("setxor1d", size, first)
  if size_ == 0 and fill_value is None:  # as jax's, from the max of its padding
    raise ValueError("zero-size array to reduction operation max which has no identity")
  vals = _compact(first, s, size_, util.scalar_constant(0, aval_of(s).dtype))
  count = (lax.reduce_sum(lax.convert_element_type(first, _INDEX), (0,))
           if aval_of(first).shape[0] else util.scalar_constant(0, _INDEX))
  valid = lax.lt(lax.iota(_INDEX, size_), lax.broadcast_in_dim(count, (size_,), ()))
  if fill_value is not None:  # a where, as jax's: a float fill promotes integer results
    from revax._src.numpy.ufuncs import where
    vals = where(valid, vals, fill_value)
  else:  # jax's padding: the max over the results and zero-filled slots, then the min of those
    for reduce in (lax.reduce_max, lax.reduce_min):
      vals = lax.select_n(valid, lax.broadcast_in_dim(reduce(vals, (0,)), (size_,), ()), vals)
  if not assume_unique:  # (jax gathers into a strong zeros array)
    vals = lax.convert_element_type(vals, aval_of(vals).dtype, False)
  return vals

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("unique", "unique_all", "unique_counts", "unique_inverse",
                        "unique_values",))
