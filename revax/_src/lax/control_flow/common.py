"""What the control-flow primitives share: tracing bodies, JAX's type errors, jaxpr rewrites.

User functions (branches, loop bodies) are traced once into jaxprs whose constants are hoisted
into leading input variables: closed-over arrays and tracers of outer transformations become
explicit operands of the primitive, so every transformation sees them as ordinary inputs. The
rules of cond, while and scan transform their nested jaxprs with the helpers here: `jvp_jaxpr`
(primals and non-zero tangents in, primals and non-zero tangents out), `batch_jaxpr` (batched
inputs and outputs at axis 0) and `transpose_jaxpr`, each memoized per jaxpr, plus small
structural edits (`move_binders`, `prune_invars`, `dce_closed`) that reorder or drop binders
without changing what a jaxpr computes.
"""
from __future__ import annotations

import functools
import inspect
import weakref

import numpy as np
import optree

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import AbstractRef, ShapedArray, Token, get_aval, same_type
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from revax._src.interpreters import ad, batching, discharge, dispatch, staging, transpose
from revax._src.interpreters import partial_eval as pe
from revax._src.lax import batch_util
from revax._src.runtime.array import Array


# --- tracing bodies -------------------------------------------------------------------------------
def trace_flat(call, in_avals, debug=None):
  """Trace `call(flat_args) -> pytree` at `in_avals`. `debug` (a staging.DebugInfo of the
  user's function, its kind and flat argument names), when given, names the function in JAX's
  error for a returned mutable array reference.

  Returns (jaxpr, consts, out_tree): the jaxpr's constvars hold `consts` (closed-over arrays
  and outer tracers); `hoist` turns them into leading operands.
  """
  store = {}

  def flat_fun(*flat_args):
    out = call(list(flat_args))
    leaves, store["out_tree"] = tree_util.tree_flatten(out)
    for x in leaves:
      try:
        get_aval(x)
      except TypeError:
        raise TypeError(f"a control-flow function returned a value of type {type(x).__name__} "
                        f"({x!r}); outputs must be arrays or scalars, or pytrees of them") from None
    avals = [get_aval(x) for x in leaves]
    if debug is None:
      discharge.ref_error_for_outputs(avals, "a control-flow function")
    elif any(isinstance(a, AbstractRef) for a in avals):
      paths = ["result" + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(out)[0]]
      names = debug.arg_names_thunk()
      origin = lambda k: next((names[i] for i, a in enumerate(flat_args) if a is leaves[k]),
                              None)
      discharge.ref_error_for_outputs(
          avals, f"function {debug.fun_description()} traced for {debug.kind}", paths, origin)
    return leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, list(in_avals))
  return jaxpr, consts, store["out_tree"]


def hoist(jaxpr: Jaxpr, consts) -> tuple[ClosedJaxpr, list]:
  """The jaxpr with its constvars turned into leading invars, and the values they take."""
  return ClosedJaxpr(staging.convert_constvars_jaxpr(jaxpr), []), list(consts)


def merge_consts(traced) -> tuple[list[ClosedJaxpr], list]:
  """Give jaxprs traced separately (cond branches) one shared list of leading const operands.

  `traced` is a list of (jaxpr, consts). Consts are united by identity; each jaxpr gains an
  unused input for every const that only other jaxprs read.
  """
  all_consts, index = [], {}
  for _, consts in traced:
    for c in consts:
      if id(c) not in index:
        index[id(c)] = len(all_consts)
        all_consts.append(c)
  closed = []
  for jaxpr, consts in traced:
    own = {id(c): v for v, c in zip(jaxpr.constvars, consts, strict=True)}
    lead = [own[id(c)] if id(c) in own else Var(get_aval(c)) for c in all_consts]
    closed.append(ClosedJaxpr(Jaxpr([], lead + jaxpr.invars, jaxpr.outvars, jaxpr.eqns), []))
  return closed, all_consts


def aval_of(x) -> ShapedArray:
  return x.aval if type(x) is Array else get_aval(x)


