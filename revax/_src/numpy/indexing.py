"""NumPy indexing (`x[idx]`) and functional updates (`x.at[idx].set(v)`), with JAX's semantics.

An index is normalized in four steps: Python-level checks (no lists, no strings, no floats, one
Ellipsis), `None` and scalar bools become new unit axes, slices are applied with `lax.slice` (and
`lax.rev` for negative steps), and what remains per axis is either a whole axis, an integer, or an
integer array. Integers alone are a `slice`/`dynamic_slice` plus `squeeze`; integer arrays (with
the integers among them) follow NumPy's advanced-indexing rules and become one `gather`.

Out-of-bound integer indices are clamped when reading (JAX's default; `mode='fill'` gives a fill
value instead) and dropped when updating (`mode='clip'` clamps them instead). Boolean masks must
be concrete (they decide the result's shape); a traced mask raises `NonConcreteBooleanIndexError`.

Updates index a flat iota with the same machinery to find the positions they write, and scatter
the values there: one code path for every kind of index.
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes, mesh_context
from revax._src.core.avals import ShapedArray
from revax._src.core.errors import NonConcreteBooleanIndexError
from revax._src.core.shape_poly import is_symbolic_dim, symbolic_reverse_slice, symbolic_slice
from revax._src.core.trace import ConcretizationTypeError, Tracer
from revax._src.lax import convenience
from revax._src.lax.scatter_apply import scatter_apply
from revax._src.lax.sharding_constraint import placed
from revax._src.lax.state_indexing import Slice
from revax._src.core import sharding_types as st
from revax._src.numpy import indexing_sharding as ish
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.runtime.array import Array
from revax._src import tree_util
from revax._src.numpy.util import convert_pytree_operands


_FULL = slice(None)


# --- step 1: Python-level normalization ---------------------------------------------------------
def _is_int_scalar(i) -> bool:
  return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _check_element(i, pos):
  if isinstance(i, str):
    raise TypeError(f"revax does not support string indexing; got idx={i!r}")
  if isinstance(i, (list,)):
    raise TypeError("Using a non-tuple sequence for multidimensional indexing is not allowed; use "
                    "`arr[array(seq)]` instead of `arr[seq]`.")
  if isinstance(i, tuple):
    raise TypeError(f"Indexer must be an integer, slice, None, Ellipsis or array; got a nested "
                    f"tuple {i!r} at position {pos}")
  if isinstance(i, slice):
    for part in (i.start, i.stop, i.step):
      if part is not None and (isinstance(part, Tracer) or not _static_int_like(part)):
        raise IndexError(f"Slice entries must be static integers. Got {i} at position {pos}")
    return
  if i is None or i is Ellipsis or isinstance(i, (bool, np.bool_)) or _is_int_scalar(i):
    return
  if isinstance(i, Slice):  # revax.ds(start, size, stride): a static size and stride
    if not (_is_int_scalar(i.size) and _is_int_scalar(i.stride)):
      raise IndexError(f"the size and stride of revax.ds must be static integers: {i}")
    return
  if isinstance(i, (Array, Tracer, np.ndarray)):
    dt = aval_of(i).dtype
    if not (dtypes.is_integer(dt) or dtypes.is_bool(dt)):
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {dt.name}")
    return
  if isinstance(i, (float, complex, np.floating, np.complexfloating)):
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                    f"{np.asarray(i).dtype.name}")
  raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and integer "
                   f"or boolean arrays are valid indices. Got {i!r} of type {type(i).__name__} "
                   f"at position {pos}")


def _sequence_index(seq):
  """A list or tuple inside an index tuple, as an array (an empty one as int32)."""
  from revax._src.numpy.creation import array
  out = array(seq)
  if not aval_of(out).size and not dtypes.is_integer(aval_of(out).dtype):
    out = lax.convert_element_type(out, np.int32)
  return out


def _static_int_like(v) -> bool:
  if is_symbolic_dim(v):
    return True
  try:
    operator.index(v)
    return True
  except (TypeError, ConcretizationTypeError):
    return False


def _expand_bool_masks(idx):
  """Concrete bool arrays become the integer arrays of their nonzero positions."""
  out = []
  for i in idx:
    if isinstance(i, (Array, Tracer, np.ndarray)) and dtypes.is_bool(aval_of(i).dtype):
      if isinstance(i, Tracer) and i.to_concrete_value() is not None:
        i = i.to_concrete_value()
      if isinstance(i, Tracer):
        raise NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got {i.aval.str_short()}. A traced mask "
            "would make the result's shape depend on traced values: use "
            "revax.numpy.where(mask, x, other) instead.")
      value = np.asarray(i)
      if value.ndim == 0:
        out.append(bool(value))
      else:
        out.append(_BoolMask(value))
    else:
      out.append(i)
  return out


class _BoolMask:
  """A concrete boolean mask, expanded once its axes are known."""

  def __init__(self, value):
    self.value = value


def _normalize(ndim: int, idx):
  """The index as a tuple with one entry per axis of the (None-expanded) operand."""
  if not isinstance(idx, tuple):
    idx = (idx,)
  else:  # inside a tuple, lists and tuples are integer (or boolean) arrays, as in JAX and NumPy
    idx = tuple(_sequence_index(i) if isinstance(i, (list, tuple)) else i for i in idx)
  for pos, i in enumerate(idx):
    _check_element(i, pos)
  idx = _expand_bool_masks(idx)
  if sum(i is Ellipsis for i in idx) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  used = sum(i.value.ndim if isinstance(i, _BoolMask) else 1 for i in idx
             if i is not None and i is not Ellipsis and not isinstance(i, (bool, np.bool_)))
  if used > ndim:
    raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {used} were indexed")
  out = []
  for i in idx:
    if i is Ellipsis:
      out.extend([_FULL] * (ndim - used))
    else:
      out.append(i)
  if not any(i is Ellipsis for i in idx):
    out.extend([_FULL] * (ndim - used))
  return out


# --- steps 2 and 3: new axes, slices ---------------------------------------------------------------
class _NewAxis:
  def __init__(self, empty: bool):
    self.empty = empty


def _expand_new_axes(x, idx):
  """Insert unit axes for None and scalar bools; they become whole-axis (or empty) slices."""
  out, dim, new_dims = [], 0, []
  for i in idx:
    if i is None or isinstance(i, (bool, np.bool_)):
      new_dims.append(dim)
      out.append(slice(0, 0) if i is False or (isinstance(i, np.bool_) and not i) else _FULL)
      dim += 1
    elif isinstance(i, _BoolMask):
      shape = aval_of(x).shape
      k = i.value.ndim
      mask_shape = tuple(shape[d] for d in range(dim - len(new_dims),
                                                 dim - len(new_dims) + k))
      if i.value.shape != mask_shape:
        raise IndexError(f"boolean index did not match indexed array: the mask has shape "
                         f"{i.value.shape} but the indexed axes have shape {mask_shape}")
      out.extend(util.as_array(np.asarray(n, dtypes.int32)) for n in np.nonzero(i.value))
      dim += k
    else:
      out.append(i)
      dim += 1
  if new_dims:
    x = lax.expand_dims(x, tuple(new_dims))
  return x, out


def _apply_dynamic_slices(x, idx):
  """Apply the `revax.ds` slices of the index (a start that may be traced, clamped so the
  window fits, as a dynamic slice does); they become whole-axis entries."""
  if not any(isinstance(i, Slice) for i in idx):
    return x, idx
  out = []
  for d, i in enumerate(idx):
    if not isinstance(i, Slice):
      out.append(i)
      continue
    window = (i.size - 1) * i.stride + 1 if i.size else 0
    x = convenience.dynamic_slice_in_dim(x, i.start, window, axis=d)
    if i.stride != 1:
      x = convenience.slice_in_dim(x, 0, window, i.stride, axis=d)
    out.append(_FULL)
  return x, out


def _apply_slices(x, idx):
  """Apply the slices of the index; they become whole-axis entries."""
  shape = aval_of(x).shape
  start, limit, strides, reverse = [0] * len(shape), list(shape), [1] * len(shape), []
  reverse_first = []  # symbolic sizes: x[::-k] is rev(x)[::k] (the sizes print as JAX's)
  gathered = []  # symbolic sizes, a negative step and a start or stop: a gather (as JAX)
  out, changed = [], False
  for d, i in enumerate(idx):
    if not isinstance(i, slice):
      out.append(i)
      continue
    out.append(_FULL)
    if i == _FULL:
      continue
    changed = True
    if any(is_symbolic_dim(v) for v in (shape[d], i.start, i.stop, i.step)):
      if i.step is not None and operator.index(i.step) < 0 and (
          i.start is not None or i.stop is not None):
        gathered.append((d, *symbolic_reverse_slice(i, shape[d])))
        continue
      start[d], limit[d], strides[d], backwards = symbolic_slice(i, shape[d])
      if backwards:
        reverse_first.append(d)
      continue
    lo, hi, step = slice(*(None if p is None else operator.index(p)
                           for p in (i.start, i.stop, i.step))).indices(shape[d])
    m = len(range(lo, hi, step))
    if m == 0:
      start[d], limit[d] = 0, 0
    elif step > 0:
      start[d], limit[d], strides[d] = lo, lo + (m - 1) * step + 1, step
    else:
      last = lo + (m - 1) * step
      start[d], limit[d], strides[d] = last, lo + 1, -step
      reverse.append(d)
  if reverse_first:
    x = lax.rev(x, tuple(reverse_first))
  if changed:
    x = lax.slice(x, tuple(start), tuple(limit),
                  None if all(s == 1 for s in strides) else tuple(strides))
    if reverse:
      x = lax.rev(x, tuple(reverse))
  for d, first, step, size in gathered:
    x = _take_positions(x, d, first, step, size)
  return x, out


def _take_positions(x, d, first, step, size):
  """x's elements first, first + step, ... (`size` of them) along axis d: one gather of an
  iota of positions, as JAX reads a strided slice of a symbolic dimension."""
  shape = aval_of(x).shape
  dt = _index_dtype(shape[d])
  positions = lax.add(util.scalar_constant(first, dt),
                      lax.mul(util.scalar_constant(step, dt), lax.iota(dt, size)))
  dnums = lax.GatherDimensionNumbers(
      offset_dims=tuple(range(d)) + tuple(range(d + 1, len(shape))), collapsed_slice_dims=(d,),
      start_index_map=(d,))
  slice_sizes = tuple(1 if k == d else n for k, n in enumerate(shape))
  return lax.gather(x, lax.expand_dims(positions, (1,)), dnums, slice_sizes,
                    mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


# --- step 4: integers and integer arrays ---------------------------------------------------------
def _index_dtype(n: int):
  """int32, or int64 (with x64) for axes too long for int32."""
  if is_symbolic_dim(n):
    return dtypes.default_int_dtype()
  return dtypes.int64 if n >= 2 ** 31 - 1 and dtypes.default_int_dtype() == dtypes.int64 \
      else dtypes.int32


def _may_wrap(src, dst) -> bool:
  """Whether converting integers of dtype `src` to `dst` can change their value."""
  s, d = dtypes.iinfo(src), dtypes.iinfo(dst)
  return s.max > d.max or s.min < d.min


def _normalize_int_array(i, n, need_valid: bool, wrap: bool = True):
  """(index with negative entries counted from the end, in-bounds mask or None) of an integer
  index array or traced scalar. Out-of-bound entries are left to the gather (which clamps) or
  to the scatter (which drops what the mask sends past the end)."""
  i = util.as_array(i)
  src, dst = aval_of(i).dtype, _index_dtype(n)
  unsigned = dtypes.is_unsigned_integer(src)
  if not dtypes.is_bool(src) and _may_wrap(src, dst):
    # Clamp in the index's own dtype first: converting uint32(2**31) or int64(2**32) to int32
    # would wrap it into a negative (from-the-end) or in-bounds index. [-n-1, n] keeps every
    # out-of-bound entry out of bounds (after counting negatives from the end).
    lo = util.constant_like(i, 0 if unsigned else -n - 1)
    i = lax.clamp(lo, i, util.constant_like(i, n))
  i = lax.convert_element_type(i, dst)
  zero = util.constant_like(i, 0)
  size = util.constant_like(i, n)
  if not unsigned and wrap:
    (i,) = util.broadcast_arrays_of(i)
    i = lax.select_n(lax.lt(i, zero), i, lax.add(i, size))
  if not need_valid:
    return i, None
  return i, lax.bitwise_and(lax.ge(i, zero), lax.lt(i, size))


def _is_static_int(i) -> bool:
  return _is_int_scalar(i) or (isinstance(i, (Array, np.ndarray)) and not aval_of(i).shape)


def _is_scalar_index(i) -> bool:
  return _is_static_int(i) or (isinstance(i, Tracer) and not i.aval.shape)


def _integer_indexing(x, idx, need_valid, wrap=True):
  """x indexed by ints (static or traced) on some axes, whole axes elsewhere. Returns (out,
  valid) with `valid` a Python bool or a traced scalar bool."""
  shape = aval_of(x).shape
  int_dims = [d for d, i in enumerate(idx) if i is not _FULL]
  if not int_dims:
    return x, True
  for d in int_dims:
    if shape[d] == 0:
      raise IndexError(f"index is out of bounds for axis {d} with size 0")
  valid = True
  if all(_is_static_int(idx[d]) for d in int_dims):
    start, limit = [0] * len(shape), list(shape)
    for d in int_dims:
      i = operator.index(idx[d])
      i = i + shape[d] if i < 0 and wrap else i
      valid = valid and 0 <= i < shape[d]
      i = min(max(i, 0), shape[d] - 1)
      start[d], limit[d] = i, i + 1
    out = lax.slice(x, tuple(start), tuple(limit))
  else:
    starts, sizes = [], list(shape)
    for d, i in enumerate(idx):
      if i is _FULL:
        starts.append(util.scalar_constant(0, _index_dtype(max(shape))))
        continue
      i, ok = _normalize_int_array(i, shape[d], need_valid, wrap)
      i = lax.convert_element_type(i, _index_dtype(max(shape)))
      # as JAX: no clamp here (dynamic_slice clamps into bounds; told not to wrap a negative
      # start once more), so checkify's index_checks see the index the user wrote
      starts.append(i)
      sizes[d] = 1
      if need_valid:
        valid = ok if valid is True else lax.bitwise_and(valid, ok)
    out = lax.dynamic_slice(x, starts, tuple(sizes), allow_negative_indices=False)
  return lax.squeeze(out, tuple(int_dims)), valid


def _advanced_indexing(x, idx, need_valid, wrap=True):
  """NumPy advanced indexing by integer arrays (and the integers among them) as one gather.

  Returns (out, valid) where `valid` is a bool array broadcastable to `out` marking the
  elements whose indices were all in bounds.
  """
  shape = aval_of(x).shape
  adv = [d for d, i in enumerate(idx) if i is not _FULL]
  for d in adv:
    if isinstance(idx[d], (Array, Tracer, np.ndarray)) and aval_of(idx[d]).shape and \
        not dtypes.is_integer(aval_of(idx[d]).dtype):
      raise TypeError(f"Indexer must have integer type, got {aval_of(idx[d]).dtype.name}")
  try:
    batch = util.broadcast_shapes(*(aval_of(idx[d]).shape for d in adv))
  except ValueError:
    raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with "
                     f"shapes {' '.join(str(aval_of(idx[d]).shape) for d in adv)}") from None
  rest = [d for d in range(len(shape)) if d not in adv]
  adjacent = adv == list(range(adv[0], adv[-1] + 1))
  p = adv[0] if adjacent else 0  # where the broadcast index dims go in the output
  out_shape = tuple(shape[d] for d in rest[:p]) + batch + tuple(shape[d] for d in rest[p:])
  empty_axes = [d for d in adv if shape[d] == 0]
  if math.prod(batch) and empty_axes:
    if not need_valid:
      raise IndexError(f"index is out of bounds for axis {empty_axes[0]} with size 0")
    # fill/drop modes: every index is out of bounds, so every element is filled or dropped
    return util.full_of(out_shape, 0, aval_of(x).dtype, aval_of(x).weak_type), False
  if not math.prod(out_shape):
    # Nothing to read: no gather (its slice sizes would exceed an empty axis), as JAX does.
    return util.full_of(out_shape, 0, aval_of(x).dtype, aval_of(x).weak_type), True
  dt = _index_dtype(max(shape[d] for d in adv))
  cols, valid = [], None
  for d in adv:
    i, ok = _normalize_int_array(idx[d], shape[d], need_valid, wrap)
    i = lax.convert_element_type(i, dt)
    cols.append(lax.expand_dims(util.broadcast_to(i, batch), (len(batch),)))
    if need_valid:
      ok = util.broadcast_to(ok, batch)
      valid = ok if valid is None else lax.bitwise_and(valid, ok)
  indices = cols[0] if len(cols) == 1 else lax.concatenate(cols, len(batch))
  nb = len(batch)
  offset_dims = tuple(range(p)) + tuple(range(p + nb, nb + len(rest)))
  dnums = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(adv),
                                     start_index_map=tuple(adv))
  slice_sizes = tuple(1 if d in adv else shape[d] for d in range(len(shape)))
  out = lax.gather(x, indices, dnums, slice_sizes, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)
  if not need_valid:
    return out, None
  valid_shape = (1,) * p + batch + (1,) * (len(rest) - p)
  return out, lax.reshape(valid, valid_shape)


def _index(x, idx, need_valid: bool = True, wrap: bool = True):
  """(x[idx], valid): the elements read with out-of-bound indices clamped, and where they were
  in bounds (a Python bool, or a bool array broadcastable to the result; None when not
  `need_valid` and there are index arrays). `wrap=False` (`wrap_negative_indices=False`) leaves
  negative integer indices out of bounds instead of counting them from the end (slices are
  unaffected, as in JAX)."""
  x = util.as_array(x)
  idx = _normalize(aval_of(x).ndim, idx)
  x, idx = _expand_new_axes(x, idx)
  x, idx = _apply_dynamic_slices(x, idx)
  x, idx = _apply_slices(x, idx)
  if all(i is _FULL or _is_scalar_index(i) for i in idx):
    return _integer_indexing(x, idx, need_valid, wrap)
  return _advanced_indexing(x, idx, need_valid, wrap)


def getitem(x, idx):
  """`x[idx]` with NumPy's indexing rules; out-of-bound integer indices are clamped (as JAX)."""
  if not isinstance(x, (Array, Tracer)) or not ish.is_split(aval_of(x)):
    if isinstance(x, (Array, Tracer)):
      _refuse_split_indices_off_mesh(aval_of(x), idx)
    return _index(x, idx, need_valid=False)[0]
  return _read(x, idx)


