"""invertible and custom_ivjp: the public API of invertible reverse mode.

`invertible(f)` traces `f` and binds `invertible_p`; `custom_ivjp(f).defivjp(ivjp)` binds
`custom_ivjp_call_p`, a call that carries a hand-written inverse-and-VJP. How reverse mode uses
them is in `interpreters/invertible.py`.
"""
from __future__ import annotations

import functools

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from revax._src.core.trace import Tracer, current_trace, eval_trace
from revax._src.interpreters import ad, batching, staging
from revax._src.interpreters import invertible as inv
from revax._src.interpreters.remat import checkpoint_p
from revax._src.jit import jit_p
from revax._src.lax import batch_util, reductions, shapes, slicing


def _trace_flat(fun, args, what, keep_concrete_consts=False):
  """Trace `fun(*args)` over the leaves of `args`: (closed jaxpr with its constants as leading
  inputs, the constants, the leaves, the output tree). With `keep_concrete_consts`, only traced
  constants become leading inputs (and are returned); concrete ones stay in the closed jaxpr."""
  leaves, in_tree = tree_util.tree_flatten(tuple(args))
  store = {}

  def flat_fun(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
    for x in out_leaves:
      try:
        get_aval(x)
      except TypeError:
        raise TypeError(f"{what} {getattr(fun, '__name__', fun)} returned a value of type "
                        f"{type(x).__name__}; outputs must be arrays or pytrees of arrays"
                        ) from None
    return out_leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [get_aval(x) for x in leaves])
  if keep_concrete_consts:
    # constants known now to hold zeros stay constants of the jaxpr, so the planner sees them
    # (it never undoes a multiplication by such a factor); the others, and traced ones (values
    # of outer transformations), become leading inputs, which jit passes as operands rather
    # than as program text
    as_input = [isinstance(c, Tracer) or not inv.has_zero(c) for c in consts]
    jaxpr = Jaxpr([v for v, t in zip(jaxpr.constvars, as_input, strict=True) if not t],
                  [v for v, t in zip(jaxpr.constvars, as_input, strict=True) if t] + jaxpr.invars,
                  jaxpr.outvars, jaxpr.eqns)
    closed = ClosedJaxpr(jaxpr, [c for c, t in zip(consts, as_input, strict=True) if not t])
    return closed, [c for c, t in zip(consts, as_input, strict=True) if t], leaves, \
        store["out_tree"]
  return (ClosedJaxpr(staging.convert_constvars_jaxpr(jaxpr), []), consts, leaves,
          store["out_tree"])


def invertible(fun=None, *, allow_storing: bool = True):
  """Make reverse mode through `fun` rebuild its intermediates instead of storing them.

  Forwards, `invertible(fun)` is `fun`, and forward mode is its JVP. Reverse mode (grad, vjp)
  stores only `fun`'s outputs and the inputs they cannot rebuild (parameters, which the caller
  keeps anyway); the backward pass rebuilds each intermediate from values already known, with
  each primitive's inverse rule, while the gradient walks back. Which values can be rebuilt is
  decided by dataflow over the whole function.

  Args:
    fun: a function of arrays (pytrees) returning arrays (pytrees).
    allow_storing: if some input cannot be rebuilt from the outputs (the function is only
      partially invertible: `x * x`, `sort`, ...), store it (the default); with False, raise a
      ValueError naming the step that cannot be inverted.

  Returns:
    A function with `fun`'s signature and values.

  Example:
    >>> def coupling(w, x1, x2):  # an additive coupling block: invertible given w
    ...   y1 = x1 + jnp.tanh(x2 @ w)
    ...   return y1, x2 + jnp.tanh(y1 @ w)
    >>> def loss(w, a, b):
    ...   y1, y2 = revax.invertible(coupling)(w, a, b)
    ...   return (y1 * y2).sum()
    >>> w, a, b = jnp.eye(2) * 0.5, jnp.array([[1., 2.]]), jnp.array([[0.5, -1.]])
    >>> g = revax.grad(loss)(w, a, b)  # x1, x2 rebuilt from y1, y2 in the backward pass
    >>> jnp.allclose(g, revax.grad(lambda w, a, b: (lambda y: (y[0] * y[1]).sum())(
    ...     coupling(w, a, b)))(w, a, b))  # the same gradient as plain reverse mode
    Array(True, dtype=bool)
  """
  if fun is None:
    return functools.partial(invertible, allow_storing=allow_storing)
  if not callable(fun):
    raise TypeError(f"invertible expects a callable, got {fun!r} of type {type(fun).__name__}")

  @wrapping.wraps(fun)
  def invertible_f(*args):
    if current_trace() is eval_trace:
      return fun(*args)  # nothing is differentiated: plain evaluation
    closed, consts, leaves, out_tree = _trace_flat(fun, args, "invertible function",
                                                   keep_concrete_consts=True)
    outs = inv.invertible_p.bind(*consts, *leaves, jaxpr=closed, primal=None, nonzeros=None,
                                 allow_storing=allow_storing)
    return tree_util.tree_unflatten(out_tree, outs)

  return invertible_f


