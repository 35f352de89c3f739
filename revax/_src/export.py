"""revax.export: a jitted function saved as StableHLO, to be loaded and called later.

`export(jit(f))(*args)` traces and lowers `f` for the avals of `args` (arrays or
`ShapeDtypeStruct`s) and returns an `Exported`: the StableHLO module, the input and output avals
and pytree structures, and where the VJP comes from. `Exported.serialize()` gives versioned bytes
and `deserialize(bytes)` loads them back, in this process or another one, with no access to `f`.

`Exported.call(*args)` runs the program: eagerly it compiles the module (the persistent
compilation cache makes that a load after the first time); under `jit` it is the
`call_exported` primitive, whose lowering copies the module's functions into the caller's module
and calls its main function; under `grad` it is a custom_vjp whose backward pass calls the
exported VJP (serialized alongside when `serialize(vjp_order=k)` asks for it, as JAX does). A
call checks the arguments' structure, shapes and dtypes against the exported ones first.

Shape polymorphism: arguments with symbolic sizes (`symbolic_shape`, `symbolic_args_specs`)
give avals with `DimExpr`s. revax lowers with static shapes only, so such an export keeps its
traced program (a closed jaxpr) instead of a module; each call solves the dimension variables
from the argument shapes, checks JAX's shape assertions (raising JAX's ValueErrors), and lowers
and compiles the program specialised to those sizes, once per set of sizes
(export_shape_poly.py). Its VJP is a shape-polymorphic export too.

The format: the magic `RVXEXPRT`, a little-endian u32 format version, a u32 length, a JSON header
(names, avals, pytree structures; for a shape-polymorphic export its program as JSON data,
export_jaxpr_json.py), then the module text; VJPs follow as nested exports. Custom pytree nodes
are written through the registrations of export_pytrees.py.
"""
from __future__ import annotations

import dataclasses
import json
import re
import struct
import weakref
from typing import Callable

import numpy as np

from revax._src import export_jaxpr_json as jaxpr_json
from revax._src import export_shape_poly as poly
from revax._src.export_pytrees import decode_tree, encode_tree
from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.aval_json import aval_from_json, aval_to_json
from revax._src.runtime.array import Array
from revax._src.shape_dtype_struct import ShapeDtypeStruct
from revax._src.shape_dtype_struct import abstractify as _abstractify

__all__ = ["Exported", "export", "deserialize", "call_exported_p",
           "minimum_supported_calling_convention_version",
           "maximum_supported_calling_convention_version", "default_export_platform"]

_MAGIC = b"RVXEXPRT"
_FORMAT_VERSION = 2  # 2: shape-polymorphic exports (their program as JSON, export_jaxpr_json)
_READABLE_VERSIONS = (1, 2)
_PREFIX = struct.Struct("<8sII")  # magic, format version, header length
minimum_supported_calling_convention_version = 1
maximum_supported_calling_convention_version = 1


def default_export_platform() -> str:
  """The platform `export` targets when none is given: the default backend's."""
  from revax._src.runtime.client import get_backend
  return get_backend().platform