def promote_weak_inputs(vals, in_avals, out_avals):
  """Weakly typed loop inputs (Python scalars) take the type the body gives them, as in JAX:
  `fori_loop(0, n, lambda i, x: x + 0.5, 0)` carries a float. Returns (vals, changed)."""
  from revax._src.lax.conversion import convert_element_type
  new_vals, changed = [], False
  for x, a_in, a_out in zip(vals, in_avals, out_avals):
    if a_in.weak_type and not same_type(a_in, a_out) and a_in.shape == a_out.shape:
      dtype, _ = dtypes.promote_types_weak((a_in.dtype, True), (a_out.dtype, a_out.weak_type))
      x = convert_element_type(x, dtype)
      changed = True
    new_vals.append(x)
  return new_vals, changed


# --- JAX's error messages -------------------------------------------------------------------------
def fun_sourceinfo(fun) -> str:
  """'name at file:line', as JAX's error messages name user functions."""
  while isinstance(fun, functools.partial):
    fun = fun.func
  fun = inspect.unwrap(fun)
  try:
    return f"{fun.__name__} at {fun.__code__.co_filename}:{fun.__code__.co_firstlineno}"
  except AttributeError:
    return getattr(fun, "__name__", "<unknown>")


def keystr(path) -> str:
  return "".join(f"[{k!r}]" for k in path)


def _capitalize(s: str) -> str:
  return s[0].upper() + s[1:]


def mismatch_extra(a1: ShapedArray, a2: ShapedArray) -> str:
  problems = []
  if a1.dtype != a2.dtype:
    problems.append("the dtypes do not match")
  if a1.shape != a2.shape:
    problems.append("the shapes do not match")
  if getattr(a1, "_mat", None) != getattr(a2, "_mat", None):
    problems.append("the manual axis types do not match")
  if len(problems) <= 1:
    return ", so " + problems[0] if problems else ""
  return ", so " + ", ".join(problems[:-1]) + ", and " + problems[-1]


def _pvary_hint(fixes, loop: bool) -> str:
  """JAX's advice for types that differ by varying manual axes: where to pcast (a loop's and
  cond's lists are laid out slightly differently, as in JAX)."""
  if not fixes:
    return ""
  if len(fixes) == 1:
    hint = f"This might be fixed by {fixes[0]}.\n"
  elif loop:
    hint = ("This might be fixed by:\n" + "\n".join(f"  * {d};\n" for d in fixes[:-1])
            + f"  * {fixes[-1]}.\n")
  else:
    hint = ("This might be fixed by:\n" + "\n".join(f"  * {d};" for d in fixes[:-1])
            + f"\n  * {fixes[-1]}.\n")
  return hint + ("See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more "
                 "information.\n\n")


def _more_varying(a_from, a_to):
  """The axes `a_to` varies over and `a_from` does not (JAX's tuple of the set difference),
  when their varying axes differ; None otherwise."""
  v_from, v_to = a_from.mat.varying, a_to.mat.varying
  if v_from == v_to or not v_to - v_from:
    return None
  return tuple(v_to - v_from)


def _join_differences(diffs) -> str:
  if len(diffs) == 1:
    return f"{_capitalize(diffs[0])}.\n"
  return "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"


