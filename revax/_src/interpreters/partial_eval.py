"""Partial evaluation: split a computation into what can run now and what must be staged.

`PartialEvalTrace` is a staging trace that only stages what it must. A primitive whose inputs are
all *known* (not tracers of this trace) is forwarded to the parent trace and computed there; one
with an *unknown* input is recorded as an equation, and the known values it reads become the
staged jaxpr's constants: the residuals. Linearization runs the JVP under this trace with known
primals and unknown tangents, so the primal computation happens at once and only the linear
tangent computation is staged.

`partial_eval_jaxpr` applies the same split to a jaxpr, giving a known jaxpr (which also outputs
the residuals) and an unknown one (which takes them); call primitives such as jit use it in
their partial-evaluation rules.
"""
from __future__ import annotations

from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from revax._src.core.rules import RuleTable
from revax._src.core.trace import current_trace, set_current_trace
from revax._src.interpreters import staging

# prim -> rule(trace, args, params, unknowns) -> outputs, for primitives (call primitives,
# control flow) that must split themselves rather than be staged whole.
partial_eval_rules = RuleTable("partial eval")


class PartialEvalTrace(staging.DynamicJaxprTrace):
  """Stages only the equations that depend on unknown inputs; the rest runs in the parent."""

  def __init__(self, parent_trace):
    super().__init__()
    self.parent_trace = parent_trace
    # id(known ref) -> (that ref, the staged ref standing for it): a known mutable array ref
    # into which an unknown value was written (a tangent ref, see lax/state.py) is unknown from
    # then on, and every later use of it reads the staged one
    self.staged_refs = {}

  def is_unknown(self, x) -> bool:
    return isinstance(x, staging.JaxprTracer) and x._trace is self

  def process_primitive(self, primitive, args, params):
    if self.staged_refs:
      args = [self.staged_refs.get(id(x), (None, x))[1] for x in args]
    unknowns = [self.is_unknown(x) for x in args]
    if not any(unknowns):
      with set_current_trace(self.parent_trace):
        return primitive.bind(*args, **params)
    rule = partial_eval_rules.get(primitive)
    if rule is not None:
      return rule(self, args, params, unknowns)
    return super().process_primitive(primitive, args, params)

  def __repr__(self):
    return "PartialEvalTrace"


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, instantiate=False):
  """Split `closed` by which inputs are unknown.

  Returns (jaxpr_known, jaxpr_unknown, out_unknowns, num_res):
    jaxpr_known: known inputs -> known outputs + residuals;
    jaxpr_unknown: residuals + unknown inputs -> unknown outputs;
    out_unknowns: which outputs are computed by jaxpr_unknown.
  With `instantiate` (a bool or one per output), those outputs are unknown even if computable.
  """
  jaxpr = closed.jaxpr
  n_out = len(jaxpr.outvars)
  inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
  known_avals = [a for a, u in zip(closed.in_avals, unknowns, strict=True) if not u]
  unknown_avals = [a for a, u in zip(closed.in_avals, unknowns, strict=True) if u]
  store = {}

  def known_fun(*known_args):
    pe = PartialEvalTrace(current_trace())
    unknown_args = [pe.new_arg(a) for a in unknown_avals]
    it_k, it_u = iter(known_args), iter(unknown_args)
    args = [next(it_u) if u else next(it_k) for u in unknowns]
    with set_current_trace(pe):
      outs = eval_jaxpr(jaxpr, closed.consts, *args)
    out_unknowns = [pe.is_unknown(o) or i for o, i in zip(outs, inst, strict=True)]
    unknown_outs = [o for o, u in zip(outs, out_unknowns) if u]
    jaxpr_u, residuals = pe.to_jaxpr(unknown_outs)
    store["jaxpr_unknown"] = jaxpr_u
    store["out_unknowns"] = out_unknowns
    store["num_res"] = len(residuals)
    known_outs = [o for o, u in zip(outs, out_unknowns) if not u]
    return known_outs + list(residuals)

  jaxpr_k, consts_k = staging.trace_to_jaxpr(known_fun, known_avals)
  jaxpr_u = store["jaxpr_unknown"]
  # residuals are the unknown jaxpr's constvars: make them its leading inputs
  jaxpr_u = Jaxpr([], jaxpr_u.constvars + jaxpr_u.invars, jaxpr_u.outvars, jaxpr_u.eqns)
  return (ClosedJaxpr(jaxpr_k, consts_k), ClosedJaxpr(jaxpr_u, []), store["out_unknowns"],
          store["num_res"])


@staging.memoize_on_jaxpr
def partial_eval_jaxpr_cached(closed: ClosedJaxpr, unknowns: tuple):
  """`partial_eval_jaxpr` memoized per (jaxpr, unknowns): every linearization of one staged
  program reuses one split."""
  return partial_eval_jaxpr(closed, list(unknowns))


def partial_eval_call(trace, prim, args, params, unknowns, bind_known=None, split_params=None):
  """The partial-evaluation rule of a call primitive whose params hold its closed `jaxpr`: bind
  the primitive on the known part now (in the parent trace), and stage it on the unknown part,
  which reads the known part's residuals. `bind_known(jaxpr, args, params)` replaces the plain
  bind of the known part (jit turns the known jaxpr's constants into operands).
  `split_params(out_unknowns, num_res)`, where given, returns the (known, unknown) calls' params
  (without `jaxpr`) in place of `params` (params that describe each operand or result)."""
  known_jaxpr, unknown_jaxpr, out_unknowns, num_res = partial_eval_jaxpr_cached(
      params["jaxpr"], tuple(unknowns))
  known_params, unknown_params = (params, params) if split_params is None else split_params(
      out_unknowns, num_res)
  known_args = [a for a, u in zip(args, unknowns, strict=True) if not u]
  with set_current_trace(trace.parent_trace):
    known = (bind_known(known_jaxpr, known_args, known_params) if bind_known is not None else
             prim.bind(*known_args, **{**known_params, "jaxpr": known_jaxpr}))
  known_outs, residuals = known[:len(known) - num_res], known[len(known) - num_res:]
  staged = []
  if any(out_unknowns):
    unknown_args = [a for a, u in zip(args, unknowns, strict=True) if u]
    staged = staging.DynamicJaxprTrace.process_primitive(
        trace, prim, list(residuals) + unknown_args, {**unknown_params, "jaxpr": unknown_jaxpr})
  it_k, it_u = iter(known_outs), iter(staged)
  return [next(it_u) if u else next(it_k) for u in out_unknowns]
