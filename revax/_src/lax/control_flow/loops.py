"""Loops: while_loop and fori_loop (the `while` primitive), scan and map (the `scan` primitive).

`while_p` holds a cond jaxpr and a body jaxpr (constants hoisted into `cond_nconsts` and
`body_nconsts` leading operands) and runs `carry = body(carry)` while `cond(carry)`. Its JVP
carries the non-zero tangents (a fixpoint decides which carries have one); partial evaluation
computes the known carries with a known loop and stages the whole loop for the unknown ones, so
linearize works, and reverse mode raises JAX's error. A batched predicate runs the loop until
every example is done, selecting per example whether its carry advances.

`scan_p` holds the body jaxpr with `num_consts` loop-invariant operands, `num_carry` carries and
extensive inputs (sliced along axis 0); it returns the final carry and the stacked per-step
outputs, over `length` steps (`reverse` walks backwards). It lowers to a `stablehlo.while` over a
step counter that reads slices with dynamic_slice and writes the stacked outputs with
dynamic_update_slice. Partial evaluation splits the body into a known scan, which also stacks
the residuals the unknown part needs per step, and a staged unknown scan: a fixpoint decides
which carries are unknown, residuals that depend only on constants are hoisted out of the loop,
and residuals that are slices of a known input read that input rather than a stacked copy. The
transpose of a scan is a scan in the other direction carrying the cotangents (those of the
constants accumulate). Batching runs a fixpoint over which carries are batched.

fori_loop with a static trip count is a scan (so it is reverse-differentiable), otherwise a while
loop, as in JAX.
"""
from __future__ import annotations

import inspect

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes, sharding_types, vma
from revax._src.core.avals import ShapedArray, get_aval, same_type
from revax._src.core.effects import def_nested_inputs
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Var
from revax._src.core.trace import Primitive, Tracer, set_current_trace, to_concrete_value
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.interpreters import invertible as inv
from revax._src.lax.dim_value import dim_as_value
from revax._src.lax import batch_util, binary, comparison, creation, reductions, shapes, slicing
from revax._src.lax.control_flow import common
from revax._src.lax import state
from revax._src.interpreters import discharge
from revax._src.lax.conversion import convert_element_type
from revax._src.runtime.array import Array

__all__ = ["while_loop", "fori_loop", "scan", "map", "while_p", "scan_p"]

_map = map


def _tangent_nonzero(t, aval) -> bool:
  return type(t) is not ad.Zero and dtypes.is_inexact(aval.dtype)


def _or(xs, ys):
  return [x or y for x, y in zip(xs, ys, strict=True)]


# --- while ---------------------------------------------------------------------------------------
def while_loop(cond_fun, body_fun, init_val):
  """`val = init_val; while cond_fun(val): val = body_fun(val)`; as jax.lax.while_loop.

  The carry keeps one pytree structure and one type per leaf (a weakly typed initial value such
  as a Python scalar takes the type the body gives it). Forward-mode differentiable; reverse mode
  raises (use scan, or fori_loop with static bounds).

  Args:
    cond_fun: `val -> bool scalar`.
    body_fun: `val -> val`.
    init_val: the initial carry (a pytree of arrays).

  Returns:
    The final carry.

  Example:
    >>> lax.while_loop(lambda x: x < 10, lambda x: x * 2, 1)
    Array(16, dtype=int32, weak_type=True)
  """
  if not (callable(body_fun) and callable(cond_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  init_flat, in_tree = tree_util.tree_flatten(init_val)

  def create(avals):
    cond_jaxpr, cond_consts, cond_tree = common.trace_flat(
        lambda flat: cond_fun(tree_util.tree_unflatten(in_tree, flat)), avals)
    if cond_tree.num_nodes != 1 or cond_tree.num_leaves != 1 or len(cond_jaxpr.outvars) != 1:
      raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
    pred = cond_jaxpr.out_avals[0]
    if pred.shape != () or pred.dtype != np.bool_:
      raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                      f"[{pred!r}].")
    body_jaxpr, body_consts, body_tree = common.trace_flat(
        lambda flat: body_fun(tree_util.tree_unflatten(in_tree, flat)), avals)
    return cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree

  avals = [common.aval_of(x) for x in init_flat]
  cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree = create(avals)
  if body_tree == in_tree:
    init_flat, changed = common.promote_weak_inputs(init_flat, avals, body_jaxpr.out_avals)
    if changed:
      avals = [common.aval_of(x) for x in init_flat]
      cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree = create(avals)
  common.check_carry_type("while_loop body", body_fun, in_tree, avals, body_tree,
                          body_jaxpr.out_avals)
  cond_closed, cond_consts = common.hoist(cond_jaxpr, cond_consts)
  body_closed, body_consts = common.hoist(body_jaxpr, body_consts)
  if any(state.is_ref(c) for c in cond_consts + body_consts):
    outs = _while_threading_refs(cond_closed, cond_consts, body_closed, body_consts, init_flat)
    return tree_util.tree_unflatten(in_tree, outs)
  outs = while_p.bind(*cond_consts, *body_consts, *init_flat, cond_jaxpr=cond_closed,
                      body_jaxpr=body_closed, cond_nconsts=len(cond_consts),
                      body_nconsts=len(body_consts))
  return tree_util.tree_unflatten(in_tree, outs)


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  cconsts, bconsts, carry = common.split_list(avals, [cond_nconsts, body_nconsts])
  common.check_operands("while", "cond_jaxpr", cond_jaxpr.in_avals, cconsts + carry)
  common.check_operands("while", "body_jaxpr", body_jaxpr.in_avals, bconsts + carry)
  outs = body_jaxpr.out_avals
  if len(outs) != len(carry) or not all(_map(same_type, outs, carry)):
    raise TypeError(f"while body_jaxpr must return the carry types ({common.avals_short(carry)}), "
                    f"got ({common.avals_short(outs)})")
  preds = cond_jaxpr.out_avals
  if len(preds) != 1 or preds[0].shape != () or preds[0].dtype != np.bool_:
    raise TypeError(f"while cond_jaxpr must return one bool scalar, got "
                    f"({common.avals_short(preds)})")
  return list(outs)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """Evaluate the loop in Python; a loop still running after EAGER_EQN_BUDGET equation
  evaluations continues, from its current carry, as one compiled while loop."""
  cconsts, bconsts, carry = common.split_list(args, [cond_nconsts, body_nconsts])
  cost, spent = len(cond_jaxpr.eqns) + len(body_jaxpr.eqns) + 1, 0
  while True:
    if spent > common.EAGER_EQN_BUDGET:
      params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                    body_nconsts=body_nconsts)
      return common.run_compiled(while_p, [*cconsts, *bconsts, *carry], params, body_jaxpr)
    spent += cost
    (pred,) = eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cconsts, *carry)
    if not bool(dispatch.host_value(pred)):
      break
    carry = eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *bconsts, *carry)
  return [common.as_array(c, a) for c, a in zip(carry, body_jaxpr.out_avals, strict=True)]


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  avals = [get_aval(p) for p in primals]
  nz = [_tangent_nonzero(t, a) for t, a in zip(tangents, avals)]
  _, bconst_nz, init_nz = common.split_list(nz, [cond_nconsts, body_nconsts])
  num_carry = len(init_nz)
  carry_nz = init_nz
  for _ in range(1 + num_carry):
    body_jvp, out_nz = common.jvp_jaxpr(body_jaxpr, tuple(bconst_nz + carry_nz), tuple(carry_nz))
    if list(out_nz) == carry_nz:
      break
    carry_nz = _or(carry_nz, out_nz)
  cconsts, bconsts, init = common.split_list(primals, [cond_nconsts, body_nconsts])
  _, bconst_dot, init_dot = common.split_list(tangents, [cond_nconsts, body_nconsts])
  bconst_dot = [t for t, n in zip(bconst_dot, bconst_nz) if n]
  init_dot = [ad.instantiate_zeros(t) for t, n in zip(init_dot, carry_nz) if n]
  nb, nbd, ncd = body_nconsts, len(bconst_dot), len(init_dot)
  # body_jvp takes (bconsts, carry, bconst_dot, carry_dot): reorder to the while convention
  order = (list(range(nb)) + list(range(nb + num_carry, nb + num_carry + nbd))
           + list(range(nb, nb + num_carry)) + list(range(nb + num_carry + nbd,
                                                          nb + num_carry + nbd + ncd)))
  body_jvp = common.move_binders(body_jvp, in_order=order)
  cj = cond_jaxpr.jaxpr
  cond_aug = ClosedJaxpr(Jaxpr(cj.constvars, cj.invars + [Var(get_aval(t)) for t in init_dot],
                               cj.outvars, cj.eqns), cond_jaxpr.consts)
  outs = while_p.bind(*cconsts, *bconsts, *bconst_dot, *init, *init_dot, cond_jaxpr=cond_aug,
                      body_jaxpr=body_jvp, cond_nconsts=cond_nconsts,
                      body_nconsts=nb + nbd)
  out_carry, nz_dots = outs[:num_carry], iter(outs[num_carry:])
  out_tangents = [next(nz_dots) if n else ad.Zero(ad.tangent_aval(a))
                  for n, a in zip(carry_nz, body_jaxpr.out_avals)]
  return out_carry, out_tangents


