"""custom_vmap and sequential_vmap: functions that carry their own batching rule, as in JAX.

A call of a `custom_vmap` function traces it to a jaxpr and binds `custom_vmap_call`, a call
primitive that also holds the user's rule. It evaluates, lowers and differentiates (forward mode)
as its jaxpr; under vmap it calls the rule

    rule(axis_size, in_batched, *args) -> (out, out_batched)

on the arguments with their batch dimension moved to the front (`in_batched` says, per argument
leaf, whether it is batched) instead of batching the jaxpr. `out_batched` is a pytree of bools of
the output's structure; a batched output has its batch dimension at the front.

Forward mode: the JVP of `custom_vmap_call` is a `custom_vmap_call` of the jaxpr's JVP, whose
rule runs the user's rule under `jvp` on the primals and tangents batched alike, and vmaps that
over the ones batched only on one side (JAX's construction). Reverse mode is not supported, as
in JAX: linearizing needs the primal outputs apart from the tangents, which a call that takes
both cannot give (wrap the function in `custom_vjp` to differentiate it in reverse mode).

Values the function closes over become leading operands of the call; a batched one is an error
(the rule cannot see it).
"""
from __future__ import annotations

import operator

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.autodiff import jvp as api_jvp
from revax._src.core.avals import get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Primitive, current_trace, eval_trace
from revax._src.custom_derivatives import (_call_dce, _call_impl, _call_lower, _forward_attr,
                                            _resolve_args)
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.lax import batch_util, convenience, shapes
from revax._src.lax.control_flow import loops

__all__ = ["custom_vmap", "sequential_vmap", "custom_vmap_p"]


def _name(fun) -> str:
  return getattr(fun, "__name__", "<unnamed rule>")


class custom_vmap:  # noqa: N801 (JAX's name)
  """A function with a custom batching rule (as `jax.custom_batching.custom_vmap`).

  The function behaves as itself everywhere except under vmap, where the rule given with
  `def_vmap` computes the batched result. Reverse-mode differentiation is not supported (as in
  JAX); combine with `custom_vjp` (outside) for it.

  Example:
    >>> from revax.custom_batching import custom_vmap
    >>> @custom_vmap
    ... def f(x, y):
    ...   return x + y
    >>> @f.def_vmap
    ... def f_vmap_rule(axis_size, in_batched, xs, ys):
    ...   return xs * ys, True
    >>> revax.vmap(f)(jnp.arange(3), jnp.arange(1, 4))  # xs * ys, not xs + ys
    Array([0, 2, 6], dtype=int32)
  """

  def __init__(self, fun):
    wrapping.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule = None

  __getattr__ = _forward_attr

  def def_vmap(self, vmap_rule):
    """Set the rule `vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)`; returns it
    unchanged (so it works as a decorator)."""
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __call__(self, *args, **kwargs):
    name = _name(self.fun)
    try:
      args = _resolve_args(self.fun, args, kwargs)
    except TypeError as e:
      raise TypeError("The input arguments to the custom_vmap-decorated function "
                      f"{name} could not be resolved to positional-only arguments. Binding "
                      f"failed with the error:\n{e}") from e
    if not self.vmap_rule:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} using "
                           "def_vmap.")
    if current_trace() is eval_trace:
      return self.fun(*args)  # nothing is transformed: the rule cannot matter
    leaves, args_tree = tree_util.tree_flatten(args)
    store = {}

    def flat_fun(*xs):
      out = self.fun(*tree_util.tree_unflatten(args_tree, xs))
      out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
      return out_leaves

    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [get_aval(x) for x in leaves])
    call = ClosedJaxpr(staging.convert_constvars_jaxpr(jaxpr), [])
    in_tree = tree_util.tree_structure((list(consts), args))
    outs = custom_vmap_p.bind(*consts, *leaves, call=call, rule=_ClosedRule(self.vmap_rule),
                              in_tree=in_tree, out_tree=store["out_tree"])
    return tree_util.tree_unflatten(store["out_tree"], outs)


class _ClosedRule:
  """The user's rule as a rule of (consts, args): closed-over values must not be batched."""

  def __init__(self, rule):
    wrapping.update_wrapper(self, rule)
    self.rule = rule

  def __call__(self, axis_size, all_in_batched, consts, args):
    consts_batched, in_batched = all_in_batched
    if any(tree_util.tree_leaves(consts_batched)):
      raise ValueError(f"a custom_vmap function (rule {_name(self.rule)}) closes over a value "
                       "that is batched by vmap; its rule cannot see that value. Pass it to the "
                       "function as an argument instead.")
    return _call_rule(self.rule, axis_size, in_batched, args)


