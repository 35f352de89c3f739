"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, rev, pad, concatenate, iota,
and the wrappers expand_dims, broadcast and broadcast_to_rank (which bind broadcast_in_dim).

Shape parameters are tuples of Python ints; wrappers turn lists and NumPy integers into them.
Dimension arguments follow jax.lax: squeeze and expand_dims accept negative axes (normalized before
bind), transpose, rev and concatenate do not. Each primitive is one block: wrapper, rules,
registration.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes, sharding_types
from revax._src.core.jaxpr import pp_param_rules
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive, Tracer
from revax._src.core.shape_poly import canonical_dim
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util
from revax._src.lax.binary import sub
from revax._src.lax import sharding_constraint
from revax._src.lax.sharding_constraint import placed
from revax._src.lax.standard import as_operand, operand_dtype, same_dtypes
from revax._src.runtime.array import Array


__all__ = [
  "broadcast_in_dim", "broadcast", "broadcast_to_rank", "reshape", "transpose", "squeeze",
  "expand_dims", "rev", "pad", "concatenate", "iota", "broadcasted_iota",
  "broadcast_in_dim_p", "reshape_p", "transpose_p", "squeeze_p", "rev_p", "pad_p",
  "concatenate_p", "iota_p",
]


def _ints(xs, what: str) -> tuple[int, ...]:
  """A tuple of Python ints from a sequence of integers; TypeError naming `what` otherwise."""
  try:
    return tuple(canonical_dim(x) for x in xs)
  except TypeError:
    raise TypeError(f"{what} must be a sequence of integers, got {xs!r}") from None


def _is_array(x) -> bool:
  return isinstance(x, (Array, Tracer))


def _normalize_axis(axis: int, ndim: int) -> int:
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def _shift(dims, at: int) -> tuple[int, ...]:
  """Dimension numbers after inserting a new dimension at position `at`."""
  return tuple(d + 1 if d >= at else d for d in dims)


def _reduce_sum(x, axes):
  from revax._src.lax.reductions import reduce_sum  # reductions builds on this module
  return reduce_sum(x, tuple(axes)) if axes else x


def _slice(x, start_indices, limit_indices, strides=None):
  from revax._src.lax.slicing import slice  # noqa: A004 (slicing builds on this module)
  return slice(x, start_indices, limit_indices, strides)


# --- broadcast_in_dim ----------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  """Broadcast `operand` to `shape`; operand dim i becomes output dim broadcast_dimensions[i].
  `out_sharding` (a sharding; None: as XLA chooses) places the result.

  Example:
    >>> lax.broadcast_in_dim(jnp.array([1, 2, 3]), (2, 3), (1,))  # each row a copy
    Array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
  """
  shape = _ints(shape, "broadcast_in_dim shape")
  broadcast_dimensions = _ints(broadcast_dimensions, "broadcast_in_dim broadcast_dimensions")
  aval = get_aval(operand)
  if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))) and \
      _is_array(operand):
    return placed(operand, out_sharding)  # (a NumPy operand is bound: the Array owns a copy)
  return placed(broadcast_in_dim_p.bind(operand, shape=shape,
                                        broadcast_dimensions=broadcast_dimensions), out_sharding)


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
  if len(broadcast_dimensions) != x.ndim:
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must have one entry per operand "
                    f"dimension: operand shape {x.shape}, broadcast_dimensions {broadcast_dimensions}")
  if any(d < 0 for d in shape):
    raise TypeError(f"broadcast_in_dim shape must have non-negative sizes, got {shape}")
  if any(not 0 <= d < len(shape) for d in broadcast_dimensions) or \
      list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing and in "
                    f"range for output rank {len(shape)}, got {broadcast_dimensions}")
  if any(x.shape[i] != 1 and x.shape[i] != shape[d] for i, d in enumerate(broadcast_dimensions)):
    raise TypeError("broadcast_in_dim operand dimension sizes must either be 1, or be equal to "
                    "their corresponding dimensions in the target broadcast shape; got operand "
                    f"of shape {tuple(x.shape)}, target broadcast shape {tuple(shape)}, "
                    f"broadcast_dimensions {tuple(broadcast_dimensions)} ")
  return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_numpy(x, *, shape, broadcast_dimensions):
  expanded = [1] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    expanded[d] = x.shape[i]
  return np.broadcast_to(x.reshape(expanded), shape)


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions):
  return ctx.op1("stablehlo.broadcast_in_dim", [x],
                 props={"broadcast_dimensions": mlir.i64_array(broadcast_dimensions)})


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
  """Sum the cotangent over the new dims and over the dims that size-1 operand dims were
  broadcast along, then reshape back to the operand's shape."""
  aval = x.aval
  if type(ct) is ad.Zero:
    return [ad.Zero(aval)]
  expanded = [d for i, d in enumerate(broadcast_dimensions) if aval.shape[i] == 1 != shape[d]]
  new = [d for d in range(len(shape)) if d not in broadcast_dimensions]
  summed = _reduce_sum(ct, sorted(new + expanded))
  return [reshape(summed, aval.shape)]