# --- modes and fill values -----------------------------------------------------------------------
class _Mode(enum.Enum):
  CLIP = "clip"
  FILL_OR_DROP = "fill"


def _parse_mode(mode, default: _Mode) -> _Mode:
  if mode is None:
    return default
  name = getattr(mode, "name", mode)
  name = str(name).lower()
  if name in ("clip",):
    return _Mode.CLIP
  if name in ("fill", "drop", "fill_or_drop"):
    return _Mode.FILL_OR_DROP
  if name in ("promise_in_bounds",):
    return default
  raise ValueError(f"unknown indexing mode {mode!r}; expected 'clip', 'fill', 'drop' or "
                   f"'promise_in_bounds'")


def _default_fill(dtype):
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.is_signed_integer(dtype):
    return dtypes.iinfo(dtype).min
  if dtypes.is_unsigned_integer(dtype):
    return dtypes.iinfo(dtype).max
  return True


def _read(x, idx, mode=None, fill_value=None, wrap=True, out_sharding=None):
  """`x.at[idx].get(...)` (and `x[idx]` of a split x) with JAX's sharding decisions: where JAX
  reads with a gather whose rule cannot tell the result's split, its ShardingTypeError; where it
  can, the result split as JAX's (see indexing_sharding.py). `out_sharding=` lays out what a
  gather reads (as in JAX, a read JAX computes as a slice ignores it)."""
  aval = aval_of(x)
  _refuse_split_indices_off_mesh(aval, idx)
  if out_sharding is None and not ish.is_split(aval):
    return _get(x, idx, mode, fill_value, wrap)
  norm = _normalize(aval.ndim, idx)
  fill = _parse_mode(mode, _Mode.CLIP) is _Mode.FILL_OR_DROP
  if not ish.reads_by_gather(x, norm, _BoolMask, fill):
    return _get(x, idx, mode, fill_value, wrap)
  if out_sharding is not None:
    with st.internal_expansion():  # (JAX computes it with the mesh's axes Auto)
      out = _get(x, idx, mode, fill_value, wrap)
    return placed(out, out_sharding)
  parts = st.spec_parts(aval)
  view = ish.index_view(aval.shape, parts, norm, _BoolMask)
  spec = ish.gather_spec(aval.shape, parts, view)
  if spec is None:
    raise ish.gather_error(aval, view)
  with st.internal_expansion():
    out = _get(x, idx, mode, fill_value, wrap)
  return _split_as(out, aval, spec)


