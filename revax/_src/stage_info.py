"""What JAX's stages (`jax.stages.Traced`, `Lowered`) report about the call they were made for:
the dynamic arguments' structure, avals and donation, the results' structure and types, the
function's name. jit_stages.py's `Traced`, `Lowered` and `ShardedLowered` share
these attributes through `StageAttributes`, reading a `Signature` made when the stage was."""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.runtime import hlo_dump
from revax._src.runtime.array import Array
from revax._src.runtime.client import get_backend
from revax._src.shape_dtype_struct import ShapeDtypeStruct
from revax._src.stages import ArgInfo

__all__ = ["Signature", "StageAttributes", "StableHLOModule", "XlaComputation"]


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
               [a.strip_weak_type() for a in out] if lowered else out)


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


class XlaComputation:
  """What `Lowered.compiler_ir("hlo")` returns, as JAX's `XlaComputation` of jaxlib: the
  lowered module in XLA's HLO, as XLA converted it (XLA compiles the module once and dumps the
  HLO it got before its optimizations, see runtime/hlo_dump.py). It has JAX's
  `as_hlo_text(print_large_constants=False)`, `as_serialized_hlo_module_proto()` and `name()`;
  jaxlib's `as_hlo_module()`, `get_hlo_module()`, `program_shape()`, `as_hlo_dot_graph()` and
  `hash()` (objects of XLA's C++ classes) are refused by name.

  Example:
    >>> hlo = revax.jit(lambda x: x * x).lower(1.0).compiler_ir("hlo")
    >>> print(hlo.as_hlo_text())  # doctest: +NORMALIZE_WHITESPACE
    HloModule jit__lambda, entry_computation_layout={(f32[])->f32[]}
    <BLANKLINE>
    ENTRY %main.1 (Arg_0.1: f32[]) -> f32[] {
      %Arg_0.1 = f32[] parameter(0)
      ROOT %multiply.1 = f32[] multiply(%Arg_0.1, %Arg_0.1)
    }
    <BLANKLINE>
  """
  __slots__ = ("_module", "_backend", "_texts", "_proto")

  def __init__(self, module_text: str, backend):
    self._module, self._backend = module_text, backend
    self._texts: dict[bool, str] = {}
    self._proto = None
    self.as_hlo_text()  # converted now, as JAX does: a module XLA refuses raises here

  def as_hlo_text(self, print_large_constants: bool = False) -> str:
    """The HLO module as text; large constants print as `{...}` unless
    `print_large_constants`."""
    key = bool(print_large_constants)
    if key not in self._texts:
      self._texts[key], self._proto = hlo_dump.hlo_before_optimizations(
          self._backend, self._module, print_large_constants=key)
    return self._texts[key]

  def as_serialized_hlo_module_proto(self) -> bytes:
    """The HLO module as a serialized `xla.HloModuleProto`."""
    return self._proto

  def name(self) -> str:
    """The module's name (`jit_f` for `jit(f)`)."""
    return self._texts[False].split(",", 1)[0].split()[1]

  def _refuse(what):
    def refused(self, *args, **kwargs):
      raise NotImplementedError(f"XlaComputation.{what}(): revax has the HLO module as text and "
                                "as a serialized HloModuleProto only (as_hlo_text(), "
                                "as_serialized_hlo_module_proto()), not XLA's C++ objects")
    refused.__name__ = what
    return refused

  as_hlo_module = _refuse("as_hlo_module")
  get_hlo_module = _refuse("get_hlo_module")
  program_shape = _refuse("program_shape")
  as_hlo_dot_graph = _refuse("as_hlo_dot_graph")
  hash = _refuse("hash")
  del _refuse

  def __repr__(self):
    return f"<XlaComputation {self.name()}>"


def compiler_ir(text: str, dialect: str | None = None):
  """The lowered module in `dialect`: "stablehlo" (the default), a `StableHLOModule`; or "hlo",
  an `XlaComputation` (XLA's HLO as XLA converts the module, on the default backend)."""
  if dialect not in (None, "stablehlo", "hlo"):
    raise ValueError(f"unknown dialect: {dialect}")
  if dialect == "hlo":
    return XlaComputation(text, get_backend())
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