def _broadcast_in_dim_batch(vals, dims, *, shape, broadcast_dimensions):
  """The batch dim becomes a new output dim, placed after the output dim of the operand dim
  before it, so the operand is never moved."""
  (x,), (d,) = vals, dims
  at = broadcast_dimensions[d - 1] + 1 if d else 0
  out_shape = shape[:at] + (get_aval(x).shape[d],) + shape[at:]
  dimensions = _shift(broadcast_dimensions, at)
  return broadcast_in_dim(x, out_shape, dimensions[:d] + (at,) + dimensions[d:]), at


def _broadcast_in_dim_inverse(outs, ins, avals_in, *, shape, broadcast_dimensions):
  """The operand from one copy: index 0 along every dim it was broadcast along."""
  aval = avals_in[0]
  limits = [min(1, n) for n in shape]
  for i, d in enumerate(broadcast_dimensions):
    limits[d] = aval.shape[i]
  return [reshape(_slice(outs[0], (0,) * len(shape), tuple(limits)), aval.shape)]


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract_eval)
pp_param_rules[broadcast_in_dim_p] = lambda params: {  # (as JAX prints it: the shape and
    k: v for k, v in params.items()  # sharding implied by the result's type, no empty dims)
    if k not in ("shape", "sharding") and (k != "broadcast_dimensions" or v)}
dispatch.def_numpy_impl(broadcast_in_dim_p, _broadcast_in_dim_numpy)
mlir.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lower)
ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch
inv.definverse(broadcast_in_dim_p, _broadcast_in_dim_inverse,  # (an empty result holds no copy)
               lambda known, eqn, facts: eqn.outvars[0].aval.size > 0
               or eqn.invars[0].aval.size == 0)


# --- broadcast, broadcast_to_rank (wrappers: bind broadcast_in_dim) -------------------------------
@tree_util.accepts_array_leaves()
def broadcast(operand, sizes, *, out_sharding=None):
  """Add leading dimensions of `sizes` to `operand` (a wrapper over broadcast_in_dim);
  `out_sharding` places the result.

  Example:
    >>> lax.broadcast(jnp.ones((2, 3)), (4,)).shape
    (4, 2, 3)
  """
  sizes = _ints(sizes, "broadcast sizes")
  shape = get_aval(operand).shape
  return broadcast_in_dim(operand, sizes + shape, range(len(sizes), len(sizes) + len(shape)),
                          out_sharding=out_sharding)


def broadcast_to_rank(x, rank: int):
  """Add leading dimensions of size 1 to `x` until it has `rank` dimensions (no-op if it has as
  many or more)."""
  ndim = len(get_aval(x).shape)
  return broadcast(x, (max(operator.index(rank) - ndim, 0) * (1,)))


