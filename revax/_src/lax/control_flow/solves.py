"""custom_linear_solve: a matrix-free linear solve differentiated implicitly, as in JAX.

`custom_linear_solve(matvec, b, solve, transpose_solve)` returns `solve(matvec, b)` (the `x`
with `matvec(x) == b`) while its derivatives come from the linear equation rather than from the
solver's own operations: the JVP solves `A x_dot = b_dot - (dA) x` with the same solver, and
the transpose (reverse mode) solves with `transpose_solve` on `vecmat`, the transpose of
`matvec` computed by autodiff. The solver can then be anything (an iterative while loop, a
factorization) and need not be differentiable.

`linear_solve_p` holds four closed jaxprs (matvec, vecmat, solve, transpose_solve; the last two
None-able pair is None without a transpose solver) whose constants are hoisted into leading
operands, counted per jaxpr by `const_lengths`. It evaluates and lowers as its `solve` jaxpr.
Batching finds, by fixpoint, which of b and x must be batched so the four jaxprs agree (as JAX).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from revax._src import tree_util
from revax._src.core.eval import eval_jaxpr
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir, transpose
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util
from revax._src.lax.control_flow import common

__all__ = ["custom_linear_solve", "linear_solve_p"]


class _LinearSolveTuple(NamedTuple):
  matvec: Any
  vecmat: Any
  solve: Any
  transpose_solve: Any

  def transpose(self):
    return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split(args, const_lengths):
  parts = common.split_list(args, list(const_lengths))
  return _LinearSolveTuple(*parts[:-1]), parts[-1]


def _flatten(groups):
  return [x for g in groups for x in g]


def check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
  """JAX's errors for a function whose output structure is not its input's (or (it, aux))."""
  if has_aux:
    children = tree_util.treedef_children(actual_tree)
    if len(children) != 2:
      raise ValueError(f"{func_name}() produced a pytree with structure {actual_tree}, but a "
                       "pytree tuple with auxiliary output was expected because has_aux was set "
                       "to True.")
    actual_tree = children[0]
  if actual_tree != expected_tree:
    raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, got "
                    f"{actual_tree} and {expected_tree}.")


def _shape_checked(fun, name, b_shapes, has_aux):
  def checked(x):
    out = fun(x)
    if has_aux and not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise ValueError(f"{name}() produced a value of type {type(out).__name__}, but a pytree "
                       "tuple with auxiliary output was expected because has_aux was set to "
                       "True.")
    y = out[0] if has_aux else out
    shapes = [np.shape(v) for v in tree_util.tree_leaves(y)]
    if shapes != b_shapes:
      raise ValueError(f"{name}() output shapes must match b, got {shapes} and {b_shapes}")
    return out
  return checked


def _trace(fun, in_tree, avals):
  """`fun(pytree) -> pytree` traced at `avals`: (closed jaxpr with consts as leading inputs,
  const values, output tree)."""
  jaxpr, consts, out_tree = common.trace_flat(
      lambda flat: fun(tree_util.tree_unflatten(in_tree, flat)), avals)
  closed, consts = common.hoist(jaxpr, consts)
  return closed, consts, out_tree


def _jaxpr_fun(closed, consts, in_tree, out_tree=None):
  """A pytree function evaluating `closed` on `consts` and the flattened argument."""
  def fun(x):
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *consts, *tree_util.tree_leaves(x))
    return tree_util.tree_unflatten(out_tree or in_tree, outs)
  return fun


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
  """Solve `matvec(x) == b` with `solve`, differentiating implicitly; as jax.lax.custom_linear_solve.

  Args:
    matvec: the linear function to invert (must be differentiable).
    b: the right-hand side, a pytree of arrays.
    solve: `solve(matvec, b) -> x` (or `(x, aux)` with `has_aux`); need not be differentiable.
    transpose_solve: `transpose_solve(vecmat, b) -> x` for the transposed map; needed by reverse
      mode unless `symmetric`.
    symmetric: the map is symmetric (`vecmat == matvec`); `solve` then also serves as
      `transpose_solve`.
    has_aux: `solve`/`transpose_solve` return `(x, aux)`.

  Returns:
    `solve(matvec, b)` (with its aux when `has_aux`).

  Example:
    >>> a = jnp.array([[2., 1.], [1., 3.]])
    >>> def solve(b):
    ...   return lax.custom_linear_solve(lambda v: a @ v, b,
    ...                                  lambda matvec, r: jnp.linalg.solve(a, r), symmetric=True)
    >>> solve(jnp.array([1., 2.]))
    Array([0.2, 0.6], dtype=float32)
    >>> revax.grad(lambda b: solve(b).sum())(jnp.array([1., 2.]))  # a^-T @ ones
    Array([0.4, 0.2], dtype=float32)
  """
  if transpose_solve is None and symmetric:
    transpose_solve = solve
  b_leaves, tree = tree_util.tree_flatten(b)
  avals = [common.aval_of(x) for x in b_leaves]
  b_shapes = [a.shape for a in avals]

  matvec_jaxpr, matvec_consts, out_tree = _trace(
      _shape_checked(matvec, "matvec", b_shapes, False), tree, avals)
  check_tree("matvec", "b", out_tree, tree)

  solve_jaxpr, solve_consts, solve_tree = _trace(
      _shape_checked(lambda x: solve(matvec, x), "solve", b_shapes, has_aux), tree, avals)
  check_tree("solve", "b", solve_tree, tree, has_aux)

  if transpose_solve is None:
    vecmat_jaxpr = tr_solve_jaxpr = None
    vecmat_consts = tr_solve_consts = []
  else:
    if symmetric:
      vecmat_jaxpr, vecmat_consts = matvec_jaxpr, matvec_consts
    else:
      n = len(matvec_consts)
      vecmat_jaxpr = transpose.transpose_jaxpr(matvec_jaxpr, [False] * n + [True] * len(avals))
      vecmat_consts = matvec_consts
    vecmat_fun = _jaxpr_fun(vecmat_jaxpr, vecmat_consts, tree)
    tr_solve_jaxpr, tr_solve_consts, tr_tree = _trace(
        _shape_checked(lambda x: transpose_solve(vecmat_fun, x), "transpose_solve", b_shapes,
                       has_aux), tree, avals)
    check_tree("transpose_solve", "b", tr_tree, tree, has_aux)

  all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_solve_consts]
  const_lengths = _LinearSolveTuple(*(len(c) for c in all_consts))
  jaxprs = _LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr)
  outs = linear_solve_p.bind(*_flatten(all_consts), *b_leaves, const_lengths=const_lengths,
                             jaxprs=jaxprs)
  return tree_util.tree_unflatten(solve_tree, outs)


def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
  params, b = _split(avals, const_lengths)
  common.check_operands("custom_linear_solve", "solve", jaxprs.solve.in_avals,
                        list(params.solve) + list(b))
  return list(jaxprs.solve.out_avals)


def _linear_solve_impl(*args, const_lengths, jaxprs):
  params, b = _split(args, const_lengths)
  outs = eval_jaxpr(jaxprs.solve.jaxpr, jaxprs.solve.consts, *params.solve, *b)
  return [common.as_array(o, a) for o, a in zip(outs, jaxprs.solve.out_avals, strict=True)]


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
  """x_dot = A^-1 (b_dot - dA x): one more solve with the same operator."""
  kw = dict(const_lengths=const_lengths, jaxprs=jaxprs)
  x = linear_solve_p.bind(*primals, **kw)
  params, _ = _split(primals, const_lengths)
  params_dot, b_dot = _split(tangents, const_lengths)
  num_x = len(b_dot)
  x_leaves = x[:num_x]
  if all(type(p) is ad.Zero for p in params_dot.matvec):
    rhs = b_dot
  else:
    zeros = [ad.Zero(ad.tangent_aval(common.aval_of(v))) for v in x_leaves]
    mv = jaxprs.matvec
    _, dA_x = ad.jvp_flat(lambda *a: eval_jaxpr(mv.jaxpr, mv.consts, *a),
                          list(params.matvec) + list(x_leaves), list(params_dot.matvec) + zeros)
    rhs = [ad.add_tangents(bd, _neg(t)) for bd, t in zip(b_dot, dA_x, strict=True)]
  rhs = [ad.instantiate_zeros(t) for t in rhs]
  x_dot = linear_solve_p.bind(*_flatten(params), *rhs, **kw)
  aux_dot = [ad.Zero(ad.tangent_aval(common.aval_of(a))) for a in x[num_x:]]
  return x, list(x_dot[:num_x]) + aux_dot


def _neg(t):
  from revax._src.lax import unary
  return t if type(t) is ad.Zero else unary.neg(t)


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
  if jaxprs.transpose_solve is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation of "
                    "custom_linear_solve")
  params, b = _split(args, const_lengths)
  if any(ad.is_undefined_primal(x) for x in _flatten(params)):
    raise NotImplementedError("custom_linear_solve is not linear in the values its matvec or "
                              "solvers close over")
  x_ct, aux_ct = cts[:len(b)], cts[len(b):]
  if any(type(c) is not ad.Zero for c in aux_ct):
    raise NotImplementedError("custom_linear_solve: cotangents of the solver's aux outputs")
  x_ct = [ad.instantiate_zeros(c) for c in x_ct]
  b_ct = linear_solve_p.bind(*_flatten(params.transpose()), *x_ct,
                             const_lengths=const_lengths.transpose(), jaxprs=jaxprs.transpose())
  return [None] * sum(const_lengths) + list(b_ct[:len(b)])


def _batch_or_none(closed, axis_size, in_batched, instantiate):
  if closed is None:
    return None, None
  return common.batch_jaxpr(closed, axis_size, tuple(in_batched), tuple(instantiate))


def _linear_solve_batch(axis_size, vals, dims, *, const_lengths, jaxprs):
  """Iterate to the fixpoint of which parts of b and x are batched: solve maps b to x,
  vecmat x to b, matvec x to b and transpose_solve x to b; all must agree."""
  batched = [d is not batching.not_mapped for d in dims]
  params_bat, b_bat0 = _split(batched, const_lengths)
  matvec, vecmat, solve, solve_t = jaxprs
  n_b, n_out = len(b_bat0), len(solve.out_avals)
  num_aux = n_out - n_b
  b_bat, x_bat = list(b_bat0), [False] * n_out
  for _ in range(2 + n_b + n_out):
    solve_b, solve_x_bat = _batch_or_none(solve, axis_size, params_bat.solve + b_bat, x_bat)
    if vecmat is None:
      vecmat_b, x_bat_out = None, list(solve_x_bat)
    else:
      vecmat_b, vecmat_x_bat = _batch_or_none(vecmat, axis_size, params_bat.vecmat + b_bat,
                                              b_bat)
      x_bat_out = [p or q for p, q in zip(list(vecmat_x_bat) + [True] * num_aux, solve_x_bat)]
    x_bat_noaux = x_bat_out[:n_b]
    matvec_b, matvec_b_bat = _batch_or_none(matvec, axis_size, params_bat.matvec + x_bat_noaux,
                                            b_bat)
    if solve_t is None:
      solve_t_b, b_bat_out = None, [p or q for p, q in zip(matvec_b_bat, b_bat0)]
    else:
      solve_t_b, solve_t_bat = _batch_or_none(solve_t, axis_size,
                                              params_bat.transpose_solve + x_bat_noaux, x_bat_out)
      b_bat_out = [m or s or o for m, s, o in zip(matvec_b_bat, solve_t_bat[:n_b], b_bat0)]
    if x_bat_out == x_bat and b_bat_out == b_bat:
      break
    x_bat, b_bat = x_bat_out, b_bat_out
  else:
    raise AssertionError("custom_linear_solve batching: no fixpoint")
  params, b = _split(vals, const_lengths)
  params_dims, b_dims = _split(dims, const_lengths)
  new_params = [common.bdim_to_front(x, d, axis_size, d is not batching.not_mapped)
                for x, d in zip(_flatten(params), _flatten(params_dims), strict=True)]
  new_b = [common.bdim_to_front(x, d, axis_size, now)
           for x, d, now in zip(b, b_dims, b_bat, strict=True)]
  outs = linear_solve_p.bind(*new_params, *new_b, const_lengths=const_lengths,
                             jaxprs=_LinearSolveTuple(matvec_b, vecmat_b, solve_b, solve_t_b))
  return outs, [0 if bt else batching.not_mapped for bt in solve_x_bat]


def _linear_solve_lower(ctx, *args, const_lengths, jaxprs):
  params, b = _split(args, const_lengths)
  return mlir.inline_closed_jaxpr(ctx.fb, jaxprs.solve, list(params.solve) + list(b))


linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
linear_solve_p.def_abstract_eval(_linear_solve_abstract_eval)
dispatch.custom_impls[linear_solve_p] = _linear_solve_impl
ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp
ad.primitive_transposes[linear_solve_p] = _linear_solve_transpose
batching.axis_size_batchers[linear_solve_p] = _linear_solve_batch
mlir.register_lowering(linear_solve_p, _linear_solve_lower)
inv.not_invertible(linear_solve_p, "no inverse rule registered (it would be matvec): the "
                                   "solver's outputs may include aux values matvec cannot rebuild")