def _known_part(closed: ClosedJaxpr, unknowns, num_known_outs) -> ClosedJaxpr:
  """The known jaxpr of `closed` for these unknown inputs, without residual outputs."""
  known, _, _, _ = common.partial_eval_jaxpr(closed, tuple(unknowns),
                                             (False,) * len(closed.out_avals))
  keep = [True] * num_known_outs + [False] * (len(known.out_avals) - num_known_outs)
  new, _ = common.dce_closed(known, keep)
  j = new.jaxpr
  return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars[:num_known_outs], j.eqns), new.consts)


def _while_partial_eval(trace, args, params, unknowns):
  """Compute the known carries with a loop over the known part of the body (when the predicate
  is known); stage the whole loop for the unknown ones (it recomputes the known part)."""
  cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
  cond_nconsts, body_nconsts = params["cond_nconsts"], params["body_nconsts"]
  cconst_uk, bconst_uk, carry_uk = common.split_list(unknowns, [cond_nconsts, body_nconsts])
  for _ in range(1 + len(carry_uk)):
    _, _, out_uk, _ = common.partial_eval_jaxpr(body_jaxpr, tuple(bconst_uk + carry_uk),
                                                tuple(carry_uk))
    if list(out_uk) == carry_uk:
      break
    carry_uk = _or(carry_uk, out_uk)
  _, _, (pred_uk,), _ = common.partial_eval_jaxpr(cond_jaxpr, tuple(cconst_uk + carry_uk),
                                                  (False,))
  staged = staging.DynamicJaxprTrace.process_primitive(trace, while_p, args, params)
  if pred_uk or all(carry_uk):
    return staged
  cond_known = _known_part(cond_jaxpr, cconst_uk + carry_uk, 1)
  num_known = len(carry_uk) - sum(carry_uk)
  body_known = _known_part(body_jaxpr, bconst_uk + carry_uk, num_known)
  known_args = [x for x, u in zip(args, cconst_uk + bconst_uk + carry_uk) if not u]
  with set_current_trace(trace.parent_trace):
    known = while_p.bind(*known_args, cond_jaxpr=cond_known, body_jaxpr=body_known,
                         cond_nconsts=len(cconst_uk) - sum(cconst_uk),
                         body_nconsts=len(bconst_uk) - sum(bconst_uk))
  return common.merge_lists(carry_uk, known, [s for s, u in zip(staged, carry_uk) if u])


def _while_transpose(cts, *args, **params):
  raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                   "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using "
                   "fori_loop with static start/stop.")


def _select_lanes(pred, new, old):
  """Per example (axis 0): `new` where `pred`, else `old`."""
  shape = get_aval(new).shape
  if get_aval(pred).shape != shape:
    pred = shapes.broadcast_in_dim(pred, shape, (0,))
  return comparison.select_n(pred, old, new)


def _while_batch(axis_size, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  batched = [d is not None for d in dims]
  cconst_b, bconst_b, init_b = common.split_list(batched, [cond_nconsts, body_nconsts])
  num_carry = len(init_b)
  carry_b = init_b
  for _ in range(1 + num_carry):
    _, out_b = common.batch_jaxpr(body_jaxpr, axis_size, tuple(bconst_b + carry_b),
                                  tuple(carry_b))
    if list(out_b) == carry_b:
      break
    carry_b = _or(carry_b, out_b)
  _, (pred_b,) = common.batch_jaxpr(cond_jaxpr, axis_size, tuple(cconst_b + carry_b), (False,))
  if pred_b:
    carry_b = [True] * num_carry
  vals = [common.bdim_to_front(x, d, axis_size, b) for x, d, b in
          zip(vals, dims, cconst_b + bconst_b + carry_b)]
  cconsts, bconsts, init = common.split_list(vals, [cond_nconsts, body_nconsts])
  body_b, _ = common.batch_jaxpr(body_jaxpr, axis_size, tuple(bconst_b + carry_b),
                                 tuple(carry_b))
  cond_b, _ = common.batch_jaxpr(cond_jaxpr, axis_size, tuple(cconst_b + carry_b), (pred_b,))
  if not pred_b:
    outs = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond_b, body_jaxpr=body_b,
                        cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    return outs, [0 if b else None for b in carry_b]
  # A batched predicate: loop while any example is running; finished examples keep their carry.
  cconst_avals = [common.aval_of(x) for x in cconsts]
  bconst_avals = [common.aval_of(x) for x in bconsts]
  carry_avals = [common.aval_of(x) for x in init]

  def any_running(*args):
    (pred,) = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *args)
    return [reductions.reduce_or(pred, (0,))]

  def step(*args):
    cc, bc, carry = common.split_list(args, [cond_nconsts, body_nconsts])
    (pred,) = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *cc, *carry)
    new = eval_jaxpr(body_b.jaxpr, body_b.consts, *bc, *carry)
    return [_select_lanes(pred, n, o) for n, o in zip(new, carry, strict=True)]

  new_cond = staging.trace_to_closed_jaxpr(any_running, cconst_avals + carry_avals)
  new_body = staging.trace_to_closed_jaxpr(step, cconst_avals + bconst_avals + carry_avals)
  outs = while_p.bind(*cconsts, *cconsts, *bconsts, *init, cond_jaxpr=new_cond,
                      body_jaxpr=new_body, cond_nconsts=cond_nconsts,
                      body_nconsts=cond_nconsts + body_nconsts)
  return outs, [0] * num_carry


