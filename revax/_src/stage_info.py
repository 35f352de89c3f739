"""What JAX's stages (`jax.stages.Traced`, `Lowered`) report about the call they were made for:
the dynamic arguments' structure, avals and donation, the results' structure and types, the
function's name. jit.py's `Traced` and `Lowered` and sharded_jit.py's `ShardedLowered` share
these attributes through `StageAttributes`, reading a `Signature` made when the stage was."""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.runtime.array import Array

__all__ = ["Signature", "StageAttributes"]


class Signature:
  """The call a stage (`Traced`, `Lowered`) was made for, as JAX's stages describe it: the
  dynamic arguments' structure and types (static arguments left out), which are donated, and
  the results' structure and types. A lowered stage reports results without weak types, as
  JAX's does."""

  def __init__(self, jitted, args, kwargs, in_tree, leaves, entry, lowered=False):
    self.fun_name = jitted.name
    self.in_tree = in_tree
    self.avals = [x.aval if isinstance(x, Array) else get_aval(x) for x in leaves]
    self.donated = jitted._donated_leaves(args, kwargs)
    self.donate_argnums = tuple(jitted._donate_argnums)
    self.out_tree = entry.out_tree
    out = entry.jaxpr.out_avals
    self.out_avals = [a.update(weak_type=False) for a in out] if lowered else list(out)


class StageAttributes:
  """JAX's attributes of a stage, read from its `_signature`."""

  fun_name = property(lambda self: self._signature.fun_name)
  in_tree = property(lambda self: self._signature.in_tree)
  donate_argnums = property(lambda self: self._signature.donate_argnums)
  out_tree = property(lambda self: self._signature.out_tree)

  @property
  def in_avals(self):
    """The dynamic arguments' avals, as the pytree `((args...), {kwargs})`."""
    sig = self._signature
    return tree_util.tree_unflatten(sig.in_tree, sig.avals)

  @property
  def args_info(self):
    """The dynamic arguments as `stages.ArgInfo` (aval, donated), as the pytree of `in_avals`."""
    from revax._src.stages import ArgInfo
    sig = self._signature
    return tree_util.tree_unflatten(sig.in_tree, [ArgInfo(a, d) for a, d in
                                                  zip(sig.avals, sig.donated, strict=True)])

  @property
  def out_avals(self):
    sig = self._signature
    return tree_util.tree_unflatten(sig.out_tree, sig.out_avals)

  @property
  def out_info(self):
    """The results as ShapeDtypeStructs, in the results' pytree."""
    from revax._src.api import ShapeDtypeStruct
    sig = self._signature
    return tree_util.tree_unflatten(sig.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                                   for a in sig.out_avals])
