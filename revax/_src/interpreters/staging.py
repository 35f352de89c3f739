"""Staging: trace a Python function into a jaxpr, and dead-code elimination.

`DynamicJaxprTrace` records every primitive bound under it as an equation instead of computing
it. Each tracer carries the jaxpr variable it stands for. Values that are not its tracers are
constants: Python and NumPy scalars become literals, anything else (arrays, and tracers of outer
transformations) becomes a constvar, so closed-over values and outer tracers are closure-converted
rather than baked in.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from revax._src import tree_util
from revax._src.core import shape_poly, vma
from revax._src.core.shape_poly import DimExpr
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.effects import eqn_has_effects
from revax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var
from revax._src.core.rules import RuleTable
from revax._src.core.errors import UnexpectedTracerError
from revax._src.core.gc_pause import paused_gc
from revax._src.core.trace import (Trace, Tracer, check_no_leaks, current_trace,
                                    set_current_trace)
from revax._src.runtime.array import Array


class JaxprTracer(Tracer):
  """A value while a `DynamicJaxprTrace` records a jaxpr (under jit, make_jaxpr, or the staged
  part of grad): the jaxpr variable it stands for (JAX's `DynamicJaxprTracer`)."""
  __slots__ = ("_aval", "_var")

  def __init__(self, trace, aval, var):
    self._trace = trace
    self._aval = aval
    self._var = var

  @property
  def aval(self):
    return self._aval

  def __repr__(self):
    """As JAX's: 'JitTracer(float32[3])', 'JitTracer(~float32[])' for a weak type."""
    return f"JitTracer({self._aval})"

  def _provenance(self) -> str:
    debug = self._trace.debug_info
    if debug is None:
      return ""
    return debug.describe(self._trace.argument_indices(self._var))


class DebugInfo:
  """What error messages say about a traced function: its name and source location, what traced
  it (jit, ...), and a thunk giving one name per flat argument (computed only on error)."""
  __slots__ = ("fun", "kind", "arg_names_thunk")

  def __init__(self, fun, kind: str, arg_names_thunk):
    self.fun, self.kind, self.arg_names_thunk = fun, kind, arg_names_thunk

  def fun_description(self) -> str:
    fun = self.fun
    name = getattr(fun, "__name__", None) or getattr(fun, "__qualname__", None) or repr(fun)
    code = getattr(getattr(fun, "__wrapped__", fun), "__code__", None)
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    return f"{name}{where}"

  def describe(self, arg_indices) -> str:
    """The sentences an error message adds about where a traced value came from."""
    text = f" The error occurred while tracing the function {self.fun_description()} for " \
           f"{self.kind}."
    try:
      names = self.arg_names_thunk()
    except Exception:  # naming is best effort; the error itself must still be raised
      return text
    picked = list(dict.fromkeys(names[i] for i in arg_indices if i < len(names)))
    if len(picked) == 1:
      text += (" This concrete value was not available in Python because it depends on the "
               f"value of the argument {picked[0]}.")
    elif picked:
      text += (" This concrete value was not available in Python because it depends on the "
               f"values of the arguments {', '.join(picked[:-1])} and {picked[-1]}.")
    return text


class DynamicJaxprTrace(Trace):
  """Records primitives into equations."""

  def __init__(self, debug_info: DebugInfo | None = None):
    self.eqns = []
    self.invars = []
    self.constvars = {}  # id(value) -> (Var, value)
    self.debug_info = debug_info
    self.finished = False  # set when tracing ends: its tracers are dead from then on
    # the trace that was current when staging began (JAX's DynamicJaxprTrace.parent_trace):
    # nothing here binds on it; jax.extend.core's unsafe_am_i_under_a_vmap walks it
    self.enclosing_trace = current_trace()

  def argument_indices(self, var) -> list[int]:
    """Positions of the arguments `var` depends on (walks the equations recorded so far)."""
    needed = {var}
    for eqn in reversed(self.eqns):
      if any(v in needed for v in eqn.outvars):
        needed.update(a for a in eqn.invars if isinstance(a, Var))
    return [i for i, v in enumerate(self.invars) if v in needed]

  def new_arg(self, aval: ShapedArray) -> JaxprTracer:
    v = Var(aval)
    self.invars.append(v)
    return JaxprTracer(self, aval, v)

  def to_atom(self, x):
    if isinstance(x, JaxprTracer):
      if x._trace is self:
        return x._var
      if x._trace.finished:
        raise _escaped_tracer_error(x, x._trace)
    if not isinstance(x, Tracer):
      t = type(x)
      if t in (bool, int, float, complex):
        return Literal(x, get_aval(x))
      if t is DimExpr:  # a symbolic size used as a value
        return self.to_atom(shape_poly.dim_as_value_hook(x))
      if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
        aval = get_aval(x)
        return Literal(np.asarray(x, aval.dtype)[()], aval)
      if t is Array and not x.aval.shape and not x.committed:
        # a weakly typed scalar of the default dtype stays a Python scalar, so re-evaluating the
        # literal keeps it weak; a weak scalar of another dtype (a weak f16 from full_like) keeps
        # its dtype, since primitives bound on it directly need exactly that dtype
        value = x._value()[()]
        if x.aval.weak_type and get_aval(value.item()).dtype == x.aval.dtype:
          value = value.item()
        return Literal(value, x.aval)
    entry = self.constvars.get(id(x))
    if entry is None:
      entry = self.constvars[id(x)] = (Var(get_aval(x)), x)
    return entry[0]

  def process_primitive(self, primitive, args, params):
    check = staging_checks.get(primitive)
    if check is not None:  # (a primitive with params that cannot be staged)
      check(params)
    atoms = [self.to_atom(x) for x in args]
    if vma._state.depth:  # JAX's implicit pvary: operands varying over fewer axes are cast
      cast = vma.auto_pvary(primitive, args, [a.aval for a in atoms], params)
      if cast is not None:
        atoms = [self.to_atom(x) for x in cast]
    out = primitive.abstract_eval(*(a.aval for a in atoms), **params)
    out_avals = out if primitive.multiple_results else (out,)
    outvars = [Var(a) for a in out_avals]
    self.eqns.append(JaxprEqn(primitive, atoms, outvars, params))
    tracers = [JaxprTracer(self, v.aval, v) for v in outvars]
    return tracers if primitive.multiple_results else tracers[0]

  def to_jaxpr(self, out_tracers):
    outvars = [self.to_atom(t) for t in out_tracers]
    constvars = [v for v, _ in self.constvars.values()]
    consts = [c for _, c in self.constvars.values()]
    return Jaxpr(constvars, self.invars, outvars, self.eqns), consts

  def __repr__(self):
    return "DynamicJaxprTrace"


def trace_to_jaxpr(fun, in_avals, debug_info: DebugInfo | None = None) -> tuple[Jaxpr, list]:
  """Trace `fun(*flat_args) -> flat_outs` at `in_avals`. Returns (jaxpr, consts).

  `debug_info` names the function and its arguments in errors about traced values."""
  trace = DynamicJaxprTrace(debug_info)
  args = [trace.new_arg(a) for a in in_avals]
  try:
    with paused_gc(), vma.typing_if_typed(in_avals), set_current_trace(trace):
      outs = fun(*args)
      result = trace.to_jaxpr(outs)
  finally:
    trace.finished = True
  ref = weakref.ref(trace)
  del trace, args, outs
  check_no_leaks(ref)
  return result


def _escaped_tracer_error(tracer, trace) -> UnexpectedTracerError:
  debug = trace.debug_info
  where = f" by {debug.kind} of the function {debug.fun_description()}" if debug else ""
  return UnexpectedTracerError(
      f"Encountered an unexpected tracer: a traced value {tracer.aval.str_short()} created"
      f"{where} escaped that transformation (through a global variable, a list or an attribute "
      "it was stored in) and is used after the transformation finished. Return such values "
      "from the transformed function instead of storing them.")


def inline_jaxpr(trace: DynamicJaxprTrace, closed: ClosedJaxpr, args) -> list:
  """Record `closed`'s equations into `trace` applied to `args`, as binding them one by one
  would, without running abstract evaluation again (the jaxpr's variables already hold the
  types it gives). Returns the outputs (tracers of `trace`, or the values of literal and
  constant outputs)."""
  jaxpr = closed.jaxpr
  env = {}
  for v, c in zip(jaxpr.constvars, closed.consts, strict=True):
    env[v] = trace.to_atom(c)
  for v, x in zip(jaxpr.invars, args, strict=True):
    env[v] = trace.to_atom(x)
  eqns = trace.eqns
  for eqn in jaxpr.eqns:
    invars = [a if type(a) is Literal else env[a] for a in eqn.invars]
    outvars = []
    for v in eqn.outvars:
      new = DropVar(v.aval) if type(v) is DropVar else Var(v.aval)
      env[v] = new
      outvars.append(new)
    eqns.append(JaxprEqn(eqn.primitive, invars, outvars, eqn.params))
  outs = []
  for v in jaxpr.outvars:
    atom = v if type(v) is Literal else env[v]
    outs.append(atom.val if type(atom) is Literal else JaxprTracer(trace, atom.aval, atom))
  return outs


# --- replaying what a rule recorded --------------------------------------------------------------
_SCALAR_TYPES = frozenset({bool, int, float, complex} | {
    t for t in np.sctypeDict.values() if issubclass(t, np.generic)})


def literal_key(x):
  """A Python or NumPy scalar as part of a cache key: by its bits (0.0 and -0.0 differ, a NaN
  equals itself) and type."""
  a = np.asarray(x)
  return ("literal", type(x), a.dtype, a.tobytes())


def values_key(trace: DynamicJaxprTrace, values):
  """The part of a cache key that says what a rule applied to `values` can see of them while
  `trace` records: each tracer of `trace` by its type and which earlier value it is the same
  object as (a rule may treat `f(x, x)` specially), each scalar by its value. None if a value is
  anything else (a constant array, another trace's tracer): what a rule does with it may depend
  on its contents."""
  parts, first = [], {}
  for x in values:
    if type(x) is JaxprTracer and x._trace is trace:
      parts.append((x._aval, first.setdefault(id(x), len(first))))
    elif type(x) in _SCALAR_TYPES:
      parts.append(literal_key(x))
    else:
      return None
  return tuple(parts)


def params_key(params):
  """Params as part of a cache key (with their types: 1 and 1.0 and True are different params;
  a float by its bits: 0.0 and -0.0 too), or None where some param is unhashable. (Not sorted:
  the same params in another order only miss the cache.)"""
  key = tuple([(k, type(v), v.hex() if type(v) is float else v) for k, v in params.items()])
  try:
    hash(key)
  except TypeError:
    return None
  return key


class _Recording:
  """The equations a rule recorded for one input signature, with the variables they read from
  outside (the rule's inputs) and the outputs it returned (variables or plain objects)."""
  __slots__ = ("inputs", "eqns", "outs")

  def __init__(self, inputs, eqns, outs):
    self.inputs, self.eqns, self.outs = inputs, eqns, outs


_NOT_REPLAYABLE = object()
# types of non-array rule results that can be handed out again (ad's symbolic Zero)
immutable_results: set = set()


def record_or_replay(trace: DynamicJaxprTrace, key, inputs, run):
  """`run()` (a rule applied to `inputs`, tracers of `trace` and scalars; returns a flat list),
  or, when a rule with the same `key` ran before in `trace`, the equations it recorded then,
  recorded again on these inputs: the same equations binding would record, without running the
  rule's Python and every abstract evaluation again. `key` must fix everything the rule's result
  depends on (see `values_key`, `params_key`); only equations reading nothing but the inputs,
  their own results, literals and `trace`'s constants are replayed, else `run` runs each time."""
  replays = trace.__dict__.get("_replays")
  if replays is None:
    replays = trace._replays = {}
  rec = replays.get(key)
  if rec is _NOT_REPLAYABLE:
    return run()
  if rec is not None:
    # variables and literals hash by identity: what is not an input or a result of an earlier
    # equation (a literal, a constant of `trace`) maps to itself
    env = dict(zip(rec.inputs, [x._var for x in inputs if type(x) is JaxprTracer], strict=True))
    append = trace.eqns.append
    make = JaxprEqn.adopt
    for prim, invars, outvars, params, drops in rec.eqns:
      new_outs = ([DropVar(v.aval) if type(v) is DropVar else Var(v.aval) for v in outvars]
                  if drops else [Var(v.aval) for v in outvars])
      env.update(zip(outvars, new_outs))
      append(make(prim, [env.get(a, a) for a in invars], new_outs, params))
    return [JaxprTracer(trace, o.aval, env.get(o, o)) if type(o) is Var else o
            for o in rec.outs]
  start = len(trace.eqns)
  outs = run()
  replays[key] = _record(trace, start, [x._var for x in inputs if type(x) is JaxprTracer], outs)
  return outs


def _record(trace, start, input_vars, outs):
  eqns = trace.eqns[start:]
  known = set(input_vars)
  known.update(v for v, _ in trace.constvars.values())
  for eqn in eqns:
    for a in eqn.invars:
      if type(a) is not Literal and a not in known:
        return _NOT_REPLAYABLE  # reads a value the inputs do not give (a closed-over tracer)
    known.update(eqn.outvars)
  rec_outs = []
  for o in outs:
    if isinstance(o, Tracer):
      if type(o) is not JaxprTracer or o._trace is not trace or o._var not in known:
        return _NOT_REPLAYABLE
      rec_outs.append(o._var)
    elif o is None or type(o) in _SCALAR_TYPES or type(o) in immutable_results:
      rec_outs.append(o)
    else:
      return _NOT_REPLAYABLE  # an array: replaying would share one object between results
  flat = [(e.primitive, e.invars, e.outvars, e.params,
           any(type(v) is DropVar for v in e.outvars)) for e in eqns]
  return _Recording(input_vars, flat, rec_outs)


def trace_to_closed_jaxpr(fun, in_avals) -> ClosedJaxpr:
  jaxpr, consts = trace_to_jaxpr(fun, in_avals)
  return ClosedJaxpr(jaxpr, consts)


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
  """Turn constvars into leading invars (closure conversion)."""
  return Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)