@dataclasses.dataclass(frozen=True)
class Exported:
  """A function lowered for fixed argument types, callable and serializable without its source.

  Attributes:
    fun_name: the exported function's name.
    in_tree, out_tree: pytree structures of the arguments `(args, kwargs)` and of the results.
    in_avals, out_avals: the flat arguments' and results' shapes and dtypes.
    platforms: the platforms the module was lowered for.
    nr_devices: how many devices the program runs on (1).
    calling_convention_version: the version of the module's calling convention.
    mlir_module_serialized: the StableHLO module text, as bytes (empty for a shape-polymorphic
      export, which keeps its program and lowers it at each call's concrete shapes).
    disabled_safety_checks: the `DisabledSafetyCheck`s given to `export`.
  """
  fun_name: str
  in_tree: object
  in_avals: tuple
  out_tree: object
  out_avals: tuple
  platforms: tuple
  nr_devices: int
  calling_convention_version: int
  mlir_module_serialized: bytes
  disabled_safety_checks: tuple = ()
  _get_vjp: Callable[[], "Exported"] | None = dataclasses.field(default=None, repr=False,
                                                                 compare=False)
  # A shape-polymorphic export keeps its traced program (a closed jaxpr with symbolic sizes),
  # specialised to the concrete sizes of each call (export_shape_poly.py); None otherwise.
  _poly_jaxpr: ClosedJaxpr | None = dataclasses.field(default=None, repr=False, compare=False)

  def _is_poly(self) -> bool:
    return self._poly_jaxpr is not None

  def mlir_module(self) -> str:
    """The StableHLO module, as text."""
    if self._is_poly():
      raise NotImplementedError(
          f"the StableHLO module of the shape-polymorphic export {self.fun_name}: revax lowers "
          "with static shapes only, so it keeps the traced program and lowers it for the "
          "concrete shapes of each call")
    return self.mlir_module_serialized.decode()

  def has_vjp(self) -> bool:
    """Whether `vjp()` (and so reverse-mode differentiation of `call`) is available."""
    return self._get_vjp is not None

  def vjp(self) -> "Exported":
    """The exported VJP: a function of (primal args..., output cotangents...) returning the
    cotangents of the inexact arguments."""
    if self._get_vjp is None:
      raise ValueError("No VJP is available: export the function again, or serialize it with "
                       "serialize(vjp_order=1) or higher to keep its VJP")
    return self._get_vjp()

  def serialize(self, vjp_order: int = 0) -> bytearray:
    """Versioned bytes that `revax.export.deserialize` turns back into this `Exported`.

    Args:
      vjp_order: how many orders of VJP to include (needed to differentiate the loaded
        function).
    """
    if vjp_order < 0:
      raise ValueError(f"vjp_order must be >= 0, got {vjp_order}")
    header = {
        "fun_name": self.fun_name,
        "in_tree": encode_tree(self.in_tree), "out_tree": encode_tree(self.out_tree),
        "in_avals": [self._aval_json(a) for a in self.in_avals],
        "out_avals": [self._aval_json(a) for a in self.out_avals],
        "platforms": list(self.platforms), "nr_devices": self.nr_devices,
        "calling_convention_version": self.calling_convention_version,
        "module_size": len(self.mlir_module_serialized),
        "disabled_safety_checks": [str(c) for c in self.disabled_safety_checks],
    }
    if self._is_poly():
      header["poly"] = jaxpr_json.encode_poly_jaxpr(
          self._poly_jaxpr, poly.scope_of(self.in_avals), self.fun_name)
    vjp_bytes = bytes(self.vjp().serialize(vjp_order - 1)) if vjp_order > 0 else b""
    header["vjp_size"] = len(vjp_bytes)
    head = json.dumps(header, sort_keys=True).encode()
    return bytearray(_PREFIX.pack(_MAGIC, _FORMAT_VERSION, len(head)) + head
                     + self.mlir_module_serialized + vjp_bytes)

  def _aval_json(self, aval):
    return jaxpr_json.encode_aval(aval, self.fun_name) if self._is_poly() else aval_to_json(aval)

  def call(self, *args, **kwargs):
    """Call the exported function on arrays with the exported structure, shapes and dtypes.

    Works eagerly, under `jit`, and under `grad` when a VJP is available.
    """
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    if treedef != self.in_tree:
      raise ValueError(f"The invocation args and kwargs must have the same pytree structure as "
                       f"the exported function {self.fun_name}: exported for {self.in_tree}, "
                       f"called with {treedef}")
    _check_avals(self, [get_aval(x) for x in leaves])
    outs = _call_flat(self, leaves)
    return tree_util.tree_unflatten(self.out_tree, outs)


def _check_avals(exp: Exported, avals) -> dict:
  """Check a call's argument types; returns the values of the dimension variables."""
  if exp._is_poly():
    poly.check_call_avals(exp.in_avals, avals, exp.in_tree)
    return poly.solve_dim_vars(exp.in_avals, avals, exp.in_tree)
  for i, (got, want) in enumerate(zip(avals, exp.in_avals, strict=True)):
    if got.shape != want.shape:
      raise ValueError(f"Shape mismatch for argument {i} of exported function {exp.fun_name}: "
                       f"expected {want.str_short()} and called with {got.str_short()}")
    if got.dtype != want.dtype:
      raise ValueError(f"Dtype mismatch for argument {i} of exported function {exp.fun_name}: "
                      f"expected {want.str_short()} and called with {got.str_short()}")
  return {}


def _call_flat(exp: Exported, leaves):
  if exp._get_vjp is None or not any(dtypes.is_inexact(a.dtype) for a in exp.in_avals):
    return call_exported_p.bind(*leaves, exported=exp)
  from revax._src.custom_derivatives import custom_vjp

  @custom_vjp
  def f(*xs):
    return tuple(call_exported_p.bind(*xs, exported=exp))

  def fwd(*xs):
    return f(*xs), xs

  def bwd(xs, cts):
    vjp = exp.vjp()
    cts = [ad.instantiate_zeros(c) if isinstance(c, ad.Zero) else c for c in cts]
    inexact = iter(call_exported_p.bind(*xs, *cts, exported=vjp))
    return tuple(next(inexact) if dtypes.is_inexact(a.dtype)
                 else np.zeros(a.shape, dtypes.float0) for a in exp.in_avals)

  f.defvjp(fwd, bwd)
  return list(f(*leaves))