# --- reshape -------------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  """Reshape `operand` to `new_sizes` (row-major), after transposing by `dimensions` if given.

  Sizes must be non-negative: unlike `numpy.reshape`, -1 is not accepted (as in jax.lax).

  Args:
    operand: the array.
    new_sizes: the new shape; its product must equal the operand's size.
    dimensions: optional permutation of the operand's dimensions applied first.
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Example:
    >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
    >>> lax.reshape(x, (3, 2), dimensions=(1, 0))  # read x in transposed order
    Array([[1, 4],
           [2, 5],
           [3, 6]], dtype=int32)
  """
  new_sizes = _ints(new_sizes, "reshape new_sizes")
  aval = get_aval(operand)
  if dimensions is not None:
    dimensions = _ints(dimensions, "reshape dimensions")
    if dimensions == tuple(range(aval.ndim)):
      dimensions = None
  if new_sizes == aval.shape and dimensions is None and _is_array(operand):
    return placed(operand, out_sharding)
  typed = sharding_constraint.typed_result_param(out_sharding)  # (JAX's param: `sharding`)
  typed = {"sharding": typed["out_sharding"]} if typed else {}
  return placed(reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dimensions, **typed),
                out_sharding)


def _reshape_abstract_eval(x, *, new_sizes, dimensions, sharding=None):
  if any(d < 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must all be non-negative, got {new_sizes}.")
  if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
    raise TypeError(f"reshape dimensions must be a permutation of operand dimensions, got "
                    f"dimensions {dimensions} for shape {x.shape}.")
  if math.prod(new_sizes) != x.size:  # math.prod: Python ints or symbolic sizes
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for shape "
                    f"{x.shape}.")
  return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_numpy(x, *, new_sizes, dimensions, sharding=None):
  if dimensions is not None:
    x = np.transpose(x, dimensions)
  return np.reshape(x, new_sizes)


def _reshape_lower(ctx, x, *, new_sizes, dimensions, sharding=None):
  if dimensions is not None:
    aval = ctx.avals_in[0]
    x = ctx.op1("stablehlo.transpose", [x], aval.update(shape=[aval.shape[d] for d in dimensions]),
                props={"permutation": mlir.i64_array(dimensions)})
  return ctx.op1("stablehlo.reshape", [x])


def _reshape_transpose(ct, x, *, new_sizes, dimensions, sharding=None):
  aval = x.aval
  if type(ct) is ad.Zero:
    return [ad.Zero(aval)]
  if dimensions is None:  # typed as the primal (JAX's rule), so never an ambiguous reshape
    want = sharding_constraint.wanted_type(aval, (get_aval(ct),))
    return [reshape(ct, aval.shape, out_sharding=want.get("out_sharding"))]
  permuted = reshape(ct, tuple(aval.shape[d] for d in dimensions))
  return [transpose(permuted, tuple(int(i) for i in np.argsort(dimensions)))]


def _reshape_batch(vals, dims, *, new_sizes, dimensions, sharding=None):
  """Read the batch dim first (folded into `dimensions`, so no separate transpose), then reshape
  each example."""
  (x,), (d,) = vals, dims
  if sharding is not None or get_aval(x).sharding is not None:
    # a split operand: the batch dimension moved to the front first (a reshape with
    # `dimensions` of a split dimension has no typed result), as JAX's rule does
    if d != 0:
      x = transpose(x, (d,) + tuple(i for i in range(get_aval(x).ndim) if i != d))
    out = None
    if sharding is not None:
      out = sharding_types.make_sharding(
          sharding.mesh, (sharding_types.spec_parts(get_aval(x))[0],)
          + tuple(sharding.spec) + (None,) * (len(new_sizes) - len(sharding.spec)))
    return reshape(x, (get_aval(x).shape[0],) + new_sizes, None if dimensions is None else
                   (0,) + tuple(i + 1 for i in dimensions), out_sharding=out), 0
  order = range(get_aval(x).ndim - 1) if dimensions is None else dimensions
  dimensions = (d,) + tuple(i + (i >= d) for i in order)
  return reshape(x, (get_aval(x).shape[d],) + new_sizes, dimensions), 0


reshape_p = Primitive("reshape")
reshape_p.def_abstract_eval(_reshape_abstract_eval)
dispatch.def_numpy_impl(reshape_p, _reshape_numpy)
mlir.register_lowering(reshape_p, _reshape_lower)
ad.deflinear(reshape_p, _reshape_transpose)
batching.primitive_batchers[reshape_p] = _reshape_batch
inv.definverse(reshape_p, lambda outs, ins, avals_in, *, new_sizes, dimensions, sharding=None:
               _reshape_transpose(outs[0], ad.UndefinedPrimal(avals_in[0]), new_sizes=new_sizes,
                                  dimensions=dimensions), inv.all_unknown_ok)


# --- transpose -----------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def transpose(operand, permutation):
  """Permute the dimensions of `operand`: output dim i is operand dim permutation[i].

  Example:
    >>> lax.transpose(jnp.ones((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
  """
  permutation = _ints(permutation, "transpose permutation")
  if permutation == tuple(range(len(permutation))) and _is_array(operand) \
      and len(permutation) == operand.ndim:
    return operand
  return transpose_p.bind(operand, permutation=permutation)


def _transpose_abstract_eval(x, *, permutation):
  if sorted(permutation) != list(range(x.ndim)):
    raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {permutation} for operand shape {x.shape}.")
  return ShapedArray([x.shape[d] for d in permutation], x.dtype, x.weak_type)


def _transpose_numpy(x, *, permutation):
  return np.transpose(x, permutation)


def _transpose_lower(ctx, x, *, permutation):
  return ctx.op1("stablehlo.transpose", [x], props={"permutation": mlir.i64_array(permutation)})


def _transpose_transpose(ct, x, *, permutation):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [transpose(ct, tuple(int(i) for i in np.argsort(permutation)))]


def _transpose_batch(vals, dims, *, permutation):
  """Extend the permutation: the batch dim stays where it is."""
  (x,), (d,) = vals, dims
  perm = _shift(permutation, d)
  return transpose(x, perm[:d] + (d,) + perm[d:]), d


transpose_p = Primitive("transpose")
transpose_p.def_abstract_eval(_transpose_abstract_eval)
dispatch.def_numpy_impl(transpose_p, _transpose_numpy)
mlir.register_lowering(transpose_p, _transpose_lower)
ad.deflinear(transpose_p, _transpose_transpose)
batching.primitive_batchers[transpose_p] = _transpose_batch
inv.definverse_unary(transpose_p, lambda y, *, permutation: transpose(
    y, tuple(int(i) for i in np.argsort(permutation))))


# --- squeeze -------------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def squeeze(array, dimensions):
  """Remove the size-1 `dimensions` (negative values count from the end) of `array`.

  Example:
    >>> lax.squeeze(jnp.ones((1, 3, 1)), (0, -1)).shape
    (3,)
  """
  dimensions = _ints(dimensions, "squeeze dimensions")
  ndim = len(get_aval(array).shape)
  normalized = tuple(sorted(_normalize_axis(d, ndim) for d in dimensions))
  if len(set(normalized)) != len(normalized):
    raise ValueError(f"dimensions are not unique: {dimensions}")
  if not normalized and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=normalized)


def _squeeze_abstract_eval(x, *, dimensions):
  for d in dimensions:
    if not 0 <= d < x.ndim:
      raise ValueError(f"axis {d} is out of bounds for array of dimension {x.ndim}")
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"dimensions are not unique: {dimensions}")
  if any(x.shape[d] != 1 for d in dimensions):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one, got "
                     f"shape={x.shape} and dimensions={dimensions}")
  shape = [n for i, n in enumerate(x.shape) if i not in dimensions]
  return ShapedArray(shape, x.dtype, x.weak_type)


def _squeeze_numpy(x, *, dimensions):
  return np.squeeze(x, axis=dimensions)


def _squeeze_lower(ctx, x, *, dimensions):
  return ctx.op1("stablehlo.reshape", [x])


def _squeeze_transpose(ct, x, *, dimensions):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [reshape(ct, x.aval.shape)]


def _squeeze_batch(vals, dims, *, dimensions):
  (x,), (d,) = vals, dims
  dimensions = _shift(dimensions, d)
  return squeeze(x, dimensions), d - sum(k < d for k in dimensions)


squeeze_p = Primitive("squeeze")
squeeze_p.def_abstract_eval(_squeeze_abstract_eval)
dispatch.def_numpy_impl(squeeze_p, _squeeze_numpy)
mlir.register_lowering(squeeze_p, _squeeze_lower)
ad.deflinear(squeeze_p, _squeeze_transpose)
batching.primitive_batchers[squeeze_p] = _squeeze_batch
inv.definverse(squeeze_p, lambda outs, ins, avals_in, *, dimensions:
               [reshape(outs[0], avals_in[0].shape)], inv.all_unknown_ok)


# --- expand_dims (a wrapper: binds broadcast_in_dim) ---------------------------------------------
@tree_util.accepts_array_leaves()
def expand_dims(array, dimensions):
  """Insert size-1 dimensions at `dimensions`, positions in the result (negative values count
  from the end of the result). Binds `broadcast_in_dim`, as in JAX.

  Example:
    >>> lax.expand_dims(jnp.ones((2, 3)), (0, -1)).shape
    (1, 2, 3, 1)
  """
  dimensions = _ints(dimensions, "expand_dims dimensions")
  shape = get_aval(array).shape
  ndim_out = len(shape) + len(dimensions)
  inserted = {_normalize_axis(d, ndim_out) for d in dimensions}
  if len(inserted) != len(dimensions):
    raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
  kept = [i for i in range(ndim_out) if i not in inserted]
  out_shape = [1] * ndim_out
  for i, n in zip(kept, shape, strict=True):
    out_shape[i] = n
  return broadcast_in_dim(array, out_shape, kept)


# --- rev -----------------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def rev(operand, dimensions):
  """Reverse `operand` along each of `dimensions` (non-negative, unique).

  Example:
    >>> lax.rev(jnp.arange(3), (0,))
    Array([2, 1, 0], dtype=int32)
  """
  return rev_p.bind(operand, dimensions=_ints(dimensions, "rev dimensions"))


def _rev_abstract_eval(x, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
  if any(d < 0 for d in dimensions):
    raise TypeError(f"rev dimensions must have every element be nonnegative, got {dimensions}.")
  if any(d >= x.ndim for d in dimensions):
    raise TypeError(f"rev dimensions must all be less than operand ndim, got dimensions "
                    f"{dimensions} for operand ndim {x.ndim}.")
  return x


def _rev_numpy(x, *, dimensions):
  return np.flip(x, dimensions) if dimensions else x


def _rev_lower(ctx, x, *, dimensions):
  return ctx.op1("stablehlo.reverse", [x], props={"dimensions": mlir.i64_array(dimensions)})


def _rev_transpose(ct, x, *, dimensions):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [rev(ct, dimensions)]


def _rev_batch(vals, dims, *, dimensions):
  (x,), (d,) = vals, dims
  return rev(x, _shift(dimensions, d)), d


rev_p = Primitive("rev")
rev_p.def_abstract_eval(_rev_abstract_eval)
dispatch.def_numpy_impl(rev_p, _rev_numpy)
mlir.register_lowering(rev_p, _rev_lower)
ad.deflinear(rev_p, _rev_transpose)
batching.primitive_batchers[rev_p] = _rev_batch
inv.definverse_unary(rev_p, lambda y, *, dimensions: rev(y, dimensions))


# --- pad -----------------------------------------------------------------------------------------
def pad(operand, padding_value, padding_config):
  """Pad `operand` with `padding_value`.

  Args:
    operand: the array.
    padding_value: a scalar of the operand's dtype (a Python scalar adopts it).
    padding_config: one `(low, high, interior)` triple per dimension: `low`/`high` elements at
      the start/end (negative values remove elements instead), `interior` (>= 0) elements
      between each pair of neighbours. Removal happens after interior padding.

  Returns:
    An array whose dimension i has size `low + high + n + max(n - 1, 0) * interior`.

  Example:
    >>> lax.pad(jnp.array([1, 2]), 0, [(1, -1, 1)])
    Array([0, 1, 0], dtype=int32)
  """
  padding_value = as_operand(padding_value, operand_dtype(operand))
  config = []
  for entry in padding_config:
    entry = _ints(entry, "pad padding_config entries")
    if len(entry) != 3:
      raise ValueError(f"padding_config entries must be (low, high, interior) triples, got "
                       f"{entry} in {padding_config}")
    config.append(entry)
  return pad_p.bind(operand, padding_value, padding_config=tuple(config))


def _pad_abstract_eval(x, padding_value, *, padding_config):
  if padding_value.shape:
    raise ValueError(f"padding_value must be a scalar; got shape {padding_value.shape}")
  if x.dtype != padding_value.dtype:
    raise TypeError(f"pad operand and padding_value must be same dtype: got {x.dtype.name} and "
                    f"{padding_value.dtype.name}.")
  if len(padding_config) != x.ndim:
    raise ValueError(f"length of padding_config must equal the number of axes of operand, got "
                     f"padding_config {padding_config} for operand shape {x.shape}")
  if any(i < 0 for _, _, i in padding_config):
    raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                     f"padding_config {padding_config}")
  shape = tuple(lo + hi + n + max(n - 1, 0) * i
                for n, (lo, hi, i) in zip(x.shape, padding_config, strict=True))
  if any(n < 0 for n in shape):
    raise ValueError(f"Dimension size after padding is not at least 0, got result shape {shape}, "
                     f"for padding_config {padding_config} and operand shape {x.shape}")
  return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


def _pad_numpy(x, padding_value, *, padding_config):
  # Pad with the positive edges and the interior first, then cut the negative edges off.
  grown, place, cut = [], [], []
  for n, (lo, hi, interior) in zip(x.shape, padding_config, strict=True):
    inner = n + max(n - 1, 0) * interior
    lo_pos, hi_pos = max(lo, 0), max(hi, 0)
    grown.append(lo_pos + inner + hi_pos)
    place.append(slice(lo_pos, lo_pos + inner, interior + 1))
    cut.append(slice(max(-lo, 0), grown[-1] - max(-hi, 0)))
  out = np.full(grown, padding_value, x.dtype)
  out[tuple(place)] = x
  return out[tuple(cut)]


def _pad_lower(ctx, x, padding_value, *, padding_config):
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  return ctx.op1("stablehlo.pad", [x, padding_value],
                 props={"edge_padding_low": mlir.i64_array(lo),
                        "edge_padding_high": mlir.i64_array(hi),
                        "interior_padding": mlir.i64_array(interior)})


def _pad_transpose(ct, x, padding_value, *, padding_config):
  """The operand's cotangent: undo the edge padding (a pad by the negated edges: cropping what
  was added, restoring zeros where elements were cut), then take every (interior + 1)-th
  element. The padding value's: everything else, sum(ct) - sum(operand's cotangent)."""
  x_ud, pv_ud = ad.is_undefined_primal(x), ad.is_undefined_primal(padding_value)
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if x_ud else None, ad.Zero(padding_value.aval) if pv_ud else None]
  unpadded = pad(ct, 0, tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
  shape = get_aval(unpadded).shape
  t_x = _slice(unpadded, (0,) * len(shape), shape, tuple(i + 1 for _, _, i in padding_config))
  t_pv = None
  if pv_ud:
    everything = tuple(range(len(shape)))
    t_pv = sub(_reduce_sum(ct, everything), _reduce_sum(t_x, everything))
  return [t_x if x_ud else None, t_pv]


def _pad_batch(vals, dims, *, padding_config):
  """The batch dim gets no padding. A batched padding value cannot be one scalar: pad with
  zeros, then select the batch's padding values wherever a mask padded the same way is false."""
  from revax._src.lax.comparison import select_n  # comparison builds on this module
  (x, padding_value), (d, pv_d) = vals, dims
  if d is None:
    x, d = batch_util.broadcast_batched(x, get_aval(padding_value).shape[pv_d], 0), 0
  config = padding_config[:d] + ((0, 0, 0),) + padding_config[d:]
  if pv_d is None:
    return pad(x, padding_value, config), d
  aval = get_aval(x)
  padded = pad(x, ad.zeros_like_aval(ShapedArray((), aval.dtype)), config)
  ones = broadcast_in_dim(np.bool_(True), aval.shape, ())
  mask = pad(ones, np.bool_(False), config)
  values = broadcast_in_dim(padding_value, get_aval(padded).shape, (d,))
  return select_n(mask, values, padded), d


def _pad_inverse(outs, ins, avals_in, *, padding_config):
  """The operand is the output without its (non-negative) edges and interior padding."""
  starts = tuple(lo for lo, _, _ in padding_config)
  limits = tuple(n - hi for n, (_, hi, _) in zip(get_aval(outs[0]).shape, padding_config))
  strides = tuple(i + 1 for _, _, i in padding_config)
  return [_slice(outs[0], starts, limits, strides), ins[1]]


pad_p = Primitive("pad")
pad_p.def_abstract_eval(_pad_abstract_eval)
dispatch.def_numpy_impl(pad_p, _pad_numpy)
mlir.register_lowering(pad_p, _pad_lower)
ad.deflinear(pad_p, _pad_transpose)
batching.primitive_batchers[pad_p] = _pad_batch
inv.definverse(pad_p, _pad_inverse, lambda known, eqn, facts: known == (False, True) and
               all(lo >= 0 and hi >= 0 for lo, hi, _ in eqn.params["padding_config"]))


# --- concatenate ---------------------------------------------------------------------------------
@tree_util.accepts_array_leaves()
def concatenate(operands, dimension: int):
  """Join `operands` (same rank and dtype, equal sizes except along `dimension`) along
  `dimension` (non-negative, as in jax.lax).

  Example:
    >>> lax.concatenate([jnp.ones((2, 3)), jnp.zeros((2, 5))], 1).shape
    (2, 8)
  """
  operands = tuple(operands)
  if not operands:
    raise ValueError("concatenate requires a non-empty sequence of arrays")
  dimension = operator.index(dimension)
  if len(operands) == 1 and _is_array(operands[0]):
    return operands[0]
  return concatenate_p.bind(*operands, dimension=dimension)


def _concatenate_abstract_eval(*operands, dimension):
  if not operands:
    raise ValueError("concatenate requires a non-empty sequence of arrays")
  shapes = ", ".join(str(x.shape) for x in operands)
  if len({x.ndim for x in operands}) != 1:
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{shapes}.")
  if not 0 <= dimension < operands[0].ndim:
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                    f"{shapes}.")
  others = {x.shape[:dimension] + x.shape[dimension + 1:] for x in operands}
  if len(others) != 1:
    raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions other than "
                    f"the one being concatenated: concatenating along dimension {dimension} for "
                    f"shapes {shapes}.")
  dtype = same_dtypes("concatenate", operands)
  shape = list(operands[0].shape)
  shape[dimension] = sum(x.shape[dimension] for x in operands)
  return ShapedArray(shape, dtype, all(x.weak_type for x in operands))


