"""The collectives lowered inside a manual region (shard_map under jit over a mesh of several
devices) to StableHLO collectives over the mesh's partitions.

psum/pmax/pmin -> all_reduce; all_gather -> all_gather; psum_scatter -> reduce_scatter;
all_to_all -> all_to_all; ppermute -> collective_permute; axis_index -> partition_id with the
mesh strides; pbroadcast -> collective_broadcast on GPU, an all_reduce of the source's bits
elsewhere (ragged_all_to_all's lowering is in parallel_ragged.py). Replica groups come from interpreters/manual_lowering.py. The untiled forms are
the tiled collective plus a reshape (all_gather, psum_scatter) or a transpose (all_to_all).
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray
from revax._src.interpreters import mlir
from revax._src.interpreters import manual_lowering as ml
from revax._src.lax import comparison, parallel

__all__ = []


def _context(ctx, axes):
  mesh, manual = ml.manual_context(ctx)
  for a in axes:
    if a not in mesh:
      raise NameError(f"unbound axis name: {a} (the mesh's axes are {tuple(mesh)})")
    if a not in manual:
      raise ValueError(f"a collective over mesh axis {a!r} inside a shard_map that is not manual "
                       f"over it (manual axes {manual})")
  return mesh


def _common(ctx, axes) -> dict:
  mesh = _context(ctx, axes)
  return {"channel_handle": ml.channel_handle(ctx),
          "replica_groups": ml.groups_attr(ml.replica_groups(mesh, axes))}


_GLOBAL_IDS = {"use_global_device_ids": "unit"}


def _scalar_region(ctx, aval, op_name):
  scalar = mlir.ir_type(ShapedArray((), aval.dtype))

  def body(fb, a, b):
    return fb.op(op_name, [a, b], [scalar])
  return ctx.fb.region([scalar, scalar], body)


def _reduce_op(name, dtype):
  if name == "psum":
    return "stablehlo.or" if dtypes.is_bool(dtype) else "stablehlo.add"
  if name == "pmax":
    return "stablehlo.or" if dtypes.is_bool(dtype) else "stablehlo.maximum"
  return "stablehlo.and" if dtypes.is_bool(dtype) else "stablehlo.minimum"


def _reducer(name):
  def rule(ctx, x, *, axes):
    aval = ctx.avals_in[0]
    props = {**_common(ctx, axes), **_GLOBAL_IDS}
    region = _scalar_region(ctx, aval, _reduce_op(name, aval.dtype))
    return ctx.op1("stablehlo.all_reduce", [x], props=props, regions=[region])
  return rule


def _all_gather(ctx, x, *, axes, axis, axis_size, tiled):
  aval = ctx.avals_in[0]
  if not tiled:
    shape = aval.shape[:axis] + (1,) + aval.shape[axis:]
    aval = aval.update(shape=shape)
    x = ctx.op1("stablehlo.reshape", [x], aval)
  props = {"all_gather_dim": f"{axis} : i64", **_common(ctx, axes), **_GLOBAL_IDS}
  return ctx.op1("stablehlo.all_gather", [x], props=props)


def _psum_scatter(ctx, x, *, axes, scatter_dimension, axis_size, tiled):
  aval, out = ctx.avals_in[0], ctx.avals_out[0]
  shape = list(aval.shape)
  shape[scatter_dimension] //= axis_size
  scattered = aval.update(shape=tuple(shape))
  props = {**_common(ctx, axes), "scatter_dimension": f"{scatter_dimension} : i64",
           **_GLOBAL_IDS}
  region = _scalar_region(ctx, aval, _reduce_op("psum", aval.dtype))
  y = ctx.op1("stablehlo.reduce_scatter", [x], scattered, props=props, regions=[region])
  if scattered.shape != out.shape:  # untiled: the scattered dimension (now 1) goes away
    y = ctx.op1("stablehlo.reshape", [y], out)
  return y


def _ppermute(ctx, x, *, axes, perm):
  mesh = _context(ctx, axes)
  pairs = [(g[s], g[t]) for g in ml.replica_groups(mesh, axes) for s, t in perm]
  arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
  props = {"channel_handle": ml.channel_handle(ctx),
           "source_target_pairs": mlir.i64_dense(arr.reshape(-1), arr.shape)}
  return ctx.op1("stablehlo.collective_permute", [x], props=props)


def _all_to_all(ctx, x, *, axes, split_axis, concat_axis, axis_size, tiled):
  aval, out = ctx.avals_in[0], ctx.avals_out[0]
  common = _common(ctx, axes)
  concat = concat_axis if tiled else split_axis
  shape = list(aval.shape)
  shape[split_axis] //= axis_size
  shape[concat] *= axis_size
  mid = aval.update(shape=tuple(shape))
  props = {"channel_handle": common["channel_handle"], "concat_dimension": f"{concat} : i64",
           "replica_groups": common["replica_groups"], "split_count": f"{axis_size} : i64",
           "split_dimension": f"{split_axis} : i64"}
  y = ctx.op1("stablehlo.all_to_all", [x], mid, props=props)
  if tiled or split_axis == concat_axis:
    return y
  # untiled: the received members are along split_axis; move that axis to concat_axis
  order = [d for d in range(aval.ndim) if d != split_axis]
  order.insert(concat_axis, split_axis)
  return ctx.op1("stablehlo.transpose", [y], out, props={"permutation": mlir.i64_array(order)})


def _axis_index(ctx, *, axes):
  return _member_index(ctx, _context(ctx, axes), axes)


def _member_index(ctx, mesh, axes):
  """This partition's index among the members of `axes` (row-major), an i32 scalar."""
  i32 = ShapedArray((), np.dtype(np.int32))
  pid = ctx.op1("stablehlo.partition_id", [], ShapedArray((), np.dtype(np.uint32)))
  pid = ctx.op1("stablehlo.convert", [pid], i32)
  names = list(mesh)
  const = lambda v: ctx.constant(np.asarray(v, np.int32), i32)
  index = None
  for a in axes:
    stride = int(np.prod([mesh[b] for b in names[names.index(a) + 1:]], dtype=np.int64))
    coord = ctx.op1("stablehlo.divide", [pid, const(stride)], i32)
    coord = ctx.op1("stablehlo.remainder", [coord, const(mesh[a])], i32)
    if index is None:
      index = coord
    else:
      index = ctx.op1("stablehlo.multiply", [index, const(mesh[a])], i32)
      index = ctx.op1("stablehlo.add", [index, coord], i32)
  return index


