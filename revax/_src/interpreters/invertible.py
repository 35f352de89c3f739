"""Invertible reverse mode: rebuild intermediates from the outputs instead of storing them.

Ordinary reverse mode stores every intermediate value the backward pass reads. For a function
whose steps can be undone (a reversible network's couplings y1 = x1 + F(x2)), the backward pass
can instead rebuild each step's inputs from its outputs, walking back in lock-step with the
gradient, so memory does not grow with depth.

`invertible_p` is a call primitive holding the function's closed jaxpr. Evaluated, lowered and
batched it is that jaxpr; its JVP is an `invertible_p` of the JVP jaxpr that remembers the primal
one (so forward mode is just the JVP). Linearization runs that JVP under partial evaluation,
where its rule computes the primal outputs now and stages `invertible_lin`, a linear map of the
input tangents that keeps as residuals only the outputs and the inputs the outputs cannot
rebuild (parameters, which the caller keeps alive anyway, and whatever a non-invertible step
hides). Transposing `invertible_lin` is the backward walk: equations are visited from last to
first; each one's inputs are rebuilt on demand (from its outputs with the primitive's inverse
rule, or forwards from values already known), its VJP is taken, its cotangents accumulate, and
its outputs are dropped. Under jit the walk is one `fenced_call`, so XLA cannot merge a
reconstruction with the identical forward computation (which would keep every forward value
alive) nor schedule it before the backward pass gets there.

What can be rebuilt is decided by dataflow over the whole jaxpr (`reconstruction_plan`), never
by the order equations happen to be in: starting from the outputs and constants, a value is
known once an equation can produce it forwards (all its inputs known) or backwards (all its
outputs known and its inverse rule solves for the missing inputs), or once slices that together
cover it are known. Inputs still unknown at the fixpoint are stored.

Inverse rules are declared per primitive next to its other rules (`definverse`,
`definverse_unary`); primitives without one say why (`not_invertible`).
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, Literal, Var
from revax._src.core.rules import RuleTable
from revax._src.core.trace import Primitive, current_trace, set_current_trace
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.interpreters.barrier import barrier_values, fenced_call


# --- inverse rules -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class InverseRule:
  """How to rebuild a primitive's unknown inputs from its outputs and its known inputs.

  solves(known, eqn, facts) -> bool: whether the rule can rebuild the inputs marked False in
    `known` (one bool per input) for this equation; `facts.nonnegative(atom)` tells whether a
    value is known to be >= 0.
  rebuild(outs, ins, avals_in, **params) -> inputs: `ins` holds the known inputs and None for
    the others; returns a value for every input.
  """
  solves: object
  rebuild: object


inverse_rules = RuleTable("inverse")
not_invertible_reasons: dict = {}  # prim -> why it has no inverse rule
# prim -> (region(eqn) -> (starts, limits) of its operand that its output holds, assemble(aval,
# pieces: [(starts, value)]) -> the operand): primitives whose output is a part of the operand
part_rules = RuleTable("partial inverse")


def one_unknown(known, eqn, facts) -> bool:
  return sum(not k for k in known) == 1


def all_unknown_ok(known, eqn, facts) -> bool:
  return True


def definverse(prim: Primitive, rebuild, solves=one_unknown) -> None:
  """Declare `prim` invertible: `rebuild(outs, ins, avals_in, **params)` gives every input
  (ins: None where unknown); `solves(known, eqn, facts)` says which cases it handles."""
  inverse_rules[prim] = InverseRule(solves, rebuild)


def definverse_unary(prim: Primitive, inverse, solves=all_unknown_ok) -> None:
  """A one-input, one-output primitive with `x = inverse(y, **params)`."""
  def rebuild(outs, ins, avals_in, **params):
    return [inverse(outs[0], **params)]
  inverse_rules[prim] = InverseRule(solves, rebuild)


def not_invertible(prim: Primitive, reason: str) -> None:
  """Declare that `prim` has no inverse rule, and why (e.g. "many-to-one")."""
  not_invertible_reasons[prim] = reason


def defpart(prim: Primitive, region, assemble) -> None:
  """Declare that `prim`'s output is the box `region(eqn)` of its (first) operand: several such
  equations whose outputs together cover the operand rebuild it with `assemble`."""
  part_rules[prim] = (region, assemble)


# --- call primitives the planner looks through ------------------------------------------------------
# primitive -> param holding a ClosedJaxpr that the primitive simply evaluates; registered by
# their modules (jit, checkpoint, ...), so the planner sees their equations.
inlinable_calls: dict = {}


@staging.memoize_on_jaxpr
def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
  """`closed` with the equations of plain calls (jit, checkpoint, nested invertible) spliced in."""
  if not any(e.primitive in inlinable_calls for e in closed.jaxpr.eqns):
    return closed
  consts = list(closed.consts)

  def fun(*args):
    return _eval_inlined(closed.jaxpr, consts, args)

  jaxpr, new_consts = staging.trace_to_jaxpr(fun, closed.in_avals)
  return inline_calls(ClosedJaxpr(jaxpr, new_consts))


def _eval_inlined(jaxpr, consts, args):
  env = dict(zip(jaxpr.constvars, consts, strict=True))
  env.update(zip(jaxpr.invars, args, strict=True))
  read = lambda a: a.val if type(a) is Literal else env[a]
  for eqn in jaxpr.eqns:
    param = inlinable_calls.get(eqn.primitive)
    if param is not None and _is_plain_call(eqn):
      inner = eqn.params[param]
      outs = eval_jaxpr(inner.jaxpr, inner.consts, *map(read, eqn.invars))
    else:
      outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
      outs = outs if eqn.primitive.multiple_results else [outs]
    env.update(zip(eqn.outvars, outs, strict=True))
  return [read(v) for v in jaxpr.outvars]


def _is_plain_call(eqn) -> bool:
  return eqn.primitive is not invertible_p or eqn.params.get("primal") is None


# --- the reconstruction plan ---------------------------------------------------------------------
@dataclasses.dataclass
class Plan:
  """How the backward walk rebuilds every value of a jaxpr.

  saved: indices of the inputs stored as residuals (besides the outputs).
  steps: var -> (kind, what, known): "forward" (eqn: all its inputs known), "inverse" (eqn: its
    outputs and the inputs marked in `known` are known; its inverse rule rebuilds the rest) or
    "parts" (slice equations whose outputs cover the var).
  blocked: per saved input, why it could not be rebuilt (for reports and errors).
  """
  saved: tuple
  steps: dict
  blocked: dict


_NONNEGATIVE_RESULTS = {"exp", "exp2", "sqrt", "logistic", "abs", "square"}


class _Facts:
  """What the planner knows about values beyond their types: which are >= 0, and which may
  hold a zero (a literal or constant known at trace time: dividing by it to undo a
  multiplication would be singular)."""

  def __init__(self, closed):
    """`closed`: a ClosedJaxpr (its constants' values are read) or a bare Jaxpr."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    consts = closed.consts if isinstance(closed, ClosedJaxpr) else [None] * len(jaxpr.constvars)
    self._nonneg = set()
    self._zeros = {v for v, c in zip(jaxpr.constvars, consts, strict=True) if has_zero(c)}
    for eqn in jaxpr.eqns:
      name = eqn.primitive.name
      if name in _NONNEGATIVE_RESULTS or (name == "integer_pow" and eqn.params["y"] % 2 == 0):
        self._nonneg.update(eqn.outvars)
      if name in _ZERO_PRESERVING and any(self.may_be_zero(a) for a in eqn.invars[:1]):
        self._zeros.update(eqn.outvars)

  def nonnegative(self, atom) -> bool:
    if type(atom) is Literal:
      try:
        return bool(atom.val >= 0)
      except TypeError:
        return False
    return atom in self._nonneg

  def may_be_zero(self, atom) -> bool:
    """Whether `atom` is known (at trace time) to hold a zero somewhere."""
    if type(atom) is Literal:
      return has_zero(atom.val)
    return atom in self._zeros


# primitives whose output holds a zero wherever their (first) operand does
_ZERO_PRESERVING = {"broadcast_in_dim", "reshape", "convert_element_type", "transpose", "squeeze",
                    "expand_dims", "concatenate", "neg", "copy", "slice", "rev", "pad"}


def has_zero(value) -> bool:
  """Whether a concrete value holds a zero anywhere (False for values the host cannot read)."""
  try:
    return bool(np.any(np.asarray(value) == 0))
  except Exception:  # noqa: BLE001 (a value the host cannot read, e.g. a tracer: unknown)
    return False


def reconstruction_plan(closed: ClosedJaxpr, given=None) -> Plan:
  """Which inputs to store, and how to rebuild everything else from the outputs.

  `given` (one bool per input; default none) marks inputs known from the start (a loop body's
  constants and scanned slices); they are never stored. Of the others, an input is stored if it
  cannot be rebuilt even when every other input is known (a parameter: weights feed no
  invertible step), then, while some input is still unknown with those stored, the first such
  input (inputs that only together could be rebuilt, e.g. both operands of one add). Everything
  else is rebuilt."""
  given = tuple(given) if given is not None else (False,) * len(closed.jaxpr.invars)
  return _reconstruction_plan(closed, given)


@staging.memoize_on_jaxpr
def _reconstruction_plan(closed: ClosedJaxpr, given: tuple) -> Plan:
  jaxpr = closed.jaxpr
  graph = _Graph(closed)
  base = set(jaxpr.constvars) | {v for v in jaxpr.outvars if type(v) is Var}
  base |= {v for v, g in zip(jaxpr.invars, given, strict=True) if g}
  stored, blocked = [], {}
  for i, v in enumerate(jaxpr.invars):
    if given[i]:
      continue
    if v not in base and not graph.could_learn(v):
      # no equation could ever rebuild it (a weight read only by matmuls): no closure needed,
      # which keeps planning linear in the network's depth instead of quadratic
      stored.append(i)
      blocked[i] = _why_blocked(graph.readers.get(v, ()), v, _AllBut(v))
      continue
    others = base | {u for u in jaxpr.invars if u is not v}
    known, _ = graph.close(others)
    if v not in known:
      stored.append(i)
      blocked[i] = _why_blocked(jaxpr.eqns, v, known)
  while True:
    known, steps = graph.close(base | {jaxpr.invars[i] for i in stored})
    missing = [i for i, v in enumerate(jaxpr.invars) if v not in known]
    if not missing:
      break
    stored.append(missing[0])
    blocked[missing[0]] = ("it is rebuilt only together with other inputs (they are not all "
                           "stored)")
    stored.sort()
  left = [v for e in jaxpr.eqns for v in e.outvars if type(v) is not DropVar and v not in known]
  if left:  # cannot happen: with every input known, every equation runs forwards
    raise AssertionError(f"invertible: values left unknown by the plan: {left}")
  return Plan(tuple(stored), steps, blocked)


class _Graph:
  """The jaxpr's dataflow, for growing a set of known values to its fixpoint."""

  def __init__(self, closed: ClosedJaxpr):
    jaxpr = closed.jaxpr
    self.jaxpr = jaxpr
    self.facts = _Facts(closed)
    # a fixed position per variable: the fixpoint walk visits known values in this order, so
    # the plan (which step rebuilds each value) is a function of the jaxpr alone, never of
    # hash order (variables hash by identity, i.e. by memory address)
    self.order: dict = {}
    for v in itertools.chain(jaxpr.constvars, jaxpr.invars,
                             (o for e in jaxpr.eqns for o in e.outvars)):
      self.order.setdefault(v, len(self.order))
    self.readers: dict = {}  # var -> equations that read it
    self.writer: dict = {}  # var -> the equation that writes it
    self.slices_of: dict = {}  # var -> part equations (slices) of it
    self.live_outs: dict = {}  # eqn -> its outputs that are not dropped
    for eqn in jaxpr.eqns:
      self.live_outs[eqn] = [v for v in eqn.outvars if type(v) is not DropVar]
      for a in eqn.invars:
        if type(a) is Var:
          self.readers.setdefault(a, []).append(eqn)
      for v in eqn.outvars:
        self.writer[v] = eqn
      if eqn.primitive in part_rules and type(eqn.invars[0]) is Var:
        self.slices_of.setdefault(eqn.invars[0], []).append(eqn)

  def could_learn(self, v) -> bool:
    """Whether some rule could ever rebuild input `v`: an equation reading it whose inverse
    solves for it with everything else known, or slices of it that might cover it."""
    if v in self.slices_of:
      return True
    for eqn in self.readers.get(v, ()):
      if any(type(o) is DropVar for o in eqn.outvars):
        continue
      if _inverse_solves(eqn, tuple(a is not v for a in eqn.invars), self.facts):
        return True
    return False

  def close(self, start):
    """(known, steps): `start` grown by running equations forwards (all inputs known),
    backwards (outputs and enough inputs known for the inverse rule) and from parts. The set
    reached does not depend on the order of the equations: every rule only ever adds."""
    known, steps = set(start), {}
    # last-in first-out below: push in reverse so the earliest variable is visited first
    queue = sorted(known, key=lambda v: self.order.get(v, -1), reverse=True)

    def learn(v, step):
      if type(v) is Var and type(v) is not DropVar and v not in known:
        known.add(v)
        steps[v] = step
        queue.append(v)

    live_outs = self.live_outs

    def try_eqn(eqn):
      ins_known = tuple([type(a) is Literal or a in known for a in eqn.invars])
      outs = live_outs[eqn]
      outs_known = all([v in known for v in outs])
      all_ins_known = all(ins_known)
      if all_ins_known and not outs_known:
        for v in outs:
          learn(v, ("forward", eqn, None))
      elif (outs_known and not all_ins_known and len(outs) == len(eqn.outvars)
            and _inverse_solves(eqn, ins_known, self.facts)):
        for a, k in zip(eqn.invars, ins_known, strict=True):
          if not k:
            learn(a, ("inverse", eqn, ins_known))

    for eqn in self.jaxpr.eqns:  # equations without inputs (iota, constants) run at once
      if not any(type(a) is Var for a in eqn.invars):
        try_eqn(eqn)
    while queue:
      v = queue.pop()
      for eqn in self.readers.get(v, ()):
        try_eqn(eqn)
      if v in self.writer:
        try_eqn(self.writer[v])
        part = self.writer[v]
        if part.primitive in part_rules and type(part.invars[0]) is Var:
          self._try_parts(part.invars[0], known, learn)
    return known, steps

  def _try_parts(self, operand, known, learn) -> None:
    if operand in known:
      return
    region_of = part_rules[self.slices_of[operand][0].primitive][0]
    parts = [(e, region_of(e)) for e in self.slices_of[operand] if e.outvars[0] in known]
    parts = [(e, r) for e, r in parts if r is not None]
    if parts and _covers(operand.aval.shape, [r for _, r in parts]):
      learn(operand, ("parts", [e for e, _ in parts], None))


def _inverse_solves(eqn, ins_known, facts) -> bool:
  rule = inverse_rules.get(eqn.primitive)
  return rule is not None and bool(rule.solves(ins_known, eqn, facts))


def _covers(shape, regions) -> bool:
  """Whether boxes (starts, limits) cover every index of `shape` (checked on the grid of the
  boxes' boundaries, so the cost does not grow with the array's size)."""
  cuts = []
  for d, n in enumerate(shape):
    edges = sorted({0, n} | {r[0][d] for r in regions} | {r[1][d] for r in regions})
    cuts.append([(a, b) for a, b in zip(edges[:-1], edges[1:]) if a < b])
  for cell in itertools.product(*cuts):
    if not any(all(s[d] <= lo and hi <= lim[d] for d, (lo, hi) in enumerate(cell))
               for s, lim in regions):
      return False
  return True


class _AllBut:
  """The known set "every value but `v`" (what a closure with all other inputs known reaches,
  as far as the equations reading `v` are concerned)."""

  def __init__(self, v):
    self.v = v

  def __contains__(self, x):
    return x is not self.v


def _why_blocked(eqns, v, known) -> str:
  """Why input `v` could not be rebuilt: the equation (of `eqns`) where walking back from the
  outputs gets stuck, preferably one that reads `v` itself."""
  stuck = [e for e in reversed(list(eqns))
           if all(type(o) is not DropVar and o in known for o in e.outvars)
           and any(type(a) is Var and a not in known for a in e.invars)]
  for eqn in sorted(stuck, key=lambda e: v not in e.invars):
    prim = eqn.primitive
    if prim in inverse_rules:
      others_known = all(type(a) is Literal or a in known or a is v for a in eqn.invars)
      if others_known and v in eqn.invars:
        return (f"'{prim.name}' cannot be inverted for it here: its inverse would be singular "
                "(e.g. a factor known to hold zeros) or is not defined for this case")
      return (f"'{prim.name}' cannot be inverted for it here (its inverse needs the other "
              "operands known)")
    reason = not_invertible_reasons.get(prim)
    return f"'{prim.name}' cannot be inverted ({reason})" if reason else \
        f"'{prim.name}' has no inverse rule"
  return "no equation leads back to it from the outputs"


# --- the backward walk ---------------------------------------------------------------------------
class _Values:
  """Known values of a jaxpr during the backward walk; `get` rebuilds a value on demand by
  following the plan's steps (iteratively: a deep network's chains are long)."""

  def __init__(self, closed: ClosedJaxpr, plan: Plan, outs, saved, given=None):
    jaxpr = closed.jaxpr
    self.plan = plan
    self.token = None  # with split_vjp_recomputation: the cotangents the walk is at
    self.fence_rebuild = False  # the rebuild's matmuls wait for `token` in fenced calls
    self.env = dict(zip(jaxpr.constvars, closed.consts, strict=True))
    for v, x in zip(jaxpr.outvars, outs, strict=True):
      if type(v) is Var:
        self.env.setdefault(v, x)
    for i, x in zip(plan.saved, saved, strict=True):
      self.env[jaxpr.invars[i]] = x
    for i, x in (given or {}).items():  # inputs known from the start (see reconstruction_plan)
      self.env[jaxpr.invars[i]] = x

  def get(self, atom):
    if type(atom) is Literal:
      return atom.val
    env, stack = self.env, [atom]
    while stack:
      v = stack[-1]
      if v in env:
        stack.pop()
        continue
      step = self.plan.steps[v]
      pending = [a for a in _step_inputs(step) if type(a) is Var and a not in env]
      if pending:
        stack.extend(pending)
        continue
      self._run(step)
      stack.pop()
    return env[atom]

  def _run(self, step) -> None:
    kind, what, known = step
    env = self.env
    read = lambda a: a.val if type(a) is Literal else env[a]
    if kind == "forward":
      vals = [read(a) for a in what.invars]
      if self.token and self.fence_rebuild and what.primitive.name in _MATERIALIZED:
        # the rebuild's matmuls wait for the walk's cotangents (see vjp_output_from_coupling)
        token = list(self.token)
        outs = _replayed(step, vals + token, lambda: _fenced_step(what, vals, token))
        for v, x in zip(what.outvars, outs, strict=True):
          if type(v) is not DropVar:
            env.setdefault(v, x)
        return
      if self.token and what.primitive.name in _MATERIALIZED:
        # the rebuild's matmuls wait for the walk's cotangents (see split_vjp_recomputation)
        vals = barrier_values(list(vals) + list(self.token))[:len(vals)]

      def run():
        outs = what.primitive.bind(*vals, **what.params)
        return list(outs) if what.primitive.multiple_results else [outs]

      for v, x in zip(what.outvars, _replayed(step, vals, run), strict=True):
        if type(v) is not DropVar:
          env.setdefault(v, x)
    elif kind == "inverse":
      outs = [env[o] for o in what.outvars]
      ins = [read(a) if k else None for a, k in zip(what.invars, known, strict=True)]
      avals_in = [a.aval for a in what.invars]

      def run():
        rebuilt = inverse_rules[what.primitive].rebuild(outs, ins, avals_in, **what.params)
        return [x for x, k in zip(rebuilt, known, strict=True) if not k]

      unknown = [a for a, k in zip(what.invars, known, strict=True) if not k]
      vals = outs + [x for x, k in zip(ins, known, strict=True) if k]
      for a, x in zip(unknown, _replayed(step, vals, run), strict=True):
        if type(a) is Var:
          env.setdefault(a, x)
    else:
      region, assemble = part_rules[what[0].primitive]
      operand = what[0].invars[0]
      env.setdefault(operand, assemble(operand.aval, [(region(e)[0], env[e.outvars[0]])
                                                      for e in what]))

  def forget(self, eqn, keep) -> None:
    """Drop an equation's outputs once the walk has passed it (nothing earlier reads them)."""
    for v in eqn.outvars:
      if v not in keep:
        self.env.pop(v, None)


def _fenced_step(eqn, vals, token) -> list:
  """`eqn` applied to `vals` in a fenced call that also reads `token` (the walk's current
  cotangents), so that it cannot run before they exist (nor be merged with the forward)."""
  n = len(vals)

  def body(*xs):
    xs = barrier_values(xs)  # the token is read (a fenced call keeps only what its body reads)
    out = eqn.primitive.bind(*xs[:n], **eqn.params)
    return list(out) if eqn.primitive.multiple_results else [out]

  jaxpr, consts = staging.trace_to_jaxpr(body, [get_aval(x) for x in list(vals) + token])
  return fenced_call(ClosedJaxpr(jaxpr, consts), *vals, *token)


def _replayed(step, vals, run) -> list:
  """`run()`, a step's rebuilding of values from `vals` (what it reads); while staging, steps
  like one seen before (a deep network's layers) replay what that one recorded."""
  trace = current_trace()
  if type(trace) is not staging.DynamicJaxprTrace:
    return run()
  kind, eqn, known = step
  values = staging.values_key(trace, vals)
  params = staging.params_key(eqn.params) if values is not None else None
  if params is None:
    return run()
  avals_in = tuple(a.aval for a in eqn.invars)  # an inverse's unknown inputs' types too
  key = ("invertible " + kind, eqn.primitive, params, known, avals_in, values)
  return staging.record_or_replay(trace, key, vals, run)


def _step_inputs(step):
  kind, what, known = step
  if kind == "forward":
    return what.invars
  if kind == "inverse":
    return list(what.outvars) + [a for a, k in zip(what.invars, known, strict=True) if k]
  return [e.outvars[0] for e in what]


def eqn_vjp(eqn, ins, cts_out, active, cache=None, out=None):
  """Cotangents of one equation's active inputs at inputs `ins` (None for the inactive ones).

  `cache` (a dict the caller keeps for one backward walk) reuses VJPs: a deep network repeats a
  few kinds of equations (same primitive, params and types) hundreds of times, and while staging
  a jaxpr, taking one such VJP again (linearize, partial evaluation, transposition) records the
  same equations as recording the first one's jaxpr again, which is several times cheaper.
  `out` (for a primitive whose JVP reads its output, `ad.jvp_reads_output`): the VJP reads
  this value as the equation's output instead of computing it."""
  vjp, vals = _eqn_vjp, list(ins)
  if out is not None:
    vjp, vals = _eqn_vjp_at_output, vals + [out]
  if cache is not None:
    trace = current_trace()
    if type(trace) is staging.DynamicJaxprTrace:
      key = _vjp_key(trace, eqn, vals, cts_out, active)
      if key is not None:
        key = (vjp is _eqn_vjp_at_output,) + key
        staged = cache.get(key)
        if staged is None:
          staged = cache[key] = _StagedVJP(eqn, vals, cts_out, active, vjp)
        return staged.apply(trace, vals, cts_out)
  return vjp(eqn, vals, cts_out, active)


def _eqn_vjp(eqn, ins, cts_out, active):
  positions = [i for i, a in enumerate(active) if a]

  def f(*xs):
    full = list(ins)
    for i, x in zip(positions, xs, strict=True):
      full[i] = x
    out = eqn.primitive.bind(*full, **eqn.params)
    return list(out) if eqn.primitive.multiple_results else [out]

  _, lin = ad.linearize_flat(f, [ins[i] for i in positions])
  result = [None] * len(ins)
  for i, c in zip(positions, ad.transpose_linearized(lin, cts_out), strict=True):
    result[i] = c
  return result


def _eqn_vjp_at_output(eqn, ins_and_out, cts_out, active):
  """`_eqn_vjp` of an equation whose JVP reads its output, taken with the output given (the
  last of `ins_and_out`) rather than computed from the inputs: the transpose of the tangent map
  `ad.tangent_from_output`, linear in the tangents."""
  ins, out = list(ins_and_out[:-1]), ins_and_out[-1]
  positions = [i for i, a in enumerate(active) if a]

  def f(*ts):
    tangents = [ad.Zero(ad.tangent_aval(get_aval(x))) for x in ins]
    for i, t in zip(positions, ts, strict=True):
      tangents[i] = t
    return [ad.instantiate_zeros(
        ad.tangent_from_output(eqn.primitive, out, ins, tangents, **eqn.params))]

  _, lin = ad.linearize_flat(f, [ins[i] for i in positions])
  result = [None] * len(ins)
  for i, c in zip(positions, ad.transpose_linearized(lin, cts_out), strict=True):
    result[i] = c
  return result


def _vjp_key(trace, eqn, ins, cts_out, active):
  """What an equation's VJP depends on while `trace` stages it: its primitive and params, the
  inputs and non-zero output cotangents as `staging.values_key` sees them (types and aliasing,
  literals by value), which inputs are active and which cotangents are symbolic zeros; None
  where a VJP must not be reused (a constant array, another trace's tracer, unhashable params)."""
  values = staging.values_key(trace, list(ins) + [c for c in cts_out if type(c) is not ad.Zero])
  params = staging.params_key(eqn.params) if values is not None else None
  if params is None:
    return None
  zeros = tuple(c.aval if type(c) is ad.Zero else None for c in cts_out)
  return (eqn.primitive, params, tuple(active), zeros, values)


class _StagedVJP:
  """One equation's VJP staged once, as a jaxpr from (traced inputs, non-zero cotangents) to
  the input cotangents, re-recorded into the caller's trace for each equation like it."""

  def __init__(self, eqn, ins, cts_out, active, vjp=None):
    vjp = _eqn_vjp if vjp is None else vjp
    is_traced = [isinstance(x, staging.JaxprTracer) for x in ins]
    literals = [None if t else x for x, t in zip(ins, is_traced, strict=True)]
    in_avals = [x.aval for x, t in zip(ins, is_traced, strict=True) if t]
    ct_avals = [c.aval for c in cts_out if type(c) is not ad.Zero]
    zero_cts = [c if type(c) is ad.Zero else None for c in cts_out]
    n_in = len(in_avals)
    template = []

    def fun(*args):
      traced = iter(args[:n_in])
      full = [next(traced) if t else lit for t, lit in zip(is_traced, literals, strict=True)]
      nz_cts = iter(args[n_in:])
      cts = [z if z is not None else next(nz_cts) for z in zero_cts]
      outs = []
      for c in vjp(eqn, full, cts, active):
        if c is None or type(c) is ad.Zero:
          template.append(c)
        else:
          template.append(len(outs))
          outs.append(c)
      return outs

    jaxpr, consts = staging.trace_to_jaxpr(fun, in_avals + ct_avals)
    jaxpr, _ = staging.dce_jaxpr(jaxpr)  # the equation's own primal result is never read
    self.closed = ClosedJaxpr(jaxpr, consts)
    self.template = template

  def apply(self, trace, ins, cts_out):
    args = [x for x in ins if isinstance(x, staging.JaxprTracer)]
    args += [c for c in cts_out if type(c) is not ad.Zero]
    outs = staging.inline_jaxpr(trace, self.closed, args)
    return [outs[t] if type(t) is int else t for t in self.template]


# primitive -> rule(eqn, ins, outs, cts_out, active) -> input cotangents: VJPs that rebuild as
# they go (a scan of invertible steps walks back step by step instead of storing each step)
structured_vjps: dict = {}


def backward_walk(closed: ClosedJaxpr, plan: Plan, nonzeros, outs, saved, cts,
                  given=None, return_inputs: bool = False):
  """Cotangents of the inputs marked in `nonzeros`, from the outputs' cotangents: equations from
  last to first, each one's inputs rebuilt on demand, its VJP taken, its outputs dropped.
  `given` maps input indices to values known from the start. With `return_inputs`, also the
  rebuilt values of all inputs: (cotangents, inputs)."""
  jaxpr = closed.jaxpr
  values = _Values(closed, plan, outs, saved, given)
  active = {v for v, nz in zip(jaxpr.invars, nonzeros, strict=True) if nz}
  for eqn in jaxpr.eqns:
    if any(type(a) is Var and a in active for a in eqn.invars):
      active.update(v for v in eqn.outvars if _differentiable(v))
  ct_env: dict = {}

  def write(v, ct):
    if ct is None or type(ct) is ad.Zero or type(v) is not Var or v not in active:
      return
    ct_env[v] = ad.add_tangents(ct_env[v], ct) if v in ct_env else ct

  for v, ct in zip(jaxpr.outvars, cts, strict=True):
    write(v, ct)
  keep = set(jaxpr.invars) | set(jaxpr.outvars)
  vjp_cache: dict = {}
  split = split_vjp_recomputation and type(current_trace()) is staging.DynamicJaxprTrace
  writers = {v: e for e in jaxpr.eqns for v in e.outvars} if split else {}
  # with vjp_output_from_coupling: coupling eqn -> (position in it, var) of the outputs of
  # eqns whose VJP reads their output, and those outputs' values rebuilt as `y - x`
  couplings = _couplings(closed, plan) if vjp_output_from_coupling else {}
  traced = type(current_trace()) is staging.DynamicJaxprTrace
  values.fence_rebuild = bool(couplings) and traced
  fence_cts = traced and _fence_vjp_cotangents()
  from_coupling: dict = {}
  for eqn in reversed(jaxpr.eqns):
    cts_out = [ct_env.pop(v, None) for v in eqn.outvars]
    if any(c is not None for c in cts_out):
      cts_out = [ad.Zero(ad.tangent_aval(v.aval)) if c is None else c
                 for c, v in zip(cts_out, eqn.outvars, strict=True)]
      if split or couplings or fence_cts:
        values.token = [c for c in cts_out if type(c) is not ad.Zero]
      ins = [values.get(a) for a in eqn.invars]
      in_active = [type(a) is Var and a in active for a in eqn.invars]
      if eqn in couplings:
        i, s = couplings[eqn]
        from_coupling[s] = _coupled_value(eqn, i, values.get(eqn.outvars[0]), ins)
      rule = structured_vjps.get(eqn.primitive)
      if rule is not None:
        cts_in = rule(eqn, ins, [values.get(v) for v in eqn.outvars], cts_out, in_active)
      elif eqn.outvars and eqn.outvars[0] in from_coupling:
        cts_in = eqn_vjp(eqn, ins, cts_out, in_active, vjp_cache,
                         out=from_coupling.pop(eqn.outvars[0]))
      else:
        if split and _recomputed_for_vjp(eqn, jaxpr, writers):
          ins = barrier_values(ins)
        cts_in = eqn_vjp(eqn, ins, cts_out, in_active, vjp_cache)
      if fence_cts and eqn.primitive in ad.jvp_reads_output:
        cts_in = _through_barrier(cts_in)
      for a, c in zip(eqn.invars, cts_in, strict=True):
        write(a, c)
    values.forget(eqn, keep)
  zero = lambda v: ad.Zero(ad.tangent_aval(v.aval))
  cts_in = [ct_env[v] if v in ct_env else zero(v)
            for v, nz in zip(jaxpr.invars, nonzeros, strict=True) if nz]
  if return_inputs:
    return cts_in, [values.get(v) for v in jaxpr.invars]
  return cts_in


# An experiment, off: fence the backward walk so that XLA neither shares an expensive
# elementwise value between a rebuild and a VJP nor runs the rebuild ahead of the cotangents.
# In a reversible coupling y = x + tanh(h @ w), the rebuild x = y - tanh(h @ w) and the VJP
# g * (1 - tanh(h @ w)^2) both read the tanh; shared, XLA (which neither duplicates an expensive
# op into two consumers nor, on XLA:CPU, fuses one producer into two outputs) writes it out and
# reads it back. With it on, (1) the VJP of an elementwise primitive that reads its own output
# (`ad.jvp_reads_output`: tanh, exp, logistic, ...) applied to a matmul's or convolution's
# result (materialized anyway) is taken on barrier'd copies of its inputs, so each consumer
# fuses its own tanh (same bits), and (2) the rebuild's matmuls take their operands through a
# barrier with the cotangents the walk is at, so the rebuild chain, which no longer waits for
# anything of the VJPs', cannot run ahead of them and hold its values (without (2) XLA's
# scheduler does, and memory grows with depth). Both need barriers to survive CSE and
# scheduling: a TPU does; XLA:CPU expands them early, where (2) is void and memory grows. On
# XLA:CPU with `--xla_disable_hlo_passes=cse_barrier_expander` (barriers kept): 2 elementwise
# passes fewer per reversible block (checkpoint's count), 24 activation-sized reads + writes
# instead of 28, XLA temp flat in depth. benchmarks/bench_reversible.py --split measures it.
split_vjp_recomputation = False

# producers whose results XLA keeps in memory whatever their consumers (not fused into them)
_MATERIALIZED = frozenset({"dot_general", "conv_general_dilated"})


def _recomputed_for_vjp(eqn, jaxpr, writers) -> bool:
  """Whether (with split_vjp_recomputation) the walk takes `eqn`'s VJP on barrier'd copies of
  its inputs: an elementwise primitive whose JVP reads its output, on inputs XLA materializes
  anyway (a matmul's or convolution's result, or an input of the function)."""
  if eqn.primitive not in ad.jvp_reads_output or len(eqn.outvars) != 1:
    return False
  shape = eqn.outvars[0].aval.shape
  for a in eqn.invars:
    if type(a) is not Var or a.aval.shape != shape:
      return False
    writer = writers.get(a)
    if writer is None and a not in jaxpr.invars:
      return False
    if writer is not None and writer.primitive.name not in _MATERIALIZED:
      return False
  return True


# An option, on where the default backend is a TPU (None: by platform; True or False forces it):
# the walk computes each VJP cotangent of an elementwise primitive whose JVP reads its output
# (g * (1 - tanh(h)^2), ...) once, behind a barrier, and the rebuild's matmuls take their
# operands through a barrier with the walk's current cotangents (so that they do not run ahead
# of the VJPs: without it, memory grows with depth). A TPU keeps barriers, and there a dense
# layer's two VJP matmuls otherwise each recompute that cotangent in their prologue, re-reading
# its f32 inputs (the checkpointed program's is computed once, in bf16). Measured on a TPU v5e
# (issue 32's reversible MLP, width 2048, batch 8192, f32; `benchmarks/bench_reversible.py
# --fence-cts`, tests/tpu/results/reversible_2026-12-06c.md): 3.327 ms a block against 3.787
# without it and jax.checkpoint's 3.318 (1.003x), device memory as flat in depth. Barriers are
# identities, but where they move XLA's fusion boundaries an elementwise chain may round
# differently (an ulp, seen once on XLA:CPU), and XLA:CPU expands barriers early (its program
# is about the default's), hence off on the CPU. (With fenced calls lowered as barriers too,
# `lower_fenced_call_as_barrier`, the chip measured 3.902 ms: the conditional fence stays.)
fence_vjp_cotangents: bool | None = None


def _fence_vjp_cotangents() -> bool:
  """Whether this walk fences its VJP cotangents: the option, or by the default backend."""
  if fence_vjp_cotangents is not None:
    return bool(fence_vjp_cotangents)
  from revax._src.runtime.client import get_backend  # (the backend starts at first use)
  return get_backend().platform == "tpu"


def _through_barrier(cts):
  """The non-zero cotangents among `cts` through one barrier (the rest as they are)."""
  live = [i for i, c in enumerate(cts) if c is not None and type(c) is not ad.Zero]
  cts = list(cts)
  for i, c in zip(live, barrier_values([cts[i] for i in live]), strict=True):
    cts[i] = c
  return cts


# An option, off (it changes the gradients' rounding): in an additive coupling y = x + f(h),
# the walk rebuilds x = y - f(h), and the VJP of f, where f's JVP reads its output
# (`ad.jvp_reads_output`: tanh, exp, logistic, ...), reads f(h) as y - x (both materialized
# anyway) instead of sharing the rebuild's f(h). Shared, XLA writes f(h) out and reads it back
# (it neither duplicates an expensive op into two consumers nor, on XLA:CPU, fuses one producer
# into two outputs); read as y - x, f(h) has one consumer and fuses into the rebuild, and the
# VJP's pass reads y and x (one more operand) instead of f(h): per coupling one pass and one
# activation-sized read + write fewer, with no barrier (so also on a stock XLA:CPU). y - x is
# f(h) up to the rounding of the rebuilt x (|error| <= half an ulp of y), so the gradients
# differ from the default's in their last bits; f's derivative at a saturated point (tanh near
# +-1, where 1 - f^2 is small) differs most, relatively. With it on, the rebuild's matmuls also
# run as fenced calls that read the walk's current cotangents: the rebuild chain no longer
# feeds the VJPs, and without that fence XLA:CPU's scheduler runs it ahead of them (XLA temp
# grows by about an activation per block). On XLA:CPU per reversible block: 8 elementwise
# passes (checkpoint's; default 10), 26 activation-sized reads + writes (default 28, checkpoint
# 23), 2 conditionals. A TPU already recomputes f(h) in each consumer's prologue: there it
# saves one activation written per block (libtpu's compile-only programs, --tpu-aot), speed
# unmeasured. benchmarks/hlo_reversible.py --coupling counts it; bench_reversible.py
# --coupling times it.
vjp_output_from_coupling = False

# couplings whose one operand can be taken back out of the output as `output - other`
_ADDITIVE = frozenset({"add", "sub"})


def _couplings(closed: ClosedJaxpr, plan: Plan) -> dict:
  """{coupling eqn: (position of s in it, s)} for the values s the walk gets as `y - x` (see
  vjp_output_from_coupling): s is the one output of an equation whose JVP reads its output,
  read by nothing but one additive equation y = x + s (or x - s, s - x) of the same type whose
  other operand x the plan rebuilds from y and s with that equation's inverse."""
  jaxpr = closed.jaxpr
  readers: dict = {}
  for eqn in jaxpr.eqns:
    for a in eqn.invars:
      if type(a) is Var:
        readers.setdefault(a, []).append(eqn)
  outs = {v for v in jaxpr.outvars if type(v) is Var}
  facts, found = _Facts(closed), {}
  for eqn in jaxpr.eqns:
    if eqn.primitive not in ad.jvp_reads_output or len(eqn.outvars) != 1:
      continue
    s = eqn.outvars[0]
    if type(s) is DropVar or s in outs or len(readers.get(s, ())) != 1:
      continue
    (coupling,) = readers[s]
    if coupling.primitive.name not in _ADDITIVE or coupling in found:
      continue
    if len(coupling.invars) != 2 or coupling.invars.count(s) != 1:
      continue
    i = coupling.invars.index(s)
    x, y = coupling.invars[1 - i], coupling.outvars[0]
    step = plan.steps.get(x) if type(x) is Var else None
    if step is None or step[0] != "inverse" or step[1] is not coupling or type(y) is DropVar:
      continue
    if not x.aval.shape == y.aval.shape == s.aval.shape or not (
        x.aval.dtype == y.aval.dtype == s.aval.dtype):
      continue
    known = tuple(j != i for j in range(2))
    if _inverse_solves(coupling, known, facts):
      found[coupling] = (i, s)
  return found


def _coupled_value(coupling, i, y, ins):
  """Operand i of the additive `coupling` taken back out of its output y and its other operand
  (its inverse rule solving for operand i: y - x, x - y or y + x)."""
  known = [None if j == i else v for j, v in enumerate(ins)]
  avals_in = [a.aval for a in coupling.invars]
  return inverse_rules[coupling.primitive].rebuild([y], known, avals_in,
                                                   **coupling.params)[i]


def rebuild_inputs(closed: ClosedJaxpr, plan: Plan, outs, saved, given=None):
  """The inputs of `closed` rebuilt from its outputs, stored inputs and given inputs."""
  values = _Values(closed, plan, outs, saved, given)
  return [values.get(v) for v in closed.jaxpr.invars]


def _differentiable(v) -> bool:
  return type(v) is not DropVar and dtypes.is_inexact(v.aval.dtype)


# --- invertible_p ----------------------------------------------------------------------------------
invertible_p = Primitive("invertible", multiple_results=True)


def _invertible_abstract_eval(*avals, jaxpr, primal, nonzeros, allow_storing):
  dispatch.check_arg_avals("invertible", jaxpr.in_avals, avals)
  return jaxpr.out_avals


def _invertible_impl(*args, jaxpr, primal, nonzeros, allow_storing):
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _invertible_jvp(primals, tangents, *, jaxpr, primal, nonzeros, allow_storing):
  """An invertible_p of the JVP jaxpr that remembers the primal jaxpr (the "JVP form"):
  evaluated it is just the JVP; partially evaluated (reverse mode) it stores only what the plan
  needs. The JVP of a JVP form is a plain call."""
  jvp_form = primal is None
  nz = tuple(type(t) is not ad.Zero for t in tangents)
  return ad.call_jvp(jaxpr, primals, tangents, lambda jvp_closed, args: invertible_p.bind(
      *args, jaxpr=jvp_closed, primal=jaxpr if jvp_form else None,
      nonzeros=nz if jvp_form else None, allow_storing=allow_storing))


def _invertible_partial_eval(trace, args, params, unknowns):
  """A JVP form with known primals and unknown tangents: run the primal function now, and stage
  invertible_lin on the outputs and the inputs the plan stores, nothing else."""
  primal, nonzeros = params["primal"], params["nonzeros"]
  n = len(primal.in_avals) if primal is not None else 0
  if primal is None or any(unknowns[:n]) or not all(unknowns[n:]):
    return partial_eval.partial_eval_call(trace, invertible_p, args, params, unknowns)
  flat = inline_calls(primal)
  plan = reconstruction_plan(flat)
  if plan.saved and not params["allow_storing"]:
    raise _storing_error(flat, plan)
  with set_current_trace(trace.parent_trace):
    outs = invertible_p.bind(*args[:n], jaxpr=primal, primal=None, nonzeros=None,
                             allow_storing=params["allow_storing"])
  _, out_nz = ad.jvp_jaxpr(primal, nonzeros)
  saved = [args[i] for i in plan.saved]
  lin_outs = staging.DynamicJaxprTrace.process_primitive(
      trace, invertible_lin_p, list(outs) + saved + list(args[n:]),
      {"primal": flat, "nonzeros": nonzeros, "out_nonzeros": out_nz})
  return list(outs) + list(lin_outs)


def _storing_error(flat, plan) -> ValueError:
  lines = [f"  input {i} ({flat.jaxpr.invars[i].aval.str_short()}): {why}"
           for i, why in plan.blocked.items()]
  return ValueError("invertible(allow_storing=False) cannot invert the function to rebuild "
                    "these inputs from its outputs:\n" + "\n".join(lines) + "\nPass "
                    "allow_storing=True to store them instead (a partially invertible function), "
                    "or close over them as constants.")


def _invertible_transpose(cts, *args, jaxpr, primal, nonzeros, allow_storing):
  """A linear invertible_p (the staged part of a plainly split call, e.g. in second-order
  reverse mode) transposes as the call it is."""
  from revax._src.interpreters.transpose import call_transpose
  return call_transpose(jaxpr, cts, args)


def _invertible_batch(axis_size, vals, dims, *, jaxpr, primal, nonzeros, allow_storing):
  """The batched jaxpr (a JVP form batches as a plain call of its JVP jaxpr: under vmap(grad)
  the primal form is what gets batched, before differentiation)."""
  batched, out_dims = batching.batch_jaxpr(jaxpr, dims, axis_size)
  outs = invertible_p.bind(*vals, jaxpr=batched, primal=None, nonzeros=None,
                           allow_storing=allow_storing)
  return outs, list(out_dims)


def _invertible_lower(ctx, *args, jaxpr, primal, nonzeros, allow_storing):
  return mlir.inline_closed_jaxpr(ctx.fb, jaxpr, args)


invertible_p.def_abstract_eval(_invertible_abstract_eval)
dispatch.custom_impls[invertible_p] = _invertible_impl
ad.primitive_jvps[invertible_p] = _invertible_jvp
partial_eval.partial_eval_rules[invertible_p] = _invertible_partial_eval
ad.primitive_transposes[invertible_p] = _invertible_transpose
batching.axis_size_batchers[invertible_p] = _invertible_batch
mlir.register_lowering(invertible_p, _invertible_lower)
inlinable_calls[invertible_p] = "jaxpr"


# --- invertible_lin_p: the linear map whose transpose is the backward walk -------------------------
invertible_lin_p = Primitive("invertible_lin", multiple_results=True)


def _lin_abstract_eval(*avals, primal, nonzeros, out_nonzeros):
  return [ad.tangent_aval(a) for a, z in zip(primal.out_avals, out_nonzeros, strict=True) if z]


def _lin_split(args, primal):
  plan = reconstruction_plan(primal)
  n_out, n_saved = len(primal.out_avals), len(plan.saved)
  return plan, args[:n_out], args[n_out:n_out + n_saved], args[n_out + n_saved:]


def _lin_forward(*args, primal, nonzeros, out_nonzeros):
  """Push tangents forwards (linearize's f_jvp): rebuild the inputs, then take the JVP."""
  plan, outs, saved, tangents = _lin_split(args, primal)
  values = _Values(primal, plan, outs, saved)
  primals = [values.get(v) for v in primal.jaxpr.invars]
  it = iter(tangents)
  ts = [next(it) if z else ad.Zero(ad.tangent_aval(v.aval))
        for v, z in zip(primal.jaxpr.invars, nonzeros, strict=True)]
  _, out_tangents = ad.jvp_flat(lambda *xs: eval_jaxpr(primal.jaxpr, primal.consts, *xs),
                                primals, ts)
  return [ad.instantiate_zeros(t) for t, z in zip(out_tangents, out_nonzeros, strict=True) if z]


def _lin_transpose(cts, *args, primal, nonzeros, out_nonzeros):
  """The backward walk, as one fenced call of the outputs, stored inputs and cotangents."""
  plan, outs, saved, tangents = _lin_split(args, primal)
  if any(ad.is_undefined_primal(x) for x in (*outs, *saved)):
    raise ValueError("invertible_lin is not linear in the outputs and stored inputs it reads: "
                     "only its tangent operands can be transposed")
  walk = _backward_jaxpr(primal, tuple(nonzeros), tuple(out_nonzeros),
                         tuple(get_aval(x) for x in saved))
  cts_in = fenced_call(walk, *outs, *saved, *map(ad.instantiate_zeros, cts))
  return [None] * (len(outs) + len(saved)) + list(cts_in)


@staging.memoize_on_jaxpr
def _backward_jaxpr(primal, nonzeros, out_nonzeros, saved_avals) -> ClosedJaxpr:
  plan = reconstruction_plan(primal)
  out_avals = list(primal.out_avals)
  ct_avals = [ad.tangent_aval(a) for a, z in zip(out_avals, out_nonzeros, strict=True) if z]
  n_out, n_saved = len(out_avals), len(saved_avals)

  def walk(*args):
    it = iter(args[n_out + n_saved:])
    cts = [next(it) if z else ad.Zero(ad.tangent_aval(a))
           for a, z in zip(out_avals, out_nonzeros, strict=True)]
    cts_in = backward_walk(primal, plan, nonzeros, list(args[:n_out]),
                           list(args[n_out:n_out + n_saved]), cts)
    return [ad.instantiate_zeros(c) for c in cts_in]

  jaxpr, consts = staging.trace_to_jaxpr(walk, out_avals + list(saved_avals) + ct_avals)
  jaxpr, _ = staging.dce_jaxpr(jaxpr)  # the VJPs' own primal results are never read
  return ClosedJaxpr(jaxpr, consts)


def _lin_batch(axis_size, vals, dims, **params):
  return batching.batch_flat(lambda *xs: _lin_forward(*xs, **params), list(vals), list(dims),
                             axis_size)


def _lin_jvp(primals, tangents, **params):
  return ad.jvp_flat(lambda *xs: _lin_forward(*xs, **params), list(primals), list(tangents))


invertible_lin_p.def_abstract_eval(_lin_abstract_eval)
dispatch.custom_impls[invertible_lin_p] = _lin_forward
ad.primitive_transposes[invertible_lin_p] = _lin_transpose
ad.primitive_jvps[invertible_lin_p] = _lin_jvp
batching.axis_size_batchers[invertible_lin_p] = _lin_batch
mlir.register_lowering(invertible_lin_p, mlir.lower_fun(_lin_forward, multiple_results=True))


# --- custom_ivjp_call_p: a block that gives its inverse and VJP by hand ----------------------------
custom_ivjp_call_p = Primitive("custom_ivjp_call", multiple_results=True)
# operands: the function's hoisted constants, the ivjp's hoisted constants, then the inputs.
# call_jaxpr: (fun consts, inputs) -> outputs.
# ivjp_jaxpr: (ivjp consts, inputs, outputs, output cotangents) -> (inputs, input cotangents).


def _ivjp_split(args, num_fun_consts, num_ivjp_consts):
  k = num_fun_consts + num_ivjp_consts
  return args[:num_fun_consts], args[num_fun_consts:k], args[k:]


def _ivjp_abstract_eval(*avals, call_jaxpr, ivjp_jaxpr, num_fun_consts, num_ivjp_consts):
  fun_consts, _, ins = _ivjp_split(avals, num_fun_consts, num_ivjp_consts)
  dispatch.check_arg_avals("custom_ivjp", call_jaxpr.in_avals, list(fun_consts) + list(ins))
  return call_jaxpr.out_avals


def _ivjp_impl(*args, call_jaxpr, ivjp_jaxpr, num_fun_consts, num_ivjp_consts):
  fun_consts, _, ins = _ivjp_split(args, num_fun_consts, num_ivjp_consts)
  return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *fun_consts, *ins)


