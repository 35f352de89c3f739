"""What JAX's stages (`jax.stages.Traced`, `Lowered`) report about the call they were made for:
the dynamic arguments' structure, avals and donation, the results' structure and types, the
function's name. jit_stages.py's `Traced`, `Lowered` and `ShardedLowered` share
these attributes through `StageAttributes`, reading a `Signature` made when the stage was."""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.runtime.array import Array
from revax._src.shape_dtype_struct import ShapeDtypeStruct
from revax._src.stages import ArgInfo

__all__ = ["Signature", "StageAttributes"]


class Signature:
  """The call a stage (`Traced`, `Lowered`) was made for, as JAX's stages describe it: the
  dynamic arguments' structure and types (static arguments left out), which are donated, and
  the results' structure and types. A lowered stage reports results without weak types, as
  JAX's does."""

  def __init__(self, fun_name, in_tree, avals, donated, donate_argnums, out_tree, out_avals):
    self.fun_name, self.in_tree, self.out_tree = fun_name, in_tree, out_tree
    self.avals, self.donated, self.out_avals = list(avals), list(donated), list(out_avals)
    self.donate_argnums = tuple(donate_argnums)

  @classmethod
  def for_call(cls, fun_name, in_tree, leaves, donated, donate_argnums, entry,
               lowered=False) -> "Signature":
    """The signature of a call of the jitted function `fun_name` on dynamic `leaves` of
    structure `in_tree` (`donated`: per leaf, whether it is donated), traced as `entry`."""
    out = entry.jaxpr.out_avals
    return cls(fun_name, in_tree, [x.aval if isinstance(x, Array) else get_aval(x) for x in leaves],
               donated, donate_argnums, entry.out_tree,
               [a.update(weak_type=False) for a in out] if lowered else out)


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
    sig = self._signature
    return tree_util.tree_unflatten(sig.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                                   for a in sig.out_avals])


class StableHLOModule:
  """What `Lowered.compiler_ir()` returns in revax: the lowered StableHLO module, whose `str()`
  is its MLIR text (JAX returns an MLIR Python `ir.Module`, which prints the same way; revax
  emits StableHLO as text and has no MLIR Python bindings)."""
  __slots__ = ("_text",)

  def __init__(self, text: str):
    self._text = text

  def __str__(self):
    return self._text

  def as_text(self) -> str:
    return self._text

  def __repr__(self):
    return f"<StableHLO module, {len(self._text)} characters>"


def compiler_ir(text: str, dialect: str | None = None) -> StableHLOModule:
  """The lowered module in `dialect` ("stablehlo", the default). "hlo" (XLA's HLO, which JAX
  converts to with XLA's own converter) is refused: revax has no such converter."""
  if dialect not in (None, "stablehlo", "hlo"):
    raise ValueError(f"unknown dialect: {dialect}")
  if dialect == "hlo":
    raise NotImplementedError("compiler_ir(dialect='hlo'): revax has no StableHLO-to-HLO "
                              "converter; use compiler_ir() (StableHLO) or as_text()")
  return StableHLOModule(text)


def check_compile_args(compiler_options, device_assignment, *, options_supported=False) -> None:
  """`Lowered.compile(compiler_options, device_assignment=)`: XLA options (a dict of option
  name -> str/bool/int/float) are handed to XLA where `options_supported` (a one-program
  jit), refused by name elsewhere; revax places programs itself, so a device_assignment is
  refused by name."""
  if compiler_options:
    if not options_supported:
      raise NotImplementedError(f"compile(compiler_options={compiler_options!r}): revax passes "
                                "no options to XLA for programs over a mesh")
    if not isinstance(compiler_options, dict):
      raise TypeError(f"compiler_options must be a dict, got {type(compiler_options).__name__}")
  if device_assignment is not None:
    raise NotImplementedError("compile(device_assignment=...): revax places programs from "
                              "their arguments' devices and shardings")
