"""eval_jaxpr: run a jaxpr by binding each equation's primitive under the current trace.

Evaluating under the eval trace computes values; evaluating under another trace re-applies that
transformation to every equation, which is how transformations of staged programs work.
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
  """Evaluate `jaxpr` with `consts` for its constvars and `args` for its invars; returns a list."""
  if len(args) != len(jaxpr.invars):
    raise TypeError(f"eval_jaxpr: the jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  env = {}
  for v, x in zip(jaxpr.constvars, consts, strict=True):
    env[v] = x
  for v, x in zip(jaxpr.invars, args, strict=True):
    env[v] = x

  def read(a):
    return a.val if type(a) is Literal else env[a]

  for eqn in jaxpr.eqns:
    outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
    if not eqn.primitive.multiple_results:
      outs = (outs,)
    for v, x in zip(eqn.outvars, outs, strict=True):
      env[v] = x
  return [read(v) for v in jaxpr.outvars]


def eval_closed_jaxpr(closed: ClosedJaxpr, *args):
  return eval_jaxpr(closed.jaxpr, closed.consts, *args)
