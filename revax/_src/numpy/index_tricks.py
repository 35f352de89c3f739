"""Index helpers: unravel_index and ravel_multi_index, and NumPy's indexing objects r_, c_,
mgrid, ogrid, s_ and index_exp.

`r_[...]` and `c_[...]` concatenate arrays, scalars and slices (a slice `a:b:c` is arange, and a
complex step `a:b:nj` is linspace with n points); a leading string 'axis[,ndmin[,trans1d]]'
chooses how. `mgrid`/`ogrid` build dense/open coordinate grids from slices.
"""
from __future__ import annotations


import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.trace import Tracer
from revax._src.core.errors import ConcretizationTypeError
from revax._src.numpy import util
from revax._src.numpy.util import aval_of

s_ = np.s_
index_exp = np.index_exp


def unravel_index(indices, shape):
  """The coordinates in an array of `shape` of the given flat indices, computed as jax's: a
  chain of `divmod`s from the last dimension, then indices past the end clipped to the last
  position and those before -size to the first (negative ones count from the end). Like jax's it
  takes any real indices (float ones give float coordinates) and keeps their weak types.

  Args:
    indices: an integer (or real) scalar or array of flat indices.
    shape: a scalar or a 1-d sequence of dimension sizes.

  Returns:
    A tuple of arrays, one per dimension of `shape`, of the shape of `indices`.

  Example:
    >>> jnp.unravel_index(jnp.array([5, -1, 7]), (2, 3))
    (Array([1, 1, 1], dtype=int32), Array([2, 2, 2], dtype=int32))
  """
  from revax._src.numpy.ufuncs import divmod as divmod_, where
  (indices,) = util.ensure_arraylike("unravel_index", indices)
  indices = util.as_array(indices)
  try:
    shape = list(shape)
  except TypeError:
    shape = [shape]
  if any(np.ndim(s) != 0 for s in shape):
    raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
  out = [0] * len(shape)
  for i, s in reversed(list(enumerate(shape))):
    indices, out[i] = divmod_(indices, s)
  oob_pos = lax.gt(indices, util.lax_const(indices, 0))
  if dtypes.is_unsigned_integer(aval_of(indices).dtype):  # (never out of bounds below)
    oob_neg = util.as_array(False)
  else:
    oob_neg = lax.lt(indices, util.lax_const(indices, -1))
  return tuple(where(oob_pos, s - 1, where(oob_neg, 0, i)) for s, i in zip(shape, out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C", *, dtype=None):
  """The flat indices of the coordinates `multi_index` in an array of shape `dims`.

  Args:
    mode: 'raise' (coordinates must be concrete and in bounds), 'wrap' or 'clip'.
    order: 'C' (row-major) or 'F' (column-major).
  """
  if len(multi_index) != len(dims):
    raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
  util.check_arraylike("ravel_multi_index", *multi_index)
  dims = util.canonicalize_shape(dims)
  if order not in ("C", "F"):
    raise ValueError("only 'C' or 'F' order is permitted")
  idx = [util.as_array(i) for i in multi_index]
  for i in idx:
    if not dtypes.is_integer(aval_of(i).dtype):
      raise TypeError(f"only int indices permitted, got {aval_of(i).dtype}")
  out_dtype = util.canonical_dtype_arg(dtype) or dtypes.default_int_dtype()
  idx = [lax.convert_element_type(i, out_dtype) for i in idx]
  if mode == "raise":
    for i, d in zip(idx, dims, strict=True):
      if isinstance(i, Tracer):
        # a TypeError (ConcretizationTypeError), as JAX's
        raise ConcretizationTypeError(
            "ravel_multi_index with mode='raise' needs concrete indices (it checks their "
            "bounds), got a traced array: use mode='wrap' or mode='clip' under jit.")
      value = np.asarray(i)
      if value.size and (value.min() < 0 or value.max() >= d):
        raise ValueError("invalid entry in coordinates array")
  elif mode == "clip":
    idx = [lax.clamp(util.constant_like(i, 0), i, util.constant_like(i, d - 1))
           for i, d in zip(idx, dims, strict=True)]
  elif mode == "wrap":
    idx = [lax.rem(lax.add(lax.rem(i, util.constant_like(i, d)), util.constant_like(i, d)),
                   util.constant_like(i, d)) for i, d in zip(idx, dims, strict=True)]
  else:
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
  pairs = list(zip(idx, dims, strict=True))
  if order == "F":
    pairs = pairs[::-1]
  out = util.scalar_constant(0, out_dtype)
  for i, d in pairs:
    out = lax.add(lax.mul(out, util.constant_like(out, d)), i)
  return util.broadcast_to(out, util.broadcast_shapes(*(aval_of(i).shape for i in idx))) \
      if idx else out


def _slice_to_array(s, fun_name):
  from revax._src.numpy.creation import arange, linspace
  start = 0 if s.start is None else s.start
  step = 1 if s.step is None else s.step
  stop = s.stop
  if stop is None:
    raise ValueError(f"{fun_name}: a slice needs a stop value, got {s}")
  for v in (start, stop, step):
    if isinstance(v, Tracer):
      raise ValueError(f"{fun_name}: slice bounds must be concrete, got {v!r}")
  if isinstance(step, complex):
    return linspace(start, stop, int(abs(step)), endpoint=True)
  return arange(start, stop, step)


class _Grid:
  """mgrid (dense) and ogrid (sparse) coordinate grids from slices."""

  def __init__(self, sparse: bool, name: str):
    self.sparse = sparse
    self.name = name

  def __getitem__(self, key):
    from revax._src.numpy.numeric import meshgrid
    from revax._src.numpy.shape_ops import stack
    if isinstance(key, slice):
      return _slice_to_array(key, self.name)
    arrays = [_slice_to_array(k, self.name) for k in key]
    arrays = util.promote_dtypes(*arrays)
    grids = meshgrid(*arrays, indexing="ij", sparse=self.sparse)
    if self.sparse:
      return grids
    if not grids:
      return util.full_of((0,), 0, dtypes.default_int_dtype())
    return stack(grids, 0)

  def __repr__(self):
    return f"revax.numpy.{self.name}"


mgrid = _Grid(sparse=False, name="mgrid")
ogrid = _Grid(sparse=True, name="ogrid")


class _Concatenator:
  """r_ and c_: concatenation of arrays, scalars and slices along an axis."""

  def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
    self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

  def __getitem__(self, key):
    from revax._src.numpy.shape_ops import concatenate
    items = key if isinstance(key, tuple) else (key,)
    axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
    if items and isinstance(items[0], str):
      directive, items = items[0], items[1:]
      if directive in ("r", "c"):
        raise NotImplementedError(f"{self.name}: the matrix directives 'r' and 'c' are not "
                                  f"supported (revax has no matrix class)")
      parts = [int(p) for p in directive.split(",")]
      axis = parts[0]
      if len(parts) > 1:
        ndmin = parts[1]
      if len(parts) > 2:
        trans1d = parts[2]
      if len(parts) > 3:
        raise ValueError(f"{self.name}: too many values in directive {directive!r}")
    arrays = []
    for item in items:
      if isinstance(item, slice):
        arr = _slice_to_array(item, self.name)
      elif isinstance(item, str):
        raise ValueError(f"{self.name}: a string directive must come first, got {item!r}")
      else:
        util.check_arraylike(self.name, item)
        arr = util.as_array(item)
      arrays.append(self._promote_ndim(arr, ndmin, trans1d))
    if not arrays:
      return util.full_of((0,), 0, dtypes.default_float_dtype())
    arrays = util.promote_dtypes(*arrays)
    return concatenate(arrays, axis)

  @staticmethod
  def _promote_ndim(arr, ndmin, trans1d):
    nd = aval_of(arr).ndim
    if nd >= ndmin:
      return arr if nd else lax.reshape(arr, (1,))
    shape = aval_of(arr).shape
    new = (1,) * (ndmin - nd) + shape
    arr = lax.reshape(arr, new)
    if trans1d != -1 and nd:
      # move the original dimensions so they start at position trans1d
      trans1d = trans1d % ndmin
      old = list(range(ndmin - nd, ndmin))
      ones = list(range(ndmin - nd))
      order = ones[:trans1d] + old + ones[trans1d:]
      order = order[:ndmin]
      arr = lax.transpose(arr, tuple(order))
    return arr

  def __len__(self):
    return 0

  def __repr__(self):
    return f"revax.numpy.{self.name}"


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")