def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  cconsts, bconsts, init = common.split_list(args, [cond_nconsts, body_nconsts])
  if not init:
    return []
  carry_types = [mlir.ir_type(a) for a in ctx.avals_out]
  if mlir.has_ordered_effects(cond_jaxpr) or mlir.has_ordered_effects(body_jaxpr):
    return _while_lower_ordered(ctx, cconsts, bconsts, init, carry_types, cond_jaxpr, body_jaxpr)
  cond_region = ctx.fb.region(
      carry_types, lambda fb, *carry: mlir.inline_closed_jaxpr(fb, cond_jaxpr, cconsts + list(carry)))
  body_region = ctx.fb.region(
      carry_types, lambda fb, *carry: mlir.inline_closed_jaxpr(fb, body_jaxpr, bconsts + list(carry)))
  return ctx.fb.op("stablehlo.while", init, carry_types, regions=[cond_region, body_region])


def _while_lower_ordered(ctx, cconsts, bconsts, init, carry_types, cond_jaxpr, body_jaxpr):
  """The while loop carrying the ordering token of its ordered side effects (host callbacks
  with ordered=True) in front of its state, so they run in program order."""
  types = [mlir.TOKEN_TYPE] + carry_types

  def cond_body(fb, token, *carry):
    fb.set_ordering_token(token)  # effects in the condition cannot pass their token on
    return mlir.inline_closed_jaxpr(fb, cond_jaxpr, cconsts + list(carry))

  def body(fb, token, *carry):
    fb.set_ordering_token(token)
    outs = mlir.inline_closed_jaxpr(fb, body_jaxpr, bconsts + list(carry))
    return [fb.ordering_token()] + list(outs)

  outs = ctx.fb.op("stablehlo.while", [ctx.fb.ordering_token()] + list(init), types,
                   regions=[ctx.fb.region(types, cond_body), ctx.fb.region(types, body)])
  ctx.fb.set_ordering_token(outs[0])
  return outs[1:]


while_p = Primitive("while", multiple_results=True)
while_p.def_abstract_eval(_while_abstract_eval)
dispatch.custom_impls[while_p] = _while_impl
ad.primitive_jvps[while_p] = _while_jvp
partial_eval.partial_eval_rules[while_p] = _while_partial_eval
inv.not_invertible(while_p, "its trip count depends on the values it would rebuild")
ad.primitive_transposes[while_p] = _while_transpose
batching.axis_size_batchers[while_p] = _while_batch
mlir.register_lowering(while_p, _while_lower)


def _while_inputs(eqn, name, inner):
  """The atoms a while's cond_jaxpr (its consts, then the carry) or body_jaxpr (the body's
  consts, then the carry) receives: an effect on an inner ref names the while's operand."""
  cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
  carry = eqn.invars[cn + bn:]
  if name == "cond_jaxpr":
    return [*eqn.invars[:cn], *carry]
  return [*eqn.invars[cn:cn + bn], *carry]


def_nested_inputs(while_p, _while_inputs)


def _bind_while(cond_fn, body_fn, init_vals):
  """while_p on flat values with `cond_fn(*carry) -> pred` and `body_fn(*carry) -> carry`."""
  avals = [common.aval_of(x) for x in init_vals]
  cj, cc, _ = common.trace_flat(lambda flat: cond_fn(*flat), avals)
  bj, bc, _ = common.trace_flat(lambda flat: list(body_fn(*flat)), avals)
  cond_closed, cc = common.hoist(cj, cc)
  body_closed, bc = common.hoist(bj, bc)
  return while_p.bind(*cc, *bc, *init_vals, cond_jaxpr=cond_closed, body_jaxpr=body_closed,
                      cond_nconsts=len(cc), body_nconsts=len(bc))


def _while_threading_refs(cond_closed, cond_consts, body_closed, body_consts, init_flat):
  """while_p for a loop whose functions use refs they close over: the refs' contents become
  leading carries (read before the loop, written back after it). A cond_fun may write to them
  too: it then runs once before the loop and after each body inside it, and the loop carries
  its predicate."""
  refs, index = [], {}
  for c in cond_consts + body_consts:
    if state.is_ref(c) and id(c) not in index:
      index[id(c)] = len(refs)
      refs.append(c)
  nref = len(refs)

  def run(closed, consts, ref_vals, carry):
    """(outputs, ref contents after) of one of the loop's functions."""
    args = [ref_vals[index[id(c)]] if state.is_ref(c) else c for c in consts] + list(carry)
    outs, finals = discharge.eval_discharged(closed.jaxpr, closed.consts, args)
    ref_vals = list(ref_vals)
    for c, new in zip([c for c in consts if state.is_ref(c)], finals, strict=True):
      ref_vals[index[id(c)]] = new
    return outs, ref_vals

  cond_writes = any(e.primitive in (state.swap_p, state.addupdate_p)
                    for e in cond_closed.jaxpr.eqns)
  ref_vals = [state.ref_get(r) for r in refs]
  if not cond_writes:
    def cond_fn(*carry):
      return run(cond_closed, cond_consts, carry[:nref], carry[nref:])[0][0]

    def body_fn(*carry):
      outs, vals = run(body_closed, body_consts, carry[:nref], carry[nref:])
      return vals + list(outs)

    outs = _bind_while(cond_fn, body_fn, ref_vals + list(init_flat))
  else:
    (pred,), ref_vals = run(cond_closed, cond_consts, ref_vals, init_flat)

    def body_fn(*carry):
      outs, vals = run(body_closed, body_consts, carry[1:nref + 1], carry[nref + 1:])
      (again,), vals = run(cond_closed, cond_consts, vals, outs)
      return [again] + vals + list(outs)

    outs = _bind_while(lambda p, *_: p, body_fn, [pred] + ref_vals + list(init_flat))[1:]
  written = set()
  for closed, consts in ((cond_closed, cond_consts), (body_closed, body_consts)):
    written |= {id(c) for k, c in enumerate(consts)
                if state.is_ref(c) and discharge.writes_ref(closed.jaxpr, k)}
  for ref, new in zip(refs, outs[:nref]):
    if id(ref) in written:
      state.write_back(ref, new)
  return outs[nref:]


