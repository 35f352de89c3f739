"""Slicing and indexing primitives: slice, dynamic_slice, dynamic_update_slice, gather, and the
scatter family (scatter, scatter-add, scatter-mul, scatter-min, scatter-max).

Semantics are XLA's. `dynamic_slice`/`dynamic_update_slice` clamp their start indices so that the
slice fits in the operand (after the wrappers wrap negative indices once, as jax.lax does).
`gather` and `scatter` take JAX's dimension numbers; the index vector is always the last
dimension of the indices. Out-of-bounds indices follow `GatherScatterMode`: CLIP clamps each
window into range; FILL_OR_DROP fills a gathered window that is not entirely in bounds with
`fill_value` and drops such a window of a scatter; PROMISE_IN_BOUNDS leaves it to XLA (gather
clamps, scatter drops). Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import enum
import functools
import operator
from typing import NamedTuple

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.shape_poly import canonical_dim
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.interpreters.ad import Zero, is_undefined_primal, tangent_aval
from revax._src.lax import batch_util, binary, comparison, creation, shapes
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.standard import as_operand, operand_dtype
from revax._src.runtime.array import Array

__all__ = [
  "slice", "dynamic_slice", "dynamic_update_slice", "gather", "scatter", "scatter_add",
  "scatter_mul", "scatter_min", "scatter_max",
  "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode",
  "slice_p", "dynamic_slice_p", "dynamic_update_slice_p", "gather_p", "scatter_p",
  "scatter_add_p", "scatter_sub_p", "scatter_mul_p", "scatter_min_p", "scatter_max_p",
  "scatter_sub",
]

_slice = slice  # the builtin, shadowed below by lax.slice


def _ints(xs, what: str) -> tuple[int, ...]:
  try:
    return tuple(canonical_dim(x) for x in xs)  # ints, or symbolic sizes
  except TypeError:
    raise TypeError(f"{what} must be a sequence of integers, got {xs!r}") from None


def _shift(dims, at: int) -> tuple[int, ...]:
  """Dimension numbers after inserting a new dimension at position `at`."""
  return tuple(d + 1 if d >= at else d for d in dims)


def _zeros(aval: ShapedArray):
  return ad.zeros_like_aval(aval.update(weak_type=False))


# --- slice ---------------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 (jax.lax's name)
  """The static slice `operand[start:limit:stride, ...]`, one (start, limit, stride) per dim.

  Args:
    operand: the array.
    start_indices: one start per dimension, `0 <= start <= limit`.
    limit_indices: one (exclusive) limit per dimension, at most the dimension's size.
    strides: optional positive strides (default 1).

  Example:
    >>> lax.slice(jnp.arange(10), (1,), (8,), (3,))
    Array([1, 4, 7], dtype=int32)
  """
  start_indices = _ints(start_indices, "slice start_indices")
  limit_indices = _ints(limit_indices, "slice limit_indices")
  if strides is not None:
    strides = _ints(strides, "slice strides")
    if all(s == 1 for s in strides):
      strides = None
  return slice_p.bind(operand, start_indices=start_indices, limit_indices=limit_indices,
                      strides=strides)


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
  for name, idx in (("start_indices", start_indices), ("limit_indices", limit_indices),
                    ("strides", strides)):
    if idx is not None and len(idx) != x.ndim:
      raise TypeError(f"slice {name} must have length equal to the number of dimensions of the "
                      f"operand, got {name} {idx} for operand shape {x.shape}.")
  if any(s < 0 for s in start_indices):
    raise TypeError(f"slice start_indices must be greater than or equal to zero, got "
                    f"start_indices {start_indices}.")
  if any(l > n for l, n in zip(limit_indices, x.shape)):
    raise TypeError(f"slice limit_indices must be less than or equal to operand shape, got "
                    f"limit_indices {limit_indices} for operand shape {x.shape}.")
  if any(l < s for s, l in zip(start_indices, limit_indices)):
    raise TypeError(f"slice limit_indices must be greater than or equal to start_indices, got "
                    f"start_indices {start_indices} and limit_indices {limit_indices}.")
  strides = strides or (1,) * x.ndim
  if any(s <= 0 for s in strides):
    raise TypeError(f"slice strides must be positive, got {strides}")
  # (l - s + st - 1) // st: the ceiling, written as JAX's shape rule writes it for symbolic sizes
  shape = tuple((l - s + st - 1) // st for s, l, st in zip(start_indices, limit_indices, strides))
  return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_numpy(x, *, start_indices, limit_indices, strides):
  strides = strides or (1,) * x.ndim
  return x[tuple(_slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


def _slice_lower(ctx, x, *, start_indices, limit_indices, strides):
  strides = strides or (1,) * len(start_indices)
  return ctx.op1("stablehlo.slice", [x], props={"start_indices": mlir.i64_array(start_indices),
                                               "limit_indices": mlir.i64_array(limit_indices),
                                               "strides": mlir.i64_array(strides)})


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
  """Pad the cotangent back with zeros: edges before/after the sliced range, and interior
  padding of stride - 1 between the picked elements."""
  shape = x.aval.shape
  strides = strides or (1,) * len(shape)
  config = []
  for n, s, st, m in zip(shape, start_indices, strides, get_aval(ct).shape):
    last = s + (m - 1) * st + 1 if m else s
    config.append((s, n - last, st - 1))
  return [shapes.pad(ct, 0, config)]


def _slice_batch(vals, dims, *, start_indices, limit_indices, strides):
  (x,), (d,) = vals, dims
  n = get_aval(x).shape[d]
  start = start_indices[:d] + (0,) + start_indices[d:]
  limit = limit_indices[:d] + (n,) + limit_indices[d:]
  strides = None if strides is None else strides[:d] + (1,) + strides[d:]
  return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides), d


def _slice_region(eqn):
  """The box of the operand that a unit-stride slice holds (None for strided slices)."""
  p = eqn.params
  if p["strides"] is not None and any(s != 1 for s in p["strides"]):
    return None
  return tuple(p["start_indices"]), tuple(p["limit_indices"])


def _assemble_from_slices(aval, pieces):
  """An operand from slices that cover it: each piece written in place into zeros."""
  from revax._src.lax.creation import full
  x = full(aval.shape, 0, aval.dtype)
  for starts, piece in pieces:
    x = dynamic_update_slice(x, piece, tuple(np.int32(s) for s in starts))
  return x


slice_p = Primitive("slice")
slice_p.def_abstract_eval(_slice_abstract_eval)
dispatch.def_numpy_impl(slice_p, _slice_numpy)
mlir.register_lowering(slice_p, _slice_lower)
ad.deflinear(slice_p, _slice_transpose)
batching.primitive_batchers[slice_p] = _slice_batch
inv.not_invertible(slice_p, "it keeps only part of its operand")
inv.defpart(slice_p, _slice_region, _assemble_from_slices)  # several slices covering it do not


# --- index normalization shared by dynamic_slice and dynamic_update_slice -----------------------
def _dynamic_indices(operand, start_indices, op_name: str, allow_negative=True):
  """Scalar integer start indices of one dtype; negative ones wrapped once (i + size), as in
  jax.lax, in the dimensions where `allow_negative` (a bool, or one per dimension) says so.
  Python/NumPy integers are wrapped statically, arrays with a select."""
  shape = get_aval(operand).shape
  start_indices = tuple(start_indices)
  if len(start_indices) != len(shape):
    raise ValueError(f"{op_name}: length of start_indices must match number of operand "
                     f"dimensions ({len(start_indices)} vs {shape})")
  static = [isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in start_indices]
  array_dtypes = {get_aval(i).dtype for i, s in zip(start_indices, static) if not s}
  for dt in array_dtypes:
    if not dtypes.is_integer(dt):
      raise TypeError(f"{op_name} start_indices must be integers, got dtype {dt.name}")
  dtype = array_dtypes.pop() if len(array_dtypes) == 1 else dtypes.int32
  wraps = ([bool(allow_negative)] * len(shape) if isinstance(allow_negative, (bool, int))
           else [bool(w) for w in allow_negative])
  out = []
  for i, n, s, wrap in zip(start_indices, shape, static, wraps, strict=True):
    if s:
      i = int(i)
      v = np.asarray(i + n if i < 0 and wrap else i, dtype)
      v.flags.writeable = False
      out.append(Array(ShapedArray((), dtype), npy=v))
      continue
    if get_aval(i).shape:
      raise TypeError(f"{op_name} start_indices must be scalars, got an index of shape "
                      f"{get_aval(i).shape}")
    if get_aval(i).dtype != dtype:
      i = convert_element_type(i, dtype)
    if wrap and dtypes.is_signed_integer(dtype):
      i = comparison.select_n(comparison.lt(i, 0), i, binary.add(i, np.asarray(n, dtype)))
    out.append(i)
  return tuple(out)


def _check_index_avals(op_name, x, idx):
  if len(idx) != x.ndim:
    raise TypeError(f"{op_name} takes one start index per operand dimension, got {len(idx)} for "
                    f"operand shape {x.shape}")
  for i in idx:
    if i.shape or not dtypes.is_integer(i.dtype):
      raise TypeError(f"{op_name} start indices must be integer scalars, got {i.str_short()}")
  if len({i.dtype for i in idx}) > 1:
    raise TypeError(f"{op_name} start indices must have one dtype, got "
                    f"{', '.join(i.dtype.name for i in idx)}")


def _clamped_starts(idx, shape, sizes):
  return [int(np.clip(int(i), 0, n - s)) for i, n, s in zip(idx, shape, sizes)]


def _index_zero_like(idx, dtype=dtypes.int32):
  """A scalar 0 index of the dtype of the other start indices."""
  dt = get_aval(idx[0]).dtype if idx else dtype
  v = np.zeros((), dt)
  v.flags.writeable = False
  return Array(ShapedArray((), dt), npy=v)


def _stacked_indices(idx, dims, size):
  """The batched scalar indices as one (size, len(idx)) index array (unbatched ones broadcast)."""
  cols = []
  for i, d in zip(idx, dims):
    i = batch_util.broadcast_batched(i, size, 0) if d is None else i
    cols.append(shapes.reshape(i, (size, 1)))
  return shapes.concatenate(cols, 1)


# --- dynamic_slice -------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  """The slice of `slice_sizes` starting at the (traced or static) `start_indices`.

  Negative indices count from the end (wrapped once); then each start is clamped into
  `[0, operand.shape[d] - slice_sizes[d]]`, as XLA does, so the slice always fits.

  Args:
    operand: the array.
    start_indices: one scalar integer per dimension (Python ints or 0-d integer arrays).
    slice_sizes: the static size of the slice in each dimension.
    allow_negative_indices: whether negative indices wrap (a bool, or one per dimension);
      where not, a negative start is clamped to 0.

  Example:
    >>> lax.dynamic_slice(jnp.arange(10), (8,), (3,))  # clamped to start 7
    Array([7, 8, 9], dtype=int32)
  """
  slice_sizes = _ints(slice_sizes, "dynamic_slice slice_sizes")
  idx = _dynamic_indices(operand, start_indices, "dynamic_slice", allow_negative_indices)
  return dynamic_slice_p.bind(operand, *idx, slice_sizes=slice_sizes)


def _dynamic_slice_abstract_eval(x, *idx, slice_sizes):
  _check_index_avals("dynamic_slice", x, idx)
  if len(slice_sizes) != x.ndim:
    raise TypeError(f"dynamic_slice slice_sizes must have one entry per operand dimension, got "
                    f"slice_sizes {slice_sizes} for operand shape {x.shape}.")
  if any(s < 0 for s in slice_sizes):
    raise TypeError(f"dynamic_slice slice_sizes must be greater than or equal to zero, got "
                    f"slice_sizes {slice_sizes}.")
  if any(s > n for s, n in zip(slice_sizes, x.shape)):
    raise TypeError(f"dynamic_slice slice_sizes must be less than or equal to operand shape, got "
                    f"slice_sizes {slice_sizes} for operand shape {x.shape}.")
  return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dynamic_slice_numpy(x, *idx, slice_sizes):
  starts = _clamped_starts(idx, x.shape, slice_sizes)
  return x[tuple(_slice(s, s + n) for s, n in zip(starts, slice_sizes))]


def _dynamic_slice_lower(ctx, x, *idx, slice_sizes):
  return ctx.op1("stablehlo.dynamic_slice", [x, *idx],
                 props={"slice_sizes": mlir.i64_array(slice_sizes)})


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
  x, *idx = primals
  out = dynamic_slice_p.bind(x, *idx, slice_sizes=slice_sizes)
  t = tangents[0]
  if type(t) is Zero:
    return out, Zero(tangent_aval(get_aval(out)))
  return out, dynamic_slice_p.bind(t, *idx, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *idx, slice_sizes):
  zeros = _zeros(x.aval)
  return [dynamic_update_slice_p.bind(zeros, ct, *idx)] + [None] * len(idx)


def _dynamic_slice_batch(vals, dims, *, slice_sizes):
  """Batched operand, unbatched indices: slice the whole batch dim. Batched indices: a gather
  (with the operand's batch dim as a batching dim when it is batched too), as JAX does."""
  x, *idx = vals
  xd, *idims = dims
  if all(d is None for d in idims):
    n = get_aval(x).shape[xd]
    idx = idx[:xd] + [_index_zero_like(idx)] + idx[xd:]
    sizes = slice_sizes[:xd] + (n,) + slice_sizes[xd:]
    return dynamic_slice_p.bind(x, *idx, slice_sizes=sizes), xd
  size = next(get_aval(i).shape[0] for i, d in zip(idx, idims) if d is not None)
  indices = _stacked_indices(idx, idims, size)
  nd = len(slice_sizes)
  offset = tuple(range(1, nd + 1))
  if xd is None:
    dn = GatherDimensionNumbers(offset, (), tuple(range(nd)))
    sizes = slice_sizes
  else:
    dn = GatherDimensionNumbers(offset, (), tuple(d for d in range(nd + 1) if d != xd),
                                (xd,), (0,))
    sizes = slice_sizes[:xd] + (1,) + slice_sizes[xd:]
  out = gather_p.bind(x, indices, dimension_numbers=dn, slice_sizes=sizes,
                      indices_are_sorted=False, unique_indices=False,
                      mode=GatherScatterMode.CLIP, fill_value=None)
  return out, 0


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.def_abstract_eval(_dynamic_slice_abstract_eval)
dispatch.def_numpy_impl(dynamic_slice_p, _dynamic_slice_numpy)
mlir.register_lowering(dynamic_slice_p, _dynamic_slice_lower)
ad.primitive_jvps[dynamic_slice_p] = _dynamic_slice_jvp
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose
batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch
inv.not_invertible(dynamic_slice_p, "it keeps only part of its operand")


# --- dynamic_update_slice ------------------------------------------------------------------------
@tree_util.accepts_array_leaves((0, 1))
def dynamic_update_slice(operand, update, start_indices):
  """`operand` with the block `update` written at `start_indices` (wrapped and clamped as in
  `dynamic_slice`, so the block always fits).

  Example:
    >>> lax.dynamic_update_slice(jnp.zeros(5), jnp.ones(2), (4,))  # clamped to start 3
    Array([0., 0., 0., 1., 1.], dtype=float32)
  """
  update = as_operand(update, operand_dtype(operand))
  idx = _dynamic_indices(operand, start_indices, "dynamic_update_slice")
  return dynamic_update_slice_p.bind(operand, update, *idx)


def _dynamic_update_slice_abstract_eval(x, update, *idx):
  _check_index_avals("dynamic_update_slice", x, idx)
  if update.ndim != x.ndim:
    raise TypeError(f"dynamic_update_slice update must have the same rank as operand, got update "
                    f"shape {update.shape} for operand shape {x.shape}.")
  if any(u > n for u, n in zip(update.shape, x.shape)):
    raise TypeError(f"dynamic_update_slice update shape must be smaller than operand shape, got "
                    f"update shape {update.shape} for operand shape {x.shape}.")
  if update.dtype != x.dtype:
    raise TypeError(f"dynamic_update_slice update and operand dtypes must match, got "
                    f"{update.dtype.name} for operand dtype {x.dtype.name}.")
  # weak where every input is, as jax's standard rule (its wrapper makes the indices strong)
  weak = x.weak_type and update.weak_type and all(i.weak_type for i in idx)
  return ShapedArray(x.shape, x.dtype, weak)


def _dynamic_update_slice_numpy(x, update, *idx):
  starts = _clamped_starts(idx, x.shape, update.shape)
  out = np.array(x, copy=True)
  out[tuple(_slice(s, s + n) for s, n in zip(starts, update.shape))] = update
  return out


def _dynamic_update_slice_lower(ctx, x, update, *idx):
  return ctx.op1("stablehlo.dynamic_update_slice", [x, update, *idx])


def _dynamic_update_slice_jvp(primals, tangents):
  x, update, *idx = primals
  out = dynamic_update_slice_p.bind(x, update, *idx)
  tx, tu = tangents[:2]
  if type(tx) is Zero and type(tu) is Zero:
    return out, Zero(tangent_aval(get_aval(out)))
  tx = _zeros(get_aval(x)) if type(tx) is Zero else tx
  tu = _zeros(get_aval(update)) if type(tu) is Zero else tu
  return out, dynamic_update_slice_p.bind(tx, tu, *idx)


def _dynamic_update_slice_transpose(ct, x, update, *idx):
  """Linear in (operand, update) jointly: the operand gets ct with the block zeroed, the update
  gets the block of ct."""
  u_aval = update.aval if is_undefined_primal(update) else get_aval(update)
  ct_x = ct_u = None
  if is_undefined_primal(x):
    ct_x = dynamic_update_slice_p.bind(ct, _zeros(u_aval), *idx)
  if is_undefined_primal(update):
    ct_u = dynamic_slice_p.bind(ct, *idx, slice_sizes=u_aval.shape)
  return [ct_x, ct_u] + [None] * len(idx)


def _dynamic_update_slice_batch(size, vals, dims):
  """Unbatched indices: operand and update batched along one position (an unbatched one is
  broadcast), updated at index 0 there. Batched indices: a scatter with the batch dim as a
  batching dim (CLIP mode: the clamped starts of dynamic_update_slice)."""
  x, update, *idx = vals
  xd, ud, *idims = dims
  if xd is None:
    xd = 0 if ud is None else ud
    x = batch_util.broadcast_batched(x, size, xd)
  if ud is None:
    update = batch_util.broadcast_batched(update, size, xd)
  elif ud != xd:
    update = batch_util.moveaxis(update, ud, xd)
  if all(d is None for d in idims):
    idx = idx[:xd] + [_index_zero_like(idx)] + idx[xd:]
    return dynamic_update_slice_p.bind(x, update, *idx), xd
  indices = _stacked_indices(idx, idims, size)
  nd = len(idx)
  window = tuple(d for d in range(nd + 1) if d != xd)
  dn = ScatterDimensionNumbers(window, (), window, (xd,), (0,))
  out = scatter_p.bind(x, indices, update, dimension_numbers=dn, indices_are_sorted=False,
                       unique_indices=True, mode=GatherScatterMode.CLIP)
  return out, xd


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.def_abstract_eval(_dynamic_update_slice_abstract_eval)
dispatch.def_numpy_impl(dynamic_update_slice_p, _dynamic_update_slice_numpy)
mlir.register_lowering(dynamic_update_slice_p, _dynamic_update_slice_lower)
ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp
ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose
batching.axis_size_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch
inv.definverse(  # the update is the slice of the output it was written to (the overwritten part
    # of the operand is lost)
    dynamic_update_slice_p,
    lambda outs, ins, avals_in: [ins[0], dynamic_slice(outs[0], ins[2:], avals_in[1].shape),
                                 *ins[2:]],
    lambda known, eqn, facts: not known[1] and all(k for i, k in enumerate(known) if i != 1))


# --- gather/scatter configuration ----------------------------------------------------------------
class GatherScatterMode(enum.Enum):
  """How gather and scatter treat windows that are not entirely in bounds.

  CLIP: clamp the start indices so the whole window is in bounds.
  FILL_OR_DROP: a gather returns `fill_value` for the whole window; a scatter drops the window.
  PROMISE_IN_BOUNDS: the caller promises in-bounds indices (XLA then clamps gathers and drops
    scatters; gradients are only right for in-bounds indices).
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()

  @staticmethod
  def from_any(s) -> "GatherScatterMode":
    """A mode from a GatherScatterMode, 'clip', 'fill'/'drop', 'promise_in_bounds' or None
    (FILL_OR_DROP)."""
    if isinstance(s, GatherScatterMode):
      return s
    if s == "clip":
      return GatherScatterMode.CLIP
    if s is None or s == "fill" or s == "drop":
      return GatherScatterMode.FILL_OR_DROP
    if s == "promise_in_bounds":
      return GatherScatterMode.PROMISE_IN_BOUNDS
    raise ValueError(f'Unknown gather mode "{s}"')

  def __repr__(self):
    return f"GatherScatterMode.{self.name}"


class GatherDimensionNumbers(NamedTuple):
  """The dimension numbers of a gather, as jax.lax.GatherDimensionNumbers.

  offset_dims: output dimensions that index into a slice (sorted).
  collapsed_slice_dims: operand dimensions of slice size 1 dropped from the output (sorted).
  start_index_map: for each component of an index vector, the operand dimension it starts.
  operand_batching_dims / start_indices_batching_dims: paired dimensions of the operand and the
    indices that are batched together (the i-th example of the indices reads the i-th example of
    the operand); operand_batching_dims is sorted.
  The index vector is always the last dimension of the indices.
  """
  offset_dims: tuple[int, ...]
  collapsed_slice_dims: tuple[int, ...]
  start_index_map: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
  """The dimension numbers of a scatter, as jax.lax.ScatterDimensionNumbers.

  update_window_dims: dimensions of the updates that are window dimensions (sorted).
  inserted_window_dims: operand dimensions of window size 1 absent from the updates (sorted).
  scatter_dims_to_operand_dims: for each component of an index vector, the operand dimension it
    starts.
  operand_batching_dims / scatter_indices_batching_dims: paired batch dimensions of the operand
    and the indices (operand_batching_dims is sorted).
  """
  update_window_dims: tuple[int, ...]
  inserted_window_dims: tuple[int, ...]
  scatter_dims_to_operand_dims: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  scatter_indices_batching_dims: tuple[int, ...] = ()


def _canonical_dnums(cls, dn):
  """`dn` (a `cls`, an object with its fields, or a tuple of them) as a `cls` of int tuples."""
  if not isinstance(dn, tuple):
    if not all(hasattr(dn, f) for f in cls._fields[:3]):
      raise TypeError(f"dimension_numbers must be a {cls.__name__}, got {dn!r}")
    dn = tuple(getattr(dn, f, ()) for f in cls._fields)
  if not 3 <= len(dn) <= len(cls._fields):
    raise TypeError(f"dimension_numbers must be a {cls.__name__}, got {dn!r}")
  return cls(*(_ints(v, f"{cls.__name__}.{f}") for f, v in zip(cls._fields, dn)))


def _check_dims(op, what, dims, rank, *, sorted_=False):
  if len(set(dims)) != len(dims):
    raise TypeError(f"{op} {what} must not contain any duplicate dimensions, got {dims}.")
  if sorted_ and list(dims) != sorted(dims):
    raise TypeError(f"{op} {what} must be sorted; got {dims}")
  for d in dims:
    if not 0 <= d < rank:
      raise TypeError(f"{op} {what} must be in range [0, {rank}); got {dims}.")


def _check_disjoint(op, a_name, a, b_name, b):
  both = set(a) & set(b)
  if both:
    raise TypeError(f"{op} {a_name} and {b_name} must be disjoint, got {a} and {b} (both "
                    f"contain {sorted(both)}).")


def _check_indices(op, indices, index_map_name, index_map):
  if not dtypes.is_integer(indices.dtype):
    raise TypeError(f"{op} indices must have an integer dtype, got {indices.dtype.name}")
  if indices.ndim < 1:
    raise TypeError(f"{op} indices must have rank at least 1 (the last dimension holds the index "
                    f"vectors), got shape {indices.shape}")
  if len(index_map) != indices.shape[-1]:
    raise TypeError(f"{op} has {len(index_map)} elements in {index_map_name} and the last "
                    f"dimension of the indices (the index vector dimension) has size "
                    f"{indices.shape[-1]}; these two numbers must be equal (indices shape "
                    f"{indices.shape}).")


def _check_batching(op, operand, indices, obd, ibd, ibd_name):
  _check_dims(op, "operand_batching_dims", obd, operand.ndim, sorted_=True)
  _check_dims(op, ibd_name, ibd, indices.ndim)
  if indices.ndim - 1 in ibd:
    raise TypeError(f"{op} cannot have the index vector dimension as a batching dimension; got "
                    f"{ibd_name} {ibd}.")
  if len(obd) != len(ibd):
    raise TypeError(f"{op} requires equal numbers of operand_batching_dims and {ibd_name}, got "
                    f"{obd} and {ibd}.")
  osz = tuple(operand.shape[d] for d in obd)
  isz = tuple(indices.shape[d] for d in ibd)
  if osz != isz:
    raise TypeError(f"{op} requires operand batching dimensions and indices batching dimensions "
                    f"to have the same shape, got {osz} and {isz}.")


def _batch_positions(rank, window_dims):
  return [p for p in range(rank) if p not in window_dims]


# --- gather --------------------------------------------------------------------------------------
def gather(operand, start_indices, dimension_numbers, slice_sizes, *, indices_are_sorted=False,
           unique_indices=False, mode=None, fill_value=None):
  """XLA's gather: slices of `slice_sizes` from `operand` starting at `start_indices`.

  Args:
    operand: the array to slice.
    start_indices: integer array whose last dimension holds the index vectors.
    dimension_numbers: a `GatherDimensionNumbers`.
    slice_sizes: the size of the slice in each operand dimension.
    indices_are_sorted, unique_indices: promises that may speed up the lowering.
    mode: a `GatherScatterMode` or 'clip' / 'fill' / 'promise_in_bounds'; None means
      PROMISE_IN_BOUNDS (as jax.lax.gather).
    fill_value: the value of out-of-bounds windows in FILL_OR_DROP mode (default NaN for
      inexact dtypes, the minimum of signed, the maximum of unsigned integers, True for bool).

  Returns:
    An array whose batch dimensions follow the indices' and whose `offset_dims` hold the slices.

  Example:
    >>> x, idx = jnp.array([10., 20., 30.]), jnp.array([2, 0])
    >>> dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
    ...                                 start_index_map=(0,))
    >>> lax.gather(x, idx[:, None], dn, slice_sizes=(1,))  # x[idx]
    Array([30., 10.], dtype=float32)
  """
  dn = _canonical_dnums(GatherDimensionNumbers, dimension_numbers)
  mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
  if mode is GatherScatterMode.FILL_OR_DROP:
    fill_value = _default_fill(operand_dtype(operand)) if fill_value is None else fill_value
    if isinstance(fill_value, (np.generic, np.ndarray)):
      fill_value = fill_value.item()
  else:
    fill_value = None
  return gather_p.bind(operand, start_indices, dimension_numbers=dn,
                       slice_sizes=_ints(slice_sizes, "gather slice_sizes"),
                       indices_are_sorted=bool(indices_are_sorted),
                       unique_indices=bool(unique_indices), mode=mode, fill_value=fill_value)


def _default_fill(dtype):
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.is_signed_integer(dtype):
    return int(np.iinfo(dtype).min)
  if dtypes.is_integer(dtype):
    return int(np.iinfo(dtype).max)
  return True


def _gather_shape(operand, indices, dn, slice_sizes):
  op = "gather"
  _check_indices(op, indices, "start_index_map", dn.start_index_map)
  out_rank = len(dn.offset_dims) + indices.ndim - 1
  _check_dims(op, "offset_dims", dn.offset_dims, out_rank, sorted_=True)
  _check_dims(op, "start_index_map", dn.start_index_map, operand.ndim)
  _check_dims(op, "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim, sorted_=True)
  _check_batching(op, operand, indices, dn.operand_batching_dims, dn.start_indices_batching_dims,
                  "start_indices_batching_dims")
  _check_disjoint(op, "collapsed_slice_dims", dn.collapsed_slice_dims, "operand_batching_dims",
                  dn.operand_batching_dims)
  _check_disjoint(op, "start_index_map", dn.start_index_map, "operand_batching_dims",
                  dn.operand_batching_dims)
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"gather must have one slice size for every operand dimension; got "
                    f"slice_sizes {slice_sizes} for operand shape {operand.shape}")
  if len(slice_sizes) != (len(dn.offset_dims) + len(dn.collapsed_slice_dims)
                          + len(dn.operand_batching_dims)):
    raise TypeError(f"All components of the offset index in a gather op must either be a offset "
                    f"dimension or explicitly collapsed/batching; got len(slice_sizes)="
                    f"{len(slice_sizes)}, offset_dims={dn.offset_dims}, collapsed_slice_dims="
                    f"{dn.collapsed_slice_dims}, operand_batching_dims="
                    f"{dn.operand_batching_dims}.")
  for i, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
    # (no indices, no slices: as in JAX, a slice may then exceed the operand, as vmap's over a
    # batch of zero makes with slice size 1 along an empty batching dim)
    if not 0 <= s <= n and 0 not in indices.shape:
      raise TypeError(f"Slice size at index {i} in gather op is out of range, must be within "
                      f"[0, {n} + 1), got {s} (slice_sizes {slice_sizes}, operand shape "
                      f"{operand.shape}).")
  for d in dn.collapsed_slice_dims:
    if slice_sizes[d] != 1:
      raise TypeError(f"gather can only collapse slice dims and batching dims of slice size 1, "
                      f"but slice_sizes[{d}] is {slice_sizes[d]} (slice_sizes {slice_sizes}).")
  for d in dn.operand_batching_dims:  # 0 for a batch of zero (as in JAX)
    if slice_sizes[d] > 1:
      raise TypeError(f"gather can only collapse slice dims and batching dims of slice size 1, "
                      f"but slice_sizes[{d}] is {slice_sizes[d]} (slice_sizes {slice_sizes}).")
  offset_sizes = iter(s for d, s in enumerate(slice_sizes)
                      if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims)
  batch_sizes = iter(indices.shape[:-1])
  return tuple(next(offset_sizes) if p in dn.offset_dims else next(batch_sizes)
               for p in range(out_rank))


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                          unique_indices, mode, fill_value):
  shape = _gather_shape(operand, indices, dimension_numbers, slice_sizes)
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def _along(values, axis: int, rank: int):
  """A 1-d array reshaped to lie along `axis` of a rank-`rank` broadcast."""
  shape = [1] * rank
  shape[axis] = len(values)
  return np.reshape(values, shape)


def _batch_to(a, positions, rank):
  """An array over the index batch dims, reshaped to broadcast along `positions` of a rank-`rank`
  result."""
  shape = [1] * rank
  for k, p in enumerate(positions):
    shape[p] = a.shape[k]
  return a.reshape(shape)


def _gather_numpy(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                  unique_indices, mode, fill_value):
  dn = dimension_numbers
  out_shape = _gather_shape(get_aval(operand), get_aval(indices), dn, slice_sizes)
  rank = len(out_shape)
  batch_pos = _batch_positions(rank, dn.offset_dims)
  offset_operand_dims = [d for d in range(operand.ndim)
                         if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
  idx = indices.astype(np.int64)
  in_bounds = np.ones(indices.shape[:-1], bool)
  coords = []
  for d in range(operand.ndim):
    c = np.zeros((1,) * rank, np.int64)
    if d in dn.start_index_map:
      upper = operand.shape[d] - slice_sizes[d]
      s = idx[..., dn.start_index_map.index(d)]
      in_bounds &= (s >= 0) & (s <= upper)
      c = c + _batch_to(np.clip(s, 0, upper), batch_pos, rank)
    elif d in dn.operand_batching_dims:
      b = dn.start_indices_batching_dims[dn.operand_batching_dims.index(d)]
      c = c + _along(np.arange(indices.shape[b]), batch_pos[b], rank)
    if d in offset_operand_dims:
      p = dn.offset_dims[offset_operand_dims.index(d)]
      c = c + _along(np.arange(slice_sizes[d]), p, rank)
    coords.append(np.broadcast_to(c, out_shape))
  out = operand[tuple(coords)] if operand.ndim else np.broadcast_to(operand, out_shape)
  if mode is GatherScatterMode.FILL_OR_DROP:
    mask = np.broadcast_to(_batch_to(in_bounds, batch_pos, rank), out_shape)
    out = np.where(mask, out, np.asarray(fill_value).astype(operand.dtype))
  return out


def _dims_list(xs) -> str:
  return "[" + ", ".join(map(str, xs)) + "]"


def _gather_attr(dn, index_vector_dim):
  parts = [f"offset_dims = {_dims_list(dn.offset_dims)}",
           f"collapsed_slice_dims = {_dims_list(dn.collapsed_slice_dims)}"]
  if dn.operand_batching_dims:
    parts += [f"operand_batching_dims = {_dims_list(dn.operand_batching_dims)}",
              f"start_indices_batching_dims = {_dims_list(dn.start_indices_batching_dims)}"]
  parts += [f"start_index_map = {_dims_list(dn.start_index_map)}",
            f"index_vector_dim = {index_vector_dim}"]
  return "#stablehlo.gather<" + ", ".join(parts) + ">"


def _bool_attr(b: bool) -> str:
  return "true" if b else "false"


def _gather_lower(ctx, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                  unique_indices, mode, fill_value):
  out_aval = ctx.avals_out[0]
  if 0 in out_aval.shape and isinstance(out_aval.dtype, np.dtype):
    # an empty result reads nothing (as JAX, a constant: XLA refuses the slice sizes of 1
    # that vmap over a batch of zero gives along the empty batching dim)
    return ctx.constant(np.zeros(out_aval.shape, out_aval.dtype), out_aval)
  if mode is GatherScatterMode.FILL_OR_DROP:
    return mlir.lower_fun(_gather_fill, multiple_results=False)(
        ctx, operand, indices, dimension_numbers=dimension_numbers, slice_sizes=slice_sizes,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
        fill_value=fill_value)
  return ctx.op1("stablehlo.gather", [operand, indices], props={
      "dimension_numbers": _gather_attr(dimension_numbers, ctx.avals_in[1].ndim - 1),
      "indices_are_sorted": _bool_attr(indices_are_sorted),
      "slice_sizes": mlir.i64_array(slice_sizes)})


def _index_upper_bounds(operand_shape, index_dtype, dims, sizes):
  """`operand_shape[d] - sizes[d]` for each d in dims (the largest in-bounds start), as a 1-d
  array of the index dtype (saturated at its maximum)."""
  hi = np.iinfo(index_dtype).max
  v = np.array([min(operand_shape[d] - sizes[d], hi) for d in dims], index_dtype)
  v.flags.writeable = False
  return Array(ShapedArray(v.shape, index_dtype), npy=v)


def _gather_fill(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                 unique_indices, fill_value):
  """FILL_OR_DROP gather as a masked gather: clamp, gather, then select the fill value where
  the window was not entirely in bounds."""
  from revax._src.lax import reductions
  dn = dimension_numbers
  out = gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=slice_sizes,
                      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                      mode=GatherScatterMode.CLIP, fill_value=None)
  i_aval = get_aval(indices)
  upper = _index_upper_bounds(get_aval(operand).shape, i_aval.dtype, dn.start_index_map,
                              slice_sizes)
  ok = binary.bitwise_and(comparison.ge(indices, np.zeros((), i_aval.dtype)),
                          comparison.le(indices, upper))
  ok = reductions.reduce_and(ok, (i_aval.ndim - 1,))
  o_aval = get_aval(out)
  mask = shapes.broadcast_in_dim(ok, o_aval.shape,
                                 _batch_positions(o_aval.ndim, dn.offset_dims))
  fill = creation.full(o_aval.shape, np.asarray(fill_value).astype(o_aval.dtype), o_aval.dtype)
  return comparison.select_n(mask, fill, out)


def _gather_jvp(primals, tangents, **params):
  operand, indices = primals
  out = gather_p.bind(operand, indices, **params)
  t = tangents[0]
  if type(t) is Zero:
    return out, Zero(tangent_aval(get_aval(out)))
  if params["mode"] is GatherScatterMode.FILL_OR_DROP:
    params = dict(params, fill_value=0)
  return out, gather_p.bind(t, indices, **params)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                      unique_indices, mode, fill_value):
  """The adjoint of a gather is a scatter-add of the cotangent into zeros (same mode: CLIP
  clamps both ways, FILL_OR_DROP drops what the gather filled)."""
  dn = dimension_numbers
  sdn = ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                dn.operand_batching_dims, dn.start_indices_batching_dims)
  zeros = _zeros(operand.aval)
  out = scatter_add_p.bind(zeros, indices, ct, dimension_numbers=sdn,
                           indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                           mode=mode)
  return [out, None]


def _fix_index_vector_dim(indices, d):
  """Batched indices whose batch dim sits after the index vector dim: move it just before, so the
  index vector stays last. Returns (indices, batch dim)."""
  nd = get_aval(indices).ndim
  if d == nd - 1:
    return batch_util.moveaxis(indices, d, nd - 2), nd - 2
  return indices, d


def _paired_sorted(a, b):
  pairs = sorted(zip(a, b))
  return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def _gather_batch(vals, dims, *, dimension_numbers, slice_sizes, **params):
  """Transpose-free except where the indices' batch dim follows their index vector dim.
  Operand batched: its batch dim becomes one more offset (slice) dim. Indices batched: one more
  index batch dim. Both: a pair of batching dims (operand_batching_dims)."""
  operand, indices = vals
  od, idd = dims
  dn = dimension_numbers
  out_rank = len(dn.offset_dims) + get_aval(indices).ndim - 1 - (idd is not None)
  if idd is None:
    window = [d for d in range(get_aval(operand).ndim - 1)
              if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    k = sum(1 for d in window if d < od)
    q = dn.offset_dims[k] if k < len(dn.offset_dims) else out_rank
    new = GatherDimensionNumbers(
        tuple(sorted(_shift(dn.offset_dims, q) + (q,))), _shift(dn.collapsed_slice_dims, od),
        _shift(dn.start_index_map, od), _shift(dn.operand_batching_dims, od),
        dn.start_indices_batching_dims)
    sizes = slice_sizes[:od] + (get_aval(operand).shape[od],) + slice_sizes[od:]
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=sizes,
                         **params), q
  indices, b = _fix_index_vector_dim(indices, idd)
  batch_pos = _batch_positions(out_rank, dn.offset_dims)
  q = batch_pos[b] if b < len(batch_pos) else out_rank
  if od is None:
    new = dn._replace(offset_dims=_shift(dn.offset_dims, q),
                      start_indices_batching_dims=_shift(dn.start_indices_batching_dims, b))
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=slice_sizes,
                         **params), q
  obd, ibd = _paired_sorted(_shift(dn.operand_batching_dims, od) + (od,),
                            _shift(dn.start_indices_batching_dims, b) + (b,))
  new = GatherDimensionNumbers(_shift(dn.offset_dims, q), _shift(dn.collapsed_slice_dims, od),
                               _shift(dn.start_index_map, od), obd, ibd)
  # A batch of zero: the batching dim has size 0, so its slice must be 0 (as in JAX).
  sizes = slice_sizes[:od] + (1 if get_aval(operand).shape[od] else 0,) + slice_sizes[od:]
  return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=sizes, **params), q


gather_p = Primitive("gather")
gather_p.def_abstract_eval(_gather_abstract_eval)
dispatch.def_numpy_impl(gather_p, _gather_numpy)
mlir.register_lowering(gather_p, _gather_lower)
ad.primitive_jvps[gather_p] = _gather_jvp
ad.primitive_transposes[gather_p] = _gather_transpose
batching.primitive_batchers[gather_p] = _gather_batch


def gather_along_axis(x, idx, axis: int):
  """`numpy.take_along_axis(x, idx, axis)` for `idx` of x's shape, as one gather with every
  other dimension a batching dimension (no index arithmetic). An empty `idx` gives an empty
  result without a gather (whose slice sizes of 1 an empty axis cannot hold)."""
  shape = get_aval(x).shape
  if 0 in get_aval(idx).shape:
    return shapes.broadcast_in_dim(np.zeros((), get_aval(x).dtype), get_aval(idx).shape, ())
  others = tuple(d for d in range(len(shape)) if d != axis)
  indices = shapes.reshape(idx, get_aval(idx).shape + (1,))
  dn = GatherDimensionNumbers((), (axis,), (axis,), others, others)
  return gather_p.bind(x, indices, dimension_numbers=dn, slice_sizes=(1,) * len(shape),
                       indices_are_sorted=False, unique_indices=False,
                       mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)
inv.not_invertible(gather_p, "it keeps only the indexed part of its operand")


# --- the scatter family: shared rules ------------------------------------------------------------
def _scatter_bind(prim, operand, indices, updates, dimension_numbers, indices_are_sorted,
                  unique_indices, mode):
  dn = _canonical_dnums(ScatterDimensionNumbers, dimension_numbers)
  updates = as_operand(updates, operand_dtype(operand))
  return prim.bind(operand, indices, updates, dimension_numbers=dn,
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode))


def _window_sizes(operand_shape, updates_shape, dn):
  """The size of the scatter window in each operand dimension."""
  sizes = iter(updates_shape[d] for d in dn.update_window_dims)
  return tuple(1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims else next(sizes)
               for d in range(len(operand_shape)))


def _scatter_abstract_eval_for(name):
  def rule(operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices,
           mode):
    dn = dimension_numbers
    if name in ("scatter-add", "scatter-sub", "scatter-mul") and dtypes.is_bool(operand.dtype):
      # jax's combiners are lax.add / lax.mul, which take no bools
      raise TypeError(f"{name.split('-')[1]} does not accept dtype bool: {name} takes numeric "
                      f"operands")
    _check_indices(name, indices, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims)
    if updates.dtype != operand.dtype:
      raise TypeError(f"{name} requires updates of the operand's dtype, got updates "
                      f"{updates.dtype.name} for operand {operand.dtype.name}")
    expected = indices.ndim - 1 + len(dn.update_window_dims)
    if updates.ndim != expected:
      raise TypeError(f"{name} updates must be of rank {expected} (indices shape {indices.shape}, "
                      f"update_window_dims {dn.update_window_dims}); got updates shape "
                      f"{updates.shape}.")
    _check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim, sorted_=True)
    _check_dims(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim, sorted_=True)
    _check_dims(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                operand.ndim)
    _check_batching(name, operand, indices, dn.operand_batching_dims,
                    dn.scatter_indices_batching_dims, "scatter_indices_batching_dims")
    _check_disjoint(name, "inserted_window_dims", dn.inserted_window_dims,
                    "operand_batching_dims", dn.operand_batching_dims)
    _check_disjoint(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                    "operand_batching_dims", dn.operand_batching_dims)
    window = len(dn.update_window_dims) + len(dn.inserted_window_dims) + \
        len(dn.operand_batching_dims)
    if window != operand.ndim:
      raise TypeError(f"{name} has a window of rank {window} (update_window_dims "
                      f"{dn.update_window_dims}, inserted_window_dims {dn.inserted_window_dims}, "
                      f"operand_batching_dims {dn.operand_batching_dims}); it must match the "
                      f"operand rank {operand.ndim}.")
    window_dims = [d for d in range(operand.ndim)
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    for ud, od in zip(dn.update_window_dims, window_dims):
      if updates.shape[ud] > operand.shape[od]:
        raise TypeError(f"Bounds of the window dimensions of updates must not exceed the bounds "
                        f"of the corresponding dimensions of operand. For dimension {ud}, "
                        f"updates bound is {updates.shape[ud]}, operand bound is "
                        f"{operand.shape[od]} (updates shape {updates.shape}, operand shape "
                        f"{operand.shape}).")
    scatter_dims = _batch_positions(updates.ndim, dn.update_window_dims)
    for k, ud in enumerate(scatter_dims):
      if updates.shape[ud] != indices.shape[k]:
        raise TypeError(f"Bounds of the scatter dimensions of updates must be the same as the "
                        f"bounds of the corresponding dimensions of scatter indices. For scatter "
                        f"dimension {ud}, updates bound is {updates.shape[ud]}, indices bound is "
                        f"{indices.shape[k]} (updates shape {updates.shape}, indices shape "
                        f"{indices.shape}).")
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)
  return rule


def _scatter_numpy_for(combine):
  """NumPy scatter: the operand coordinates of every update element, then `combine(out, coords,
  values)` over the in-bounds windows (all windows in CLIP mode, whose starts are clamped)."""
  def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices,
           mode):
    dn = dimension_numbers
    rank = updates.ndim
    sizes = _window_sizes(operand.shape, updates.shape, dn)
    scatter_pos = _batch_positions(rank, dn.update_window_dims)
    window_dims = [d for d in range(operand.ndim)
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    idx = indices.astype(np.int64)
    valid = np.ones(indices.shape[:-1], bool)
    coords = []
    for d in range(operand.ndim):
      c = np.zeros((1,) * rank, np.int64)
      if d in dn.scatter_dims_to_operand_dims:
        upper = operand.shape[d] - sizes[d]
        s = idx[..., dn.scatter_dims_to_operand_dims.index(d)]
        if mode is GatherScatterMode.CLIP:
          s = np.clip(s, 0, upper)
        else:
          valid &= (s >= 0) & (s <= upper)
        c = c + _batch_to(s, scatter_pos, rank)
      elif d in dn.operand_batching_dims:
        b = dn.scatter_indices_batching_dims[dn.operand_batching_dims.index(d)]
        c = c + _along(np.arange(indices.shape[b]), scatter_pos[b], rank)
      if d in window_dims:
        c = c + _along(np.arange(sizes[d]), dn.update_window_dims[window_dims.index(d)], rank)
      coords.append(np.broadcast_to(c, updates.shape))
    keep = np.broadcast_to(_batch_to(valid, scatter_pos, rank), updates.shape)
    out = np.array(operand, copy=True)
    if out.ndim == 0:
      out = out.reshape(1)
      coords = [np.zeros(updates.shape, np.int64)]
    with np.errstate(all="ignore"):
      combine(out, tuple(c[keep] for c in coords), updates[keep])
    return out.reshape(operand.shape)
  return impl


def _scatter_attr(dn, index_vector_dim):
  parts = [f"update_window_dims = {_dims_list(dn.update_window_dims)}",
           f"inserted_window_dims = {_dims_list(dn.inserted_window_dims)}"]
  if dn.operand_batching_dims:
    parts += [f"input_batching_dims = {_dims_list(dn.operand_batching_dims)}",
              f"scatter_indices_batching_dims = {_dims_list(dn.scatter_indices_batching_dims)}"]
  parts += [f"scatter_dims_to_operand_dims = {_dims_list(dn.scatter_dims_to_operand_dims)}",
            f"index_vector_dim = {index_vector_dim}"]
  return "#stablehlo.scatter<" + ", ".join(parts) + ">"


def _clamp_indices(ctx, indices, dn, operand_aval, updates_aval):
  """CLIP mode: clamp each start index into [0, operand dim - window size]."""
  i_aval = ctx.avals_in[1]
  sizes = _window_sizes(operand_aval.shape, updates_aval.shape, dn)
  upper = np.asarray(_index_upper_bounds(operand_aval.shape, i_aval.dtype,
                                         dn.scatter_dims_to_operand_dims, sizes)._value())
  vec = ShapedArray(upper.shape, i_aval.dtype)
  hi = ctx.op1("stablehlo.broadcast_in_dim", [ctx.constant(upper, vec)], i_aval,
               props={"broadcast_dimensions": mlir.i64_array([i_aval.ndim - 1])})
  lo = ctx.constant(np.zeros(i_aval.shape, i_aval.dtype), i_aval)
  return ctx.op1("stablehlo.clamp", [lo, indices, hi], i_aval)


def _scatter_lower_for(combine_prim):
  """Lowering with an update region that applies `combine_prim`'s own lowering to (current,
  update) scalars (so NaN propagation of min/max is the elementwise op's); None: replace."""
  def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices, mode):
    o_aval, _, u_aval = ctx.avals_in
    if mode is GatherScatterMode.CLIP:
      indices = _clamp_indices(ctx, indices, dimension_numbers, o_aval, u_aval)
    scalar = ShapedArray((), o_aval.dtype)
    region = ctx.fb.region([mlir.ir_type(scalar)] * 2,
                           lambda fb, cur, upd: [binary_region_op(fb, ctx.platform, combine_prim,
                                                                  scalar, cur, upd)])
    return ctx.op1("stablehlo.scatter", [operand, indices, updates], props={
        "indices_are_sorted": _bool_attr(indices_are_sorted),
        "scatter_dimension_numbers": _scatter_attr(dimension_numbers, ctx.avals_in[1].ndim - 1),
        "unique_indices": _bool_attr(unique_indices)}, regions=[region])
  return rule


