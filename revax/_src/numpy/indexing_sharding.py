"""JAX's sharding decisions for `x[idx]` and `x.at[idx]` over Explicit mesh axes.

JAX computes an index read as a static slice, a dynamic slice or one gather, and every update as
one scatter, whose sharding rules decide the result's split or raise a ShardingTypeError asking
for `out_sharding=`. revax computes indexing its own way (slices first, then a gather; updates as
a scatter into a flat iota of positions), so the decision is taken here, on the same bookkeeping
as JAX's `_index_to_gather` (shapes and specs only): which operand axes the gather indexes
(`start_index_map`), their slice sizes, the collapsed ones, the offset dimensions, the shape and
split of the index array, and the shape and split JAX gives the updates.

Which reads JAX computes with a gather: every index with an integer or boolean array, every read
with mode='fill', and (eagerly) any read of a concrete Array on several devices that indexes an
axis partially (an integer, a partial or strided slice): JAX's static-slice path refuses those.
"""
from __future__ import annotations

import dataclasses
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core import sharding_types as st
from revax._src.core.avals import ShapedArray
from revax._src.core.trace import Tracer
from revax._src.numpy.util import aval_of
from revax._src.runtime.array import Array

__all__ = ["IndexView", "index_view", "gather_spec", "scatter_spec", "is_split",
           "gather_error", "scatter_error", "reads_by_gather", "values_split_as"]

_NONE, _INT, _ARRAY, _SLICE, _DSLICE = "none", "int", "array", "slice", "dslice"


@dataclasses.dataclass
class IndexView:
  """What JAX's `_index_to_gather` builds for an index (shapes and specs only)."""
  offset_dims: list
  collapsed: list
  start_index_map: list
  slice_sizes: list
  indices_shape: tuple
  indices_spec: tuple
  slice_shape: list
  slice_spec: list
  newaxis_dims: list


def is_split(aval) -> bool:
  return any(p is not None for p in st.spec_parts(aval))


def _entries(idx, mask_type):
  """(kind, value, shape, spec) per index entry; a boolean mask becomes one int array per axis
  it covers (its nonzero positions), as JAX expands it."""
  out = []
  for i in idx:
    if i is None or isinstance(i, (bool, np.bool_)):
      out.append((_NONE, i, (), ()))
    elif isinstance(i, mask_type):
      count = int(np.count_nonzero(i.value))
      out.extend((_ARRAY, None, (count,), (None,)) for _ in range(i.value.ndim))
    elif isinstance(i, slice):
      out.append((_SLICE, i, (), ()))
    elif type(i).__name__ == "Slice":  # revax.ds(start, size, stride)
      out.append((_DSLICE, i, (), ()))
    elif isinstance(i, (Array, Tracer, np.ndarray)) and aval_of(i).shape:
      aval = aval_of(i)
      out.append((_ARRAY, i, aval.shape, st.spec_parts(aval)))
    else:
      out.append((_INT, i, (), ()))
  return out


def _broadcast(shapes):
  return tuple(np.broadcast_shapes(*shapes)) if shapes else ()