def _ivjp_jvp(primals, tangents, *, call_jaxpr, ivjp_jaxpr, num_fun_consts, num_ivjp_consts):
  """The JVP of the function itself, inline (one primal computation)."""
  fun_consts, _, ins = _ivjp_split(primals, num_fun_consts, num_ivjp_consts)
  t_fun, _, t_ins = _ivjp_split(tangents, num_fun_consts, num_ivjp_consts)
  return ad.jvp_flat(lambda *xs: eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs),
                     list(fun_consts) + list(ins), list(t_fun) + list(t_ins))


def _ivjp_lower(ctx, *args, call_jaxpr, ivjp_jaxpr, num_fun_consts, num_ivjp_consts):
  fun_consts, _, ins = _ivjp_split(args, num_fun_consts, num_ivjp_consts)
  return mlir.inline_closed_jaxpr(ctx.fb, call_jaxpr, list(fun_consts) + list(ins))


@staging.memoize_on_jaxpr
def _ivjp_reads(ivjp_jaxpr, n_consts, n_in) -> tuple:
  """Which ivjp consts and inputs the ivjp reads to rebuild the inputs (the rest may be
  unknown when it runs)."""
  n_out = (len(ivjp_jaxpr.out_avals)) // 2
  _, used = staging.dce_jaxpr(ivjp_jaxpr.jaxpr, [True] * n_out + [False] * n_out)
  return tuple(used[:n_consts + n_in])