class custom_ivjp:  # noqa: N801 (the name of JAX's former API)
  """A block that supplies its inverse and VJP by hand, for use inside `invertible`.

  `ivjp(inputs, outputs, output_cotangents) -> (inputs, input_cotangents)` rebuilds the block's
  inputs from its outputs and returns their cotangents; `inputs` holds the block's arguments
  where they are known (the ivjp should read only what it cannot rebuild, e.g. weights).

  Example:
    >>> @revax.custom_ivjp
    ... def block(x1, x2):
    ...   y1 = x1 + revax.numpy.sin(x2)
    ...   return y1, x2 + revax.numpy.cos(y1)
    >>> @block.defivjp
    ... def block_ivjp(xs, ys, cts):
    ...   ...
  """

  def __init__(self, fun):
    if not callable(fun):
      raise TypeError(f"custom_ivjp expects a callable, got {fun!r}")
    wrapping.update_wrapper(self, fun)
    self.fun = fun
    self.ivjp = None

  def defivjp(self, ivjp):
    if not callable(ivjp):
      raise TypeError(f"defivjp expects a callable, got {ivjp!r}")
    self.ivjp = ivjp
    return ivjp

  def __call__(self, *args):
    if self.ivjp is None:
      raise AttributeError(f"No ivjp defined for custom_ivjp function "
                           f"{getattr(self.fun, '__name__', self.fun)} using defivjp.")
    if current_trace() is eval_trace:
      return self.fun(*args)
    call, fun_consts, leaves, out_tree = _trace_flat(self.fun, args, "custom_ivjp function")
    in_tree = tree_util.tree_structure(tuple(args))
    ivjp_closed, ivjp_consts = self._trace_ivjp(in_tree, out_tree, leaves, call.out_avals)
    outs = inv.custom_ivjp_call_p.bind(
        *fun_consts, *ivjp_consts, *leaves, call_jaxpr=call, ivjp_jaxpr=ivjp_closed,
        num_fun_consts=len(fun_consts), num_ivjp_consts=len(ivjp_consts))
    return tree_util.tree_unflatten(out_tree, outs)

  def _trace_ivjp(self, in_tree, out_tree, leaves, out_avals):
    in_avals = [get_aval(x) for x in leaves]
    ct_avals = [ad.tangent_aval(a) for a in out_avals]
    n_in, n_out = len(in_avals), len(out_avals)
    name = getattr(self.ivjp, "__name__", self.ivjp)

    def flat_ivjp(*xs):
      ins = tree_util.tree_unflatten(in_tree, xs[:n_in])
      outs = tree_util.tree_unflatten(out_tree, xs[n_in:n_in + n_out])
      cts = tree_util.tree_unflatten(out_tree, xs[n_in + n_out:])
      res = self.ivjp(ins, outs, cts)
      if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"custom_ivjp rule {name} must return a pair (inputs, input_cotangents), "
                        f"got {type(res).__name__}")
      rebuilt, cts_in = res
      r_leaves, r_tree = tree_util.tree_flatten(tuple(rebuilt))
      c_leaves, c_tree = tree_util.tree_flatten(tuple(cts_in))
      if r_tree != in_tree or c_tree != in_tree:
        raise TypeError(f"custom_ivjp rule {name} must return inputs and input cotangents with "
                        f"the structure of the block's arguments {in_tree}, got {r_tree} and "
                        f"{c_tree}")
      for x, a in zip(r_leaves + c_leaves, in_avals + [ad.tangent_aval(a) for a in in_avals]):
        xa = get_aval(x)
        if xa.shape != a.shape or xa.dtype != a.dtype:
          raise TypeError(f"custom_ivjp rule {name} returned {xa.str_short()} where the block's "
                          f"argument has type {a.str_short()}")
      return r_leaves + c_leaves

    jaxpr, consts = staging.trace_to_jaxpr(flat_ivjp, in_avals + list(out_avals) + ct_avals)
    return ClosedJaxpr(staging.convert_constvars_jaxpr(jaxpr), []), consts


