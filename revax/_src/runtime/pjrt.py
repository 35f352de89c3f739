"""Low-level ctypes binding to a PJRT C API plugin (pjrt_c_api.h, API version 0.x, x >= 40).

This module knows the C ABI and nothing about revax: the argument structs of the functions revax
uses, the function table of `PJRT_Api`, the `PJRT_Buffer_Type` <-> NumPy dtype maps, a hand-written
encoder for the few `CompileOptionsProto` fields revax sets, and the errors. `client.py` builds the
Python objects (Backend, Device, Buffer, Executable) on top of it.

Every PJRT function takes a single pointer to an `PJRT_<Name>_Args` struct that begins with
`size_t struct_size; PJRT_Extension_Base* extension_start;` and returns a `PJRT_Error*` (NULL on
success). `Api.call(name, **fields)` builds that struct, calls, raises `RuntimeBackendError` on
error and returns the struct so the caller can read its out-fields.

Importing this module loads nothing: the plugin is opened when an `Api` is constructed.
"""
from __future__ import annotations

import ctypes as C
import os

import ml_dtypes
import numpy as np

from revax._src.core.errors import JaxRuntimeError

__all__ = [
    "Api", "RuntimeBackendError", "CompileError", "compile_options", "option_override_fields",
    "proto_fields", "read_varint",
    "default_plugin_path", "ARGS", "NamedValue", "Program", "ExecuteOptions", "NUMPY_TO_PJRT",
    "PJRT_TO_NUMPY", "buffer_type", "numpy_dtype", "ERROR_CODES",
    "HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL",
]

_ptr, _size, _int, _i64, _bool, _f32 = (C.c_void_p, C.c_size_t, C.c_int, C.c_int64, C.c_bool,
                                        C.c_float)


# ----------------------------------------------------------------------------- errors

# PJRT_Error_Code, in enum order (absl status codes).
ERROR_CODES = (
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")


class RuntimeBackendError(JaxRuntimeError):
  """An error returned by the PJRT plugin.

  Attributes:
    code: the status code name, e.g. ``"INVALID_ARGUMENT"``.
    message: the plugin's own message.
  """

  def __init__(self, code: str, message: str):
    super().__init__(self._describe(code, message))
    self.code = code
    self.message = message

  @staticmethod
  def _describe(code: str, message: str) -> str:
    return f"{code}: {message}"

  def __reduce__(self):
    return type(self), (self.code, self.message)


class CompileError(RuntimeBackendError):
  """XLA failed to compile a program; the message is the plugin's diagnostic."""

  @staticmethod
  def _describe(code: str, message: str) -> str:
    return f"XLA compilation failed: {message}"


# ----------------------------------------------------------------------------- dtypes

# PJRT_Buffer_Type enum values, checked against pjrt_c_api.h by compiling it (see
# tests/runtime/test_pjrt_layout.py). Sub-byte types (S2/S4/U2/U4/F4E2M1FN) are left out: ml_dtypes
# stores them one per byte while PJRT host buffers of those types are packed.
NUMPY_TO_PJRT: dict[np.dtype, int] = {
    np.dtype(np.bool_): 1,      # PRED
    np.dtype(np.int8): 2,       # S8
    np.dtype(np.int16): 3,      # S16
    np.dtype(np.int32): 4,      # S32
    np.dtype(np.int64): 5,      # S64
    np.dtype(np.uint8): 6,      # U8
    np.dtype(np.uint16): 7,     # U16
    np.dtype(np.uint32): 8,     # U32
    np.dtype(np.uint64): 9,     # U64
    np.dtype(np.float16): 10,   # F16
    np.dtype(np.float32): 11,   # F32
    np.dtype(np.float64): 12,   # F64
    np.dtype(ml_dtypes.bfloat16): 13,  # BF16
    np.dtype(np.complex64): 14,   # C64
    np.dtype(np.complex128): 15,  # C128
    np.dtype(ml_dtypes.float8_e5m2): 16,         # F8E5M2
    np.dtype(ml_dtypes.float8_e4m3fn): 17,       # F8E4M3FN
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): 18,  # F8E4M3B11FNUZ
    np.dtype(ml_dtypes.float8_e5m2fnuz): 19,     # F8E5M2FNUZ
    np.dtype(ml_dtypes.float8_e4m3fnuz): 20,     # F8E4M3FNUZ
    np.dtype(ml_dtypes.float8_e4m3): 26,         # F8E4M3
    np.dtype(ml_dtypes.float8_e3m4): 27,         # F8E3M4
    np.dtype(ml_dtypes.float8_e8m0fnu): 28,      # F8E8M0FNU
    np.dtype(ml_dtypes.int4): 21,                # S4
    np.dtype(ml_dtypes.uint4): 22,               # U4
    np.dtype(ml_dtypes.int2): 24,                # S2
    np.dtype(ml_dtypes.uint2): 25,               # U2
    np.dtype(ml_dtypes.float4_e2m1fn): 29,       # F4E2M1FN
}
PJRT_TO_NUMPY: dict[int, np.dtype] = {code: dt for dt, code in NUMPY_TO_PJRT.items()}


