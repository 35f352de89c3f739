"""Conditionals: cond and switch, both binding the one `cond` primitive (as JAX).

`cond_p` takes an int32 scalar index and the operands, and holds a tuple of branch jaxprs (as
closed jaxprs whose constants were hoisted into leading operands); it applies
`branches[index]`. `cond(pred, true_fun, false_fun, ...)` binds `branches=(false, true)` with
the predicate converted to 0/1; `switch` clamps its index into range first. Eagerly only the
selected branch runs; under jit it lowers to `stablehlo.case`, whose regions capture the
operands. The JVP differentiates every branch with one pattern of non-zero tangents; partial
evaluation splits each branch into a known and an unknown part and joins their residuals across
branches by type, so linearize/grad stage only the tangent work; the transpose transposes each
branch. Under vmap a batched index turns the cond into a `select_n` over both branches'
outputs (as JAX does); an unbatched one batches the branches.
"""
from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval, same_type
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Var
from revax._src.core.trace import Primitive, Tracer, set_current_trace
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, comparison, creation, shapes
from revax._src.lax.stop_gradient import stop_gradient
from revax._src.lax.control_flow import common
from revax._src.lax import state
from revax._src.lax.conversion import convert_element_type

__all__ = ["cond", "switch", "cond_p"]

_no_operand = object()


def _operands(operands, operand):
  if operand is not _no_operand:
    if operands:
      raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                      f"passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)
  return operands


def _trace_branches(api_name, names, funs, operands):
  """Trace each branch at the operands' avals; check their outputs agree; share consts."""
  leaves, in_tree = tree_util.tree_flatten(operands)
  avals = [common.aval_of(x) for x in leaves]
  traced, trees = [], []
  for f in funs:
    jaxpr, consts, out_tree = common.trace_flat(
        lambda flat, f=f: f(*tree_util.tree_unflatten(in_tree, flat)), avals)
    traced.append((jaxpr, consts))
    trees.append(out_tree)
  for k in range(1, len(funs)):
    common.check_branch_outputs(api_name, names[0], names[k], funs[0], funs[k], trees[0],
                                traced[0][0].out_avals, trees[k], traced[k][0].out_avals)
  branches, consts = common.merge_consts(traced)
  return branches, consts, leaves, trees[0]


# --- cond ----------------------------------------------------------------------------------------
def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
  """Apply `true_fun(*operands)` if `pred` else `false_fun(*operands)`; as jax.lax.cond.

  Both branches are traced (they must return the same pytree of types); only one runs. Under
  vmap with a batched `pred` both run and the outputs are selected per example.

  Args:
    pred: a boolean scalar (a number is compared with 0).
    true_fun, false_fun: functions of `*operands` returning pytrees of arrays.
    *operands: the branches' arguments (pytrees).

  Returns:
    The selected branch's output.

  Example:
    >>> x = jnp.float32(-1.0)
    >>> lax.cond(x > 0, jnp.sin, jnp.cos, x)
    Array(0.5403023, dtype=float32)
  """
  if not (callable(true_fun) and callable(false_fun)):
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  operands = _operands(operands, operand)
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, Sequence) or np.ndim(pred) != 0:
    raise TypeError(f"Pred must be a scalar, got {pred} of " +
                    (f"type {type(pred)}" if isinstance(pred, Sequence)
                     else f"shape {np.shape(pred)}."))
  try:
    pred_dtype = get_aval(pred).dtype
  except TypeError as err:
    raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
  if pred_dtype.kind != "b":
    if pred_dtype.kind in "iuf":
      pred = comparison.ne(pred, np.zeros((), pred_dtype))
    else:
      raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
  branches, consts, leaves, out_tree = _trace_branches(
      "cond", ["true_fun", "false_fun"], [true_fun, false_fun], operands)
  index = convert_element_type(pred, np.int32)
  outs = _bind_cond(index, consts, leaves, (branches[1], branches[0]), "cond")
  return tree_util.tree_unflatten(out_tree, outs)


def _bind_cond(index, consts, leaves, branches, what):
  """cond_p on the operands; mutable array refs among them (closed over by a branch, or passed)
  are threaded through as values, their new contents written back after the call."""
  operands = list(consts) + list(leaves)
  if any(map(state.is_ref, operands)):
    return state.call_threading_refs(
        branches, operands, lambda pure, vals: cond_p.bind(index, *vals, branches=tuple(pure)),
        f"lax.{what}")
  fwd = _forwarded_outputs(branches)
  if all(f is None for f in fwd):
    return cond_p.bind(index, *operands, branches=branches)
  # as jax: an output every branch returns as the same operand, unchanged, is that operand
  # (so under vmap it stays unbatched when the operand is: flax's nnx.cond passes its state
  # through); the cond computes the others
  keep = [f is None for f in fwd]
  pruned = tuple(common.dce_closed(b, keep)[0] for b in branches)
  outs = iter(cond_p.bind(index, *operands, branches=pruned))  # (none left: still bound, as jax)
  avals = branches[0].out_avals
  return [next(outs) if f is None else operands[f] if isinstance(operands[f], Tracer)
          else common.as_array(operands[f], avals[k]) for k, f in enumerate(fwd)]