_GPU = ("cuda", "rocm", "gpu")


def _pbroadcast(ctx, x, *, axes, sizes, source):
  """The source member's value on every member: `collective_broadcast` with the source first in
  each group where the backend has it (GPU). XLA:CPU has no collective-broadcast ("HLO opcode
  `collective-broadcast` is not supported by XLA:CPU ThunkEmitter", measured), so elsewhere it is
  an all_reduce in which every member but the source contributes zeros (JAX's documented
  equivalent), done so that the source's bits arrive exactly (-0.0, NaN payloads): a float is
  summed as its bit pattern (an unsigned integer, to which adding zeros is exact; XLA:CPU's
  all-reduce has no bitwise OR for integers, measured), a complex number as its two parts."""
  mesh = _context(ctx, axes)
  if ctx.platform in _GPU:
    groups = [[g[source]] + g[:source] + g[source + 1:] for g in ml.replica_groups(mesh, axes)]
    props = {"channel_handle": ml.channel_handle(ctx), "replica_groups": ml.groups_attr(groups)}
    return ctx.op1("stablehlo.collective_broadcast", [x], props=props)
  i32 = ShapedArray((), np.dtype(np.int32))
  index = _member_index(ctx, mesh, axes)
  is_source = comparison.compare(ctx, index, ctx.constant(np.int32(source), i32), "EQ", i32)
  return _from_source(ctx, x, ctx.avals_in[0], is_source, axes)


def _from_source(ctx, x, aval, is_source, axes):
  """All-reduce `x` where only the source contributes (others give zeros), bit-exactly."""
  if dtypes.is_complex(aval.dtype):
    part = aval.update(dtype=np.dtype(np.float32 if aval.dtype == np.complex64 else np.float64))
    re, im = (_from_source(ctx, ctx.op1(f"stablehlo.{op}", [x], part), part, is_source, axes)
              for op in ("real", "imag"))
    return ctx.op1("stablehlo.complex", [re, im], aval)
  bits = aval
  if dtypes.is_inexact(aval.dtype):  # a float: its bit pattern, an unsigned int of its width
    bits = aval.update(dtype=np.dtype(f"uint{8 * aval.dtype.itemsize}"))
    x = ctx.op1("stablehlo.bitcast_convert", [x], bits)
  zero = ctx.constant(np.zeros((), bits.dtype), bits.update(shape=()))
  zeros = ctx.op1("stablehlo.broadcast_in_dim", [zero], bits,
                  props={"broadcast_dimensions": mlir.i64_array([])})
  masked = ctx.op1("stablehlo.select", [is_source, x, zeros], bits)
  props = {**_common(ctx, axes), **_GLOBAL_IDS}
  combine = "stablehlo.or" if dtypes.is_bool(aval.dtype) else "stablehlo.add"
  region = _scalar_region(ctx, bits, combine)
  y = ctx.op1("stablehlo.all_reduce", [masked], bits, props=props, regions=[region])
  return y if bits is aval else ctx.op1("stablehlo.bitcast_convert", [y], aval)


parallel.manual_lowerings.update({
    "psum": _reducer("psum"), "pmax": _reducer("pmax"), "pmin": _reducer("pmin"),
    "all_gather": _all_gather, "psum_scatter": _psum_scatter, "ppermute": _ppermute,
    "all_to_all": _all_to_all, "axis_index": _axis_index,
    "pbroadcast": _pbroadcast,
})