def index_view(shape, parts, idx, mask_type) -> IndexView:
  """JAX's gather bookkeeping for the normalized index `idx` of an operand of `shape` split as
  `parts` (one entry per dimension)."""
  entries = _entries(idx, mask_type)
  advanced = any(kind == _ARRAY for kind, *_ in entries)
  int_like = [p for p, (kind, *_) in enumerate(entries) if kind in (_INT, _ARRAY)]
  contiguous = all(b - a == 1 for a, b in zip(int_like, int_like[1:]))
  adv_pos = int_like if advanced else []
  x_adv_axes, axis = [], 0
  for p, (kind, *_) in enumerate(entries):
    if kind == _NONE:
      continue
    if p in adv_pos:
      x_adv_axes.append(axis)
    axis += 1
  adv_shape = _broadcast([entries[p][2] for p in adv_pos])
  adv_spec = next((tuple(entries[p][3])[-len(adv_shape):] for p in adv_pos
                   if len(entries[p][2]) == len(adv_shape) and entries[p][2]), None)
  adv_spec = adv_spec or (None,) * len(adv_shape)
  v = IndexView([], [], [], [], (), (), [], [], [])
  gis, ispec, ncols = [], [], 0
  x_axis = collapsed_y = y_axis = 0
  for p, (kind, value, _, _) in enumerate(entries):
    if adv_pos and ((contiguous and p == adv_pos[0]) or (not contiguous and p == 0)):
      gis += adv_shape
      ispec += adv_spec
      v.start_index_map += x_adv_axes
      v.collapsed += x_adv_axes
      v.slice_shape += adv_shape
      v.slice_spec += adv_spec
      ncols += len(x_adv_axes)
      y_axis += len(adv_shape)
      collapsed_y += len(adv_shape)
    if p in adv_pos:
      x_axis += 1
      v.slice_sizes.append(1)
      continue
    if kind == _INT:
      v.collapsed.append(x_axis)
      v.slice_sizes.append(1)
      v.start_index_map.append(x_axis)
      ncols += 1
      x_axis += 1
    elif kind == _NONE:
      v.slice_shape.append(1)
      v.slice_spec.append(None)
      v.newaxis_dims.append(y_axis)
      y_axis += 1
    else:
      if kind == _DSLICE:
        step, size = operator.index(value.stride), operator.index(value.size)
      else:
        start, stop, step = value.indices(shape[x_axis])
        size = len(range(start, stop, step))
      v.slice_shape.append(size)
      v.slice_spec.append(parts[x_axis])
      if step == 1:
        if size != shape[x_axis]:
          v.start_index_map.append(x_axis)
          ncols += 1
        v.slice_sizes.append(size)
        v.offset_dims.append(collapsed_y)
      else:
        v.slice_sizes.append(1)
        v.start_index_map.append(x_axis)
        gis.append(size)
        ispec.append(None)
        v.collapsed.append(x_axis)
        ncols += 1
      collapsed_y += 1
      y_axis += 1
      x_axis += 1
  v.collapsed.sort()
  v.indices_shape = tuple(gis) + (ncols,) if ncols else (0,)
  v.indices_spec = tuple(ispec) + (None,) if ncols else (None,)
  return v


def gather_spec(shape, parts, v: IndexView):
  """The split of JAX's result (its gather's, with the new axes inserted), or None where its
  gather rule cannot tell it."""
  if all(p is None for p in parts) and all(p is None for p in v.indices_spec):
    out_rank = len(v.offset_dims) + len(v.indices_shape) - 1 + len(v.newaxis_dims)
    return (None,) * out_rank
  if not all(v.slice_sizes[i] == shape[i] or parts[i] is None for i in v.start_index_map):
    return None
  if any(p is not None for p in v.indices_spec):
    return None
  kept = iter(i for i in range(len(shape)) if i not in v.collapsed)
  from_indices = iter(v.indices_spec)
  out_rank = len(v.offset_dims) + len(v.indices_shape) - 1
  out = [parts[next(kept)] if d in v.offset_dims else next(from_indices)
         for d in range(out_rank)]
  for d in v.newaxis_dims:
    out.insert(d, None)
  return tuple(out)


def updates_of(v: IndexView):
  """(shape, spec) of the updates JAX scatters: broadcast to the slice shape with the slice's
  split, new axes squeezed out."""
  keep = [d for d in range(len(v.slice_shape)) if d not in v.newaxis_dims]
  return tuple(v.slice_shape[d] for d in keep), tuple(v.slice_spec[d] for d in keep)


def scatter_spec(shape, parts, v: IndexView):
  """The split of JAX's scatter result, or None where its scatter rule cannot tell it."""
  ushape, uspec = updates_of(v)
  if all(p is None for p in tuple(parts) + v.indices_spec + uspec):
    return (None,) * len(shape)
  window = [i for i in range(len(shape)) if i not in v.collapsed]
  pairs = list(zip(v.offset_dims, window))
  ok = (all((ushape[u] == shape[o] and uspec[u] == parts[o])
            or (uspec[u] is None and parts[o] is None) for u, o in pairs)
        and all(parts[i] is None for i in v.collapsed)
        and all(s is None for i, s in enumerate(uspec) if i not in v.offset_dims)
        and all(s is None for s in v.indices_spec))
  if not ok:
    return None
  out = list(parts)
  for u, o in pairs:
    if out[o] is None:
      out[o] = uspec[u]
  return tuple(out)


