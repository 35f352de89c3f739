"""custom_jvp and custom_vjp: functions that carry their own derivative rules.

A call of a decorated function outside any transformation just runs the function. Inside one,
the function is traced to a jaxpr and bound as a call primitive that also holds the user's rule:

- `custom_jvp_call` evaluates, lowers and batches as its jaxpr; its JVP calls the user's `jvp`
  rule instead of differentiating the jaxpr. Reverse mode follows, since linearization is the JVP
  under partial evaluation: the rule's tangent computation is staged and transposed like any.
- `custom_vjp_call` evaluates as its jaxpr too; its JVP runs the user's `fwd` for the primal
  outputs and residuals and emits `custom_lin`, a linear primitive of the input tangents whose
  transpose calls the user's `bwd` on the residuals and the output cotangents. `custom_lin` has
  no forward evaluation: forward-mode differentiation of a custom_vjp function is an error, as
  in JAX.

Under vmap the jaxpr is batched, and the rules are wrapped so that they run batched too (a rule
is an ordinary Python function of arrays, so it is run under a batching trace). Values a custom
function closes over become explicit operands; differentiating with respect to one of them is
an error (the rule says nothing about them), as in JAX.
"""
from __future__ import annotations

import inspect

from revax._src.core import wrapping
from revax._src import custom_vjp_refs
from revax._src.custom_derivatives_helpers import CustomVJPPrimal
from revax._src import tree_util
from revax._src.core import dtypes, vma
from revax._src.core.avals import AbstractRef, get_aval, same_type
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, pp_leading_params, pp_param_rules
from revax._src.core.trace import (ConcreteValueError, Primitive, Tracer,
                                   current_trace, eval_trace, set_current_trace,
                                   to_concrete_value)
from revax._src.interpreters import ad, batching, discharge, dispatch, mlir, staging
from revax._src.lax import batch_util, reductions


# --- shared helpers --------------------------------------------------------------------------------
def _resolve_args(fun, args, kwargs):
  """Keyword arguments as positional ones (custom rules see positional arguments only)."""
  if not kwargs:
    return tuple(args)
  try:
    bound = inspect.signature(fun).bind(*args, **kwargs)
  except TypeError as e:
    raise TypeError(f"custom derivative function {_name(fun)} called with arguments it does not "
                    f"accept: {e}") from None
  bound.apply_defaults()
  if bound.kwargs:
    raise TypeError(f"keyword-only arguments {sorted(bound.kwargs)} of {_name(fun)} are not "
                    "supported by custom derivatives; pass them positionally")
  return tuple(bound.args)


def _name(fun) -> str:
  return getattr(fun, "__name__", repr(fun))


def _split_nondiff(args, nondiff_argnums):
  n = len(args)
  for i in nondiff_argnums:
    if not -n <= i < n:
      raise ValueError(f"nondiff_argnums {nondiff_argnums} out of range for {n} arguments")
  nondiff = sorted({i % n for i in nondiff_argnums})
  diff = [a for i, a in enumerate(args) if i not in nondiff]
  return nondiff, diff


def _merge(args, nondiff, diff):
  it = iter(diff)
  return tuple(args[i] if i in nondiff else next(it) for i in range(len(args)))


def _trace_call(fun, args, nondiff, check_refs=False):
  """Trace `fun(*args)` over its differentiable arguments' leaves. Returns (closed jaxpr with
  consts as leading inputs, consts, leaves, in_tree, out_tree). `check_refs`: a custom_vjp
  function, which may not return a ref."""
  _, diff = _split_nondiff(args, nondiff)
  leaves, in_tree = tree_util.tree_flatten(tuple(diff))
  store = {}

  def flat_fun(*xs):
    out = fun(*_merge(args, nondiff, tree_util.tree_unflatten(in_tree, xs)))
    if check_refs:
      custom_vjp_refs.check_returned_refs(fun, out, "primal")
    out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
    for x in out_leaves:
      get_aval(x)
    return out_leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [get_aval(x) for x in leaves])
  closed = ClosedJaxpr(staging.convert_constvars_jaxpr(jaxpr), [])
  return closed, consts, leaves, in_tree, store["out_tree"]


def _check_closed_over(tangents, num_consts, kind):
  if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
    raise TypeError(
        f"Detected differentiation of a {kind} function with respect to a closed-over value. "
        f"That isn't supported because the custom {'JVP' if kind == 'custom_jvp' else 'VJP'} "
        "rule only specifies how to differentiate the function with respect to explicit input "
        f"parameters. Try passing the closed-over value into the {kind} function as an "
        "argument, and adapting the rule.")