def _concatenate_numpy(*operands, dimension):
  return np.concatenate(operands, axis=dimension)


def _concatenate_lower(ctx, *operands, dimension):
  return ctx.op1("stablehlo.concatenate", list(operands), props={"dimension": f"{dimension} : i64"})


def _concatenate_transpose(ct, *operands, dimension):
  """Each linear operand's cotangent is its slice of the cotangent."""
  undefined = [ad.is_undefined_primal(x) for x in operands]
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if u else None for x, u in zip(operands, undefined)]
  shape = get_aval(ct).shape
  cts, start = [], 0
  for x, u in zip(operands, undefined, strict=True):
    size = (x.aval if u else get_aval(x)).shape[dimension]
    if u:
      lo = tuple(start if i == dimension else 0 for i in range(len(shape)))
      hi = tuple(start + size if i == dimension else n for i, n in enumerate(shape))
      cts.append(_slice(ct, lo, hi))
    else:
      cts.append(None)
    start += size
  return cts


def _concatenate_batch(vals, dims, *, dimension):
  """Mapped operands move their batch dim to the first mapped one's; unmapped ones are
  broadcast there (concatenate needs every operand batched)."""
  i = next(i for i, d in enumerate(dims) if d is not None)
  d, size = dims[i], get_aval(vals[i]).shape[dims[i]]
  operands = [batch_util.bdim_at(x, xd, d, size) for x, xd in zip(vals, dims, strict=True)]
  return concatenate(operands, dimension + (dimension >= d)), d


