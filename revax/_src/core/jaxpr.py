"""The jaxpr IR: a typed, first-order program of primitive applications.

A `Jaxpr` has constant variables, input variables, a list of equations and output atoms. Each
`JaxprEqn` applies one primitive to atoms (variables or literals) with hashable params and defines
new variables. A `ClosedJaxpr` pairs a jaxpr with the values of its constants. Printing follows
JAX's text form: `{ lambda ; a:f32[3]. let b:f32[3] = exp a in (b,) }`, built as JAX builds it, as
a document of groups and breaks (pretty_printer.py) laid out in 80 columns, so that long lines
break where JAX's break.
"""
from __future__ import annotations

import collections
import itertools

import numpy as np

from revax._src.core import memory_space as _memory_space
from revax._src.core import pretty_printer as pp
from revax._src.core.avals import ShapedArray


class Var:
  """A variable of a jaxpr; identity is the object (names are given when printing)."""
  __slots__ = ("aval", "_id")
  _ids = itertools.count()

  def __init__(self, aval: ShapedArray):
    self.aval = aval
    self._id = next(Var._ids)

  def __repr__(self):
    return f"Var(id={self._id}):{self.aval.str_short(short_dtypes=False)}"  # (as JAX's)


class DropVar(Var):
  """An output variable nobody reads (printed `_`)."""
  __slots__ = ()


class Literal:
  """A scalar constant written inline in an equation."""
  __slots__ = ("val", "aval")

  def __init__(self, val, aval: ShapedArray):
    self.val = val
    self.aval = aval

  def __repr__(self):
    return f"Literal({_fmt_scalar(self.val)})"  # (as JAX's)


Atom = Var | Literal


class JaxprEqn:
  """`outvars = primitive[params] invars`."""
  __slots__ = ("primitive", "invars", "outvars", "params")

  def __init__(self, primitive, invars, outvars, params):
    self.primitive = primitive
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.params = dict(params)

  @classmethod
  def adopt(cls, primitive, invars: list, outvars: list, params: dict) -> "JaxprEqn":
    """An equation that takes over `invars`, `outvars` and `params` without copying them: for
    callers that built the lists afresh and share a params dict no one changes (equations are
    never changed in place)."""
    eqn = cls.__new__(cls)
    eqn.primitive, eqn.invars, eqn.outvars, eqn.params = primitive, invars, outvars, params
    return eqn

  @property
  def effects(self) -> frozenset:
    """The equation's side effects as JAX's effect objects (`DebugEffect()`,
    `WriteEffect(ref)`, ...; core/effect_types.py), from its primitive's rule or its nested
    jaxprs (core/effects.py); empty for a pure equation."""
    from revax._src.core.effects import eqn_effects
    return eqn_effects(self)

  def replace(self, **kw) -> "JaxprEqn":
    return JaxprEqn(kw.get("primitive", self.primitive), kw.get("invars", self.invars),
                    kw.get("outvars", self.outvars), kw.get("params", self.params))

  def __repr__(self):
    return pp_eqn(self, _Names())


class Jaxpr:
  """`{ lambda constvars ; invars . let eqns in outvars }`."""
  __slots__ = ("constvars", "invars", "outvars", "eqns")

  def __init__(self, constvars, invars, outvars, eqns):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)

  in_avals = property(lambda self: [v.aval for v in self.invars])
  out_avals = property(lambda self: [v.aval for v in self.outvars])

  @property
  def effects(self) -> frozenset:
    """The equations' effects (JAX's `jaxpr.effects`), less those on refs created inside."""
    from revax._src.core.effects import jaxpr_effects
    return jaxpr_effects(self)

  def __str__(self):
    return pp_toplevel(self)

  __repr__ = __str__

  def pretty_print(self) -> str:
    return str(self)


