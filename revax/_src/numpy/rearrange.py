"""Functions that move, insert, remove or pick elements: roll, rot90, resize, delete, insert,
append, unstack, dsplit, block, trim_zeros, compress/extract, choose, select, piecewise, and the
functional forms of NumPy's in-place writers (place, put, put_along_axis).

Positions that decide a result's shape (delete's and insert's `obj`, trim_zeros' input) must be
concrete, as in JAX; compress/extract take a static `size=` to work under jit.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src import lax
from revax._src.lax import stacking
from revax._src.core import dtypes
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src import tree_util
from revax._src.numpy.util import convert_pytree_operands


def _shape(a):
  return aval_of(a).shape


def _int_array(values):
  return util.as_array(np.asarray(values, dtype=dtypes.default_int_dtype()))


def _concrete(fun_name, arg_name, x):
  if isinstance(x, Tracer):
    raise ConcretizationTypeError(
        f"{fun_name} requires a concrete value for {arg_name!r}, got {x.aval.str_short()}; its "
        f"value decides the shape of the result.")
  return np.asarray(x)


def _slice_in_dim(a, start, stop, axis):
  shape = _shape(a)
  starts = [0] * len(shape)
  stops = list(shape)
  starts[axis], stops[axis] = start, stop
  return lax.slice(a, starts, stops)


@tree_util.accepts_array_leaves()
def roll(a, shift, axis=None):
  """`a` with elements shifted by `shift` along `axis` (the flattened array if None), wrapping
  around. `shift` may be traced.

  Args:
    a: the array.
    shift: an int or a sequence of ints (one per axis in `axis`).
    axis: None, an int or a sequence of ints.

  Returns:
    The rolled array, of a's shape.
  """
  from revax._src.numpy.shape_ops import ravel
  util.check_arraylike("roll", a)
  a = util.as_array(a)
  if axis is None:
    return lax.reshape(roll(ravel(a), shift, 0), _shape(a))
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
  if len(shifts) == 1 and len(axes) > 1:
    shifts = shifts * len(axes)
  if len(axes) == 1 and len(shifts) > 1:
    axes = axes * len(shifts)
  if len(shifts) != len(axes):
    raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
  for s, ax in zip(shifts, axes, strict=True):
    a = _roll_one(a, s, util.canonicalize_axis(ax, len(_shape(a))))
  return a


def _roll_one(a, shift, axis):
  n = _shape(a)[axis]
  if n == 0:
    return a
  if not isinstance(shift, Tracer):
    s = int(np.asarray(shift)) % n
    if s == 0:
      return a
    left = _slice_in_dim(a, n - s, n, axis=axis)
    right = _slice_in_dim(a, 0, n - s, axis=axis)
    return lax.concatenate([left, right], axis)
  shift = lax.convert_element_type(shift, dtypes.int32)
  size = util.scalar_constant(n, dtypes.int32)
  start = lax.rem(lax.sub(size, lax.rem(shift, size)), size)
  doubled = lax.concatenate([a, a], axis)
  starts = [util.scalar_constant(0, dtypes.int32)] * len(_shape(a))
  starts[axis] = start
  return lax.dynamic_slice(doubled, starts, _shape(a))


def rollaxis(a, axis: int, start: int = 0):
  """`a` with `axis` moved to sit before position `start` (NumPy's older moveaxis)."""
  from revax._src.numpy.shape_ops import moveaxis
  util.check_arraylike("rollaxis", a)
  nd = len(_shape(a))
  axis = util.canonicalize_axis(axis, nd)
  if not -nd <= start <= nd:
    raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
  if start < 0:
    start += nd
  if start > axis:
    start -= 1
  return moveaxis(a, axis, start)


def rot90(m, k: int = 1, axes=(0, 1)):
  """`m` rotated by 90 degrees `k` times in the plane of `axes` (from the first towards the
  second)."""
  from revax._src.numpy.shape_ops import flip, swapaxes
  util.check_arraylike("rot90", m)
  nd = len(_shape(m))
  if nd < 2:
    raise ValueError(f"rot90 requires its argument to have ndim at least two, but got shape "
                     f"{_shape(m)}")
  k = operator.index(k) % 4
  ax1, ax2 = (util.canonicalize_axis(ax, nd) for ax in axes)
  if ax1 == ax2:
    raise ValueError("Axes must be different")
  m = util.as_array(m)
  if k == 0:
    return m
  if k == 2:
    return flip(flip(m, ax1), ax2)
  if k == 1:
    return swapaxes(flip(m, ax2), ax1, ax2)
  return flip(swapaxes(m, ax1, ax2), ax2)


def resize(a, new_shape):
  """An array of `new_shape` filled with the elements of `a` repeated in order."""
  from revax._src.numpy.shape_ops import ravel
  util.check_arraylike("resize", a)
  new_shape = util.canonicalize_shape(new_shape)
  if any(d < 0 for d in new_shape):
    raise ValueError("all elements of `new_shape` must be non-negative")
  a = ravel(a)
  n, total = _shape(a)[0], int(np.prod(new_shape))
  if n == 0 or total == 0:
    return util.full_of(new_shape, 0, aval_of(a).dtype, aval_of(a).weak_type)
  reps = -(-total // n)
  a = lax.concatenate([a] * reps, 0) if reps > 1 else a
  return lax.reshape(lax.slice(a, (0,), (total,)), new_shape)


def _normalize_positions(fun_name, obj, n):
  if isinstance(obj, slice):
    return np.arange(n)[obj]
  obj = _concrete(fun_name, "obj", obj)
  if not (dtypes.is_integer(obj.dtype) or obj.dtype == bool or obj.size == 0):
    raise ValueError(f"{fun_name}: obj must be integer indices or a slice, got {obj.dtype}")
  return obj


def delete(arr, obj, axis=None, *, assume_unique_indices: bool = False):
  """`arr` without the entries at positions `obj` (an int, slice or concrete int array) along
  `axis` (of the flattened array if None)."""
  from revax._src.numpy.indexing import take
  from revax._src.numpy.shape_ops import ravel
  util.check_arraylike("delete", arr)
  if axis is None:
    arr, axis = ravel(arr), 0
  arr = util.as_array(arr)
  axis = util.canonicalize_axis(axis, len(_shape(arr)))
  n = _shape(arr)[axis]
  if isinstance(obj, Tracer) and assume_unique_indices:
    idx = lax.convert_element_type(obj, dtypes.int32)
    idx = lax.select_n(lax.lt(idx, util.constant_like(idx, 0)), idx, lax.add(
        idx, util.constant_like(idx, n)))
    m = aval_of(idx).size
    # position i of the result reads input i + (number of deleted indices <= it)
    from revax._src.numpy.sorting import sort
    sorted_idx = sort(lax.reshape(idx, (m,)))
    out_pos = lax.iota(dtypes.int32, n - m)
    shift = lax.sub(sorted_idx, lax.iota(dtypes.int32, m))
    count = lax.reduce_sum(lax.convert_element_type(lax.le(
        lax.broadcast_in_dim(shift, (n - m, m), (1,)),
        lax.broadcast_in_dim(out_pos, (n - m, m), (0,))), dtypes.int32), (1,))
    return take(arr, lax.add(out_pos, count), axis=axis)
  positions = _normalize_positions("delete", obj, n)
  keep = np.ones(n, bool)
  if positions.dtype == bool:
    if positions.shape != (n,):
      raise ValueError(f"delete: boolean mask of shape {positions.shape} does not match axis "
                       f"length {n}")
    keep = ~positions
  else:
    if positions.size and (positions.min() < -n or positions.max() >= n):
      raise IndexError(f"index out of range for delete along an axis of size {n}")
    keep[positions] = False
  return take(arr, _int_array(np.nonzero(keep)[0]), axis=axis)


def insert(arr, obj, values, axis=None):
  """`arr` with `values` inserted before positions `obj` (concrete) along `axis` (of the
  flattened array if None)."""
  from revax._src.numpy.shape_ops import moveaxis, ravel
  util.check_arraylike("insert", arr, values)
  if axis is None:
    arr, axis = ravel(arr), 0
  arr = util.as_array(arr)
  nd = len(_shape(arr))
  axis = util.canonicalize_axis(axis, nd)
  n = _shape(arr)[axis]
  positions = _normalize_positions("insert", obj, n)
  values = lax.convert_element_type(util.as_array(values), aval_of(arr).dtype,
                                    aval_of(arr).weak_type)
  vnd = len(_shape(values))
  if vnd < nd:
    values = lax.reshape(values, (1,) * (nd - vnd) + _shape(values))
  if positions.ndim == 0:
    values = moveaxis(values, 0, axis)
    positions = np.full(_shape(values)[axis], int(positions))
  positions = np.where(positions < 0, positions + n, positions)
  if positions.size and (positions.min() < 0 or positions.max() > n):
    raise IndexError(f"index out of bounds for insert along an axis of size {n}")
  k = positions.size
  target = list(_shape(arr))
  target[axis] = k
  values = util.broadcast_to(values, tuple(target))
  order = np.argsort(positions, kind="stable")
  new_pos = np.empty(k, int)
  new_pos[order] = positions[order] + np.arange(k)
  old_pos = np.setdiff1d(np.arange(n + k), new_pos)
  out_shape = list(_shape(arr))
  out_shape[axis] = n + k
  out = util.full_of(tuple(out_shape), 0, aval_of(arr).dtype, aval_of(arr).weak_type)
  lead = (slice(None),) * axis
  out = out.at[lead + (_int_array(old_pos),)].set(arr)
  return out.at[lead + (_int_array(new_pos),)].set(values)


def append(arr, values, axis=None):
  """`arr` and `values` joined along `axis` (both flattened if None)."""
  from revax._src.numpy.shape_ops import concatenate, ravel
  util.check_arraylike("append", arr, values)
  if axis is None:
    return concatenate([ravel(arr), ravel(values)], 0)
  return concatenate([arr, values], axis)


@tree_util.accepts_array_leaves()
def unstack(x, /, *, axis: int = 0):
  """The slices of `x` along `axis`, as a tuple."""
  util.check_arraylike("unstack", x)
  x = util.as_array(x)
  nd = len(_shape(x))
  if nd == 0:
    raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
  axis = util.canonicalize_axis(axis, nd)
  return stacking.unstack(x, axis)


def dsplit(ary, indices_or_sections):
  """split along the third axis (of an array of at least 3 dimensions)."""
  from revax._src.numpy.shape_ops import split
  util.check_arraylike("dsplit", ary)
  if len(_shape(ary)) < 3:
    raise ValueError("dsplit only works on arrays of 3 or more dimensions")
  return split(ary, indices_or_sections, axis=2)


def block(arrays):
  """An array assembled from nested lists of blocks (innermost lists join along the last axis).
  """
  from revax._src.numpy.shape_ops import concatenate

  def depth_and_ndim(x, path):
    if isinstance(x, tuple):
      raise TypeError(f"{path} is a tuple. Only lists can be used to arrange blocks, and "
                      f"jnp.block does not allow implicit conversion from tuple to jax.Array.")
    if isinstance(x, list):
      if not x:
        raise ValueError(f"{path} is empty; lists cannot be empty")
      results = [depth_and_ndim(e, f"{path}[{i}]") for i, e in enumerate(x)]
      depths = {d for d, _ in results}
      if len(depths) != 1:
        raise ValueError(f"List depths are mismatched at {path}")
      return depths.pop() + 1, max(n for _, n in results)
    util.check_arraylike("block", x)
    return 0, len(aval_of(x).shape)

  depth, max_nd = depth_and_ndim(arrays, "arrays")
  result_nd = max(depth, max_nd)

  def assemble(x, level):
    if level == depth:
      x = util.as_array(x)
      shape = aval_of(x).shape
      return lax.reshape(x, (1,) * (result_nd - len(shape)) + shape)
    parts = [assemble(e, level + 1) for e in x]
    return concatenate(parts, axis=-(depth - level))

  return assemble(arrays, 0)


def trim_zeros(filt, trim: str = "fb"):
  """The 1-D `filt` without its leading ('f') and/or trailing ('b') zeros (`filt` concrete)."""
  util.check_arraylike("trim_zeros", filt)
  value = _concrete("trim_zeros", "filt", filt)
  if value.ndim != 1:
    raise TypeError(f"trim_zeros requires a 1-D input, got shape {value.shape}")
  nz = np.nonzero(value)[0]
  if nz.size == 0:
    return util.as_array(filt)[:0]
  start = int(nz[0]) if "f" in trim.lower() else 0
  stop = int(nz[-1]) + 1 if "b" in trim.lower() else value.shape[0]
  return util.as_array(filt)[start:stop]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """The slices of `a` along `axis` (flattened if None) where the 1-D `condition` is true.

  With a static `size`, the result has `size` slices (the first ones kept, missing ones
  `fill_value`), which works under jit.
  """
  from revax._src.numpy.indexing import nonzero, take
  from revax._src.numpy.shape_ops import ravel
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  util.check_arraylike("compress", condition, a)
  cond = util.as_array(condition)
  if len(_shape(cond)) != 1:
    raise ValueError("condition must be a 1D array")
  if axis is None:
    a, axis = ravel(a), 0
  a = util.as_array(a)
  axis = util.canonicalize_axis(axis, len(_shape(a)))
  n = _shape(a)[axis]
  m = _shape(cond)[0]
  if m > n:
    cond = cond[:n]
  elif m < n:
    cond = lax.pad(lax.convert_element_type(cond, dtypes.bool_), util.scalar_constant(
        False, dtypes.bool_), ((0, n - m, 0),))
  if size is None:
    (idx,) = nonzero(cond)
    return take(a, idx, axis=axis)
  (idx,) = nonzero(cond, size=size, fill_value=n)
  out = take(a, idx, axis=axis, mode="fill", fill_value=fill_value)
  # (jax fills through where(mask, a, array(fill_value, a.dtype)): a strong result)
  return lax.convert_element_type(out, aval_of(out).dtype, False)


def extract(condition, arr, *, size=None, fill_value=0):
  """The elements of `arr` where `condition` is true (both flattened), as a 1-D array."""
  from revax._src.numpy.shape_ops import ravel
  util.check_arraylike("extract", condition, arr)
  return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def choose(a, choices, out=None, mode: str = "raise"):
  """Elements picked from `choices[a]` (a, and each choice, broadcast together).

  Args:
    a: integer indices into `choices`.
    choices: a sequence of arrays.
    mode: 'raise' (indices must be valid; `a` concrete), 'wrap' or 'clip'.
  """
  from revax._src.numpy.shape_ops import stack
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  util.check_arraylike("choose", a, *choices)
  if not dtypes.is_integer(aval_of(a).dtype):
    raise ValueError("`a` array must be integer typed")
  n = len(choices)
  a = util.as_array(a)
  if mode == "raise":
    value = _concrete("choose", "a", a)
    if value.size and (value.min() < 0 or value.max() >= n):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    a = lax.rem(lax.add(lax.rem(a, util.constant_like(a, n)), util.constant_like(a, n)),
                util.constant_like(a, n))
  elif mode == "clip":
    a = lax.clamp(util.constant_like(a, 0), a, util.constant_like(a, n - 1))
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  arrays = util.broadcast_arrays_of(a, *util.promote_dtypes(*map(util.as_array, choices)))
  a, choices = arrays[0], arrays[1:]
  if not n:
    return a
  out = lax.select_n(lax.convert_element_type(a, dtypes.int32), *choices)
  # (jax indexes jnp.array(choices), an array made from a list: strongly typed)
  return lax.convert_element_type(out, aval_of(out).dtype, False)


@tree_util.accepts_array_leaves((1, 2))
def select(condlist, choicelist, default=0):
  """choicelist[i] where condlist[i] is the first true condition, else `default`.

  As jax's: the conditions (of any dtype, read as booleans) are stacked behind a false one, their
  argmax indexes `lax.select_n` over (default, *choicelist) (XLA sees one select_n of an index,
  not a chain of selects it could fold differently).

  Args:
    condlist: the conditions (arrays, broadcast together and with the choices).
    choicelist: the values, one per condition.
    default: the value where no condition holds.

  Returns:
    An array of the promoted dtype of default and the choices.

  Example:
    >>> x = jnp.arange(4)
    >>> jnp.select([x < 1, x > 2], [x, -x], 9)
    Array([ 0,  9,  9, -3], dtype=int32)
  """
  from revax._src.numpy.reductions import argmax
  from revax._src.numpy.shape_ops import astype, broadcast_arrays, stack
  if len(condlist) != len(choicelist):
    raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                     f"{len(choicelist)})")
  if len(condlist) == 0:
    raise ValueError("condlist must be non-empty")
  util.check_arraylike("select", *condlist, *choicelist, default)
  conds = [util.as_array(c) for c in condlist]
  choices = util.promote_dtypes(util.as_array(default), *map(util.as_array, choicelist))
  conditions = stack(broadcast_arrays(False, *conds))
  idx = argmax(astype(conditions, bool), axis=0)
  return lax.select_n(*broadcast_arrays(idx, *choices))


def piecewise(x, condlist, funclist, *args, **kw):
  """funclist[i](x) where condlist[i] is true (the last true condition wins, as in NumPy); an
  extra last function applies where none is true. Entries of funclist may be constants.

  jax's algorithm: the conditions read as asarray(condlist, dtype=bool), the index of the last
  true one (argmax of their cumulative sum behind a false row), and `vectorize(lax.switch)` over
  the elements: every function sees one element and its result (`.astype(x.dtype)`) is that
  element's value -- a branch returning an array makes the result that array per element, and
  branches of different types are lax.switch's TypeError, as in jax.

  Args:
    x: the input array.
    condlist: boolean conditions (arrays broadcastable against x, or scalars).
    funclist: functions f(x, *args, **kw) or constants, one per condition (plus a default).
    *args, **kw: passed to each function.

  Returns:
    An array of x's dtype.

  Example:
    >>> x = jnp.array([-2., 0., 3.])
    >>> jnp.piecewise(x, [x < 0, x > 0], [lambda x: -x, lambda x: x * 10, 7.])
    Array([ 2.,  7., 30.], dtype=float32)
  """
  from revax._src.lax.control_flow import switch
  from revax._src.numpy.creation import array, asarray, zeros_like
  from revax._src.numpy.functional import vectorize
  from revax._src.numpy.reductions import argmax, cumsum
  from revax._src.numpy.shape_ops import concatenate
  util.check_arraylike("piecewise", x)
  x = util.as_array(x)
  nc, nf = len(condlist), len(funclist)
  if nf == nc + 1:
    funclist = list(funclist[-1:]) + list(funclist[:-1])
  elif nf == nc:
    funclist = [0] + list(funclist)
  else:
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; "
                     f"got {nf}")
  conds = asarray(condlist, dtype=bool)
  indices = argmax(cumsum(concatenate([zeros_like(conds[:1]), conds], 0), 0), 0)
  dtype = aval_of(x).dtype

  def call(f):
    return lambda x: f(x, *args, **kw).astype(dtype)

  def const(v):
    return lambda x: array(v, dtype=dtype)
  branches = [call(f) if callable(f) else const(f) for f in funclist]
  return vectorize(switch, excluded=(1,))(indices, branches, x)