def _call_rule(rule, axis_size, in_batched, args):
  return rule(axis_size, list(in_batched), *args)


def _check_rule_trees(rule, original_out_tree, out_tree, out_batched_tree):
  """JAX's checks (and messages) on the structure of what a rule returns."""
  if out_tree != out_batched_tree:
    raise ValueError("structure of output value and output batching specification returned by "
                     f"custom vmap rule ({_name(rule)}) do not match.\n"
                     f"Output values: {out_tree}\nBatching spec: {out_batched_tree}")
  if out_tree != original_out_tree:
    raise ValueError(f"structure of output returned by custom vmap rule ({_name(rule)}) does not "
                     "match that of original custom-vmapped function.\n"
                     f"Original output: {original_out_tree}\nRule output: {out_tree}")


def _check_rule_outputs(rule, outs, batched, out_avals, axis_size):
  """Each output must have the function's type, with a leading batch axis where the rule says it
  is batched (JAX does not check, and returns wrong results where this fails)."""
  for i, (o, b, aval) in enumerate(zip(outs, batched, out_avals, strict=True)):
    got = get_aval(o)
    want = ((axis_size,) if b else ()) + tuple(aval.shape)
    if tuple(got.shape) != want or got.dtype != aval.dtype:
      raise ValueError(f"custom vmap rule ({_name(rule)}) returned output {i} of type "
                       f"{got.str_short()}, but the function returns {aval.str_short()} and "
                       f"the rule says it is {'' if b else 'not '}batched (over {axis_size} "
                       f"examples), so the rule must return {aval.update(shape=want).str_short()}")


# --- custom_vmap_call: the primitive block -------------------------------------------
def _custom_vmap_abstract_eval(*avals, call, **_):
  dispatch.check_arg_avals("custom_vmap_call", call.in_avals, avals)
  return call.out_avals


def _custom_vmap_impl(*args, call, **_):
  return _call_impl(*args, call_jaxpr=call)


def _custom_vmap_jvp(primals, tangents, *, call, rule, in_tree, out_tree):
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  jvp_call, _ = ad.jvp_jaxpr(call, (True,) * len(primals), True)
  outs = custom_vmap_p.bind(*primals, *tangents, call=jvp_call, rule=_JvpOfRule(rule, out_tree),
                            in_tree=_pair_tree(in_tree), out_tree=_pair_tree(out_tree))
  n = len(outs) // 2
  return outs[:n], outs[n:]


def _pair_tree(tree):
  """The structure of a pair (x, x) of values of structure `tree`."""
  x = tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
  return tree_util.tree_structure((x, x))


class _JvpOfRule:
  """The batching rule of a JVP call, from the rule of the call: the rule is run under `jvp` on
  primals and tangents batched alike, and that is vmapped over the values batched on one side
  only (a primal batched whose tangent is not, or the reverse)."""

  def __init__(self, rule, out_tree):
    self.rule, self.out_tree = rule, out_tree
    self.__name__ = f"jvp_of_rule({_name(rule)})"

  def __call__(self, axis_size, in_batched, primals, tangents):
    ps_batched, ts_batched = in_batched
    both = tree_util.tree_map(operator.and_, ps_batched, ts_batched)
    extra_ps = tree_util.tree_map(lambda p, t: p and not t, ps_batched, ts_batched)
    extra_ts = tree_util.tree_map(lambda p, t: t and not p, ps_batched, ts_batched)
    flat, tree = tree_util.tree_flatten((primals, tangents))
    extra = tree_util.tree_leaves((extra_ps, extra_ts))
    store = {}

    def to_jvp(*ps):
      out, out_batched = _call_rule(self.rule, axis_size, both, ps)
      _check_rule_trees(self.rule, self.out_tree, tree_util.tree_structure(out),
                        tree_util.tree_structure(out_batched))
      store["out_batched"] = out_batched
      return out

    def flat_jvp(*xs):
      ps, ts = tree_util.tree_unflatten(tree, xs)
      out_p, out_t = api_jvp(to_jvp, tuple(ps), tuple(ts))
      leaves, store["pair_tree"] = tree_util.tree_flatten((out_p, out_t))
      return leaves

    outs, dims = batching.batch_flat(flat_jvp, flat, [0 if e else None for e in extra], axis_size)
    outs = [x if d is None else batch_util.moveaxis(x, d, 0) for x, d in zip(outs, dims)]
    rule_batched = tree_util.tree_leaves(store["out_batched"])
    rule_batched = rule_batched + rule_batched  # the same for primal and tangent outputs
    # An output batched both by the rule (axis 1, inside the loop over examples) and by the vmap
    # over one-sided values (axis 0) holds out[i, j] for example i's one-sided values and example
    # j's others: its batch is the diagonal. (JAX keeps both axes, a wrong result.)
    outs = [_diagonal(x, axis_size) if d is not None and b else x
            for x, d, b in zip(outs, dims, rule_batched, strict=True)]
    batched = [d is not None or b for d, b in zip(dims, rule_batched, strict=True)]
    return (tree_util.tree_unflatten(store["pair_tree"], outs),
            tree_util.tree_unflatten(store["pair_tree"], batched))


