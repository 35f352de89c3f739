"""check_jaxpr: a type checker that re-derives every equation's output types.

It verifies that every variable is defined before use and defined once, that literals carry the
aval of their value, and that each equation's outputs have the avals its primitive's abstract
evaluation gives for its inputs. Nested jaxprs in params are checked too. Tests run it on the
output of every transformation; it is what catches a rule that returns the wrong outputs.
"""
from __future__ import annotations

from revax._src.core import vma
from revax._src.core.avals import get_aval, same_type
from revax._src.core.errors import JaxprTypeError
from revax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, Literal, pp_eqn, _Names


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
  """Raise JaxprTypeError if `jaxpr` (or any jaxpr nested in its params) is ill-typed."""
  inner = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
  with vma.typing_if_typed([v.aval for v in inner.constvars + inner.invars]):
    _check_jaxpr(jaxpr)


def _check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
  if isinstance(jaxpr, ClosedJaxpr):
    for v, c in zip(jaxpr.jaxpr.constvars, jaxpr.consts, strict=True):
      _check_const(v, c)
    jaxpr = jaxpr.jaxpr
  names = _Names()
  defined = set()

  def define(v):
    if isinstance(v, DropVar):
      return
    if v in defined:
      raise JaxprTypeError(f"variable {names(v)} is defined twice in\n{jaxpr}")
    defined.add(v)

  def read(a, eqn):
    if isinstance(a, Literal):
      return a.aval
    if a not in defined:
      where = pp_eqn(eqn, names) if eqn is not None else "the outputs"
      raise JaxprTypeError(f"variable {names(a)} is used before it is defined, in: {where}")
    return a.aval

  for v in jaxpr.constvars + jaxpr.invars:
    define(v)
  for eqn in jaxpr.eqns:
    in_avals = [read(a, eqn) for a in eqn.invars]
    for p in eqn.params.values():
      for sub in (p if isinstance(p, tuple) else (p,)):
        if isinstance(sub, (Jaxpr, ClosedJaxpr)):
          check_jaxpr(sub)
    try:
      out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
    except Exception as e:
      raise JaxprTypeError(f"abstract evaluation failed for: {pp_eqn(eqn, names)}: {e}") from e
    outs = list(out) if eqn.primitive.multiple_results else [out]
    if len(outs) != len(eqn.outvars):
      raise JaxprTypeError(f"{eqn.primitive.name} produces {len(outs)} outputs but the equation "
                           f"binds {len(eqn.outvars)}: {pp_eqn(eqn, names)}")
    for expected, v in zip(outs, eqn.outvars, strict=True):
      if not same_type(expected, v.aval):
        raise JaxprTypeError(f"output of {eqn.primitive.name} has type {v.aval.str_short()} but "
                             f"its rule gives {expected.str_short()}: {pp_eqn(eqn, names)}")
      define(v)
  for v in jaxpr.outvars:
    read(v, None)


def _check_const(v, c):
  aval = get_aval(c)
  if not same_type(aval, v.aval):
    raise JaxprTypeError(f"constant for {v} has type {aval.str_short()}, expected {v.aval.str_short()}")