def _call_abstract_eval(name):
  def rule(*avals, call_jaxpr, **_):
    dispatch.check_arg_avals(name, call_jaxpr.in_avals, avals)
    return call_jaxpr.out_avals
  return rule


def _call_impl(*args, call_jaxpr, **_):
  return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _call_lower(ctx, *args, call_jaxpr, **_):
  return mlir.inline_closed_jaxpr(ctx.fb, call_jaxpr, args)


def _call_dce(eqn, used_outputs):
  """An unused call goes; a used one stays whole (its rule was written for all its outputs)."""
  if not any(used_outputs):
    return [False] * len(eqn.invars), None
  return [True] * len(eqn.invars), eqn


def _at_dim(x, dim, want, axis_size):
  """`x` (batch dim `dim`, or None) with its batch dim at `want` (broadcast if it has none)."""
  if want is None:
    if dim is not None:
      raise ValueError("a custom rule returned a batched value where the function's own output "
                       "is not batched")
    return x
  return batch_util.bdim_at(x, dim, want, axis_size)


def _sum_out_batch(x, dim):
  """A per-example cotangent of an unbatched input: summed over the batch."""
  return x if dim is None else reductions.reduce_sum(x, (dim,))


def _forward_attr(self, name):
  """Attributes a custom function lacks come from the function it wraps (as in JAX), so that
  stacked decorators compose: `custom_vjp(custom_vmap(f)).def_vmap(...)` reaches custom_vmap."""
  if name == "fun":
    raise AttributeError(name)
  return getattr(self.fun, name)


# --- custom_jvp ----------------------------------------------------------------------------------
class custom_jvp:  # noqa: N801 (JAX's name)
  """A function with a custom JVP rule (as `jax.custom_jvp`).

  Example:
    >>> @revax.custom_jvp
    ... def log1pexp(x):
    ...   return revax.numpy.log(1. + revax.numpy.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...   x, = primals
    ...   x_dot, = tangents
    ...   return log1pexp(x), x_dot * (1. - 1. / (1. + revax.numpy.exp(x)))
  """

  def __init__(self, fun, nondiff_argnums=()):
    if not callable(fun):
      raise TypeError(f"custom_jvp expects a callable, got {fun!r}")
    wrapping.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.jvp = None
    self.symbolic_zeros = False

  __getattr__ = _forward_attr

  def defjvp(self, jvp, symbolic_zeros: bool = False):
    """Set the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`."""
    if not callable(jvp):
      raise TypeError(f"defjvp expects a callable rule, got {jvp!r}")
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps):
    """One rule per argument: `jvp_i(tangent_i, primal_out, *primals) -> its contribution`
    (None for an argument without one)."""
    if self.nondiff_argnums:
      raise TypeError("defjvps is not supported with nondiff_argnums; use defjvp")

    def jvp(primals, tangents):
      if len(jvps) != len(primals):
        raise ValueError(f"defjvps for custom_jvp function {_name(self.fun)} got {len(jvps)} "
                         f"rules, but the function was called with {len(primals)} arguments: "
                         "give one rule (or None) per argument")
      primal_out = self(*primals)
      total = None
      for rule, t in zip(jvps, tangents, strict=True):
        if rule is None:
          continue
        term = rule(t, primal_out, *primals)
        total = term if total is None else tree_util.tree_map(lambda a, b: a + b, total, term)
      if total is None:
        total = tree_util.tree_map(lambda o: ad.instantiate_zeros(ad.Zero.from_value(o)),
                                   primal_out)
      return primal_out, total
    self.defjvp(jvp)

  def __call__(self, *args, **kwargs):
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {_name(self.fun)} using "
                           "defjvp.")
    args = _resolve_args(self.fun, args, kwargs)
    if current_trace() is eval_trace:
      return self.fun(*args)  # nothing is transformed: the rule cannot matter
    nondiff, _ = _split_nondiff(args, self.nondiff_argnums)
    try:
      closed, consts, leaves, in_tree, out_tree = _trace_call(self.fun, args, nondiff)
    except ConcreteValueError as err:
      # the function reads its arguments' values (Python control flow): outside jit, under
      # jvp/grad, they are known, and JAX runs the rule on them without tracing the function
      return _eager_custom_call(self, args, nondiff, _eager_jvp, err)
    rule = _JvpRule(self, args, nondiff, in_tree, out_tree, closed.out_avals)
    outs = custom_jvp_call_p.bind(*consts, *leaves, call_jaxpr=closed, jvp=rule,
                                  num_consts=len(consts))
    return tree_util.tree_unflatten(out_tree, outs)


