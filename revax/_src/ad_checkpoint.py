"""checkpoint (remat): the public API of rematerialization, its policies, and a report of what
reverse mode stores.

`checkpoint(f)` traces `f` to a jaxpr once per call signature and binds `checkpoint_p` on it
(closed-over arrays and outer tracers become explicit operands). The interpretation lives in
`interpreters/remat.py`.
"""
from __future__ import annotations


from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Tracer, current_trace
from revax._src.interpreters import ad, discharge, staging
from revax._src.interpreters.remat import checkpoint_p, name_p
from revax._src.lax import state


# --- policies (as jax.checkpoint_policies) ---------------------------------------------------------
def everything_saveable(*_, **__) -> bool:
  """Save every value the backward pass needs (no recomputation: plain reverse mode)."""
  return True


def nothing_saveable(*_, **__) -> bool:
  """Save nothing but the checkpoint's inputs: recompute everything (the default)."""
  return False


def dots_saveable(prim, *_, **__) -> bool:
  """Save the results of matrix multiplications and convolutions; recompute the rest."""
  return prim.name in ("dot_general", "conv_general_dilated")


def dots_with_no_batch_dims_saveable(prim, *_, **params) -> bool:
  """Save the results of dot_generals without batch dimensions; recompute the rest."""
  if prim.name != "dot_general":
    return False
  (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
  return not lhs_batch and not rhs_batch


def save_only_these_names(*names: str):
  """A policy saving only the values tagged with one of `names` by `checkpoint_name`."""
  wanted = frozenset(names)

  def policy(prim, *_, **params) -> bool:
    return prim is name_p and params["name"] in wanted
  policy.__name__ = f"save_only_these_names{tuple(sorted(wanted))}"
  return policy


def save_any_names_but_these(*names: str):
  """A policy saving every named value except those tagged with one of `names`."""
  unwanted = frozenset(names)

  def policy(prim, *_, **params) -> bool:
    return prim is name_p and params["name"] not in unwanted
  return policy


class checkpoint_policies:  # noqa: N801 (the namespace's name in JAX)
  """The built-in policies, as `jax.checkpoint_policies`."""
  everything_saveable = staticmethod(everything_saveable)
  nothing_saveable = staticmethod(nothing_saveable)
  dots_saveable = staticmethod(dots_saveable)
  checkpoint_dots = staticmethod(dots_saveable)
  dots_with_no_batch_dims_saveable = staticmethod(dots_with_no_batch_dims_saveable)
  checkpoint_dots_with_no_batch_dims = staticmethod(dots_with_no_batch_dims_saveable)
  save_only_these_names = staticmethod(save_only_these_names)
  save_any_names_but_these = staticmethod(save_any_names_but_these)


def checkpoint_name(x, name: str):
  """Tag `x` (a pytree of arrays) with `name`, for `save_only_these_names` policies."""
  if not isinstance(name, str):
    raise TypeError(f"checkpoint_name expects a string name, got {name!r}")
  return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)


