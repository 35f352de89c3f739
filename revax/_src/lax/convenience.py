"""jax.lax's convenience functions that compose existing primitives (no new primitive here):
indexing along one dimension, select, reciprocal, batch_matmul, index_take, shape_as_value,
dtype/empty/broadcast_shapes/broadcast_like (slice_in_dim, collapse and associative_scan live
in associative_scan.py).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.shape_poly import is_symbolic_dim
from revax._src.core.trace import Tracer
from revax._src.lax import binary, comparison, conversion, creation, shapes
from revax._src.lax import slicing, standard
from revax._src.lax.associative_scan import _dim, _ndim, _shape, slice_in_dim
from revax._src.lax.dim_value import dim_as_value
from revax._src.lax.dot import dot_general


# --- slicing along one dimension -----------------------------------------------------------------
@tree_util.accepts_array_leaves()
def index_in_dim(operand, index, axis=0, keepdims=True):
  """The `index`-th slice of `operand` along `axis` (a static int, negative from the end)."""
  shape = _shape(operand)
  axis = _dim(axis, len(shape))
  index = operator.index(index)
  if not -shape[axis] <= index < shape[axis]:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {shape[axis]}")
  index %= shape[axis]
  out = slice_in_dim(operand, index, index + 1, 1, axis)
  return out if keepdims else shapes.squeeze(out, (axis,))


def _dynamic_start(index, size, allow_negative_indices):
  if isinstance(index, (float, complex)) or (
      not isinstance(index, int) and not dtypes.is_integer(get_aval(index).dtype)):
    name = dtypes.scalar_dtype(index)[0].name if isinstance(index, (float, complex)) \
        else get_aval(index).dtype.name
    raise TypeError(f"index arguments to dynamic_slice must be integers of the same type, "
                    f"got: {name}")
  if allow_negative_indices:
    dtype = get_aval(index).dtype if hasattr(index, "dtype") or isinstance(index, Tracer) \
        else np.dtype(np.int32)
    if not isinstance(index, (int, np.integer)):
      index = conversion.convert_element_type(index, dtype)
      return comparison.select_n(comparison.lt(index, np.asarray(0, dtype)), index,
                                 binary.add(index, np.asarray(size, dtype)))
    return index + size if index < 0 else index
  return index


@tree_util.accepts_array_leaves()
def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
  """`slice_size` elements of `operand` along `axis` from a traced `start_index` (clamped into
  bounds as dynamic_slice does; negative indices count from the end)."""
  shape = _shape(operand)
  axis = _dim(axis, len(shape))
  start = _dynamic_start(start_index, shape[axis], allow_negative_indices)
  starts = [np.int32(0)] * len(shape)
  starts[axis] = start
  sizes = list(shape)
  sizes[axis] = operator.index(slice_size)
  return slicing.dynamic_slice(operand, starts, sizes)


@tree_util.accepts_array_leaves()
def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
  """The slice of `operand` at a traced `index` along `axis`."""
  out = dynamic_slice_in_dim(operand, index, 1, axis,
                             allow_negative_indices=allow_negative_indices)
  return out if keepdims else shapes.squeeze(out, (_dim(axis, _ndim(operand)),))


@tree_util.accepts_array_leaves((0, 1))
def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
  """`operand` with `update` written along `axis` from a traced `start_index`."""
  shape = _shape(operand)
  axis = _dim(axis, len(shape))
  starts = [np.int32(0)] * len(shape)
  starts[axis] = _dynamic_start(start_index, shape[axis], allow_negative_indices)
  return slicing.dynamic_update_slice(operand, update, starts)


@tree_util.accepts_array_leaves((0, 1))
def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
  """`operand` with the slice at a traced `index` along `axis` replaced by `update` (which may
  lack that axis)."""
  axis = _dim(axis, _ndim(operand))
  if _ndim(update) != _ndim(operand):
    update = shapes.expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)


# --- shapes --------------------------------------------------------------------------------------
def broadcast_like(arr, like_arr):
  """`arr` broadcast (NumPy rules) to the shape of `like_arr`."""
  out_shape = _shape(like_arr)
  in_shape = _shape(arr)
  if broadcast_shapes(in_shape, out_shape) != out_shape:
    raise ValueError(f"Incompatible types for broadcasting: input shape {in_shape} and "
                     f"requested shape {out_shape}")
  offset = len(out_shape) - len(in_shape)
  dims = tuple(range(offset, len(out_shape)))
  kept = [i for i, (d, o) in enumerate(zip(in_shape, out_shape[offset:], strict=True))
          if d == o]
  squeezed = shapes.reshape(arr, tuple(in_shape[i] for i in kept))
  return shapes.broadcast_in_dim(squeezed, out_shape, tuple(dims[i] for i in kept))


def broadcast_shapes(*shapes_):
  """The NumPy broadcast of the given shapes (ValueError if they are incompatible)."""
  shapes_ = [tuple(s) for s in shapes_]
  try:
    return standard.broadcast_shapes(*shapes_, op_name="broadcast_shapes")
  except TypeError as err:  # JAX raises ValueError here
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes_}") from err


def dtype(x):
  """The canonical dtype revax gives `x` (an array, scalar, dtype or type)."""
  from revax._src.core.extended_dtypes import canonicalize_dtype
  if isinstance(x, (Tracer,)) or hasattr(x, "aval"):
    return get_aval(x).dtype
  if isinstance(x, (bool, int, float, complex)):
    return dtypes.scalar_dtype(x)[0]
  if hasattr(x, "dtype"):
    return canonicalize_dtype(x.dtype, allow_extended_dtype=True)
  try:
    return canonicalize_dtype(np.dtype(x), allow_extended_dtype=True)
  except TypeError as err:
    raise TypeError(f"Cannot determine dtype of {x}") from err


def empty(shape, dtype, *, out_sharding=None):
  """An array of `shape` and `dtype` whose contents do not matter (revax fills it with zeros),
  placed as `out_sharding` says (a sharding constraint under jit)."""
  from revax._src.lax.sharding_constraint import placed  # beside lax, imported on use
  return placed(creation.full(shape, 0, dtype), out_sharding)


# --- elementwise ---------------------------------------------------------------------------------
@tree_util.accepts_array_leaves((1, 2))
def select(pred, on_true, on_false):
  """`on_true` where `pred` is true, else `on_false` (select_n with the cases in that order)."""
  return comparison.select_n(pred, on_false, on_true)


def reciprocal(x):
  """Elementwise 1 / x."""
  x_dtype = get_aval(x).dtype
  return binary.div(np.asarray(1, x_dtype), x)


def batch_matmul(lhs, rhs, precision=None):
  """Matrix products over leading batch dimensions: (..., m, k) @ (..., k, n)."""
  lnd, rnd = _ndim(lhs), _ndim(rhs)
  if builtins.min(lnd, rnd) < 2:
    raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {lnd}, {rnd}")
  if lnd != rnd:
    raise ValueError(f"Arguments to batch_matmul must have same ndim, got {lnd}, {rnd}")
  batch = tuple(range(lnd - 2))
  return dot_general(lhs, rhs, (((lnd - 1,), (rnd - 2,)), (batch, batch)),
                         precision=precision)


def shape_as_value(shape):
  """A shape as an integer array: its sizes, symbolic ones (under shape polymorphism) as traced
  values (dim_as_value); a concrete shape gives a NumPy array, as JAX's.

  Args:
    shape: a sequence of ints and symbolic dimensions.

  Returns:
    A 1-d int32 array of the sizes (int64 where a size needs it and x64 is on).

  Example:
    >>> lax.shape_as_value((2, 3))
    array([2, 3], dtype=int32)
  """
  shape = tuple(shape)
  dtype = np.dtype(np.int32)
  for d in shape:
    if is_symbolic_dim(d):
      dtype = dtypes.default_int_dtype()
      break
    if d > np.iinfo(np.int32).max:
      dtype = np.dtype(np.int64)
      break
  if not shape:
    return creation.full((0,), 0, dtype)
  if not any(map(is_symbolic_dim, shape)):
    return np.asarray(shape, dtype)
  dims = [shapes.expand_dims(conversion.convert_element_type(dim_as_value(d), dtype), (0,))
          for d in shape]
  return shapes.concatenate(dims, 0)


def index_take(src, idxs, axes):
  """`src` indexed by the index arrays `idxs` (one per axis in `axes`, all of one shape, taken
  modulo the axis size), as NumPy's `src[idxs[0], idxs[1], ...]` along those axes."""
  src_shape = _shape(src)
  axes = tuple(operator.index(a) for a in axes)
  if len(idxs) != len(axes):
    raise ValueError(f"index_take needs one index array per axis, got {len(idxs)} and {axes}")
  indices = shapes.concatenate([shapes.expand_dims(i, (1,)) for i in idxs], 1)
  idx_dtype = get_aval(indices).dtype
  sizes = np.array([src_shape[a] for a in axes], idx_dtype)
  indices = binary.rem(binary.add(binary.rem(indices, sizes), sizes), sizes)  # non-negative
  slice_sizes = tuple(1 if i in axes else d for i, d in enumerate(src_shape))
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=tuple(range(1, len(src_shape) - len(axes) + 1)),
      collapsed_slice_dims=axes, start_index_map=axes)
  return slicing.gather(src, indices, dnums, slice_sizes)