class _JvpRule:
  """The user's JVP rule as a function of flat leaves (hashed by identity, as params must be)."""

  def __init__(self, owner: custom_jvp, args, nondiff, in_tree, out_tree, out_avals):
    self.owner, self.args, self.nondiff = owner, args, nondiff
    self.in_tree, self.out_tree, self.out_avals = in_tree, out_tree, out_avals

  def __call__(self, primals, tangents):
    """(primal leaves, tangent leaves with symbolic Zeros) -> (primal outs, tangent outs)."""
    owner = self.owner
    if not owner.symbolic_zeros:
      tangents = [ad.instantiate_zeros(t) for t in tangents]
    p_tree = tree_util.tree_unflatten(self.in_tree, primals)
    t_tree = tree_util.tree_unflatten(self.in_tree, tangents)
    nondiff_args = [self.args[i] for i in self.nondiff]
    out = owner.jvp(*nondiff_args, tuple(p_tree), tuple(t_tree))
    name = _name(owner.jvp)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"Custom JVP rule {name} for function {_name(owner.fun)} must produce a pair "
                      f"(list or tuple of length two) representing primal and tangent outputs, "
                      f"but got {out!r}.")
    p_out, t_out = out
    p_leaves, p_tree_out = tree_util.tree_flatten(p_out)
    t_leaves, t_tree_out = tree_util.tree_flatten(t_out)
    if p_tree_out != self.out_tree:
      raise TypeError(f"Custom JVP rule {name} must produce a primal output with the same "
                      f"container (pytree) structure as the custom_jvp function "
                      f"{_name(owner.fun)}, but got {p_tree_out} and {self.out_tree}.")
    if t_tree_out != p_tree_out:
      raise TypeError(f"Custom JVP rule {name} must produce primal and tangent outputs with equal "
                      f"container (pytree) structures, but got {p_tree_out} and {t_tree_out} "
                      "respectively.")
    outs, tangent_outs = [], []
    for p, t, expected in zip(p_leaves, t_leaves, self.out_avals, strict=True):
      pa = get_aval(p)
      if not same_type(pa, expected):
        raise TypeError(f"Custom JVP rule {name} must produce primal outputs of the types the "
                        f"custom_jvp function returns: got {pa.str_short()}, expected "
                        f"{expected.str_short()}.")
      # a rule may return a symbolic zero tangent (SymbolicZero), as in JAX
      zero = isinstance(t, ad.Zero)
      ta, want = (t.aval if zero else get_aval(t)), ad.tangent_aval(pa)
      if ta.shape != pa.shape or (ta.dtype != want.dtype and want.dtype != dtypes.float0):
        raise TypeError(f"Custom JVP rule {name} must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes: the primal output has type "
                        f"{pa.str_short()}, so its tangent must have type {want.str_short()}, "
                        f"but got {ta.str_short()}.")
      outs.append(p)
      tangent_outs.append(ad.Zero(want) if zero or want.dtype == dtypes.float0 else t)
    return outs, tangent_outs


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
  _check_closed_over(tangents, num_consts, "custom_jvp")
  return jvp(list(primals[num_consts:]), list(tangents[num_consts:]))


class _BatchedJvpRule:
  """A JVP rule run on batched primals and tangents (tangents batched where their primals are),
  returning outputs batched where the batched call puts them."""

  def __init__(self, rule, dims, out_dims, axis_size, num_consts):
    self.rule, self.dims, self.out_dims = rule, dims, out_dims
    self.axis_size, self.num_consts = axis_size, num_consts
    self.out_avals = rule.out_avals

  def __call__(self, primals, tangents):
    dims = self.dims[self.num_consts:]
    nonzero = [type(t) is not ad.Zero for t in tangents]
    n = len(primals)

    def flat_rule(*xs):
      it = iter(xs[n:])
      ts = [next(it) if nz else _unbatched_zero(t, d)
            for t, nz, d in zip(tangents, nonzero, dims, strict=True)]
      outs, t_outs = self.rule(list(xs[:n]), ts)
      return list(outs) + [ad.instantiate_zeros(t) for t in t_outs]

    args = list(primals) + [t for t, nz in zip(tangents, nonzero) if nz]
    in_dims = list(dims) + [d for d, nz in zip(dims, nonzero) if nz]
    outs, out_dims = batching.batch_flat(flat_rule, args, in_dims, self.axis_size)
    k = len(self.out_dims)
    primal_outs = [_at_dim(o, d, w, self.axis_size)
                   for o, d, w in zip(outs[:k], out_dims[:k], self.out_dims, strict=True)]
    tangent_outs = []
    for o, d, w, p in zip(outs[k:], out_dims[k:], self.out_dims, primal_outs, strict=True):
      ta = ad.tangent_aval(get_aval(p))
      tangent_outs.append(ad.Zero(ta) if ta.dtype == dtypes.float0 else
                          _at_dim(o, d, w, self.axis_size))
    return primal_outs, tangent_outs