def _split_as(out, aval, spec):
  """`out` split as `spec` over the mesh of `aval`'s split (a no-op where it already is)."""
  if st.spec_parts(aval_of(out)) == tuple(spec):
    return out
  return placed(out, st.make_sharding(aval.sharding.mesh, spec))


def _get(x, idx, mode=None, fill_value=None, wrap=True):
  clip = _parse_mode(mode, _Mode.CLIP) is _Mode.CLIP
  out, valid = _index(x, idx, need_valid=not clip, wrap=wrap)
  if clip or valid is True:
    return out
  aval = aval_of(out)
  fill = _default_fill(aval.dtype) if fill_value is None else fill_value
  # (jax's gather takes the fill value as a parameter: the result keeps x's weak type)
  fill = util.full_of(aval.shape, fill, aval.dtype, aval.weak_type) \
      if not isinstance(fill, (Array, Tracer)) else \
      util.broadcast_to(lax.convert_element_type(fill, aval.dtype, aval.weak_type), aval.shape)
  if valid is False:
    return fill
  return lax.select_n(util.broadcast_to(valid, aval.shape), fill, out)


# --- updates -------------------------------------------------------------------------------------
_SCATTERS = {"set": "scatter", "add": "scatter_add", "sub": "scatter_sub", "mul": "scatter_mul",
             "min": "scatter_min", "max": "scatter_max"}


