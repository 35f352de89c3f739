"""XLA's foreign function interface, reached through the PJRT FFI extension.

A `stablehlo.custom_call @name(...) {api_version = 4 : i32}` in a program makes XLA call the FFI
handler registered under `name` for the platform. Handlers are registered through the PJRT FFI
extension (extension type 5 in the `PJRT_Api.extension_start` chain; header
`xla/pjrt/c/pjrt_c_api_ffi_extension.h`). XLA calls a handler with one `XLA_FFI_CallFrame*`
(header `xla/ffi/api/c_api.h`) holding the argument and result buffers and the attributes, and
takes back NULL or an `XLA_FFI_Error*` made with the frame's API table.

This module holds:
- the C structs (each field checked against the headers by offset, see the asserts below),
- `register_handler(name, address)`, which registers a C function (a user's compiled kernel),
- revax's own handler, a ctypes callback registered once as `revax_python_callback`: it finds the
  Python callable named by the call's `index` attribute (`register_callable`), gives it the
  arguments as NumPy arrays, checks what it returns against the result buffers (shape and dtype,
  before a byte is written), and copies the results in,
- the error path: an exception raised in the callable (or a bad result) is stored, XLA gets an
  error whose message names it, the execution fails cleanly, and `restore_callback_error` turns
  the runtime's error back into one whose `__cause__` is the original exception.

XLA:CPU may call a handler on one of its own threads while the caller waits inside
`LoadedExecutable_Execute`; ctypes releases the GIL around that foreign call and the ctypes
callback takes it, so a callback may run Python (revax included) freely.
"""
from __future__ import annotations

import ctypes as C
import itertools
import threading
import traceback

import ml_dtypes
import numpy as np

from revax._src.core import dtypes
from revax._src.runtime import client, pjrt

__all__ = ["register_handler", "register_type", "register_callable", "PYTHON_CALLBACK_TARGET",
           "restore_callback_error", "check_results", "ffi_dtype", "numpy_dtype_of_ffi",
           "CallbackResultError", "capsule_address"]

_ptr, _size, _int, _i64, _u32 = C.c_void_p, C.c_size_t, C.c_int, C.c_int64, C.c_uint32

PYTHON_CALLBACK_TARGET = "revax_python_callback"
_EXTENSION_TYPE_FFI = 5  # PJRT_Extension_Type_FFI
_METADATA_EXTENSION = 1  # XLA_FFI_Extension_Metadata
_STAGE_EXECUTE = 3  # XLA_FFI_ExecutionStage_EXECUTE
_ATTR_SCALAR = 3  # XLA_FFI_AttrType_SCALAR
_ERROR_INTERNAL = 13  # XLA_FFI_Error_Code_INTERNAL


# ----------------------------------------------------------------------------- C structs

class _RegisterHandlerArgs(C.Structure):
  """PJRT_FFI_Register_Handler_Args (this plugin's layout: no extension_start, no api_version;
  read from its disassembly: name at 8, handler at 24, platform at 32, traits at 48)."""
  _fields_ = [("struct_size", _size), ("target_name", C.c_char_p), ("target_name_size", _size),
              ("handler", _ptr), ("platform_name", C.c_char_p), ("platform_name_size", _size),
              ("traits", _u32)]


class _ExtensionBase(C.Structure):
  """PJRT_Extension_Base and XLA_FFI_Extension_Base (same layout)."""
  _fields_ = [("struct_size", _size), ("type", _int), ("next", _ptr)]


class _ApiVersion(C.Structure):
  """XLA_FFI_Api_Version."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("major_version", _int),
              ("minor_version", _int)]


class _Metadata(C.Structure):
  """XLA_FFI_Metadata: what a handler answers when XLA asks which FFI version it speaks."""
  _fields_ = [("struct_size", _size), ("api_version", _ApiVersion), ("traits", _u32)]


class _MetadataExtension(C.Structure):
  _fields_ = [("extension_base", _ExtensionBase), ("metadata", _ptr)]


class _FfiApiHead(C.Structure):
  """The start of XLA_FFI_Api: the version, then the function table (Error_Create first)."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("api_version", _ApiVersion),
              ("internal_api", _ptr), ("error_create", _ptr)]