def _unbatched_zero(t: ad.Zero, dim):
  """A symbolic zero tangent of a batched primal: the rule sees the per-example type."""
  if dim is None:
    return t
  shape = t.aval.shape[:dim] + t.aval.shape[dim + 1:]
  return ad.Zero(t.aval.update(shape=shape))


def _custom_jvp_call_batch(axis_size, vals, dims, *, call_jaxpr, jvp, num_consts):
  batched, out_dims = batching.batch_jaxpr(call_jaxpr, dims, axis_size)
  rule = _BatchedJvpRule(jvp, tuple(dims), out_dims, axis_size, num_consts)
  outs = custom_jvp_call_p.bind(*vals, call_jaxpr=batched, jvp=rule, num_consts=num_consts)
  return outs, list(out_dims)


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_abstract_eval(_call_abstract_eval("custom_jvp_call"))
dispatch.custom_impls[custom_jvp_call_p] = _call_impl
ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp
batching.axis_size_batchers[custom_jvp_call_p] = _custom_jvp_call_batch
mlir.register_lowering(custom_jvp_call_p, _call_lower)
staging.dce_rules[custom_jvp_call_p] = _call_dce


def _owner(rule):
  """The custom_jvp/custom_vjp function a call's rule belongs to (through batched rules)."""
  while not hasattr(rule, "owner") and hasattr(rule, "rule"):
    rule = rule.rule
  return getattr(rule, "owner", None)


def _printed(params: dict, key: str, *rules) -> dict:
  """A custom call's params as JAX prints them: the function's and its rules' names, no
  num_consts when 0, and whether the rules take symbolic zeros."""
  owner = _owner(params[key])
  if owner is None:
    return params
  out = {"name": _name(owner.fun), "call_jaxpr": params["call_jaxpr"],
         "symbolic_zeros": owner.symbolic_zeros}
  out.update((r, _name(getattr(owner, r))) for r in rules)
  if params["num_consts"]:
    out["num_consts"] = params["num_consts"]
  return out


pp_param_rules[custom_jvp_call_p] = lambda params: _printed(params, "jvp", "jvp")
pp_leading_params[custom_jvp_call_p] = ("name",)


# --- custom_vjp ----------------------------------------------------------------------------------
class custom_vjp:  # noqa: N801 (JAX's name)
  """A function with a custom VJP rule (as `jax.custom_vjp`).

  Example:
    >>> @revax.custom_vjp
    ... def clip_gradient(x):
    ...   return x
    >>> clip_gradient.defvjp(lambda x: (x, None),
    ...                      lambda _, g: (revax.numpy.clip(g, -1.0, 1.0),))
  """

  def __init__(self, fun, nondiff_argnums=()):
    if not callable(fun):
      raise TypeError(f"custom_vjp expects a callable, got {fun!r}")
    wrapping.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.fwd = self.bwd = None
    self.symbolic_zeros = False

  __getattr__ = _forward_attr

  def defvjp(self, fwd, bwd, symbolic_zeros: bool = False):
    """Set `fwd(*args) -> (out, residuals)` and `bwd(*nondiff_args, residuals, out_cotangent)
    -> tuple of one cotangent per differentiable argument` (None for a zero cotangent).

    With `symbolic_zeros`, as in JAX, fwd receives each differentiable argument leaf as a
    `CustomVJPPrimal(value, perturbed)` (perturbed: whether it is differentiated), and bwd
    receives output cotangents known to be zero as `SymbolicZero`s (and may return them)."""
    if not callable(fwd) or not callable(bwd):
      raise TypeError("defvjp expects two callables, fwd and bwd")
    self.fwd, self.bwd = fwd, bwd
    self.symbolic_zeros = bool(symbolic_zeros)

  def __call__(self, *args, **kwargs):
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {_name(self.fun)} using "
                           "defvjp.")
    args = _resolve_args(self.fun, args, kwargs)
    refs = AbstractRef.any_made  # (no ref type was ever made: none to check for)
    if refs:
      diff = _split_nondiff(args, self.nondiff_argnums)[1]
      leaves = tree_util.tree_leaves(diff)
      if any(map(custom_vjp_refs.is_ref_leaf, leaves)):
        # (as jax: under differentiation the fwd rule runs in place of the function, and is
        # named)
        perturbed = any(isinstance(x, ad.JVPTracer) and type(x.tangent) is not ad.Zero
                        for x in leaves)
        custom_vjp_refs.check_aliased_refs(self.fun, diff, self.fwd if perturbed else None)
    if current_trace() is eval_trace:
      out = self.fun(*args)
      if refs:
        custom_vjp_refs.check_returned_refs(self.fun, out, "primal")
      return out
    nondiff, _ = _split_nondiff(args, self.nondiff_argnums)
    try:
      closed, consts, leaves, in_tree, out_tree = _trace_call(self.fun, args, nondiff,
                                                              check_refs=True)
    except ConcreteValueError as err:  # see custom_jvp.__call__
      return _eager_custom_call(self, args, nondiff, _eager_vjp, err)
    rule = _VjpRule(self, args, nondiff, in_tree, out_tree, closed.out_avals,
                    [get_aval(x) for x in leaves])
    outs = custom_vjp_call_p.bind(*consts, *leaves, call_jaxpr=closed, rule=rule,
                                  num_consts=len(consts))
    return tree_util.tree_unflatten(out_tree, outs)