def check_branch_outputs(api_name, name1, name2, f1, f2, tree1, avals1, tree2, avals2):
  """TypeError (JAX's message) unless two branches return the same structure and types."""
  info = f"{name1} is {fun_sourceinfo(f1)}\n{name2} is {fun_sourceinfo(f2)}\n\n"
  if tree1 != tree2:
    raise TypeError(
        f"{api_name} branch outputs must have the same pytree structure, but they differ:\n\n"
        f"{info}{name1} output has pytree structure {tree1} but {name2} output has pytree "
        f"structure {tree2}.\n\n"
        f"Revise {name1} and/or {name2} so that they have the same pytree structure.")
  paths = optree.treespec_paths(tree1._spec)
  where = lambda p: " at path " + keystr(p) if p else ""
  pairs = [(p, a1, a2) for p, a1, a2 in zip(paths, avals1, avals2) if not same_type(a1, a2)]
  diffs = [f"the output of {name1}{where(p)} has type {_long(a1)} but the corresponding output "
           f"of {name2} has type {_long(a2)}{mismatch_extra(a1, a2)}" for p, a1, a2 in pairs]
  if diffs:
    # (as JAX words it: the axes named are those a1 has over a2, whichever way they differ)
    fixes = [f"applying `jax.lax.pcast(..., {tuple(a1.mat.varying - a2.mat.varying)}, "
             f"to='varying')` to the output of {n}{where(p)}"
             for p, aval1, aval2 in pairs
             for n, a1, a2 in ((name1, aval2, aval1), (name2, aval1, aval2))
             if isinstance(a1, ShapedArray) and isinstance(a2, ShapedArray)
             and a1.mat.varying != a2.mat.varying and a2.mat.varying - a1.mat.varying]
    raise TypeError(
        f"{api_name} branches must have equal output types but they differ.\n\n{info}"
        f"{_join_differences(diffs)}\n{_pvary_hint(fixes, loop=False)}"
        f"Revise {name1} and/or {name2} so that all output types match.")


def check_carry_type(name, body_fun, in_tree, in_avals, out_tree, out_avals):
  """TypeError (JAX's message) unless a loop body returns its carry's structure and types."""
  try:
    carry_name = next(iter(inspect.signature(body_fun).parameters), None)
  except (TypeError, ValueError):
    carry_name = None

  def component(path):
    if carry_name:
      return (f"the input carry component {carry_name}{keystr(path)}" if path
              else f"the input carry {carry_name}")
    return f"the input carry at path {keystr(path)}" if path else "the input carry"

  if in_tree != out_tree:
    raise TypeError(
        f"{name} function carry input and carry output must have the same pytree structure, "
        f"but they differ:\n\nthe input tree structure is:\n{in_tree}\nthe output tree "
        f"structure is:\n{out_tree}\n\nRevise the function so that the carry output has the "
        "same pytree structure as the carry input.")
  paths = optree.treespec_paths(in_tree._spec)
  pairs = [(p, a_in, a_out) for p, a_in, a_out in zip(paths, in_avals, out_avals)
           if not same_type(a_in, a_out)]
  diffs = [f"{component(p)} has type {_long(a_in)} but the corresponding output carry "
           f"component has type {_long(a_out)}{mismatch_extra(a_in, a_out)}"
           for p, a_in, a_out in pairs]
  if diffs:
    fixes = [f"applying `jax.lax.pcast(..., {extra}, to='varying')`, to the initial carry "
             f"value corresponding to {component(p)}" for p, a_in, a_out in pairs
             if isinstance(a_in, ShapedArray) and isinstance(a_out, ShapedArray)
             and (extra := _more_varying(a_in, a_out))]
    if len(diffs) == 1:
      differences = f"{_capitalize(diffs[0])}.\n"
    else:
      differences = ("\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n")
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they "
        f"differ:\n\n{differences}\n{_pvary_hint(fixes, loop=True)}"
        "Revise the function so that all output types match the corresponding input types.")


def _long(aval) -> str:
  """An aval as JAX's messages print it ('float32[3]{V:i}')."""
  try:
    return aval.str_short(short_dtypes=False)
  except TypeError:
    return aval.str_short()


def avals_short(avals) -> str:
  return " ".join(a.str_short() for a in avals)


def check_operands(prim_name: str, what: str, expected, received) -> None:
  """TypeError unless operand avals match a nested jaxpr's input avals (weak types aside)."""
  expected, received = list(expected), list(received)
  if len(expected) != len(received) or not all(map(same_type, expected, received)):
    raise TypeError(f"{prim_name} {what} take input types ({avals_short(expected)}), called with "
                    f"operands of type ({avals_short(received)})")