class _ErrorCreateArgs(C.Structure):
  """XLA_FFI_Error_Create_Args."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("message", C.c_char_p),
              ("errc", _int)]


class _Buffer(C.Structure):
  """XLA_FFI_Buffer."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("dtype", _int),
              ("data", _ptr), ("rank", _i64), ("dims", _ptr)]


class _List(C.Structure):
  """XLA_FFI_Args / XLA_FFI_Rets: a count, the kinds, the pointers."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("size", _i64),
              ("types", _ptr), ("items", _ptr)]


class _Attrs(C.Structure):
  """XLA_FFI_Attrs (sorted by name)."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("size", _i64),
              ("types", _ptr), ("names", _ptr), ("attrs", _ptr)]


class _ByteSpan(C.Structure):
  _fields_ = [("ptr", _ptr), ("len", _size)]


class _Scalar(C.Structure):
  """XLA_FFI_Scalar."""
  _fields_ = [("dtype", _int), ("value", _ptr)]


class _CallFrame(C.Structure):
  """XLA_FFI_CallFrame."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("api", _ptr), ("ctx", _ptr),
              ("stage", _int), ("args", _List), ("rets", _List), ("attrs", _Attrs),
              ("future", _ptr)]


# Offsets from the headers (x86-64 / aarch64 LP64), checked once at import.
assert _CallFrame.stage.offset == 32 and _CallFrame.args.offset == 40
assert _CallFrame.rets.offset == 80 and _CallFrame.attrs.offset == 120
assert _CallFrame.attrs.offset + C.sizeof(_Attrs) == 168  # XLA_FFI_CallFrame_STRUCT_SIZE
assert _FfiApiHead.error_create.offset == 48 and _Buffer.dims.offset == 40
assert _Metadata.traits.offset == 32 and _RegisterHandlerArgs.traits.offset == 48

_REGISTER_HANDLER_ARGS_SIZE = _RegisterHandlerArgs.traits.offset + C.sizeof(_u32)  # 52
_ERROR_CREATE_ARGS_SIZE = _ErrorCreateArgs.errc.offset + C.sizeof(_int)
_API_VERSION_SIZE = _ApiVersion.minor_version.offset + C.sizeof(_int)

_HANDLER = C.CFUNCTYPE(_ptr, _ptr)  # XLA_FFI_Error* (*)(XLA_FFI_CallFrame*)
_ERROR_CREATE = C.CFUNCTYPE(_ptr, _ptr)
_REGISTER = C.CFUNCTYPE(_ptr, _ptr)

# XLA_FFI_DataType (xla_data.proto's PrimitiveType numbers; differ from PJRT_Buffer_Type's).
_FFI_DTYPES = {
    np.dtype(np.bool_): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
    np.dtype(np.int64): 5, np.dtype(np.uint8): 6, np.dtype(np.uint16): 7,
    np.dtype(np.uint32): 8, np.dtype(np.uint64): 9, np.dtype(np.float16): 10,
    np.dtype(np.float32): 11, np.dtype(np.float64): 12, np.dtype(ml_dtypes.bfloat16): 16,
    np.dtype(np.complex64): 15, np.dtype(np.complex128): 18,
    np.dtype(ml_dtypes.float8_e5m2): 19, np.dtype(ml_dtypes.float8_e4m3fn): 20,
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): 23, np.dtype(ml_dtypes.float8_e5m2fnuz): 24,
    np.dtype(ml_dtypes.float8_e4m3fnuz): 25,
}
_FFI_TO_NUMPY = {code: dt for dt, code in _FFI_DTYPES.items()}
_FFI_TOKEN = 17


def ffi_dtype(dtype) -> int:
  """The XLA_FFI_DataType number of a NumPy dtype."""
  return _FFI_DTYPES[np.dtype(dtype)]


def numpy_dtype_of_ffi(code: int) -> np.dtype:
  """The NumPy dtype of an XLA_FFI_DataType number; TypeError for ones revax does not map."""
  try:
    return _FFI_TO_NUMPY[code]
  except KeyError:
    raise TypeError(f"XLA FFI data type {code} has no NumPy dtype in revax") from None


# ----------------------------------------------------------------------------- registration

def _ffi_extension(api: pjrt.Api) -> int:
  """The address of the plugin's PJRT_FFI_Extension; RuntimeError if it has none."""
  address = _ptr.from_address(api.base + 8).value  # PJRT_Api.extension_start
  while address:
    base = _ExtensionBase.from_address(address)
    if base.type == _EXTENSION_TYPE_FFI:
      return address
    address = base.next
  raise RuntimeError(f"the PJRT plugin {api.path} has no FFI extension: revax.ffi targets need "
                     "it (host callbacks reach the host by send/recv transfers there instead)")