# --- fori_loop -----------------------------------------------------------------------------------
def _concrete_value(x):
  """`x`'s value if it is known while tracing (as JAX's is_concrete: a value under jvp whose
  primal is concrete counts), else None."""
  return to_concrete_value(x)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
  """`val = init_val; for i in range(lower, upper): val = body_fun(i, val)`; as jax.lax.fori_loop.

  With concrete bounds (Python ints, or arrays outside any transformation) the loop is a scan
  of `upper - lower` steps and supports reverse-mode differentiation; with traced bounds it is a
  while loop (forward mode only).

  Args:
    lower, upper: integer scalars (the loop runs for lower <= i < upper).
    body_fun: `(i, val) -> val`.
    init_val: the initial carry (a pytree of arrays).
    unroll: steps per loop iteration in the lowering (static bounds only).

  Returns:
    The final carry.

  Example:
    >>> lax.fori_loop(0, 5, lambda i, acc: acc + i, 0)
    Array(10, dtype=int32, weak_type=True)
  """
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  lower_aval, upper_aval = get_aval(lower), get_aval(upper)
  dtype = lower_aval.dtype
  if lower_aval.dtype != upper_aval.dtype:
    dtype = None
    if (dtypes.is_signed_integer(lower_aval.dtype)
        and dtypes.is_signed_integer(upper_aval.dtype)):
      if lower_aval.weak_type and not upper_aval.weak_type:
        dtype = upper_aval.dtype
      elif upper_aval.weak_type and not lower_aval.weak_type:
        dtype = lower_aval.dtype
    if dtype is None:
      raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                      f"{lower_aval.dtype.name} and {upper_aval.dtype.name}")
  use_scan = False
  lower, upper = dim_as_value(lower), dim_as_value(upper)  # symbolic sizes: traced bounds
  lower_c, upper_c = _concrete_value(lower), _concrete_value(upper)
  if lower_c is not None and upper_c is not None:
    try:
      lower_, upper_ = int(dispatch.host_value(lower_c)), int(dispatch.host_value(upper_c))
      use_scan = True
    except (TypeError, ValueError):
      use_scan = False
  if use_scan:
    def scanned(carry, _):
      i, x = carry
      return (binary.add(i, 1), body_fun(i, x)), None

    (_, result), _ = scan(scanned, (lower_, init_val), None, length=max(upper_ - lower_, 0),
                          unroll=False if unroll is None else unroll)
    return result
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically "
                     "known.")
  lower = convert_element_type(lower, dtype) if lower_aval.dtype != dtype else lower
  upper = convert_element_type(upper, dtype) if upper_aval.dtype != dtype else upper

  def body(carry):
    i, hi, x = carry
    return binary.add(i, np.asarray(1, get_aval(i).dtype)), hi, body_fun(i, x)

  _, _, result = while_loop(lambda c: comparison.lt(c[0], c[1]), body, (lower, upper, init_val))
  return result


# --- scan ----------------------------------------------------------------------------------------
def _infer_length(xs_flat, length):
  lengths = []
  for x in xs_flat:
    shape = common.aval_of(x).shape
    if not shape:
      raise ValueError(f"scan got value with no leading axis to scan over: {x}.")
    lengths.append(shape[0])
  if length is not None:
    if isinstance(length, Tracer):
      raise TypeError("The `length` argument to `scan` expects a concrete `int` value. For "
                      "scan-like iteration with a dynamic length, use `while_loop` or "
                      "`fori_loop`.")
    length = int(length)
    if not all(length == n for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading "
                       f"axis sizes {lengths}.")
    return length
  if len(set(lengths)) > 1:
    raise ValueError(f"scan got values with different leading axis sizes: "
                     f"{', '.join(_map(str, lengths))}.")
  if not lengths:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  return lengths[0]


def _scan_arg_names(f, init, xs) -> list:
  """One name per flat argument of a scan body: its parameter's name and the leaf's path."""
  try:
    params = list(inspect.signature(f).parameters)[:2]
  except (TypeError, ValueError):
    params = []
  heads = params + ["carry", "x"][len(params):]
  return [heads[k] + tree_util.keystr(p) for k, tree in enumerate((init, xs))
          for p, _ in tree_util.tree_flatten_with_path(tree)[0]]


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
  """Loop `f` over the leading axis of `xs`, carrying state; as jax.lax.scan.

  Semantics (for arrays; `init`, `xs` and the outputs may be pytrees):

    carry, ys = init, []
    for x in (reversed(xs) if reverse else xs):
      carry, y = f(carry, x)
      ys.append(y)
    return carry, stack(ys)  # in the order of xs

  Args:
    f: `(carry, x) -> (carry, y)`; the carry keeps its structure and types.
    init: the initial carry.
    xs: the values scanned over (arrays with a common leading size), or None.
    length: the number of steps (required when `xs` is None).
    reverse: walk `xs` from the end (the stacked outputs keep the order of `xs`).
    unroll: steps per loop iteration in the compiled loop (True: all of them).

  Returns:
    `(final carry, stacked ys)`.

  Example:
    >>> carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0., jnp.arange(4.))
    >>> carry
    Array(6., dtype=float32)
    >>> ys
    Array([0., 0., 2., 9.], dtype=float32)
  """
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  init_flat, init_tree = tree_util.tree_flatten(init)
  xs_flat, xs_tree = tree_util.tree_flatten(xs)
  length = _infer_length(xs_flat, length)
  x_avals = [common.aval_of(x).update(shape=common.aval_of(x).shape[1:]) for x in xs_flat]
  num_carry = len(init_flat)

  def create(carry_avals):
    def call(flat):
      carry = tree_util.tree_unflatten(init_tree, flat[:num_carry])
      return f(carry, tree_util.tree_unflatten(xs_tree, flat[num_carry:]))
    debug = staging.DebugInfo(f, "scan", lambda: _scan_arg_names(f, init, xs))
    jaxpr, consts, out_tree = common.trace_flat(call, list(carry_avals) + x_avals, debug)
    if (out_tree.node_data() is None or out_tree.node_data()[0] not in (tuple, list)
        or len(out_tree.children()) != 2):
      raise TypeError(f"scan body output must be a pair, got "
                      f"{tree_util.tree_unflatten(out_tree, jaxpr.out_avals)}.")
    carry_tree, ys_tree = out_tree.children()
    return jaxpr, consts, carry_tree, ys_tree

  carry_avals = [common.aval_of(x) for x in init_flat]
  jaxpr, consts, carry_tree, ys_tree = create(carry_avals)
  if carry_tree == init_tree:
    init_flat, changed = common.promote_weak_inputs(init_flat, carry_avals,
                                                    jaxpr.out_avals[:num_carry])
    if changed:
      carry_avals = [common.aval_of(x) for x in init_flat]
      jaxpr, consts, carry_tree, ys_tree = create(carry_avals)
  common.check_carry_type("scan body", f, init_tree, carry_avals, carry_tree,
                          jaxpr.out_avals[:carry_tree.num_leaves])
  if isinstance(unroll, bool):
    unroll = max(length, 1) if unroll else 1
  if not isinstance(unroll, (int, np.integer)) or unroll < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  closed, consts = common.hoist(jaxpr, consts)
  params = dict(reverse=bool(reverse), length=length, unroll=int(unroll))
  if any(state.is_ref(c) for c in consts) or any(state.is_ref(x) for x in xs_flat):
    outs = _scan_threading_refs(closed, consts, init_flat, xs_flat, num_carry, params)
  else:
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=closed, num_consts=len(consts),
                       num_carry=num_carry, **params)
  return (tree_util.tree_unflatten(carry_tree, outs[:num_carry]),
          tree_util.tree_unflatten(ys_tree, outs[num_carry:]))


