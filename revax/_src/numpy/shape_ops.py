"""Shape manipulation: reshape, transpose and friends, joining and splitting, broadcasting.

Everything is a thin layer over lax's shape primitives (reshape, transpose, squeeze,
broadcast_in_dim, rev, concatenate) plus slicing for `split`.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from revax._src import lax, tree_util
from revax._src.core import dtypes, sharding_types
from revax._src.lax import stacking
from revax._src.core import errors as core_errors
from revax._src.core.shape_poly import (InconclusiveDimensionOperation, is_symbolic_dim,
                                         is_symbolic_shape)
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.lax.sharding_constraint import placed
from revax._src.numpy import util
from revax._src.numpy.util import aval_of, canonicalize_axes, canonicalize_axis
from revax._src import tree_util
from revax._src.numpy.util import convert_pytree_operands


def _shape(x):
  return aval_of(x).shape


# --- queries -------------------------------------------------------------------------------------
def shape(a):
  """The shape of an array or scalar (or of anything with a `shape`, or of what its
  `__jax_array__` gives, as in JAX)."""
  if util.is_operand(a):
    return aval_of(a).shape
  if hasattr(a, "shape"):
    return a.shape
  return np.shape(util.from_jax_array(a))


def ndim(a) -> int:
  """The number of dimensions of an array or scalar."""
  return len(shape(a))


def size(a, axis=None) -> int:
  """The number of elements (along `axis`, if given)."""
  s = shape(a)
  if axis is None:
    return math.prod(s)
  return s[canonicalize_axis(axis, len(s))]


# --- reshape -------------------------------------------------------------------------------------
def _compute_newshape(old_shape, newshape, size_error=ValueError):
  """The new shape with its -1 resolved. Sizes that do not fit raise `size_error`: ValueError
  from jnp.reshape, TypeError from the Array.reshape method (as in JAX)."""
  newshape = util.canonicalize_shape(newshape, "reshape shape")
  size_ = math.prod(old_shape)
  unknown = [i for i, d in enumerate(newshape) if d == -1]
  if len(unknown) > 1:
    raise size_error(f"can only specify one unknown axis size with a `-1` value, got {newshape}")
  if any(d < -1 for d in newshape):
    raise size_error(f"reshape shape must not have negative sizes other than -1, got {newshape}")
  if unknown and (is_symbolic_dim(size_) or is_symbolic_shape(newshape)):
    q, r = divmod(size_, math.prod(newshape))  # JAX's rule and message for symbolic sizes
    if is_symbolic_dim(r) or r != 0:
      raise core_errors.InconclusiveDimensionOperation(  # (JAX's core class: no help text)
          f"Cannot divide evenly the sizes of shapes {tuple(old_shape)} and {tuple(newshape)}. "
          f"The remainder {r} should be 0.")
    return tuple(-q if not is_symbolic_dim(d) and d == -1 else d for d in newshape)
  if unknown:
    known = math.prod(d for d in newshape if d != -1)
    if known == 0 or size_ % known:
      raise size_error(f"cannot reshape array of shape {old_shape} (size {size_}) into shape "
                      f"{newshape} because the product of specified axis sizes ({known}) does "
                      f"not evenly divide {size_}")
    newshape = tuple(size_ // known if d == -1 else d for d in newshape)
  if math.prod(newshape) != size_:
    raise size_error(f"cannot reshape array of shape {old_shape} (size {size_}) into shape "
                    f"{newshape} (size {math.prod(newshape)})")
  return newshape


@tree_util.accepts_array_leaves()
def reshape(a, shape=None, order: str = "C", *, copy=None, out_sharding=None):
  """`a` with a new shape of the same size; one dimension may be -1 (inferred).

  Args:
    a: the array.
    shape: an int or a sequence of ints.
    order: 'C' (row-major, default) or 'F' (column-major).
    copy: ignored (arrays are immutable).
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Example:
    >>> jnp.reshape(jnp.arange(6), (2, -1))
    Array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
  """
  # jax raises TypeError for its own arrays; a NumPy array goes through NumPy's reshape there,
  # whose size error is a ValueError
  size_error = ValueError if isinstance(a, (np.ndarray, np.generic)) else TypeError
  return _reshape(a, shape, order, out_sharding, size_error)


def _reshape(a, shape, order, out_sharding, size_error):
  (a,) = util.ensure_arraylike("reshape", a)
  if shape is None:
    raise TypeError("reshape() missing required argument 'shape'")
  old = _shape(a)
  new = _compute_newshape(old, shape, size_error)
  if order == "C":
    if new != old:  # (the reshape takes out_sharding: JAX's asks for one where it must)
      return util.as_array(lax.reshape(a, new, out_sharding=out_sharding))
    return placed(util.as_array(a), out_sharding)
  if order == "F":
    out = lax.reshape(a, new[::-1], dimensions=tuple(reversed(range(len(old)))))
    return placed(lax.transpose(out, tuple(reversed(range(len(new))))), out_sharding)
  raise NotImplementedError(f"reshape: order={order!r} is not supported; use 'C' or 'F'")


@tree_util.accepts_array_leaves()
def ravel(a, order: str = "C", *, out_sharding=None):
  """`a` flattened to one dimension, placed as `out_sharding` says (None: as XLA chooses)."""
  util.check_arraylike("ravel", a)
  return reshape(a, (math.prod(_shape(a)),), order, out_sharding=out_sharding)


# --- transposition -------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def transpose(a, axes=None):
  """`a` with its axes permuted (reversed if `axes` is None).

  Example:
    >>> jnp.transpose(jnp.ones((2, 3, 4)), (1, 0, 2)).shape
    (3, 2, 4)
  """
  util.check_arraylike("transpose", a)
  nd = len(_shape(a))
  if axes is None:
    perm = tuple(reversed(range(nd)))
  else:
    perm = tuple(util.canonicalize_shape(axes, "transpose axes"))
    if len(perm) != nd or sorted(p % nd if -nd <= p < nd else p for p in perm) != list(range(nd)):
      raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                      f"permutation {perm} for operand shape {_shape(a)}.")
    perm = tuple(p % nd for p in perm)
  return lax.transpose(a, perm)


permute_dims = transpose


def matrix_transpose(x, /):
  """Swap the last two axes."""
  util.check_arraylike("matrix_transpose", x)
  nd = len(_shape(x))
  if nd < 2:
    raise ValueError(f"matrix_transpose requires at least 2 dimensions, got shape {_shape(x)}")
  return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


@tree_util.accepts_array_leaves()
def swapaxes(a, axis1: int, axis2: int):
  """`a` with two axes interchanged. The axes index a NumPy permutation, as in jax: an axis out
  of range or not an integer is NumPy's IndexError.

  Example:
    >>> jnp.swapaxes(jnp.ones((2, 3, 4)), 0, -1).shape
    (4, 3, 2)
  """
  util.check_arraylike("swapaxes", a)
  perm = np.arange(len(_shape(a)))
  perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
  return lax.transpose(a, tuple(int(p) for p in perm))


def _index_tuple(x) -> tuple:
  """`x` as a tuple of ints: an integer alone or a sequence of them (jax's ensure_index_tuple)."""
  try:
    return (operator.index(x),)
  except TypeError:
    return tuple(map(operator.index, x))


@tree_util.accepts_array_leaves()
def moveaxis(a, source, destination):
  """`a` with axes `source` moved to positions `destination` (ints or sequences of ints).

  The permutation is built as jax's: a repeated source axis is lax.transpose's TypeError, and
  a repeated destination is taken as jax takes it (each move inserted in order).

  Example:
    >>> jnp.moveaxis(jnp.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
  """
  util.check_arraylike("moveaxis", a)
  nd = len(_shape(a))
  src = tuple(canonicalize_axis(i, nd) for i in _index_tuple(source))
  dst = tuple(canonicalize_axis(i, nd) for i in _index_tuple(destination))
  if len(src) != len(dst):
    raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
  perm = [i for i in range(nd) if i not in src]
  for d, s in sorted(zip(dst, src, strict=True)):
    perm.insert(d, s)
  return lax.transpose(a, tuple(perm))


# --- adding and removing unit axes ----------------------------------------------------------------
@tree_util.accepts_array_leaves()
def expand_dims(a, axis):
  """`a` with new size-1 axes at positions `axis` (of the result)."""
  util.check_arraylike("expand_dims", a)
  axes = axis if isinstance(axis, (tuple, list)) else (axis,)
  out_nd = len(_shape(a)) + len(axes)
  return lax.expand_dims(a, canonicalize_axes(tuple(axes), out_nd))


@tree_util.accepts_array_leaves()
def squeeze(a, axis=None):
  """`a` without its size-1 axes (only those in `axis`, if given)."""
  util.check_arraylike("squeeze", a)
  s = _shape(a)
  if axis is None:
    axes = tuple(i for i, d in enumerate(s) if d == 1)
  else:
    axes = canonicalize_axes(axis, len(s))
    if any(s[i] != 1 for i in axes):
      raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one, "
                       f"got shape={s} and dimensions={axes}")
  return lax.squeeze(a, axes) if axes else util.as_array(a)