_register_lock = threading.Lock()
_registered: dict[tuple[str, str], int] = {}


def _api_for(platform: str):
  """The plugin whose FFI registry serves `platform`: that platform's backend where it can start
  in this process (a CPU handler goes to the CPU plugin even where the TPU is the default); for
  a platform that is absent here (e.g. "cuda"), the default backend's, whose registry keeps the
  entry by platform name as jax's does."""
  try:
    return client.get_backend(platform)._api
  except RuntimeError:
    return client.get_backend()._api


class _HandlerRegisterArgs(C.Structure):
  """XLA_FFI_Handler_Register_Args (xla/ffi/api/c_api.h): a name, a platform and the handler
  bundle (one handler per execution stage: instantiate, prepare, initialize, execute)."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("name", _ByteSpan),
              ("platform", _ByteSpan), ("instantiate", _ptr), ("prepare", _ptr),
              ("initialize", _ptr), ("execute", _ptr), ("traits", _u32)]


class _ErrorGetMessageArgs(C.Structure):
  """XLA_FFI_Error_GetMessage_Args."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("error", _ptr),
              ("message", C.c_char_p)]


class _ErrorDestroyArgs(C.Structure):
  """XLA_FFI_Error_Destroy_Args."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("error", _ptr)]


class _TypeRegisterArgs(C.Structure):
  """PJRT_FFI_Type_Register_Args (this plugin's layout, read from its disassembly: the name at
  16, the in-out type id at 32, a pointer to the XLA_FFI_TypeInfo at 40; 48 bytes)."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("type_name", C.c_char_p),
              ("type_name_size", _size), ("type_id", _i64), ("type_info", _ptr)]