# --- checkpoint ----------------------------------------------------------------------------------
def checkpoint(fun, *, prevent_cse: bool = True, policy=None, static_argnums=()):
  """Make `fun` recompute its internals in reverse mode instead of storing them.

  Args:
    fun: the function to rematerialize (arrays and pytrees of arrays in and out).
    prevent_cse: run the recomputation inside a `fenced_call` that also takes the cotangents,
      so XLA can neither merge it with the forward pass nor schedule it early (the default;
      turn it off only where XLA cannot merge them anyway, e.g. inside a loop body).
    policy: `policy(prim, *avals, **params) -> bool` saying which intermediate values reverse mode
      may store (see `checkpoint_policies`); None stores only `fun`'s inputs.
    static_argnums: positions of arguments that are Python values fixed at trace time.

  Returns:
    A function with `fun`'s signature and values; under `grad` it stores less and recomputes.

  Example:
    >>> block = revax.checkpoint(lambda w, x: jnp.tanh(x @ w))
    >>> w, x = jnp.array([[0.5, 0.5], [0.5, 0.5]]), jnp.ones((1, 2))
    >>> revax.grad(lambda w, x: block(w, x).sum())(w, x)  # tanh(x @ w) recomputed, not stored
    Array([[0.41997433, 0.41997433],
           [0.41997433, 0.41997433]], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"checkpoint expects a callable, got {fun!r} of type {type(fun).__name__}")
  if policy is not None and not callable(policy):
    raise TypeError(f"checkpoint policy must be a callable (prim, *avals, **params) -> bool, got "
                    f"{policy!r}")
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @wrapping.wraps(fun)
  def remat_f(*args, **kwargs):
    static = {i % len(args) for i in static_argnums if -len(args) <= i < len(args)}
    dyn = [a for i, a in enumerate(args) if i not in static]
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    store = {}

    def flat_fun(*flat):
      d, kw = tree_util.tree_unflatten(in_tree, flat)
      it = iter(d)
      full = [args[i] if i in static else next(it) for i in range(len(args))]
      out_leaves, store["out_tree"] = tree_util.tree_flatten(fun(*full, **kw))
      for x in out_leaves:
        try:
          get_aval(x)
        except TypeError:
          raise TypeError(f"checkpointed function {getattr(fun, '__name__', fun)} returned a "
                          f"value of type {type(x).__name__}; outputs must be arrays or pytrees "
                          "of arrays") from None
      return out_leaves

    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [get_aval(x) for x in leaves])
    closed = ClosedJaxpr(staging.convert_constvars_jaxpr(jaxpr), [])
    if discharge.has_refs(closed.jaxpr):
      # mutable array refs (made inside, closed over or passed): the checkpoint holds the pure
      # program, so what reverse mode recomputes follows the refs' contents (a recomputed read
      # of a ref must see the writes before it); refs from outside are threaded in and out
      discharge.ref_error_for_outputs(closed.out_avals, "a checkpointed function")
      outs = state.call_threading_refs(
          [closed], list(consts) + list(leaves),
          lambda pure, vals: checkpoint_p.bind(*vals, jaxpr=pure[0], prevent_cse=prevent_cse,
                                               policy=policy), "checkpoint")
    else:
      outs = checkpoint_p.bind(*consts, *leaves, jaxpr=closed, prevent_cse=prevent_cse,
                               policy=policy)
    return tree_util.tree_unflatten(store["out_tree"], outs)

  return remat_f


remat = checkpoint


# --- what reverse mode stores -------------------------------------------------------------------
def saved_residuals(fun, *args, **kwargs) -> list[tuple]:
  """What `vjp(fun, *args)` stores for the backward pass: a list of (aval, description) pairs,
  one per residual, saying which argument it is or which primitive produced it."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  arg_names = _argument_names(fun, args, kwargs)

  notes = {}  # residual position -> why an invertible function stores it

  def residuals_of(*flat):
    a, kw = tree_util.tree_unflatten(in_tree, flat)
    flat_fun = lambda *xs: tree_util.tree_leaves(fun(*tree_util.tree_unflatten(in_tree, xs)[0],
                                                     **kw))
    _, lin = ad.linearize_flat(flat_fun, list(flat))
    kept = [k for k, r in enumerate(lin.residuals)
            if isinstance(r, Tracer) and r._trace is current_trace()]
    for k, why in _invertible_notes(lin).items():
      if k in kept:
        notes[kept.index(k)] = why
    return [lin.residuals[k] for k in kept]

  jaxpr, _ = staging.trace_to_jaxpr(residuals_of, [get_aval(x) for x in leaves])
  producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
  report = []
  for k, v in enumerate(jaxpr.outvars):
    if v in jaxpr.invars:
      text = f"from the argument {arg_names[jaxpr.invars.index(v)]}"
    elif v in producer:
      text = f"output of {producer[v].primitive.name}"
    else:
      text = "a constant"
    if k in notes:
      text += f" (stored by invertible: {notes[k]})"
    report.append((v.aval, text))
  return report


def _invertible_notes(lin) -> dict:
  """Residual index -> why an invertible function could not rebuild it (its stored inputs)."""
  from revax._src.interpreters import invertible as inv
  index = {v: k for k, v in enumerate(lin.jaxpr.constvars)}
  notes = {}
  for eqn in lin.jaxpr.eqns:
    if eqn.primitive is not inv.invertible_lin_p:
      continue
    primal = eqn.params["primal"]
    plan = inv.reconstruction_plan(primal)
    n_out = len(primal.out_avals)
    for i, atom in zip(plan.saved, eqn.invars[n_out:n_out + len(plan.saved)], strict=True):
      if atom in index:
        notes[index[atom]] = plan.blocked[i]
  return notes


def print_saved_residuals(fun, *args, **kwargs) -> None:
  """Print what reverse mode through `fun` stores, one residual per line (as JAX's
  `jax.ad_checkpoint.print_saved_residuals`)."""
  for aval, description in saved_residuals(fun, *args, **kwargs):
    print(f"{aval.str_short()} {description}")


def _argument_names(fun, args, kwargs) -> list[str]:
  """A name per flat argument leaf: the parameter's name, with its path inside a pytree."""
  import inspect
  try:
    params = list(inspect.signature(fun).parameters)
  except (TypeError, ValueError):
    params = []
  names = []
  for i, a in enumerate(args):
    base = params[i] if i < len(params) else f"args[{i}]"
    names += [base + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(a)[0]]
  for k, v in kwargs.items():
    names += [k + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(v)[0]]
  return names
