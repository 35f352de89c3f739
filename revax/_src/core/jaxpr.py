"""The jaxpr IR: a typed, first-order program of primitive applications.

A `Jaxpr` has constant variables, input variables, a list of equations and output atoms. Each
`JaxprEqn` applies one primitive to atoms (variables or literals) with hashable params and defines
new variables. A `ClosedJaxpr` pairs a jaxpr with the values of its constants. Printing follows
JAX's text form: `{ lambda ; a:f32[3]. let b:f32[3] = exp a in (b,) }`.
"""
from __future__ import annotations

import itertools

import numpy as np

from revax._src.core import memory_space as _memory_space
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
    return pp_jaxpr(self, _Names(), indent=0)

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
  """Names variables a, b, ..., z, ba, bb, ... in order of first appearance (as JAX does)."""

  def __init__(self):
    self.names = {}

  def __call__(self, v) -> str:
    if isinstance(v, Literal):
      return f"{_fmt_scalar(v.val)}:{v.aval.str_short()}"
    if isinstance(v, DropVar):
      return "_"
    name = self.names.get(v)
    if name is None:
      name = self.names[v] = _encode(len(self.names))
    return name


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
  return _binder(names, v)


def _binder(names, v) -> str:
  return f"{names(v)}:{v.aval.str_short()}"


def _fmt_param(value, names, indent) -> str:
  if isinstance(value, ClosedJaxpr):
    value = value.jaxpr
  if isinstance(value, Jaxpr):
    return pp_jaxpr(value, _Names(), indent + 2)  # a nested jaxpr names its variables afresh
  if isinstance(value, np.dtype):
    return value.name
  if isinstance(value, type) and issubclass(value, np.generic):
    return np.dtype(value).name
  if isinstance(value, tuple):
    if value and all(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in value):
      return "(\n" + "".join(" " * (indent + 4) + _fmt_param(x, names, indent + 2) + "\n"
                             for x in value) + " " * (indent + 2) + ")"
    inner = ", ".join(repr(x) if type(x) is str else _fmt_param(x, names, indent)
                      for x in value)  # (strings in tuples print quoted, as JAX's)
    return f"({inner},)" if len(value) == 1 else f"({inner})"
  if callable(value) and hasattr(value, "__name__"):
    return value.__name__
  return str(value)


# primitive -> rule(eqn, names) -> the equation's text, for primitives JAX prints in a form of
# their own (a ref read prints `b:f32[] <- a[...]`)
pp_eqn_rules: dict = {}


# primitive -> rule(eqn, names, indent) -> the text of an equation holding a jaxpr that JAX
# prints in a form of its own (shard_map: its params, the body sharing the outer names)
pp_block_rules: dict = {}


def pp_eqn(eqn: JaxprEqn, names: _Names, indent: int = 0) -> str:
  rule = pp_eqn_rules.get(eqn.primitive)
  if rule is not None:
    return rule(eqn, names)
  rule = pp_block_rules.get(eqn.primitive)
  if rule is not None:
    return rule(eqn, names, indent)
  ins = " ".join(names(v) for v in eqn.invars)
  outs = " ".join(_binder(names, v) for v in eqn.outvars)
  # params sorted by name, jaxpr-valued ones last (as JAX prints them)
  items = sorted(eqn.params.items(), key=lambda kv: (_holds_jaxpr(kv[1]), kv[0]))
  params = [f"{k}={_fmt_param(v, names, indent)}" for k, v in items]
  if any(_holds_jaxpr(v) for v in eqn.params.values()):
    pad = " " * (indent + 2)
    body = "".join(f"{pad}{p}\n" for p in params)
    return f"{outs} = {eqn.primitive.name}[\n{body}{' ' * indent}] {ins}"
  pstr = f"[{' '.join(params)}]" if params else ""
  return f"{outs} = {eqn.primitive.name}{pstr} {ins}"


def _holds_jaxpr(value) -> bool:
  if isinstance(value, tuple):
    return any(map(_holds_jaxpr, value))
  return isinstance(value, (Jaxpr, ClosedJaxpr))


def pp_jaxpr(jaxpr: Jaxpr, names: _Names, indent: int = 0) -> str:
  consts = " ".join(_binder(names, v) for v in jaxpr.constvars)
  ins = " ".join(_binder(names, v) for v in jaxpr.invars)
  head = f"{{ lambda {consts}; {ins}. let" if consts else f"{{ lambda ; {ins}. let"
  eqns = [pp_eqn(e, names, indent + 4) for e in jaxpr.eqns]
  outs = ", ".join(names(v) for v in jaxpr.outvars)
  tail = f"in ({outs},) }}" if len(jaxpr.outvars) == 1 else f"in ({outs}) }}"
  # (as JAX's printer: everything on one line, equations separated by ';', where it fits)
  one_line = f"{head} {'; '.join(eqns)} {tail}"
  if len(one_line) <= 80 and "\n" not in one_line:
    return one_line
  pad = " " * (indent + 4)
  body = "".join(f"{pad}{e}\n" for e in eqns)
  return f"{head}\n{body}{' ' * (indent + 2)}{tail}"


_memory_space.jaxpr_types = (Jaxpr, ClosedJaxpr)  # (what holds a body: memory_space.py)