def _scan_threading_refs(closed, consts, init_flat, xs_flat, num_carry, params):
  """scan_p for a body that uses refs: refs it closes over become leading carries (read before
  the loop, written back after it); a ref scanned over (among `xs`) gives each step a ref of its
  row, whose contents are the row read before the loop and whose final contents are stacked as
  extra outputs and written back after it."""
  nc, nx = len(consts), len(xs_flat)
  ref_pos = [i for i, c in enumerate(consts) if state.is_ref(c)]
  other = [i for i, c in enumerate(consts) if not state.is_ref(c)]
  xs_refs = [k for k, x in enumerate(xs_flat) if state.is_ref(x)]
  refs = [consts[i] for i in ref_pos] + [xs_flat[k] for k in xs_refs]
  state.check_distinct_refs(refs, "lax.scan")
  # (consts, carry, xs) -> (carry, ys, final contents of the const refs, then of the xs refs)
  pure = discharge.discharge_state(closed)
  n_in, n_out, nrc = len(pure.in_avals), len(closed.out_avals), len(ref_pos)
  finals = list(range(n_out, n_out + len(refs)))
  body = common.move_binders(pure, other + ref_pos + list(range(nc, n_in)),
                             finals[:nrc] + list(range(n_out)) + finals[nrc:])
  xs_vals = [state.ref_get(x) if state.is_ref(x) else x for x in xs_flat]
  outs = scan_p.bind(*[consts[i] for i in other], *[state.ref_get(consts[i]) for i in ref_pos],
                     *init_flat, *xs_vals, jaxpr=body, num_consts=len(other),
                     num_carry=nrc + num_carry, **params)
  news = outs[:nrc] + outs[len(outs) - len(xs_refs):]
  positions = ref_pos + [nc + num_carry + k for k in xs_refs]
  for ref, k, new in zip(refs, positions, news, strict=True):
    if discharge.writes_ref(closed.jaxpr, k):
      state.write_back(ref, new)
  return outs[nrc:len(outs) - len(xs_refs)]


def _stacked(aval: ShapedArray, length: int) -> ShapedArray:
  return aval.update(shape=(length,) + aval.shape)


def _scan_abstract_eval(*avals, reverse, length, jaxpr, num_consts, num_carry, unroll):
  if len(avals) != len(jaxpr.in_avals):
    raise TypeError(f"scan got {len(avals)} operands but its jaxpr takes "
                    f"{len(jaxpr.in_avals)} inputs")
  consts, carry, xs = common.split_list(avals, [num_consts, num_carry])
  for x in xs:
    if not x.shape or x.shape[0] != length:
      raise TypeError(f"scan of length {length} got a scanned operand of type "
                      f"{x.str_short()} (its leading axis must have size {length})")
  x_slices = [x.update(shape=x.shape[1:]) for x in xs]
  common.check_operands("scan", "jaxpr", jaxpr.in_avals, consts + carry + x_slices)
  carry_out, ys = jaxpr.out_avals[:num_carry], jaxpr.out_avals[num_carry:]
  if not all(_map(same_type, carry_out, jaxpr.in_avals[num_consts:num_consts + num_carry])):
    raise TypeError(f"scan jaxpr must return the carry types "
                    f"({common.avals_short(carry)}), got ({common.avals_short(carry_out)})")
  return list(carry_out) + [_stacked(y, length) for y in ys]


def _scan_impl(*args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  """Evaluate the steps in Python, or compile the scan when that would exceed
  EAGER_EQN_BUDGET equation evaluations."""
  if length * (len(jaxpr.eqns) + 1) > common.EAGER_EQN_BUDGET:
    params = dict(reverse=reverse, length=length, jaxpr=jaxpr, num_consts=num_consts,
                  num_carry=num_carry, unroll=unroll)
    return common.run_compiled(scan_p, args, params, jaxpr)
  consts, carry, xs = common.split_list(args, [num_consts, num_carry])
  xs = [dispatch.host_value(x) for x in xs]
  x_avals = jaxpr.in_avals[num_consts + num_carry:]
  carry_avals, y_avals = jaxpr.out_avals[:num_carry], jaxpr.out_avals[num_carry:]
  ys = [[None] * length for _ in y_avals]
  for step in range(length):
    i = length - 1 - step if reverse else step
    x_i = [common.as_array(x[i], a) for x, a in zip(xs, x_avals)]
    outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *x_i)
    carry = outs[:num_carry]
    for col, y in zip(ys, outs[num_carry:]):
      col[i] = dispatch.host_value(y)
  carry = [common.as_array(c, a) for c, a in zip(carry, carry_avals)]
  stacked = []
  for col, a in zip(ys, y_avals):
    v = (np.stack([np.asarray(y, a.dtype) for y in col]) if length
         else np.zeros((0,) + a.shape, a.dtype))
    stacked.append(common.as_array(v, _stacked(a, length)))
  return carry + stacked


def _scan_jvp(primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry, unroll):
  nz = [_tangent_nonzero(t, a) for t, a in zip(tangents, [get_aval(p) for p in primals])]
  const_nz, init_nz, xs_nz = common.split_list(nz, [num_consts, num_carry])
  num_ys = len(jaxpr.out_avals) - num_carry
  carry_nz = init_nz
  for _ in range(1 + num_carry):
    jvp, out_nz = common.jvp_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz),
                                   tuple(carry_nz + [False] * num_ys))
    if list(out_nz[:num_carry]) == carry_nz:
      break
    carry_nz = _or(carry_nz, out_nz[:num_carry])
  consts, init, xs = common.split_list(primals, [num_consts, num_carry])
  consts_t, init_t, xs_t = common.split_list(tangents, [num_consts, num_carry])
  consts_dot = [t for t, n in zip(consts_t, const_nz) if n]
  init_dot = [ad.instantiate_zeros(t) for t, n in zip(init_t, carry_nz) if n]
  xs_dot = [t for t, n in zip(xs_t, xs_nz) if n]
  num_xs = len(xs)
  nc, ncar, ncd, nid, nxd = num_consts, num_carry, len(consts_dot), len(init_dot), len(xs_dot)
  ys_nz = out_nz[num_carry:]
  nyd = sum(ys_nz)
  # jvp takes (consts, carry, xs, consts_dot, carry_dot, xs_dot) and returns
  # (carry, ys, carry_dot, ys_dot): reorder to the scan convention
  p = nc + ncar + num_xs
  rng = lambda a, n: list(range(a, a + n))
  in_order = (rng(0, nc) + rng(p, ncd) + rng(nc, ncar) + rng(p + ncd, nid) + rng(nc + ncar, num_xs)
              + rng(p + ncd + nid, nxd))
  q = ncar + num_ys
  out_order = rng(0, ncar) + rng(q, nid) + rng(ncar, num_ys) + rng(q + nid, nyd)
  jvp = common.move_binders(jvp, in_order, out_order)
  outs = scan_p.bind(*consts, *consts_dot, *init, *init_dot, *xs, *xs_dot, reverse=reverse,
                     length=length, jaxpr=jvp, num_consts=nc + ncd, num_carry=ncar + nid,
                     unroll=unroll)
  carry, carry_dot, ys, ys_dot = common.split_list(outs, [ncar, nid, num_ys])[:4]
  carry_dot, ys_dot = iter(carry_dot), iter(ys_dot)
  out_avals = (jaxpr.out_avals[:ncar]
               + [_stacked(a, length) for a in jaxpr.out_avals[ncar:]])
  tangents_out = ([next(carry_dot) if n else ad.Zero(ad.tangent_aval(a))
                   for n, a in zip(out_nz[:ncar], out_avals[:ncar])]
                  + [next(ys_dot) if n else ad.Zero(ad.tangent_aval(a))
                     for n, a in zip(ys_nz, out_avals[ncar:])])
  return carry + ys, tangents_out


