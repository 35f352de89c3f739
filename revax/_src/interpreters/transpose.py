"""Transposition: run a linear jaxpr backwards, from output cotangents to input cotangents.

The linear inputs of the jaxpr are `UndefinedPrimal`s; every other value (residuals, constants,
and anything computed only from them) is known and evaluated forwards first. Then equations are
visited in reverse: each linear equation's transpose rule maps the cotangent of its output to
cotangents of its linear inputs. Cotangents of a variable accumulate with `add_any`; a variable
that never received one reads as `Zero(var.aval)`, and rules may return zeros symbolically, so no
zero array is built unless some rule needs one.
"""
from __future__ import annotations

from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from revax._src.core.trace import set_current_trace
from revax._src.interpreters import staging
from revax._src.interpreters.ad import (UndefinedPrimal, Zero, add_tangents, is_undefined_primal,
                                        primitive_transposes, tangent_aval)


def backward_pass(jaxpr: Jaxpr, consts, primals_in, cotangents_out):
  """Cotangents of `jaxpr`'s inputs. `primals_in` holds UndefinedPrimal for the linear inputs and
  values for the others; `cotangents_out` may hold symbolic Zeros. Returns one cotangent per
  input (Zero for non-linear or untouched inputs).

  A linear jaxpr that uses mutable array refs (the tangents of refs created inside a
  differentiated function) is first discharged into a pure one (interpreters/discharge.py)."""
  from revax._src.interpreters import discharge
  if discharge.has_refs(jaxpr):
    closed = discharge.discharge_state(ClosedJaxpr(jaxpr, list(consts)), True)
    jaxpr, consts = closed.jaxpr, closed.consts
  primal_env = {}
  linear = set()

  def read_primal(a):
    if type(a) is Literal:
      return a.val
    if a in linear:
      return UndefinedPrimal(a.aval)
    return primal_env[a]

  for v, c in zip(jaxpr.constvars, consts, strict=True):
    primal_env[v] = c
  for v, x in zip(jaxpr.invars, primals_in, strict=True):
    if is_undefined_primal(x):
      linear.add(v)
    else:
      primal_env[v] = x

  # forward: evaluate what does not depend on linear inputs; collect the linear equations
  linear_eqns = []
  for eqn in jaxpr.eqns:
    if any(type(a) is not Literal and a in linear for a in eqn.invars):
      linear.update(eqn.outvars)
      linear_eqns.append(eqn)
    else:
      outs = eqn.primitive.bind(*map(read_primal, eqn.invars), **eqn.params)
      for v, o in zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs], strict=True):
        primal_env[v] = o

  ct_env = {}

  def write_ct(v, ct):
    if ct is None or type(ct) is Zero or type(v) is Literal or v not in linear:
      return
    ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

  def read_ct(v):
    if type(v) is Literal:
      return Zero(tangent_aval(v.aval))
    ct = ct_env.pop(v, None)
    return Zero(tangent_aval(v.aval)) if ct is None else ct

  for v, ct in zip(jaxpr.outvars, cotangents_out, strict=True):
    write_ct(v, ct)
  for eqn in reversed(linear_eqns):
    cts_out = [read_ct(v) for v in eqn.outvars]
    if all(type(c) is Zero for c in cts_out):
      continue
    rule = primitive_transposes.get(eqn.primitive)
    if rule is None:
      raise NotImplementedError(f"transpose rule for '{eqn.primitive.name}' is not implemented "
                                "(it is not linear, or its rule is missing)")
    invals = list(map(read_primal, eqn.invars))
    cts_in = rule(cts_out if eqn.primitive.multiple_results else cts_out[0], *invals, **eqn.params)
    for v, ct in zip(eqn.invars, cts_in, strict=True):
      write_ct(v, ct)
  return [read_ct(v) if v in linear else Zero(tangent_aval(v.aval)) for v in jaxpr.invars]


def transpose_jaxpr(closed: ClosedJaxpr, linear_mask) -> ClosedJaxpr:
  """The jaxpr `(non-linear inputs..., cotangents of outputs...) -> cotangents of the linear
  inputs` (zeros instantiated), for call primitives' transpose rules. Memoized per jaxpr."""
  return _transpose_jaxpr(closed, tuple(linear_mask))


@staging.memoize_on_jaxpr
def _transpose_jaxpr(closed: ClosedJaxpr, linear_mask: tuple) -> ClosedJaxpr:
  from revax._src.interpreters.ad import instantiate_zeros
  in_avals = closed.in_avals
  nonlin_avals = [a for a, l in zip(in_avals, linear_mask, strict=True) if not l]
  ct_avals = [tangent_aval(a) for a in closed.out_avals]

  def fun(*args):
    nonlin, cts = args[:len(nonlin_avals)], args[len(nonlin_avals):]
    it = iter(nonlin)
    primals = [UndefinedPrimal(a) if l else next(it) for a, l in zip(in_avals, linear_mask)]
    cts_in = backward_pass(closed.jaxpr, closed.consts, primals, cts)
    return [instantiate_zeros(c) for c, l in zip(cts_in, linear_mask) if l]

  jaxpr, consts = staging.trace_to_jaxpr(fun, nonlin_avals + ct_avals)
  return ClosedJaxpr(jaxpr, consts)


def call_transpose(closed: ClosedJaxpr, cts, args):
  """The transpose rule of a call primitive holding `closed` (its linear inputs are
  UndefinedPrimals in `args`): the jaxpr run backwards; None for the non-linear inputs."""
  cts_in = backward_pass(closed.jaxpr, closed.consts, list(args), list(cts))
  return [c if is_undefined_primal(a) else None for c, a in zip(cts_in, args, strict=True)]