def binary_region_op(fb, platform, prim, scalar_aval, x, y):
  """Emit `prim(x, y)` on scalars inside a region body, with `prim`'s own lowering rule (None:
  the second operand, as a replacing update)."""
  if prim is None:
    return y
  ctx = mlir.LoweringRuleContext(fb, [scalar_aval, scalar_aval], [scalar_aval], platform)
  return mlir.get_lowering(prim, platform)(ctx, x, y)


def _scatter_gather_dnums(dn):
  return GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                dn.scatter_indices_batching_dims)


def _gather_updates(x, indices, updates_aval, *, dimension_numbers, indices_are_sorted,
                    unique_indices, mode, fill_value=0):
  """The windows of `x` that a scatter with these params writes (gather with the same layout as
  the updates; dropped windows read as `fill_value`)."""
  dn = dimension_numbers
  if 0 in updates_aval.shape:  # nothing was written (and an empty `x` has no window to read)
    return _zeros(ShapedArray(updates_aval.shape, get_aval(x).dtype))
  sizes = _window_sizes(get_aval(x).shape, updates_aval.shape, dn)
  return gather_p.bind(x, indices, dimension_numbers=_scatter_gather_dnums(dn), slice_sizes=sizes,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode, fill_value=fill_value if mode is GatherScatterMode.FILL_OR_DROP
                       else None)


