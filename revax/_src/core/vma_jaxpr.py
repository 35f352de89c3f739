"""A jaxpr of a shard_map body without its varying-manual-axes types (core/vma.py).

shard_map runs a body traced with check_vma as nested vmaps over the whole arguments (its vmap
form): there no value has manual axes, so the body's jaxpr is first rewritten with every
variable (nested jaxprs' too) typed without them. Nothing else changes.
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var


def _plain(aval):
  inner = getattr(aval, "inner_aval", None)
  if inner is not None:
    return aval.update(inner_aval=_plain(inner)) if inner._mat is not None else aval
  return aval.update(manual_axis_type=None) if getattr(aval, "_mat", None) is not None else aval


def _typed(jaxpr: Jaxpr) -> bool:
  for v in jaxpr.constvars + jaxpr.invars:
    if _plain(v.aval) is not v.aval:
      return True
  for eqn in jaxpr.eqns:
    if any(_plain(v.aval) is not v.aval for v in eqn.outvars):
      return True
    if any(_typed(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub) for sub in _subs(eqn)):
      return True
  return False


def _subs(eqn):
  for v in eqn.params.values():
    for x in v if type(v) is tuple else (v,):
      if isinstance(x, (Jaxpr, ClosedJaxpr)):
        yield x


def untyped_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
  """`jaxpr` with no variable typed with varying manual axes (itself when none is)."""
  if not _typed(jaxpr):
    return jaxpr
  env = {}

  def new(v):
    w = (DropVar if type(v) is DropVar else Var)(_plain(v.aval))
    env[v] = w
    return w

  def read(a):
    return a if type(a) is Literal else env[a]

  constvars = [new(v) for v in jaxpr.constvars]
  invars = [new(v) for v in jaxpr.invars]
  eqns = []
  for eqn in jaxpr.eqns:
    params = {k: _param(p) for k, p in eqn.params.items()}
    invs = [read(a) for a in eqn.invars]
    eqns.append(JaxprEqn(eqn.primitive, invs, [new(v) for v in eqn.outvars], params))
  return Jaxpr(constvars, invars, [read(a) for a in jaxpr.outvars], eqns)


def _param(p):
  if type(p) is tuple:
    return tuple(_param(x) for x in p)
  if isinstance(p, ClosedJaxpr):
    inner = untyped_jaxpr(p.jaxpr)
    return p if inner is p.jaxpr else ClosedJaxpr(inner, p.consts)
  if isinstance(p, Jaxpr):
    return untyped_jaxpr(p)
  return p
