"""Shape polymorphism for `revax.export`: symbolic argument specs, solving the dimension
variables from concrete argument shapes (with JAX's shape-assertion errors), and specialising a
shape-polymorphic program to concrete shapes.

revax lowers to StableHLO with static shapes only. An export with symbolic dimensions therefore
keeps its traced program (a closed jaxpr whose avals and parameters hold `DimExpr`s); a call at
concrete shapes first solves the dimension variables from the arguments' shapes and checks the
constraints JAX's shape assertions check (raising JAX's ValueErrors), then re-binds every
equation with its parameters evaluated at those sizes (re-running abstract evaluation, so the
specialised program is checked again) and lowers and compiles that, once per set of sizes.
"""
from __future__ import annotations

import re

from revax._src import tree_util
from revax._src.core import shape_poly as sp
from revax._src.core.avals import ShapedArray
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from revax._src.core.shape_poly_parse import parse_dims
from revax._src.core.shape_poly_scope import SymbolicScope
from revax._src.interpreters import staging
from revax._src.shape_dtype_struct import ShapeDtypeStruct, abstractify

__all__ = ["symbolic_shape", "symbolic_args_specs", "DisabledSafetyCheck", "solve_dim_vars",
           "specialize", "is_poly_avals", "scope_of"]

_SEE = ("Please see https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors "
        "for more details.")


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None) -> tuple:
  """A shape with symbolic dimensions from its string form, as JAX's.

  Args:
    shape_spec: e.g. `"b, 2*b, 3"` (parentheses optional); dimension expressions use integers,
      variables, `+`, `-`, `*`, `^` (integer powers), `floordiv(e1, e2)`, `mod(e1, e2)`,
      `max(e1, e2)`, `min(e1, e2)`; `_` and `...` take sizes from `like`. None means "...".
    constraints: strings `e1 >= e2`, `e1 <= e2` or `e1 == e2` on the dimension variables.
    scope: the `SymbolicScope` to create the expressions in (not with `constraints`).
    like: a shape that fills the placeholders.

  Returns:
    A tuple of ints and symbolic dimensions.

  Example:
    >>> revax.export.symbolic_shape("b, 2*b + 1, 4")
    (b, 2*b + 1, 4)
  """
  spec_repr = repr(shape_spec)
  if shape_spec is None:
    shape_spec = "..."
  elif not isinstance(shape_spec, str):
    raise ValueError(f"polymorphic shape spec should be None or a string. Found {spec_repr}.")
  if scope is None:
    scope = SymbolicScope(constraints)
  elif constraints:
    raise ValueError("Cannot specify both a `scope` and `constraints`.")
  return parse_dims(shape_spec, like, spec_repr, scope)


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
  """`ShapeDtypeStruct`s for `export` with the shapes of `args` made symbolic, as JAX's.

  Args:
    args: a pytree of arrays or `ShapeDtypeStruct`s (their structure and dtypes, and the sizes
      that placeholders take).
    shapes_specs: None (static shapes), one shape string for every argument, or a pytree
      prefix of `args` with a string (or None) per subtree.
    constraints, scope: as for `symbolic_shape`.

  Returns:
    A pytree like `args` of `ShapeDtypeStruct`s.

  Example:
    >>> specs = revax.export.symbolic_args_specs((jnp.zeros((2, 3)),), "b, ...")
    >>> specs[0].shape
    (b, 3)
  """
  leaves, treedef = tree_util.tree_flatten(args)
  specs = shapes_specs
  if isinstance(args, tuple) and isinstance(specs, list):
    specs = tuple(specs)
  is_spec = lambda x: x is None or isinstance(x, str)  # noqa: E731
  try:
    full = tree_util.tree_broadcast(specs, args, is_leaf=is_spec)
  except ValueError as e:
    raise ValueError(f"export.symbolic_args_specs shapes_specs must be a tree prefix of the "
                     f"arguments: {e}") from None
  flat_specs = tree_util.tree_leaves(full, is_leaf=is_spec)
  if scope is None:
    scope = SymbolicScope(constraints)
  elif constraints:
    raise ValueError("Cannot use both `scope` and `constraints`")
  out = []
  for x, spec in zip(leaves, flat_specs, strict=True):
    aval = abstractify(x) if not isinstance(x, ShapeDtypeStruct) else x
    out.append(ShapeDtypeStruct(symbolic_shape(spec, like=aval.shape, scope=scope), aval.dtype))
  return tree_util.tree_unflatten(treedef, out)