def buffer_type(dtype) -> int:
  """The PJRT_Buffer_Type of a NumPy dtype; TypeError if PJRT cannot hold it."""
  try:
    return NUMPY_TO_PJRT[np.dtype(dtype)]
  except (KeyError, TypeError):
    raise TypeError(f"dtype {dtype} is not supported by the PJRT runtime") from None


# PJRT_Buffer_Type_TOKEN: an XLA token (no elements). Its buffers get this zero-byte dtype.
TOKEN_CODE = 23
TOKEN_DTYPE = np.dtype("V0")


def numpy_dtype(type_code: int) -> np.dtype:
  """The NumPy dtype of a PJRT_Buffer_Type; TypeError for types revax does not map."""
  try:
    return PJRT_TO_NUMPY[type_code]
  except KeyError:
    if type_code == TOKEN_CODE:
      return TOKEN_DTYPE
    raise TypeError(f"PJRT buffer type {type_code} has no NumPy dtype in revax") from None


# ----------------------------------------------------------------------------- structs

def _struct(name: str, fields) -> type[C.Structure]:
  """A PJRT struct: `struct_size` and `extension_start`, then `fields` in header order.

  `STRUCT_SIZE` is what the header's PJRT_STRUCT_SIZE gives: offset of the last field plus its
  size, which is NOT `sizeof` (no tail padding). The plugin uses it to tell which fields we know.
  """
  all_fields = [("struct_size", _size), ("extension_start", _ptr)] + list(fields)
  cls = type(name, (C.Structure,), {"_fields_": all_fields})
  last_name, last_type = all_fields[-1]
  cls.STRUCT_SIZE = getattr(cls, last_name).offset + C.sizeof(last_type)
  return cls


class _NamedValueUnion(C.Union):
  _fields_ = [("string_value", _ptr), ("int64_value", _i64), ("int64_array_value", _ptr),
              ("float_value", _f32), ("bool_value", _bool)]


NamedValue = _struct("PJRT_NamedValue", [
    ("name", _ptr), ("name_size", _size), ("type", _int), ("value", _NamedValueUnion),
    ("value_size", _size)])
Program = _struct("PJRT_Program", [
    ("code", _ptr), ("code_size", _size), ("format", _ptr), ("format_size", _size)])
ExecuteOptions = _struct("PJRT_ExecuteOptions", [
    ("send_callbacks", _ptr), ("recv_callbacks", _ptr), ("num_send_ops", _size),
    ("num_recv_ops", _size), ("launch_id", _int), ("non_donatable_input_indices", _ptr),
    ("num_non_donatable_input_indices", _size), ("context", _ptr), ("call_location", _ptr),
    ("num_tasks", _size), ("task_ids", _ptr), ("incarnation_ids", _ptr)])