class ClosedJaxpr:
  """A jaxpr together with the values of its constvars. Hashed by identity (like JAX's)."""
  __slots__ = ("jaxpr", "consts", "__weakref__")

  def __init__(self, jaxpr: Jaxpr, consts=()):
    if len(consts) != len(jaxpr.constvars):
      raise ValueError(f"ClosedJaxpr: {len(jaxpr.constvars)} constvars but {len(consts)} consts")
    self.jaxpr = jaxpr
    self.consts = list(consts)

  in_avals = property(lambda self: self.jaxpr.in_avals)
  out_avals = property(lambda self: self.jaxpr.out_avals)
  eqns = property(lambda self: self.jaxpr.eqns)
  effects = property(lambda self: self.jaxpr.effects, doc="The jaxpr's effects (as JAX's).")

  def __str__(self):
    return str(self.jaxpr)

  __repr__ = __str__

  def pretty_print(self) -> str:
    return str(self.jaxpr)


# --- pretty printing ------------------------------------------------------------------------------
class _Names:
  """Names variables a, b, ..., z, ba, bb, ... in order of first appearance, across the nested
  jaxprs of one print (as JAX's JaxprPpContext: one name per variable in the whole text).

  `dropped`: variables printed `_` (the top-level jaxpr's unused results, as JAX prints them);
  `shared`: the nested jaxprs printed once ahead of the program (`let f = { ... } in`) and
  referred to by name, whose names the variables' names skip."""

  def __init__(self, dropped=(), shared=None):
    self.names = {v: "_" for v in dropped}
    self.shared = shared or {}
    self._taken = set(self.shared.values())
    self._next = 0

  def __call__(self, v) -> str:
    if isinstance(v, Literal):
      return f"{_fmt_scalar(v.val)}:{v.aval.str_short()}"
    if isinstance(v, DropVar):
      return "_"
    name = self.names.get(v)
    if name is None:
      name = self.names[v] = self._fresh()
    return name

  def is_dropped(self, v) -> bool:
    """Whether `v` prints `_` (an unused result of the top-level jaxpr)."""
    return self.names.get(v) == "_"

  def _fresh(self) -> str:
    while True:
      name = _encode(self._next)
      self._next += 1
      if name not in self._taken:
        return name

  def suggest(self, for_vars, like_vars) -> None:
    """Name `for_vars` (a nested jaxpr's binders) as `like_vars` (the outer atoms they alias),
    as JAX's printer does for a jit call's body: each outer variable lends its name once."""
    if len(for_vars) != len(like_vars):
      return
    lent = set()
    for for_v, like_v in zip(for_vars, like_vars):
      if (isinstance(like_v, Var) and like_v not in lent and isinstance(for_v, Var)
          and for_v not in self.names):
        lent.add(like_v)
        self.names[for_v] = self(like_v)


def _encode(i: int) -> str:
  letters = "abcdefghijklmnopqrstuvwxyz"
  s = letters[i % 26]
  i //= 26
  while i:
    s = letters[i % 26] + s
    i //= 26
  return s


def _fmt_scalar(val) -> str:
  v = np.asarray(val)
  if v.dtype == np.bool_:
    return str(bool(v))
  if np.issubdtype(v.dtype, np.integer):
    return str(int(v))
  if v.dtype.kind == "c":
    return str(complex(v))
  if v.dtype.names:  # float0 (a tangent of an integer): printed as JAX prints it
    return str(v[()])
  f = float(v)
  return repr(f) if np.isfinite(f) else str(f)


def binder(names, v) -> str:
  """`a:f32[3]`: a variable with its type, as equations print their outputs."""
  return f"{names(v)}:{v.aval.str_short()}"


def vars_doc(names, vs, sep: str = "", typed: bool = False) -> pp.Doc:
  """Atoms separated by `sep` and a break of their own (JAX's `pp_vars`): on one line where
  they fit from where they start, else broken before the first that does not fit, the lines
  after the first indented 2 further; `typed`: with their types (as binders print)."""
  between = pp.text(sep) + pp.group(pp.brk())
  return pp.nest(2, pp.group(pp.join(between, [pp.text(binder(names, v) if typed else names(v))
                                               for v in vs])))


def _param_doc(value, names) -> pp.Doc:
  """A param's value: a nested jaxpr as a jaxpr (its variables named on from the outer ones,
  as JAX's), a tuple of jaxprs as JAX's `pp_jaxprs`, other values as text."""
  if isinstance(value, pp.Doc):  # (a rule's own rendering: pp_param_rules)
    return value
  if isinstance(value, (Jaxpr, ClosedJaxpr)):
    return jaxpr_doc(value, names)
  if type(value) is tuple and all(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in value):
    return pp.group(pp.concat([
        pp.nest(2, pp.concat([pp.text("("), pp.brk(""),
                              pp.join(pp.brk(), [jaxpr_doc(x, names) for x in value])])),
        pp.brk(""), pp.text(")")]))
  if isinstance(value, frozenset):  # (sorted, as JAX prints a frozenset param)
    try:
      items = sorted(value)
    except TypeError:
      items = list(value)
    return pp.text(f"frozenset({{{', '.join(repr(e) for e in items)}}})")
  return pp.text(_fmt_param(value, names))