class _VjpRule:
  """The user's fwd and bwd as functions of flat leaves."""

  def __init__(self, owner: custom_vjp, args, nondiff, in_tree, out_tree, out_avals, in_avals):
    self.owner, self.args, self.nondiff = owner, args, nondiff
    self.in_tree, self.out_tree = in_tree, out_tree
    self.out_avals, self.in_avals = out_avals, in_avals
    self.res_tree = None

  @property
  def symbolic_zeros(self) -> bool:
    return self.owner.symbolic_zeros

  def fwd(self, arg_leaves, perturbed=None):
    """Argument leaves -> (output leaves, residual leaves). With symbolic zeros, fwd sees each
    leaf as CustomVJPPrimal(value, perturbed)."""
    owner = self.owner
    if owner.symbolic_zeros:
      perturbed = [True] * len(arg_leaves) if perturbed is None else perturbed
      arg_leaves = [CustomVJPPrimal(x, bool(p)) for x, p in zip(arg_leaves, perturbed,
                                                                 strict=True)]
    diff = tree_util.tree_unflatten(self.in_tree, arg_leaves)
    out = owner.fwd(*_merge(self.args, self.nondiff, diff))
    name = _name(owner.fwd)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"Custom VJP fwd rule {name} for function {_name(owner.fun)} must produce "
                      f"a pair (list or tuple of length two) where the first element represents "
                      f"the primal output and the second element represents residuals, but got "
                      f"{out!r}.")
    primal_out, res = out
    out_leaves, tree = tree_util.tree_flatten(primal_out)
    custom_vjp_refs.check_returned_refs(owner.fwd, out, "fwd", arg_leaves, len(out_leaves))
    if tree != self.out_tree:
      raise TypeError(f"Custom VJP fwd rule {name} for function {_name(owner.fun)} must produce "
                      f"a pair where the first value has the same container (pytree) structure "
                      f"as the primal function's output, but got {tree} and {self.out_tree}.")
    for o, expected in zip(out_leaves, self.out_avals, strict=True):
      if not same_type(get_aval(o), expected):
        raise TypeError(f"Custom VJP fwd rule {name} must produce primal outputs of the types "
                        f"the custom_vjp function returns: got {get_aval(o).str_short()}, "
                        f"expected {expected.str_short()}.")
    res_leaves, self.res_tree = tree_util.tree_flatten(res)
    return out_leaves, res_leaves

  def bwd(self, res_leaves, ct_leaves):
    """(residual leaves, output cotangent leaves) -> one cotangent per argument leaf (or Zero)."""
    owner = self.owner
    res = tree_util.tree_unflatten(self.res_tree, res_leaves)
    ct = tree_util.tree_unflatten(self.out_tree, ct_leaves)
    nondiff_args = [self.args[i] for i in self.nondiff]
    cts = owner.bwd(*nondiff_args, res, ct)
    n_diff = len(self.args) - len(self.nondiff)
    name = _name(owner.bwd)
    if not isinstance(cts, (tuple, list)) or len(cts) != n_diff:
      got = type(cts).__name__ if not isinstance(cts, (tuple, list)) else f"length {len(cts)}"
      raise TypeError(f"Custom VJP bwd rule {name} must produce an output with the same container "
                      f"(pytree) structure as the args tuple of the primal function, and in "
                      f"particular must produce a tuple of length equal to the number of "
                      f"arguments to the primal function, but got {got} for {n_diff} arguments.")
    arg_trees = tree_util.tree_unflatten(self.in_tree, list(range(len(self.in_avals))))
    out = [None] * len(self.in_avals)
    for k, (c, idx_tree) in enumerate(zip(cts, arg_trees, strict=True)):
      if c is None:
        continue
      # as jax: the cotangent is a pytree prefix of the argument; each of its leaves is the
      # cotangent of every primal leaf under it (flax's nnx States hold bare arrays where the
      # primal holds Variables over them), a None zero for all of them
      pairs = []

      def append(x, sub, pairs=pairs):
        if x is not None:
          pairs.extend((i, x) for i in tree_util.tree_leaves(sub))
        return x
      try:
        tree_util.tree_map(append, c, idx_tree, is_leaf=lambda x: x is None)
      except (ValueError, TypeError):
        raise TypeError(f"Custom VJP bwd rule {name} must produce cotangents with the structure "
                        f"of the primal arguments (or a prefix of it): argument {k} has "
                        f"structure {tree_util.tree_structure(idx_tree)}, the cotangent has "
                        f"{tree_util.tree_structure(c, is_leaf=lambda x: x is None)}.") from None
      for i, cl in pairs:
        out[i] = cl
    result = []
    for c, aval in zip(out, self.in_avals, strict=True):
      want = ad.tangent_aval(aval)
      if c is None or type(c) is ad.Zero or want.dtype == dtypes.float0:
        result.append(ad.Zero(want))
        continue
      ca = get_aval(c)
      if ca.shape != want.shape or ca.dtype != want.dtype:
        raise ValueError(f"Custom VJP bwd rule {name} must produce an output with the shape and "
                         f"dtype of the corresponding primal input: expected "
                         f"{want.str_short()}, got {ca.str_short()}.")
      if getattr(ca, "_mat", None) != getattr(want, "_mat", None):  # (inside shard_map)
        raise ValueError(
            f"Custom VJP bwd rule must produce an output with the same type as the args tuple "
            f"of the primal function, but at output{_flat_path(arg_trees, len(result))} the bwd "
            f"rule produced an output of type {ca.str_short(short_dtypes=False)} corresponding "
            f"to an input of type {aval.str_short(short_dtypes=False)}, so the manual axis "
            f"types do not match")
      result.append(c)
    return result


