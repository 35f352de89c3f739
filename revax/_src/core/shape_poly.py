"""Symbolic dimension sizes (shape polymorphism), as JAX's `_DimExpr`.

A dimension expression is a sum of terms with integer coefficients; a term is a product of
factors raised to positive powers; a factor is a dimension variable (`b`) or an operation on
expressions (`floordiv(e1, e2)`, `mod(e1, e2)`, `max(e1, e2)`, `min(e1, e2)`). Expressions are
kept in a normal form (terms sorted in JAX's syntactic order, largest first, constant last), so
they print as JAX's do (`2*b + 3`, `b*c - 1`) and an expression that is a constant is a Python
int. Dimension variables are >= 1; a `SymbolicScope` holds user constraints (`b >= 4`,
`c <= 16`, `n == 2*k`: an equality rewrites its left-hand term wherever it appears).

Comparisons decide what bounds prove: `e1 >= e2` is True when a lower bound of `e1 - e2` is
>= 0, False when an upper bound is < 0, and otherwise raises `InconclusiveDimensionOperation`
with JAX's message. `==` is True only for expressions equal in normal form and False otherwise
(JAX's rule: it must not raise, since hashing uses it). Bounds come from interval arithmetic
over the terms (variables in [1, inf) narrowed by single-variable constraints; floordiv, mod,
max and min of bounded operands), narrowed by each operation's relation to its operands (JAX's
max/min rule, the ranges of floordiv and mod; two levels deep) and by each `>=` constraint used
as a whole. This is not JAX's constraint-combination engine: on rare nested expressions the two
decide or simplify differently (never contradicting; tests/export/test_shape_poly.py checks
decisions against concrete values and against jax on random expressions).

A symbolic size used as a value becomes the `dim_as_value` primitive (lax/dim_value.py fills
`dim_as_value_hook`: this layer cannot import lax).
"""
from __future__ import annotations

import math
import operator

from revax._src.core.errors import InconclusiveDimensionOperation as _CoreInconclusive

__all__ = ["DimExpr", "InconclusiveDimensionOperation", "is_symbolic_dim",
           "is_constant_dim", "max_dim", "min_dim", "evaluate_dim", "dim_vars",
           "UnexpectedDimVar", "symbolic_slice", "symbolic_reverse_slice"]

_HELP = ("""
This error arises for comparison operations with shapes that
are non-constant, and the result of the operation cannot be represented as
a boolean value for all values of the symbolic dimensions involved.

Please see https://docs.jax.dev/en/latest/export/shape_poly.html"""
         "#comparison-of-symbolic-dimensions-is-partially-supported\nfor more details.\n")


class InconclusiveDimensionOperation(_CoreInconclusive):
  """Raised when a computation with symbolic dimensions cannot be decided."""

  def __init__(self, message: str):
    super().__init__(f"{message}{_HELP}")


class UnexpectedDimVar(Exception):
  """A dimension variable with no value while evaluating an expression."""


FLOORDIV, MOD, MAX, MIN = "floordiv", "mod", "max", "min"


class _Factor:
  """A variable (`var`) or an `operation` on `operands` (expressions or ints)."""
  __slots__ = ("var", "operation", "operands", "key", "size")

  def __init__(self, var=None, operation=None, operands=()):
    self.var, self.operation, self.operands = var, operation, tuple(operands)
    if var is not None:
      self.size = 1
      self.key = (1, var)
    else:
      self.size = 1 + sum(_size(o) for o in self.operands)
      self.key = (self.size, operation, tuple(_key(o) for o in self.operands))

  def __eq__(self, other):
    return isinstance(other, _Factor) and self.key == other.key

  def __hash__(self):
    return hash(self.key)

  def __str__(self):
    if self.var is not None:
      return self.var
    return f"{self.operation}({', '.join(_operand_str(o) for o in self.operands)})"

  def vars(self) -> set:
    if self.var is not None:
      return {self.var}
    return set().union(*(dim_vars(o) for o in self.operands))

  def evaluate(self, env, scope):
    if self.var is not None:
      if self.var in env:
        return env[self.var]
      normal = DimExpr._from_var(self.var, scope)
      if not isinstance(normal, DimExpr) or normal._to_var() != self.var:
        return evaluate_dim(normal, env)  # an equality constraint rewrites the variable
      raise UnexpectedDimVar(
          f"Encountered dimension variable '{self.var}' that is not appearing in the shapes of "
          f"the function arguments.\nThe following dimension variables are appearing in the "
          f"shapes of the function arguments: {list(env)}.\nPlease see https://docs.jax.dev/en/"
          "latest/export/shape_poly.html#dimension-variables-must-be-solvable-from-the-input-"
          "shapes for more details.")
    a, b = (evaluate_dim(o, env) for o in self.operands)
    if self.operation == FLOORDIV:
      return a // b
    if self.operation == MOD:
      return a % b
    return max_dim(a, b) if self.operation == MAX else min_dim(a, b)


