"""`jax.Ref` and `jax.new_ref` in the jax-compatibility mode: JAX's mutable array references.

revax has none. flax's nnx reads `jax.Ref` (to ask `isinstance(x, Ref)`) and only creates
references for Variables made with `ref=True` (its default is False). So `Ref` is a type that
no revax value is an instance of, and `new_ref` raises NotImplementedError naming it.
"""
from __future__ import annotations


class Ref:
  """A mutable array reference (revax makes none: nothing is an instance)."""

  def __init__(self, *args, **kwargs):
    raise NotImplementedError("jax.Ref: revax has no mutable array references")


def new_ref(init_val, *, memory_space=None, kind=None):
  """JAX's mutable array reference constructor: refused (revax has no mutable references)."""
  del init_val, memory_space, kind
  raise NotImplementedError("jax.new_ref: revax has no mutable array references (flax's "
                            "nnx.var_defaults(ref=True) cannot run on revax)")
