"""linear_call: a call of a linear function with a custom transpose (as
jax.custom_derivatives.linear_call).

`linear_call(fun, fun_transpose, residual_args, linear_args)` is `fun(residual_args,
linear_args)`, where `fun` is linear in `linear_args`; under transposition (reverse mode,
`linear_transpose`) it becomes `fun_transpose(residual_args, cotangents)`, itself a linear call
whose transpose is `fun` again. It is the `linear_call` primitive holding `fun`'s jaxpr (its
constants as leading operands, then the residuals, then the linear operands) and a thunk that
traces `fun_transpose` the first time a transposition needs it. Its JVP is the same call on the
tangents of the linear operands (residuals are not differentiated: differentiating with respect
to them is an error). As in JAX, it has no batching rule.
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, dispatch, mlir, staging

__all__ = ["linear_call", "linear_call_p"]


def _trace(fun, trees, avals):
  """`fun(*pytrees)` traced over flat `avals`: (closed jaxpr whose leading inputs are its
  constants, the constants, the output tree)."""
  sizes = [t.num_leaves for t in trees]
  store = {}

  def flat_fun(*xs):
    parts, start = [], 0
    for tree, n in zip(trees, sizes, strict=True):
      parts.append(tree_util.tree_unflatten(tree, xs[start:start + n]))
      start += n
    leaves, store["out_tree"] = tree_util.tree_flatten(fun(*parts))
    return leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, list(avals))
  return ClosedJaxpr(staging.convert_constvars_jaxpr(jaxpr), []), list(consts), store["out_tree"]


class _TransposeThunk:
  """Traces `fun_transpose(residuals, cotangents)` once, on first use; returns (closed jaxpr,
  its constants). Hashed by identity, as a primitive's params must be."""

  def __init__(self, fun_transpose, res_tree, out_tree, res_avals, out_avals, lin_tree):
    self._args = (fun_transpose, res_tree, out_tree, res_avals, out_avals, lin_tree)
    self._value = None

  def __call__(self):
    if self._value is None:
      fun_transpose, res_tree, out_tree, res_avals, out_avals, lin_tree = self._args
      closed, consts, t_out_tree = _trace(fun_transpose, (res_tree, out_tree),
                                          list(res_avals) + list(out_avals))
      if t_out_tree != lin_tree:
        raise TypeError("transpose output pytree structure must match that of linear inputs, "
                        f"got output structure {t_out_tree} and input structure {lin_tree}.")
      self._value = (closed, consts)
    return self._value


class _KnownThunk:
  """The transpose of a transposed call: the original callee and its constants."""

  def __init__(self, callee, consts):
    self._value = (callee, list(consts))

  def __call__(self):
    return self._value


def linear_call(fun, fun_transpose, residual_args, linear_args):
  """Call a linear function, with a custom implementation for its transpose.

  Args:
    fun: `fun(residual_args, linear_args) -> out`, linear in `linear_args`.
    fun_transpose: `fun_transpose(residual_args, out_cotangents) -> linear_args cotangents`,
      linear in its second argument (the transpose of `fun`).
    residual_args: the pytree `fun` need not be linear in (not transposed, not differentiated).
    linear_args: the pytree `fun` is linear in.

  Returns:
    `fun(residual_args, linear_args)`.

  Example:
    >>> from revax.custom_derivatives import linear_call
    >>> div_add = lambda x, d: x + linear_call(lambda r, x: x / r, lambda r, t: 2 * t / r, d, x)
    >>> revax.grad(div_add)(9.0, 3.0)  # 1 + the custom transpose (2 / 3)
    Array(1.6666666, dtype=float32, weak_type=True)
  """
  res, res_tree = tree_util.tree_flatten(residual_args)
  lin, lin_tree = tree_util.tree_flatten(linear_args)
  res_avals = [get_aval(x) for x in res]
  callee, consts, out_tree = _trace(fun, (res_tree, lin_tree),
                                    res_avals + [get_aval(x) for x in lin])
  thunk = _TransposeThunk(fun_transpose, res_tree, out_tree, res_avals, callee.out_avals,
                          lin_tree)
  outs = linear_call_p.bind(*consts, *res, *lin, callee=callee, transpose_thunk=thunk,
                            num_callee_consts=len(consts), num_res=len(res))
  return tree_util.tree_unflatten(out_tree, outs)


# --- linear_call: the primitive block -------------------------------------------------------------
def _linear_call_abstract_eval(*avals, callee, **_):
  dispatch.check_arg_avals("linear_call", callee.in_avals, avals)
  return callee.out_avals


def _linear_call_impl(*args, callee, **_):
  return eval_jaxpr(callee.jaxpr, callee.consts, *args)


def _linear_call_jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts, num_res):
  k = num_callee_consts + num_res
  if any(type(t) is not ad.Zero for t in tangents[:k]):
    raise TypeError("linear_call is not differentiable with respect to its residual arguments "
                    "(or the values its function closes over): pass them as linear arguments, "
                    "or stop their gradient")
  params = dict(callee=callee, transpose_thunk=transpose_thunk,
                num_callee_consts=num_callee_consts, num_res=num_res)
  outs = linear_call_p.bind(*primals, **params)
  if all(type(t) is ad.Zero for t in tangents[k:]):
    return outs, [ad.Zero(ad.tangent_aval(a)) for a in callee.out_avals]
  lin_tangents = [ad.instantiate_zeros(t) for t in tangents[k:]]
  return outs, linear_call_p.bind(*primals[:k], *lin_tangents, **params)


def _linear_call_transpose(cts, *args, callee, transpose_thunk, num_callee_consts, num_res):
  transpose, t_consts = transpose_thunk()
  f_consts = args[:num_callee_consts]
  res = args[num_callee_consts:num_callee_consts + num_res]
  if any(ad.is_undefined_primal(x) for x in args[:num_callee_consts + num_res]):
    raise TypeError("linear_call cannot be transposed with respect to its residual arguments")
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  cts_out = linear_call_p.bind(*t_consts, *res, *cts, callee=transpose,
                               transpose_thunk=_KnownThunk(callee, f_consts),
                               num_callee_consts=len(t_consts), num_res=num_res)
  return [None] * (num_callee_consts + num_res) + list(cts_out)


linear_call_p = Primitive("linear_call", multiple_results=True)
linear_call_p.def_abstract_eval(_linear_call_abstract_eval)
dispatch.custom_impls[linear_call_p] = _linear_call_impl
ad.primitive_jvps[linear_call_p] = _linear_call_jvp
ad.primitive_transposes[linear_call_p] = _linear_call_transpose
mlir.register_lowering(linear_call_p, lambda ctx, *args, callee, **_: mlir.inline_closed_jaxpr(
    ctx.fb, callee, args))
staging.dce_rules[linear_call_p] = lambda eqn, used: (
    ([False] * len(eqn.invars), None) if not any(used) else ([True] * len(eqn.invars), eqn))