def _scatter_batch_for(prim):
  """Batching of a scatter. Indices unbatched: the operand's batch dim becomes one more window
  dim (the updates get the matching window dim). Indices batched: the operand and the indices
  get a pair of batching dims (the updates one more scatter dim). An unbatched operand or updates
  is broadcast (the output, and the matching updates, are per example)."""
  def rule(size, vals, dims, *, dimension_numbers, **params):
    operand, indices, updates = vals
    od, idd, ud = dims
    dn = dimension_numbers
    u_ndim = get_aval(updates).ndim - (ud is not None)
    if idd is None:
      o_ndim = get_aval(operand).ndim - (od is not None)
      window = [d for d in range(o_ndim)
                if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
      uwd = dn.update_window_dims
      if od is None:  # place the operand's batch dim to match the updates' one
        k = sum(1 for w in uwd if w < ud)
        od = window[k] if k < len(window) else o_ndim
        operand = batch_util.broadcast_batched(operand, size, od)
      k = sum(1 for d in window if d < od)
      p = uwd[k] if k < len(uwd) else u_ndim
      if ud is None:
        updates = batch_util.broadcast_batched(updates, size, p)
      elif sum(1 for w in uwd if w < ud) != k:
        updates = batch_util.moveaxis(updates, ud, p)
      else:
        p = ud
      new = ScatterDimensionNumbers(tuple(sorted(_shift(uwd, p) + (p,))),
                                    _shift(dn.inserted_window_dims, od),
                                    _shift(dn.scatter_dims_to_operand_dims, od),
                                    _shift(dn.operand_batching_dims, od),
                                    dn.scatter_indices_batching_dims)
      return prim.bind(operand, indices, updates, dimension_numbers=new, **params), od
    indices, b = _fix_index_vector_dim(indices, idd)
    if od is None:
      operand, od = batch_util.broadcast_batched(operand, size, 0), 0
    scatter_pos = _batch_positions(u_ndim, dn.update_window_dims)
    p = scatter_pos[b] if b < len(scatter_pos) else u_ndim
    if ud is None:
      updates = batch_util.broadcast_batched(updates, size, p)
    elif sum(1 for s in scatter_pos if s < ud) != b:
      updates = batch_util.moveaxis(updates, ud, p)
    else:
      p = ud
    obd, ibd = _paired_sorted(_shift(dn.operand_batching_dims, od) + (od,),
                              _shift(dn.scatter_indices_batching_dims, b) + (b,))
    new = ScatterDimensionNumbers(_shift(dn.update_window_dims, p),
                                  _shift(dn.inserted_window_dims, od),
                                  _shift(dn.scatter_dims_to_operand_dims, od), obd, ibd)
    return prim.bind(operand, indices, updates, dimension_numbers=new, **params), od
  return rule


def _instantiate(t, x):
  return _zeros(get_aval(x)) if type(t) is Zero else t


# --- scatter -------------------------------------------------------------------------------------
def scatter(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
            unique_indices=False, mode=None):
  """XLA's scatter with replacement: `operand` with the windows of `updates` written at
  `scatter_indices` (which write wins among repeated indices is unspecified).

  Args:
    operand: the array to update.
    scatter_indices: integer array whose last dimension holds the index vectors.
    updates: the windows, laid out by `dimension_numbers` (a `ScatterDimensionNumbers`).
    indices_are_sorted, unique_indices: promises (unique_indices also selects a simpler
      derivative).
    mode: a `GatherScatterMode` or string; None means FILL_OR_DROP (out-of-bounds windows are
      dropped).

  Example:
    >>> x, idx, v = jnp.zeros(3), jnp.array([2, 0]), jnp.array([5., 7.])
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> lax.scatter(x, idx[:, None], v, dn)  # x.at[idx].set(v)
    Array([7., 0., 5.], dtype=float32)
  """
  return _scatter_bind(scatter_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def _scatter_set(out, coords, values):
  out[coords] = values


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
                 mode):
  """Unique indices: the scatter of the tangents. Otherwise find which update window won each
  written position (scatter ids, gather them back) and route tangents through masks."""
  operand, indices, updates = primals
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  out = scatter_p.bind(operand, indices, updates, **params)
  t_op, _, t_up = tangents
  t_op, t_up = _instantiate(t_op, operand), _instantiate(t_up, updates)
  if unique_indices:
    return out, scatter_p.bind(t_op, indices, t_up, **params)
  dn = dimension_numbers
  u_aval, i_aval = get_aval(updates), get_aval(indices)
  n_ids = int(np.prod(i_aval.shape[:-1], dtype=np.int64))
  ids_shape = [1] * u_aval.ndim
  for k, p in enumerate(_batch_positions(u_aval.ndim, dn.update_window_dims)):
    ids_shape[p] = i_aval.shape[k]
  ids = np.arange(1, n_ids + 1, dtype=np.int32).reshape(ids_shape)
  ids = np.broadcast_to(ids, u_aval.shape)
  ids_arr = Array(ShapedArray(ids.shape, dtypes.int32), npy=_frozen(ids))
  scattered = scatter_p.bind(_zeros(ShapedArray(get_aval(operand).shape, dtypes.int32)), indices,
                             ids_arr, **params)
  won = comparison.eq(_gather_updates(scattered, indices, u_aval, **params), ids_arr)
  kept = comparison.eq(scattered, np.zeros((), np.int32))
  t_kept = comparison.select_n(kept, _zeros(get_aval(t_op)), t_op)
  t_won = comparison.select_n(won, _zeros(get_aval(t_up)), t_up)
  return out, binary.add(t_kept, scatter_add_p.bind(_zeros(get_aval(t_op)), indices, t_won,
                                                     **params))


def _frozen(a):
  a = np.ascontiguousarray(a)
  a.flags.writeable = False
  return a


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode):
  if not unique_indices:
    raise NotImplementedError("scatter transpose is only implemented where unique_indices=True")
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  u_aval = updates.aval if is_undefined_primal(updates) else get_aval(updates)
  ct_op = ct_up = None
  if is_undefined_primal(operand):
    ct_op = scatter_p.bind(ct, indices, _zeros(u_aval), **params)
  if is_undefined_primal(updates):
    ct_up = _gather_updates(ct, indices, u_aval, **params)
  return [ct_op, None, ct_up]


