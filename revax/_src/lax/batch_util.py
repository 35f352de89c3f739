"""Helpers for batching rules: moving, inserting and aligning batch dimensions.

Rules call these to put a batch dimension where an operation needs it; each does nothing when the
dimension is already there, so a rule never pays for a transpose it does not need.
"""
from __future__ import annotations

from revax._src.core.avals import get_aval
from revax._src.interpreters import ad, batching
from revax._src.interpreters.batching import not_mapped
from revax._src.lax import shapes

__all__ = []


def moveaxis(x, src: int, dst: int):
  """Move axis `src` of `x` to position `dst` (a transpose, or nothing when src == dst)."""
  nd = get_aval(x).ndim
  src, dst = src % nd, dst % nd
  if src == dst:
    return x
  perm = [i for i in range(nd) if i != src]
  perm.insert(dst, src)
  return shapes.transpose(x, tuple(perm))


def bdim_at(x, dim, dst: int, size: int):
  """`x` with its batch dim at `dst`; an unmapped `x` is broadcast to `size` there."""
  if dim is not_mapped:
    return broadcast_batched(x, size, dst)
  return moveaxis(x, dim, dst)


def bdim_to_front(x, dim, size: int):
  return bdim_at(x, dim, 0, size)


def broadcast_batched(x, size: int, dst: int = 0):
  """Materialize an unmapped `x` as a batch of `size` copies along a new axis `dst`."""
  aval = get_aval(x)
  shape = aval.shape[:dst] + (size,) + aval.shape[dst:]
  dims = tuple(i if i < dst else i + 1 for i in range(aval.ndim))
  return shapes.broadcast_in_dim(x, shape, dims)


def insert_unit_dim(x, dst: int):
  """`x` with a new size-1 axis at `dst` (a reshape: no data moves)."""
  aval = get_aval(x)
  return shapes.reshape(x, aval.shape[:dst] + (1,) + aval.shape[dst:])


def _add_any_batch(axis_size, vals, dims):
  """add_any (the accumulation of tangents, defined by the autodiff interpreter, which has no
  ops of its own to batch with) needs operands of one shape: align both at one batch dim."""
  x, y = vals
  dx, dy = dims
  d = dx if dx is not not_mapped else dy
  return ad.add_any_p.bind(bdim_at(x, dx, d, axis_size), bdim_at(y, dy, d, axis_size)), d


batching.axis_size_batchers[ad.add_any_p] = _add_any_batch