class _TypeInfo(C.Structure):
  """XLA_FFI_TypeInfo: how XLA destroys an object of the type (NULL: it does not)."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("deleter", _ptr)]


class _PjrtTypeInfo(C.Structure):
  """What PJRT_FFI_Type_Register_Args.type_info points to in this plugin: the deleter first (its
  disassembly reads the deleter at offset 0, where an XLA_FFI_TypeInfo has its struct_size)."""
  _fields_ = [("deleter", _ptr)]


assert C.sizeof(_HandlerRegisterArgs) == 88 and _HandlerRegisterArgs.traits.offset == 80
assert C.sizeof(_TypeRegisterArgs) == 48
_HANDLER_REGISTER_ARGS_SIZE = 84  # XLA_FFI_Handler_Register_Args_STRUCT_SIZE (up to traits)
_FFI_API_HANDLER_REGISTER = 72  # offsets of the XLA_FFI_Api's functions
_FFI_API_ERROR_GET_MESSAGE = 56
_FFI_API_ERROR_DESTROY = 64
_STAGES = ("instantiate", "prepare", "initialize", "execute")

# The XLA_FFI_Api of each plugin (by its PJRT_Api address): XLA hands it to every handler in the
# call frame, revax's Python handler first of all when XLA asks for its metadata.
_ffi_apis: dict[int, int] = {}
_last_ffi_api: list[int] = [0]


def _take_ffi_error(api_address: int, error: int) -> str:
  """The message of an XLA_FFI_Error* (then destroyed)."""
  get = C.CFUNCTYPE(None, _ptr)(_ptr.from_address(api_address + _FFI_API_ERROR_GET_MESSAGE).value)
  message = _ErrorGetMessageArgs(C.sizeof(_ErrorGetMessageArgs), None, error, None)
  get(C.addressof(message))
  text = (message.message or b"").decode(errors="replace")
  destroy = C.CFUNCTYPE(None, _ptr)(_ptr.from_address(api_address + _FFI_API_ERROR_DESTROY).value)
  args = _ErrorDestroyArgs(C.sizeof(_ErrorDestroyArgs), None, error)
  destroy(C.addressof(args))
  return text


def _xla_ffi_api(platform: str) -> int:
  """The XLA_FFI_Api* of `platform`'s plugin (0 where it is not known: no such backend here)."""
  try:
    backend = client.get_backend(platform)
  except RuntimeError:
    return 0
  _ensure_python_handler(backend.platform)
  return _ffi_apis.get(backend._api.base, 0)


def register_handler(name: str, address, platform: str = "cpu", traits: int = 0) -> None:
  """Register the C function at `address` (an `XLA_FFI_Handler`) as FFI target `name`.

  Args:
    name: the custom call target name programs use.
    address: the handler's address (it must answer XLA's metadata query, as handlers written
      with XLA's `XLA_FFI_DEFINE_HANDLER` do), or a dict {stage: address} over the stages
      "instantiate", "prepare", "initialize" and "execute" (a stateful handler's bundle).
    platform: the platform name, e.g. ``"cpu"``.
    traits: XLA_FFI_Handler_Traits bits.

  Raises:
    ValueError: `name` is already registered on `platform` with another function.
    RuntimeBackendError: XLA refused the registration (e.g. a handler compiled against FFI
      headers of a version the plugin does not support: XLA's message says which).
  """
  bundle = dict(address) if isinstance(address, dict) else {"execute": address}
  key_address = tuple(bundle.get(stage, 0) for stage in _STAGES)
  api = _api_for(platform)
  key = (name, platform.lower())
  with _register_lock:
    previous = _registered.get(key)
    if previous == key_address:
      return
    if previous is not None:
      raise ValueError(f"FFI target {name!r} is already registered for platform {platform!r} "
                       "with another function")
  ffi_api = _xla_ffi_api(platform) if name != PYTHON_CALLBACK_TARGET else 0
  with _register_lock:
    if ffi_api:
      _register_with_ffi_api(ffi_api, name, platform, bundle, traits)
    else:
      if set(bundle) != {"execute"}:
        raise NotImplementedError(f"registering the stages {sorted(bundle)} of FFI target "
                                  f"{name!r} needs the XLA FFI API of the {platform} plugin")
      _register_with_extension(api, name, bundle["execute"], platform, traits)
    _registered[key] = key_address


def _register_with_ffi_api(ffi_api: int, name: str, platform: str, bundle: dict,
                           traits: int) -> None:
  """XLA_FFI_Handler_Register: returns XLA's error, which PJRT's registration drops."""
  register = C.CFUNCTYPE(_ptr, _ptr)(_ptr.from_address(ffi_api + _FFI_API_HANDLER_REGISTER).value)
  name_b, platform_b = name.encode(), platform.encode()
  args = _HandlerRegisterArgs(_HANDLER_REGISTER_ARGS_SIZE, None, _ByteSpan(
      C.cast(C.c_char_p(name_b), _ptr), len(name_b)), _ByteSpan(
      C.cast(C.c_char_p(platform_b), _ptr), len(platform_b)),
      *(bundle.get(stage) or None for stage in _STAGES), traits)
  error = register(C.addressof(args))
  if error:
    raise pjrt.RuntimeBackendError("INVALID_ARGUMENT", _take_ffi_error(ffi_api, error))