def _operand_str(o) -> str:
  """An operation's operand as JAX prints it: a negative constant as `- 2`."""
  return f"- {-o}" if not isinstance(o, DimExpr) and o < 0 else str(o)


class _Term:
  """A product of factors: a tuple of (factor, exponent >= 1), largest factor first."""
  __slots__ = ("factors", "key", "size")

  def __init__(self, factors):
    self.factors = tuple(factors)
    self.size = sum(1 + e * f.size for f, e in self.factors)
    self.key = (self.size, tuple((f.key, e) for f, e in self.factors))

  def __eq__(self, other):
    return isinstance(other, _Term) and self.key == other.key

  def __hash__(self):
    return hash(self.key)

  def __str__(self):
    parts = sorted(self.factors, key=lambda fe: (fe[0].key, fe[1]))
    return "*".join(f"{f}^{e}" if e != 1 else str(f) for f, e in parts)

  is_constant = property(lambda self: not self.factors)

  def mul(self, other: "_Term") -> "_Term":
    exps = dict(self.factors)
    for f, e in other.factors:
      exps[f] = exps.get(f, 0) + e
    return _Term(sorted(exps.items(), key=lambda fe: (fe[0].key, fe[1]), reverse=True))

  def divide(self, other: "_Term") -> "_Term":
    exps = dict(self.factors)
    for f, e in other.factors:
      exps[f] = exps.get(f, 0) - e
      if exps[f] < 0:
        raise InconclusiveDimensionOperation(f"Cannot divide {self} by {other}.")
    return _Term(sorted(((f, e) for f, e in exps.items() if e), key=lambda fe: (fe[0].key, fe[1]),
                        reverse=True))

  def evaluate(self, env, scope):
    out = 1
    for f, e in self.factors:
      v = f.evaluate(env, scope)
      for _ in range(e):
        out = out * v
    return out


_ONE = _Term(())


def _key(e):
  return e._key if isinstance(e, DimExpr) else (1 if e else 0, ((_ONE.key, e),) if e else ())


def _size(e):
  return e._size if isinstance(e, DimExpr) else (1 if e else 0)


def _sorted(coeffs: dict) -> tuple:
  return tuple(sorted(((t, k) for t, k in coeffs.items() if k),
                      key=lambda tk: (tk[0].key, tk[1]), reverse=True))


