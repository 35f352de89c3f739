"""Rematerialization (checkpoint): reverse mode that recomputes instead of storing.

`checkpoint_p` is a call primitive holding a closed jaxpr. Evaluated, lowered or batched it is
just that jaxpr. Its interest is in reverse mode. Linearizing a function runs its JVP under
partial evaluation, where the primal computation is *known* (it runs now) and the tangent
computation is *unknown* (it is staged for the backward pass); every known value the staged part
reads becomes a residual, stored from the forward pass until the backward pass uses it. For a
`checkpoint_p` equation the split is decided by a *policy* instead: a known value may be stored
only if the policy says its equation's output is saveable (by default nothing is, beyond the
checkpoint's own inputs). Every other known value the staged part needs is recomputed there: its
equation is copied into the staged jaxpr, which becomes a new `checkpoint_p` equation whose
inputs are the residuals and the tangents.

Transposing that equation runs its jaxpr backwards (`backward_pass`): the forward sweep
recomputes the non-linear values from the residuals, then the linear equations are transposed.
Inputs that receive no cotangent come back as `Zero(aval)`, which is how the transpose builds
cotangents of the right type for values it never saw. With `prevent_cse` that backward step is
one `fenced_call` of the residuals and the cotangents, so XLA can neither merge the
recomputation with the identical forward computation nor run it early (either would keep every
forward intermediate alive again; an `optimization_barrier` alone does not stop XLA:CPU).

`name_p` tags a value with a name (`checkpoint_name`) for `save_only_these_names` policies.
"""
from __future__ import annotations

from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Var
from revax._src.core.trace import Primitive, set_current_trace
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.interpreters.barrier import fenced_call
from revax._src.interpreters.transpose import call_transpose, transpose_jaxpr

# --- the checkpoint primitive ----------------------------------------------------------------------
checkpoint_p = Primitive("checkpoint", multiple_results=True)


def _checkpoint_abstract_eval(*avals, jaxpr: ClosedJaxpr, prevent_cse: bool, policy):
  dispatch.check_arg_avals("checkpoint", jaxpr.in_avals, avals)
  return jaxpr.out_avals


def _checkpoint_impl(*args, jaxpr: ClosedJaxpr, prevent_cse: bool, policy):
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _checkpoint_jvp(primals, tangents, *, jaxpr, prevent_cse, policy):
  """The JVP is another checkpoint, of the JVP jaxpr: its partial evaluation is what decides
  what reverse mode stores."""
  return ad.call_jvp(jaxpr, primals, tangents, lambda jvp_closed, args: checkpoint_p.bind(
      *args, jaxpr=jvp_closed, prevent_cse=prevent_cse, policy=policy))


def _checkpoint_partial_eval(trace, args, params, unknowns):
  """Compute the known outputs now, storing only what the policy saves; stage a checkpoint of
  the rest, which recomputes what it needs from those residuals."""
  jaxpr, policy = params["jaxpr"], params["policy"]
  split = partial_eval_jaxpr_policy(jaxpr, tuple(unknowns), policy)
  known_args = [a for a, u in zip(args, unknowns, strict=True) if not u]
  with set_current_trace(trace.parent_trace):
    known = eval_jaxpr(split.known.jaxpr, split.known.consts, *known_args)
  known_outs, residuals = known[:len(known) - split.num_res], known[len(known) - split.num_res:]
  staged = []
  if any(split.out_unknowns):
    unknown_args = [a for a, u in zip(args, unknowns, strict=True) if u]
    staged = staging.DynamicJaxprTrace.process_primitive(
        trace, checkpoint_p, list(residuals) + unknown_args, {**params, "jaxpr": split.staged})
  it_k, it_u = iter(known_outs), iter(staged)
  return [next(it_u) if u else next(it_k) for u in split.out_unknowns]


# Where the backward step is fenced by an optimization barrier (jax.checkpoint's fence) rather
# than a conditional: platforms whose XLA keeps barriers through CSE. On a TPU v5e (issue 32's
# reversible MLP, width 2048, batch 8192) it took 3.314 ms a block against the conditional's
# 3.439 and jax.checkpoint's 3.318, with jax.checkpoint's memory (tests/tpu/results/
# reversible_2026-12-06c.md); XLA:CPU expands barriers before CSE, so the CPU keeps the
# conditional.
BARRIER_FENCED_PLATFORMS = ("tpu",)