def _register_with_extension(api, name: str, address: int, platform: str, traits: int) -> None:
  register = _REGISTER(_ptr.from_address(_ffi_extension(api) + 40).value)
  name_b, platform_b = name.encode(), platform.encode()
  args = _RegisterHandlerArgs(_REGISTER_HANDLER_ARGS_SIZE, name_b, len(name_b), address,
                              platform_b, len(platform_b), traits)
  error = register(C.addressof(args))
  if error:
    raise api.take_error(error)
  if name == PYTHON_CALLBACK_TARGET and _last_ffi_api[0]:
    _ffi_apis[api.base] = _last_ffi_api[0]  # XLA asked revax's handler for its metadata


def register_type(name: str, type_id_address: int, type_info_address: int | None,
                  platform: str = "cpu") -> None:
  """Register a user type with XLA's FFI type registry (`jax.ffi.register_ffi_type`).

  Args:
    name: a unique name for the type.
    type_id_address: the address of the type's `XLA_FFI_TypeId` (an int64): 0 there asks XLA
      to assign an id, which it writes back; another value must match the name's id.
    type_info_address: the address of its `XLA_FFI_TypeInfo` (the deleter XLA calls on objects
      of the type), or None.
    platform: the platform whose plugin keeps the registry.

  Raises:
    RuntimeBackendError: XLA refused it (e.g. the name is registered with another id).
  """
  api = _api_for(platform)
  register = _REGISTER(_ptr.from_address(_ffi_extension(api) + 24).value)
  name_b = name.encode()
  deleter = None
  if type_info_address:
    user_info = _TypeInfo.from_address(type_info_address)
    if user_info.struct_size < C.sizeof(_TypeInfo):
      raise ValueError(f"the XLA_FFI_TypeInfo of FFI type {name!r} has struct_size "
                       f"{user_info.struct_size}, expected at least {C.sizeof(_TypeInfo)}")
    deleter = user_info.deleter
  info = _PjrtTypeInfo(deleter)
  type_id = _i64.from_address(type_id_address)
  args = _TypeRegisterArgs(C.sizeof(_TypeRegisterArgs), None, name_b, len(name_b),
                           type_id.value, C.addressof(info))
  with _register_lock:
    error = register(C.addressof(args))
    if error:
      raise api.take_error(error)
    type_id.value = args.type_id


# ----------------------------------------------------------------------------- Python callables

_callables: list = []
_callables_lock = threading.Lock()
_callable_index: dict[int, int] = {}


def register_callable(fn, platform: str | None = None) -> int:
  """Index under which revax's handler finds `fn(*arrays) -> sequence of arrays`.

  Lowering writes the index into the custom call's `index` attribute. The callable is kept alive
  for the life of the process (compiled programs may call it at any time); registering the same
  object again returns the same index. `platform` is the one the program is lowered for (None:
  the default backend's), whose plugin gets revax's Python handler.
  """
  _ensure_python_handler(platform)
  with _callables_lock:
    index = _callable_index.get(id(fn))
    if index is None or _callables[index] is not fn:
      index = len(_callables)
      _callables.append(fn)
      _callable_index[id(fn)] = index
    return index


class CallbackResultError(ValueError):
  """A host callback returned values that do not match its declared result shapes/dtypes."""