def trace_flat(fun, args_tree, in_avals):
  """Trace a function of pytrees: `fun(*args)` with args of structure `args_tree`.

  Returns (jaxpr, consts, out_tree).
  """
  store = {}

  def flat_fun(*flat_args):
    args = tree_util.tree_unflatten(args_tree, flat_args)
    out = fun(*args)
    flat_out, store["out_tree"] = tree_util.tree_flatten(out)
    for x in flat_out:
      get_aval(x)  # raises a TypeError naming a non-array output
    return flat_out

  jaxpr, consts = trace_to_jaxpr(flat_fun, in_avals)
  return jaxpr, consts, store["out_tree"]


# --- dead-code elimination -----------------------------------------------------------------------
# primitive -> check(params): raises where the equation cannot be staged into a program (a jit
# with XLA options: only a top-level jit takes them, as in JAX)
staging_checks = RuleTable("staging check")
dce_rules = RuleTable("dce")  # primitive -> rule(eqn, used_outputs) -> (used_inputs, new_eqn|None)


def dce_jaxpr(jaxpr: Jaxpr, used_outputs=None, *, prune_inputs: bool = False):
  """Remove equations whose outputs are unused, except those with side effects (see
  core/effects.py). Returns (new_jaxpr, used_inputs).

  `used_outputs` (default: all) selects the outputs kept. With `prune_inputs`, unused invars are
  dropped too; `used_inputs` says which were used either way.
  """
  if used_outputs is None:
    used_outputs = [True] * len(jaxpr.outvars)
  outvars = [v for v, u in zip(jaxpr.outvars, used_outputs, strict=True) if u]
  live = {v for v in outvars if isinstance(v, Var)}
  new_eqns = []
  for eqn in reversed(jaxpr.eqns):
    used = [v in live for v in eqn.outvars]
    all_used = bool(used) and all(used)
    effectful = not all_used and eqn_has_effects(eqn)
    if not effectful and not all_used and not any(used):
      continue
    rule = dce_rules.get(eqn.primitive)
    if effectful:  # a side effect runs whole, whatever of its outputs is used
      new_eqn = eqn
      live.update(a for a in eqn.invars if type(a) is not Literal)
    elif rule is not None:
      used_ins, new_eqn = rule(eqn, used)  # used_ins: one per input of the original eqn
      live.update(a for a, u in zip(eqn.invars, used_ins) if u and isinstance(a, Var))
    else:
      # equations are never changed in place: one whose outputs are all used is kept as is
      new_eqn = eqn if all_used else eqn.replace(
          outvars=[v if u else DropVar(v.aval) for v, u in zip(eqn.outvars, used)])
      live.update(a for a in eqn.invars if type(a) is not Literal)
    if new_eqn is not None:
      new_eqns.append(new_eqn)
  new_eqns.reverse()
  used_inputs = [v in live for v in jaxpr.invars]
  invars = [v for v, u in zip(jaxpr.invars, used_inputs) if u] if prune_inputs else jaxpr.invars
  return Jaxpr(jaxpr.constvars, invars, outvars, new_eqns), used_inputs