def _ivjp_solves(known, eqn, facts) -> bool:
  p = eqn.params
  n_fun, n_ivjp = p["num_fun_consts"], p["num_ivjp_consts"]
  n_in = len(known) - n_fun - n_ivjp
  reads = _ivjp_reads(p["ivjp_jaxpr"], n_ivjp, n_in)
  return all(k for k, r in zip(known[n_fun:], reads, strict=True) if r)


def _ivjp_run(p, ivjp_consts, ins, outs, cts):
  jaxpr = p["ivjp_jaxpr"]
  zero_like = lambda a: ad.instantiate_zeros(ad.Zero(a))
  ins = [zero_like(a) if x is None else x
         for x, a in zip(ins, jaxpr.in_avals[len(ivjp_consts):], strict=False)]
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *ivjp_consts, *ins, *outs, *cts)


def _ivjp_rebuild(outs, ins, avals_in, **params):
  fun_consts, ivjp_consts, xs = _ivjp_split(ins, params["num_fun_consts"],
                                            params["num_ivjp_consts"])
  cts = [ad.instantiate_zeros(ad.Zero(ad.tangent_aval(get_aval(o)))) for o in outs]
  res = _ivjp_run(params, ivjp_consts, xs, outs, cts)
  return list(fun_consts) + list(ivjp_consts) + list(res[:len(xs)])