class _TiledLayout(C.Structure):
  """PJRT_Buffer_MemoryLayout_Tiled: minor-to-major dimension order and optional tiles."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("minor_to_major", _ptr),
              ("minor_to_major_size", _size), ("tile_dims", _ptr), ("tile_dim_sizes", _ptr),
              ("num_tiles", _size)]


class _StridesLayout(C.Structure):
  """PJRT_Buffer_MemoryLayout_Strides: byte strides per dimension."""
  _fields_ = [("struct_size", _size), ("extension_start", _ptr), ("byte_strides", _ptr),
              ("num_byte_strides", _size)]


class _LayoutUnion(C.Union):
  _fields_ = [("tiled", _TiledLayout), ("strides", _StridesLayout)]


MemoryLayout = _struct("PJRT_Buffer_MemoryLayout", [("u", _LayoutUnion), ("type", _int)])
MEMORY_LAYOUT_TILED, MEMORY_LAYOUT_STRIDES = 0, 1
_TILED_SIZE = _TiledLayout.num_tiles.offset + C.sizeof(_size)


class HostLayout:
  """A row-major (C order) PJRT_Buffer_MemoryLayout for `ndim` dimensions, kept alive with the
  minor-to-major array it points to.

  Passed as `host_layout` to Buffer_ToHostBuffer so that the host copy is in NumPy's C order
  whatever layout the device chose (a NULL host layout means "the device buffer's layout": on a
  TPU a transpose's result comes back in device order otherwise).
  """
  __slots__ = ("layout", "_minor_to_major", "address")

  def __init__(self, ndim: int):
    self._minor_to_major = (_i64 * max(ndim, 1))(*range(ndim - 1, -1, -1))
    layout = MemoryLayout(struct_size=MemoryLayout.STRUCT_SIZE, type=MEMORY_LAYOUT_TILED)
    tiled = layout.u.tiled
    tiled.struct_size = _TILED_SIZE
    tiled.minor_to_major = C.addressof(self._minor_to_major)
    tiled.minor_to_major_size = ndim
    self.layout = layout
    self.address = C.addressof(layout)


def read_layout(layout) -> tuple:
  """A PJRT_Buffer_MemoryLayout as `("tiled", minor_to_major, tiles)` or `("strides", strides)`."""
  if layout.type == MEMORY_LAYOUT_TILED:
    tiled = layout.u.tiled
    order = tuple((_i64 * tiled.minor_to_major_size).from_address(tiled.minor_to_major)
                  ) if tiled.minor_to_major_size else ()
    sizes = tuple((_size * tiled.num_tiles).from_address(tiled.tile_dim_sizes)
                  ) if tiled.num_tiles else ()
    flat = tuple((_i64 * sum(sizes)).from_address(tiled.tile_dims)) if sum(sizes) else ()
    tiles, start = [], 0
    for n in sizes:
      tiles.append(flat[start:start + n])
      start += n
    return ("tiled", order, tuple(tiles))
  strides = layout.u.strides
  return ("strides", tuple((_i64 * strides.num_byte_strides).from_address(strides.byte_strides)))


_NAMED_VALUE_STRING, _NAMED_VALUE_INT64, _NAMED_VALUE_INT64_LIST = 0, 1, 2
_NAMED_VALUE_FLOAT, _NAMED_VALUE_BOOL = 3, 4

# PJRT_HostBufferSemantics: the data is copied before BufferFromHostBuffer returns.
HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL = 0

_MEMORY_STATS_FIELDS = (
    "generated_code_size_in_bytes", "argument_size_in_bytes", "output_size_in_bytes",
    "alias_size_in_bytes", "temp_size_in_bytes", "host_generated_code_size_in_bytes",
    "host_argument_size_in_bytes", "host_output_size_in_bytes", "host_alias_size_in_bytes",
    "host_temp_size_in_bytes", "peak_memory_in_bytes")

# PJRT_Device_MemoryStats_Args's statistics in header order; each but the first is followed by
# an `_is_set` flag (the plugin may leave it out).
_DEVICE_MEMORY_STATS = (
    "bytes_in_use", "peak_bytes_in_use", "num_allocs", "largest_alloc_size", "bytes_limit",
    "bytes_reserved", "peak_bytes_reserved", "bytes_reservable_limit", "largest_free_block_bytes",
    "pool_bytes", "peak_pool_bytes")
DEVICE_MEMORY_STATS = _DEVICE_MEMORY_STATS

# Fields after struct_size/extension_start of PJRT_<name>_Args, for each function revax calls.
_ARGS_FIELDS = {
    "Error_Destroy": [("error", _ptr)],
    "Error_Message": [("error", _ptr), ("message", _ptr), ("message_size", _size)],
    "Error_GetCode": [("error", _ptr), ("code", _int)],
    "Plugin_Initialize": [],
    "Plugin_Attributes": [("attributes", _ptr), ("num_attributes", _size)],
    "Event_Destroy": [("event", _ptr)],
    "Event_IsReady": [("event", _ptr), ("is_ready", _bool)],
    "Event_Await": [("event", _ptr)],
    "Client_Create": [
        ("create_options", _ptr), ("num_options", _size), ("kv_get_callback", _ptr),
        ("kv_get_user_arg", _ptr), ("kv_put_callback", _ptr), ("kv_put_user_arg", _ptr),
        ("client", _ptr), ("kv_try_get_callback", _ptr), ("kv_try_get_user_arg", _ptr)],
    "Client_Destroy": [("client", _ptr)],
    "Client_PlatformName": [("client", _ptr), ("platform_name", _ptr),
                            ("platform_name_size", _size)],
    "Client_PlatformVersion": [("client", _ptr), ("platform_version", _ptr),
                               ("platform_version_size", _size)],
    "Client_AddressableDevices": [("client", _ptr), ("addressable_devices", _ptr),
                                  ("num_addressable_devices", _size)],
    "Client_Compile": [("client", _ptr), ("program", _ptr), ("compile_options", _ptr),
                       ("compile_options_size", _size), ("executable", _ptr)],
    "Client_BufferFromHostBuffer": [
        ("client", _ptr), ("data", _ptr), ("type", _int), ("dims", _ptr), ("num_dims", _size),
        ("byte_strides", _ptr), ("num_byte_strides", _size), ("host_buffer_semantics", _int),
        ("device", _ptr), ("memory", _ptr), ("device_layout", _ptr),
        ("done_with_host_buffer", _ptr), ("buffer", _ptr)],
    "DeviceDescription_Id": [("device_description", _ptr), ("id", _int)],
    "DeviceDescription_Kind": [("device_description", _ptr), ("device_kind", _ptr),
                               ("device_kind_size", _size)],
    "DeviceDescription_ToString": [("device_description", _ptr), ("to_string", _ptr),
                                   ("to_string_size", _size)],
    "Device_GetDescription": [("device", _ptr), ("device_description", _ptr)],
    "Device_LocalHardwareId": [("device", _ptr), ("local_hardware_id", _int)],
    "Device_AddressableMemories": [("device", _ptr), ("memories", _ptr), ("num_memories", _size)],
    "Device_DefaultMemory": [("device", _ptr), ("memory", _ptr)],
    "Memory_Id": [("memory", _ptr), ("id", _int)],
    "Memory_Kind": [("memory", _ptr), ("kind", _ptr), ("kind_size", _size)],
    "Memory_DebugString": [("memory", _ptr), ("debug_string", _ptr),
                           ("debug_string_size", _size)],
    "Memory_ToString": [("memory", _ptr), ("to_string", _ptr), ("to_string_size", _size)],
    "Memory_AddressableByDevices": [("memory", _ptr), ("devices", _ptr), ("num_devices", _size)],
    "Executable_Destroy": [("executable", _ptr)],
    "Executable_NumReplicas": [("executable", _ptr), ("num_replicas", _size)],
    "Executable_NumPartitions": [("executable", _ptr), ("num_partitions", _size)],
    "Executable_NumOutputs": [("executable", _ptr), ("num_outputs", _size)],
    "Executable_OutputElementTypes": [("executable", _ptr), ("output_types", _ptr),
                                      ("num_output_types", _size)],
    "Executable_OutputDimensions": [("executable", _ptr), ("num_outputs", _size),
                                    ("dims", _ptr), ("dim_sizes", _ptr)],
    "Executable_GetCompiledMemoryStats": [("executable", _ptr)]
                                         + [(f, _i64) for f in _MEMORY_STATS_FIELDS],
    "Executable_GetCostAnalysis": [("executable", _ptr), ("num_properties", _size),
                                   ("properties", _ptr)],
    "Executable_Serialize": [("executable", _ptr), ("serialized_bytes", _ptr),
                             ("serialized_bytes_size", _size), ("serialized_executable", _ptr),
                             ("serialized_executable_deleter", _ptr)],
    # The plugin (PJRT 0.81) refuses the older 48-byte form: the override fields must be there.
    "Executable_DeserializeAndLoad": [
        ("client", _ptr), ("serialized_executable", _ptr), ("serialized_executable_size", _size),
        ("loaded_executable", _ptr), ("overridden_serialized_compile_options", _ptr),
        ("overridden_serialized_compile_options_size", _size)],
    "LoadedExecutable_Destroy": [("executable", _ptr)],
    "LoadedExecutable_GetExecutable": [("loaded_executable", _ptr), ("executable", _ptr)],
    "LoadedExecutable_AddressableDevices": [("executable", _ptr), ("addressable_devices", _ptr),
                                            ("num_addressable_devices", _size)],
    "LoadedExecutable_Execute": [
        ("executable", _ptr), ("options", _ptr), ("argument_lists", _ptr), ("num_devices", _size),
        ("num_args", _size), ("output_lists", _ptr), ("device_complete_events", _ptr),
        ("execute_device", _ptr)],
    "Buffer_Destroy": [("buffer", _ptr)],
    "Buffer_ElementType": [("buffer", _ptr), ("type", _int)],
    "Buffer_Dimensions": [("buffer", _ptr), ("dims", _ptr), ("num_dims", _size)],
    "Buffer_ToHostBuffer": [("src", _ptr), ("host_layout", _ptr), ("dst", _ptr),
                            ("dst_size", _size), ("event", _ptr)],
    "Buffer_ReadyEvent": [("buffer", _ptr), ("event", _ptr)],
    "Buffer_GetMemoryLayout": [("buffer", _ptr), ("layout", MemoryLayout)],
    "Device_MemoryStats": [("device", _ptr)] + [
        (name, kind) for stat in _DEVICE_MEMORY_STATS
        for name, kind in ((stat, _i64),) + (((stat + "_is_set", _bool),)
                                             if stat != "bytes_in_use" else ())],
    "Buffer_UnsafePointer": [("buffer", _ptr), ("buffer_pointer", _size)],
    "Buffer_Memory": [("buffer", _ptr), ("memory", _ptr)],
    "Buffer_CopyToMemory": [("buffer", _ptr), ("dst_memory", _ptr), ("dst_buffer", _ptr)],
}
ARGS: dict[str, type[C.Structure]] = {
    name: _struct(f"PJRT_{name}_Args", fields) for name, fields in _ARGS_FIELDS.items()}
MEMORY_STATS_FIELDS = _MEMORY_STATS_FIELDS

# The PJRT_Api function table, in header order. It starts after struct_size, extension_start and
# the 24-byte PJRT_Api_Version; the plugin's own struct_size says how many entries it has.
_API_FUNCTIONS = """
Error_Destroy Error_Message Error_GetCode Plugin_Initialize Plugin_Attributes Event_Destroy
Event_IsReady Event_Error Event_Await Event_OnReady Client_Create Client_Destroy
Client_PlatformName Client_ProcessIndex Client_PlatformVersion Client_Devices
Client_AddressableDevices Client_LookupDevice Client_LookupAddressableDevice
Client_AddressableMemories Client_Compile Client_DefaultDeviceAssignment
Client_BufferFromHostBuffer DeviceDescription_Id DeviceDescription_ProcessIndex
DeviceDescription_Attributes DeviceDescription_Kind DeviceDescription_DebugString
DeviceDescription_ToString Device_GetDescription Device_IsAddressable Device_LocalHardwareId
Device_AddressableMemories Device_DefaultMemory Device_MemoryStats Memory_Id Memory_Kind
Memory_DebugString Memory_ToString Memory_AddressableByDevices Executable_Destroy Executable_Name
Executable_NumReplicas Executable_NumPartitions Executable_NumOutputs
Executable_SizeOfGeneratedCodeInBytes Executable_GetCostAnalysis Executable_OutputMemoryKinds
Executable_OptimizedProgram Executable_Serialize LoadedExecutable_Destroy
LoadedExecutable_GetExecutable LoadedExecutable_AddressableDevices LoadedExecutable_Delete
LoadedExecutable_IsDeleted LoadedExecutable_Execute Executable_DeserializeAndLoad
LoadedExecutable_Fingerprint Buffer_Destroy Buffer_ElementType Buffer_Dimensions
Buffer_UnpaddedDimensions Buffer_DynamicDimensionIndices Buffer_GetMemoryLayout
Buffer_OnDeviceSizeInBytes Buffer_Device Buffer_Memory Buffer_Delete Buffer_IsDeleted
Buffer_CopyToDevice Buffer_ToHostBuffer Buffer_IsOnCpu Buffer_ReadyEvent Buffer_UnsafePointer
Buffer_IncreaseExternalReferenceCount Buffer_DecreaseExternalReferenceCount
Buffer_OpaqueDeviceMemoryDataPointer CopyToDeviceStream_Destroy CopyToDeviceStream_AddChunk
CopyToDeviceStream_TotalBytes CopyToDeviceStream_GranuleSize CopyToDeviceStream_CurrentBytes
TopologyDescription_Create TopologyDescription_Destroy TopologyDescription_PlatformName
TopologyDescription_PlatformVersion TopologyDescription_GetDeviceDescriptions
TopologyDescription_Serialize TopologyDescription_Attributes Compile
Executable_OutputElementTypes Executable_OutputDimensions Buffer_CopyToMemory
Client_CreateViewOfDeviceBuffer Executable_Fingerprint Client_TopologyDescription
Executable_GetCompiledMemoryStats Memory_Kind_Id ExecuteContext_Create ExecuteContext_Destroy
Buffer_CopyRawToHost""".split()
_API_TABLE_OFFSET = 8 + 8 + 24
_MIN_API_MINOR = 40
_VOID_FUNCTIONS = frozenset({"Error_Destroy", "Error_Message"})
# One C signature for every entry: a pointer to the Args struct in, a PJRT_Error* out. CFUNCTYPE
# (not PYFUNCTYPE) releases the GIL during the call, so blocking calls let other threads run.
_ERROR_FN = C.CFUNCTYPE(_ptr, _ptr)
_VOID_FN = C.CFUNCTYPE(None, _ptr)


# ----------------------------------------------------------------------------- compile options

def _varint(n: int) -> bytes:
  out = bytearray()
  n &= (1 << 64) - 1
  while True:
    byte, n = n & 0x7F, n >> 7
    out.append(byte | (0x80 if n else 0))
    if not n:
      return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
  """A length-delimited protobuf field."""
  return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
  return _varint(number << 3) + _varint(value)


def read_varint(b: bytes, i: int) -> tuple[int, int]:
  """The varint at `b[i:]` and the position after it."""
  result = shift = 0
  while True:
    x = b[i]
    i += 1
    result |= (x & 0x7F) << shift
    shift += 7
    if not x & 0x80:
      return result, i


def proto_fields(buf: bytes) -> list:
  """Protobuf wire format -> [(field number, wire type, value)]."""
  i, out = 0, []
  while i < len(buf):
    key, i = read_varint(buf, i)
    field, wire = key >> 3, key & 7
    if wire == 0:
      value, i = read_varint(buf, i)
    elif wire == 2:
      n, i = read_varint(buf, i)
      value, i = buf[i:i + n], i + n
    elif wire == 1:
      value, i = buf[i:i + 8], i + 8
    elif wire == 5:
      value, i = buf[i:i + 4], i + 4
    else:
      raise ValueError(f"unsupported protobuf wire type {wire}")
    out.append((field, wire, value))
  return out


def compile_options(num_replicas: int = 1, num_partitions: int = 1, *,
                    use_spmd_partitioning: bool = False, use_shardy_partitioner: bool = False,
                    device_assignment: list[list[int]] | None = None,
                    portable: bool = False, option_overrides=()) -> bytes:
  """Serialized `xla.CompileOptionsProto` with the fields revax sets.

  Field numbers were read from the descriptor embedded in the plugin:
  CompileOptionsProto{executable_build_options = 3, compile_portable_executable = 4};
  ExecutableBuildOptionsProto{num_replicas = 4, num_partitions = 5, use_spmd_partitioning = 6,
  device_assignment = 9, use_shardy_partitioner = 19}; DeviceAssignmentProto{replica_count = 1,
  computation_count = 2, computation_devices = 3 {replica_device_ids = 1}}.

  Never send empty options: the CPU plugin then aborts the process (CHECK replica_count > 0).

  Args:
    num_replicas, num_partitions: the program's replica and partition counts.
    use_spmd_partitioning: partition a single program across `num_partitions` devices.
    use_shardy_partitioner: partition with Shardy (needed for `sdy.sharding` annotations).
    device_assignment: device ids as `[partition][replica]`; the default is devices 0, 1, ...
    portable: compile a single-device executable that may run on any device, chosen at
      execute time through `execute_device`.
    option_overrides: (name, value) pairs of XLA options (JAX's `compiler_options`), sent as
      `env_option_overrides = 7` (a map to OptionOverrideProto{string_field = 1,
      bool_field = 2, int_field = 3, double_field = 4}; field numbers read from jaxlib's
      serialized CompileOptions); XLA applies them by name to its debug options.

  Returns:
    The proto's bytes, e.g. ``compile_options() == b"\\x1a\\x04\\x20\\x01\\x28\\x01"``.
  """
  build = _int_field(4, num_replicas) + _int_field(5, num_partitions)
  if use_spmd_partitioning:
    build += _int_field(6, 1)
  if device_assignment is not None:
    assignment = _int_field(1, num_replicas) + _int_field(2, num_partitions)
    for replica_ids in device_assignment:
      ids = b"".join(_varint(i) for i in replica_ids)
      assignment += _field(3, _field(1, ids))
    build += _field(9, assignment)
  if use_shardy_partitioner:
    build += _int_field(19, 1)
  options = _field(3, build)
  if portable:
    options += _int_field(4, 1)
  return options + option_override_fields(option_overrides)


def option_override_fields(option_overrides) -> bytes:
  """The `env_option_overrides` entries of a CompileOptionsProto for (name, value) pairs:
  appended to serialized options, they add to (or, for a name already there, replace) the
  options' overrides, as protobuf merges a repeated map field.

  Example:
    >>> from revax._src.runtime import pjrt
    >>> pjrt.option_override_fields([("xla_dump_to", "d")])
    b':\\x12\\n\\x0bxla_dump_to\\x12\\x03\\n\\x01d'
  """
  return b"".join(_field(7, _field(1, str(name).encode()) + _field(2, _option_value(value)))
                  for name, value in option_overrides)


def _option_value(value) -> bytes:
  """An OptionOverrideProto holding `value` (str, bool, int or float)."""
  if isinstance(value, bool):
    return _int_field(2, int(value))
  if isinstance(value, int):
    return _int_field(3, value)
  if isinstance(value, float):
    import struct
    return _varint(4 << 3 | 1) + struct.pack("<d", value)
  if isinstance(value, str):
    return _field(1, value.encode())
  raise TypeError(f"compiler option values must be str, bool, int or float, got {value!r} of "
                  f"type {type(value).__name__}")


# ----------------------------------------------------------------------------- plugin

def default_plugin_path() -> str:
  """The plugin to load: env `PJRT_PLUGIN`, else the CPU plugin of the `xla-cpu-pjrt` wheel."""
  path = os.environ.get("PJRT_PLUGIN")
  if path:
    return path
  import importlib.util
  spec = importlib.util.find_spec("xla_plugins.xla_cpu_pjrt")
  if spec is None or not spec.submodule_search_locations:
    raise RuntimeError("the PJRT CPU plugin is missing: pip install xla-cpu-pjrt==0.0.1")
  return os.path.join(list(spec.submodule_search_locations)[0], "xla_cpu_pjrt.so")


_XLA_FLAG_DEFAULTS = ("--xla_cpu_enable_fast_min_max=false",)


def _set_xla_flag_defaults() -> None:
  """XLA:CPU defaults to fast min/max, which drops NaNs (max(1, nan) == 1); revax follows JAX's
  NaN-propagating semantics. Add our defaults to XLA_FLAGS unless the user set those flags."""
  flags = os.environ.get("XLA_FLAGS", "")
  extra = [f for f in _XLA_FLAG_DEFAULTS if f.split("=")[0] not in flags]
  if extra:
    os.environ["XLA_FLAGS"] = " ".join([flags] + extra).strip()


def _open_quietly(path: str) -> C.CDLL:
  """dlopen the plugin with its absl/TSL logging limited to FATAL.

  The plugin logs INFO lines at client creation and ERROR lines with stack traces for errors it
  also returns (e.g. RET_CHECK failures while compiling), all on stderr. Its TSL logger reads
  `TF_CPP_MIN_LOG_LEVEL` once, while the library is being loaded (measured: setting it after
  dlopen has no effect, restoring it after dlopen keeps the plugin quiet). So it is set to 3
  around dlopen only and the caller's environment is restored. `REVAX_DEBUG_RUNTIME=1` skips
  this and lets the plugin log as it likes (or as `TF_CPP_MIN_LOG_LEVEL` says).
  """
  _set_xla_flag_defaults()
  if os.environ.get("REVAX_DEBUG_RUNTIME") == "1":
    return C.CDLL(path, mode=C.RTLD_LOCAL)
  saved = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
  os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
  try:
    return C.CDLL(path, mode=C.RTLD_LOCAL)
  finally:
    if saved is None:
      del os.environ["TF_CPP_MIN_LOG_LEVEL"]
    else:
      os.environ["TF_CPP_MIN_LOG_LEVEL"] = saved


class Api:
  """A loaded and initialized PJRT plugin: its function table and helpers to call it.

  Attributes:
    path: the plugin's file.
    version: `(major, minor)` of the PJRT C API the plugin implements.
    functions: name (without the `PJRT_` prefix) -> ctypes function taking the Args address.
  """

  def __init__(self, path: str | None = None):
    self.path = path or default_plugin_path()
    self._lib = _open_quietly(self.path)
    get_api = self._lib.GetPjrtApi
    get_api.restype = _ptr
    base = get_api()
    if not base:
      raise RuntimeError(f"GetPjrtApi returned NULL in {self.path}")
    self.base: int = base  # the PJRT_Api struct (its extension chain is read by ffi.py)
    api_size = _size.from_address(base).value
    self.version = (_int.from_address(base + 32).value, _int.from_address(base + 36).value)
    if self.version[0] != 0 or self.version[1] < _MIN_API_MINOR:
      raise RuntimeError(f"unsupported PJRT C API version {self.version} in {self.path}")
    available = (api_size - _API_TABLE_OFFSET) // C.sizeof(_ptr)
    self.functions: dict[str, C._CFuncPtr] = {}
    for i, name in enumerate(_API_FUNCTIONS[:available]):
      address = _ptr.from_address(base + _API_TABLE_OFFSET + C.sizeof(_ptr) * i).value
      if address:  # a plugin may leave entries it does not implement NULL
        kind = _VOID_FN if name in _VOID_FUNCTIONS else _ERROR_FN
        self.functions[name] = kind(address)
    self.call("Plugin_Initialize")

  def args(self, name: str, **fields) -> C.Structure:
    """A fresh PJRT_<name>_Args with struct_size set and `fields` filled in."""
    cls = ARGS[name]
    args = cls(**fields)
    args.struct_size = cls.STRUCT_SIZE
    return args

  def call(self, name: str, **fields) -> C.Structure:
    """Call PJRT_<name> with the given Args fields; return the Args to read the out-fields.

    Raises:
      RuntimeBackendError: the plugin returned an error.
    """
    args = self.args(name, **fields)
    error = self.functions[name](C.addressof(args))
    if error:
      raise self.take_error(error)
    return args

  def take_error(self, error: int, cls: type[RuntimeBackendError] = RuntimeBackendError):
    """Turn a PJRT_Error* into a Python exception (not raised) and destroy the PJRT_Error."""
    message = self.args("Error_Message", error=error)
    self.functions["Error_Message"](C.addressof(message))
    text = C.string_at(message.message, message.message_size).decode(errors="replace")
    code = self.args("Error_GetCode", error=error)
    code_error = self.functions["Error_GetCode"](C.addressof(code))
    name = ERROR_CODES[code.code] if 0 <= code.code < len(ERROR_CODES) else str(code.code)
    # (each Args struct is kept in a variable: a temporary would be freed -- and its memory
    # possibly reused -- before the call reads it)
    if code_error:  # cannot happen with a sane plugin; do not leak it either
      destroy = self.args("Error_Destroy", error=code_error)
      self.functions["Error_Destroy"](C.addressof(destroy))
    destroy = self.args("Error_Destroy", error=error)
    self.functions["Error_Destroy"](C.addressof(destroy))
    return cls(name, text)

  def await_event(self, event: int | None) -> None:
    """Block until a PJRT_Event fires, destroy it, and raise its error if it carries one."""
    if not event:
      return
    args = self.args("Event_Await", event=event)  # kept alive through the call
    error = self.functions["Event_Await"](C.addressof(args))
    self.destroy_event(event)
    if error:
      raise self.take_error(error)

  def destroy_event(self, event: int | None) -> None:
    if event:
      self.call("Event_Destroy", event=event)

  def string(self, pointer: int | None, size: int) -> str:
    """Decode a (const char*, size_t) pair the plugin returned."""
    return C.string_at(pointer, size).decode(errors="replace") if size else ""

  @staticmethod
  def named_values(options: dict) -> tuple[C.Array, list]:
    """A PJRT_NamedValue array for `options` and the objects that must outlive it."""
    array = (NamedValue * len(options))()
    keep_alive: list = [array]
    for entry, (key, value) in zip(array, options.items(), strict=True):
      name = key.encode()
      keep_alive.append(name)
      entry.struct_size = NamedValue.STRUCT_SIZE
      entry.name, entry.name_size = C.cast(C.c_char_p(name), _ptr), len(name)
      if isinstance(value, bool):
        entry.type, entry.value.bool_value, entry.value_size = _NAMED_VALUE_BOOL, value, 1
      elif isinstance(value, int):
        entry.type, entry.value.int64_value, entry.value_size = _NAMED_VALUE_INT64, value, 1
      elif isinstance(value, float):
        entry.type, entry.value.float_value, entry.value_size = _NAMED_VALUE_FLOAT, value, 1
      else:
        text = str(value).encode()
        keep_alive.append(text)
        entry.type, entry.value_size = _NAMED_VALUE_STRING, len(text)
        entry.value.string_value = C.cast(C.c_char_p(text), _ptr)
    return array, keep_alive

  def read_named_values(self, pointer: int | None, count: int) -> dict:
    """Decode a PJRT_NamedValue array the plugin returned."""
    out = {}
    for i in range(count):
      entry = NamedValue.from_address(pointer + i * C.sizeof(NamedValue))
      key = self.string(entry.name, entry.name_size)
      if entry.type == _NAMED_VALUE_STRING:
        out[key] = self.string(entry.value.string_value, entry.value_size)
      elif entry.type == _NAMED_VALUE_INT64:
        out[key] = entry.value.int64_value
      elif entry.type == _NAMED_VALUE_INT64_LIST:
        out[key] = list((_i64 * entry.value_size).from_address(entry.value.int64_array_value))
      elif entry.type == _NAMED_VALUE_FLOAT:
        out[key] = entry.value.float_value
      else:
        out[key] = entry.value.bool_value
    return out

  def plugin_attributes(self) -> dict:
    """The plugin's attributes, e.g. `xla_version`, `stablehlo_current_version`."""
    args = self.call("Plugin_Attributes")
    return self.read_named_values(args.attributes, args.num_attributes)