def _write(x, idx, values, op: str, mode=None, indices_are_sorted=False, unique_indices=False,
           func=None, wrap=True, out_sharding=None):
  """`_update` with JAX's sharding decisions: JAX updates with one scatter, whose rule raises
  where it cannot tell the result's split (then `out_sharding=` must say it); the result is
  split as JAX's."""
  x = util.as_array(x)
  if out_sharding is not None:
    with st.internal_expansion():
      out = _update(x, idx, values, op, mode, indices_are_sorted, unique_indices, func, wrap)
    return placed(out, out_sharding)
  aval = aval_of(x)
  _refuse_split_indices_off_mesh(aval, idx)
  values_aval = _aval_if_array(values) if op != "apply" else None
  values_split = getattr(values_aval, "sharding", None) is not None and ish.is_split(values_aval)
  if not (ish.is_split(aval) or values_split or (st.active and _splits_an_index(idx))):
    return _update(x, idx, values, op, mode, indices_are_sorted, unique_indices, func, wrap)
  parts = st.spec_parts(aval)
  view = ish.index_view(aval.shape, parts, _normalize(aval.ndim, idx), _BoolMask)
  if 0 in view.slice_shape:  # JAX returns x untouched before any scatter
    return x
  if op == "apply":  # (JAX's scatter_apply scatters unsplit placeholder updates)
    view.slice_spec = [None] * len(view.slice_spec)
  mesh = aval.sharding.mesh if ish.is_split(aval) else _context_mesh()
  if values_split and len(values_aval.shape) <= len(view.slice_shape):
    ish.values_split_as(aval, values_aval, view, mesh)
  spec = ish.scatter_spec(aval.shape, parts, view)
  if spec is None:
    raise ish.scatter_error(aval, view, _split_mesh([values_aval] + [
        _aval_if_array(i) for i in (idx if isinstance(idx, tuple) else (idx,))]))
  with st.internal_expansion():
    out = _update(x, idx, values, op, mode, indices_are_sorted, unique_indices, func, wrap)
  return _split_as(out, aval, spec) if ish.is_split(aval) else out