# --- eager helpers --------------------------------------------------------------------------------
def as_array(x, aval: ShapedArray) -> Array:
  """An eager value as an Array of exactly `aval` (literal and forwarded outputs included)."""
  if type(x) is Array and same_type(x.aval, aval):
    return x if x.aval == aval else Array(aval, x._npy, x._buf)
  if type(x) is Token:  # (a token passes through as itself)
    return x
  v = np.array(dispatch.host_value(x), dtype=aval.dtype)
  v.flags.writeable = False
  return Array(aval, npy=v)


# Eager loops evaluate their bodies equation by equation (microseconds each, no compile). Past
# this many equation evaluations a loop is compiled with XLA instead (a compile costs about as
# much as this many evaluations), so long eager loops are never far from the compiled speed.
EAGER_EQN_BUDGET = 20_000

_compiled_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def run_compiled(prim, args, params, key_jaxpr: ClosedJaxpr):
  """`prim` applied to eager `args`, compiled alone with XLA; cached per `key_jaxpr` (a jaxpr
  of its params) and the argument types. Returns the outputs (a list of Arrays)."""
  avals = tuple(aval_of(a) for a in args)
  per_jaxpr = _compiled_programs.setdefault(key_jaxpr, {})
  key = (avals, tuple(sorted(params.items())))
  program = per_jaxpr.get(key)
  if program is None:
    invars = [Var(a) for a in avals]
    outvars = [Var(a) for a in prim.abstract_eval(*avals, **params)]
    jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars, params)])
    program = per_jaxpr[key] = dispatch.compile_jaxpr(ClosedJaxpr(jaxpr, []), prim.name)
  return program.call_arrays(list(args))


# --- memoized jaxpr-to-jaxpr transformations ------------------------------------------------------
def memoized(fn):
  """Cache `fn(closed_jaxpr, *hashable_options)` per jaxpr (weakly): the fixpoints of the loop
  rules and repeated transformations of one program reuse one derived jaxpr."""
  cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

  @functools.wraps(fn)
  def cached(closed, *options):
    per_jaxpr = cache.setdefault(closed, {})
    if options not in per_jaxpr:
      per_jaxpr[options] = fn(closed, *options)
    return per_jaxpr[options]
  return cached


def _tangent_zero(aval):
  return ad.Zero(ad.tangent_aval(aval))


@memoized
def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: tuple, instantiate: tuple):
  """The JVP of `closed`: `(primals..., non-zero tangents...) -> (outs..., non-zero out
  tangents...)`, and which out tangents are non-zero. `instantiate[i]` makes out tangent i
  non-zero (materialized zeros) when its output is inexact; integer outputs never have one."""
  avals = closed.in_avals
  tangent_avals = [ad.tangent_aval(a) for a, nz in zip(avals, nonzeros, strict=True) if nz]
  store = {}

  def fun(*args):
    primals, nz_tangents = args[:len(avals)], iter(args[len(avals):])
    tangents = [next(nz_tangents) if nz else _tangent_zero(a) for a, nz in zip(avals, nonzeros)]
    outs, out_tangents = ad.jvp_flat(
        lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, tangents)
    result, out_nz = list(outs), []
    for aval, t, inst in zip(closed.out_avals, out_tangents, instantiate, strict=True):
      if not dtypes.is_inexact(aval.dtype):
        out_nz.append(False)
        continue
      if type(t) is ad.Zero and not inst:
        out_nz.append(False)
        continue
      out_nz.append(True)
      result.append(ad.instantiate_zeros(t) if type(t) is ad.Zero else t)
    store["out_nz"] = tuple(out_nz)
    return result

  jaxpr, consts = staging.trace_to_jaxpr(fun, list(avals) + tangent_avals)
  return ClosedJaxpr(jaxpr, consts), store["out_nz"]


def batched_aval(aval: ShapedArray, size: int) -> ShapedArray:
  return aval.update(shape=(size,) + aval.shape)


