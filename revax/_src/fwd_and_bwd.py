"""fwd_and_bwd: a function's forward and backward passes as two functions, as in jax 0.10.

`fwd(*args)` returns `(fun(*args), residuals)` (plus aux): the outputs and what the backward
pass reads, gathered in a `VjpResiduals` pytree whose leaves are the residual arrays and whose
static part is the linear (tangent) jaxpr. `bwd(residuals, cotangent)` transposes that jaxpr
on the residuals. Both are jitted by default, and since the residuals are an ordinary pytree,
`bwd` compiles once and is reused across calls (what `jit(f_vjp)` of a fresh `vjp` cannot do).
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.autodiff import _argnums_tuple, _aux_tree, _check_callable, _flat_fun, apply_vjp
from revax._src.core.avals import get_aval
from revax._src.interpreters import ad
from revax._src.jit import jit

__all__ = ["fwd_and_bwd"]


class VjpResiduals:
  """The residuals of a forward pass and the static description of its backward pass."""
  __slots__ = ("leaves", "static")

  def __init__(self, leaves, static):
    self.leaves, self.static = list(leaves), static

  def __repr__(self):
    return f"VjpResiduals({len(self.leaves)} arrays)"


tree_util.register_pytree_node(VjpResiduals, lambda r: (r.leaves, r.static),
                               lambda static, leaves: VjpResiduals(leaves, static))


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
  """The forward and backward passes of `fun` as two reusable functions.

  Args:
    fun: the function to differentiate.
    argnums: an int or a sequence of ints: the positional arguments to differentiate.
    has_aux: `fun` returns `(output, aux)`.
    jitted: return `jit(fwd)` and `jit(bwd)` (the default; jitting only bwd would recompile it
      for every forward pass).

  Returns:
    `(fwd, bwd)`: `fwd(*args)` returns `(output, residuals)` (or `(output, residuals, aux)`),
    `bwd(residuals, cotangent)` the cotangents of the `argnums` arguments (one value for an int
    `argnums`, a tuple otherwise).

  Example:
    >>> fwd, bwd = revax.fwd_and_bwd(lambda x, w: x @ w, argnums=(0, 1))
    >>> x, w = jnp.ones((2, 3)), jnp.arange(3.)
    >>> y, res = fwd(x, w)
    >>> y
    Array([3., 3.], dtype=float32)
    >>> bwd(res, jnp.ones_like(y))  # (x_bar, w_bar); bwd compiles once, reused for every call
    (Array([[0., 1., 2.],
           [0., 1., 2.]], dtype=float32), Array([2., 2., 2.], dtype=float32))
  """
  _check_callable(fun, "fwd_and_bwd")
  if not isinstance(argnums, int):
    argnums = tuple(argnums)

  def fwd(*args):
    single, nums = _argnums_tuple(argnums, len(args), "fwd_and_bwd")

    def partial_fun(*dyn):
      full = list(args)
      for i, a in zip(nums, dyn, strict=True):
        full[i] = a
      return fun(*full)

    p_leaves, p_tree = tree_util.tree_flatten(tuple(args[i] for i in nums))
    store = {}
    res = ad.linearize_flat(_flat_fun(partial_fun, p_tree, store, has_aux), p_leaves,
                            has_aux=has_aux)
    outs, lin = res[0], res[1]
    static = (lin.jaxpr, tuple(lin.in_mask), tuple(lin.out_zero_avals), store["out_tree"],
              tuple(get_aval(o) for o in outs), tuple(get_aval(p) for p in p_leaves), p_tree,
              single)
    residuals = VjpResiduals(lin.residuals, static)
    out = tree_util.tree_unflatten(store["out_tree"], outs)
    if has_aux:
      return out, residuals, _aux_tree(store, res[2])
    return out, residuals

  def bwd(residuals, outgrad):
    if not isinstance(residuals, VjpResiduals):
      raise TypeError(f"fwd_and_bwd's bwd takes the residuals fwd returned, got "
                      f"{type(residuals).__name__}")
    jaxpr, in_mask, out_zero_avals, out_tree, out_avals, in_avals, p_tree, single = \
        residuals.static
    lin = ad.Linearized(jaxpr, list(residuals.leaves), list(in_mask), list(out_zero_avals))
    g = apply_vjp(lin, out_tree, list(out_avals), list(in_avals), p_tree, outgrad)
    return g[0] if single else g

  if jitted:
    return jit(fwd), jit(bwd)
  return fwd, bwd