class DisabledSafetyCheck:
  """A safety check to skip on (de)serialization, as JAX's (revax's exports for the CPU run
  only where they were made and emit no custom calls, so the checks have nothing to do)."""

  @classmethod
  def platform(cls) -> "DisabledSafetyCheck":
    """Allows the compilation platform to differ from the export platform."""
    return DisabledSafetyCheck("platform")

  @classmethod
  def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
    """Allows the serialization of the call target `target_name`."""
    return DisabledSafetyCheck(f"custom_call:{target_name}")

  def is_custom_call(self) -> str | None:
    """The custom call target this directive allows, or None."""
    m = re.match(r"custom_call:(.+)$", self._impl)
    return m.group(1) if m else None

  def __init__(self, _impl: str):
    self._impl = _impl

  def __str__(self):
    return self._impl

  __repr__ = __str__

  def __eq__(self, other):
    return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

  def __hash__(self):
    return hash(self._impl)


# --- avals ------------------------------------------------------------------------------------
def is_poly_avals(avals) -> bool:
  return any(sp.is_symbolic_shape(a.shape) for a in avals)


def scope_of(avals, in_tree=None, fun_name=None):
  """The one SymbolicScope of the symbolic dimensions in `avals` (JAX's ValueError for several,
  naming the arguments when `in_tree` is given)."""
  scope = first = None
  for i, a in enumerate(avals):
    for d in a.shape:
      if sp.is_symbolic_dim(d):
        if scope is None:
          scope, first = d.scope, i
        elif in_tree is not None:
          scope._check_same_scope(
              d, when=f"when exporting {fun_name}",
              self_descr=f"current (from {arg_name(in_tree, first)}) ",
              other_descr=arg_name(in_tree, i))
        else:
          scope._check_same_scope(d)
  return scope


def shape_str(shape) -> str:
  """A shape as JAX writes it in messages: `(b, 3)`."""
  return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def arg_name(in_tree, i: int, dim: int | None = None) -> str:
  """`args[0]`, `args[1]['w']`, `kwargs['x']` (with `.shape[d]`), as JAX names them."""
  paths = tree_util.tree_flatten_with_path(tree_util.tree_unflatten(
      in_tree, [0] * in_tree.num_leaves))[0]
  path = paths[i][0]
  head = "args" if path[0].idx == 0 else "kwargs"
  out = head + tree_util.keystr(path[1:])
  return out if dim is None else f"{out}.shape[{dim}]"


# --- solving dimension variables at a call -----------------------------------------------------
def check_call_avals(exp_avals, avals, in_tree) -> None:
  """JAX's checks of a call's ranks, dtypes and constant dimensions."""
  for i, (want, got) in enumerate(zip(exp_avals, avals, strict=True)):
    if len(want.shape) != len(got.shape):
      raise ValueError(f"Rank mismatch for {arg_name(in_tree, i)}: expected "
                       f"{shape_str(want.shape)} and called with {shape_str(got.shape)}")
    if want.dtype != got.dtype:
      raise ValueError(f"Dtype mismatch for {arg_name(in_tree, i)}: expected {want.dtype} and "
                       f"called with {got.dtype}")
    for d, w in enumerate(want.shape):
      if not sp.is_symbolic_dim(w) and (sp.is_symbolic_dim(got.shape[d]) or w != got.shape[d]):
        raise ValueError(f"Shape mismatch for {arg_name(in_tree, i, d)} (expected "
                         f"same constant): expected {shape_str(want.shape)} and called with "
                         f"{shape_str(got.shape)}")


def solve_dim_vars(exp_avals, avals, in_tree) -> dict:
  """The values of the dimension variables given the actual argument avals (concrete, or
  symbolic when the call is traced inside another shape-polymorphic export: then the values
  are expressions of the caller's variables and, as in JAX, every check must be decided).

  Solves the linear univariate equations `k*v + known = size` in turn, as JAX does, checks
  each variable is >= 1, each remaining dimension is consistent and each constraint of the
  scope holds; raises JAX's ValueError messages otherwise.
  """
  env, failures = _solve(exp_avals, avals, in_tree)
  if failures:
    raise ValueError(failures[0])
  return env


def check_solvable(exp_avals, in_tree) -> None:
  """Raise JAX's ValueError at export time when some dimension variable cannot be solved from
  the argument shapes (whether it can does not depend on the sizes)."""
  _solve(exp_avals, [ShapedArray((10 ** 6,) * len(a.shape), a.dtype) for a in exp_avals],
         in_tree)


