"""Primitives that cut an array into pieces or build one from several: split, unstack, stack
and tile (jax.lax's split_p, unstack_p, stack_p, tile_p).

Each is structural: its lowering is the slices, reshapes, broadcasts and concatenation XLA
would be given for it anyway, and its transformation rules are those of a linear map (split
and unstack transpose to a concatenation or stack of their cotangents and back, tile to a sum
over its copies). Each primitive is one block: its public wrapper, then its rules, then their
registration.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src.core import sharding_types as st
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, shapes, slicing
from revax._src.lax.standard import same_dtypes

__all__ = ["split", "unstack", "stack", "tile", "split_p", "unstack_p", "stack_p", "tile_p"]


def _axis(axis, ndim, name="axis"):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
  return axis % ndim


def _piece(x, axis, start, stop):
  """x[..., start:stop, ...] along `axis` (a slice_p)."""
  shape = get_aval(x).shape
  lo = tuple(start if d == axis else 0 for d in range(len(shape)))
  hi = tuple(stop if d == axis else n for d, n in enumerate(shape))
  return slicing.slice(x, lo, hi)


# --- split ---------------------------------------------------------------------------------------
def split(operand, sizes, axis=0):
  """Splits an array along `axis` into pieces of the given `sizes`.

  Args:
    operand: an array to split.
    sizes: the sizes of the pieces; they must sum to the size of `axis`.
    axis: the axis along which to split (negative counts from the end).

  Returns:
    A list of `len(sizes)` arrays.

  Example:
    >>> lax.split(jnp.arange(5), (2, 3))
    [Array([0, 1], dtype=int32), Array([2, 3, 4], dtype=int32)]
  """
  ndim = len(get_aval(operand).shape)
  sizes = tuple(operator.index(s) for s in sizes)
  return list(split_p.bind(operand, sizes=sizes, axis=_axis(axis, ndim)))


def _split_abstract_eval(x, *, sizes, axis):
  if any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
  if sum(sizes) != x.shape[axis]:
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                     f"operand shape {list(x.shape)}")
  out = []
  for s in sizes:
    shape = list(x.shape)
    shape[axis] = s
    out.append(ShapedArray(shape, x.dtype, x.weak_type))
  return out


def _split_numpy(x, *, sizes, axis):
  return np.split(x, np.cumsum(sizes[:-1]).astype(int), axis=axis)


def _split_lower(ctx, x, *, sizes, axis):
  aval = ctx.avals_in[0]
  outs, start = [], 0
  for out_aval, s in zip(ctx.avals_out, sizes, strict=True):
    lo = [start if d == axis else 0 for d in range(aval.ndim)]
    hi = [start + s if d == axis else n for d, n in enumerate(aval.shape)]
    outs.append(ctx.op1("stablehlo.slice", [x], out_aval,
                        props={"start_indices": mlir.i64_array(lo),
                               "limit_indices": mlir.i64_array(hi),
                               "strides": mlir.i64_array([1] * aval.ndim)}))
    start += s
  return outs


def _split_jvp(primals, tangents, *, sizes, axis):
  (x,), (t,) = primals, tangents
  out = split_p.bind(x, sizes=sizes, axis=axis)
  if type(t) is ad.Zero:
    return out, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in out]
  return out, split_p.bind(t, sizes=sizes, axis=axis)


def _split_transpose(cts, x, *, sizes, axis):
  if all(type(c) is ad.Zero for c in cts):
    return [ad.Zero(x.aval)]
  return [shapes.concatenate([ad.instantiate_zeros(c) for c in cts], axis)]


def _split_batch(vals, dims, *, sizes, axis):
  (x,), (d,) = vals, dims
  out = split_p.bind(x, sizes=sizes, axis=axis + 1 if axis >= d else axis)
  return out, [d] * len(sizes)


def _split_inverse(outs, ins, avals_in, *, sizes, axis):
  return [shapes.concatenate(list(outs), axis)]


split_p = Primitive("split", multiple_results=True)
split_p.def_abstract_eval(_split_abstract_eval)
dispatch.def_numpy_impl(split_p, _split_numpy)
mlir.register_lowering(split_p, _split_lower)
ad.primitive_jvps[split_p] = _split_jvp
ad.primitive_transposes[split_p] = _split_transpose
batching.primitive_batchers[split_p] = _split_batch
inv.definverse(split_p, _split_inverse, inv.all_unknown_ok)


# --- unstack -------------------------------------------------------------------------------------
def unstack(x, axis=0):
  """Unstacks an array along an axis.

  Args:
    x: the array to unstack.
    axis: the axis along which to unstack it (negative counts from the end).

  Returns:
    A tuple of the slices of `x` along `axis`.

  Example:
    >>> lax.unstack(jnp.array([[1, 2], [3, 4]]), axis=1)
    (Array([1, 3], dtype=int32), Array([2, 4], dtype=int32))
  """
  ndim = len(get_aval(x).shape)
  if ndim == 0:
    raise ValueError("unstack requires arrays with rank > 0, however a scalar array of shape () "
                     "was passed.")
  return tuple(unstack_p.bind(x, axis=_axis(axis, ndim)))


def _unstack_abstract_eval(x, *, axis):
  if x.ndim == 0:
    raise ValueError(f"unstack requires arrays with rank > 0, however a scalar array of shape "
                     f"{x.shape} was passed.")
  shape = x.shape[:axis] + x.shape[axis + 1:]
  return [ShapedArray(shape, x.dtype, x.weak_type)] * x.shape[axis]


def _unstack_numpy(x, *, axis):
  return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _unstack_lower(ctx, x, *, axis):
  aval = ctx.avals_in[0]
  piece = aval.update(shape=aval.shape[:axis] + (1,) + aval.shape[axis + 1:])
  outs = []
  for i, out_aval in enumerate(ctx.avals_out):
    lo = [i if d == axis else 0 for d in range(aval.ndim)]
    hi = [i + 1 if d == axis else n for d, n in enumerate(aval.shape)]
    s = ctx.op1("stablehlo.slice", [x], piece,
                props={"start_indices": mlir.i64_array(lo), "limit_indices": mlir.i64_array(hi),
                       "strides": mlir.i64_array([1] * aval.ndim)})
    outs.append(ctx.op1("stablehlo.reshape", [s], out_aval))
  return outs


def _unstack_jvp(primals, tangents, *, axis):
  (x,), (t,) = primals, tangents
  out = unstack_p.bind(x, axis=axis)
  if type(t) is ad.Zero:
    return out, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in out]
  return out, unstack_p.bind(t, axis=axis)


def _unstack_transpose(cts, x, *, axis):
  if all(type(c) is ad.Zero for c in cts):
    return [ad.Zero(x.aval)]
  return [stack_p.bind(*[ad.instantiate_zeros(c) for c in cts], axis=axis)]


def _unstack_batch(vals, dims, *, axis):
  (x,), (d,) = vals, dims
  out_axis, out_d = (axis, d - 1) if axis < d else (axis + 1, d)
  out = unstack_p.bind(x, axis=out_axis)
  return out, [out_d] * len(out)


def _unstack_inverse(outs, ins, avals_in, *, axis):
  return [stack_p.bind(*outs, axis=axis)]


unstack_p = Primitive("unstack", multiple_results=True)
unstack_p.def_abstract_eval(_unstack_abstract_eval)
dispatch.def_numpy_impl(unstack_p, _unstack_numpy)
mlir.register_lowering(unstack_p, _unstack_lower)
ad.primitive_jvps[unstack_p] = _unstack_jvp
ad.primitive_transposes[unstack_p] = _unstack_transpose
batching.primitive_batchers[unstack_p] = _unstack_batch
inv.definverse(unstack_p, _unstack_inverse, inv.all_unknown_ok)


# --- stack ---------------------------------------------------------------------------------------
def stack(operands, axis=0):
  """Joins a sequence of arrays along a new axis.

  Args:
    operands: a sequence of arrays of one shape and dtype.
    axis: the position of the new axis in the result (negative counts from the end).

  Returns:
    The stacked array.

  Example:
    >>> lax.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
    Array([[1, 3],
           [2, 4]], dtype=int32)
  """
  operands = list(operands)
  if not operands:
    raise ValueError("stack expects at least one operand, got 0.")
  axis = _axis(axis, len(get_aval(operands[0]).shape) + 1)
  return stack_p.bind(*operands, axis=axis)


def _stack_abstract_eval(*xs, axis):
  if not xs:
    raise ValueError("stack expects at least one operand, got 0.")
  if len({x.ndim for x in xs}) != 1:
    raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got "
                     f"{', '.join(str(x.shape) for x in xs)}.")
  if len({x.shape for x in xs}) != 1:
    raise ValueError(f"All input arrays must have the same shape. Got "
                     f"{', '.join(str(x.shape) for x in xs)}.")
  dtype = same_dtypes("stack", xs)
  shape = list(xs[0].shape)
  shape.insert(axis, len(xs))
  return ShapedArray(shape, dtype, all(x.weak_type for x in xs))


def _stack_numpy(*xs, axis):
  return np.stack(xs, axis=axis)


def _stack_lower(ctx, *xs, axis):
  aval = ctx.avals_in[0]
  piece = aval.update(shape=aval.shape[:axis] + (1,) + aval.shape[axis:], sharding=None)
  dims = mlir.i64_array([d for d in range(aval.ndim + 1) if d != axis])
  parts = [ctx.op1("stablehlo.broadcast_in_dim", [x], piece, props={"broadcast_dimensions": dims})
           for x in xs]
  if len(parts) == 1:
    return ctx.op1("stablehlo.reshape", parts, ctx.avals_out[0])
  return ctx.op1("stablehlo.concatenate", parts, props={"dimension": f"{axis} : i64"})


def _stack_transpose(ct, *xs, axis):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None for x in xs]
  cts = unstack_p.bind(ct, axis=axis)
  return [c if ad.is_undefined_primal(x) else None for c, x in zip(cts, xs, strict=True)]


def _stack_batch(vals, dims, *, axis):
  d = dims[0]
  if d is not None and all(e == d for e in dims):
    out_axis, out_d = (axis, d + 1) if axis <= d else (axis + 1, d)
    return stack_p.bind(*vals, axis=out_axis), out_d
  size = next(get_aval(x).shape[e] for x, e in zip(vals, dims, strict=True) if e is not None)
  operands = [batch_util.bdim_at(x, e, 0, size) for x, e in zip(vals, dims, strict=True)]
  return stack_p.bind(*operands, axis=axis + 1), 0


def _stack_inverse(outs, ins, avals_in, *, axis):
  return list(unstack_p.bind(outs[0], axis=axis))


stack_p = Primitive("stack")
stack_p.def_abstract_eval(_stack_abstract_eval)
dispatch.def_numpy_impl(stack_p, _stack_numpy)
mlir.register_lowering(stack_p, _stack_lower)
ad.deflinear(stack_p, _stack_transpose)
batching.primitive_batchers[stack_p] = _stack_batch
inv.definverse(stack_p, _stack_inverse, inv.all_unknown_ok)


# --- tile ----------------------------------------------------------------------------------------
def tile(operand, reps):
  """Tiles an array by repeating it along each dimension.

  Args:
    operand: an array to tile.
    reps: how many times to repeat it along each dimension (one count per dimension).

  Returns:
    An array of shape `(operand.shape[0] * reps[0], ..., operand.shape[-1] * reps[-1])`.

  Raises:
    ShardingTypeError: as JAX's, the operand is split along a dimension tiled more than once
      (the result is split as the operand).

  Example:
    >>> lax.tile(jnp.array([1, 2, 3]), (2,))
    Array([1, 2, 3, 1, 2, 3], dtype=int32)
  """
  aval = get_aval(operand)
  reps = tuple(operator.index(r) for r in reps)
  if len(reps) != len(aval.shape):
    raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                    f"and x.ndim={len(aval.shape)}.")
  for i, (r, part) in enumerate(zip(reps, st.spec_parts(aval), strict=True)):
    if r != 1 and part is not None:
      raise st.ShardingTypeError(
          f"Operand cannot be sharded on dimension {i} when the tiling is non-trivial. Got "
          f"input type: {aval.str_short(short_dtypes=False)} with reps: {reps}")
  return tile_p.bind(operand, reps=reps)


def _tile_abstract_eval(x, *, reps):
  if x.ndim != len(reps):
    raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                    f"and x.ndim={x.ndim}.")
  if any(r < 0 for r in reps):  # (a TypeError, as the other shape primitives' negative sizes)
    raise TypeError(f"tile reps must be non-negative, got {reps}")
  return x.update(shape=tuple(n * r for n, r in zip(x.shape, reps, strict=True)))


def _tile_numpy(x, *, reps):
  return np.tile(x, reps)


def _tile_lower(ctx, x, *, reps):
  aval = ctx.avals_in[0]
  interleaved = tuple(d for pair in zip(reps, aval.shape, strict=True) for d in pair)
  wide = aval.update(shape=interleaved, sharding=None)
  b = ctx.op1("stablehlo.broadcast_in_dim", [x], wide,
              props={"broadcast_dimensions": mlir.i64_array(range(1, 2 * aval.ndim, 2))})
  return ctx.op1("stablehlo.reshape", [b])


def _tile_transpose(ct, x, *, reps):
  from revax._src.lax.reductions import reduce_sum
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  interleaved = tuple(d for pair in zip(reps, x.aval.shape, strict=True) for d in pair)
  return [reduce_sum(shapes.reshape(ct, interleaved), tuple(range(0, 2 * len(reps), 2)))]


def _tile_batch(vals, dims, *, reps):
  (x,), (d,) = vals, dims
  return tile_p.bind(x, reps=reps[:d] + (1,) + reps[d:]), d


def _tile_inverse(outs, ins, avals_in, *, reps):
  """The first copy."""
  shape = avals_in[0].shape
  return [slicing.slice(outs[0], (0,) * len(shape), shape)]


tile_p = Primitive("tile")
tile_p.def_abstract_eval(_tile_abstract_eval)
dispatch.def_numpy_impl(tile_p, _tile_numpy)
mlir.register_lowering(tile_p, _tile_lower)
ad.deflinear(tile_p, _tile_transpose)
batching.primitive_batchers[tile_p] = _tile_batch
inv.definverse(tile_p, _tile_inverse,
               lambda known, eqn, facts: min(eqn.params["reps"], default=1) > 0)  # (a copy)