def _concatenate_inverse(outs, ins, avals_in, *, dimension):
  """Each operand is its slice of the output."""
  out, pieces, start = outs[0], [], 0
  shape = get_aval(out).shape
  for aval in avals_in:
    stop = start + aval.shape[dimension]
    pieces.append(_slice(out, tuple(start if d == dimension else 0 for d in range(len(shape))),
                         tuple(stop if d == dimension else n for d, n in enumerate(shape))))
    start = stop
  return pieces


concatenate_p = Primitive("concatenate")
concatenate_p.def_abstract_eval(_concatenate_abstract_eval)
dispatch.def_numpy_impl(concatenate_p, _concatenate_numpy)
mlir.register_lowering(concatenate_p, _concatenate_lower)
ad.deflinear(concatenate_p, _concatenate_transpose)
batching.primitive_batchers[concatenate_p] = _concatenate_batch
inv.definverse(concatenate_p, _concatenate_inverse, inv.all_unknown_ok)


# --- iota ----------------------------------------------------------------------------------------
def iota(dtype, size: int):
  """`[0, 1, ..., size - 1]` as a 1-d array of `dtype` (integer, floating or complex).

  Example:
    >>> lax.iota(jnp.int32, 3)
    Array([0, 1, 2], dtype=int32)
  """
  return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
  """An array of `shape` whose elements count 0, 1, ... along `dimension` (constant along the
  others), placed as `out_sharding` says (None: as XLA chooses).

  Example:
    >>> lax.broadcasted_iota(jnp.int32, (2, 3), 1)
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
  """
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = _ints(shape, "iota shape")
  # (sharding=None as jax's equation holds it; revax places the result after, `placed`)
  return placed(iota_p.bind(dtype=dtype, shape=shape, dimension=operator.index(dimension),
                            sharding=None), out_sharding)