# --- exporting --------------------------------------------------------------------------------------
def export(fun_jit, *, platforms=None, disabled_checks=()):
  """Export a jitted function: `export(jit(f))(*args)` returns an `Exported`.

  Args:
    fun_jit: the result of `revax.jit`.
    platforms: the platforms to lower for; only the default backend's is supported.
    disabled_checks: `DisabledSafetyCheck`s, recorded in the `Exported` (revax's exports run
      on the platform they were made for and emit no custom calls, so there is nothing to
      skip).

  Returns:
    A function of arrays or `ShapeDtypeStruct`s (and their pytrees) that traces, lowers and
    returns the `Exported`.

  Example:
    >>> exp = revax.export.export(revax.jit(jnp.sin))(revax.ShapeDtypeStruct((3,), jnp.float32))
    >>> [(a.shape, a.dtype) for a in exp.in_avals + exp.out_avals]
    [((3,), dtype('float32')), ((3,), dtype('float32'))]
    >>> revax.export.deserialize(exp.serialize()).call(jnp.zeros(3))
    Array([0., 0., 0.], dtype=float32)
  """
  from revax._src.jit import Jitted
  if not isinstance(fun_jit, Jitted):
    raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
  platform = default_export_platform()
  platforms = (platform,) if platforms is None else tuple(p.lower() for p in platforms)
  if platforms != (platform,):
    raise ValueError(f"revax exports for the platform it runs on ({platform!r}); "
                     f"platforms={platforms} was requested")
  for c in disabled_checks:
    if not isinstance(c, poly.DisabledSafetyCheck):
      raise ValueError(f"disabled_checks must be DisabledSafetyCheck objects, got {c!r}")

  def do_export(*args, **kwargs) -> Exported:
    exported = _export_traced(fun_jit, args, kwargs, platforms)
    return dataclasses.replace(exported, disabled_safety_checks=tuple(disabled_checks))

  return do_export


def _export_traced(fun_jit, args, kwargs, platforms) -> Exported:
  leaves, key_head, call, names = fun_jit._split(args, kwargs)
  in_tree = key_head[0]
  avals = tuple(_abstractify(x) if isinstance(x, ShapeDtypeStruct) else get_aval(x)
                for x in leaves)
  if poly.is_poly_avals(avals):
    return _export_poly(fun_jit, call, avals, names, in_tree, platforms)
  entry = fun_jit._trace(call, avals, names)
  closed = _bake_consts(entry.jaxpr, entry.consts)
  poly.check_dim_vars_known(closed, avals)  # a symbolic size from elsewhere (a static arg)
  text = mlir.lower_jaxpr_to_module(closed, entry.name, platform=platforms[0])
  return _exported(entry, closed, call, avals, in_tree, platforms,
                   mlir_module_serialized=text.encode())


def _export_poly(fun_jit, call, avals, names, in_tree, platforms) -> Exported:
  """Trace at symbolic shapes; keep the program to specialise at each call's shapes."""
  fun_name = getattr(fun_jit, "__name__", None) or getattr(fun_jit.fun, "__name__", "<fun>")
  poly.scope_of(avals, in_tree, fun_name)  # one scope for all the dimension variables
  poly.check_solvable(avals, in_tree)
  entry = fun_jit._trace(call, avals, names)
  closed = _bake_consts(entry.jaxpr, entry.consts)
  poly.check_dim_vars_known(closed, avals)
  return _exported(entry, closed, call, avals, in_tree, platforms, mlir_module_serialized=b"",
                   _poly_jaxpr=closed)


def _exported(entry, closed, call, avals, in_tree, platforms, **program) -> Exported:
  """The Exported of a traced one-device function: `program` holds its module (or, for a
  shape-polymorphic export, the jaxpr it is specialised from); its VJP is exported on demand."""
  def flat_fun(*xs):
    return call(*xs)

  return Exported(
      fun_name=entry.name, in_tree=in_tree, in_avals=tuple(avals), out_tree=entry.out_tree,
      out_avals=tuple(closed.out_avals), platforms=platforms, nr_devices=1,
      calling_convention_version=maximum_supported_calling_convention_version,
      _get_vjp=_lazy(lambda: _export_vjp(flat_fun, avals, entry.name, platforms)), **program)