def _context_mesh():
  """The mesh an unsplit operand's type is over in JAX: the context's, where JAX puts values
  made under set_mesh (revax does not record where a value was made: an unsplit value counts
  as made in the context it is used in), or None (the empty mesh)."""
  mesh = mesh_context.abstract_mesh()
  return None if mesh is None or getattr(mesh, "empty", False) else mesh


def _refuse_split_indices_off_mesh(aval, idx) -> None:
  """JAX types the slice an index reads or writes over the operand's mesh; split index arrays
  into an operand on the empty mesh (unsplit, no mesh in context) name axes that mesh lacks.

  Raises:
    ValueError: JAX's, naming the first split axis of the slice's spec.
  """
  if (not st.active or ish.is_split(aval) or _context_mesh() is not None
      or st.in_internal_expansion() or not _splits_an_index(idx)):
    return
  view = ish.index_view(aval.shape, (None,) * aval.ndim, _normalize(aval.ndim, idx), _BoolMask)
  first = next((p for p in view.slice_spec if p is not None), None)
  if first is not None:
    raise ValueError(f"Resource axis: {st.axes_of_part(first)[0]} of "
                     f"{mesh_context.spec_type(*view.slice_spec)!r} is not found in mesh: ().")


def _split_mesh(avals):
  """The mesh of the first split aval of `avals` (None entries skipped), or None."""
  return next((a.sharding.mesh for a in avals if a is not None and ish.is_split(a)), None)