def memoize_on_jaxpr(fn):
  """Cache a jaxpr-to-jaxpr transformation per (jaxpr, hashable options), for as long as the
  jaxpr lives: repeated transformations of one staged program (grads of one jitted function,
  every step of a loop) must reuse one derived jaxpr and one compiled program, not rebuild them."""
  cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

  @functools.wraps(fn)
  def cached(jaxpr, *options):
    per_jaxpr = cache.setdefault(jaxpr, {})
    if options not in per_jaxpr:
      result = fn(jaxpr, *options)
      # a result that is the jaxpr itself (nothing to transform) is not stored as such: the
      # weakly keyed entry's value would hold its own key and keep it alive for ever
      per_jaxpr[options] = _IS_KEY if result is jaxpr else result
    result = per_jaxpr[options]
    return jaxpr if result is _IS_KEY else result
  return cached


_IS_KEY = object()  # stands for "the cached result is the key itself" (see memoize_on_jaxpr)


def dce_call(param: str = "jaxpr"):
  """The DCE rule of a call primitive that evaluates the closed jaxpr in `params[param]`: an
  unused call goes; a used one keeps only the outputs and inputs its jaxpr needs."""
  def rule(eqn, used_outputs):
    if not any(used_outputs):
      return [False] * len(eqn.invars), None
    closed = eqn.params[param]
    new_jaxpr, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs, prune_inputs=True)
    return used_inputs, eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_inputs, strict=True) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs, strict=True) if u],
        params={**eqn.params, param: ClosedJaxpr(new_jaxpr, closed.consts)})
  return rule
