"""Mutable array references passed to a `custom_vjp` function (jax's array-refs guide: a ref
argument that the bwd rule writes a gradient into).

A custom_vjp function may take Refs as arguments, as in jax 0.10.2. Its primal function and its
fwd rule see the refs themselves (they may read and write them); fwd may return an argument ref
among its residuals, so that bwd receives the very ref and writes into it during the backward
pass. The refs stay refs through differentiation: the linear program that reverse mode
transposes holds them as residuals of `custom_lin`, and transposition keeps such refs of the
enclosing context live rather than discharging them (interpreters/discharge.py), so bwd's
writes act on them: eagerly on the Ref, under jit on the traced ref of the jitted program.

Where a program is discharged before anything differentiates it (a jitted function's body, a
loop body, a branch), a `custom_vjp_call` taking refs is discharged like any call: its jaxpr is
discharged and bound with the refs' contents, returning their new contents. Its derivative
rules no longer apply then, since they were written for the refs (as in jax, whose discharge
rule drops them): differentiating it raises NotImplementedError.

This module also holds jax's checks of refs around custom_vjp functions: one ref passed twice,
a ref returned by the primal function, a ref among fwd's primal outputs or a residual ref that
is not an argument (ValueErrors with jax's messages).
"""
from __future__ import annotations

import functools
import inspect

from revax._src import tree_util
from revax._src.core.avals import AbstractRef, get_aval
from revax._src.core.trace import Tracer
from revax._src.custom_derivatives_helpers import CustomVJPPrimal
from revax._src.interpreters import discharge
from revax._src.lax import state

__all__ = ["check_aliased_refs", "check_returned_refs", "discharge_rule", "is_ref_leaf"]


def _describe(fun) -> str:
  """The function as jax's messages print it (a functools.partial of the user's function)."""
  return repr(functools.partial(fun))


def _leaf_names(fun, args) -> list:
  """One name per flat leaf of `args`: its parameter's name and the leaf's path."""
  try:
    params = list(inspect.signature(fun).parameters)
  except (TypeError, ValueError):
    params = []
  names = []
  for k, arg in enumerate(args):
    head = params[k] if k < len(params) else f"args[{k}]"
    names += [head + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(arg)[0]]
  return names


def _unwrap(x):
  """The value of a fwd rule's CustomVJPPrimal record (symbolic_zeros), else `x`."""
  return x.value if type(x) is CustomVJPPrimal else x


def is_ref_leaf(x) -> bool:
  """`state.is_ref`, cheaply for the common leaves (arrays, scalars)."""
  t = type(x)
  if t is state.Ref:
    return True
  return isinstance(x, Tracer) and isinstance(x.aval, AbstractRef)


def _is_ref_aval(x) -> bool:
  return isinstance(get_aval(x), AbstractRef)


def check_aliased_refs(fun, args, named=None) -> None:
  """jax's ValueError when one ref is passed twice among `args` (the differentiable arguments
  of the custom_vjp function `fun`, values or CustomVJPPrimal records); the message names
  `named` (default `fun`: the fwd rule where it runs instead) and `fun`'s parameters."""
  leaves = tree_util.tree_leaves(args)
  seen: dict = {}
  for i, x in enumerate(map(_unwrap, leaves)):
    if not is_ref_leaf(x):
      continue
    first = seen.setdefault(id(x), i)
    if first != i:
      names = _leaf_names(fun, args)
      raise ValueError(
          "only one reference to a mutable array may be passed as an argument to a function, "
          f"but custom_vjp function {_describe(named or fun)} got the same mutable array "
          f"reference of type {get_aval(x)!r} at {names[first]} and {names[i]}.")


def check_returned_refs(fun, out, kind: str, args=(), after: int = 0) -> None:
  """jax's ValueError for a ref among the leaves of `out`, what `fun` (the primal function,
  kind 'primal', or the fwd rule, kind 'fwd') returned: among the first `after` leaves (fwd's
  primal outputs) none may be one, after them only a ref that is one of `args`."""
  if not AbstractRef.any_made or not any(map(is_ref_leaf, tree_util.tree_leaves(out))):
    return  # (the common case, checked without paths)
  ids = {id(x) for x in map(_unwrap, tree_util.tree_leaves(args)) if is_ref_leaf(x)}
  for i, (path, leaf) in enumerate(tree_util.tree_flatten_with_path(out)[0]):
    if not is_ref_leaf(leaf):
      continue
    loc = f" at output tree path {tree_util.keystr(path)}" if path else ""
    ty = repr(get_aval(leaf))
    if i < after:
      raise ValueError(f"custom_vjp {kind} function {_describe(fun)} returned a mutable array "
                       f"reference of type {ty}{loc}, but mutable array references cannot be "
                       "returned there.")
    if id(leaf) not in ids:
      raise ValueError(f"custom_vjp {kind} function {_describe(fun)} returned a mutable array "
                       f"reference of type {ty}{loc} that was not an argument.")


class _DischargedRule:
  """The derivative rules of a custom_vjp_call whose refs were discharged: they were written
  for the refs, so differentiating it is an error."""

  def __init__(self, rule, in_avals):
    self.rule, self.in_avals = rule, in_avals

  symbolic_zeros = property(lambda self: self.rule.symbolic_zeros)

  def _refuse(self, *_, **__):
    fun = self.rule.owner.fun
    raise NotImplementedError(
        f"differentiating the custom_vjp function {getattr(fun, '__name__', fun)!r} after the "
        "mutable array references it takes were discharged (threaded as values through a "
        "jitted function, a loop body, a branch or a checkpoint under the differentiation): "
        "its fwd and bwd rules need the references themselves. Differentiate inside that "
        "function instead, or pass the references to the custom_vjp function outside it.")

  fwd = bwd = _refuse


def discharge_rule(prim):
  """The state discharge rule of `prim` (custom_vjp_call): its jaxpr with every ref input
  discharged, bound on the refs' contents (read here from refs that stay live); returns (per
  operand its ref's new contents or None, outputs)."""
  def rule(*invals, call_jaxpr, rule, num_consts):
    ref_in = [isinstance(a, AbstractRef) for a in call_jaxpr.in_avals]
    if not any(ref_in):  # refs made inside only: the rules still hold for the pure version
      pure = discharge.discharge_state(call_jaxpr)
      outs = prim.bind(*invals, call_jaxpr=pure, rule=rule, num_consts=num_consts)
      return [None] * len(invals), outs
    live = [m and _is_ref_aval(x) for m, x in zip(ref_in, invals, strict=True)]
    vals = [state.ref_get(x) if lv else x for x, lv in zip(invals, live, strict=True)]
    pure = discharge.discharge_state(call_jaxpr)
    n = len(call_jaxpr.out_avals)
    outs = prim.bind(*vals, call_jaxpr=pure, rule=_DischargedRule(rule, pure.in_avals),
                     num_consts=num_consts)
    finals = iter(outs[n:])
    new_vals = []
    for x, m, lv in zip(invals, ref_in, live, strict=True):
      new = next(finals) if m else None
      if lv:
        state.write_back(x, new)
        new = None
      new_vals.append(new)
    return new_vals, outs[:n]
  return rule