def _bake_consts(jaxpr: ClosedJaxpr, consts) -> ClosedJaxpr:
  """The jit jaxpr takes its closed-over values as leading operands; an export embeds them."""
  if not consts:
    return jaxpr
  j = jaxpr.jaxpr
  n = len(consts)
  values = [np.asarray(c) for c in consts]
  return ClosedJaxpr(Jaxpr(list(j.constvars) + j.invars[:n], j.invars[n:], j.outvars, j.eqns),
                     list(jaxpr.consts) + values)


def _export_vjp(flat_fun, avals, name, platforms) -> Exported:
  """Export (primals..., output cotangents...) -> cotangents of the inexact primals."""
  from revax._src.autodiff import vjp
  from revax._src.jit import jit
  nargs = len(avals)

  def fun_vjp(*xs):
    primals, cts = xs[:nargs], xs[nargs:]
    diff = [i for i, a in enumerate(avals) if dtypes.is_inexact(a.dtype)]

    def of_inexact(*d):
      full = list(primals)
      for i, v in zip(diff, d, strict=True):
        full[i] = v
      return tree_util.tree_leaves(flat_fun(*full))

    _, pullback = vjp(of_inexact, *[primals[i] for i in diff])
    return list(pullback(list(cts)))

  out_avals = _out_avals(flat_fun, avals)
  ct_avals = [ShapedArray(a.shape, a.dtype) for a in out_avals]
  fun_vjp.__name__ = f"{name}_vjp"
  primal_structs = [_struct(a) for a in avals] + [_struct(a) for a in ct_avals]
  return _export_traced(jit(fun_vjp), tuple(primal_structs), {}, platforms)


def _out_avals(flat_fun, avals):
  from revax._src.interpreters import staging
  jaxpr, _ = staging.trace_to_jaxpr(lambda *xs: tree_util.tree_leaves(flat_fun(*xs)), avals)
  return jaxpr.out_avals


def _struct(aval):
  return ShapeDtypeStruct(aval.shape, aval.dtype, aval.weak_type)


def _lazy(make):
  box = []

  def get():
    if not box:
      box.append(make())
    return box[0]
  return get


# --- (de)serialization ---------------------------------------------------------------------------
def deserialize(blob) -> Exported:
  """Load an `Exported` from the bytes `Exported.serialize()` returned.

  Raises:
    ValueError: the bytes are not a revax export, or of a format version this revax cannot read.
  """
  exported, end = _deserialize_at(bytes(blob), 0)
  if end != len(blob):
    raise ValueError(f"revax export: {len(blob) - end} unexpected bytes after the program")
  return exported


def _deserialize_at(data: bytes, start: int) -> tuple[Exported, int]:
  if len(data) - start < _PREFIX.size:
    raise ValueError("not a serialized revax export (too short)")
  magic, version, head_size = _PREFIX.unpack_from(data, start)
  if magic != _MAGIC:
    raise ValueError("not a serialized revax export (bad magic)")
  if version not in _READABLE_VERSIONS:
    raise ValueError(f"revax export format version {version} is not supported: this revax reads "
                     f"versions {_READABLE_VERSIONS}; export the function again with this revax")
  pos = start + _PREFIX.size
  try:
    header = json.loads(data[pos:pos + head_size])
    pos += head_size
    module = data[pos:pos + header["module_size"]]
    pos += header["module_size"]
    poly_jaxpr = None
    if "poly" in header:
      poly_jaxpr, scope = jaxpr_json.decode_poly_jaxpr(header["poly"], deserialize)
      read_aval = lambda a: jaxpr_json.decode_aval(a, scope)  # noqa: E731
    else:
      read_aval = aval_from_json
    in_avals = tuple(read_aval(a) for a in header["in_avals"])
    out_avals = tuple(read_aval(a) for a in header["out_avals"])
    tree_codes = header["in_tree"], header["out_tree"]
    vjp_size = header["vjp_size"]
  except (KeyError, TypeError, ValueError) as e:
    raise ValueError(f"corrupt revax export ({type(e).__name__}: {e})") from None
  in_tree, out_tree = (decode_tree(c) for c in tree_codes)  # names unregistered node types
  if len(module) != header["module_size"]:
    raise ValueError("corrupt revax export (truncated module)")
  get_vjp = None
  if vjp_size:
    vjp_exported, end = _deserialize_at(data, pos)
    if end != pos + vjp_size:
      raise ValueError("corrupt revax export (VJP size mismatch)")
    pos = end
    get_vjp = lambda: vjp_exported  # noqa: E731
  if header["calling_convention_version"] > maximum_supported_calling_convention_version:
    raise ValueError(f"calling convention {header['calling_convention_version']} is newer than "
                     "this revax supports")
  return Exported(fun_name=header["fun_name"], in_tree=in_tree, in_avals=in_avals,
                  out_tree=out_tree, out_avals=out_avals, platforms=tuple(header["platforms"]),
                  nr_devices=header["nr_devices"],
                  calling_convention_version=header["calling_convention_version"],
                  mlir_module_serialized=module, _get_vjp=get_vjp, _poly_jaxpr=poly_jaxpr,
                  disabled_safety_checks=tuple(
                      poly.DisabledSafetyCheck(c)
                      for c in header.get("disabled_safety_checks", ()))), pos