def _iota_abstract_eval(*, dtype, shape, dimension, sharding=None):
  if not (dtypes.is_integer(dtype) or dtypes.is_inexact(dtype)):
    raise TypeError(f"iota does not accept dtype {np.dtype(dtype).name}; it takes integer, "
                    f"floating-point or complex dtypes")
  if any(n < 0 for n in shape):
    raise TypeError(f"iota shape must have every element be nonnegative, got {shape}.")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota dimension must be between 0 and len(shape), got "
                     f"dimension={dimension} for shape={shape}")
  return ShapedArray(shape, dtype, False)


def _iota_numpy(*, dtype, shape, dimension, sharding=None):
  counts = np.arange(shape[dimension]).astype(dtype)
  expanded = [1] * len(shape)
  expanded[dimension] = shape[dimension]
  return np.broadcast_to(counts.reshape(expanded), shape)


def _iota_lower(ctx, *, dtype, shape, dimension, sharding=None):
  return ctx.op1("stablehlo.iota", [], props={"iota_dimension": f"{dimension} : i64"})


def _iota_batch(vals, dims, **params):
  raise TypeError("iota has no operands, so vmap never batches it: a batching rule for it is "
                  "never called")


iota_p = Primitive("iota")
iota_p.def_abstract_eval(_iota_abstract_eval)
dispatch.def_numpy_impl(iota_p, _iota_numpy)
mlir.register_lowering(iota_p, _iota_lower)
ad.not_differentiable(iota_p, "it has no operands (and integer-valued output)")
batching.primitive_batchers[iota_p] = _iota_batch
inv.not_invertible(iota_p, "it has no operands to rebuild")
