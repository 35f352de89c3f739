"""`SymbolicScope`: the scope of the dimension variables of one exported function and the
constraints on them (JAX's), parsed from strings `e1 >= e2`, `e1 <= e2`, `e1 == e2`.

`>=` constraints bound expressions (core/shape_poly.py uses them in its decisions; one on a
single variable narrows that variable's range); an equality `k*t == e` rewrites the term `t`
wherever it appears in a multiple of `k`.
"""
from __future__ import annotations

import os
import sys

from revax._src.core import shape_poly as sp
from revax._src.core.shape_poly_parse import parse_dims

__all__ = ["SymbolicScope"]

INF = float("inf")


_REVAX_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _user_location():
  """'file:line:column (function)' of the innermost caller outside revax (where JAX's scopes
  say they were created), or None."""
  frame = sys._getframe(2)
  while frame is not None and frame.f_code.co_filename.startswith(_REVAX_DIR + os.sep):
    frame = frame.f_back
  if frame is None:
    return None
  code = frame.f_code
  try:
    _, _, column, _ = list(code.co_positions())[frame.f_lasti // 2]
  except (AttributeError, IndexError):  # (no column information)
    column = None
  line = frame.f_lineno
  return f"{code.co_filename}:{line}:{0 if column is None else column} ({code.co_name})"


class SymbolicScope:
  """The scope of the dimension variables of one exported function, and their constraints.

  Args:
    constraints_str: constraints `e1 >= e2`, `e1 <= e2` or `e1 == e2` (strings).

  Example:
    >>> scope = revax.export.SymbolicScope(["b >= 4"])
    >>> b, = revax.export.symbolic_shape("b", scope=scope)
    >>> b >= 3
    True
  """

  def __init__(self, constraints_str=()):
    if isinstance(constraints_str, str):
      raise ValueError("The symbolic constraints should be a sequence of strings. "
                       f"Got {constraints_str!r}")
    self._constraints: list = []  # (kind, debug text, e1, e2, diff)
    self._geq_constraints: list = []
    self._rules: dict = {}
    self._var_ranges: dict = {}
    self._bounds_cache: dict = {}  # (expression, depth) -> bounds, valid for these constraints
    self._location = _user_location()
    for c in constraints_str:
      self._add_constraint(c)

  def __str__(self):
    extra = "".join(f"\n  {c[1]}" for c in self._constraints)
    where = f" created at {self._location}" if self._location else ""
    return f"{id(self)}{where}" + (" with constraints:" + extra if extra else "")

  __repr__ = __str__

  def _add_constraint(self, text):
    if not isinstance(text, str):
      raise ValueError(f"SymbolicScope constraint must be a string: got {text!r}")
    for op, kind in (("==", "eq"), (">=", "geq"), ("<=", "leq")):
      pos = text.find(op)
      if pos >= 0:
        break
    else:
      raise ValueError("Constraint parsing error: must contain one of '==' or '>=' or '<='")
    left, right = text[:pos], text[pos + 2:]
    e1, = parse_dims(left, None, repr(left), self)
    e2, = parse_dims(right, None, repr(right), self)
    if kind == "leq":
      e1, e2, kind = e2, e1, "geq"
    diff = e1 - e2
    if not isinstance(diff, sp.DimExpr):
      if (kind == "eq" and diff != 0) or (kind == "geq" and diff < 0):
        raise ValueError(f"Unsatisfiable explicit constraint: {text}")
      return
    if kind == "eq":
      if not isinstance(e1, sp.DimExpr) or len(e1._terms) != 1:
        raise ValueError("Invalid equality constraint: {e1} == {e2}. "
                         "The left-hand-side must be of the form `term * coefficient`.")
      (t, k), = e1._terms
      if t in self._rules:
        raise NotImplementedError(
            f"Found multiple equality constraints with the same left-hand-side: {t}")
      self._rules[t] = (e2, k)
      self._implied_by_equality(t, k, e2)
    else:
      self._geq_constraints.append(diff)
      self._note_var_range(diff)
    self._constraints.append((kind, text, e1, e2, diff))
    self._bounds_cache.clear()

  def _implied_by_equality(self, t, k, e2):
    """What `k*t == e2` says besides the rewrite, when `t` is an operation: the operation's
    relations to its operands hold for `e2 / k` (so `max(a, b) == a` gives a >= b, and
    `floordiv(b, 4) == c` gives 4*c <= b <= 4*c + 3); `mod(x, q) == 0` also rewrites
    `q*floordiv(x, q)` to `x` (as JAX)."""
    if len(t.factors) != 1 or t.factors[0][1] != 1 or t.factors[0][0].var is not None:
      return
    f = t.factors[0][0]
    a, b = f.operands
    implied = []
    if f.operation in (sp.MAX, sp.MIN) and k > 0:
      implied = [e2 - k * a, e2 - k * b] if f.operation == sp.MAX else [k * a - e2, k * b - e2]
    elif f.operation == sp.FLOORDIV and not isinstance(b, sp.DimExpr) and b > 0 and k > 0:
      implied = [k * a - b * e2, b * e2 - k * (a - b + 1)]  # b*(e2/k) in [a - b + 1, a]
    elif f.operation == sp.MOD and not isinstance(b, sp.DimExpr) and b > 0 and k == 1:
      implied = [e2, b - 1 - e2]
      if isinstance(e2, int) and e2 == 0:
        fd = sp.DimExpr._from_operation(sp.FLOORDIV, a, b, self)
        if isinstance(fd, sp.DimExpr) and len(fd._terms) == 1:
          self._rules.setdefault(fd._terms[0][0], (a, b))
    for c in implied:
      if isinstance(c, sp.DimExpr):
        self._geq_constraints.append(c)
        self._note_var_range(c)
      elif c < 0:
        raise ValueError(f"Unsatisfiable explicit constraint: {t} * {k} == {e2}")

  def _note_var_range(self, diff):
    """A constraint k*v + c >= 0 on one variable narrows that variable's range."""
    if len(diff._terms) > 2:
      return
    c = 0
    var = k = None
    for t, tk in diff._terms:
      if t.is_constant:
        c = tk
      elif len(t.factors) == 1 and t.factors[0][1] == 1 and t.factors[0][0].var is not None:
        var, k = t.factors[0][0].var, tk
      else:
        return
    lo, hi = self._var_ranges.get(var, (1, INF))
    if k > 0:
      lo = max(lo, -(c // k))  # v >= ceil(-c / k)
    else:
      hi = min(hi, c // -k)  # v <= floor(c / -k)
    self._var_ranges[var] = (lo, hi)

  def _var_bounds(self, var):
    return self._var_ranges.get(var, (1, INF))

  def _check_same_scope(self, other, when="", self_descr=" ", other_descr="unknown"):
    if self is not other._scope:
      raise ValueError(
          f"Invalid mixing of symbolic scopes {when}.\nExpected {self_descr}scope {self}\n"
          f"and found for '{other}' ({other_descr}) scope {other._scope}\n"
          "See https://docs.jax.dev/en/latest/export/shape_poly.html#user-specified-symbolic-"
          "constraints.")