# --- the call_exported primitive ------------------------------------------------------------------
call_exported_p = Primitive("call_exported", multiple_results=True)


def _call_exported_abstract_eval(*avals, exported: Exported):
  env = _check_avals(exported, avals)
  return [poly.concrete_aval(a, env) for a in exported.out_avals]


_programs: dict = {}
_specialized = weakref.WeakKeyDictionary()  # poly jaxpr -> {dimension values: module etc.}


def _module_for(exported: Exported, avals):
  """(module text, argument avals, result avals) of the program a call with `avals` runs: the
  exported module, or for a shape-polymorphic export its program specialised to those
  shapes (made once per set of sizes)."""
  if not exported._is_poly():
    return exported.mlir_module(), exported.in_avals, exported.out_avals
  env = _check_avals(exported, avals)
  key = tuple(sorted(env.items()))
  cache = _specialized.setdefault(exported._poly_jaxpr, {})
  hit = cache.get(key)
  if hit is None:
    closed = poly.specialize(exported._poly_jaxpr, env)
    text = mlir.lower_jaxpr_to_module(closed, exported.fun_name,
                                      platform=exported.platforms[0])
    hit = cache[key] = (text, tuple(closed.in_avals), tuple(closed.out_avals))
  return hit


def _call_exported_impl(*args, exported: Exported):
  avals = [get_aval(x) for x in args]
  text, in_avals, out_avals = _module_for(exported, avals)
  program = _programs.get(text)
  if program is None:
    from revax._src.runtime.client import get_backend
    executable = get_backend().compile(text)
    program = dispatch.CompiledProgram(executable, in_avals, out_avals, text, exported.fun_name)
    _programs[text] = program
  return program.call_arrays(args)


_FUNC_NAME = re.compile(r"^  func\.func (?:public|private) @([\w$.]+)\(", re.MULTILINE)


def _call_exported_lower(ctx, *args, exported: Exported):
  """Copy the module's functions into the caller's module (renamed apart) and call its main."""
  module = ctx.module
  text, _, out_avals = _module_for(exported, ctx.avals_in)
  key = ("call_exported", text)
  main = module._lowered_calls.get(key)
  if main is None:
    names = _FUNC_NAME.findall(text)
    renamed = {n: module.fresh_func_name(f"{exported.fun_name}_{n}") for n in names}
    # revax's modules are `module @name attributes {...} {` on one line, functions, then `}`
    body = text[text.index("\n") + 1:text.rindex("}")].strip("\n")
    body = re.sub(r"@([\w$.]+)\b", lambda m: "@" + renamed.get(m.group(1), m.group(1)), body)
    body = body.replace("func.func public @", "func.func private @")
    module.funcs.append(body)
    main = module._lowered_calls[key] = renamed["main"]
  return ctx.fb.op("func.call", args, [mlir.ir_type(a) for a in out_avals],
                   props={"callee": f"@{main}"})


def _call_exported_batch(vals, dims, *, exported: Exported):
  raise NotImplementedError(
      f"vmap of the exported function {exported.fun_name}: an Exported is lowered for fixed "
      "shapes; export a vmapped function instead (revax.export.export(revax.jit(revax.vmap(f))))")


call_exported_p.def_abstract_eval(_call_exported_abstract_eval)
dispatch.custom_impls[call_exported_p] = _call_exported_impl
mlir.register_lowering(call_exported_p, _call_exported_lower)
ad.not_differentiable(call_exported_p, "an exported program is differentiated through its "
                      "exported VJP (Exported.call wraps it in a custom_vjp)")
batching.primitive_batchers[call_exported_p] = _call_exported_batch
inv.not_invertible(call_exported_p, "an exported program is opaque StableHLO")