@tree_util.accepts_array_leaves("all")
def atleast_1d(*arys):
  """Arrays with at least one dimension (a list if more than one is given)."""
  out = [_at_least(a, 1, "atleast_1d") for a in arys]
  return out[0] if len(out) == 1 else out


@tree_util.accepts_array_leaves("all")
def atleast_2d(*arys):
  """Arrays with at least two dimensions (new axes in front)."""
  out = [_at_least(a, 2, "atleast_2d") for a in arys]
  return out[0] if len(out) == 1 else out


@tree_util.accepts_array_leaves("all")
def atleast_3d(*arys):
  """Arrays with at least three dimensions: (N,) -> (1, N, 1), (M, N) -> (M, N, 1)."""
  def three(a):
    a = util.as_array(a)
    nd = len(_shape(a))
    if nd == 0:
      return lax.expand_dims(a, (0, 1, 2))
    if nd == 1:
      return lax.expand_dims(a, (0, 2))
    if nd == 2:
      return lax.expand_dims(a, (2,))
    return a
  for a in arys:
    util.check_arraylike("atleast_3d", a)
  out = [three(a) for a in arys]
  return out[0] if len(out) == 1 else out


def _at_least(a, n, fun_name):
  util.check_arraylike(fun_name, a)
  a = util.as_array(a)
  nd = len(_shape(a))
  return lax.expand_dims(a, tuple(range(n - nd))) if nd < n else a


