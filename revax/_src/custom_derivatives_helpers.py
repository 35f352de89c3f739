"""Helpers of jax.custom_derivatives beside the decorators: symbolic zeros and the primal records
of a custom_vjp forward rule.

`SymbolicZero` is revax's symbolic zero (`ad.Zero`): what a `custom_jvp` rule declared with
`symbolic_zeros=True` receives for a tangent known to be zero. `CustomVJPPrimal` and
`custom_vjp_primal_tree_values` are JAX's record of a forward-rule argument and the function that
strips it: with `custom_vjp.defvjp(..., symbolic_zeros=True)` the forward rule receives its
differentiable arguments as `CustomVJPPrimal`s, as in JAX.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.interpreters import ad

__all__ = ["SymbolicZero", "zero_from_primal", "CustomVJPPrimal",
           "custom_vjp_primal_tree_values"]

SymbolicZero = ad.Zero


def zero_from_primal(val, symbolic_zeros: bool = False):
  """A pytree of zero tangents for the primal pytree `val`: `SymbolicZero`s with
  `symbolic_zeros`, arrays of zeros otherwise (float0 for integer and bool primals).

  Example:
    >>> from revax.custom_derivatives import zero_from_primal
    >>> zero_from_primal({"a": jnp.ones(2), "n": 3})["a"]
    Array([0., 0.], dtype=float32)
  """
  def zero(x):
    aval = ad.tangent_aval(get_aval(x))
    return ad.Zero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)
  return tree_util.tree_map(zero, val)


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
  """Primal argument of a custom_vjp forward rule in JAX's `symbolic_zeros` mode: the value and
  whether it is perturbed (differentiated)."""
  value: Any
  perturbed: bool


def custom_vjp_primal_tree_values(tree):
  """`tree` with each `CustomVJPPrimal` leaf replaced by its value; TypeError on another leaf."""
  def value(leaf):
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_util.tree_map(value, tree)