def batch_jaxpr(closed: ClosedJaxpr, axis_size: int, in_batched: tuple, instantiate: tuple):
  """`closed` on inputs batched at axis 0 where `in_batched`; outputs are batched at axis 0 or
  not at all (`instantiate[i]` broadcasts output i). Returns (jaxpr, out_batched). Collectives
  over the running batching rule's axis name apply to the batch, and layouts inside it put the
  batch on the rule's spmd axes (vmap's spmd_axis_name)."""
  return _batch_jaxpr(closed, axis_size, in_batched, instantiate, batching.batching_axis_name(),
                      batching.batching_spmd_axis_name())


@memoized
def _batch_jaxpr(closed: ClosedJaxpr, axis_size: int, in_batched: tuple, instantiate: tuple,
                 axis_name, spmd_axis_name=None):
  in_avals = [batched_aval(a, axis_size) if b else a
              for a, b in zip(closed.in_avals, in_batched, strict=True)]
  store = {}

  def fun(*args):
    outs, dims = batching.batch_flat(
        lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), list(args),
        [0 if b else None for b in in_batched], axis_size, axis_name, spmd_axis_name)
    result, out_batched = [], []
    for o, d, inst in zip(outs, dims, instantiate, strict=True):
      if d is not None:
        o = batch_util.moveaxis(o, d, 0)
      elif inst:
        o = batch_util.broadcast_batched(o, axis_size, 0)
      result.append(o)
      out_batched.append(d is not None or inst)
    store["out_batched"] = tuple(out_batched)
    return result

  jaxpr, consts = staging.trace_to_jaxpr(fun, in_avals)
  return ClosedJaxpr(jaxpr, consts), store["out_batched"]


@memoized
def transpose_jaxpr(closed: ClosedJaxpr, linear: tuple):
  """`(non-linear inputs..., output cotangents...) -> cotangents of the linear inputs`."""
  return transpose.transpose_jaxpr(closed, list(linear))


def bdim_to_front(x, dim, size: int, batched: bool):
  """`x` batched at axis 0 if `batched` (broadcast when it is not yet), else `x` unbatched."""
  if not batched:
    return x
  return batch_util.bdim_at(x, dim, 0, size)


# --- structural edits -----------------------------------------------------------------------------
def move_binders(closed: ClosedJaxpr, in_order=None, out_order=None) -> ClosedJaxpr:
  """The same program with its invars/outvars listed in a new order (index lists)."""
  j = closed.jaxpr
  invars = j.invars if in_order is None else [j.invars[i] for i in in_order]
  outvars = j.outvars if out_order is None else [j.outvars[i] for i in out_order]
  return ClosedJaxpr(Jaxpr(j.constvars, invars, outvars, j.eqns), closed.consts)


def prune_invars(closed: ClosedJaxpr, keep) -> ClosedJaxpr:
  j = closed.jaxpr
  invars = [v for v, k in zip(j.invars, keep, strict=True) if k]
  return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns), closed.consts)


@memoized
def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: tuple, instantiate: tuple):
  """partial_eval.partial_eval_jaxpr, memoized: (known, unknown, out_unknowns, num_res)."""
  return pe.partial_eval_jaxpr(closed, list(unknowns), list(instantiate))


def dce_closed(closed: ClosedJaxpr, used_outputs):
  """Drop unused outputs and the equations only they need. Returns (jaxpr, used_inputs); the
  inputs stay (prune them with `prune_invars`)."""
  jaxpr, used_inputs = staging.dce_jaxpr(closed.jaxpr, list(used_outputs))
  return ClosedJaxpr(jaxpr, closed.consts), used_inputs


def split_list(xs, sizes):
  xs, out, start = list(xs), [], 0
  for n in sizes:
    out.append(xs[start:start + n])
    start += n
  out.append(xs[start:])
  return out


def merge_lists(which, falses, trues):
  """Interleave: element i comes from `trues` where which[i], else from `falses` (in order)."""
  it_f, it_t = iter(falses), iter(trues)
  return [next(it_t) if w else next(it_f) for w in which]