def _solve(exp_avals, avals, in_tree):
  """(values of the dimension variables, messages of the failed assertions in JAX's order)."""
  eqns, specs = [], []
  for i, (want, got) in enumerate(zip(exp_avals, avals, strict=True)):
    if not sp.is_symbolic_shape(want.shape):
      continue
    specs.append(f"{arg_name(in_tree, i)}.shape = {shape_str(want.shape)}")
    for d, w in enumerate(want.shape):
      if sp.is_symbolic_dim(w):
        eqns.append((w, arg_name(in_tree, i, d), got.shape[d]))
  specs_msg = (" Using the following polymorphic shapes specifications: " + ",".join(specs)
               + ".")
  env: dict = {}
  solved_msg = [" Obtained dimension variables: "]
  failures = []  # as JAX: all equations are solved first, then the assertions checked in order

  def fail(head):
    failures.append(head + specs_msg + "".join(solved_msg) + ". " + _SEE)

  pending = eqns
  while pending:
    left = []
    for expr, name, size in pending:
      if not _process(expr, name, size, env, solved_msg, fail):
        left.append((expr, name, size))
    if len(left) == len(pending):
      unsolved = set().union(*(sp.dim_vars(e) for e, _, _ in left)) - set(env)
      raise ValueError(
          f"Cannot solve for values of dimension variables {unsolved}. We can only solve "
          f"linear uni-variate constraints.{specs_msg} Unprocessed specifications: "
          + ", ".join(f"'{e}' for dimension size {n}" for e, n, _ in left)
          + ". Please see https://docs.jax.dev/en/latest/export/shape_poly.html#dimension-"
          "variables-must-be-solvable-from-the-input-shapes for more details.")
    pending = left
  scope = scope_of(exp_avals)
  for kind, text, _, _, diff in (scope._constraints if scope is not None else ()):
    value = sp.evaluate_dim(diff, env)
    if not _holds(lambda: value == 0 if kind == "eq" else value >= 0):
      fail(f"Input shapes do not match the symbolic shape constraint {text}. Expected '{diff}' "
           f"to be {'greater or equal' if kind == 'geq' else 'equal'} to 0, but found {value}. ")
  return env, failures


def _process(expr, name, size, env, solved_msg, fail) -> bool:
  """Use `expr == size` to solve one variable, or check it when all are known."""
  var = var_k = None
  rest = 0
  for t, k in expr._terms:
    try:
      rest += k * t.evaluate(env, expr.scope)
    except sp.UnexpectedDimVar:
      if var is None and len(t.factors) == 1 and t.factors[0][1] == 1 \
         and t.factors[0][0].var is not None:
        var, var_k = t.factors[0][0].var, k
        continue
      return False
  if var is None:
    if not _holds(lambda: rest == size):
      fail(f"Input shapes do not match the polymorphic shapes specification. Found "
           f"inconsistency between dimension size {name} (= {size}) and the specification "
           f"'{expr}' (= {rest}).")
    return True
  value, remainder = divmod(size - rest, var_k)
  if not _holds(lambda: remainder == 0):
    fail(f"Input shapes do not match the polymorphic shapes specification. Division had "
         f"remainder {remainder} when computing the value of '{var}'.")
  env[var] = value
  solved_msg.append(f"'{var}' = {value} from specification '{expr}' for dimension {name} "
                    f"(= {size}), ")
  if not _holds(lambda: value >= 1):
    fail(f"Input shapes do not match the polymorphic shapes specification. Expected value >= 1 "
         f"for dimension variable '{var}'.")
  return True


def _holds(check) -> bool:
  """Whether a shape check is decided true (an undecidable one fails, as in JAX)."""
  try:
    return bool(check())
  except sp.InconclusiveDimensionOperation:
    return False


# --- specialising a program to concrete sizes --------------------------------------------------
def concrete_aval(aval, env):
  if not sp.is_symbolic_shape(aval.shape):
    return aval
  return ShapedArray(tuple(sp.evaluate_dim(d, env) for d in aval.shape), aval.dtype,
                     aval.weak_type)


def specialize(closed: ClosedJaxpr, env: dict) -> ClosedJaxpr:
  """`closed` with every symbolic size evaluated at `env`, re-traced (and so re-checked)."""
  jaxpr = closed.jaxpr
  in_avals = [concrete_aval(v.aval, env) for v in jaxpr.invars]

  def run(*args):
    return _eval_specialized(jaxpr, closed.consts, args, env)

  new, consts = staging.trace_to_jaxpr(run, in_avals)
  return ClosedJaxpr(new, list(consts)) if not isinstance(new, ClosedJaxpr) else new


