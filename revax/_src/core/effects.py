"""Side effects: primitives whose equations must run even when nothing reads their outputs.

A host callback that prints or writes a file (`debug_callback`, `io_callback`) is such a
primitive. Dead-code elimination keeps every equation that has an effect, directly or inside a
nested jaxpr (a loop body or a branch that prints), and never drops a loop or a call holding one.
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr

effectful_primitives: dict = {}  # prim -> None (always) or a predicate on an equation's params


def def_effectful(prim, when=None) -> None:
  """Mark `prim` as having a side effect: always, or when `when(params)` is true (an ffi_call
  declared with `has_side_effect=True`). Its equations are then never removed."""
  effectful_primitives[prim] = when


ordered_primitives: dict = {}  # prim -> predicate on params: is this call ordered?


def def_ordered(prim, when) -> None:
  """Calls of `prim` whose params satisfy `when` run in program order (ordering tokens)."""
  ordered_primitives[prim] = when


def _param_jaxprs(value):
  if isinstance(value, ClosedJaxpr):
    yield value.jaxpr
  elif isinstance(value, Jaxpr):
    yield value
  elif isinstance(value, (tuple, list)):
    for v in value:
      yield from _param_jaxprs(v)


def eqn_has_effects(eqn) -> bool:
  """Whether `eqn` has a side effect, itself or in a jaxpr among its params."""
  prim = eqn.primitive
  if prim in effectful_primitives:
    when = effectful_primitives[prim]
    if when is None or when(eqn.params):
      return True
  if not effectful_primitives:
    return False
  return any(jaxpr_has_effects(j) for v in eqn.params.values() for j in _param_jaxprs(v))


def jaxpr_has_effects(jaxpr: Jaxpr) -> bool:
  """Whether any equation of `jaxpr` (nested ones included) has a side effect."""
  return bool(effectful_primitives) and any(eqn_has_effects(e) for e in jaxpr.eqns)


def jaxpr_has_ordered_effects(jaxpr: Jaxpr) -> bool:
  """Whether `jaxpr` (nested jaxprs included) holds an ordered side effect: lowering then threads
  an ordering token through it (loop carries, branch results, inlined calls)."""
  if not ordered_primitives:
    return False
  for eqn in jaxpr.eqns:
    when = ordered_primitives.get(eqn.primitive)
    if when is not None and when(eqn.params):
      return True
    if any(jaxpr_has_ordered_effects(j) for v in eqn.params.values() for j in _param_jaxprs(v)):
      return True
  return False


host_callback_primitives: set = set()  # lowered to per-site send/recv channels on some plugins


def jaxpr_has_host_callbacks(jaxpr: Jaxpr) -> bool:
  """Whether `jaxpr` (nested jaxprs included) calls a host callback. Such a jaxpr is lowered
  in place at each call, never as one shared function: where callbacks lower to send/recv
  host transfers, each lowering owns its channels."""
  for eqn in jaxpr.eqns:
    if eqn.primitive in host_callback_primitives:
      return True
    if any(jaxpr_has_host_callbacks(j) for v in eqn.params.values() for j in _param_jaxprs(v)):
      return True
  return False