def _checkpoint_transpose(cts, *args, jaxpr, prevent_cse, policy):
  """Run the jaxpr backwards: its forward sweep recomputes from the residuals.

  With prevent_cse the whole backward step (recomputation and transposition) is a `fenced_call`
  of the residuals and the cotangents: XLA can neither merge the recomputation with the forward
  computation nor run it before the backward pass reaches it, either of which would keep the
  recomputed values alive as long as storing them would."""
  linear = tuple(ad.is_undefined_primal(a) for a in args)
  if not prevent_cse:
    return call_transpose(jaxpr, cts, args)
  known = [a for a, lin in zip(args, linear, strict=True) if not lin]
  backward = transpose_jaxpr(jaxpr, list(linear))
  lin_cts = iter(fenced_call(backward, *known, *map(ad.instantiate_zeros, cts),
                             barrier_on=BARRIER_FENCED_PLATFORMS))
  return [next(lin_cts) if lin else None for lin in linear]


def _checkpoint_batch(axis_size, vals, dims, *, jaxpr, prevent_cse, policy):
  batched, out_dims = batching.batch_jaxpr(jaxpr, dims, axis_size)
  outs = checkpoint_p.bind(*vals, jaxpr=batched, prevent_cse=prevent_cse, policy=policy)
  return outs, list(out_dims)


def _checkpoint_lower(ctx, *args, jaxpr, prevent_cse, policy):
  return mlir.inline_closed_jaxpr(ctx.fb, jaxpr, args)


checkpoint_p.def_abstract_eval(_checkpoint_abstract_eval)
dispatch.custom_impls[checkpoint_p] = _checkpoint_impl
ad.primitive_jvps[checkpoint_p] = _checkpoint_jvp
partial_eval.partial_eval_rules[checkpoint_p] = _checkpoint_partial_eval
ad.primitive_transposes[checkpoint_p] = _checkpoint_transpose
batching.axis_size_batchers[checkpoint_p] = _checkpoint_batch
mlir.register_lowering(checkpoint_p, _checkpoint_lower)
staging.dce_rules[checkpoint_p] = staging.dce_call()


# --- partial evaluation under a policy ---------------------------------------------------------------
class PolicySplit:
  """A jaxpr split by which inputs are unknown, storing only what a policy saves.

  known: known inputs -> known outputs + residuals.
  staged: residuals + unknown inputs -> unknown outputs (recomputing what it was not given).
  out_unknowns: which outputs the staged jaxpr computes.
  residual_sources: per residual, the index of the input it is (an int) or the known equation
    that produced it.
  """
  __slots__ = ("known", "staged", "out_unknowns", "num_res", "residual_sources")

  def __init__(self, known, staged, out_unknowns, residual_sources):
    self.known, self.staged, self.out_unknowns = known, staged, out_unknowns
    self.num_res = len(residual_sources)
    self.residual_sources = residual_sources