# --- broadcasting --------------------------------------------------------------------------------
def broadcast_shapes(*shapes):
  """The shape that arrays of `shapes` broadcast to."""
  return util.broadcast_shapes(*(util.canonicalize_shape(s) for s in shapes))


@tree_util.accepts_array_leaves()
def broadcast_to(array, shape, *, out_sharding=None):
  """`array` broadcast to `shape` (NumPy's rules), placed as `out_sharding` says (None: as XLA
  chooses)."""
  util.check_arraylike("broadcast_to", array)
  return placed(util.as_array(util.broadcast_to(array, util.canonicalize_shape(shape))),
                out_sharding)


@tree_util.accepts_array_leaves("all")
def broadcast_arrays(*args):
  """The arguments broadcast against each other, as a list."""
  util.check_arraylike("broadcast_arrays", *args)
  return [util.as_array(a) for a in util.broadcast_arrays_of(*args)]


# --- reversing -----------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def flip(m, axis=None):
  """`m` with the order of elements reversed along `axis` (all axes if None)."""
  util.check_arraylike("flip", m)
  axes = canonicalize_axes(axis, len(_shape(m)))
  return lax.rev(m, axes) if axes else util.as_array(m)


def fliplr(m):
  """`m` reversed along axis 1."""
  util.check_arraylike("fliplr", m)
  if len(shape(m)) < 2:
    raise ValueError("fliplr requires an array of at least 2 dimensions")
  return flip(m, 1)