def _flat_path(arg_trees, i) -> str:
  """The key path (`[1]`, `[0]['w']`) of flat argument leaf `i` in the arguments' tree."""
  for path, leaf in tree_util.tree_flatten_with_path(arg_trees)[0]:
    if leaf == i:
      return tree_util.keystr(path)
  return f"[{i}]"


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, rule, num_consts):
  _check_closed_over(tangents, num_consts, "custom_vjp")
  arg_tangents = tangents[num_consts:]
  nonzeros = tuple(type(t) is not ad.Zero for t in arg_tangents)
  outs, res = rule.fwd(list(primals[num_consts:]), nonzeros)
  out_tangent_avals = tuple(ad.tangent_aval(get_aval(o)) for o in outs)
  differentiable = [a.dtype != dtypes.float0 for a in out_tangent_avals]
  lin_outs = iter(custom_lin_p.bind(
      *res, *[t for t in arg_tangents if type(t) is not ad.Zero], rule=rule, num_res=len(res),
      nonzeros=nonzeros, out_avals=tuple(a for a, d in zip(out_tangent_avals, differentiable)
                                         if d), all_out_avals=out_tangent_avals))
  return outs, [next(lin_outs) if d else ad.Zero(a)
                for a, d in zip(out_tangent_avals, differentiable, strict=True)]


def _custom_vjp_call_batch(axis_size, vals, dims, *, call_jaxpr, rule, num_consts):
  batched, out_dims = batching.batch_jaxpr(call_jaxpr, dims, axis_size)
  brule = _BatchedVjpRule(rule, tuple(dims[num_consts:]), out_dims, axis_size)
  outs = custom_vjp_call_p.bind(*vals, call_jaxpr=batched, rule=brule, num_consts=num_consts)
  return outs, list(out_dims)