def place(arr, mask, vals, *, inplace: bool = True):
  """A copy of `arr` whose elements where `mask` is true take `vals` in order (repeated
  cyclically); `inplace=False` is required since arrays are immutable."""
  from revax._src.numpy.shape_ops import ravel
  if inplace:
    raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  util.check_arraylike("place", arr, mask, vals)
  arr, mask = util.as_array(arr), util.as_array(mask)
  shape = _shape(arr)
  if aval_of(arr).size != aval_of(mask).size:  # (jax's checks)
    raise ValueError("place: arr and mask must be the same size")
  if not aval_of(util.as_array(vals)).size:
    raise ValueError("Cannot place values from an empty array")
  if not aval_of(arr).size:
    return arr
  m = lax.ne(ravel(mask), util.constant_like(mask, 0))
  # (jax scatters the values into arr: the result keeps arr's weak type)
  vals = ravel(lax.convert_element_type(util.as_array(vals), aval_of(arr).dtype,
                                        aval_of(arr).weak_type))
  nv = _shape(vals)[0]
  rank = lax.sub(lax.cumsum(lax.convert_element_type(m, dtypes.int32), 0),
                 util.scalar_constant(1, dtypes.int32))
  rank = lax.rem(lax.max(rank, util.constant_like(rank, 0)), util.constant_like(rank, nv))
  picked = vals[rank]
  return lax.reshape(lax.select_n(m, ravel(arr), picked), shape)