# --- batching of custom_ivjp (needs lax's shape ops, so it lives at this layer) -----------------
def _ivjp_batch(axis_size, vals, dims, *, call_jaxpr, ivjp_jaxpr, num_fun_consts,
                num_ivjp_consts):
  dims = tuple(dims)
  k = num_fun_consts + num_ivjp_consts
  fun_dims, ivjp_dims, in_dims = dims[:num_fun_consts], dims[num_fun_consts:k], dims[k:]
  batched_call, out_dims = batching.batch_jaxpr(call_jaxpr, fun_dims + in_dims, axis_size)
  batched_ivjp = _batched_ivjp(ivjp_jaxpr, ivjp_dims + in_dims + tuple(out_dims) * 2, in_dims,
                               axis_size)
  outs = inv.custom_ivjp_call_p.bind(*vals, call_jaxpr=batched_call, ivjp_jaxpr=batched_ivjp,
                                     num_fun_consts=num_fun_consts,
                                     num_ivjp_consts=num_ivjp_consts)
  return outs, list(out_dims)


@staging.memoize_on_jaxpr
def _batched_ivjp(ivjp_jaxpr, dims, in_dims, axis_size) -> ClosedJaxpr:
  """The ivjp on batched operands, returning inputs and cotangents batched where the inputs
  are: a rebuilt unbatched input is the same in every example (the first is taken), and the
  cotangent of an unbatched input is summed over the batch."""
  avals = [a if d is None else a.update(shape=a.shape[:d] + (axis_size,) + a.shape[d:])
           for a, d in zip(ivjp_jaxpr.in_avals, dims, strict=True)]
  n_in = len(in_dims)

  def fun(*args):
    outs, out_dims = batching.batch_flat(
        lambda *xs: eval_jaxpr(ivjp_jaxpr.jaxpr, ivjp_jaxpr.consts, *xs), list(args),
        list(dims), axis_size)
    aligned = []
    for k, (o, d) in enumerate(zip(outs, out_dims, strict=True)):
      want = in_dims[k % n_in]
      if want is not None:
        aligned.append(batch_util.bdim_at(o, d, want, axis_size))
      elif d is None:
        aligned.append(o)
      elif k >= n_in:  # the cotangent of an unbatched input
        aligned.append(reductions.reduce_sum(o, (d,)))
      else:
        aligned.append(_first_example(o, d))
    return aligned

  jaxpr, consts = staging.trace_to_jaxpr(fun, avals)
  return ClosedJaxpr(jaxpr, consts)


def _first_example(x, d: int):
  shape = get_aval(x).shape
  first = slicing.slice(x, (0,) * len(shape), shape[:d] + (1,) + shape[d + 1:])
  return shapes.squeeze(first, (d,))


batching.axis_size_batchers[inv.custom_ivjp_call_p] = _ivjp_batch
inv.inlinable_calls[jit_p] = "jaxpr"
inv.inlinable_calls[checkpoint_p] = "jaxpr"