class _BatchedVjpRule:
  """fwd and bwd run on batched values: residuals batched at 0, cotangents of unbatched
  arguments summed over the batch."""

  def __init__(self, rule, dims, out_dims, axis_size):
    self.rule, self.dims, self.out_dims, self.axis_size = rule, dims, out_dims, axis_size
    self.in_avals = rule.in_avals

  @property
  def symbolic_zeros(self) -> bool:
    return self.rule.symbolic_zeros

  def fwd(self, arg_leaves, perturbed=None):
    store = {}

    def flat_fwd(*xs):
      outs, res = self.rule.fwd(list(xs), perturbed)
      store["num_out"] = len(outs)
      return list(outs) + list(res)

    vals, dims = batching.batch_flat(flat_fwd, list(arg_leaves), list(self.dims), self.axis_size)
    k = store["num_out"]
    outs = [_at_dim(v, d, w, self.axis_size)
            for v, d, w in zip(vals[:k], dims[:k], self.out_dims, strict=True)]
    res = [batch_util.bdim_at(v, d, 0, self.axis_size) for v, d in zip(vals[k:], dims[k:])]
    return outs, res

  def bwd(self, res_leaves, ct_leaves):
    n_res = len(res_leaves)

    def flat_bwd(*xs):
      return [ad.instantiate_zeros(c) for c in self.rule.bwd(list(xs[:n_res]), list(xs[n_res:]))]

    vals, dims = batching.batch_flat(flat_bwd, list(res_leaves) + list(ct_leaves),
                                     [0] * n_res + list(self.out_dims), self.axis_size)
    return [_sum_out_batch(v, d) if want is None else batch_util.bdim_at(v, d, want,
                                                                         self.axis_size)
            for v, d, want in zip(vals, dims, self.dims, strict=True)]


custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_abstract_eval(_call_abstract_eval("custom_vjp_call"))
dispatch.custom_impls[custom_vjp_call_p] = _call_impl
ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp
batching.axis_size_batchers[custom_vjp_call_p] = _custom_vjp_call_batch
mlir.register_lowering(custom_vjp_call_p, _call_lower)
staging.dce_rules[custom_vjp_call_p] = _call_dce
pp_param_rules[custom_vjp_call_p] = lambda params: _printed(params, "rule", "fwd", "bwd")
pp_leading_params[custom_vjp_call_p] = ("name",)
discharge.discharge_rules[custom_vjp_call_p] = custom_vjp_refs.discharge_rule(custom_vjp_call_p)
discharge.discharge_rules_with_live_refs.add(custom_vjp_call_p)


# --- custom functions that read their arguments' values -------------------------------------------
def _owning_trace(leaves):
  """The innermost trace that owns one of `leaves` (the current trace, lowered past traces that
  see all of them as constants), or the eval trace."""
  trace = current_trace()
  while trace is not eval_trace and not any(isinstance(x, Tracer) and x._trace is trace
                                            for x in leaves):
    parent = getattr(trace, "parent_trace", None)
    if parent is None:
      break
    trace = parent
  return trace


def _eager_custom_call(owner, args, nondiff, jvp_fn, err):
  """Call a custom_jvp/custom_vjp function whose body cannot be traced because it reads values.
  If the trace that owns its arguments is a JVP trace with concrete primals (grad, jvp, vjp and
  the Jacobians outside jit), apply the rule as JAX does, with the function never traced;
  otherwise (jit, vmap) the concretization error `err` stands."""
  _, diff = _split_nondiff(args, nondiff)
  leaves, in_tree = tree_util.tree_flatten(tuple(diff))
  trace = _owning_trace(leaves)
  if trace is eval_trace:
    with set_current_trace(eval_trace):
      return owner.fun(*args)
  if not isinstance(trace, ad.JVPTrace) or any(
      isinstance(x, Tracer) and to_concrete_value(x) is None for x in leaves):
    raise err
  primals, tangents = zip(*map(trace.to_primal_tangent, leaves)) if leaves else ((), ())
  with set_current_trace(trace.parent_trace):
    if all(type(t) is ad.Zero for t in tangents):
      return owner(*_merge(args, nondiff, tree_util.tree_unflatten(in_tree, primals)))
    outs, out_tangents, out_tree = jvp_fn(owner, args, nondiff, in_tree, list(primals),
                                          list(tangents))
  return tree_util.tree_unflatten(out_tree, [trace.wrap(p, t) for p, t in
                                             zip(outs, out_tangents, strict=True)])