def flipud(m):
  """`m` reversed along axis 0."""
  util.check_arraylike("flipud", m)
  if len(shape(m)) < 1:
    raise ValueError("flipud requires an array of at least 1 dimension")
  return flip(m, 0)


# --- joining -------------------------------------------------------------------------------------
def _check_sequence(fun_name, arrays):
  if util.is_operand(arrays) and not isinstance(arrays, (bool, int, float, complex)):
    return list(arrays)  # an array: its rows, as NumPy does
  if not isinstance(arrays, (list, tuple)):
    raise TypeError(f"{fun_name} requires a sequence of arrays, got {type(arrays).__name__}")
  return util.ensure_arraylike(fun_name, *arrays)


@tree_util.accepts_array_leaves()
def concatenate(arrays, axis=0, dtype=None):
  """Join arrays along an existing axis (`axis=None` joins their flattened forms).

  Example:
    >>> jnp.concatenate([jnp.zeros((2, 3)), jnp.ones((1, 3))]).shape
    (3, 3)
  """
  arrays = _check_sequence("concatenate", arrays)
  if not arrays:
    raise ValueError("Need at least one array to concatenate.")
  if axis is None:
    arrays = [ravel(a) for a in arrays]
    axis = 0
  shapes = [_shape(a) for a in arrays]
  if not shapes[0]:  # (as jax's: only the first; another 0-d one has a different rank below)
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = canonicalize_axis(axis, len(shapes[0]))
  if len({len(s) for s in shapes}) != 1:
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{', '.join(map(str, shapes))}.")
  arrays = util.promote_dtypes(*arrays)
  if dtype is not None:
    arrays = [lax.convert_element_type(a, util.canonical_dtype_arg(dtype)) for a in arrays]
  if len(arrays) == 1:
    return util.as_array(arrays[0])
  return lax.concatenate([util.as_array(a) for a in arrays], axis)


concat = concatenate


@tree_util.accepts_array_leaves()
def stack(arrays, axis: int = 0, dtype=None):
  """Join arrays of one shape along a new axis.

  Example:
    >>> jnp.stack([jnp.zeros(3), jnp.ones(3)], axis=1).shape
    (3, 2)
  """
  arrays = _check_sequence("stack", arrays)
  if not arrays:
    raise ValueError("Need at least one array to stack.")
  shapes = [_shape(a) for a in arrays]
  if len({len(s) for s in shapes}) != 1:
    raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got "
                     f"{', '.join(map(str, shapes))}.")
  if len(set(shapes)) != 1:
    raise ValueError(f"All input arrays must have the same shape, got "
                     f"{', '.join(map(str, shapes))}.")
  axis = canonicalize_axis(axis, len(shapes[0]) + 1)
  if dtype is not None:  # (as jax's: each converted to `dtype`, else promoted, then lax.stack)
    arrays = [lax.convert_element_type(a, util.canonical_dtype_arg(dtype)) for a in arrays]
  else:
    arrays = util.promote_dtypes(*arrays)
  return stacking.stack([util.as_array(a) for a in arrays], axis)


@tree_util.accepts_array_leaves()
def hstack(tup, dtype=None):
  """Join arrays horizontally: along axis 1, or axis 0 for 1-d arrays."""
  arrays = [atleast_1d(a) for a in _check_sequence("hstack", tup)]
  if not arrays:
    raise ValueError("Need at least one array to concatenate.")
  return concatenate(arrays, 0 if len(_shape(arrays[0])) == 1 else 1, dtype)


@tree_util.accepts_array_leaves()
def vstack(tup, dtype=None):
  """Join arrays vertically: along axis 0, 1-d arrays becoming rows."""
  arrays = [atleast_2d(a) for a in _check_sequence("vstack", tup)]
  return concatenate(arrays, 0, dtype)