def put(a, ind, v, mode=None, *, inplace: bool = True):
  """A copy of `a` whose flattened elements at `ind` are `v` (broadcast to ind's shape);
  `inplace=False` is required since arrays are immutable.

  Args:
    mode: None (negative indices count from the end, then indices are clipped, as
      unravel_index does), 'clip' or 'wrap'.
  """
  from revax._src.numpy.shape_ops import ravel
  if inplace:
    raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  util.check_arraylike("put", a, ind, v)
  a = util.as_array(a)
  flat = ravel(a)
  n = _shape(flat)[0]
  ind = ravel(util.as_array(ind))
  v = ravel(util.as_array(v))
  ni = _shape(ind)[0]
  if ni == 0:
    return a
  nv = _shape(v)[0]
  if nv != ni:
    if nv == 0:
      return a
    v = v[_int_array(np.arange(ni) % nv)]
  if mode == "wrap":
    ind = lax.rem(lax.add(lax.rem(ind, util.constant_like(ind, n)), util.constant_like(ind, n)),
                  util.constant_like(ind, n))
  elif mode == "clip":
    ind = lax.clamp(util.constant_like(ind, 0), ind, util.constant_like(ind, n - 1))
  elif mode is None:  # as unravel_index does: negative indices count from the end, then clip
    ind = lax.select_n(lax.lt(ind, util.constant_like(ind, 0)), ind,
                       lax.add(ind, util.constant_like(ind, n)))
    ind = lax.clamp(util.constant_like(ind, 0), ind, util.constant_like(ind, n - 1))
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  return lax.reshape(flat.at[ind].set(v), _shape(a))


