"""Where a one-device jit call's operands go and whether its results are committed, by JAX's
rules for committed arrays (runtime/placement.py): only the arguments the program reads count,
as JAX prunes the others before placing the call."""
from __future__ import annotations

from revax._src import tree_util
from revax._src.runtime import array as _array
from revax._src.runtime import placement as _placement

__all__ = ["commit_if_read", "used_leaves", "placed_operands"]


def commit_if_read(entry, leaves, outs) -> None:
  """Mark the Arrays among `outs` (a jit call's results) committed when the program reads a
  committed argument among `leaves` (its dynamic arguments), as JAX commits a jit's results. An
  argument the program does not read does not count: JAX prunes it before the call. An output
  that is an argument itself keeps its own commitment."""
  if not _array.any_committed(leaves):
    return
  if _array.any_committed([a for a, u in zip(leaves, entry.reads()) if u]):
    _array.commit_results(tree_util.tree_leaves(outs), leaves)


def used_leaves(entry, leaves) -> list:
  """`leaves` (a call's dynamic arguments), with None for each one `entry`'s program does not
  read."""
  return [a if u else None for a, u in zip(leaves, entry.reads())]


def placed_operands(entry, leaves, operands, fun_name: str, names=None) -> list:
  """`operands` (constants, then the dynamic `leaves`) placed by JAX's rule for committed
  arrays (runtime/placement.py): on the device the committed arguments the program reads share
  (ValueError naming two that differ); an argument it does not read does not count (JAX prunes
  it) but still moves, as the program takes every operand on one device; with no committed
  argument read, the default device (closed-over constants do not count, as in JAX: one
  committed elsewhere moves there). Unchanged when no argument is committed and every operand
  is on the default device. Called off the cached call path (`CallPlan` runs arguments that
  all live on one device itself), and only once some Array was committed. `fun_name` and
  `names` (a thunk naming the leaves) are for the error message."""
  if _array.any_committed(leaves):
    device = _placement.committed_device(used_leaves(entry, leaves), fun_name, names)
  elif all(map(_placement.on_default_device, entry.consts)):
    return operands  # (uncommitted arguments are where they run, or uploaded there)
  else:
    device = None
  if device is None:
    device = _placement.default_device()
  return [_placement.on_device(x, device) for x in operands]
