"""Reversible building blocks: additive couplings, the reversible residual block and stacks of
them, written so that `revax.invertible` rebuilds their activations instead of storing them.

A reversible residual block (RevNet, RevViT, Reformer) splits its activations in two streams and
couples them additively,

    y1 = x1 + F(x2)        y2 = x2 + G(y1),

so its inputs follow from its outputs: x2 = y2 - G(y1), then x1 = y1 - F(x2). F and G are
arbitrary (attention, an MLP, a convolution) and only ever run forwards; what is undone is the
coupling's `add`. A stack of such blocks under `revax.invertible` therefore keeps, for reverse
mode, only its outputs and its parameters: the activation memory of a gradient step stays the
same however deep the stack is, at the price of one more forward through each block's F and G.

These are plain functions of (params, x1, x2): nothing here is a primitive or a rule, so they
compose with jit, vmap and every other transformation as any revax function does.
"""
from __future__ import annotations

import functools

from revax._src import tree_util
from revax._src.ad_checkpoint import checkpoint
from revax._src.invertible import invertible
from revax._src.lax.control_flow.loops import scan
from revax._src.numpy.shape_ops import stack as _stack

METHODS = ("invertible", "checkpoint", "plain")


def _check_callable(fun, what: str) -> None:
  if not callable(fun):
    raise TypeError(f"{what} expects a callable, got {fun!r} of type {type(fun).__name__}")


def additive_coupling(fn):
  """The additive coupling `(x1, x2) -> (x1 + fn(params, x2), x2)`, and its inverse.

  The coupling is invertible whatever `fn` is: `x1 = y1 - fn(params, y2)`, and `x2 = y2`.

  Args:
    fn: `fn(params, x) -> array` of `x`'s shape and dtype (any function: it is only evaluated
      forwards).

  Returns:
    `coupling(params, x1, x2) -> (y1, y2)`; `coupling.inverse(params, y1, y2) -> (x1, x2)`
    undoes it.

  Example:
    >>> from revax.reversible import additive_coupling
    >>> coupling = additive_coupling(lambda w, x: jnp.tanh(x * w))
    >>> y1, y2 = coupling(2.0, jnp.array([1.0, 2.0]), jnp.array([0.5, -0.5]))
    >>> coupling.inverse(2.0, y1, y2)[0]  # x1 again
    Array([1., 2.], dtype=float32)
  """
  _check_callable(fn, "additive_coupling")

  def coupling(params, x1, x2):
    return x1 + fn(params, x2), x2

  def inverse(params, y1, y2):
    return y1 - fn(params, y2), y2

  coupling.inverse = inverse
  return coupling


def reversible_block(f, g):
  """The reversible residual block `y1 = x1 + f(f_params, x2), y2 = x2 + g(g_params, y1)`.

  Two additive couplings, one per stream (RevNet's block; with f attention and g an MLP, the
  reversible transformer layer of RevViT and Reformer). Its inverse is x2 = y2 - g(y1),
  x1 = y1 - f(x2); under `revax.invertible` reverse mode uses exactly that.

  Args:
    f: `f(f_params, x2) -> array` shaped like `x1`.
    g: `g(g_params, y1) -> array` shaped like `x2`.

  Returns:
    `block(params, x1, x2) -> (y1, y2)` with `params = (f_params, g_params)`;
    `block.inverse(params, y1, y2) -> (x1, x2)` undoes it.

  Example:
    >>> from revax.reversible import reversible_block
    >>> block = reversible_block(lambda w, x: jnp.tanh(x @ w), lambda w, x: jnp.tanh(x @ w))
    >>> params = (jnp.eye(2) * 0.5, jnp.eye(2) * -0.5)
    >>> x1, x2 = jnp.array([[1.0, 2.0]]), jnp.array([[0.5, -1.0]])
    >>> y1, y2 = block(params, x1, x2)
    >>> [bool(jnp.allclose(a, b)) for a, b in zip(block.inverse(params, y1, y2), (x1, x2))]
    [True, True]
  """
  _check_callable(f, "reversible_block's f")
  _check_callable(g, "reversible_block's g")

  def block(params, x1, x2):
    f_params, g_params = params
    y1 = x1 + f(f_params, x2)
    return y1, x2 + g(g_params, y1)

  def inverse(params, y1, y2):
    f_params, g_params = params
    x2 = y2 - g(g_params, y1)
    return y1 - f(f_params, x2), x2

  block.inverse = inverse
  return block


