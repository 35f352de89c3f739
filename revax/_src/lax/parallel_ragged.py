"""ragged_all_to_all: the all_to_all of ragged data (segments of different lengths along the
leading axis), one primitive with every rule.

Each member sends segments of its `operand` (`operand[input_offsets[k]:][:send_sizes[k]]`, the
`k`-th to member `k // (K / axis_size)`) and receives into a copy of its `output`: the `i`-th
segment it receives comes from member `i // (K / axis_size)`, has `recv_sizes[i]` rows, and lands
where the sender's `output_offsets` said. So a receiver's write positions are the sender's
`output_offsets`, exchanged by a tiled all_to_all (`oo_recv` below); where it reads them from on
the sender is the sender's `input_offsets`, exchanged the same way (`io_recv`).

Neither XLA:CPU ("HLO opcode `ragged-all-to-all` is not supported by XLA:CPU ThunkEmitter",
measured with jax 0.10.2's custom call) nor JAX's vmap (its collective rule raises
NotImplementedError) computes it on CPU, so revax expresses it with ops every backend has: the
rows of every sender side by side, and per receiver and output row, the one segment covering that
row (a comparison against the exchanged offsets), then a gather of the rows and a select against
`output`. The vmap that owns the axis does this over its batch dimension; inside a manual
shard_map region the senders' rows come from an all_gather and the offsets from all_to_alls, and
the same code places them (`_place`). Rows no segment covers keep `output`'s value; where
segments overlap (undefined in XLA) the row from the later sender position wins.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.interpreters.ad import Zero, is_undefined_primal
from revax._src.lax import batch_util, binary, comparison, conversion, convenience, creation
from revax._src.lax import parallel, reductions, shapes, slicing

__all__ = ["ragged_all_to_all", "ragged_all_to_all_p"]

_INDEX_ARGS = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")

ragged_all_to_all_p = Primitive("ragged_all_to_all")


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, *,
                      axis_name, axis_index_groups=None):
  """The ragged all_to_all of JAX: send `operand[input_offsets[k]:][:send_sizes[k]]` to member
  `k // (K / axis_size)`, where it is written at row `output_offsets[k]` of its `output`; the
  result is `output` with the `K` received segments (sizes `recv_sizes`) written in.

  Args:
    operand: the rows to send, shape (N, ...).
    output: what the result starts from, shape (M, ...) with operand's trailing dims and dtype.
    input_offsets, send_sizes, output_offsets, recv_sizes: integer vectors of one length K, a
      multiple of the axis size (K / axis_size segments per destination member).
    axis_name: the named axis (or tuple of names) of the members.
    axis_index_groups: not supported (NotImplementedError), like revax's other collectives.

  Example:
    >>> # two members; member 0 sends [1] to itself and [2, 2] to member 1, member 1 sends
    >>> # [3] to member 0 (written at its row 1) and [4] to itself (at row 2)
    >>> f = lambda *a: lax.ragged_all_to_all(*a, axis_name="i")
    >>> revax.vmap(f, axis_name="i")(
    ...     jnp.array([[1., 2, 2], [3, 4, 0]]), jnp.zeros((2, 4)), jnp.array([[0, 1], [0, 1]]),
    ...     jnp.array([[1, 2], [1, 1]]), jnp.array([[0, 0], [1, 2]]), jnp.array([[1, 1], [2, 1]]))
    Array([[1., 3., 0., 0.],
           [2., 2., 4., 0.]], dtype=float32)
  """
  parallel._no_groups(axis_index_groups)
  names = parallel._names(axis_name)
  size = parallel._group_size(names)
  op, out = get_aval(operand), get_aval(output)
  index_avals = [get_aval(a) for a in (input_offsets, send_sizes, output_offsets, recv_sizes)]
  for name, aval in zip(_INDEX_ARGS, index_avals):
    if not dtypes.is_integer(aval.dtype):
      raise ValueError(f"ragged_all_to_all {name} must be integer type.")
    if aval.ndim != 1 or aval.shape[0] < 1:
      raise ValueError(f"ragged_all_to_all {name} must be rank 1 with positive dimension size, "
                       f"but got shape {aval.shape}")
  k = index_avals[0].shape[0]
  if any(a.shape[0] != k for a in index_avals):
    raise ValueError("ragged_all_to_all input_offsets, send_sizes, output_offsets and "
                     "recv_sizes must have one length, got shapes "
                     f"{[a.shape for a in index_avals]}")
  if k % size:
    raise ValueError(f"ragged_all_to_all: the length of the offsets and sizes ({k}) must be a "
                     f"multiple of the size of axis {axis_name!r} ({size})")
  if op.ndim < 1 or out.ndim != op.ndim or op.shape[1:] != out.shape[1:]:
    raise ValueError(f"ragged_all_to_all operand and output must be arrays of rank >= 1 with the "
                     f"same trailing dimensions, got shapes {op.shape} and {out.shape}")
  if op.dtype != out.dtype:
    raise TypeError(f"ragged_all_to_all operand and output must have one dtype, got {op.dtype} "
                    f"and {out.dtype}")
  return ragged_all_to_all_p.bind(operand, output, input_offsets, send_sizes, output_offsets,
                                  recv_sizes, axes=names, axis_size=size)


def _abstract_eval(operand, output, *index_avals, axes, axis_size):
  return output.update(weak_type=False)


# --- the placement both evaluations share ---------------------------------------------------------
def _i32(x):
  return conversion.convert_element_type(x, np.int32)


def _place(rows, output, io_recv, oo_recv, recv_sizes, n_rows: int, per_member: int):
  """Every receiver's result. `rows` (S * n_rows, ...): the operands of the S senders, one after
  the other; `output` (R, M, ...); `io_recv`, `oo_recv`, `recv_sizes` (R, K): for receiver r and
  received segment i (from sender i // per_member), where it starts in its sender's operand,
  where it goes in r's result, and its length."""
  r, m = get_aval(output).shape[:2]
  k = get_aval(io_recv).shape[1]
  io_recv, oo_recv, recv_sizes = _i32(io_recv), _i32(oo_recv), _i32(recv_sizes)
  grid = (r, k, m)
  row = shapes.broadcasted_iota(np.int32, grid, 2)  # the output row
  lo = shapes.broadcast_in_dim(oo_recv, grid, (0, 1))
  hi = binary.add(lo, shapes.broadcast_in_dim(recv_sizes, grid, (0, 1)))
  covered = binary.bitwise_and(comparison.le(lo, row), comparison.lt(row, hi))
  # the row of `rows` that lands on this output row: the sender's block, the segment's start
  # there, and the distance into the segment
  base = np.asarray(np.arange(k) // per_member * n_rows, np.int32)
  start = binary.add(shapes.broadcast_in_dim(io_recv, grid, (0, 1)),
                     shapes.broadcast_in_dim(base, grid, (1,)))
  source = binary.add(start, binary.sub(row, lo))
  none = creation.full(grid, -1, np.int32)
  picked = reductions.reduce_max(convenience.select(covered, source, none), (1,))  # (R, M)
  hit = comparison.ge(picked, np.int32(0))
  index = binary.max(picked, np.int32(0))
  trailing = get_aval(rows).shape[1:]
  dn = slicing.GatherDimensionNumbers(offset_dims=tuple(range(2, 2 + len(trailing))),
                                      collapsed_slice_dims=(0,), start_index_map=(0,))
  received = slicing.gather(rows, shapes.reshape(index, (r, m, 1)), dn, (1,) + trailing,
                            mode="clip")
  hit = shapes.broadcast_in_dim(hit, get_aval(output).shape, (0, 1))
  return convenience.select(hit, received, output)


def _exchange(a, size: int):
  """(S senders, K) -> (S receivers, K): receiver r's i-th entry is sender i // (K/S)'s entry
  r * (K/S) + i % (K/S) (a tiled all_to_all over the batch dimension)."""
  s, k = get_aval(a).shape
  a = shapes.reshape(a, (s, size, k // size))
  return shapes.reshape(shapes.transpose(a, (1, 0, 2)), (size, k))


# --- rules ----------------------------------------------------------------------------------------
def _collective(size, axis_name, vals, dims, *, axes, axis_size):
  """The vmap that owns the axis: the members are the batch."""
  if parallel._remaining(axes, axis_name):
    raise NotImplementedError("ragged_all_to_all over several axis names under vmap")
  operand, output, io, ss, oo, rs = (batch_util.bdim_at(x, d, 0, size)
                                     for x, d in zip(vals, dims))
  n = get_aval(operand).shape[1]
  k = get_aval(io).shape[1]
  rows = shapes.reshape(operand, (size * n,) + get_aval(operand).shape[2:])
  out = _place(rows, output, _exchange(io, size), _exchange(oo, size), rs, n, k // size)
  return out, 0


def _batch(size, vals, dims, *, axes, axis_size):
  """A vmap over another axis: each example's segments become segments of one operand (rows of
  example b start at b * N), sent along the same destinations (as JAX's rule)."""
  operand, output = (batch_util.bdim_at(x, d, 0, size) for x, d in zip(vals[:2], dims[:2]))
  op_shape, out_shape = get_aval(operand).shape, get_aval(output).shape
  n, m = op_shape[1], out_shape[1]
  offsets = [batch_util.bdim_at(x, d, 1, size) for x, d in zip(vals[2:], dims[2:])]  # (K, B)

  def shifted(a, stride):
    step = shapes.broadcast_in_dim(np.arange(size, dtype=np.int32) * np.int32(stride),
                                   get_aval(a).shape, (1,))
    return binary.add(a, conversion.convert_element_type(step, get_aval(a).dtype))
  io, ss, oo, rs = offsets
  io, oo = shifted(io, n), shifted(oo, m)
  out = ragged_all_to_all_p.bind(
      shapes.reshape(operand, (size * n,) + op_shape[2:]),
      shapes.reshape(output, (size * m,) + out_shape[2:]),
      *(shapes.reshape(a, (get_aval(a).shape[0] * size,)) for a in (io, ss, oo, rs)),
      axes=axes, axis_size=axis_size)
  return shapes.reshape(out, out_shape), 0


def _jvp(primals, tangents, *, axes, axis_size):
  out = ragged_all_to_all_p.bind(*primals, axes=axes, axis_size=axis_size)
  d_operand, d_output = tangents[:2]
  if type(d_operand) is Zero and type(d_output) is Zero:
    return out, Zero(d_output.aval.update(weak_type=False))
  d_out = ragged_all_to_all_p.bind(ad.instantiate_zeros(d_operand),
                                   ad.instantiate_zeros(d_output), *primals[2:], axes=axes,
                                   axis_size=axis_size)
  return out, d_out


def _covered(ct, oo_recv, recv_sizes):
  """Which rows of a member's result some received segment wrote (bool, ct's shape)."""
  m, k = get_aval(ct).shape[0], get_aval(oo_recv).shape[0]
  row = shapes.broadcasted_iota(np.int32, (k, m), 1)
  lo = shapes.broadcast_in_dim(_i32(oo_recv), (k, m), (0,))
  hi = binary.add(lo, shapes.broadcast_in_dim(_i32(recv_sizes), (k, m), (0,)))
  hit = reductions.reduce_or(binary.bitwise_and(comparison.le(lo, row), comparison.lt(row, hi)),
                             (0,))
  return shapes.broadcast_in_dim(hit, get_aval(ct).shape, (0,))


def _transpose(ct, operand, output, io, ss, oo, rs, *, axes, axis_size):
  """The segments travel back: each receiver sends the cotangent rows it received to their
  sender, landing at the sender's input offsets; `output` gets the cotangent of the rows no
  segment overwrote (as JAX's rule)."""
  exchange = lambda a: parallel.all_to_all_p.bind(a, axes=axes, split_axis=0, concat_axis=0,
                                                  axis_size=axis_size, tiled=True)
  oo_recv, io_recv = exchange(oo), exchange(io)
  ct_operand = ct_output = None
  if is_undefined_primal(operand):
    zeros = creation.full(operand.aval.shape, 0, operand.aval.dtype)
    ct_operand = ragged_all_to_all_p.bind(ct, zeros, oo_recv, rs, io_recv, ss, axes=axes,
                                          axis_size=axis_size)
  if is_undefined_primal(output):
    ct_output = convenience.select(_covered(ct, oo_recv, rs), creation.zeros_like_array(ct), ct)
  return [ct_operand, ct_output, None, None, None, None]


def _by_exchange(operand, output, io, ss, oo, rs, *, axes, axis_size):
  """Inside a manual shard_map region: every sender's rows by an all_gather, the offsets by
  all_to_alls, then the same placement for this member."""
  rows = parallel.all_gather_p.bind(operand, axes=axes, axis=0, axis_size=axis_size, tiled=True)
  exchange = lambda a: parallel.all_to_all_p.bind(a, axes=axes, split_axis=0, concat_axis=0,
                                                  axis_size=axis_size, tiled=True)
  lead = lambda a: shapes.expand_dims(a, (0,))
  k = get_aval(io).shape[0]
  out = _place(rows, lead(output), lead(exchange(io)), lead(exchange(oo)), lead(rs),
               get_aval(operand).shape[0], k // axis_size)
  return shapes.squeeze(out, (0,))


ragged_all_to_all_p.def_abstract_eval(_abstract_eval)
dispatch.custom_impls[ragged_all_to_all_p] = parallel._unbound_impl("ragged_all_to_all")
batching.collective_batchers[ragged_all_to_all_p] = _collective
batching.axis_size_batchers[ragged_all_to_all_p] = _batch
ad.primitive_jvps[ragged_all_to_all_p] = _jvp
ad.primitive_transposes[ragged_all_to_all_p] = _transpose
mlir.register_lowering(ragged_all_to_all_p, parallel._no_lowering("ragged_all_to_all"))
parallel.manual_lowerings["ragged_all_to_all"] = mlir.lower_fun(_by_exchange,
                                                                multiple_results=False)
inv.not_invertible(ragged_all_to_all_p, "the rows no segment is sent from are lost")