def _scan_partial_eval(trace, args, params, unknowns):
  """Split the scan into a known scan (run now, also stacking per-step residuals) and an
  unknown scan (staged), as described in the module docstring."""
  jaxpr, num_consts, num_carry = params["jaxpr"], params["num_consts"], params["num_carry"]
  length = params["length"]
  num_ys = len(jaxpr.out_avals) - num_carry
  const_uk, init_uk, xs_uk = common.split_list(unknowns, [num_consts, num_carry])
  carry_uk = init_uk
  for _ in range(1 + num_carry):
    in_uk = tuple(const_uk + carry_uk + xs_uk)
    jaxpr_k, jaxpr_u, out_uk, num_res = common.partial_eval_jaxpr(
        jaxpr, in_uk, tuple(carry_uk + [False] * num_ys))
    if list(out_uk[:num_carry]) == carry_uk:
      break
    carry_uk = _or(carry_uk, out_uk[:num_carry])
  if all(in_uk):
    return staging.DynamicJaxprTrace.process_primitive(trace, scan_p, args, params)
  consts, init, xs = common.split_list(args, [num_consts, num_carry])
  known_consts = [x for x, u in zip(consts, const_uk) if not u]
  known_init = [x for x, u in zip(init, carry_uk) if not u]
  known_xs = [x for x, u in zip(xs, xs_uk) if not u]
  num_known_carry = len(known_init)
  num_known_outs = len(jaxpr_k.out_avals) - num_res

  # Evaluate the known body with the constants known and the carry/xs unknown: residuals that
  # come out known depend only on constants and are hoisted out of the loop (computed once,
  # now); residuals that are a slice of a known xs read that xs; the rest are stacked per step.
  pe2 = partial_eval.PartialEvalTrace(trace.parent_trace)
  loop_args = [pe2.new_arg(a) for a in jaxpr_k.in_avals[len(known_consts):]]
  with set_current_trace(pe2):
    outs_k = eval_jaxpr(jaxpr_k.jaxpr, jaxpr_k.consts, *known_consts, *loop_args)
  known_body_outs, res_k = outs_k[:num_known_outs], outs_k[num_known_outs:]
  xs_args = {id(t): j for j, t in enumerate(loop_args[num_known_carry:])}
  res_kinds, ext_outs = [], []  # per residual: ("int", value) | ("xs", j) | ("ext", k)
  for r in res_k:
    if not pe2.is_unknown(r):
      res_kinds.append(("int", r))
    elif id(r) in xs_args:
      res_kinds.append(("xs", xs_args[id(r)]))
    else:
      res_kinds.append(("ext", len(ext_outs)))
      ext_outs.append(r)
  loop_jaxpr, loop_consts = pe2.to_jaxpr(list(known_body_outs) + ext_outs)
  loop_jaxpr, _ = staging.dce_jaxpr(loop_jaxpr)
  loop_closed, loop_consts = common.hoist(loop_jaxpr, loop_consts)
  known_carry_out, known_ys, ext_res = [], [], []
  if loop_jaxpr.outvars:
    with set_current_trace(trace.parent_trace):
      known = scan_p.bind(*loop_consts, *known_init, *known_xs, reverse=params["reverse"],
                          length=length, jaxpr=loop_closed, num_consts=len(loop_consts),
                          num_carry=num_known_carry, unroll=params["unroll"])
    known_carry_out, known_ys, ext_res = common.split_list(
        known, [num_known_carry, num_known_outs - num_known_carry])
  if not any(out_uk):
    return common.merge_lists(out_uk, known_carry_out + known_ys, [])

  # The unknown scan: (intensive residuals, unknown consts; unknown carry; unknown xs,
  # extensive residuals).
  int_pos = [i for i, (k, _) in enumerate(res_kinds) if k == "int"]
  ext_pos = [i for i, (k, _) in enumerate(res_kinds) if k != "int"]
  int_vals = [res_kinds[i][1] for i in int_pos]
  ext_vals = [known_xs[v] if k == "xs" else ext_res[v] for k, v in (res_kinds[i] for i in ext_pos)]
  n_uk_in = len(jaxpr_u.in_avals) - num_res
  order = int_pos + [num_res + i for i in range(n_uk_in)] + ext_pos
  jaxpr_u = common.move_binders(jaxpr_u, in_order=order)
  unknown_args = [x for x, u in zip(args, in_uk) if u]
  staged = staging.DynamicJaxprTrace.process_primitive(
      trace, scan_p, int_vals + unknown_args + ext_vals,
      {**params, "jaxpr": jaxpr_u, "num_consts": len(int_vals) + sum(const_uk),
       "num_carry": sum(carry_uk)})
  return common.merge_lists(out_uk, known_carry_out + known_ys, staged)


@common.memoized
def _transposed_scan_jaxpr(jaxpr, num_consts, num_carry, const_lin, xs_lin, ys_nz):
  """The body of the transposed scan: consts = the non-linear consts (residuals); carry = the
  accumulated cotangents of the linear consts and the carry cotangents; xs = the non-zero ys
  cotangents and the non-linear xs; ys = the cotangents of the linear xs."""
  in_avals = jaxpr.in_avals
  const_avals, carry_avals, x_avals = common.split_list(in_avals, [num_consts, num_carry])
  res_const_avals = [a for a, lin in zip(const_avals, const_lin) if not lin]
  lin_const_avals = [ad.tangent_aval(a) for a, lin in zip(const_avals, const_lin) if lin]
  ct_carry_avals = [ad.tangent_aval(a) for a in carry_avals]
  y_avals = jaxpr.out_avals[num_carry:]
  ct_y_avals = [ad.tangent_aval(a) for a, nz in zip(y_avals, ys_nz) if nz]
  res_x_avals = [a for a, lin in zip(x_avals, xs_lin) if not lin]

  def body(*args):
    res_c, acc, ct_carry, ct_y, res_x = common.split_list(
        args, [len(res_const_avals), len(lin_const_avals), len(ct_carry_avals), len(ct_y_avals)])
    res_c, res_x, ct_y = iter(res_c), iter(res_x), iter(ct_y)
    primals = ([ad.UndefinedPrimal(a) if lin else next(res_c)
                for a, lin in zip(const_avals, const_lin)]
               + [ad.UndefinedPrimal(a) for a in carry_avals]
               + [ad.UndefinedPrimal(a) if lin else next(res_x)
                  for a, lin in zip(x_avals, xs_lin)])
    cts_out = list(ct_carry) + [next(ct_y) if nz else ad.Zero(ad.tangent_aval(a))
                                for a, nz in zip(y_avals, ys_nz)]
    from revax._src.interpreters.transpose import backward_pass
    cts_in = backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, cts_out)
    ct_consts, ct_carry_in, ct_xs = common.split_list(cts_in, [num_consts, num_carry])
    new_acc = [ad.instantiate_zeros(ad.add_tangents(a, c)) for a, c in
               zip(acc, [c for c, lin in zip(ct_consts, const_lin) if lin])]
    return (new_acc + [ad.instantiate_zeros(c) for c in ct_carry_in]
            + [ad.instantiate_zeros(c) for c, lin in zip(ct_xs, xs_lin) if lin])

  avals = res_const_avals + lin_const_avals + ct_carry_avals + ct_y_avals + res_x_avals
  return staging.trace_to_closed_jaxpr(body, avals)