def _splits_an_index(idx) -> bool:
  """Whether an index array of `idx` is split (JAX's scatter rule then refuses the update)."""
  entries = idx if isinstance(idx, tuple) else (idx,)
  return any(getattr(a, "sharding", None) is not None and ish.is_split(a)
             for a in map(_aval_if_array, entries))


def _aval_if_array(x):
  """The aval of an Array or tracer `x`; None for anything else (scalars, NumPy arrays, lists:
  never split)."""
  return aval_of(x) if isinstance(x, (Array, Tracer)) else None


def _update(x, idx, values, op: str, mode=None, indices_are_sorted=False, unique_indices=False,
            func=None, wrap=True):
  """x with x[idx] combined with `values` by `op` ('set', 'add', 'mul', 'min', 'max'), or, for
  op 'apply', with the scalar function `func` applied there (once per hit; values unused)."""
  util.check_arraylike(f"at[].{op}", values)
  x = util.as_array(x)
  aval = aval_of(x)
  values = lax.convert_element_type(values, aval.dtype, aval.weak_type and
                                    aval_of(values).weak_type)
  size = aval.size
  pos_dtype = _index_dtype(size + 1)
  positions = lax.reshape(lax.iota(pos_dtype, size), aval.shape)
  drop = _parse_mode(mode, _Mode.FILL_OR_DROP) is _Mode.FILL_OR_DROP
  pos, valid = _index(positions, idx, need_valid=drop, wrap=wrap)
  pos_shape = aval_of(pos).shape
  try:
    values = util.broadcast_to(values, pos_shape)
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: the values of shape "
                     f"{aval_of(values).shape} cannot be broadcast to the indexed shape "
                     f"{pos_shape}") from None
  if drop and valid is False:
    return x
  if drop and valid is not True:  # out-of-bound updates point past the end: scatter drops them
    pos = lax.select_n(util.broadcast_to(valid, pos_shape),
                       util.full_of(pos_shape, size, pos_dtype), pos)
  n = math.prod(pos_shape)
  dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
  if op == "apply":
    def scatter(operand, indices, updates, dnums, **kw):
      return scatter_apply(operand, indices, func, dnums, update_shape=(n,), **kw)
  else:
    scatter = getattr(lax, _SCATTERS[op])
  # Static ints and slices select every position at most once (as in JAX, which then allows
  # e.g. the gradient of .at[1].mul(v)); index arrays may repeat positions.
  unique_indices = unique_indices or _selects_each_position_once(idx)
  out = scatter(lax.reshape(x, (size,)), lax.reshape(pos, (n, 1)), lax.reshape(values, (n,)),
                dnums, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                mode=lax.GatherScatterMode.FILL_OR_DROP)
  return lax.reshape(out, aval.shape)


def _selects_each_position_once(idx) -> bool:
  """Whether `idx` holds only static ints, slices, None, Ellipsis and bools."""
  for i in idx if isinstance(idx, tuple) else (idx,):
    if not (i is None or i is Ellipsis or isinstance(i, (slice, Slice)) or _is_int_scalar(i)
            or isinstance(i, (bool, np.bool_))):
      return False
  return True