def _forwarded_outputs(branches) -> list:
  """Per output of the branches: the index of the operand each branch returns there as it is
  (the same operand in all), or None."""
  out = []
  for k in range(len(branches[0].jaxpr.outvars)):
    sources = set()
    for b in branches:
      v = b.jaxpr.outvars[k]
      sources.add(b.jaxpr.invars.index(v) if isinstance(v, Var) and v in b.jaxpr.invars
                  else None)
    out.append(sources.pop() if len(sources) == 1 and None not in sources else None)
  return out


def switch(index, branches, *operands, operand=_no_operand):
  """Apply `branches[index](*operands)`, the index clamped into range; as jax.lax.switch.

  Args:
    index: an integer scalar.
    branches: a sequence of functions of `*operands` returning the same pytree of types.
    *operands: the branches' arguments (pytrees).

  Returns:
    The selected branch's output.

  Example:
    >>> lax.switch(2, [jnp.sin, jnp.cos, jnp.tanh], 1.0)  # tanh(1); out-of-range indices clamp
    Array(0.7615942, dtype=float32, weak_type=True)
  """
  if not all(callable(b) for b in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  operands = _operands(operands, operand)
  if len(np.shape(index)) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  try:
    index_dtype = get_aval(index).dtype
  except TypeError as err:
    raise TypeError(f"Index type must be an integer, got {index}.") from err
  if index_dtype.kind not in "iu":
    raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
  branches = tuple(branches)
  if not branches:
    raise ValueError("Empty branch sequence")
  if len(branches) == 1:
    return branches[0](*operands)
  index = convert_element_type(index, np.int32)
  index = comparison.clamp(np.int32(0), index, np.int32(len(branches) - 1))
  names = ["branch 0"] + [f"branch{i}" for i in range(1, len(branches))]
  jaxprs, consts, leaves, out_tree = _trace_branches("switch", names, branches, operands)
  outs = _bind_cond(index, consts, leaves, tuple(jaxprs), "switch")
  return tree_util.tree_unflatten(out_tree, outs)


def _cond_abstract_eval(index, *ops, branches):
  if not isinstance(branches, tuple) or not branches or not all(
      isinstance(b, ClosedJaxpr) for b in branches):
    raise TypeError(f"cond branches must be a non-empty tuple of ClosedJaxprs, got {branches!r}")
  b0 = branches[0]
  for i, b in enumerate(branches[1:], 1):
    if len(b.in_avals) != len(b0.in_avals) or not all(map(same_type, b.in_avals, b0.in_avals)):
      raise TypeError(f"cond branches 0 and {i} have mismatching input types: "
                      f"{common.avals_short(b0.in_avals)} vs {common.avals_short(b.in_avals)}")
    if len(b.out_avals) != len(b0.out_avals) or not all(
        map(same_type, b.out_avals, b0.out_avals)):
      raise TypeError(f"cond branches 0 and {i} have mismatching output types: "
                      f"{common.avals_short(b0.out_avals)} vs {common.avals_short(b.out_avals)}")
  if index.shape != () or index.dtype != np.int32:
    raise TypeError(f"cond called with index of type {index.str_short()} instead of i32[]")
  common.check_operands("cond", "branches", b0.in_avals, ops)
  return list(b0.out_avals)


def _cond_impl(index, *ops, branches):
  i = int(np.clip(int(dispatch.host_value(index)), 0, len(branches) - 1))
  branch = branches[i]
  outs = eval_jaxpr(branch.jaxpr, branch.consts, *ops)
  return [common.as_array(o, a) for o, a in zip(outs, branches[0].out_avals, strict=True)]


def _tangent_nonzero(t, aval) -> bool:
  return type(t) is not ad.Zero and dtypes.is_inexact(aval.dtype)


def _cond_jvp(primals, tangents, *, branches):
  index, *ops = primals
  ops_dot = tangents[1:]
  in_avals = branches[0].in_avals
  ops_nz = tuple(_tangent_nonzero(t, a) for t, a in zip(ops_dot, in_avals, strict=True))
  n_out = len(branches[0].out_avals)
  out_nz = [False] * n_out
  for b in branches:
    out_nz = [x or y for x, y in zip(out_nz, common.jvp_jaxpr(b, ops_nz, (False,) * n_out)[1])]
  out_nz = tuple(out_nz)
  jvp_branches = tuple(common.jvp_jaxpr(b, ops_nz, out_nz)[0] for b in branches)
  nz_dots = [t for t, nz in zip(ops_dot, ops_nz) if nz]
  outs = cond_p.bind(index, *ops, *nz_dots, branches=jvp_branches)
  out_primals, nz_tangents = outs[:n_out], iter(outs[n_out:])
  out_tangents = [next(nz_tangents) if nz else ad.Zero(ad.tangent_aval(a))
                  for a, nz in zip(branches[0].out_avals, out_nz)]
  return out_primals, out_tangents


def _merge_branch_residuals(branch_res_avals):
  """One list of residual types serving every branch: equal types are shared, so the residual
  slots number the most any branch needs of each type. Returns (avals, per-branch slots)."""
  all_avals, slots_per_branch = [], []
  for avals in branch_res_avals:
    seen = collections.Counter()
    slots = []
    for a in avals:
      k = seen[a]
      seen[a] += 1
      matching = [i for i, b in enumerate(all_avals) if b == a]
      if k < len(matching):
        slots.append(matching[k])
      else:
        slots.append(len(all_avals))
        all_avals.append(a)
    slots_per_branch.append(slots)
  return all_avals, slots_per_branch


def _join_known_outputs(closed: ClosedJaxpr, num_outs, all_res_avals, slots) -> ClosedJaxpr:
  """A known branch returning its outputs and every residual slot (zeros in unused ones)."""
  def fun(*args):
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    res = [None] * len(all_res_avals)
    for slot, r in zip(slots, outs[num_outs:], strict=True):
      res[slot] = r
    res = [ad.zeros_like_aval(a) if r is None else r for r, a in zip(res, all_res_avals)]
    return list(outs[:num_outs]) + res
  jaxpr, consts = staging.trace_to_jaxpr(fun, closed.in_avals)
  return ClosedJaxpr(jaxpr, consts)


def _join_staged_inputs(closed: ClosedJaxpr, num_res, all_res_avals, slots) -> ClosedJaxpr:
  """An unknown branch taking every residual slot (ignoring those it does not read)."""
  j = closed.jaxpr
  res_vars = [Var(a) for a in all_res_avals]
  for slot, v in zip(slots, j.invars[:num_res], strict=True):
    res_vars[slot] = v
  return ClosedJaxpr(Jaxpr(j.constvars, res_vars + j.invars[num_res:], j.outvars, j.eqns),
                     closed.consts)


def _cond_partial_eval(trace, args, params, unknowns):
  """Run each branch's known part now (in one cond returning known outputs and residuals) and
  stage its unknown part (a cond on the residuals and the unknown operands)."""
  branches = params["branches"]
  index_uk, ops_uk = unknowns[0], tuple(unknowns[1:])
  if index_uk:
    return staging.DynamicJaxprTrace.process_primitive(trace, cond_p, args, params)
  n_out = len(branches[0].out_avals)
  out_uk = [False] * n_out
  for b in branches:
    out_uk = [x or y for x, y in
              zip(out_uk, common.partial_eval_jaxpr(b, ops_uk, (False,) * n_out)[2])]
  out_uk = tuple(out_uk)
  splits = [common.partial_eval_jaxpr(b, ops_uk, out_uk) for b in branches]
  num_known = n_out - sum(out_uk)
  res_avals = [jk.out_avals[num_known:] for jk, _, _, _ in splits]
  all_res_avals, slots = _merge_branch_residuals(res_avals)
  known = tuple(_join_known_outputs(jk, num_known, all_res_avals, s)
                for (jk, _, _, _), s in zip(splits, slots))
  unknown = tuple(_join_staged_inputs(ju, nres, all_res_avals, s)
                  for (_, ju, _, nres), s in zip(splits, slots))
  index, ops = args[0], args[1:]
  known_outs, res = [], []
  if num_known or all_res_avals:
    known_ops = [x for x, u in zip(ops, ops_uk) if not u]
    with set_current_trace(trace.parent_trace):
      outs = cond_p.bind(index, *known_ops, branches=known)
    known_outs, res = outs[:num_known], outs[num_known:]
  staged = []
  if any(out_uk):
    unknown_ops = [x for x, u in zip(ops, ops_uk) if u]
    staged = staging.DynamicJaxprTrace.process_primitive(
        trace, cond_p, [index, *res, *unknown_ops], {"branches": unknown})
  return common.merge_lists(out_uk, known_outs, staged)


def _cond_transpose(cts, index, *ops, branches):
  if ad.is_undefined_primal(index):
    raise ValueError("cond is not linear in its branch index")
  linear = tuple(ad.is_undefined_primal(x) for x in ops)
  res = [x for x, lin in zip(ops, linear) if not lin]
  cts = [ad.instantiate_zeros(c) for c in cts]
  t_branches = tuple(common.transpose_jaxpr(b, linear) for b in branches)
  outs = iter(cond_p.bind(index, *res, *cts, branches=t_branches))
  return [None] + [next(outs) if lin else None for lin in linear]


def _bcast_select_n(which, *cases):
  case_shape = get_aval(cases[0]).shape
  if get_aval(which).shape != case_shape:
    which = shapes.broadcast_in_dim(which, case_shape, (0,))
  return comparison.select_n(which, *cases)


def _cond_batch(axis_size, vals, dims, *, branches):
  (index, *ops), (index_dim, *op_dims) = vals, dims
  n_in, n_out = len(ops), len(branches[0].out_avals)
  if index_dim is not None:
    # A batched index: run every branch on the whole batch and select per example. Branch i
    # sees the examples that do not take it through stop_gradient (as JAX does), so that the
    # derivative of a branch at inputs it was never meant for (sqrt of a negative) cannot
    # turn into NaN gradients through the select.
    index = batch_util.moveaxis(index, index_dim, 0)
    ops = [batch_util.bdim_at(x, d, 0, axis_size) for x, d in zip(ops, op_dims)]
    outs_per_branch = []
    for i, b in enumerate(branches):
      bj, _ = common.batch_jaxpr(b, axis_size, (True,) * n_in, (True,) * n_out)
      taken = comparison.eq(index, creation.full_like(index, i))
      guarded = [_bcast_select_n(taken, stop_gradient(x), x) for x in ops]
      outs_per_branch.append(eval_jaxpr(bj.jaxpr, bj.consts, *guarded))
    outs = [_bcast_select_n(index, *cases) for cases in zip(*outs_per_branch)]
    return outs, [0] * n_out
  ops_b = tuple(d is not None for d in op_dims)
  ops = [batch_util.moveaxis(x, d, 0) if d is not None else x for x, d in zip(ops, op_dims)]
  out_b = [False] * n_out
  for b in branches:
    out_b = [x or y for x, y in
             zip(out_b, common.batch_jaxpr(b, axis_size, ops_b, (False,) * n_out)[1])]
  out_b = tuple(out_b)
  new_branches = tuple(common.batch_jaxpr(b, axis_size, ops_b, out_b)[0] for b in branches)
  outs = cond_p.bind(index, *ops, branches=new_branches)
  return outs, [0 if b else None for b in out_b]


def _cond_dce(eqn, used_outputs):
  branches = eqn.params["branches"]
  used_inputs = [False] * (len(eqn.invars) - 1)
  dced = []
  for b in branches:
    new_b, used = common.dce_closed(b, used_outputs)
    dced.append(new_b)
    used_inputs = [x or y for x, y in zip(used_inputs, used)]
  new_branches = tuple(common.prune_invars(b, used_inputs) for b in dced)
  new_eqn = eqn.replace(
      invars=[eqn.invars[0]] + [v for v, u in zip(eqn.invars[1:], used_inputs) if u],
      outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
      params={**eqn.params, "branches": new_branches})
  return [True] + used_inputs, new_eqn


def _cond_lower(ctx, index, *ops, branches):
  if len(branches) == 1:
    return mlir.inline_closed_jaxpr(ctx.fb, branches[0], ops)
  out_types = [mlir.ir_type(a) for a in ctx.avals_out]
  if any(mlir.has_ordered_effects(b) for b in branches):
    # ordered side effects in a branch: the branches take the ordering token and return it
    token = ctx.fb.ordering_token()

    def branch(fb, b):
      fb.set_ordering_token(token)
      outs = mlir.inline_closed_jaxpr(fb, b, ops)
      return [fb.ordering_token()] + list(outs)
    regions = [ctx.fb.region([], lambda fb, b=b: branch(fb, b)) for b in branches]
    outs = ctx.fb.op("stablehlo.case", [index], [mlir.TOKEN_TYPE] + out_types, regions=regions)
    ctx.fb.set_ordering_token(outs[0])
    return outs[1:]
  regions = [ctx.fb.region([], lambda fb, b=b: mlir.inline_closed_jaxpr(fb, b, ops))
             for b in branches]
  return ctx.fb.op("stablehlo.case", [index], out_types, regions=regions)


cond_p = Primitive("cond", multiple_results=True)
cond_p.def_abstract_eval(_cond_abstract_eval)
dispatch.custom_impls[cond_p] = _cond_impl
ad.primitive_jvps[cond_p] = _cond_jvp
partial_eval.partial_eval_rules[cond_p] = _cond_partial_eval
ad.primitive_transposes[cond_p] = _cond_transpose
batching.axis_size_batchers[cond_p] = _cond_batch
staging.dce_rules[cond_p] = _cond_dce
mlir.register_lowering(cond_p, _cond_lower)
inv.not_invertible(cond_p, "which branch ran is not known from its outputs")