def _diagonal(x, n):
  """x[i, i] for i < n, of an array x of shape (n, n, ...): a strided slice of the two axes
  merged into one."""
  rest = tuple(get_aval(x).shape[2:])
  flat = shapes.reshape(x, (n * n,) + rest)
  return convenience.slice_in_dim(flat, 0, n * n, n + 1, 0)


def _custom_vmap_batch(axis_size, vals, dims, *, call, rule, in_tree, out_tree):
  args = [x if d is None else batch_util.moveaxis(x, d, 0) for x, d in zip(vals, dims)]
  in_batched = tree_util.tree_unflatten(in_tree, [d is not None for d in dims])
  out, out_batched = _call_rule(rule, axis_size, in_batched,
                                tree_util.tree_unflatten(in_tree, args))
  outs, tree1 = tree_util.tree_flatten(out)
  flat_batched, tree2 = tree_util.tree_flatten(out_batched)
  _check_rule_trees(rule, out_tree, tree1, tree2)
  _check_rule_outputs(rule, outs, flat_batched, call.out_avals, axis_size)
  return outs, [0 if b else None for b in flat_batched]


def _custom_vmap_partial_eval(trace, args, params, unknowns):
  """Linearization (reverse mode) reaches a call whose tangent inputs are unknown: its primal
  outputs cannot be known apart from them. JAX's error."""
  raise ValueError("Linearization failed to produce known values for all output primals. This is "
                   "typically caused by attempting to differentiate a function uses an operation "
                   "that does not support reverse-mode autodiff.")


custom_vmap_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_p.def_abstract_eval(_custom_vmap_abstract_eval)
dispatch.custom_impls[custom_vmap_p] = _custom_vmap_impl
ad.primitive_jvps[custom_vmap_p] = _custom_vmap_jvp
batching.axis_size_batchers[custom_vmap_p] = _custom_vmap_batch
mlir.register_lowering(custom_vmap_p,
                       lambda ctx, *args, call, **_: _call_lower(ctx, *args, call_jaxpr=call))
staging.dce_rules[custom_vmap_p] = _call_dce
partial_eval.partial_eval_rules[custom_vmap_p] = _custom_vmap_partial_eval


# --- sequential_vmap ------------------------------------------------------------------------------
def sequential_vmap(f):
  """`custom_vmap(f)` whose batching rule calls `f` once per example, in a loop (`lax.map`):
  for functions that do not support a batch dimension (as `jax.custom_batching.sequential_vmap`).

  Example:
    >>> from revax.custom_batching import sequential_vmap
    >>> g = sequential_vmap(lambda x: x + 1)
    >>> revax.vmap(g)(jnp.arange(3))  # three calls of the function, in a loop
    Array([1, 2, 3], dtype=int32)
  """
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    del axis_size
    args = list(args)
    mapped = tree_util.tree_map(lambda b, x: x if b else None, in_batched, args)
    unmapped = tree_util.tree_map(lambda b, x: None if b else x, in_batched, args)

    def one(mapped_args):
      merged = tree_util.tree_map(lambda b, m, u: m if b else u, in_batched, mapped_args,
                                  unmapped)
      return f(*merged)

    out = loops.map(one, mapped)
    return out, tree_util.tree_map(lambda _: True, out)

  return f