def check_results(results, expected) -> list[np.ndarray]:
  """NumPy arrays of `results`, checked one for one against `expected` [(shape, dtype)].

  Each result is first put in its canonical dtype, as JAX does with a callback's results: with
  x64 disabled a float64 (a Python float, NumPy's default) becomes float32, an int64 int32, a
  complex128 complex64. Nothing else is converted.

  Raises:
    CallbackResultError: wrong count, shape or dtype.
  """
  results = list(results)
  if len(results) != len(expected):
    raise CallbackResultError(f"host callback returned {len(results)} values, expected "
                              f"{len(expected)}")
  out = []
  for i, (value, (shape, dtype)) in enumerate(zip(results, expected, strict=True)):
    array = np.asarray(value)
    canonical = dtypes.canonicalize_dtype(array.dtype)
    if canonical != array.dtype:
      array = array.astype(canonical)
    if array.shape != tuple(shape) or array.dtype != dtype:
      got = f"{array.dtype}{list(array.shape)}"
      raise CallbackResultError(
          f"host callback result {i} has type {got}, expected {np.dtype(dtype)}{list(shape)}: "
          "return arrays of exactly the declared shapes and dtypes")
    out.append(array)
  return out


_errors: dict[int, BaseException] = {}
_error_ids = itertools.count()
_MARKER = "[revax host callback error #"


def _store_error(exc: BaseException) -> str:
  key = next(_error_ids)
  _errors[key] = exc
  text = "".join(traceback.format_exception(exc)).rstrip()
  return f"{_MARKER}{key}] {type(exc).__name__}: {exc}\n{text}"


def restore_callback_error(error: BaseException) -> BaseException:
  """`error` from a failed execution, with the exception a host callback raised (if that is what
  failed it) attached as `__cause__`, so its original traceback prints with it."""
  message = str(error)
  start = message.find(_MARKER)
  if start < 0:
    return error
  end = message.find("]", start)
  try:
    key = int(message[start + len(_MARKER):end])
  except ValueError:
    return error
  original = _errors.pop(key, None)
  if original is not None:
    error.__cause__ = original
    error.__suppress_context__ = True
  return error


def _make_error(api_address: int, message: str) -> int:
  """An XLA_FFI_Error* created with the frame's API (XLA takes ownership)."""
  create = _ERROR_CREATE(_FfiApiHead.from_address(api_address).error_create)
  text = message.encode(errors="replace")
  args = _ErrorCreateArgs(_ERROR_CREATE_ARGS_SIZE, None, text, _ERROR_INTERNAL)
  return create(C.addressof(args)) or 0


def answer_metadata(frame: _CallFrame) -> bool:
  """If XLA is asking for the handler's metadata, answer with the framework's own FFI version
  (what the frame's API says) and no traits; returns whether it was such a query."""
  extension = frame.extension_start
  if not extension:
    return False
  ext = _MetadataExtension.from_address(extension)
  if ext.extension_base.type != _METADATA_EXTENSION or not ext.metadata:
    return False
  metadata = _Metadata.from_address(ext.metadata)
  _last_ffi_api[0] = frame.api or 0
  version = _FfiApiHead.from_address(frame.api).api_version
  metadata.api_version.struct_size = _API_VERSION_SIZE
  metadata.api_version.extension_start = None
  metadata.api_version.major_version = version.major_version
  metadata.api_version.minor_version = version.minor_version
  metadata.traits = 0
  return True


def _buffers(items: _List) -> list[_Buffer]:
  count = items.size
  if not count:
    return []
  pointers = (_ptr * count).from_address(items.items)
  return [_Buffer.from_address(p) for p in pointers]


def _buffer_spec(buffer: _Buffer) -> tuple[tuple[int, ...], np.dtype]:
  shape = tuple((_i64 * buffer.rank).from_address(buffer.dims)) if buffer.rank else ()
  return shape, numpy_dtype_of_ffi(buffer.dtype)


def _read_buffer(buffer: _Buffer) -> np.ndarray:
  shape, dtype = _buffer_spec(buffer)
  out = np.empty(shape, dtype)
  if out.nbytes:
    C.memmove(out.ctypes.data, buffer.data, out.nbytes)
  return out


