"""closure_convert: hoist the differentiable values a function closes over into arguments.

Tracing `fun` at the example arguments' types gives a jaxpr whose constants are every value
`fun` reads besides its arguments (arrays captured in closures, transitively). Those that may
carry a derivative -- tracers of an enclosing transformation other than a JVP with a zero
tangent, or staged values of a differentiable type -- become trailing arguments of the
converted function; the rest stay closed over. Custom-derivative rules (custom_vjp with a
function argument in nondiff_argnums) can then see and differentiate them, as in JAX.
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core.trace import Tracer
from revax._src.interpreters import ad, batching, staging

__all__ = ["closure_convert"]


def _maybe_perturbed(x) -> bool:
  """Whether `x` may carry a non-trivial tangent (a heuristic, as JAX's)."""
  if not isinstance(x, Tracer):
    return False
  if isinstance(x, ad.JVPTracer):
    return type(x.tangent) is not ad.Zero or _maybe_perturbed(x.primal)
  if isinstance(x, staging.JaxprTracer):
    return ad.tangent_aval(x.aval).dtype != dtypes.float0
  if isinstance(x, batching.BatchTracer):
    return _maybe_perturbed(x.val)
  return True


def closure_convert(fun, *example_args):
  """`fun` with the differentiable values it closes over as explicit trailing arguments.

  Args:
    fun: a pure function.
    *example_args: arguments (pytrees) giving the types `fun` is specialized to.

  Returns:
    `(converted_fun, hoisted)`: `converted_fun(*args, *hoisted)` computes `fun(*args)`, and
    `hoisted` is the list of values taken out of the closure.

  Example:
    >>> w = jnp.array([1., 2.])
    >>> fn, consts = revax.closure_convert(lambda x: x * w, jnp.ones(2))
    >>> consts  # w is concrete here, so fn keeps it inside
    []
    >>> def outer(w):
    ...   fn, consts = revax.closure_convert(lambda x: x * w, jnp.ones(2))
    ...   return fn(jnp.array([3., 4.]), *consts)  # w is traced here: it comes back in consts
    >>> revax.grad(lambda w: outer(w).sum())(w)
    Array([3., 4.], dtype=float32)
  """
  leaves, in_tree = tree_util.tree_flatten(example_args)
  in_avals = tuple(get_aval(x) for x in leaves)
  store = {}

  def flat_fun(*flat):
    out = fun(*tree_util.tree_unflatten(in_tree, flat))
    out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
    return out_leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, list(in_avals))
  out_tree = store["out_tree"]
  hoist = [_maybe_perturbed(c) for c in consts]
  closure_consts = [c for c, h in zip(consts, hoist, strict=True) if not h]
  hoisted = [c for c, h in zip(consts, hoist, strict=True) if h]

  def converted_fun(*args_and_consts):
    n = len(args_and_consts) - len(hoisted)
    args, const_args = args_and_consts[:n], args_and_consts[n:]
    kept, moved = iter(closure_consts), iter(const_args)
    all_consts = [next(moved) if h else next(kept) for h in hoist]
    flat, tree = tree_util.tree_flatten(tuple(args))
    if tree != in_tree:
      raise TypeError(f"The inputs to the closure produced by closure_convert must have the "
                      f"same Pytree structure as the example arguments passed when "
                      f"closure_convert was called. Expected {in_tree}, but got {tree}")
    return tree_util.tree_unflatten(out_tree, eval_jaxpr(jaxpr, all_consts, *flat))

  return converted_fun, hoisted