def _ivjp_cotangents(eqn, ins, outs, cts_out, active):
  p = eqn.params
  n_fun, n_ivjp = p["num_fun_consts"], p["num_ivjp_consts"]
  if any(active[:n_fun + n_ivjp]):
    raise TypeError("custom_ivjp: a gradient was requested for a value the block closes over, "
                    "but its ivjp gives cotangents of the block's arguments only; pass the value "
                    "to the block as an argument instead")
  _, ivjp_consts, xs = _ivjp_split(ins, n_fun, n_ivjp)
  res = _ivjp_run(p, ivjp_consts, xs, outs, [ad.instantiate_zeros(c) for c in cts_out])
  return [None] * (n_fun + n_ivjp) + list(res[len(xs):])


custom_ivjp_call_p.def_abstract_eval(_ivjp_abstract_eval)
dispatch.custom_impls[custom_ivjp_call_p] = _ivjp_impl
ad.primitive_jvps[custom_ivjp_call_p] = _ivjp_jvp
mlir.register_lowering(custom_ivjp_call_p, _ivjp_lower)
inverse_rules[custom_ivjp_call_p] = InverseRule(_ivjp_solves, _ivjp_rebuild)
structured_vjps[custom_ivjp_call_p] = _ivjp_cotangents  # the block's own ivjp gives them