def _eval_specialized(jaxpr: Jaxpr, consts, args, env):
  values = dict(zip(jaxpr.constvars, consts, strict=True))
  values.update(zip(jaxpr.invars, args, strict=True))

  def read(a):
    return a.val if type(a) is Literal else values[a]

  for eqn in jaxpr.eqns:
    params = {k: _subst(v, env) for k, v in eqn.params.items()}
    outs = eqn.primitive.bind(*map(read, eqn.invars), **params)
    if not eqn.primitive.multiple_results:
      outs = (outs,)
    values.update(zip(eqn.outvars, outs, strict=True))
  return [read(v) for v in jaxpr.outvars]


def _subst(v, env):
  if type(v) is sp.DimExpr:
    return sp.evaluate_dim(v, env)
  if type(v) in (tuple, list):
    return type(v)(_subst(x, env) for x in v)
  if isinstance(v, tuple) and hasattr(v, "_fields"):  # a NamedTuple (dimension numbers)
    return type(v)(*(_subst(x, env) for x in v))
  if isinstance(v, ClosedJaxpr):
    return specialize(v, env) if _jaxpr_is_poly(v.jaxpr) else v
  if isinstance(v, Jaxpr):
    if not _jaxpr_is_poly(v):
      return v
    out = specialize(ClosedJaxpr(v, []), env)
    if out.consts:
      raise NotImplementedError("specialising a shape-polymorphic open jaxpr parameter that "
                                "gains constants")
    return out.jaxpr
  if isinstance(v, ShapedArray):
    return concrete_aval(v, env)
  return v


def check_dim_vars_known(closed: ClosedJaxpr, in_avals) -> None:
  """Raise JAX's UnexpectedDimVar when the program uses a dimension variable that no argument
  shape determines (e.g. a symbolic size passed as a static argument)."""
  known = set().union(*(sp.dim_vars(d) for a in in_avals for d in a.shape))
  used = _vars_in_jaxpr(closed.jaxpr)
  for var in sorted(used - known):
    raise sp.UnexpectedDimVar(
        f"Encountered dimension variable '{var}' that is not appearing in the shapes of the "
        f"function arguments.\nThe following dimension variables are appearing in the shapes "
        f"of the function arguments: {sorted(known)}.\nPlease see https://docs.jax.dev/en/"
        "latest/export/shape_poly.html#dimension-variables-must-be-solvable-from-the-input-"
        "shapes for more details.")


def _vars_in_jaxpr(jaxpr: Jaxpr) -> set:
  out: set = set()

  def of_aval(a):
    for d in getattr(a, "shape", ()):
      out.update(sp.dim_vars(d))

  def of_param(p):
    if type(p) is sp.DimExpr:
      out.update(sp.dim_vars(p))
    elif isinstance(p, (tuple, list)):
      for x in p:
        of_param(x)
    elif isinstance(p, ClosedJaxpr):
      out.update(_vars_in_jaxpr(p.jaxpr))
    elif isinstance(p, Jaxpr):
      out.update(_vars_in_jaxpr(p))
    elif isinstance(p, ShapedArray):
      of_aval(p)

  for v in list(jaxpr.invars) + list(jaxpr.constvars):
    of_aval(v.aval)
  for e in jaxpr.eqns:
    for v in e.outvars:
      of_aval(v.aval)
    for p in e.params.values():
      of_param(p)
  return out


def _jaxpr_is_poly(jaxpr: Jaxpr) -> bool:
  vs = list(jaxpr.invars) + list(jaxpr.outvars) + list(jaxpr.constvars)
  vs += [o for e in jaxpr.eqns for o in e.outvars]
  return any(hasattr(v, "aval") and sp.is_symbolic_shape(getattr(v.aval, "shape", ()))
             for v in vs) or any(_has_dim(p) for e in jaxpr.eqns for p in e.params.values())


def _has_dim(p) -> bool:
  if type(p) is sp.DimExpr:
    return True
  if isinstance(p, (tuple, list)):
    return any(_has_dim(x) for x in p)
  if isinstance(p, ClosedJaxpr):
    return _jaxpr_is_poly(p.jaxpr)
  if isinstance(p, Jaxpr):
    return _jaxpr_is_poly(p)
  return False