def reversible_sequence(block, *, method: str = "invertible", scan_layers: bool = False):
  """A stack of reversible blocks, differentiated as `method` says.

  Args:
    block: `block(params, x1, x2) -> (y1, y2)`, e.g. a `reversible_block` or an
      `additive_coupling` (any function whose inputs `revax.invertible` can rebuild from its
      outputs and params).
    method: how reverse mode gets each block's activations back:
      'invertible' (the default) puts the whole stack under `revax.invertible`: it keeps only
      the stack's outputs and params, and rebuilds every block's inputs from its outputs as the
      gradient walks back (memory flat in depth; one more forward per block).
      'checkpoint' puts each block under `revax.checkpoint`: it keeps each block's inputs and
      recomputes its insides (memory linear in depth, two activations per block).
      'plain' stores whatever reverse mode stores (every intermediate of every block).
    scan_layers: False: `params` is a sequence (list or tuple) of per-block params and the
      blocks are applied by a Python loop (one program per depth). True: `params` is one pytree
      whose leaves have a leading axis of length depth, and the blocks run in a `lax.scan` (one
      block's program, compiled once whatever the depth; under 'invertible' the backward pass
      is a scan too, rebuilding each step's carry from the next).

  Returns:
    `stack(params, x1, x2) -> (y1, y2)`: the blocks applied in turn.
    `stack.inverse(params, y1, y2) -> (x1, x2)` undoes the stack when `block` has an `inverse`.

  Raises:
    ValueError: for an unknown `method`.

  Example:
    >>> from revax.reversible import reversible_block, reversible_sequence
    >>> layer = lambda w, x: jnp.tanh(x @ w)
    >>> stack = reversible_sequence(reversible_block(layer, layer))
    >>> params = [(jnp.eye(2) * 0.5, jnp.eye(2) * 0.25)] * 3
    >>> loss = lambda p, a, b: sum((y ** 2).sum() for y in stack(p, a, b))
    >>> x1, x2 = jnp.array([[1.0, 2.0]]), jnp.array([[0.5, -1.0]])
    >>> g = revax.grad(loss)(params, x1, x2)  # activations rebuilt, not stored
    >>> plain = reversible_sequence(reversible_block(layer, layer), method="plain")
    >>> g_plain = revax.grad(lambda p, a, b: sum((y ** 2).sum() for y in plain(p, a, b)))(
    ...     params, x1, x2)
    >>> all(bool(jnp.allclose(a, b)) for a, b in zip(revax.tree_util.tree_leaves(g),
    ...                                                revax.tree_util.tree_leaves(g_plain)))
    True
  """
  _check_callable(block, "reversible_sequence")
  if method not in METHODS:
    raise ValueError(f"reversible_sequence: method must be one of {METHODS}, got {method!r}")
  step = checkpoint(block) if method == "checkpoint" else block

  if scan_layers:
    def stack(params, x1, x2):
      def body(carry, p):
        return step(p, *carry), None
      (y1, y2), _ = scan(body, (x1, x2), params)
      return y1, y2
  else:
    def stack(params, x1, x2):
      if not isinstance(params, (list, tuple)):
        raise TypeError("reversible_sequence: params must be a list or tuple of per-block "
                        f"params (or pass scan_layers=True for stacked params), got "
                        f"{type(params).__name__}")
      for p in params:
        x1, x2 = step(p, x1, x2)
      return x1, x2

  wrapped = invertible(stack) if method == "invertible" else stack
  block_inverse = getattr(block, "inverse", None)
  if block_inverse is not None:
    wrapped.inverse = functools.partial(_sequence_inverse, block_inverse, scan_layers)
  return wrapped


def _sequence_inverse(block_inverse, scan_layers, params, y1, y2):
  if scan_layers:
    def body(carry, p):
      return block_inverse(p, *carry), None
    (x1, x2), _ = scan(body, (y1, y2), params, reverse=True)
    return x1, x2
  for p in reversed(tuple(params)):
    y1, y2 = block_inverse(p, y1, y2)
  return y1, y2


def stack_params(params_list):
  """Per-block params (a list of pytrees of one structure) as one pytree with a leading depth
  axis, the form `reversible_sequence(..., scan_layers=True)` takes.

  Args:
    params_list: a non-empty list of pytrees with equal structure and leaf shapes.

  Returns:
    The pytree whose leaves are the blocks' leaves stacked along a new axis 0.

  Example:
    >>> from revax.reversible import stack_params
    >>> stack_params([(jnp.ones(2), jnp.zeros(())), (jnp.ones(2), jnp.ones(()))])[0].shape
    (2, 2)
  """
  if not params_list:
    raise ValueError("stack_params needs at least one block's params")
  return tree_util.tree_map(lambda *leaves: _stack(leaves), *params_list)