def _scan_transpose(cts, *args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  consts, init, xs = common.split_list(args, [num_consts, num_carry])
  const_lin = tuple(ad.is_undefined_primal(c) for c in consts)
  xs_lin = tuple(ad.is_undefined_primal(x) for x in xs)
  ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
  ct_carry = [ad.instantiate_zeros(c) for c in ct_carry]
  ys_nz = tuple(type(c) is not ad.Zero for c in ct_ys)
  res_consts = [c for c, lin in zip(consts, const_lin) if not lin]
  res_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
  acc_init = [ad.zeros_like_aval(ad.tangent_aval(c.aval)) for c, lin in zip(consts, const_lin)
              if lin]
  body_t = _transposed_scan_jaxpr(jaxpr, num_consts, num_carry, const_lin, xs_lin, ys_nz)
  outs = scan_p.bind(*res_consts, *acc_init, *ct_carry, *[c for c in ct_ys if type(c) is not
                                                          ad.Zero], *res_xs,
                     reverse=not reverse, length=length, jaxpr=body_t,
                     num_consts=len(res_consts), num_carry=len(acc_init) + num_carry,
                     unroll=unroll)
  ct_consts, ct_init, ct_xs = common.split_list(outs, [len(acc_init), num_carry])
  ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
  return ([next(ct_consts) if lin else None for lin in const_lin]
          + [ct if ad.is_undefined_primal(x) else None for x, ct in zip(init, ct_init)]
          + [next(ct_xs) if lin else None for lin in xs_lin])


def _scan_batch(axis_size, vals, dims, *, reverse, length, jaxpr, num_consts, num_carry, unroll):
  batched = [d is not None for d in dims]
  const_b, init_b, xs_b = common.split_list(batched, [num_consts, num_carry])
  num_ys = len(jaxpr.out_avals) - num_carry
  carry_b = init_b
  for _ in range(1 + num_carry):
    jaxpr_b, out_b = common.batch_jaxpr(jaxpr, axis_size, tuple(const_b + carry_b + xs_b),
                                        tuple(carry_b + [False] * num_ys))
    if list(out_b[:num_carry]) == carry_b:
      break
    carry_b = _or(carry_b, out_b[:num_carry])
  consts, init, xs = common.split_list(vals, [num_consts, num_carry])
  cdims, idims, xdims = common.split_list(dims, [num_consts, num_carry])
  consts = [common.bdim_to_front(x, d, axis_size, b) for x, d, b in zip(consts, cdims, const_b)]
  init = [common.bdim_to_front(x, d, axis_size, b) for x, d, b in zip(init, idims, carry_b)]
  xs = [batch_util.moveaxis(x, d, 1) if d is not None else x for x, d in zip(xs, xdims)]
  outs = scan_p.bind(*consts, *init, *xs, reverse=reverse, length=length, jaxpr=jaxpr_b,
                     num_consts=num_consts, num_carry=num_carry, unroll=unroll)
  return outs, ([0 if b else None for b in carry_b]
                + [1 if b else None for b in out_b[num_carry:]])


def _scan_dce(eqn, used_outputs):
  jaxpr, num_consts, num_carry = (eqn.params["jaxpr"], eqn.params["num_consts"],
                                  eqn.params["num_carry"])
  used_carry, used_ys = list(used_outputs[:num_carry]), list(used_outputs[num_carry:])
  for _ in range(1 + num_carry):
    new_jaxpr, used_in = common.dce_closed(jaxpr, used_carry + used_ys)
    used_consts, used_carry_in, used_xs = common.split_list(used_in, [num_consts, num_carry])
    if all(u <= c for u, c in zip(used_carry_in, used_carry)):
      break
    used_carry = _or(used_carry, used_carry_in)
  used_inputs = used_consts + used_carry + used_xs
  new_jaxpr = common.prune_invars(new_jaxpr, used_inputs)
  new_eqn = eqn.replace(
      invars=[v for v, u in zip(eqn.invars, used_inputs) if u],
      outvars=[v for v, u in zip(eqn.outvars, used_carry + used_ys) if u],
      params={**eqn.params, "jaxpr": new_jaxpr, "num_consts": sum(used_consts),
              "num_carry": sum(used_carry)})
  return used_inputs, new_eqn


def _index_scalar(i: int):
  v = np.asarray(i, np.int32)
  v.flags.writeable = False
  return Array(ShapedArray((), np.int32), npy=v)


def _index_in_dim(x, i):
  aval = get_aval(x)
  zeros = [_index_scalar(0)] * (aval.ndim - 1)
  with sharding_types.internal_expansion():  # (a split xs: its slices are unsplit)
    piece = slicing.dynamic_slice_p.bind(x, i, *zeros, slice_sizes=(1,) + aval.shape[1:])
  return shapes.reshape(piece, aval.shape[1:])


def _update_index_in_dim(buf, y, i):
  aval = get_aval(buf)
  zeros = [_index_scalar(0)] * (aval.ndim - 1)
  y = shapes.reshape(y, (1,) + aval.shape[1:])
  if get_aval(y).dtype != aval.dtype:
    y = convert_element_type(y, aval.dtype)
  return slicing.dynamic_update_slice_p.bind(buf, y, i, *zeros)


def _scan_loop(*args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  """The scan as a while loop over a step counter (what scan lowers to): each iteration runs
  `unroll` steps, reading slices of xs and writing slices of the stacked ys; the steps that do
  not fill a whole iteration run after the loop."""
  consts, init, xs = common.split_list(args, [num_consts, num_carry])
  y_avals = jaxpr.out_avals[num_carry:]
  ys = [creation.full((length,) + a.shape, 0, a.dtype) for a in y_avals]
  ys = [vma.cast_to(y, get_aval(y), vma.varying(a)) for y, a in zip(ys, y_avals, strict=True)]
  unroll = length if unroll == 0 else unroll
  unroll = max(1, min(unroll, length))
  num_trips, remainder = divmod(length, unroll)
  if num_trips == 1 and remainder == 0 and unroll > 1:
    num_trips, remainder = 0, length  # fully unrolled: no loop at all

  def step(k, carry, ys):
    """Step number `k` (traced, or a Python int after the loop)."""
    if isinstance(k, int):
      i = _index_scalar(length - 1 - k if reverse else k)
    else:
      i = binary.sub(_index_scalar(length - 1), k) if reverse else k
    x = [_index_in_dim(x, i) for x in xs]
    outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *x)
    new_ys = [_update_index_in_dim(buf, y, i) for buf, y in zip(ys, outs[num_carry:])]
    return list(outs[:num_carry]), new_ys

  carry = list(init)
  if num_trips:
    def cond_fn(t, *_):
      return comparison.lt(t, _index_scalar(num_trips))

    def body_fn(t, *state):
      c, y = list(state[:num_carry]), list(state[num_carry:])
      for j in range(unroll):
        k = binary.add(binary.mul(t, _index_scalar(unroll)), _index_scalar(j))
        c, y = step(k, c, y)
      return [binary.add(t, _index_scalar(1))] + c + y

    state = _bind_while(cond_fn, body_fn, [_index_scalar(0)] + carry + ys)
    carry, ys = list(state[1:1 + num_carry]), list(state[1 + num_carry:])
  for k in range(num_trips * unroll, length):
    carry, ys = step(k, carry, ys)
  return carry + ys


# --- scan under invertible reverse mode: a loop of invertible steps walks back step by step ---
@staging.memoize_on_jaxpr
def _invertible_body_plan(body: ClosedJaxpr, num_consts: int, num_carry: int):
  """The reconstruction plan of a scan body that rebuilds its carry from its outputs, given its
  constants and scanned slices; None if some carry would have to be stored."""
  n = len(body.in_avals)
  given = tuple(not (num_consts <= i < num_consts + num_carry) for i in range(n))
  plan = inv.reconstruction_plan(body, given)
  return None if plan.saved else plan


def _scan_inverse_solves(known, eqn, facts) -> bool:
  p = eqn.params
  nc, ncar = p["num_consts"], p["num_carry"]
  return (all(known[:nc]) and all(known[nc + ncar:])
          and _invertible_body_plan(p["jaxpr"], nc, ncar) is not None)


def _scan_inverse(outs, ins, avals_in, *, reverse, length, jaxpr, num_consts, num_carry,
                  unroll):
  """The initial carry from the final one: the inverted body, scanned the other way."""
  plan = _invertible_body_plan(jaxpr, num_consts, num_carry)
  consts, xs = ins[:num_consts], ins[num_consts + num_carry:]
  carry_out, ys = outs[:num_carry], outs[num_carry:]

  def step(carry, slices):
    x_t, y_t = slices
    given = {**dict(enumerate(consts)),
             **{num_consts + num_carry + k: x for k, x in enumerate(x_t)}}
    rebuilt = inv.rebuild_inputs(jaxpr, plan, list(carry) + list(y_t), [], given)
    return rebuilt[num_consts:num_consts + num_carry], None

  init, _ = scan(step, list(carry_out), (list(xs), list(ys)), length=length,
                 reverse=not reverse)
  return list(consts) + list(init) + list(xs)


def _scan_walking_vjp(eqn, ins, outs, cts_out, active):
  """Cotangents of a scan whose body can rebuild its carry: a scan the other way that rebuilds
  each step's carry from the next one and takes that step's VJP, storing nothing per step."""
  p = eqn.params
  nc, ncar, body = p["num_consts"], p["num_carry"], p["jaxpr"]
  plan = _invertible_body_plan(body, nc, ncar)
  if plan is None:
    return inv.eqn_vjp(eqn, ins, cts_out, active)
  consts, xs = ins[:nc], ins[nc + ncar:]
  carry_out, ys = outs[:ncar], outs[ncar:]
  ct_carry, ct_ys = cts_out[:ncar], cts_out[ncar:]
  body_avals = body.in_avals
  nonzeros = tuple(dtypes.is_inexact(a.dtype) and (nc <= i < nc + ncar or active[i])
                   for i, a in enumerate(body_avals))
  zeros = lambda avals: [ad.instantiate_zeros(ad.Zero(ad.tangent_aval(a))) for a in avals]

  def step(carry, slices):
    values, cts_c, ct_consts = carry
    x_t, y_t, ct_y = slices
    given = {**dict(enumerate(consts)), **{nc + ncar + k: x for k, x in enumerate(x_t)}}
    cts_in, rebuilt = inv.backward_walk(body, plan, nonzeros, list(values) + list(y_t), [],
                                        list(cts_c) + list(ct_y), given, return_inputs=True)
    cts_all = iter(cts_in)
    full = [ad.instantiate_zeros(next(cts_all)) if nz else None for nz in nonzeros]
    ct_consts = [c if f is None else binary.add(c, f) for c, f in zip(ct_consts, full[:nc])]
    new_cts_c = [f if f is not None else z for f, z in
                 zip(full[nc:nc + ncar], zeros(body_avals[nc:nc + ncar]))]
    ct_x = [f if f is not None else z for f, z in
            zip(full[nc + ncar:], zeros(body_avals[nc + ncar:]))]
    return (rebuilt[nc:nc + ncar], new_cts_c, ct_consts), ct_x

  init = (list(carry_out), [ad.instantiate_zeros(c) for c in ct_carry],
          zeros(body_avals[:nc]))
  (_, ct_init, ct_consts), ct_xs = scan(
      step, init, (list(xs), list(ys), [ad.instantiate_zeros(c) for c in ct_ys]),
      length=p["length"], reverse=not p["reverse"])
  return [c if a else None for c, a in zip(list(ct_consts) + list(ct_init) + list(ct_xs),
                                            active, strict=True)]


scan_p = Primitive("scan", multiple_results=True)
scan_p.def_abstract_eval(_scan_abstract_eval)
dispatch.custom_impls[scan_p] = _scan_impl
ad.primitive_jvps[scan_p] = _scan_jvp
partial_eval.partial_eval_rules[scan_p] = _scan_partial_eval
ad.primitive_transposes[scan_p] = _scan_transpose
batching.axis_size_batchers[scan_p] = _scan_batch
staging.dce_rules[scan_p] = _scan_dce
mlir.register_lowering(scan_p, mlir.lower_fun(_scan_loop, multiple_results=True))
inv.definverse(scan_p, _scan_inverse, _scan_inverse_solves)
inv.structured_vjps[scan_p] = _scan_walking_vjp


# --- map -----------------------------------------------------------------------------------------
def _vmap_leading(f, xs):
  """`f` mapped over axis 0 of every leaf of `xs` (vectorized with the batching interpreter)."""
  leaves, tree = tree_util.tree_flatten(xs)
  size = get_aval(leaves[0]).shape[0]
  store = {}

  def flat_f(*flat):
    out_leaves, store["tree"] = tree_util.tree_flatten(f(tree_util.tree_unflatten(tree, flat)))
    return out_leaves

  outs, dims = batching.batch_flat(flat_f, leaves, [0] * len(leaves), size)
  outs = [batch_util.bdim_at(o, d, 0, size) for o, d in zip(outs, dims)]
  return tree_util.tree_unflatten(store["tree"], outs)


def map(f, xs, *, batch_size=None):  # noqa: A001 (jax.lax's name)
  """`stack([f(x) for x in xs])` over the leading axis of (pytree) `xs`, as a scan; as
  jax.lax.map.

  Args:
    f: a function of one example (a pytree of arrays without the leading axis).
    xs: the examples, stacked along axis 0 of every leaf.
    batch_size: if given, `batch_size` examples at a time are vectorized (vmap inside the scan)
      and the remainder in one more vectorized call; 0 vectorizes them all.

  Returns:
    The outputs of `f`, stacked along a new leading axis.

  Example:
    >>> lax.map(lambda x: x ** 2, jnp.arange(4.))
    Array([0., 1., 4., 9.], dtype=float32)
  """
  if batch_size is None:
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys
  leaves, tree = tree_util.tree_flatten(xs)
  if not leaves:
    return _vmap_leading(f, xs)
  n = get_aval(leaves[0]).shape[0]
  num_batches, rem = divmod(n, batch_size) if batch_size else (0, n)
  done = num_batches * batch_size
  parts = []
  if num_batches:
    batched = [shapes.reshape(slicing.slice(x, (0,) * get_aval(x).ndim, (done,) +
                                            get_aval(x).shape[1:]),
                              (num_batches, batch_size) + get_aval(x).shape[1:]) for x in leaves]
    _, ys = scan(lambda _, x: ((), _vmap_leading(f, x)), (),
                 tree_util.tree_unflatten(tree, batched))
    parts.append(tree_util.tree_map(
        lambda y: shapes.reshape(y, (done,) + get_aval(y).shape[2:]), ys))
  if rem:
    rest = [slicing.slice(x, (done,) + (0,) * (get_aval(x).ndim - 1), get_aval(x).shape)
            for x in leaves]
    parts.append(_vmap_leading(f, tree_util.tree_unflatten(tree, rest)))
  if len(parts) == 1:
    return parts[0]
  return tree_util.tree_map(lambda a, b: shapes.concatenate([a, b], 0), *parts)