def _index_attr(attrs: _Attrs) -> int:
  for i in range(attrs.size):
    name = _ByteSpan.from_address(_ptr.from_address(attrs.names + 8 * i).value)
    if C.string_at(name.ptr, name.len) == b"index":
      if _int.from_address(attrs.types + 4 * i).value != _ATTR_SCALAR:
        break
      scalar = _Scalar.from_address(_ptr.from_address(attrs.attrs + 8 * i).value)
      return _i64.from_address(scalar.value).value
  raise RuntimeError("revax callback custom call without an integer `index` attribute")


def _run_python_callback(frame: _CallFrame) -> None:
  fn = _callables[_index_attr(frame.attrs)]
  args = [_read_buffer(b) for b in _buffers(frame.args) if b.dtype != _FFI_TOKEN]
  rets = [b for b in _buffers(frame.rets) if b.dtype != _FFI_TOKEN]
  specs = [_buffer_spec(b) for b in rets]
  results = check_results(fn(*args), specs)
  for buffer, value in zip(rets, results, strict=True):
    if value.nbytes:
      value = np.ascontiguousarray(value)
      C.memmove(buffer.data, value.ctypes.data, value.nbytes)


def _python_handler(frame_address):
  """revax's XLA_FFI_Handler: never lets an exception escape into C."""
  try:
    frame = _CallFrame.from_address(frame_address)
    if answer_metadata(frame) or frame.stage != _STAGE_EXECUTE:
      return None
    state = client._callback_thread
    if client._get_ident() in client._executing_threads or state.on_xla_thread:
      _run_python_callback(frame)  # on the thread that called execute: nesting is fine
    else:
      state.on_xla_thread = True  # an XLA thread: no program may be launched from here
      try:
        _run_python_callback(frame)
      finally:
        state.on_xla_thread = False
    return None
  except BaseException as exc:  # noqa: BLE001 - every failure goes back to XLA as its error
    try:
      return _make_error(_CallFrame.from_address(frame_address).api, _store_error(exc))
    except BaseException:  # noqa: BLE001
      return None


_python_handler_c = _HANDLER(_python_handler)
_python_handler_platforms: set[str] = set()


def _ensure_python_handler(platform: str | None) -> None:
  """Register revax's Python handler with the plugin of `platform` (None: the default), once."""
  if platform is None:
    platform = client.get_backend().platform
  if platform not in _python_handler_platforms:
    register_handler(PYTHON_CALLBACK_TARGET, C.cast(_python_handler_c, _ptr).value, platform)
    _python_handler_platforms.add(platform)


# ----------------------------------------------------------------------------- user functions

# revax's own prototypes of the capsule functions: `ctypes.pythonapi.PyCapsule_New` is one object
# shared by the whole process, whose argtypes other libraries set as they please (jax.ffi's
# pycapsule does), so its argtypes are never relied on here.
_capsule_get_pointer = C.PYFUNCTYPE(_ptr, C.py_object, C.c_char_p)(
    ("PyCapsule_GetPointer", C.pythonapi))
_capsule_get_name = C.PYFUNCTYPE(C.c_char_p, C.py_object)(("PyCapsule_GetName", C.pythonapi))
_capsule_new = C.PYFUNCTYPE(C.py_object, _ptr, C.c_char_p, _ptr)(
    ("PyCapsule_New", C.pythonapi))


def capsule_address(fn) -> int:
  """The address of a C function given as a PyCapsule, a ctypes function or an int."""
  if isinstance(fn, int) and not isinstance(fn, bool):
    return fn
  if isinstance(fn, C._CFuncPtr):
    return C.cast(fn, _ptr).value
  if type(fn).__name__ == "PyCapsule":
    return _capsule_get_pointer(fn, _capsule_get_name(fn))
  raise TypeError(f"expected a PyCapsule, a ctypes function or an address, got "
                  f"{type(fn).__name__}")


def make_capsule(address: int):
  """A PyCapsule wrapping the C function at `address` (no name, no destructor)."""
  return _capsule_new(address, None, None)