def put_along_axis(arr, indices, values, axis, inplace: bool = True, *, mode=None):
  """A copy of `arr` with `values` written at `indices` along `axis` (the counterpart of
  take_along_axis); `inplace=False` is required since arrays are immutable."""
  from revax._src.numpy.shape_ops import ravel
  if inplace:
    raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays "
                     "are immutable. Pass inplace=False to instead return an updated array.")
  util.check_arraylike("put_along_axis", arr, indices, values)
  arr = util.as_array(arr)
  if axis is None:
    return lax.reshape(put_along_axis(ravel(arr), ravel(indices), ravel(values), 0,
                                      inplace=False, mode=mode), _shape(arr))
  nd = len(_shape(arr))
  axis = util.canonicalize_axis(axis, nd)
  indices = util.as_array(indices)
  if len(_shape(indices)) != nd:
    raise ValueError(f"indices and arr must have the same number of dimensions; "
                     f"{len(_shape(indices))} vs. {nd}")
  idx_shape = util.broadcast_shapes(
      tuple(1 if d == axis else s for d, s in enumerate(_shape(arr))),
      tuple(1 if d == axis else s for d, s in enumerate(_shape(indices))))
  idx_shape = tuple(_shape(indices)[axis] if d == axis else s for d, s in enumerate(idx_shape))
  index = []
  for d in range(nd):
    if d == axis:
      index.append(util.broadcast_to(indices, idx_shape))
    else:
      index.append(lax.broadcasted_iota(dtypes.int32, idx_shape, d))
  values = util.broadcast_to(lax.convert_element_type(util.as_array(values),
                                                      aval_of(arr).dtype), idx_shape)
  return arr.at[tuple(index)].set(values, mode=mode)

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("block", "rot90", "unstack",))