def _eager_jvp(owner, args, nondiff, in_tree, primals, tangents):
  """custom_jvp's rule on known primals: (outputs, tangents, output tree)."""
  p_tree = tree_util.tree_unflatten(in_tree, primals)
  out = owner.jvp(*[args[i] for i in nondiff], tuple(p_tree), tuple(
      tree_util.tree_unflatten(in_tree, [ad.instantiate_zeros(t) for t in tangents])))
  if not (isinstance(out, (tuple, list)) and len(out) == 2):
    raise TypeError(f"Custom JVP rule {_name(owner.jvp)} for function {_name(owner.fun)} must "
                    f"produce a pair (list or tuple of length two) representing primal and "
                    f"tangent outputs, but got {out!r}.")
  out_leaves, out_tree = tree_util.tree_flatten(out[0])
  rule = _JvpRule(owner, args, nondiff, in_tree, out_tree, [get_aval(o) for o in out_leaves])
  outs, out_tangents = rule(primals, tangents)
  return outs, out_tangents, out_tree


def _eager_vjp(owner, args, nondiff, in_tree, primals, tangents):
  """custom_vjp's fwd on known primals, and custom_lin (whose transpose is bwd) on the
  tangents: (outputs, tangents, output tree)."""
  leaves = primals
  if owner.symbolic_zeros:
    leaves = [CustomVJPPrimal(x, type(t) is not ad.Zero) for x, t in zip(primals, tangents,
                                                                          strict=True)]
  fwd_out = owner.fwd(*_merge(args, nondiff, tree_util.tree_unflatten(in_tree, leaves)))
  if not (isinstance(fwd_out, (tuple, list)) and len(fwd_out) == 2):
    raise TypeError(f"Custom VJP fwd rule {_name(owner.fwd)} for function {_name(owner.fun)} "
                    f"must produce a pair (list or tuple of length two) where the first element "
                    f"represents the primal output and the second element represents residuals, "
                    f"but got {fwd_out!r}.")
  out_leaves, out_tree = tree_util.tree_flatten(fwd_out[0])
  custom_vjp_refs.check_returned_refs(owner.fwd, fwd_out, "fwd", primals, len(out_leaves))
  rule = _VjpRule(owner, args, nondiff, in_tree, out_tree, [get_aval(o) for o in out_leaves],
                  [get_aval(x) for x in primals])
  outs, tangents_out = _custom_vjp_call_jvp(primals, tangents, call_jaxpr=None, rule=rule,
                                            num_consts=0)
  return outs, tangents_out, out_tree


# --- custom_lin: the linear map whose transpose is the user's bwd -------------------------------
_FORWARD_MODE_ERROR = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


def _custom_lin_abstract_eval(*avals, rule, num_res, nonzeros, out_avals, all_out_avals):
  return list(out_avals)


def _custom_lin_forward(*args, **params):
  raise TypeError(_FORWARD_MODE_ERROR)


def _custom_lin_transpose(cts, *args, rule, num_res, nonzeros, out_avals, all_out_avals):
  res = args[:num_res]
  keep = rule.symbolic_zeros  # (bwd then sees zero cotangents as SymbolicZero, as in JAX)
  # the outputs without tangents (integer, bool: float0) get zero cotangents, so bwd sees one
  # cotangent per output of the function
  given = iter(cts)
  cts = [next(given) if a.dtype != dtypes.float0 else ad.Zero(a) for a in all_out_avals]
  cts_in = rule.bwd(list(res), [c if keep and type(c) is ad.Zero else ad.instantiate_zeros(c)
                                for c in cts])
  return [None] * num_res + [c for c, nz in zip(cts_in, nonzeros, strict=True) if nz]


custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.def_abstract_eval(_custom_lin_abstract_eval)
# inside shard_map: the tangents out are typed as the primal outputs are, and the operands
# (residuals, tangents) are not cast to agree: the bwd rule's cotangents must each have their
# own primal's type (JAX's rule, checked in `bwd`)
vma.vma_rules[custom_lin_p] = lambda avals, params, outs: outs
vma.no_auto_pvary.add(custom_lin_p)
dispatch.custom_impls[custom_lin_p] = _custom_lin_forward
ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose
mlir.register_lowering(custom_lin_p, lambda ctx, *args, **params: _custom_lin_forward())


def _custom_lin_jvp(primals, tangents, **params):
  raise TypeError(_FORWARD_MODE_ERROR)


ad.primitive_jvps[custom_lin_p] = _custom_lin_jvp
# custom_lin meets a batching trace only when tangents are pushed forward under vmap (jacfwd)
batching.primitive_batchers[custom_lin_p] = _custom_lin_jvp