class _IndexUpdateRef:
  """`x.at[idx]`: functional reads and updates of x[idx]; `out_sharding=` (a NamedSharding or
  a PartitionSpec over the mesh in context) lays the result out, as JAX's."""
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array = array
    self.index = index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None,
          out_sharding=None, wrap_negative_indices=True):
    """x[idx]; out-of-bound indices clamp, or give `fill_value` (NaN, or the integer extreme)
    with mode='fill'. `wrap_negative_indices=False` treats negative indices as out of bounds
    instead of counting them from the end (in every method below too)."""
    return _read(self.array, self.index, mode, fill_value, wrap_negative_indices, out_sharding)

  def _updated(self, values, op, mode, indices_are_sorted, unique_indices, out_sharding, wrap):
    return _write(self.array, self.index, values, op, mode, indices_are_sorted, unique_indices,
                  wrap=wrap, out_sharding=out_sharding)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """A copy of x with x[idx] = values (out-of-bound updates are dropped)."""
    return self._updated(values, "set", mode, indices_are_sorted, unique_indices, out_sharding,
                         wrap_negative_indices)

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """A copy of x with x[idx] += values (repeated indices accumulate)."""
    return self._updated(values, "add", mode, indices_are_sorted, unique_indices, out_sharding,
                         wrap_negative_indices)

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """A copy of x with x[idx] -= values (repeated indices accumulate)."""
    return self._updated(values, "sub", mode, indices_are_sorted, unique_indices, out_sharding,
                         wrap_negative_indices)

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """A copy of x with x[idx] *= values (repeated indices multiply)."""
    return self._updated(values, "mul", mode, indices_are_sorted, unique_indices, out_sharding,
                         wrap_negative_indices)

  mul = multiply

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """A copy of x with x[idx] = minimum(x[idx], values)."""
    return self._updated(values, "min", mode, indices_are_sorted, unique_indices, out_sharding,
                         wrap_negative_indices)

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """A copy of x with x[idx] = maximum(x[idx], values)."""
    return self._updated(values, "max", mode, indices_are_sorted, unique_indices, out_sharding,
                         wrap_negative_indices)

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
             out_sharding=None, wrap_negative_indices=True):
    """x / d where d is ones with d[idx] *= values: as in JAX a true division, so an integer x
    gives a float result, and repeated indices divide repeatedly."""
    from revax._src.numpy.ufuncs import divide
    factors = self._factors(values, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices, out_sharding)
    return divide(self.array, factors)

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
    """x ** p where p is ones with p[idx] *= values (as in JAX: repeated indices multiply
    their exponents)."""
    from revax._src.numpy.ufuncs import power
    factors = self._factors(values, indices_are_sorted, unique_indices, mode,
                            wrap_negative_indices, out_sharding)
    return power(self.array, factors)

  def _factors(self, values, indices_are_sorted, unique_indices, mode, wrap, out_sharding):
    # (as JAX: the factors are a scatter into ones, laid out as `out_sharding` asks)
    ones = lax.full_like(util.as_array(self.array), 1)
    return _write(ones, self.index, values, "mul", mode, indices_are_sorted, unique_indices,
                  wrap=wrap, out_sharding=out_sharding)

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """A copy of x with the scalar function `func` applied to x[idx] (once per time an
    element is indexed)."""
    x = util.as_array(self.array)
    return _write(x, self.index, lax.full_like(x, 0, shape=()), "apply", mode,
                  indices_are_sorted, unique_indices, func=func, wrap=wrap_negative_indices)


class _IndexUpdateHelper:
  """`x.at`: index it (`x.at[idx]`) to read or update x[idx] functionally."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


# --- functions built on indexing -----------------------------------------------------------------
def nonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements, one int32 array per axis.

  Without `size` the array must be concrete (the result's length depends on its values). With a
  static `size` it works under jit: the first `size` indices are kept and missing ones are
  `fill_value` (0 by default; a scalar or one value per axis).

  Example:
    >>> x = jnp.array([0, 5, 0, 7])
    >>> jnp.nonzero(x)
    (Array([1, 3], dtype=int32),)
    >>> jnp.nonzero(x, size=3, fill_value=-1)  # a static size, as under jit
    (Array([ 1,  3, -1], dtype=int32),)
  """
  util.check_arraylike("nonzero", a)
  if isinstance(a, Tracer) and a.to_concrete_value() is not None:
    a = a.to_concrete_value()  # e.g. under an unjitted grad: the primal is known
  aval = aval_of(a)
  if aval.ndim == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use atleast_1d(a).nonzero().")
  if size is None:
    if isinstance(a, Tracer):
      raise ConcretizationTypeError(
          f"nonzero requires a concrete array (its result's shape depends on the values); got "
          f"{a.aval.str_short()} under a transformation. Pass a static size= (and fill_value=) "
          f"or use where(cond, x, y) instead.")
    size = int(np.count_nonzero(np.asarray(a)))
  size = operator.index(size)
  if size < 0:
    raise ValueError(f"nonzero: size must be non-negative, got {size}")
  fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * aval.ndim
  if len(fills) != aval.ndim:
    raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length {aval.ndim}, "
                     f"got length {len(fills)}")
  index_dtype = dtypes.default_int_dtype()
  n = math.prod(aval.shape)
  if not n:  # as JAX: an empty input gives `size` zeros per axis, whatever fill_value says
    return tuple(util.full_of((size,), 0, index_dtype) for _ in aval.shape)
  mask = lax.reshape(lax.ne(util.as_array(a), util.constant_like(a, 0)), (n,))
  count_before = lax.cumsum(lax.convert_element_type(mask, index_dtype), 0)
  # each nonzero element goes to its rank among nonzeros; the rest to `size`, which is dropped
  target = lax.select_n(mask, util.full_of((n,), size, index_dtype),
                        lax.sub(count_before, util.constant_like(count_before, 1)))
  flat = util.full_of((size,), 0, index_dtype).at[target].set(
      lax.iota(index_dtype, n), mode="drop")
  total = lax.reduce_sum(lax.convert_element_type(mask, index_dtype), (0,)) if n else \
      util.scalar_constant(0, index_dtype)
  valid = lax.lt(lax.iota(index_dtype, size), lax.broadcast_in_dim(total, (size,), ()))
  out = []
  stride = n
  for dim, fill in zip(aval.shape, fills, strict=True):
    stride //= max(dim, 1)
    i = flat
    if stride != 1:
      i = lax.div(i, util.constant_like(i, stride))
    if dim != 0:
      i = lax.rem(i, util.constant_like(i, dim))
    fill = util.full_of((size,), 0, index_dtype) if fill is None else \
        util.broadcast_to(lax.convert_element_type(fill, index_dtype), (size,))
    out.append(lax.select_n(valid, fill, i))
  return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of the flattened (concrete) array."""
  from revax._src.numpy.shape_ops import ravel
  return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements, as an (N, a.ndim) array (a must be concrete)."""
  from revax._src.numpy.shape_ops import atleast_1d, stack
  util.check_arraylike("argwhere", a)
  idx = nonzero(atleast_1d(a), size=size, fill_value=fill_value)
  out = stack(idx, axis=1)
  # a 0-d input has no axes: one (or no) row of zero columns, as in NumPy
  return out[:, :0] if aval_of(a).ndim == 0 else out


