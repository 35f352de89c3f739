"""JAX's dead-code elimination interface (`jax.interpreters.partial_eval.dce_*`) on revax's DCE
(`staging.dce_jaxpr` and its rule table `staging.dce_rules`).

The two differ in conventions only: JAX's `dce_jaxpr` drops the unused inputs from the jaxpr
(`instantiate` keeps some), revax's keeps them unless asked; JAX's rules take
`(used_outputs, eqn)`, revax's `(eqn, used_outputs)`. A rule a library puts in `dce_rules` is
registered into revax's table, so revax's own DCE (jit, grad, make_jaxpr's callers) runs it.
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from revax._src.interpreters import staging

__all__ = ["dce_jaxpr", "dce_jaxpr_consts", "dce_rules", "dce_jaxpr_call_rule",
           "dce_jaxpr_closed_call_rule"]


def dce_jaxpr(jaxpr: Jaxpr, used_outputs, instantiate=False):
  """`jaxpr` with only the equations the used outputs need, and only the inputs they read
  (JAX's `pe.dce_jaxpr`).

  Args:
    jaxpr: a `Jaxpr`.
    used_outputs: one bool per output: which outputs to keep.
    instantiate: a bool, or one per input: inputs to keep even if unused.

  Returns:
    `(new_jaxpr, used_inputs)`: one bool per input of `jaxpr` (whether `new_jaxpr` takes it).

  Example:
    >>> from revax.interpreters import partial_eval as pe
    >>> j = revax.make_jaxpr(lambda x, y: (jnp.sin(x), y * 2))(1., 2.).jaxpr
    >>> new, used = pe.dce_jaxpr(j, [True, False])
    >>> used, len(new.invars)
    ([True, False], 1)
  """
  inst = ([instantiate] * len(jaxpr.invars) if isinstance(instantiate, bool)
          else list(instantiate))
  if len(inst) != len(jaxpr.invars):
    raise ValueError(f"dce_jaxpr: instantiate has {len(inst)} entries for a jaxpr of "
                     f"{len(jaxpr.invars)} inputs")
  outs = ([used_outputs] * len(jaxpr.outvars) if isinstance(used_outputs, bool)
          else list(used_outputs))  # (a bool for every output, as jax's)
  new, used = staging.dce_jaxpr(jaxpr, outs)
  used = [u or i for u, i in zip(used, inst, strict=True)]
  invars = [v for v, u in zip(jaxpr.invars, used) if u]
  return Jaxpr(new.constvars, invars, new.outvars, new.eqns), used


def dce_jaxpr_consts(jaxpr: Jaxpr, used_outputs, instantiate=False):
  """`dce_jaxpr` that also drops unused constvars (JAX's `pe.dce_jaxpr_consts`).

  Returns:
    `(new_jaxpr, used_consts, used_inputs)`.
  """
  n = len(jaxpr.constvars)
  as_inputs = Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars, jaxpr.eqns)
  inst = ([instantiate] * len(jaxpr.invars) if isinstance(instantiate, bool)
          else list(instantiate))
  new, used = dce_jaxpr(as_inputs, used_outputs, [False] * n + inst)
  used_consts, used_inputs = used[:n], used[n:]
  k = sum(used_consts)
  return Jaxpr(new.invars[:k], new.invars[k:], new.outvars, new.eqns), used_consts, used_inputs


class _DceRules:
  """`dce_rules[p] = rule(used_outputs, eqn) -> (used_inputs, new_eqn or None)`, JAX's form,
  kept in revax's table `staging.dce_rules` (whose rules take `(eqn, used_outputs)`); reading
  gives a rule of JAX's form for any primitive that has one, revax's included."""

  def __setitem__(self, prim, rule):
    def revax_rule(eqn, used_outputs):
      return rule(list(used_outputs), eqn)
    revax_rule.jax_rule = rule
    staging.dce_rules[prim] = revax_rule

  def __getitem__(self, prim):
    rule = staging.dce_rules[prim]
    return getattr(rule, "jax_rule", None) or (lambda used, eqn: rule(eqn, used))

  def get(self, prim, default=None):
    return self[prim] if prim in self else default

  def __contains__(self, prim):
    return prim in staging.dce_rules

  def __repr__(self):
    return f"dce_rules({len(staging.dce_rules)} rules)"


dce_rules = _DceRules()


def _call_rule(used_outputs, eqn, dce_call_jaxpr):
  if not any(used_outputs) and not eqn.effects:
    return [False] * len(eqn.invars), None
  call_jaxpr, used_inputs = dce_call_jaxpr(eqn.params["call_jaxpr"], used_outputs)
  return used_inputs, eqn.replace(
      invars=[v for v, u in zip(eqn.invars, used_inputs, strict=True) if u],
      outvars=[v for v, u in zip(eqn.outvars, used_outputs, strict=True) if u],
      params={**eqn.params, "call_jaxpr": call_jaxpr})


def dce_jaxpr_call_rule(used_outputs, eqn):
  """The DCE rule (JAX's form) of a call primitive whose `call_jaxpr` param is a `Jaxpr`: the
  call keeps the outputs used and the inputs those need."""
  return _call_rule(used_outputs, eqn, dce_jaxpr)


def _dce_closed(closed: ClosedJaxpr, used_outputs):
  new, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs)
  return ClosedJaxpr(new, closed.consts), used_inputs


def dce_jaxpr_closed_call_rule(used_outputs, eqn):
  """`dce_jaxpr_call_rule` for a `call_jaxpr` param that is a `ClosedJaxpr`.

  Example:
    >>> from revax.interpreters import partial_eval as pe
    >>> my_call_p = revax.extend.core.Primitive("my_call_example")
    >>> pe.dce_rules[my_call_p] = pe.dce_jaxpr_closed_call_rule
  """
  return _call_rule(used_outputs, eqn, _dce_closed)