def _fmt_param(value, names) -> str:
  """A param's text (as JAX's `str` of it, with revax's values printed as JAX's)."""
  if isinstance(value, (Jaxpr, ClosedJaxpr)):  # (in a tuple of other things)
    return jaxpr_doc(value, names).format()
  if isinstance(value, np.dtype):
    return value.name
  if isinstance(value, type) and issubclass(value, np.generic):
    return np.dtype(value).name
  if isinstance(value, tuple):
    inner = ", ".join(repr(x) if type(x) is str else _fmt_param(x, names)
                      for x in value)  # (strings in tuples print quoted, as JAX's)
    return f"({inner},)" if len(value) == 1 else f"({inner})"
  if callable(value) and hasattr(value, "__name__"):
    return value.__name__
  return str(value)


# primitive -> rule(eqn, names) -> the equation's document (pretty_printer.py), for primitives
# JAX prints in a form of its own (a ref read prints `b:f32[] <- a[...]`)
pp_eqn_rules: dict = {}


# primitive -> the param holding a body called with the equation's operands and giving its
# results (a jit call's `jaxpr`): JAX prints the body's binders with the outer names
pp_forwarding_params: dict = {}


# primitive -> the params JAX prints first (a jit call's `name`); the others follow sorted
pp_leading_params: dict = {}


# primitive -> the params holding jaxprs that the primitive's printing never shows (revax's own:
# shard_map's vmap form); they take no part in choosing the jaxprs printed ahead
pp_hidden_params: dict = {}


# primitive -> rule(params) -> the params JAX prints, where its printer leaves some out, renames
# or shortens them (a broadcast's `shape`, implied by the result's type); a value may be a
# document, printed as it is
pp_param_rules: dict = {}


def eqn_doc(eqn: JaxprEqn, names: _Names) -> pp.Doc:
  """The equation's document, built as JAX's `_pp_eqn` builds it (naming its variables in the
  same order: results, the nested jaxprs' variables, operands):
  `outs = name[k=v ...] ins`, the params in a group of their own, then the operands'."""
  rule = pp_eqn_rules.get(eqn.primitive)
  if rule is not None:
    return rule(eqn, names)
  body = eqn.params.get(pp_forwarding_params.get(eqn.primitive))
  if body is not None:
    body = body.jaxpr if isinstance(body, ClosedJaxpr) else body
    if body not in names.shared:
      names.suggest(body.invars, eqn.invars)
      names.suggest(body.outvars, eqn.outvars)
  lhs = vars_doc(names, eqn.outvars, typed=True)
  rule = pp_param_rules.get(eqn.primitive)
  params = eqn.params if rule is None else rule(eqn.params)
  lead = pp_leading_params.get(eqn.primitive, ())
  keys = [k for k in lead if k in params] + sorted(k for k in params if k not in lead)
  rhs = [pp.text(eqn.primitive.name), _kv_pairs_doc([(k, params[k]) for k in keys], names),
         pp.text(" ") + vars_doc(names, eqn.invars)]
  if eqn.outvars:
    return pp.concat([lhs, pp.text(" = "), *rhs])
  return pp.concat(rhs)


def _kv_pairs_doc(pairs, names) -> pp.Doc:
  """`[k=v k=v]` on one line where it fits from its column, else one param a line (JAX's)."""
  if not pairs:
    return pp.nil()
  return pp.group(pp.concat([
      pp.nest(2, pp.concat([
          pp.text("["), pp.brk(""),
          pp.join(pp.brk(), [pp.text(f"{k}=") + _param_doc(v, names) for k, v in pairs])])),
      pp.brk(""), pp.text("]")]))