def _index_aval(shape, v: IndexView):
  dt = dtypes.int64 if (max(shape, default=0) >= 2 ** 31 - 1
                        and dtypes.default_int_dtype() == dtypes.int64) else dtypes.int32
  return ShapedArray(v.indices_shape, dt)


def gather_error(aval, v: IndexView) -> st.ShardingTypeError:
  return st.ShardingTypeError(
      "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
      "indexing as out sharding could not be resolved unambiguously (or would require "
      f"collectives on inputs). Got operand={aval!r}, indices={_index_aval(aval.shape, v)!r}")


def values_split_as(aval, values_aval, v: IndexView, mesh) -> None:
  """Where JAX's update of `aval`[index] by split values puts them: it broadcasts the values to
  the slice's shape. Over the mesh of `aval`'s type (`mesh`: its split's, or the context's
  for an unsplit value made under `set_mesh`) the broadcast is typed with the slice's split,
  which a values dimension may only match or leave whole (else JAX's ValueError); on no mesh
  (`mesh` None) the values keep their split, aligned at the trailing dims (`v.slice_spec`
  becomes it, for the scatter's rule to judge).

  Raises:
    ValueError: a values dimension split where the slice's is not (or differently).
  """
  vparts = st.spec_parts(values_aval)
  lead = len(v.slice_shape) - len(vparts)
  if mesh is None:
    v.slice_spec = [None] * lead + list(vparts)
    return
  tail = v.slice_spec[lead:]
  if all(p is None or p == t for p, t in zip(vparts, tail, strict=True)):
    return
  requested = ShapedArray(tuple(v.slice_shape), aval.dtype)
  if any(p is not None for p in v.slice_spec):
    requested = requested.update(sharding=st.make_sharding(mesh, v.slice_spec))
  raise ValueError(f"Incompatible types for broadcasting: input "
                   f"type={values_aval.update(dtype=aval.dtype)} and requested type={requested}")


def scatter_error(aval, v: IndexView, mesh=None) -> st.ShardingTypeError:
  """JAX's error for an update its scatter rule cannot type (`mesh`: the mesh of whatever is
  split, where `aval` is unsplit)."""
  mesh = mesh if aval.sharding is None else aval.sharding.mesh
  ushape, uspec = updates_of(v)
  updates = ShapedArray(ushape, aval.dtype)
  if any(p is not None for p in uspec):
    updates = updates.update(sharding=st.make_sharding(mesh, uspec))
  indices = _index_aval(aval.shape, v)
  if any(p is not None for p in v.indices_spec):
    indices = indices.update(sharding=st.make_sharding(mesh, v.indices_spec))
  return st.ShardingTypeError(
      "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for the "
      "scatter update as out sharding could not be resolved unambiguously (or would require "
      f"collectives on inputs). Got operand={aval.update(weak_type=False)!r}, "
      f"indices={indices!r}, updates={updates!r}")


def _partial(shape, entries) -> bool:
  """Whether the index reads an axis partially (JAX's `has_partial_slices`)."""
  axis = 0
  for kind, value, _, _ in entries:
    if kind == _NONE:
      continue
    if kind in (_INT, _DSLICE):
      return True
    if kind == _SLICE:
      start, stop, step = value.indices(shape[axis])
      if abs(step) != 1 or abs(stop - start) != shape[axis]:
        return True
    axis += 1
  return False


def reads_by_gather(x, idx, mask_type, fill_mode: bool) -> bool:
  """Whether JAX reads `x[idx]` (`idx` normalized) with a gather."""
  entries = _entries(idx, mask_type)
  if fill_mode or any(kind == _ARRAY for kind, *_ in entries):
    return True
  if isinstance(x, Tracer) or not isinstance(x, Array):
    return False
  devices = getattr(getattr(x, "sharding", None), "num_devices", 1)
  return devices > 1 and _partial(aval_of(x).shape, entries)