scatter_p = Primitive("scatter")
scatter_p.def_abstract_eval(_scatter_abstract_eval_for("scatter"))
dispatch.def_numpy_impl(scatter_p, _scatter_numpy_for(_scatter_set))
mlir.register_lowering(scatter_p, _scatter_lower_for(None))
ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.primitive_transposes[scatter_p] = _scatter_transpose
batching.axis_size_batchers[scatter_p] = _scatter_batch_for(scatter_p)
inv.not_invertible(scatter_p, "many-to-one: the overwritten values are lost")


# --- scatter-add ---------------------------------------------------------------------------------
def scatter_add(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
  """XLA's scatter with addition: repeated indices accumulate. Arguments as in `scatter`.

  Example:
    >>> x, idx, v = jnp.ones(3), jnp.array([2, 2]), jnp.array([5., 7.])
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> lax.scatter_add(x, idx[:, None], v, dn)  # x.at[idx].add(v): repeats accumulate
    Array([ 1.,  1., 13.], dtype=float32)
  """
  return _scatter_bind(scatter_add_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def _linear_scatter_jvp(prim):
  """The JVP of a scatter linear in (operand, updates) (scatter-add, scatter-sub): the same
  scatter of the tangents."""
  def jvp(primals, tangents, **params):
    operand, indices, updates = primals
    out = prim.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    return out, prim.bind(_instantiate(t_op, operand), indices, _instantiate(t_up, updates),
                          **params)
  return jvp


def _linear_scatter_transpose(negate_updates: bool):
  """The transpose of a scatter linear in (operand, updates): the operand's cotangent is ct
  itself, the updates' the windows of ct that the scatter wrote (zero for dropped windows),
  negated for scatter-sub."""
  def transpose(ct, operand, indices, updates, **params):
    ct_op = ct if is_undefined_primal(operand) else None
    ct_up = None
    if is_undefined_primal(updates):
      ct_up = _gather_updates(ct, indices, updates.aval, **params)
      if negate_updates:
        from revax._src.lax.unary import neg
        ct_up = neg(ct_up)
    return [ct_op, None, ct_up]
  return transpose


scatter_add_p = Primitive("scatter-add")
scatter_add_p.def_abstract_eval(_scatter_abstract_eval_for("scatter-add"))
dispatch.def_numpy_impl(scatter_add_p, _scatter_numpy_for(np.add.at))
mlir.register_lowering(scatter_add_p, _scatter_lower_for(binary.add_p))
ad.primitive_jvps[scatter_add_p] = _linear_scatter_jvp(scatter_add_p)
ad.primitive_transposes[scatter_add_p] = _linear_scatter_transpose(False)
batching.axis_size_batchers[scatter_add_p] = _scatter_batch_for(scatter_add_p)
inv.not_invertible(scatter_add_p, "many-to-one: the parts of a sum are lost")


# --- scatter-sub ---------------------------------------------------------------------------------
def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
  """XLA's scatter with subtraction: operand[idx] -= update (repeated indices accumulate).
  Arguments as in `scatter`.

  Example:
    >>> x, idx, v = jnp.ones(3), jnp.array([2, 2]), jnp.array([5., 7.])
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> lax.scatter_sub(x, idx[:, None], v, dn)  # x.at[idx].subtract(v)
    Array([  1.,   1., -11.], dtype=float32)
  """
  return _scatter_bind(scatter_sub_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


scatter_sub_p = Primitive("scatter-sub")
scatter_sub_p.def_abstract_eval(_scatter_abstract_eval_for("scatter-sub"))
dispatch.def_numpy_impl(scatter_sub_p, _scatter_numpy_for(np.subtract.at))
mlir.register_lowering(scatter_sub_p, _scatter_lower_for(binary.sub_p))
ad.primitive_jvps[scatter_sub_p] = _linear_scatter_jvp(scatter_sub_p)
ad.primitive_transposes[scatter_sub_p] = _linear_scatter_transpose(True)
batching.axis_size_batchers[scatter_sub_p] = _scatter_batch_for(scatter_sub_p)
inv.not_invertible(scatter_sub_p, "many-to-one: the parts of a difference are lost")


# --- scatter-mul ---------------------------------------------------------------------------------
def scatter_mul(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
  """XLA's scatter with multiplication: repeated indices multiply. Arguments as in `scatter`;
  derivatives with respect to `updates` need unique_indices=True (as in JAX)."""
  return _scatter_bind(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def _scatter_mul_jvp(primals, tangents, **params):
  operand, indices, updates = primals
  out = scatter_mul_p.bind(operand, indices, updates, **params)
  t_op, _, t_up = tangents
  t_out = Zero(tangent_aval(get_aval(out)))
  if type(t_op) is not Zero:
    t_out = scatter_mul_p.bind(t_op, indices, updates, **params)
  if type(t_up) is not Zero:
    if not params["unique_indices"]:
      raise NotImplementedError("scatter_mul gradients with respect to updates are only "
                                "implemented if unique_indices=True")
    spread = scatter_add_p.bind(_zeros(get_aval(operand)), indices, t_up, **params)
    t_out = ad.add_tangents(t_out, binary.mul(operand, spread))
  return out, t_out


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
  if is_undefined_primal(updates):
    raise NotImplementedError("scatter_mul is not linear in its updates")
  return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


scatter_mul_p = Primitive("scatter-mul")
scatter_mul_p.def_abstract_eval(_scatter_abstract_eval_for("scatter-mul"))
dispatch.def_numpy_impl(scatter_mul_p, _scatter_numpy_for(np.multiply.at))
mlir.register_lowering(scatter_mul_p, _scatter_lower_for(binary.mul_p))
ad.primitive_jvps[scatter_mul_p] = _scatter_mul_jvp
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose
batching.axis_size_batchers[scatter_mul_p] = _scatter_batch_for(scatter_mul_p)
inv.not_invertible(scatter_mul_p, "many-to-one: the factors of a product are lost")


# --- scatter-min, scatter-max --------------------------------------------------------------------
def scatter_min(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
  """XLA's scatter with minimum (NaN wins, as in `lax.min`). Arguments as in `scatter`."""
  return _scatter_bind(scatter_min_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def scatter_max(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
  """XLA's scatter with maximum (NaN wins, as in `lax.max`). Arguments as in `scatter`."""
  return _scatter_bind(scatter_max_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def _scatter_extremum_jvp_for(prim):
  """The tangent of the value that won each position; ties between the operand and updates (or
  among updates) share the tangent equally, as reduce_max's JVP does."""
  def rule(primals, tangents, **params):
    operand, indices, updates = primals
    out = prim.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    t_op, t_up = _instantiate(t_op, operand), _instantiate(t_up, updates)
    dtype = get_aval(out).dtype
    u_aval = get_aval(updates)
    won = comparison.eq(updates, _gather_updates(out, indices, u_aval, **params))
    kept = comparison.eq(operand, out)
    won_f, kept_f = convert_element_type(won, dtype), convert_element_type(kept, dtype)
    zeros = _zeros(get_aval(out))
    count = binary.add(kept_f, scatter_add_p.bind(zeros, indices, won_f, **params))
    total = binary.add(binary.mul(t_op, kept_f),
                       scatter_add_p.bind(zeros, indices, binary.mul(t_up, won_f), **params))
    return out, binary.div(total, count)
  return rule


scatter_min_p = Primitive("scatter-min")
scatter_min_p.def_abstract_eval(_scatter_abstract_eval_for("scatter-min"))
dispatch.def_numpy_impl(scatter_min_p, _scatter_numpy_for(np.minimum.at))
mlir.register_lowering(scatter_min_p, _scatter_lower_for(binary.min_p))
ad.primitive_jvps[scatter_min_p] = _scatter_extremum_jvp_for(scatter_min_p)
batching.axis_size_batchers[scatter_min_p] = _scatter_batch_for(scatter_min_p)

scatter_max_p = Primitive("scatter-max")
scatter_max_p.def_abstract_eval(_scatter_abstract_eval_for("scatter-max"))
dispatch.def_numpy_impl(scatter_max_p, _scatter_numpy_for(np.maximum.at))
mlir.register_lowering(scatter_max_p, _scatter_lower_for(binary.max_p))
ad.primitive_jvps[scatter_max_p] = _scatter_extremum_jvp_for(scatter_max_p)
batching.axis_size_batchers[scatter_max_p] = _scatter_batch_for(scatter_max_p)
inv.not_invertible(scatter_min_p, "many-to-one: the values above the minimum are lost")
inv.not_invertible(scatter_max_p, "many-to-one: the values below the maximum are lost")