row_stack = vstack


def dstack(tup, dtype=None):
  """Join arrays along axis 2 (after making them at least 3-d)."""
  arrays = [atleast_3d(a) for a in _check_sequence("dstack", tup)]
  return concatenate(arrays, 2, dtype)


def column_stack(tup):
  """Join 1-d arrays as columns of a 2-d array (2-d arrays are joined along axis 1)."""
  arrays = []
  for a in _check_sequence("column_stack", tup):
    a = util.as_array(a)
    arrays.append(lax.expand_dims(atleast_1d(a), (1,)) if len(_shape(a)) < 2 else a)
  return concatenate([atleast_2d(a) for a in arrays], 1)


# --- splitting -----------------------------------------------------------------------------------
def _split(fun_name, ary, indices_or_sections, axis, equal):
  util.check_arraylike(fun_name, ary)
  s = _shape(ary)
  axis = canonicalize_axis(axis, len(s))
  n = s[axis]
  if isinstance(indices_or_sections, (int, np.integer)):
    sections = operator.index(indices_or_sections)
    if sections <= 0:
      raise ValueError("number sections must be larger than 0.")
    if equal and n % sections:
      raise ValueError(f"array split does not result in an equal division: rest is "
                       f"{n % sections}")
    q, r = builtins.divmod(n, sections)
    sizes = [q + 1] * r + [q] * (sections - r)
    bounds = np.cumsum([0] + sizes).tolist()
  else:
    idx = [operator.index(i) for i in util.canonicalize_shape(indices_or_sections)]
    idx = [builtins.min(builtins.max(i + n if i < 0 else i, 0), n) for i in idx]
    bounds = [0] + idx + [n]
  if all(lo <= hi for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)):
    sizes = [hi - lo for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    return stacking.split(util.as_array(ary), sizes, axis)
  # indices out of order: jax refuses them; revax slices as NumPy does (pieces may overlap)
  outs = []
  for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
    hi = builtins.max(hi, lo)
    start = [0] * len(s)
    limit = list(s)
    start[axis], limit[axis] = lo, hi
    outs.append(lax.slice(ary, tuple(start), tuple(limit)))
  return outs


@tree_util.accepts_array_leaves()
def split(ary, indices_or_sections, axis: int = 0):
  """Split into equal sections (an int) or at the given indices (a sequence), as np.split.

  Example:
    >>> jnp.split(jnp.arange(6), 3)  # three arrays of 2
    [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4, 5], dtype=int32)]
    >>> jnp.split(jnp.arange(6), [1, 4])  # sizes 1, 3, 2
    [Array([0], dtype=int32), Array([1, 2, 3], dtype=int32), Array([4, 5], dtype=int32)]
  """
  return _split("split", ary, indices_or_sections, axis, equal=True)


@tree_util.accepts_array_leaves()
def array_split(ary, indices_or_sections, axis: int = 0):
  """Like `split`, but an int number of sections need not divide the axis."""
  return _split("array_split", ary, indices_or_sections, axis, equal=False)


def hsplit(ary, indices_or_sections):
  """Split along axis 1 (axis 0 for 1-d arrays)."""
  return split(ary, indices_or_sections, 0 if len(shape(ary)) == 1 else 1)


def vsplit(ary, indices_or_sections):
  """Split along axis 0."""
  return split(ary, indices_or_sections, 0)


# --- repetition ----------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def tile(A, reps):
  """`A` repeated `reps` times along each axis."""
  util.check_arraylike("tile", A)
  reps = util.canonicalize_shape(reps, "tile reps")
  A = util.as_array(A)
  s = _shape(A)
  nd = builtins.max(len(s), len(reps))
  s = (1,) * (nd - len(s)) + s
  reps = (1,) * (nd - len(reps)) + tuple(reps)
  if len(s) > len(_shape(A)):  # (as jax's: leading size-1 dimensions added first)
    A = lax.expand_dims(A, tuple(range(len(s) - len(_shape(A)))))
  return stacking.tile(A, reps)


@tree_util.accepts_array_leaves()
def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
  """Each element of `a` repeated along `axis` (flattened if None), placed as `out_sharding`
  says (None: as XLA chooses).

  `repeats` is one count for every element or an array of one count per element. The output
  length must be static: counts are then concrete, or `total_repeat_length` gives it (as in
  JAX: a shorter total truncates, a longer one repeats the last element to fill).
  """
  util.check_arraylike("repeat", a, repeats)
  if axis is None:
    a, axis = ravel(a), 0
  a = util.as_array(a)
  s = _shape(a)
  axis = canonicalize_axis(axis, len(s))
  if out_sharding is None and sharding_types.spec_parts(util.aval_of(a))[axis] is not None:
    # (JAX's: a split repeated axis, under a mesh with Explicit axes or not, needs the
    # result's sharding)
    raise ValueError("Please pass sharding to `jnp.repeat` via `out_sharding` parameter.")
  if total_repeat_length is None and np.ndim(repeats) == 0:
    count = operator.index(util.concrete_scalar(repeats, "repeat", "repeats"))
    inter = s[:axis + 1] + (count,) + s[axis + 1:]
    dims = tuple(range(axis + 1)) + tuple(range(axis + 2, len(s) + 1))
    b = lax.broadcast_in_dim(a, inter, dims)
    return lax.reshape(b, s[:axis] + (s[axis] * count,) + s[axis + 1:],
                       out_sharding=out_sharding)
  return _repeat_each(a, repeats, axis, total_repeat_length, out_sharding)


def _repeat_each(a, repeats, axis, total_repeat_length, out_sharding):
  """repeat() with a count per element: a gather of the source index of each output slot."""
  from revax._src.numpy.indexing import take
  from revax._src.numpy.reductions import cumsum
  from revax._src.numpy.searching import searchsorted
  n = _shape(a)[axis]
  if np.ndim(repeats) > 1 or np.ndim(repeats) == 1 and np.shape(repeats)[0] != n:
    raise ValueError(f"repeat: `repeats` of shape {np.shape(repeats)} does not match the "
                     f"{n} elements along axis {axis}")
  if total_repeat_length is None:
    if isinstance(repeats, Tracer):
      raise ConcretizationTypeError(
          f"repeat requires concrete counts `repeats` (they decide the length of the result), "
          f"got {repeats.aval.str_short()}; pass total_repeat_length to trace them")
    counts = np.broadcast_to(np.asarray(repeats), (n,))
    source = np.repeat(np.arange(n, dtype=np.int32), counts)
  else:
    ends = cumsum(lax.broadcast_in_dim(util.as_array(repeats), (n,), (0,) * np.ndim(repeats)))
    slots = lax.iota(aval_of(ends).dtype, operator.index(total_repeat_length))
    source = lax.min(searchsorted(ends, slots, side="right"), np.asarray(n - 1, np.int32))
  out = take(a, source, axis=axis)
  return out if out_sharding is None else placed(out, out_sharding)


def astype(x, dtype, /, *, copy: bool = False, device=None):
  """`x` converted to `dtype` (complex to real keeps the real part; to bool tests != 0).
  Typed keys convert only to their own dtype (optax's MultiSteps casts its state, keys too,
  to the dtypes it had), as in JAX."""
  if tree_util.is_array_leaf(x):
    return x.as_array(dtype, copy)
  util.check_arraylike("astype", x)
  dtype = util.canonical_dtype_arg(dtype)
  if dtypes.is_complex(aval_of(x).dtype) and np.dtype(dtype) == np.bool_:
    x = lax.ne(x, util.lax_const(x, 0))  # (as jax's: a nonzero imaginary part is True)
  return util.as_array(lax.convert_element_type(x, dtype))


# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays",
                        "flip", "fliplr", "flipud", "matrix_transpose", "ravel", "squeeze",
                        "transpose",))
