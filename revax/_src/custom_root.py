"""custom_root: a root finder differentiated by the implicit function theorem, as in JAX.

`custom_root(f, guess, solve, tangent_solve)` returns `solve(f, guess)`, a root `x*` of `f`,
and differentiates it through the equation `f(x*, theta) = 0` instead of through the solver:
`dx* = -(df/dx)^-1 (df/dtheta) dtheta`, where `theta` are the values `f` closes over and the
inverse is applied by `tangent_solve(g, y)` on `g`, the linearization of `f` at `x*`. The
solver's operations are never differentiated (it may be a while loop). It is a custom_jvp
function of the hoisted constants of three traced jaxprs (f, solve, linearize-and-solve), so
it lives above lax, next to custom_jvp.
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core.eval import eval_jaxpr
from revax._src.custom_derivatives import custom_jvp
from revax._src.interpreters import ad
from revax._src.lax import unary
from revax._src.lax.control_flow import common
from revax._src.lax.control_flow.solves import check_tree

__all__ = ["custom_root"]


def _trace(fun, in_trees, avals):
  """`fun(*pytrees)` traced at the flat `avals`: (closed jaxpr with leading const inputs,
  consts, out tree)."""
  sizes = [t.num_leaves for t in in_trees]

  def call(flat):
    parts = common.split_list(flat, sizes[:-1])
    return fun(*(tree_util.tree_unflatten(t, p) for t, p in zip(in_trees, parts, strict=True)))

  jaxpr, consts, out_tree = common.trace_flat(call, avals)
  closed, consts = common.hoist(jaxpr, consts)
  return closed, consts, out_tree


def _run(closed, *args):
  return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
  """Solve `f(x) == 0` with `solve`, differentiating implicitly; as jax.lax.custom_root.

  Args:
    f: the function whose root is sought; its output has the structure of its input.
    initial_guess: a starting point (pytree of arrays).
    solve: `solve(f, initial_guess) -> root` (or `(root, aux)` with `has_aux`).
    tangent_solve: `tangent_solve(g, y) -> x` with `g(x) == y`, for `g` the linearization of
      `f` at the root (for scalars: `lambda g, y: y / g(1.0)`).
    has_aux: `solve` returns `(root, aux)`; aux gets zero derivatives.

  Returns:
    `solve(f, initial_guess)`, differentiable in the values `f` closes over.

  Example:
    >>> def newton(f, x):
    ...   for _ in range(8):
    ...     x = x - f(x) / revax.grad(f)(x)
    ...   return x
    >>> def sqrt(a):
    ...   return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))
    >>> sqrt(2.0)
    Array(1.4142135, dtype=float32, weak_type=True)
    >>> revax.grad(sqrt)(2.0)  # 1 / (2 sqrt(2)), without differentiating through the loop
    Array(0.35355338, dtype=float32, weak_type=True)
  """
  guess_leaves, tree = tree_util.tree_flatten(initial_guess)
  avals = [common.aval_of(x) for x in guess_leaves]
  f_jaxpr, f_consts, f_tree = _trace(f, [tree], avals)
  check_tree("f", "initial_guess", f_tree, tree)
  solve_jaxpr, solve_consts, solution_tree = _trace(lambda x: solve(f, x), [tree], avals)
  check_tree("solve", "initial_guess", solution_tree, tree, has_aux)

  def linearize_and_solve(x, b):
    f_jvp = _linearized(f, x)
    return tangent_solve(f_jvp, b)

  ls_jaxpr, ls_consts, ls_tree = _trace(linearize_and_solve, [tree, tree], avals + avals)
  check_tree("tangent_solve", "x", ls_tree, tree)
  n_f, n_s = len(f_consts), len(solve_consts)
  num_x = len(avals)

  @custom_jvp
  def root(*args):
    return _run(solve_jaxpr, *args[n_f:n_f + n_s], *args[n_f + n_s + len(ls_consts):])

  @root.defjvp
  def root_jvp(primals, tangents):
    fc, lsc = primals[:n_f], primals[n_f + n_s:n_f + n_s + len(ls_consts)]
    sol = root(*primals)
    solution, aux = list(sol[:num_x]), list(sol[num_x:])
    zeros = [ad.Zero(ad.tangent_aval(common.aval_of(s))) for s in solution]
    _, rhs = ad.jvp_flat(lambda *a: _run(f_jaxpr, *a), list(fc) + solution,
                         list(tangents[:n_f]) + zeros)
    rhs = [ad.instantiate_zeros(t) for t in rhs]
    sol_dot = [unary.neg(t) for t in _run(ls_jaxpr, *lsc, *solution, *rhs)]
    return sol, sol_dot + [ad.instantiate_zeros(ad.Zero.from_value(a)) for a in aux]

  out = root(*f_consts, *solve_consts, *ls_consts, *guess_leaves)
  return tree_util.tree_unflatten(solution_tree, out)


def _linearized(f, x):
  """The linear map `t -> df(x) t` (a pytree function), as jax.linearize's second result."""
  leaves, tree = tree_util.tree_flatten(x)
  out_store = {}

  def flat_f(*xs):
    outs, out_store["tree"] = tree_util.tree_flatten(f(tree_util.tree_unflatten(tree, xs)))
    return outs

  _, lin = ad.linearize_flat(flat_f, leaves)

  def f_jvp(t):
    outs = ad.eval_linearized(lin, tree_util.tree_leaves(t))
    return tree_util.tree_unflatten(out_store["tree"], outs)
  return f_jvp
