"""ffi_call: a user's compiled C function (an XLA FFI handler) as a primitive.

`register_ffi_target(name, fn)` registers the function with XLA (runtime/ffi.py);
`ffi_call(name, result_shape_dtypes, ...)(*args, **attrs)` binds `ffi_call_p`, which lowers to
`stablehlo.custom_call @name(args) {api_version = 4, backend_config = {attrs}}`. Eagerly it is
compiled alone like any primitive without a NumPy implementation. It batches as `vmap_method`
says (lax/callbacks.py's `callback_batch`); it has no derivative (wrap it in custom_jvp/vjp).
A target nobody registered is refused when the program is compiled, with XLA's message.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from revax._src.core import dtypes, vma
from revax._src.core.avals import get_aval
from revax._src.core import effect_types as eff
from revax._src.core.effects import def_effectful, def_effects
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax.callbacks import VMAP_METHODS, callback_batch, custom_call_op
from revax._src.lax.callbacks import _result_avals as result_avals_of
from revax._src.runtime import ffi

__all__ = ["ffi_call", "ffi_call_p", "register_ffi_target", "pycapsule", "include_dir",
           "register_ffi_type", "register_ffi_type_id"]


def register_ffi_target(name: str, fn, platform: str = "cpu", api_version: int = 1,
                        **kwargs) -> None:
  """Register a C function as the FFI target `name`, for use with `ffi_call`.

  Args:
    name: the target name.
    fn: the handler (an `XLA_FFI_Handler`, e.g. written with XLA's `XLA_FFI_DEFINE_HANDLER`
      against the headers in `include_dir()`): a PyCapsule holding its address, a ctypes
      function, or a dict {stage: handler} over "instantiate", "prepare", "initialize" and
      "execute" (a stateful handler: its instantiate stage makes the state, see
      `register_ffi_type`).
    platform: the platform, e.g. ``"cpu"``.
    api_version: 1 (typed FFI). 0 (the legacy custom-call API) is not supported by XLA:CPU.
    **kwargs: `traits` (XLA_FFI_Handler_Traits bits) is understood; nothing else is.

  Raises:
    RuntimeBackendError: XLA refused the handler, e.g. one compiled against FFI headers of
      another version than the plugin's (XLA's message names both versions).

  Example:
    >>> import ctypes
    >>> lib = ctypes.cdll.LoadLibrary("./libkernel.so")  # doctest: +SKIP
    >>> revax.ffi.register_ffi_target("my_kernel", revax.ffi.pycapsule(lib.MyKernel))  # doctest: +SKIP
    >>> # (skipped: needs a compiled XLA FFI kernel library)
  """
  if api_version != 1:
    raise NotImplementedError(
        f"register_ffi_target: api_version={api_version} (the legacy custom-call API) is not "
        "supported by XLA:CPU; write the handler with the typed FFI (api_version=1)")
  traits = int(kwargs.pop("traits", 0))
  if kwargs:
    raise TypeError(f"register_ffi_target got unexpected arguments {sorted(kwargs)}")
  if isinstance(fn, dict):
    unknown = set(fn) - set(_STAGES)
    if unknown or "execute" not in fn:
      raise ValueError(f"register_ffi_target: the stages of a handler bundle are "
                       f"{list(_STAGES)}, with 'execute' among them; got {sorted(fn)}")
    bundle = {stage: ffi.capsule_address(handler) for stage, handler in fn.items()}
    ffi.register_handler(name, bundle, platform, traits)
    return
  ffi.register_handler(name, ffi.capsule_address(fn), platform, traits)


_STAGES = ("instantiate", "prepare", "initialize", "execute")


def include_dir() -> str:
  """The directory of the XLA FFI C/C++ headers to compile handlers against (jax.ffi's).

  It holds `xla/ffi/api/c_api.h`, `api.h` and `ffi.h`: XLA's headers (Apache 2.0) at the FFI
  version of revax's XLA:CPU plugin (0.2; jax 0.10.2's jaxlib ships 0.3, whose handlers that
  plugin refuses). Compile with ``-I`` this directory and C++17.

  Returns:
    The directory's path.

  Example:
    >>> import os
    >>> os.path.exists(os.path.join(revax.ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))
    True
  """
  package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  return os.path.join(package, "include")


def register_ffi_type_id(name: str, obj, platform: str = "cpu") -> None:
  """jax 0.10.2's `register_ffi_type_id`: removed there (it always raises); use
  `register_ffi_type`.

  Raises:
    ValueError: always, with jax's message.
  """
  del name, obj, platform
  raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration, platform: str = "cpu") -> None:
  """Register a user-defined type with XLA's FFI (e.g. the state of a stateful handler, which
  must be registered before the handler).

  Args:
    name: the type's name, unique in the process.
    type_registration: a dict with `type_id`, a PyCapsule pointing to the type's
      `XLA_FFI_TypeId` (an int64: 0 there asks XLA to assign an id, written back), and
      optionally `type_info`, a PyCapsule pointing to its `XLA_FFI_TypeInfo`.
    platform: the target platform.

  Raises:
    RuntimeBackendError: jax's errors: not a dict with a `type_id`, values that are not
      PyCapsules, or a name registered already with another id.

  Example:
    >>> import ctypes
    >>> lib = ctypes.cdll.LoadLibrary("./libstate.so")  # doctest: +SKIP
    >>> tid = revax.ffi.pycapsule(lib.MyStateTypeId)  # doctest: +SKIP
    >>> revax.ffi.register_ffi_type("my_state", {"type_id": tid})  # doctest: +SKIP
    >>> # (skipped: needs a compiled library holding the type's id)
  """
  from revax._src.runtime.pjrt import RuntimeBackendError
  if not isinstance(type_registration, dict) or "type_id" not in type_registration:
    raise RuntimeBackendError(
        "INVALID_ARGUMENT", "The type_id argument to register_custom_call_type must be a "
        "dictionary holding a pointer to a XLA_FFI_TypeId in `type_id` and optional pointer "
        "to a XLA_FFI_TypeInfo in `type_info` fields.")
  capsules = [type_registration["type_id"], type_registration.get("type_info")]
  if any(c is not None and type(c).__name__ != "PyCapsule" for c in capsules) or (
      capsules[0] is None):
    raise RuntimeBackendError("INVALID_ARGUMENT",
                              "Custom type registration requires handlers as PyCapsules")
  type_id, type_info = (None if c is None else ffi.capsule_address(c) for c in capsules)
  ffi.register_type(name, type_id, type_info, platform)


def pycapsule(funcptr):
  """A PyCapsule holding the address of `funcptr` (a ctypes function), for
  `register_ffi_target`."""
  return ffi.make_capsule(ffi.capsule_address(funcptr))


class _HashableArray:
  """An attribute array, hashed and compared by value (primitive params must be hashable)."""
  __slots__ = ("val",)

  def __init__(self, val: np.ndarray):
    self.val = val

  def __hash__(self):
    return hash((self.val.dtype.str, self.val.shape, self.val.tobytes()))

  def __eq__(self, other):
    return (isinstance(other, _HashableArray) and self.val.dtype == other.val.dtype
            and np.array_equal(self.val, other.val))

  def __repr__(self):
    return repr(self.val)


def _attribute(name: str, value):
  if isinstance(value, (str, bool, np.generic)):
    return value
  if isinstance(value, int):
    return np.int64(value)
  if isinstance(value, float):
    return np.float64(value)
  if isinstance(value, (np.ndarray, list, tuple)):
    array = np.asarray(value)
    if array.ndim != 1:
      raise TypeError(f"ffi_call attribute {name!r} must be a scalar, a string or a 1-D array, "
                      f"got shape {array.shape}")
    return _HashableArray(array)
  raise TypeError(f"ffi_call attribute {name!r} has unsupported type {type(value).__name__}")


def build_ffi_lowering_function(call_target_name: str, *, operand_layouts=None,
                                result_layouts=None, backend_config=None,
                                skip_ffi_layout_processing: bool = False, **lowering_args):
  """A lowering rule emitting a typed-FFI custom call of `call_target_name` (jax.ffi's).

  The rule, `rule(ctx, *operands, **params)`, calls the target with the operands and the
  results of `ctx.avals_out`; `backend_config` (a dict) and the primitive's params become the
  call's attributes (typed as `ffi_call` types them: ints int64, floats float64, NumPy scalars
  as they are). Register it with revax's lowering table
  (`revax._src.interpreters.mlir.register_lowering(prim, rule)`), as JAX's with its
  `mlir.register_lowering`. It returns the call's results (revax lowers to StableHLO text, so
  the "op" JAX's returns is its list of results).

  Args:
    call_target_name: a target registered with `register_ffi_target`.
    operand_layouts, result_layouts: per value, None (row-major) or its dimensions in
      minor-to-major order (XLA's order, as in JAX).
    backend_config: a dict of attributes (JAX's legacy string configs are not supported).
    skip_ffi_layout_processing: accepted for JAX compatibility (layouts are passed as given).
    **lowering_args: `has_side_effect` (default False) and `api_version` (only 4, the typed
      FFI).

  Returns:
    The lowering rule.
  """
  del skip_ffi_layout_processing
  if isinstance(backend_config, str):
    raise NotImplementedError("string backend_config (the legacy custom-call API) is not "
                              "supported by revax's FFI lowering; pass a dict of attributes")
  api_version = lowering_args.pop("api_version", 4)
  if api_version != 4:
    raise ValueError(f"revax's FFI lowering emits typed-FFI calls (api_version=4), got "
                     f"api_version={api_version}")
  has_side_effect = bool(lowering_args.pop("has_side_effect", False))
  if lowering_args:
    raise TypeError(f"unsupported FFI lowering arguments: {sorted(lowering_args)}")
  config = dict(backend_config or {})

  def rule(ctx, *operands, **params):
    attrs = {**config, **params}
    attributes = []
    for name, value in attrs.items():
      value = _attribute(name, value)
      attributes.append((name, value.val if isinstance(value, _HashableArray) else value))
    return custom_call_op(ctx, call_target_name, operands, attributes=attributes,
                          has_side_effect=has_side_effect, operand_layouts=operand_layouts,
                          result_layouts=result_layouts)
  rule.__name__ = f"ffi_lowering_{call_target_name}"
  return rule


def ffi_lowering(call_target_name: str, *, operand_layouts=None, result_layouts=None,
                 backend_config=None, skip_ffi_layout_processing: bool = False,
                 **lowering_args):
  """A lowering rule for a primitive implemented by the FFI target `call_target_name`
  (jax.ffi's): see `build_ffi_lowering_function`, whose rule this is.

  Example:
    >>> from revax._src.core.trace import Primitive
    >>> from revax._src.interpreters import mlir
    >>> my_p = Primitive("my_kernel")
    >>> rule = mlir.register_lowering(my_p, revax.ffi.ffi_lowering("my_kernel_target"))
  """
  return build_ffi_lowering_function(
      call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
      backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
      **lowering_args)


def ffi_call(target_name: str, result_shape_dtypes, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts=None, output_layouts=None,
             input_output_aliases=None, custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None):
  """A function calling the FFI target `target_name` (see `register_ffi_target`).

  Args:
    target_name: the registered target.
    result_shape_dtypes: one object with `.shape`/`.dtype`, or a sequence of them.
    has_side_effect: never remove the call, even when its results are unused.
    vmap_method: as for `revax.pure_callback`.
    input_layouts, output_layouts: None or row-major (the only layouts revax passes).
    input_output_aliases: {input index: output index}: the output reuses the input's buffer
      (same shape and dtype), so the handler may write in place.
    custom_call_api_version: 4 (typed FFI).
    legacy_backend_config: not supported (None).

  Returns:
    `call(*args, **attributes)`: runs the target on `args` with the keyword arguments as FFI
    attributes (ints -> i64, floats -> f64, bools, strings, NumPy scalars and 1-D arrays).
    It returns one array, or a sequence matching `result_shape_dtypes`.

  Example:
    >>> x = jnp.ones(3)
    >>> call = revax.ffi.ffi_call("my_kernel", revax.ShapeDtypeStruct(x.shape, x.dtype))
    >>> y = revax.jit(lambda x: call(x, scale=2.0))(x)  # doctest: +SKIP
    >>> # (skipped: needs a kernel registered under "my_kernel", see register_ffi_target)
  """
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  if custom_call_api_version != 4 or legacy_backend_config is not None:
    raise NotImplementedError("ffi_call: only the typed FFI (custom_call_api_version=4, no "
                              "legacy_backend_config) is supported by XLA:CPU")
  multiple = isinstance(result_shape_dtypes, Sequence)
  avals, _ = result_avals_of(list(result_shape_dtypes) if multiple else [result_shape_dtypes])

  def _check_layouts(layouts, what, ranks):
    if layouts is None:
      return
    layouts = [layouts] if not multiple and what == "output" else list(layouts)
    for layout, rank in zip(layouts, ranks, strict=False):
      if layout is not None and tuple(layout) != tuple(reversed(range(rank))):
        raise NotImplementedError(f"ffi_call: {what} layout {layout} is not row-major; revax "
                                  "passes row-major buffers only")

  _check_layouts(output_layouts, "output", [len(a.shape) for a in avals])

  def call(*args, **kwargs):
    _check_layouts(input_layouts, "input", [get_aval(a).ndim for a in args])
    attributes = tuple((k, _attribute(k, v)) for k, v in sorted(kwargs.items()))
    aliases = _checked_aliases(input_output_aliases, [get_aval(a) for a in args], avals)
    outs = ffi_call_p.bind(*args, target_name=target_name, result_avals=avals,
                           has_side_effect=bool(has_side_effect), vmap_method=vmap_method,
                           attributes=attributes, input_output_aliases=aliases)
    if multiple:
      return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)
    return outs[0]
  return call


def _checked_aliases(input_output_aliases, in_avals, out_avals) -> tuple:
  """((input, output), ...) sorted, each pair of one shape and dtype; ValueError otherwise."""
  pairs = []
  for i, o in sorted((input_output_aliases or {}).items()):
    i, o = int(i), int(o)
    if not 0 <= i < len(in_avals):
      raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with input index "
                       f"{i} outside the range [0, {len(in_avals)}).")
    if not 0 <= o < len(out_avals):
      raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with output index "
                       f"{o} outside the range [0, {len(out_avals)}).")
    a, b = in_avals[i], out_avals[o]
    if a.shape != b.shape or a.dtype != b.dtype:
      raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' referring to an "
                       f"input with abstract value {a.str_short()} and an output with a "
                       f"different abstract value {b.str_short()}.")
    pairs.append((i, o))
  return tuple(pairs)


def _ffi_call_abstract_eval(*avals, target_name, result_avals, has_side_effect, vmap_method,
                            attributes, input_output_aliases):
  for i, a in enumerate(avals):
    if a.dtype == dtypes.float0:
      raise TypeError(f"ffi_call to {target_name!r}: argument {i} has dtype float0")
  return list(result_avals)


def _ffi_call_jvp(primals, tangents, *, target_name, **params):
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                   "`revax.custom_jvp` or `revax.custom_vjp` to add support.")


def _ffi_call_batch(vals, dims, **params):
  return callback_batch(ffi_call_p, vals, dims, params["vmap_method"], **params)


def _ffi_call_lower(ctx, *args, target_name, result_avals, has_side_effect, vmap_method,
                    attributes, input_output_aliases):
  attrs = [(k, v.val if isinstance(v, _HashableArray) else v) for k, v in attributes]
  return custom_call_op(ctx, target_name, args, attributes=attrs,
                        has_side_effect=has_side_effect, aliases=input_output_aliases)


ffi_call_p = Primitive("ffi_call", multiple_results=True)
# inside shard_map: operands cast to agree (JAX's implicit pvary), results invariant as declared
vma.vma_rules[ffi_call_p] = vma.declared_outputs_rule(ffi_call_p)
ffi_call_p.def_abstract_eval(_ffi_call_abstract_eval)
ad.primitive_jvps[ffi_call_p] = _ffi_call_jvp
batching.primitive_batchers[ffi_call_p] = _ffi_call_batch
mlir.register_lowering(ffi_call_p, _ffi_call_lower)
inv.not_invertible(ffi_call_p, "an opaque foreign function")
def_effectful(ffi_call_p, lambda params: params["has_side_effect"])
def_effects(ffi_call_p, lambda eqn: {eff.ffi_effect} if eqn.params["has_side_effect"] else ())