@tree_util.accepts_array_leaves()
def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """Elements of `a` at `indices` along `axis` (of the flattened array if None).

  Out-of-bound indices give `fill_value` (NaN for floats) by default, as in JAX; mode='clip'
  clamps them into [0, n) instead (negative ones to 0, as jax.numpy.take does).
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to take is not supported.")
  util.check_arraylike("take", a, indices)
  if not dtypes.is_integer(aval_of(indices).dtype):
    if aval_of(indices).size:  # JAX lets an empty index array of any dtype through
      raise ValueError(f"take requires integer indices, got {aval_of(indices).dtype.name}")
    indices = lax.convert_element_type(indices, dtypes.int32)
  if axis is None:
    from revax._src.numpy.shape_ops import ravel
    a, axis = ravel(a), 0
  axis = util.canonicalize_axis(axis, aval_of(a).ndim)
  mode = _parse_mode(mode, _Mode.FILL_OR_DROP)
  indices = util.as_array(indices)
  if mode is _Mode.CLIP:
    n = aval_of(a).shape[axis]
    indices = lax.clamp(util.constant_like(indices, 0), indices,
                        util.constant_like(indices, max(n - 1, 0)))
  return _get(a, (_FULL,) * axis + (indices,), mode.value, fill_value)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
  """out[..., j, ...] = arr[..., indices[..., j, ...], ...] along `axis` (None: flattened).

  Other axes of `indices` broadcast against those of `arr`.
  """
  util.check_arraylike("take_along_axis", arr, indices)
  if axis is None:
    from revax._src.numpy.shape_ops import ravel
    arr, indices, axis = ravel(arr), ravel(indices), 0
  arr = util.as_array(arr)
  nd = aval_of(arr).ndim
  if aval_of(indices).ndim != nd:
    raise ValueError(f"take_along_axis: indices and arr must have the same number of dimensions, "
                     f"got {aval_of(indices).ndim} and {nd}")
  axis = util.canonicalize_axis(axis, nd)
  a_shape, i_shape = aval_of(arr).shape, aval_of(indices).shape
  out_shape = util.broadcast_shapes(tuple(1 if d == axis else s for d, s in enumerate(a_shape)),
                                    tuple(1 if d == axis else s for d, s in enumerate(i_shape)))
  out_shape = tuple(i_shape[axis] if d == axis else s for d, s in enumerate(out_shape))
  idx = []
  for d in range(nd):
    if d == axis:
      idx.append(util.broadcast_to(indices, out_shape))
    elif a_shape[d] == 1:
      idx.append(util.full_of(out_shape, 0, dtypes.int32))
    else:
      idx.append(lax.broadcasted_iota(dtypes.int32, out_shape, d))
  mode = _parse_mode(mode, _Mode.FILL_OR_DROP).value
  aval, i_aval = aval_of(arr), aval_of(indices)
  if not (ish.is_split(aval) or ish.is_split(i_aval)):
    return _get(arr, tuple(idx), mode, fill_value)
  spec = _take_along_spec(aval, i_aval, axis, out_shape)
  with st.internal_expansion():  # (revax's gather indexes every axis; JAX's batches the others)
    out = _get(arr, tuple(idx), mode, fill_value)
  return _split_as(out, aval if ish.is_split(aval) else i_aval, spec)


def _take_along_spec(aval, i_aval, axis, out_shape):
  """The split of JAX's take_along_axis result: its gather batches the other axes (their split
  from the operand or the indices, which must agree) and indexes `axis`, which must not be split
  in the operand (unless of size 1) nor in the indices.

  Raises:
    ShardingTypeError: JAX's gather error, where its rule cannot tell the split."""
  p, q = st.spec_parts(aval), st.spec_parts(i_aval)
  ok = (p[axis] is None or aval.shape[axis] == 1) and q[axis] is None
  out = []
  for d in range(len(out_shape)):
    if d == axis:
      out.append(None)
      continue
    a = p[d] if aval.shape[d] == out_shape[d] else None
    b = q[d] if i_aval.shape[d] == out_shape[d] else None
    ok = ok and (a is None or b is None or a == b)
    out.append(a or b)
  if not ok:
    indices = ShapedArray(tuple(i_aval.shape) + (1,), dtypes.int32)
    if any(part is not None for part in q):
      mesh = (i_aval if ish.is_split(i_aval) else aval).sharding.mesh
      indices = indices.update(sharding=st.make_sharding(mesh, tuple(q) + (None,)))
    raise st.ShardingTypeError(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={aval!r}, indices={indices!r}")
  return tuple(out)


# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("argwhere", "flatnonzero", "nonzero",))