def pp_eqn(eqn: JaxprEqn, names: _Names) -> str:
  """The equation's text (as JAX's `repr` of an equation)."""
  return eqn_doc(eqn, names).format().rstrip()


def jaxpr_doc(jaxpr, names: _Names) -> pp.Doc:
  """A nested jaxpr's document: its name where it is printed ahead, else the jaxpr."""
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
  shared = names.shared.get(jaxpr)
  return pp.text(shared) if shared else _skeleton_doc(jaxpr, names)


def _skeleton_doc(jaxpr: Jaxpr, names: _Names) -> pp.Doc:
  """`{ lambda consts; ins. let eqns in (outs,) }` (JAX's `pp_jaxpr_skeleton`): on one line
  where it fits, else the equations one a line, indented 4 from the jaxpr's nesting."""
  consts = vars_doc(names, jaxpr.constvars, typed=True)
  ins = vars_doc(names, jaxpr.invars, typed=True)
  eqns = pp.join(pp.brk("; "), [eqn_doc(e, names) for e in jaxpr.eqns])
  outs = pp.concat([pp.text("("), vars_doc(names, jaxpr.outvars, sep=","),
                    pp.text(",)" if len(jaxpr.outvars) == 1 else ")")])
  return pp.group(pp.nest(2, pp.concat([
      pp.text("{ lambda "), consts, pp.text("; "), ins, pp.text(". let"),
      pp.nest(2, pp.brk() + eqns), pp.brk(), pp.text("in "), outs])) + pp.text(" }"))


def pp_toplevel(jaxpr: Jaxpr, width: int = 80) -> str:
  """`str(jaxpr)` as JAX prints a whole program: its unused results `_`, one naming across the
  nested jaxprs, and the nested jaxprs used more than once or longer than 10 equations printed
  first, each once, as `let name = { ... } in`, and named where they are used."""
  shared = _shared_jaxprs(jaxpr)
  names = _Names(_dropvars(jaxpr), shared)
  docs = [pp.concat([pp.text(f"let {name} = "), _skeleton_doc(sub, names), pp.text(" in"),
                     pp.brk()]) for sub, name in shared.items()]
  docs.append(_skeleton_doc(jaxpr, names))
  return pp.concat(docs).format(width)


def _dropvars(jaxpr: Jaxpr) -> list:
  """The results of `jaxpr`'s equations that nothing reads (JAX prints them `_`)."""
  used = {a for a in jaxpr.outvars if isinstance(a, Var)}
  dropped = []
  for eqn in reversed(jaxpr.eqns):
    dropped += [v for v in eqn.outvars if v not in used]
    used.update(a for a in eqn.invars if isinstance(a, Var))
  return dropped


def _subjaxprs(params: dict, hidden=()):
  for key, value in params.items():
    if key in hidden:
      continue
    for v in value if isinstance(value, tuple) else (value,):
      if isinstance(v, Jaxpr):
        yield v
      elif isinstance(v, ClosedJaxpr):
        yield v.jaxpr


def _shared_jaxprs(top: Jaxpr) -> dict:
  """{nested jaxpr: its name} of those JAX's printer pulls ahead: met more than once in a walk
  of every occurrence, or longer than 10 equations; named after the `name` param of the
  equation holding them (else `jaxpr`), numbered where names repeat."""
  counts, named = {}, {}
  queue = collections.deque([top])
  while queue:
    jaxpr = queue.popleft()
    counts[jaxpr] = counts.get(jaxpr, 0) + 1 + (jaxpr is not top and len(jaxpr.eqns) > 10)
    for eqn in jaxpr.eqns:
      name = eqn.params.get("name")
      for sub in _subjaxprs(eqn.params, pp_hidden_params.get(eqn.primitive, ())):
        queue.append(sub)
        if isinstance(name, str):
          named.setdefault(sub, name.strip("<>"))
  taken, shared = collections.Counter(), {}
  for jaxpr, count in counts.items():
    if count == 1:
      continue
    name = named.get(jaxpr, "jaxpr")
    before = taken[name]
    taken[name] += 1
    if before:  # (the second `f` is `f1`, as JAX names it)
      name += str(before)
      taken[name] += 1
    shared[jaxpr] = name
  return shared


_memory_space.jaxpr_types = (Jaxpr, ClosedJaxpr)  # (what holds a body: memory_space.py)
