"""Side effects: primitives whose equations must run even when nothing reads their outputs.

A host callback that prints or writes a file (`debug_callback`, `io_callback`) is such a
primitive. Dead-code elimination keeps every equation that has an effect, directly or inside a
nested jaxpr (a loop body or a branch that prints), and never drops a loop or a call holding one.
"""
from __future__ import annotations

from revax._src.core.effect_types import JaxprInputEffect
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal

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


# --- effect objects (what `eqn.effects` / `jaxpr.effects` hold, as JAX's do) ----------------------
effect_rules: dict = {}  # prim -> rule(eqn) -> iterable of Effect objects


def def_effects(prim, rule) -> None:
  """`rule(eqn)` gives the effect objects of an equation of `prim` (core/effect_types.py), an
  effect on an input named by its position (`ReadEffect(0)`): `eqn.effects` resolves it to the
  input's variable. A primitive without a rule has the effects of the jaxprs among its params."""
  effect_rules[prim] = rule


nested_input_maps: dict = {}  # prim -> fn(eqn, param name, inner Jaxpr) -> outer atoms


def def_nested_inputs(prim, fn) -> None:
  """`fn(eqn, name, inner)` gives, for each input of `inner` (a jaxpr in param `name`), the atom
  of `eqn` it receives: how an effect on an inner ref becomes one on the equation's input.
  Without one, a nested jaxpr's inputs are the equation's last ones (as for jit, scan, cond's
  branches and while's body)."""
  nested_input_maps[prim] = fn


def resolve_input_effects(effs, invars) -> set:
  """`effs` with each positional `JaxprInputEffect` made to name its input variable; one whose
  input is a literal is dropped (a literal is no ref)."""
  out = set()
  for eff in effs:
    if isinstance(eff, JaxprInputEffect) and isinstance(eff.input, int):
      invar = invars[eff.input]
      if isinstance(invar, Literal):
        continue
      eff = eff.replace(invar)
    out.add(eff)
  return out


def _named_param_jaxprs(params):
  for name, value in params.items():
    for j in _param_jaxprs(value):
      yield name, j


def eqn_effects(eqn) -> frozenset:
  """The effect objects of `eqn` (JAX's `eqn.effects`): its primitive's rule's, or else the
  union of its nested jaxprs' effects, an effect on an inner input becoming one on the atom the
  equation passes there (dropped when that is a literal or has no outer counterpart)."""
  rule = effect_rules.get(eqn.primitive)
  if rule is not None:
    return frozenset(resolve_input_effects(rule(eqn), eqn.invars))
  out = set()
  inputs_of = nested_input_maps.get(eqn.primitive)
  for name, inner in _named_param_jaxprs(eqn.params):
    effs = inner.effects
    if not effs:
      continue
    outer = None
    for eff in effs:
      if isinstance(eff, JaxprInputEffect):
        if outer is None:
          if inputs_of is not None:
            outer = list(inputs_of(eqn, name, inner))
          else:
            n = len(inner.invars)
            outer = list(eqn.invars[len(eqn.invars) - n:]) if n <= len(eqn.invars) else []
          pos = {v: i for i, v in enumerate(inner.invars)}
        i = pos.get(eff.input)
        if i is None or i >= len(outer) or isinstance(outer[i], Literal):
          continue
        eff = eff.replace(outer[i])
      out.add(eff)
  return frozenset(out)


def jaxpr_effects(jaxpr: Jaxpr) -> frozenset:
  """The effects of `jaxpr` (JAX's `jaxpr.effects`): its equations', less those on refs that
  are not its inputs (a ref created inside is invisible from outside)."""
  inputs = None
  out = set()
  for eqn in jaxpr.eqns:
    for eff in eqn.effects:
      if isinstance(eff, JaxprInputEffect):
        if inputs is None:
          inputs = {*jaxpr.constvars, *jaxpr.invars}
        if eff.input not in inputs:
          continue
      out.add(eff)
  return frozenset(out)


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