class _DimExpr:
  """A symbolic dimension size: integer arithmetic with ints and other expressions of the same
  `SymbolicScope`; comparisons decided by bounds (see the module docstring)."""
  __slots__ = ("_terms", "_scope", "_key", "_size", "_hash")
  __array_priority__ = 1000

  def __init__(self, terms, scope: "SymbolicScope"):
    self._terms = tuple(terms)
    self._scope = scope
    self._size = sum(1 + abs(k) * t.size for t, k in self._terms)
    self._key = (self._size, tuple((t.key, k) for t, k in self._terms))
    self._hash = None

  scope = property(lambda self: self._scope)

  # --- construction -------------------------------------------------------------------------
  @staticmethod
  def _normalize(coeffs: dict, scope: "SymbolicScope"):
    """The expression (or int) of {term: coefficient}, with the scope's equality rules."""
    coeffs = {t: k for t, k in coeffs.items() if k}
    rules = scope._rules
    if rules:
      for t, k in list(coeffs.items()):
        if t.is_constant:
          continue
        after, k_after = rules.get(t, (None, 0))
        if after is not None and k % k_after == 0:
          del coeffs[t]
          for t2, k2 in _terms_of(after):
            coeffs[t2] = coeffs.get(t2, 0) + k2 * (k // k_after)
          return DimExpr._normalize(coeffs, scope)
    terms = _sorted(coeffs)
    if not terms:
      return 0
    if terms[0][0].is_constant:
      return terms[0][1]
    return DimExpr(terms, scope)

  @staticmethod
  def _from_var(name: str, scope: "SymbolicScope"):
    return DimExpr._normalize({_Term(((_Factor(var=name), 1),)): 1}, scope)

  @staticmethod
  def _from_operation(op: str, a, b, scope: "SymbolicScope"):
    return DimExpr._normalize({_Term(((_Factor(operation=op, operands=(a, b)), 1),)): 1}, scope)

  def _to_var(self):
    if len(self._terms) == 1:
      (t, k), = self._terms
      if k == 1 and len(t.factors) == 1 and t.factors[0][1] == 1:
        return t.factors[0][0].var
    return None

  # --- printing, hashing, equality ----------------------------------------------------------
  def __str__(self):
    out = []
    for t, k in self._terms:
      sign = "+" if k > 0 else "-"
      if t.is_constant:
        out.append(f"{sign} {abs(k)}")
      elif abs(k) == 1:
        out.append(f"{sign} {t}")
      else:
        out.append(f"{sign} {abs(k)}*{t}")
    text = " ".join(out)
    return text[2:] if text.startswith("+ ") else text

  __repr__ = __str__

  def __hash__(self):
    if self._hash is None:
      self._hash = hash((self._key, id(self._scope)))
    return self._hash

  def __eq__(self, other):
    if isinstance(other, DimExpr):
      if other._scope is not self._scope:
        return False
    elif not _is_int(other):
      return False
    return not isinstance(self - other, DimExpr) and (self - other) == 0

  def __ne__(self, other):
    return not self.__eq__(other)

  # --- arithmetic ---------------------------------------------------------------------------
  def _combine(self, other, k_self, k_other):
    """k_self * self + k_other * other (JAX's "linear combination")."""
    if isinstance(other, DimExpr):
      self._scope._check_same_scope(other, "for linear combination")
    other = operator.index(other) if not isinstance(other, DimExpr) else other
    coeffs = dict(self._terms) if k_self == 1 else {t: k * k_self for t, k in self._terms}
    for t, k in _terms_of(other):
      coeffs[t] = coeffs.get(t, 0) + k * k_other
    return DimExpr._normalize(coeffs, self._scope)

  def __add__(self, other):
    if not _is_dim(other):
      return _as_value(self).__add__(other)
    return self._combine(other, 1, 1)

  def __radd__(self, other):
    if not _is_dim(other):
      return _as_value(self).__radd__(other)
    return self._combine(other, 1, 1)

  def __sub__(self, other):
    if not _is_dim(other):
      return _as_value(self).__sub__(other)
    return self._combine(other, 1, -1)

  def __rsub__(self, other):
    if not _is_dim(other):
      return _as_value(self).__rsub__(other)
    return self._combine(other, -1, 1)

  def __neg__(self):
    return self._combine(0, -1, 0)

  def __mul__(self, other):
    if not _is_dim(other):
      return _as_value(self).__mul__(other)
    other = _ensure(other, "mul", self._scope)
    coeffs: dict = {}
    for t1, k1 in self._terms:
      for t2, k2 in _terms_of(other):
        t = t1.mul(t2)
        coeffs[t] = coeffs.get(t, 0) + k1 * k2
    return DimExpr._normalize(coeffs, self._scope)

  __rmul__ = __mul__

  def __pow__(self, power, modulo=None):
    if modulo is not None:
      raise NotImplementedError("__pow__ modulo not implemented")
    if isinstance(power, DimExpr) or power != int(power):
      raise ValueError(f"Symbolic dimension cannot be raised to non-integer powers: "
                       f"'{self}' ** '{power}'")
    if power < 0:
      raise ValueError(f"Symbolic dimension cannot be raised to negative powers: "
                       f"'{self}' ** '{power}'")
    out = 1
    for _ in range(int(power)):
      out = self * out
    return out

  def __floordiv__(self, divisor):
    if not _is_dim(divisor):
      return _as_value(self).__floordiv__(divisor)
    return self._divmod(divisor)[0]

  def __rfloordiv__(self, other):
    if not _is_dim(other):
      return _as_value(self).__rfloordiv__(other)
    return _const(other, "floordiv", self._scope)._divmod(self)[0]

  def __mod__(self, divisor):
    if not _is_dim(divisor):
      return _as_value(self).__mod__(divisor)
    return self._divmod(divisor)[1]

  def __rmod__(self, other):
    if not _is_dim(other):
      return _as_value(self).__rmod__(other)
    return _const(other, "mod", self._scope)._divmod(self)[1]

  def __divmod__(self, divisor):
    return self._divmod(divisor)

  def __rdivmod__(self, other):
    return _const(other, "divmod", self._scope)._divmod(self)

  def __truediv__(self, other):
    return _as_value(self).__truediv__(other)

  def __rtruediv__(self, other):
    return _as_value(self).__rtruediv__(other)

  def _divmod(self, divisor):
    """Polynomial division (JAX's rule): exact where the division of every leading term is;
    otherwise floordiv(self, divisor) and mod(self, divisor) factors."""
    scope = self._scope
    if isinstance(divisor, DimExpr):
      scope._check_same_scope(divisor, "for operation divmod")
    try:
      dividend, quotient = self, 0
      while isinstance(dividend, DimExpr) and not dividend._terms[0][0].is_constant:
        t, k = dividend._terms[0]
        if isinstance(divisor, DimExpr):
          dt, dk = divisor._terms[0]
          qt = t.divide(dt)
        else:
          qt, dk = t, int(divisor)
        qk, rk = divmod(k, dk)
        if rk:
          raise InconclusiveDimensionOperation("")
        q = DimExpr._normalize({qt: qk}, scope)
        quotient = q + quotient
        dividend = dividend - q * divisor
      dividend = int(dividend)
      if isinstance(divisor, DimExpr):
        if dividend != 0:
          raise InconclusiveDimensionOperation("")
        return quotient, 0
      q, r = divmod(dividend, int(divisor))
      return quotient + q, r
    except InconclusiveDimensionOperation:
      return (DimExpr._from_operation(FLOORDIV, self, divisor, scope),
              DimExpr._from_operation(MOD, self, divisor, scope))

  def __int__(self):
    if self._terms[0][0].is_constant:
      return self._terms[0][1]
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension '{self}' used in a context that requires a constant")

  # --- comparisons --------------------------------------------------------------------------
  def __ge__(self, other):
    return _geq(self, other, lambda: f"'{self}' >= '{other}'")

  def __le__(self, other):
    return _geq(other, self, lambda: f"'{self}' <= '{other}'")

  def __gt__(self, other):
    return not _geq(other, self, lambda: f"'{self}' > '{other}'")

  def __lt__(self, other):
    return not _geq(self, other, lambda: f"'{self}' < '{other}'")

  def max(self, other):
    lb, ub = bounds(self - other)
    if lb >= 0:
      return self
    if ub <= 0:
      return other
    return DimExpr._from_operation(MAX, self, other, self._scope)

  def rmax(self, other):
    lb, ub = bounds(self - other)
    if lb >= 0:
      return self
    if ub <= 0:
      return other
    return DimExpr._from_operation(MAX, other, self, self._scope)

  def min(self, other):
    lb, ub = bounds(self - other)
    if lb >= 0:
      return other
    if ub <= 0:
      return self
    return DimExpr._from_operation(MIN, self, other, self._scope)

  def rmin(self, other):
    lb, ub = bounds(self - other)
    if lb >= 0:
      return other
    if ub <= 0:
      return self
    return DimExpr._from_operation(MIN, other, self, self._scope)

  def _get_vars(self) -> set:
    return dim_vars(self)

  get_vars = _get_vars

  def dimension_as_value(self):
    """This size as a traced int32 scalar (JAX's `dimension_as_value`)."""
    return _as_value(self)

  def __jax_array__(self):
    return _as_value(self)

  def __reduce__(self):
    raise TypeError("a symbolic dimension cannot be pickled (serialize the export instead)")

  def __copy__(self):
    return self  # immutable

  def __deepcopy__(self, memo):
    return self  # immutable, and its scope must stay shared


DimExpr = _DimExpr  # JAX's class is `_DimExpr`: Python's own messages name the type so


def _terms_of(e):
  if isinstance(e, DimExpr):
    return e._terms
  return ((_ONE, int(e)),) if e else ()


def _is_int(x) -> bool:
  try:
    operator.index(x)
    return True
  except TypeError:
    return False


def _is_dim(x) -> bool:
  return isinstance(x, DimExpr) or _is_int(x)


def _ensure(x, what, scope):
  if isinstance(x, DimExpr):
    scope._check_same_scope(x, f"for operation {what}")
    return x
  if _is_int(x):
    return operator.index(x)
  raise TypeError(f"Symbolic dimension {what} not supported for {x}.")


def _const(x, what, scope):
  """`x` as an expression of `scope`, an int kept as a constant expression (for r-ops)."""
  x = _ensure(x, what, scope)
  return x if isinstance(x, DimExpr) else DimExpr(((_ONE, x),), scope)


# A hook the lax layer fills: turn an expression into a traced int32 scalar.
dim_as_value_hook = None


def _as_value(e: DimExpr):
  if dim_as_value_hook is None:
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension '{e}' used in a context that requires a constant")
  return dim_as_value_hook(e)


# --- bounds and decisions ----------------------------------------------------------------------
_INF = math.inf


def _mul_bounds(a, b):
  def m(x, y):
    return 0 if x == 0 or y == 0 else x * y
  prods = [m(x, y) for x in a for y in b]
  return min(prods), max(prods)


def _floor_div_inf(a, b):
  """floor(a / b) where a or b may be infinite (the limit), b != 0."""
  if not math.isinf(b):
    if not math.isinf(a):
      return math.floor(a / b)
    return -_INF if (a >= 0) != (b >= 0) else _INF
  if not math.isinf(a):
    return -1 if (a >= 0) != (b >= 0) and a != 0 else 0
  return -_INF if (a >= 0) != (b >= 0) else _INF


def _factor_bounds(f: _Factor, scope) -> tuple:
  if f.var is not None:
    return scope._var_bounds(f.var)
  a, b = (bounds(o) for o in f.operands)
  if f.operation in (MAX, MIN):
    pick = max if f.operation == MAX else min
    return pick(a[0], b[0]), pick(a[1], b[1])
  if f.operation == MOD:
    if b[0] > 0:
      lo, hi = 0, b[1] - 1
      if a[0] >= 0:
        hi = min(hi, a[1])
      return lo, hi
    if b[1] < 0:
      return b[0] + 1, 0
    return -_INF, _INF
  # floordiv: the bounds are among those of the endpoints' quotients
  if b[0] <= 0 <= b[1]:
    raise InconclusiveDimensionOperation(
        f"Possible division by 0 in division by {f.operands[1]}")
  cands = [_floor_div_inf(x, y) for x in a for y in b]
  return min(cands), max(cands)


def _term_bounds(t: _Term, scope) -> tuple:
  out = (1, 1)
  for f, e in t.factors:
    fb = _factor_bounds(f, scope)
    for _ in range(e):
      out = _mul_bounds(out, fb)
  return out


def _plain_bounds(e) -> tuple:
  lo = hi = 0
  for t, k in e._terms:
    tb = _term_bounds(t, e._scope)
    a, b = (k * tb[0], k * tb[1]) if k > 0 else (k * tb[1], k * tb[0])
    lo, hi = lo + a, hi + b
  return lo, hi


def _ceil_div(x, q):
  return x if math.isinf(x) else -(-x // q)


def _floor_div(x, q):
  return x if math.isinf(x) else x // q


def _relational_bounds(e, lo, hi, depth):
  """Narrow (lo, hi) using what each operation factor of `e` is known to be relative to its
  operands: k*max(a, b) + r is max(k*a + r, k*b + r) for k > 0 (JAX's rule; likewise min and
  negative k); q*floordiv(a, q) lies in [a - q + 1, a] for a constant q > 0; mod(a, d) <= d - 1
  for a positive d, and <= a for a >= 0."""
  scope = e._scope
  for t, k in e._terms:
    if len(t.factors) != 1 or t.factors[0][1] != 1 or t.factors[0][0].var is not None:
      continue
    f = t.factors[0][0]
    rest = e - DimExpr._normalize({t: k}, scope)
    a, b = f.operands
    if f.operation in (MAX, MIN):
      (l1, u1), (l2, u2) = bounds(rest + k * a, depth - 1), bounds(rest + k * b, depth - 1)
      if (k > 0) == (f.operation == MAX):
        lo, hi = max(lo, max(l1, l2)), min(hi, max(u1, u2))
      else:
        lo, hi = max(lo, min(l1, l2)), min(hi, min(u1, u2))
    elif f.operation == FLOORDIV and not isinstance(b, DimExpr) and b > 0:
      low_end, high_end = a - b + 1, a  # of b * floordiv(a, b)
      if k < 0:
        low_end, high_end = high_end, low_end
      lo = max(lo, _ceil_div(bounds(b * rest + k * low_end, depth - 1)[0], b))
      hi = min(hi, _floor_div(bounds(b * rest + k * high_end, depth - 1)[1], b))
    elif f.operation == MOD:
      uppers = []
      if bounds(b, depth - 1)[0] > 0:
        uppers.append(b - 1)
      if bounds(a, depth - 1)[0] >= 0:
        uppers.append(a)
      for u in uppers:
        if k > 0:
          hi = min(hi, bounds(rest + k * u, depth - 1)[1])
        else:
          lo = max(lo, bounds(rest + k * u, depth - 1)[0])
  return lo, hi


def bounds(e, depth: int = 2) -> tuple:
  """(lower, upper) bounds of an expression (ints or +-inf): interval arithmetic over the
  variables' ranges, narrowed by the operation factors' relations to their operands (to
  `depth` levels) and by the scope's `>=` constraints."""
  if not isinstance(e, DimExpr):
    return int(e), int(e)
  key = (e, depth)
  cache = e._scope._bounds_cache
  if key in cache:
    return cache[key]
  cache[key] = (-_INF, _INF)  # while computing: a constraint may lead back here
  lo, hi = _plain_bounds(e)
  if depth > 0 and lo < hi:
    lo, hi = _relational_bounds(e, lo, hi, depth)
  for c in e._scope._geq_constraints:  # c >= 0, so e >= e - c and e <= e + c
    d = e - c
    lo = max(lo, d if not isinstance(d, DimExpr) else _plain_bounds(d)[0])
    s = e + c
    hi = min(hi, s if not isinstance(s, DimExpr) else _plain_bounds(s)[1])
  cache[key] = (lo, hi)
  return lo, hi


def _geq(e1, e2, describe) -> bool:
  if isinstance(e1, DimExpr):
    scope = e1._scope
    if isinstance(e2, DimExpr):
      scope._check_same_scope(e2, f"when comparing {describe()}")
  elif isinstance(e2, DimExpr):
    scope = e2._scope
  else:
    return int(e1) >= int(e2)
  lo, hi = bounds(e1 - e2)
  if lo >= 0:
    return True
  if hi < 0:
    return False
  where = f"\nUsing symbolic scope {scope}" if scope._constraints else ""
  raise InconclusiveDimensionOperation(
      f"Symbolic dimension comparison {describe()} is inconclusive.{where}")


# --- helpers used across the layers -----------------------------------------------------------
def is_symbolic_dim(d) -> bool:
  """Whether `d` is a symbolic dimension (as opposed to an integer).

  Example:
    >>> b, = revax.export.symbolic_shape("b")
    >>> revax.export.is_symbolic_dim(b), revax.export.is_symbolic_dim(3)
    (True, False)
  """
  return isinstance(d, DimExpr)


def is_constant_dim(d) -> bool:
  return not isinstance(d, DimExpr) and _is_int(d)


def is_symbolic_shape(shape) -> bool:
  return any(type(d) is DimExpr for d in shape)


def max_dim(a, b):
  """max(a, b) for constant or symbolic sizes."""
  if isinstance(a, DimExpr):
    return a.max(b)
  if isinstance(b, DimExpr):
    return b.rmax(a)
  return max(a, b)


def min_dim(a, b):
  """min(a, b) for constant or symbolic sizes."""
  if isinstance(a, DimExpr):
    return a.min(b)
  if isinstance(b, DimExpr):
    return b.rmin(a)
  return min(a, b)


def evaluate_dim(e, env: dict):
  """The value of `e` with the dimension variables bound by `env` (name -> int)."""
  if not isinstance(e, DimExpr):
    return operator.index(e)
  out = 0
  for t, k in e._terms:
    out = out + k * t.evaluate(env, e._scope)
  return out


def dim_vars(e) -> set:
  """The names of the dimension variables in `e`."""
  if not isinstance(e, DimExpr):
    return set()
  return set().union(*(f.vars() for t, _ in e._terms for f, _ in t.factors))


def canonical_dim(d):
  """A dimension size as a Python int, or unchanged when it is symbolic; TypeError otherwise."""
  return d if type(d) is DimExpr else operator.index(d)


def symbolic_reverse_slice(s: slice, d) -> tuple:
  """(first, step, size) of the slice `s` with a negative step along a dimension of symbolic
  size `d`: the elements first, first + step, ... (`size` of them), computed as JAX's
  `canonicalize_slice` computes them (so the size prints as jax's, e.g. `min(b - 1, 3)`).

  Raises:
    InconclusiveDimensionOperation: a symbolic start or stop whose sign is not known."""
  step = operator.index(s.step)
  assert step < 0

  def clamp(p):
    p = canonical_dim(p)
    return min_dim(d - 1, p) if p >= 0 else max_dim(-1, d + p)
  first = d - 1 if s.start is None else clamp(s.start)
  stop = -1 if s.stop is None else clamp(s.stop)
  size = max_dim(0, first - stop - step - 1) // -step
  return first, step, size


def symbolic_slice(s: slice, d) -> tuple:
  """(start, limit, stride, reversed) of the basic slice `s` along a dimension of symbolic size
  `d`, with start and stop clamped to [0, d] as Python's slices are: reverse the dimension
  first when `reversed`, then take [start:limit:stride]. A negative step is supported over the
  whole dimension (`x[::-k]` is `rev(x)[::k]`: the elements d-1, d-1-k, ...)."""
  step = 1 if s.step is None else operator.index(s.step)
  if step == 0:
    raise ValueError("slice step cannot be zero")
  if step < 0:
    if s.start is not None or s.stop is not None:
      raise NotImplementedError(  # (callers take these with symbolic_reverse_slice)
          f"slicing a dimension of symbolic size '{d}' with a negative step and a start or "
          "stop: use symbolic_reverse_slice")
    return 0, d, -step, True

  def clamp(p, default, which):
    if p is None:
      return default
    p = canonical_dim(p)
    try:  # (JAX's _preprocess_slice: the sign of a bound must be decided)
      nonnegative = p >= 0
    except InconclusiveDimensionOperation as e:  # (JAX's core class: no second help text)
      raise _CoreInconclusive(
          f"In slice with non-constant elements the {which} ({p}) must be resolved "
          f"statically if it is >= 0.\nDetails: {e}") from None
    return min_dim(d, p) if nonnegative else max_dim(0, d + p)
  lo = clamp(s.start, 0, "start")
  hi = clamp(s.stop, d, "stop")
  return lo, max_dim(hi, lo), step, False