@staging.memoize_on_jaxpr
def partial_eval_jaxpr_policy(closed: ClosedJaxpr, unknowns: tuple, policy) -> PolicySplit:
  """Split `closed` for reverse mode, storing a known value only where `policy` allows.

  First the ordinary split (`partial_eval_jaxpr`: every primitive's rule applies, so nested
  calls, checkpoints and loops split themselves): a known jaxpr computing the known outputs and
  the residuals, and a staged jaxpr reading them. Then each residual is kept only if it is an
  input of the jaxpr or the output of an equation the policy calls saveable; otherwise its
  equation moves (is copied) into the staged jaxpr, whose inputs it reads become residuals in
  turn. The walk follows dataflow backwards from what the staged jaxpr reads, so the order the
  equations happen to be in does not matter. `policy(prim, *avals, **params) -> bool`; None
  saves nothing.
  """
  known, staged, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(closed, list(unknowns))
  kj = known.jaxpr
  n_known_out = len(kj.outvars) - num_res
  res_atoms = kj.outvars[n_known_out:]
  producer = {v: eqn for eqn in kj.eqns for v in eqn.outvars}
  k_inputs = set(kj.invars)
  k_consts = dict(zip(kj.constvars, known.consts, strict=True))

  # backwards from the residuals: keep saveable ones, mark the rest for recomputation
  needed = {a for a in res_atoms if type(a) is Var}
  recompute = set()
  kept = {}  # var -> source
  for eqn in reversed(kj.eqns):
    wanted = [v for v in eqn.outvars if v in needed]
    if not wanted:
      continue
    if _saveable(policy, eqn):
      for v in wanted:
        kept[v] = eqn
    else:
      recompute.add(id(eqn))
      needed.update(a for a in eqn.invars if type(a) is Var)
  invar_index = {v: closed_index for v, closed_index in
                 zip(kj.invars, [i for i, u in enumerate(unknowns) if not u], strict=True)}
  for v in kj.invars:
    if v in needed:
      kept[v] = invar_index[v]
  consts_needed = [v for v in kj.constvars if v in needed]
  new_res = [v for v in kj.invars if v in kept] + [v for e in kj.eqns for v in e.outvars
                                                    if v in kept and v not in k_inputs]

  # the staged jaxpr: fresh binders for the kept residuals, the recomputed equations, then the
  # old staged equations reading recomputed or kept values in place of the old residuals
  sj = staged.jaxpr
  fresh = {v: Var(v.aval) for v in new_res}
  const_binders = {v: Var(v.aval) for v in consts_needed}

  def rename(a):
    if type(a) is not Var:
      return a
    return fresh.get(a) or const_binders.get(a) or a

  recomputed = []
  for e in kj.eqns:
    if id(e) in recompute:  # a copy with its own output binders (jaxprs share no variables)
      outs = [Var(v.aval) for v in e.outvars]
      recomputed.append(e.replace(invars=[rename(a) for a in e.invars], outvars=outs))
      fresh.update(zip(e.outvars, outs, strict=True))
  old_res_binders = sj.invars[:num_res]
  subst = {b: rename(r) for b, r in zip(old_res_binders, res_atoms, strict=True)}
  staged_eqns = recomputed + [e.replace(invars=[subst.get(a, a) if type(a) is Var else a
                                                for a in e.invars]) for e in sj.eqns]
  new_staged = Jaxpr(list(sj.constvars) + [const_binders[v] for v in consts_needed],
                     [fresh[v] for v in new_res] + sj.invars[num_res:],
                     [subst.get(a, a) if type(a) is Var else a for a in sj.outvars], staged_eqns)
  new_staged, _ = staging.dce_jaxpr(new_staged)
  staged_consts = list(staged.consts) + [k_consts[v] for v in consts_needed]
  new_known = Jaxpr(kj.constvars, kj.invars, kj.outvars[:n_known_out] + new_res, kj.eqns)
  new_known, _ = staging.dce_jaxpr(new_known)
  return PolicySplit(ClosedJaxpr(new_known, known.consts),
                     ClosedJaxpr(new_staged, staged_consts), out_unknowns,
                     [kept[v] for v in new_res])


def _saveable(policy, eqn) -> bool:
  if policy is None:
    return False
  return bool(policy(eqn.primitive, *(a.aval for a in eqn.invars), **eqn.params))


# --- names for policies -------------------------------------------------------------------------
name_p = Primitive("name")


def _name_abstract_eval(x, *, name):
  return x


def _name_impl(x, *, name):
  return x


def _name_jvp(primals, tangents, *, name):
  (x,), (t,) = primals, tangents
  return name_p.bind(x, name=name), t


def _name_transpose(ct, x, *, name):
  return [ct]


def _name_batch(vals, dims, *, name):
  (x,), (d,) = vals, dims
  return name_p.bind(x, name=name), d


def _name_lower(ctx, x, *, name):
  return x


name_p.def_abstract_eval(_name_abstract_eval)
dispatch.custom_impls[name_p] = _name_impl
ad.primitive_jvps[name_p] = _name_jvp
ad.primitive_transposes[name_p] = _name_transpose
batching.primitive_batchers[name_p] = _name_batch
mlir.register_lowering(name_p, _name_lower)

