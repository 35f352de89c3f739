"""The runtime revax executes on: one PJRT client, its devices, device buffers and executables.

`get_backend()` creates a single process-wide `Backend` on first use (never at import: importing
this module does not load the plugin). The backend turns NumPy arrays into device `Buffer`s,
compiles StableHLO text into `Executable`s and runs them:

    backend = get_backend()
    exe = backend.compile(stablehlo_text)
    x = backend.buffer_from_numpy(np.ones(3, np.float32))
    (y,) = exe.execute([x, x])
    y.to_numpy()

The runtime checks only byte sizes when executing (an int32 array where f32 is expected runs and
returns garbage); callers validate shapes and dtypes before `execute`.

Dispatch is asynchronous, as JAX's: `execute` returns as soon as the program is queued. Its
output Buffers are futures: whatever reads their data (`to_numpy`, `block_until_ready`) waits on
that buffer's own ready event and raises the program's error there (a program fed a failed
buffer fails the same way). Each device keeps the completion events of its queued programs in a
window of at most `revax_max_inflight_computations` (JAX's bound on in-flight work): a launch
that finds it full first waits for the oldest. Programs with host callbacks are waited for at
the call (as JAX does on CPU), so their effects and errors happen before it returns.

Hot paths (`buffer_from_numpy`, `execute`, `Buffer.to_numpy`, freeing a buffer) reuse
preallocated ctypes argument structs. Each set of structs is taken from a pool for the duration
of one call and put back afterwards (`list.pop`/`list.append` are atomic), so concurrent calls
from several threads never share one. PJRT calls release the GIL.
"""
from __future__ import annotations

import collections
import ctypes as C
import dataclasses
import itertools
import math
import operator
import os
import re
import sys
import struct
import threading
import time
from collections.abc import Sequence

import numpy as np

from revax._src.core.config import config
from revax._src.core.errors import JaxRuntimeError
from revax._src.runtime import (backends, compilation_cache, fastpath, gemm, hlo_dump, im2col,
                                memories, nt_dots, pjrt, platform_limits, plugins, subbyte)
from revax._src.runtime.array import Array
from revax._src.runtime.pjrt import CompileError, RuntimeBackendError

__all__ = ["get_backend", "Backend", "Device", "Buffer", "Executable", "MemoryStats",
           "RuntimeBackendError", "CompileError"]

_ptr = C.c_void_p
_new = object.__new__
_new_array = Array.__new__  # (Array's base is the buffer protocol's C type)
_pointer_of = operator.attrgetter("_ptr")
_memmove = C.memmove
_NUMPY_TO_PJRT = pjrt.NUMPY_TO_PJRT
_is_finalizing = sys.is_finalizing

# Executable.serialize(): this header, then the plugin's bytes. The flag says whether the program
# was compiled portable (one device, chosen per call), which the plugin's bytes do not tell.
# (bit 0: portable; bit 1: calls wait for it, see `Executable.waits`)
_SERIALIZED = struct.Struct("<8sII")  # magic, format version, flags
_SERIALIZED_MAGIC = b"RVXEXEC\0"
_SERIALIZED_VERSION = 1
_SERIALIZE_DELETER = C.CFUNCTYPE(None, _ptr)

# PJRT_Buffer_Destroy_Args (struct_size, extension_start, buffer) packed into a fresh bytes object
# per call: the plugin only reads it, so concurrent frees need no shared struct (and no pool), and
# a Buffer's finalizer is one pack and one foreign call.
_pack_destroy_args = struct.Struct("@NPP").pack
_DESTROY_ARGS_SIZE = pjrt.ARGS["Buffer_Destroy"].STRUCT_SIZE

# ----------------------------------------------------------------------------- the backend

_backend: Backend | None = None  # the default backend (read on hot paths)
_backends: dict[str, Backend] = {}  # every started backend, by platform
_backend_lock = threading.RLock()

# fn(backend) called before every compile; one may raise to refuse it. The jax-compatibility
# mode's `jax._src.compiler` shim puts one here, so that a library wrapping jax's compile entry
# point (chex.restrict_backends forbids compiling for a platform) sees revax's compiles.
compile_checks: list = []


def get_backend(platform: str | None = None) -> Backend:
  """A backend (one PJRT client), created (plugin loaded, client made) on first use.

  Args:
    platform: "cpu", "tpu" (or "host"); None for the default backend: the first of
      `backends.platform_order()` (the TPU where libtpu is installed and a chip is attached,
      else the CPU; `jax_platforms` / env REVAX_PLATFORMS choose), or the plugin that config
      `revax_pjrt_plugin` / env `PJRT_PLUGIN` names. The number of CPU devices is config
      `jax_num_cpu_devices`, else env `REVAX_CPU_DEVICE_COUNT`, else XLA's flag
      `--xla_force_host_platform_device_count=N` in env `XLA_FLAGS` (as jax reads it), else 1.

  Returns:
    The `Backend`; every call for a platform returns the same object.

  Raises:
    RuntimeError: JAX's error for a platform that is not present, or a clear one for a TPU that
      did not start (e.g. held by another process).

  Example:
    >>> from revax._src.runtime.client import get_backend
    >>> get_backend().devices[0]
    CpuDevice(id=0)
  """
  backend = _backend
  if platform is None:
    if backend is None:
      backend = _create_default_backend()
    return backend
  platform = backends.canonical_platform(platform)
  found = _backends.get(platform)
  return found if found is not None else _create_backend(platform)


def backend_count() -> int:
  """How many backends have started (a second one makes one-device call plans look again)."""
  return len(_backends)


def started_backends() -> list[Backend]:
  """The backends created so far, the default first."""
  return sorted(_backends.values(), key=lambda b: b is not _backend)


def _create_default_backend() -> Backend:
  global _backend
  with _backend_lock:
    if _backend is None:
      if plugins.explicit_choice():  # PJRT_PLUGIN / revax_pjrt_plugin: that plugin is default
        backend = _start(plugins.load())
      else:
        backend = _open(backends.platform_order()[0])
      _backend = backend
      _after_start(backend)
    return _backend


def _create_backend(platform: str) -> Backend:
  with _backend_lock:
    if platform not in _backends and _backend is None:
      _create_default_backend()  # (the default starts first, as it decides the rest)
    if platform in _backends:
      return _backends[platform]
    present = _present_platforms()
    if platform not in present:
      raise backends.unknown_backend_error(platform, present)
    backend = _open(platform)
    _after_start(backend)
    return backend


def _after_start(backend: Backend) -> None:
  """What a new backend needs before any program is compiled for it: a CPU one gets LAPACK's
  FFI handlers (a deserialized revax.export module is compiled without being lowered here)."""
  if backend.platform == "cpu":
    from revax._src.runtime import lapack
    lapack.register()


def _open(platform: str) -> Backend:
  """Start the backend of `platform` ("tpu": libtpu's plugin; "cpu": the default CPU plugin)."""
  if platform == "tpu":
    path = backends.tpu_plugin_path()
    if path is None:
      raise backends.unknown_backend_error("tpu", list(_backends) or ["cpu"])
    try:
      api = plugins.load_path(path, "libtpu")
    except RuntimeError as e:  # libtpu takes the chip's lock while it initializes
      raise backends.tpu_start_error(str(e.__cause__ or e)) from None
    return _start(api)
  return _start(plugins.load_default())


def _present_platforms() -> list[str]:
  """The platforms that can start in this process (those started, then the offered ones)."""
  present = list(_backends)
  try:
    offered = backends.platform_order() if backends.requested_platforms() else (
        ["tpu", "cpu"] if backends.tpu_plugin_path() and backends.tpu_attached() else ["cpu"])
  except RuntimeError:
    offered = []
  return present + [p for p in offered if p not in present]


def _start(api: pjrt.Api) -> Backend:
  """A Backend on the loaded plugin `api`, registered under its platform."""
  options = _client_options(api.path)
  try:
    try:
      backend = Backend(api, create_options=options)
    except RuntimeBackendError:
      if _INFLIGHT_OPTION not in options:
        raise
      # a libtpu that does not know the option: revax's windows bound the work instead
      backend = Backend(api, create_options={k: v for k, v in options.items()
                                             if k != _INFLIGHT_OPTION})
  except RuntimeBackendError as e:
    if "tpu" in os.path.basename(api.path).lower():
      raise backends.tpu_start_error(e.message) from None
    raise
  return _backends.setdefault(backend.platform, backend)


# libtpu's own bound on the programs queued per device (the option PyTorch/XLA and JAX's TPU
# client pass): where the plugin bounds its work itself, revax's windows need not track each
# launch's completion, which on a TPU costs about as much as the launch (tests/tpu/RESULTS.md)
_INFLIGHT_OPTION = "max_inflight_computations"


def _client_options(plugin_path: str) -> dict:
  """PJRT_Client_Create options: the CPU plugin gets `cpu_device_count` (its default is 4),
  libtpu `max_inflight_computations` (revax_max_inflight_computations, read at the start)."""
  name = os.path.basename(plugin_path).lower()
  if "tpu" in name:
    return {_INFLIGHT_OPTION: config.read("revax_max_inflight_computations")}
  if "cpu" not in name:
    return {}
  configured = config.read("num_cpu_devices")
  if configured > 0:
    return {"cpu_device_count": configured}
  text = os.environ.get("REVAX_CPU_DEVICE_COUNT")
  name = "REVAX_CPU_DEVICE_COUNT"
  if text is None:  # XLA's own flag, as jax's CPU client reads it (chex.set_n_cpu_devices)
    found = re.findall(r"--xla_force_host_platform_device_count=(\S*)",
                       os.environ.get("XLA_FLAGS", ""))
    text = found[-1] if found else "1"
    name = "XLA_FLAGS --xla_force_host_platform_device_count"
  try:
    count = int(text)
  except ValueError:
    count = 0
  if count < 1:
    raise ValueError(f"{name} must be a positive integer, got {text!r}")
  return {"cpu_device_count": count}


def _check_cpu_device_count(value: int) -> None:
  """Refuse a new jax_num_cpu_devices once the backend exists (its devices are fixed then)."""
  backend = _backend
  if backend is not None and value > 0 and value != len(backend.devices):
    raise ValueError(f"jax_num_cpu_devices={value} cannot be applied: the CPU backend already "
                     f"started with {len(backend.devices)} device(s); set it before the first "
                     "computation")


config.add_validator("num_cpu_devices", _check_cpu_device_count)


def _check_default_device(value) -> None:
  """jax_default_device: None, a Device of a backend, or a platform name ("cpu", "tpu")."""
  if value is None:
    return
  if isinstance(value, str):
    get_backend(value)  # (JAX's RuntimeError for a platform that is not present)
    return
  if not isinstance(value, Device):
    raise ValueError(f"jax_default_device takes a Device, a platform name or None, got "
                     f"{value!r}")


config.add_validator("default_device", _check_default_device)


class _NumpyHeader(C.Structure):
  """The start of NumPy's PyArrayObject after PyObject_HEAD: data, nd, dimensions, strides.

  Reading these four fields through `id(x)` costs ~0.4 us where `x.ctypes.data` costs ~2.7 us
  (it builds `__array_interface__`). The layout has been stable across NumPy 1.x and 2.x, and
  `_numpy_header_works()` checks it on a probe array before the backend relies on it.
  """
  _fields_ = [("data", _ptr), ("nd", C.c_int), ("dimensions", _ptr), ("strides", _ptr)]


_NUMPY_HEADER_OFFSET = 2 * C.sizeof(_ptr)  # ob_refcnt, ob_type


def _numpy_header(x: np.ndarray) -> _NumpyHeader:
  return _NumpyHeader.from_address(id(x) + _NUMPY_HEADER_OFFSET)


def _numpy_header_works() -> bool:
  probe = np.empty((5, 7, 3), np.float32)[1:, ::-2, 1]
  if sys.implementation.name != "cpython" or C.sizeof(C.c_ssize_t) != 8:
    return False
  header = _numpy_header(probe)
  return (header.data == probe.ctypes.data and header.nd == probe.ndim
          and tuple((C.c_int64 * probe.ndim).from_address(header.dimensions)) == probe.shape
          and tuple((C.c_int64 * probe.ndim).from_address(header.strides)) == probe.strides)


class _HostScratch:
  """Preallocated Args structs for the small calls on hot paths; used by one call at a time."""
  __slots__ = ("put", "put_address", "event", "event_address", "ready", "ready_address",
               "pointer", "pointer_address", "to_host", "to_host_address")

  def __init__(self, api: pjrt.Api, client: int):
    # Event_Await and Event_Destroy take the same one-field Args, so one struct serves both.
    self.put = api.args("Client_BufferFromHostBuffer", client=client,
                        host_buffer_semantics=pjrt.HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL)
    self.event = api.args("Event_Await")
    self.ready = api.args("Buffer_ReadyEvent")
    self.pointer = api.args("Buffer_UnsafePointer")
    self.to_host = api.args("Buffer_ToHostBuffer")
    for name in ("put", "event", "ready", "pointer", "to_host"):
      setattr(self, name + "_address", C.addressof(getattr(self, name)))


class Backend:
  """A PJRT client and its devices.

  Attributes:
    platform: the platform name, e.g. ``"cpu"``.
    platform_version: the plugin's version string for that platform.
    devices: the addressable devices, in the client's order.
  """

  def __init__(self, api: pjrt.Api, create_options: dict | None = None):
    self._api = api
    options, keep_alive = api.named_values(create_options or {})
    self._client = api.call("Client_Create", create_options=C.addressof(options),
                            num_options=len(create_options or {})).client
    del keep_alive
    name = api.call("Client_PlatformName", client=self._client)
    self.platform: str = api.string(name.platform_name, name.platform_name_size)
    version = api.call("Client_PlatformVersion", client=self._client)
    self.platform_version: str = api.string(version.platform_version,
                                            version.platform_version_size)
    listed = api.call("Client_AddressableDevices", client=self._client)
    pointers = _pointer_list(listed.addressable_devices, listed.num_addressable_devices)
    self.devices: list[Device] = [self._describe_device(p) for p in pointers]
    self._device_by_pointer = {d._ptr: d for d in self.devices}
    self._memories: dict[int, Memory] = {}
    self._is_cpu = self.platform == "cpu"
    self._fast_numpy = _numpy_header_works()
    self._scratch: list[_HostScratch] = []
    fns = api.functions
    self._fn_put = fns["Client_BufferFromHostBuffer"]
    self._fn_event_await = fns["Event_Await"]
    self._fn_event_destroy = fns["Event_Destroy"]
    self._fn_buffer_destroy = fns["Buffer_Destroy"]
    self._fn_ready_event = fns["Buffer_ReadyEvent"]
    self._fn_unsafe_pointer = fns["Buffer_UnsafePointer"]
    self._fn_to_host = fns["Buffer_ToHostBuffer"]
    freer = fastpath.freer(api)  # the compiled Buffer_Destroy, or None (then ctypes)
    self._free = freer.free if freer is not None else None
    self._waiter = fastpath.waiter(api)  # the compiled wait for buffers, or None (ctypes)
    # each device's computations in flight (see the module docstring); where the plugin bounds
    # them itself, the windows ask for no completion events (REVAX_TRACK_COMPLETION=1: they do)
    limit = config.read("revax_max_inflight_computations")
    self._windows = {d._ptr: _new_window(api, limit) for d in self.devices}
    plugin_bounds = _INFLIGHT_OPTION in (create_options or {})
    if plugin_bounds and os.environ.get("REVAX_TRACK_COMPLETION", "") not in ("1", "true"):
      for window in self._windows.values():
        window.track = False

  def __repr__(self) -> str:
    return f"Backend(platform={self.platform!r}, devices={self.devices})"

  def _describe_device(self, pointer: int) -> Device:
    api = self._api
    description = api.call("Device_GetDescription", device=pointer).device_description
    device_id = api.call("DeviceDescription_Id", device_description=description).id
    kind = api.call("DeviceDescription_Kind", device_description=description)
    return Device(device_id, self.platform, api.string(kind.device_kind, kind.device_kind_size),
                  pointer, self)

  def window(self, device: Device):
    """The window of `device`'s computations in flight (`len()` of it: how many; `limit`; the
    `launched` count; `drain()` waits for them all)."""
    return self._windows[device._ptr]

  def settle(self) -> None:
    """Wait until every computation queued on this backend's devices has finished (errors are
    left to the outputs that carry them)."""
    for window in self._windows.values():
      window.drain()
    settle_in_flight()

  def _memory(self, pointer: int) -> "Memory":
    """The Memory of a PJRT_Memory pointer (one object per memory space)."""
    memory = self._memories.get(pointer)
    if memory is None:
      memory = self._memories.setdefault(pointer, Memory(self, pointer))
    return memory

  def _take_scratch(self) -> _HostScratch:
    try:
      return self._scratch.pop()
    except IndexError:
      return _HostScratch(self._api, self._client)

  # --- host -> device ----------------------------------------------------------------------
  def buffer_from_numpy(self, x: np.ndarray, device: Device | None = None,
                        memory: "Memory | None" = None) -> Buffer:
    """Copy a NumPy array to a device.

    Args:
      x: any array; any strides (negative, zero, Fortran order) are passed as byte strides.
      device: the target device; default `devices[0]`.
      memory: one of the device's memories (`Device.memory(kind)`) to place the buffer in;
        default the device's default memory.

    Returns:
      A `Buffer` with `x`'s shape and dtype. The copy is done when this returns: `x` may be
      changed afterwards.

    Example:
      >>> from revax._src.runtime.client import get_backend
      >>> buffer = get_backend().buffer_from_numpy(np.arange(3.0, dtype=np.float32))
      >>> buffer.shape, buffer.dtype
      ((3,), dtype('float32'))
      >>> buffer.to_numpy()
      array([0., 1., 2.], dtype=float32)
    """
    if type(x) is not np.ndarray:
      x = np.asarray(x)
    dtype = x.dtype
    type_code = _NUMPY_TO_PJRT.get(dtype)
    if type_code is None or not x.size or not self._fast_numpy or memory is not None:
      return self._buffer_from_numpy_general(x, device, memory)
    if device is None:
      device = self.devices[0]
    # The hot path: NumPy's own data/dims/strides pointers go straight into preallocated Args.
    pool = self._scratch
    try:
      scratch = pool.pop()
    except IndexError:
      scratch = _HostScratch(self._api, self._client)
    args = scratch.put
    header = _NumpyHeader.from_address(id(x) + _NUMPY_HEADER_OFFSET)
    args.type = type_code
    args.device = device._ptr
    args.data = header.data
    args.dims = header.dimensions
    args.byte_strides = header.strides
    args.num_dims = args.num_byte_strides = header.nd
    error = self._fn_put(scratch.put_address)
    if not error:
      # With "immutable only during call" semantics the data is already copied and this event
      # has fired; it must still be destroyed.
      scratch.event.event = args.done_with_host_buffer
      error = self._fn_event_destroy(scratch.event_address)
      buffer = Buffer(self, args.buffer, x.shape, dtype, device)
    pool.append(scratch)
    if error:
      raise self._api.take_error(error)
    return buffer

  def _buffer_from_numpy_general(self, x: np.ndarray, device: Device | None,
                                 memory: "Memory | None" = None) -> Buffer:
    """`buffer_from_numpy` for byte-swapped and empty arrays, without `_NumpyHeader`, or into
    a memory named (PJRT takes the memory in place of the device then)."""
    type_code = _NUMPY_TO_PJRT.get(x.dtype)
    if type_code is None:
      x, type_code = _convert_unsupported(x)
    if not x.size:
      # Strides of empty arrays can be anything (numpy gives (0, 0) for zeros((0, 3))); the
      # plugin CHECK-fails on some (and aborts on none given). A fresh empty array has dense ones.
      x = np.empty(x.shape, x.dtype)
    device = device or self.devices[0]
    dims = (C.c_int64 * x.ndim)(*x.shape)
    strides = (C.c_int64 * x.ndim)(*x.strides)
    args = self._api.call(
        "Client_BufferFromHostBuffer", client=self._client, data=x.ctypes.data, type=type_code,
        dims=C.addressof(dims), num_dims=x.ndim, byte_strides=C.addressof(strides),
        num_byte_strides=x.ndim, device=None if memory is not None else device._ptr,
        memory=None if memory is None else memory._ptr,
        host_buffer_semantics=pjrt.HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL)
    buffer = Buffer(self, args.buffer, x.shape, x.dtype, device)
    self._api.destroy_event(args.done_with_host_buffer)
    return buffer

  # --- compile -----------------------------------------------------------------------------
  def compile(self, mlir_text: str, *, num_replicas: int = 1, num_partitions: int = 1,
              use_spmd_partitioning: bool | None = None,
              use_shardy_partitioner: bool | None = None, option_overrides=()) -> Executable:
    """Compile a StableHLO module given as MLIR text.

    A single-device program (one replica, one partition) is compiled as a portable executable:
    it runs on whichever device its arguments are on.

    Args:
      mlir_text: a module whose entry point is `func.func public @main`.
      num_replicas, num_partitions: for multi-device programs; run them with
        `Executable.execute_sharded`.
      use_spmd_partitioning: default: `num_partitions > 1`.
      use_shardy_partitioner: default: `num_partitions > 1` and the text uses `sdy.` attributes.

    Returns:
      The `Executable`.

    Raises:
      CompileError: XLA rejected the program; the message is XLA's diagnostic.
      TypeError: a program the platform's compiler would abort on (platform_limits.py).

    Example:
      >>> from revax._src.runtime.client import get_backend
      >>> text = revax.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text()  # StableHLO
      >>> exe = get_backend().compile(text)
      >>> exe.out_specs
      [((3,), dtype('float32'))]
    """
    for check in compile_checks:
      check(self)
    code = mlir_text.encode() if isinstance(mlir_text, str) else bytes(mlir_text)
    mlir_text_bytes = code
    platform_limits.check_program(self.platform, code)
    transfers = None  # host callbacks as send/recv host transfers (host_transfer.py)
    if b"is_host_transfer = true" in code:
      from revax._src.runtime import host_transfer
      code, transfers = host_transfer.prepare_program(code, self)
    single_device = num_replicas * num_partitions == 1
    if (single_device and self.platform == "cpu"  # dots as BLAS GEMMs where faster (gemm.py)
        and gemm.enabled_for_plugin(self._api.version)):
      code = im2col.rewrite_program(code, _gemm_targets("conv"))  # convolutions (im2col.py)
      code = gemm.rewrite_program(code, _gemm_targets())
      code = nt_dots.rewrite_program(code)  # x @ w.T as (w @ x.T).T where faster (nt_dots.py)
    # PJRT's C API refuses send/recv callbacks with `execute_device`: a program with host
    # transfers is compiled for one device (the default one), not as a portable program.
    # A one-device backend's programs are compiled for its device, as jax does: libtpu launches
    # a portable executable at 206 us against 90 us for a pinned one (tests/tpu/results,
    # dispatch_2026-12-06b.log). Portable executables (the device chosen per call) are for
    # backends of several devices; REVAX_PORTABLE_EXECUTABLES=1 asks for them everywhere.
    portable = single_device and transfers is None and (
        len(self.devices) > 1 or os.environ.get("REVAX_PORTABLE_EXECUTABLES", "0") == "1")
    if use_spmd_partitioning is None:
      use_spmd_partitioning = num_partitions > 1
    if use_shardy_partitioner is None:
      use_shardy_partitioner = num_partitions > 1 and b"sdy." in code
    options = pjrt.compile_options(num_replicas, num_partitions,
                                   use_spmd_partitioning=use_spmd_partitioning,
                                   use_shardy_partitioner=use_shardy_partitioner,
                                   portable=portable, option_overrides=option_overrides)
    kinds = memories.output_memory_kinds(code) if single_device else None
    if self._is_cpu and b"annotate_device_placement" in code:  # (memories.py)
      code = memories.strip_placement_annotations(code)
    executable = self._compile_or_load(code, options, portable, transfers)
    # what it was built from, for its optimized HLO (hlo_dump.optimized_hlo): the caller's
    # text itself where nothing rewrote it
    executable._source = (mlir_text if code == mlir_text_bytes else code, options)
    # programs that call Python wait for it (host callbacks' effects and errors happen in the call)
    executable.waits = _calls_python(code) or transfers is not None
    if kinds is not None:
      executable.place_outputs_in(kinds)
    return executable

  def _compile_or_load(self, code: bytes, options: bytes, portable: bool,
                       transfers) -> Executable:
    """The executable of `code`: from the persistent cache where it has it, else compiled
    (and stored when it took long enough); `transfers`: its host-transfer callbacks, if any."""
    cache = compilation_cache.settings
    if not cache.enabled:
      return _with_transfers(self._compile(code, options, portable), transfers)
    key = compilation_cache.cache_key(code, options, self)
    stored = compilation_cache.load(key)
    if stored is not None:
      try:
        return _with_transfers(self.deserialize_executable(stored), transfers)
      except (RuntimeBackendError, ValueError) as e:
        compilation_cache.discard(key)
        compilation_cache._warn_once("load", f"a stored executable did not load ({e}); "
                                     "compiling instead")
    start = time.perf_counter()
    executable = self._compile(code, options, portable)
    if time.perf_counter() - start >= cache.min_compile_time_secs:
      try:
        payload = executable.serialize()
      except RuntimeBackendError as e:
        compilation_cache._warn_once("serialize", f"the plugin cannot serialize ({e})")
      else:
        if len(payload) >= cache.min_entry_size:
          compilation_cache.store(key, payload)
    return _with_transfers(executable, transfers)

  def _compile(self, code: bytes, options: bytes, single_device: bool, *,
               program_format: bytes = b"mlir") -> Executable:
    """Compile `code` (StableHLO text, or with program_format=b"hlo" a serialized
    HloModuleProto) with serialized compile `options`, never through the persistent cache."""
    program = pjrt.Program(struct_size=pjrt.Program.STRUCT_SIZE,
                           code=C.cast(C.c_char_p(code), _ptr), code_size=len(code),
                           format=C.cast(C.c_char_p(program_format), _ptr),
                           format_size=len(program_format))
    args = self._api.args("Client_Compile", client=self._client, program=C.addressof(program),
                          compile_options=C.cast(C.c_char_p(options), _ptr),
                          compile_options_size=len(options))
    error = self._api.functions["Client_Compile"](C.addressof(args))
    if error:
      raise self._api.take_error(error, CompileError)
    return Executable(self, args.executable, portable=single_device)

  def deserialize_executable(self, data: bytes) -> Executable:
    """Load an executable that `Executable.serialize()` wrote (this plugin, this machine).

    Args:
      data: the bytes `serialize()` returned.

    Returns:
      An `Executable` that runs like the one that was serialized.

    Raises:
      ValueError: `data` is not a serialized revax executable, or of another format version.
      RuntimeBackendError: the plugin refused the bytes (corrupt, or another plugin's).

    Example:
      >>> from revax._src.runtime.client import get_backend
      >>> backend = get_backend()
      >>> exe = backend.compile(revax.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text())
      >>> exe2 = backend.deserialize_executable(exe.serialize())
      >>> exe2.out_specs
      [((3,), dtype('float32'))]
    """
    data = bytes(data)
    if len(data) < _SERIALIZED.size:
      raise ValueError(f"not a serialized revax executable ({len(data)} bytes)")
    magic, fmt, flags = _SERIALIZED.unpack_from(data)
    if magic != _SERIALIZED_MAGIC:
      raise ValueError("not a serialized revax executable (bad magic)")
    if fmt != _SERIALIZED_VERSION:
      raise ValueError(f"serialized executable format {fmt}; this revax reads "
                       f"{_SERIALIZED_VERSION}")
    payload = data[_SERIALIZED.size:]
    args = self._api.call("Executable_DeserializeAndLoad", client=self._client,
                          serialized_executable=C.cast(C.c_char_p(payload), _ptr),
                          serialized_executable_size=len(payload))
    executable = Executable(self, args.loaded_executable, portable=bool(flags & 1))
    executable.waits = bool(flags & 2)
    # The plugin's Executable_Serialize of a deserialized executable drops its machine code
    # (loading those bytes fails with "Function ... not found"): keep the bytes it came from.
    executable._serialized = data
    return executable

  # --- small calls used by Buffer ----------------------------------------------------------
  def _destroy_event(self, scratch: _HostScratch, event: int | None) -> None:
    if event:
      scratch.event.event = event
      error = self._fn_event_destroy(scratch.event_address)
      if error:
        raise self._api.take_error(error)

  def _await_event(self, scratch: _HostScratch, event: int | None) -> None:
    """Wait for `event`, destroy it, raise its error."""
    if not event:
      return
    scratch.event.event = event
    error = self._fn_event_await(scratch.event_address)
    self._destroy_event(scratch, event)
    if error:
      raise self._api.take_error(error)

  def _await_buffer(self, pointer: int) -> None:
    """Wait until the buffer is computed; raise the error of the computation that made it (or
    of one before it that it depends on), with its host callback's exception as the cause."""
    scratch = self._take_scratch()
    try:
      scratch.ready.buffer = pointer
      error = self._fn_ready_event(scratch.ready_address)
      if error:
        raise self._api.take_error(error)
      self._await_event(scratch, scratch.ready.event)
    except RuntimeBackendError as e:
      raise _with_callback_cause(e)
    finally:
      self._scratch.append(scratch)

  def wait_buffers(self, buffers: Sequence["Buffer"]) -> None:
    """Wait until every one of `buffers` (live Buffers of this backend) is computed and mark it
    so; raise the error of the first whose computation failed."""
    waiter = self._waiter
    if waiter is None:
      for buffer in buffers:
        if not buffer._info.ready:
          buffer._wait(buffer._live_pointer())
      return
    failure = waiter.wait(buffers)
    if failure is not None:
      raise _with_callback_cause(self._api.take_error(failure[1]))

  def _buffer_is_ready(self, pointer: int) -> bool:
    """Whether the buffer's value is computed (PJRT_Event_IsReady of its ready event)."""
    api = self._api
    ready = api.args("Buffer_ReadyEvent", buffer=pointer)
    error = self._fn_ready_event(C.addressof(ready))
    if error:
      raise api.take_error(error)
    query = api.args("Event_IsReady", event=ready.event)
    error = api.functions["Event_IsReady"](C.addressof(query))
    api.destroy_event(ready.event)
    if error:
      raise api.take_error(error)
    return bool(query.is_ready)

  def _copy_to_host(self, pointer: int, out: np.ndarray) -> None:
    """Fill the dense array `out` with the (ready) buffer's contents."""
    nbytes = out.nbytes
    if not nbytes:
      return
    if out.dtype in subbyte.BITS and self._is_cpu:
      # XLA:CPU holds int4 and friends packed in its memory (PJRT's transfers take and give
      # them one element per byte, as NumPy does): the memory copy below reads packed bytes
      packed = np.empty(subbyte.packed_nbytes(out.shape, out.dtype), np.uint8)
      self._copy_bytes_to_host(pointer, packed, out.ndim)
      subbyte.unpack(packed, out)
      return
    self._copy_bytes_to_host(pointer, out, out.ndim)

  def _copy_bytes_to_host(self, pointer: int, out: np.ndarray, ndim: int) -> None:
    """Fill the dense array `out` with the buffer's bytes (`ndim`: the buffer's rank)."""
    nbytes = out.nbytes
    destination = _numpy_header(out).data if self._fast_numpy else out.ctypes.data
    scratch = self._take_scratch()
    try:
      if self._is_cpu:
        # CPU only: device memory is host memory with a dense row-major layout, so a memmove
        # replaces ToHostBuffer (which costs 45-110 us here in thread-pool wake-ups).
        scratch.pointer.buffer = pointer
        error = self._fn_unsafe_pointer(scratch.pointer_address)
        if error:
          raise self._api.take_error(error)
        _memmove(destination, scratch.pointer.buffer_pointer, nbytes)
      else:
        # The device may keep the array in any layout (a TPU tiles it and picks the dimension
        # order per program: a transpose's result is often its input's bytes): ask for C order.
        args = scratch.to_host
        args.src, args.dst, args.dst_size = pointer, destination, nbytes
        args.host_layout = _host_layout(ndim)
        error = self._fn_to_host(scratch.to_host_address)
        if error:
          raise self._api.take_error(error)
        self._await_event(scratch, args.event)
    finally:
      self._scratch.append(scratch)

  def _destroy_buffer(self, pointer: int | None) -> None:
    if not pointer:  # an output slot XLA left empty (a failed execution): nothing to free
      return
    free = self._free
    error = free(pointer) if free is not None else self._fn_buffer_destroy(
        _pack_destroy_args(_DESTROY_ARGS_SIZE, 0, pointer))
    if error:
      raise self._api.take_error(error)


_host_layouts: dict[int, pjrt.HostLayout] = {}


def _host_layout(ndim: int) -> int:
  """The address of a row-major PJRT_Buffer_MemoryLayout for `ndim` dimensions (kept forever:
  one per rank; the plugin only reads it)."""
  layout = _host_layouts.get(ndim)
  if layout is None:
    layout = _host_layouts.setdefault(ndim, pjrt.HostLayout(ndim))
  return layout.address


def _with_transfers(executable: "Executable", transfers) -> "Executable":
  """`executable`, made to pass its program's host-transfer callbacks when it runs."""
  if transfers is not None:
    transfers.attach(executable)
  return executable


def _gemm_targets(op: str = "gemm") -> dict:
  """{dtype name: the custom call target of revax's CPU GEMM handler (`op` "gemm", gemm.py) or
  patch-GEMM convolution handler ("conv", im2col.py)} for the dtypes it serves in this process
  (lapack.py registered them when the CPU backend started)."""
  from revax._src.runtime import lapack
  return {dt: lapack.target(op, dt) for dt in ("float32", "float64", "complex64",
                                                    "complex128")}


def _calls_python(code: bytes) -> bool:
  """Whether a StableHLO module calls a Python host callback (runtime/ffi.py's target): calls of
  such programs wait for them, so their effects and errors happen before the call returns."""
  from revax._src.runtime import ffi
  return b'call_target_name = "%s"' % ffi.PYTHON_CALLBACK_TARGET.encode() in code


def _convert_unsupported(x: np.ndarray) -> tuple[np.ndarray, int]:
  """Byte-swapped arrays become native-order ones; other dtypes raise TypeError."""
  native = x.dtype.newbyteorder("=")
  if native != x.dtype and native in pjrt.NUMPY_TO_PJRT:
    return x.astype(native), pjrt.NUMPY_TO_PJRT[native]
  return x, pjrt.buffer_type(x.dtype)  # raises TypeError


def _pointer_list(pointer: int | None, count: int) -> list[int]:
  return list((_ptr * count).from_address(pointer)) if count else []


def _int64_list(pointer: int | None, count: int) -> list[int]:
  return list((C.c_int64 * count).from_address(pointer)) if count else []


# ----------------------------------------------------------------------------- devices

class Device:
  """One addressable device of the backend.

  Attributes:
    id: the device id (0, 1, ... on CPU).
    platform: e.g. ``"cpu"``.
    device_kind: the plugin's device kind string, e.g. ``"cpu"``.
    process_index, host_id, task_id: 0 (revax runs one process, as a single-process JAX).
    client: the Backend the device belongs to.
  """
  __slots__ = ("id", "platform", "device_kind", "_ptr", "client")
  process_index = host_id = task_id = 0

  def __init__(self, device_id: int, platform: str, device_kind: str, pointer: int,
               client: "Backend | None" = None):
    self.id = device_id
    self.platform = platform
    self.device_kind = device_kind
    self._ptr = pointer
    self.client = client

  def __repr__(self) -> str:
    return f"{self.platform.capitalize()}Device(id={self.id})"

  def __str__(self) -> str:
    # (jax prints a CPU device as "cpu:0"; other platforms' texts are the plugin's own)
    return f"cpu:{self.id}" if self.platform == "cpu" else repr(self)

  def __eq__(self, other) -> bool:
    return isinstance(other, Device) and other.id == self.id and other.platform == self.platform

  def __hash__(self) -> int:
    return hash((Device, self.platform, self.id))

  @property
  def local_hardware_id(self) -> int | None:
    """The plugin's hardware id of the device (its index among this host's devices on CPU)."""
    value = self.client._api.call("Device_LocalHardwareId", device=self._ptr).local_hardware_id
    return None if value < 0 else value

  def addressable_memories(self) -> list["Memory"]:
    """The memory spaces the device addresses (on CPU: device, pinned_host, unpinned_host)."""
    backend = self.client
    out = backend._api.call("Device_AddressableMemories", device=self._ptr)
    return [backend._memory(p) for p in _pointer_list(out.memories, out.num_memories)]

  def default_memory(self) -> "Memory":
    """The memory space arrays on this device live in unless another is asked for."""
    backend = self.client
    return backend._memory(backend._api.call("Device_DefaultMemory", device=self._ptr).memory)

  def memory(self, kind: str) -> "Memory":
    """The memory space of `kind` the device addresses; JaxRuntimeError if it has none."""
    memories = self.addressable_memories()
    for m in memories:
      if m.kind == kind:
        return m
    kinds = ", ".join(m.kind for m in memories)
    raise JaxRuntimeError(
        f"INVALID_ARGUMENT: Could not find memory addressable by device {self.device_kind}. "
        f"Device {self.device_kind} can address the following memory kinds: {kinds}. Got "
        f"memory kind: {kind}")

  def memory_stats(self) -> dict | None:
    """Allocator statistics of the device, as JAX's: a dict with `bytes_in_use` and those of
    `peak_bytes_in_use`, `bytes_limit`, `num_allocs`, `largest_alloc_size`, `bytes_reserved`,
    ... that the plugin reports (PJRT_Device_MemoryStats); None where the plugin keeps none, as
    JAX on CPU (`Compiled.memory_analysis()` gives a program's figures there).

    The peak is the allocator's since the process started: read it before and after a step
    (`peak_bytes_in_use` only grows) or compare `bytes_in_use` around it. On a TPU (libtpu
    0.0.42.1, measured 2026-12-06) the figures count buffers (arguments, outputs, live Arrays)
    but not a running program's temporaries: a step's own peak is at least its
    `Compiled.memory_analysis()` total (temp + arguments + outputs), which
    examples/device_memory.py takes where it is the larger.
    """
    api = self.client._api
    if "Device_MemoryStats" not in api.functions:
      return None
    try:
      stats = api.call("Device_MemoryStats", device=self._ptr)
    except RuntimeBackendError as e:
      if e.code == "UNIMPLEMENTED":
        return None
      raise
    out = {"bytes_in_use": stats.bytes_in_use}
    for name in pjrt.DEVICE_MEMORY_STATS[1:]:
      if getattr(stats, name + "_is_set"):
        out[name] = getattr(stats, name)
    return out


class Memory:
  """One memory space of the plugin (JAX's `Memory`): `kind` is "device", "pinned_host" or
  "unpinned_host" on CPU; `repr()` is the plugin's short name (CPU_DEVICE_0) and `str()` its
  description, as JAX's."""
  __slots__ = ("id", "kind", "platform", "_ptr", "_backend", "_str", "_repr")
  process_index = 0

  def __init__(self, backend: "Backend", pointer: int):
    api = backend._api
    self._backend, self._ptr, self.platform = backend, pointer, backend.platform
    self.id = api.call("Memory_Id", memory=pointer).id
    out = api.call("Memory_Kind", memory=pointer)
    self.kind = api.string(out.kind, out.kind_size)
    out = api.call("Memory_ToString", memory=pointer)
    self._repr = api.string(out.to_string, out.to_string_size)
    out = api.call("Memory_DebugString", memory=pointer)
    self._str = api.string(out.debug_string, out.debug_string_size)

  def addressable_by_devices(self) -> list[Device]:
    out = self._backend._api.call("Memory_AddressableByDevices", memory=self._ptr)
    by_pointer = self._backend._device_by_pointer
    return [by_pointer[p] for p in _pointer_list(out.devices, out.num_devices)
            if p in by_pointer]

  def __str__(self) -> str:
    return self._str

  def __repr__(self) -> str:
    return self._repr

  def __eq__(self, other) -> bool:
    return isinstance(other, Memory) and (other.platform, other.id) == (self.platform, self.id)

  def __hash__(self) -> int:
    return hash((Memory, self.platform, self.id))


# ----------------------------------------------------------------------------- buffers

class _BufferInfo:
  """What buffers alike share: their backend, shape, dtype, device, and whether their value is
  known to be computed. The outputs of one executable on one device share two per output, so
  making an output Buffer stores two fields: a ready one (the program had finished when execute
  returned) and a pending one whose `settled` is that ready one, which a Buffer takes in its
  place once it has been awaited. A buffer made otherwise has its own info (`settled` None),
  whose `ready` turns True once it has been awaited."""
  __slots__ = ("backend", "shape", "dtype", "device", "ready", "settled")

  def __init__(self, backend: Backend, shape: tuple, dtype: np.dtype, device: Device,
               ready: bool = False, settled: "_BufferInfo | None" = None):
    self.backend, self.shape, self.dtype, self.device = backend, shape, dtype, device
    self.ready = ready
    self.settled = settled


class Buffer:
  """An array in device memory; owns its PJRT_Buffer and frees it exactly once.

  Attributes:
    shape: a tuple of ints.
    dtype: a NumPy dtype.
    device: the `Device` that holds it.
  """
  __slots__ = ("_info", "_ptr", "__weakref__")

  def __init__(self, backend: Backend, pointer: int, shape: tuple, dtype: np.dtype,
               device: Device, ready: bool = False):
    # ready: known to be computed (no need to wait on its ready event)
    self._info = _BufferInfo(backend, shape, dtype, device, ready)
    self._ptr = pointer

  _backend = property(lambda self: self._info.backend)
  shape = property(lambda self: self._info.shape)
  dtype = property(lambda self: self._info.dtype)
  device = property(lambda self: self._info.device)

  @property
  def nbytes(self) -> int:
    return math.prod(self.shape) * self.dtype.itemsize

  def __repr__(self) -> str:
    state = ", deleted" if self._ptr is None else ""
    return f"Buffer(shape={self.shape}, dtype={self.dtype.name}, device={self.device}{state})"

  def _live_pointer(self) -> int:
    pointer = self._ptr
    if pointer is None:
      raise RuntimeError("this buffer has been deleted")
    return pointer

  def _wait(self, pointer: int) -> None:
    """Wait until the value (at `pointer`, live) is computed; raise the computation's error."""
    info = self._info
    backend = info.backend
    if backend._waiter is not None:
      backend.wait_buffers((self,))
      return
    backend._await_buffer(pointer)
    settled = info.settled
    if settled is None:
      info.ready = True
    else:
      self._info = settled

  def block_until_ready(self) -> Buffer:
    """Wait until the buffer's value is computed; raise the computation's error if any."""
    pointer = self._live_pointer()
    if not self._info.ready:
      self._wait(pointer)
    return self

  def is_ready(self) -> bool:
    """Whether the value is computed (without waiting); True for a computation that failed."""
    pointer = self._live_pointer()
    info = self._info
    return info.ready or info.backend._buffer_is_ready(pointer)

  def to_numpy(self) -> np.ndarray:
    """A new (writable, C-ordered) NumPy array with the buffer's contents (waiting until they
    are computed; raising the computation's error)."""
    pointer = self._live_pointer()
    if not self._info.ready:
      self._wait(pointer)
    info = self._info
    out = np.empty(info.shape, info.dtype)
    info.backend._copy_to_host(pointer, out)
    return out

  def is_deleted(self) -> bool:
    return self._ptr is None

  @property
  def memory(self) -> "Memory":
    """The memory the plugin says the buffer is stored in (PJRT_Buffer_Memory)."""
    backend = self._info.backend
    return backend._memory(backend._api.call("Buffer_Memory",
                                             buffer=self._live_pointer()).memory)

  def copy_to_memory(self, memory: "Memory") -> Buffer:
    """A copy of the buffer in `memory`, one of its device's memories (PJRT_Buffer_CopyToMemory).

    Raises:
      RuntimeBackendError: the plugin cannot copy there.
    """
    info = self._info
    backend = info.backend
    out = backend._api.call("Buffer_CopyToMemory", buffer=self._live_pointer(),
                            dst_memory=memory._ptr)
    return Buffer(backend, out.dst_buffer, info.shape, info.dtype, info.device)

  def delete(self) -> None:
    """Free the device memory now; later uses of the buffer raise. Idempotent."""
    with _delete_lock:  # two threads deleting at once must not both free
      pointer, self._ptr = self._ptr, None
    if pointer is not None:
      self._info.backend._destroy_buffer(pointer)

  def __del__(self, _is_finalizing=sys.is_finalizing, _pack=_pack_destroy_args,
              _size=_DESTROY_ARGS_SIZE):
    # No lock: nothing else can reach an object being finalized. At interpreter shutdown the
    # process is about to release everything anyway; calling into the plugin then is not worth it.
    # (Globals are bound as defaults: module globals may already be gone at shutdown.)
    # This runs once per output of every call, so the free is inlined: one pack, one call.
    pointer = self._ptr
    if pointer is not None and not _is_finalizing():
      backend = self._info.backend
      free = backend._free
      error = free(pointer) if free is not None else backend._fn_buffer_destroy(
          _pack(_size, 0, pointer))
      if error:
        try:
          backend._api.take_error(error)  # a finalizer must not raise: the error is dropped
        except Exception:  # noqa: BLE001
          pass


def _new_buffers(pointers, infos) -> list[Buffer]:
  """Ready Buffers owning `pointers`, one per `_BufferInfo` (executable outputs)."""
  out = []
  append = out.append
  for pointer, info in zip(pointers, infos):
    buffer = _new(Buffer)
    buffer._info = info
    buffer._ptr = pointer
    append(buffer)
  return out


_delete_lock = threading.Lock()


# Every multi-device launch gets its own id: XLA:CPU names a launch's collective rendezvous by
# it, so two launches in flight at once that share one (PJRT's default, 0) would meet in one
# rendezvous and hang (measured: a chain of two all-gather programs, dispatched without waiting,
# aborts the process after XLA's 40 s rendezvous timeout). Ids stay positive int32s.
_launch_ids = itertools.count(1)


def _next_launch_id() -> int:
  return next(_launch_ids) % 0x7FFFFFFF + 1


class _InFlight:
  """The multi-device launch still running after `execute_sharded(..., wait=False)` returned.

  XLA:CPU in this plugin does not order one device's collective programs against another's: two
  multi-device launches running at once, the second queued while the first still computes its
  inputs, can each hold some devices in a collective the other devices never reach (measured:
  a chain of eager reshape + jitted all-gather, dispatched without waiting, aborts the process
  after XLA's 40 s rendezvous timeout). So at most one launch is left running: every
  multi-device launch first waits for the one before it (`settle`). That still lets the caller's
  Python (wrapping the results, the next step's arguments) overlap the devices' work.

  A launch that settles without error has computed every output: their Buffers' shared infos
  (`infos`) are marked ready then, so waiting for a result of it (`block_until_ready`) is one
  settle instead of one ready-event wait per device.
  """

  def __init__(self):
    self.lock = threading.Lock()
    self.executable: Executable | None = None  # kept alive until its launch is done
    self.events: list = []
    self.infos: list = []  # the _BufferInfos of its outputs

  def launched(self, executable: "Executable", events: list, infos: list) -> None:
    """Record the launch just queued (call with `lock` held, after `settle`)."""
    self.executable, self.events, self.infos = executable, events, infos

  def settle(self) -> None:
    """Wait for the launch in flight (call with `lock` held). Its errors are dropped here: its
    outputs carry them, and raise them where they are awaited. (Programs that can fail while
    running, those calling host or FFI functions, are run with `wait`: see spmd_program.py.)"""
    executable, events, infos = self.executable, self.events, self.infos
    if executable is None:
      return
    self.executable, self.events, self.infos = None, [], []
    api = executable._api
    runner = executable._sharded_runner
    if runner is not None:
      errors = runner.settle(events)
    else:
      errors = []
      for event in events:
        args = api.args("Event_Await", event=event)
        error = api.functions["Event_Await"](C.addressof(args))
        if error:
          errors.append(error)
        api.destroy_event(event)
    for error in errors:
      api.take_error(error)  # frees it
    if not errors:
      for info in infos:
        info.ready = True


_in_flight = _InFlight()


class _Window:
  """One device's completion events in flight, at most `limit`: the ctypes twin of
  `_fastpath.Window` (used where the extension is not built or REVAX_FASTPATH=0), with the same
  methods and the same behaviour (see the module docstring)."""

  def __init__(self, api: pjrt.Api, limit: int):
    self._api = api
    self.limit = limit
    self.launched = 0
    self.track = True  # False: launches ask for no completion event (the plugin bounds them)
    self._events = collections.deque()

  def __len__(self) -> int:
    return len(self._events)

  def make_room(self) -> None:
    """Await the oldest events until fewer than `limit` are in flight."""
    events = self._events
    while len(events) >= self.limit:
      try:
        event = events.popleft()
      except IndexError:  # another thread took the last one
        return
      self._settle(event)

  def push(self, event: int) -> None:
    self._events.append(event)
    self.launched += 1

  def drain(self) -> None:
    """Await every event in flight."""
    events = self._events
    while events:
      try:
        event = events.popleft()
      except IndexError:
        return
      self._settle(event)

  def is_ready(self, event: int) -> bool:
    api = self._api
    query = api.args("Event_IsReady", event=event)
    error = api.functions["Event_IsReady"](C.addressof(query))
    if error:
      api.take_error(error)  # freed; the event is then awaited, which reports what it says
      return True
    return bool(query.is_ready)

  def _settle(self, event: int) -> None:
    """Await and destroy `event`, dropping its errors: the outputs carry them."""
    api = self._api
    args = api.args("Event_Await", event=event)
    error = api.functions["Event_Await"](C.addressof(args))
    if error:
      api.take_error(error)
    error = api.functions["Event_Destroy"](C.addressof(args))
    if error:
      api.take_error(error)


def _new_window(api: pjrt.Api, limit: int):
  """A device's window: the compiled one where the extension is built, else `_Window`."""
  window = fastpath.window(api, limit)
  return _Window(api, limit) if window is None else window


def _update_window_limits(name: str) -> None:
  if name == "revax_max_inflight_computations":
    limit = config.read(name)
    for backend in list(_backends.values()):
      for window in backend._windows.values():
        window.limit = limit


config.on_change(_update_window_limits)


def settle_all() -> None:
  """Wait until every computation queued so far, on every backend, has finished (nothing to do
  before a backend exists)."""
  for backend in list(_backends.values()):
    backend.settle()


def settle_in_flight() -> None:
  """Wait for the multi-device launch in flight, if any (its outputs are then ready, or carry
  its error for their own wait to raise)."""
  with _in_flight.lock:
    _in_flight.settle()


def call_planned(executable: "Executable", runner, leaves):
  """A sharded plan's call (`Runner.call_sharded`): the new output ShardedArrays, launched
  without waiting after the launch before it settles; None where the plan does not cover
  `leaves` (nothing ran)."""
  in_flight = _in_flight
  with in_flight.lock:
    in_flight.settle()
    out = runner.call_sharded(leaves, _next_launch_id())
    if out is None:
      return None
    if len(out) == 3:
      outs, events, infos = out
      in_flight.launched(executable, events, infos)
      return outs
  executable.raise_failure(out)


# ----------------------------------------------------------------------------- executables

@dataclasses.dataclass(frozen=True)
class MemoryStats:
  """What XLA reports for a compiled program (`PJRT_Executable_GetCompiledMemoryStats`)."""
  generated_code_size_in_bytes: int
  argument_size_in_bytes: int
  output_size_in_bytes: int
  alias_size_in_bytes: int
  temp_size_in_bytes: int
  host_generated_code_size_in_bytes: int
  host_argument_size_in_bytes: int
  host_output_size_in_bytes: int
  host_alias_size_in_bytes: int
  host_temp_size_in_bytes: int
  peak_memory_in_bytes: int


class _ExecuteScratch:
  """The Args of one LoadedExecutable_Execute call, with its argument/output/event arrays."""
  __slots__ = ("args", "address", "inputs", "capacity", "argument_list", "outputs", "events",
               "output_list", "event", "event_address")

  def __init__(self, api: pjrt.Api, executable: int, options: pjrt.ExecuteOptions,
               num_outputs: int, capacity: int):
    self.outputs = (_ptr * max(num_outputs, 1))()
    self.output_list = (_ptr * 1)(C.addressof(self.outputs))
    self.events = (_ptr * 1)()
    self.argument_list = (_ptr * 1)()
    self.args = api.args("LoadedExecutable_Execute", executable=executable,
                         options=C.addressof(options),
                         argument_lists=C.addressof(self.argument_list), num_devices=1,
                         output_lists=C.addressof(self.output_list),
                         device_complete_events=C.addressof(self.events))
    self.address = C.addressof(self.args)
    self.event = api.args("Event_Await")  # also the Args of Event_Destroy (same layout)
    self.event_address = C.addressof(self.event)
    self.reserve(capacity)

  def reserve(self, capacity: int) -> None:
    self.capacity = max(capacity, 1)
    self.inputs = (_ptr * self.capacity)()
    self.argument_list[0] = C.addressof(self.inputs)


class Executable:
  """A compiled program loaded on the backend's client.

  Attributes:
    num_outputs: how many arrays one execution returns (per device).
    out_specs: `(shape, dtype)` of each output (per device for multi-device programs).
    num_replicas, num_partitions: the program's replica and partition counts.
    devices: where it can run (every device for a single-device program).
  """

  def __init__(self, backend: Backend, pointer: int, *, portable: bool):
    self._ptr = pointer  # first, so that __del__ frees it if the rest fails
    self._backend = backend
    self._api = api = backend._api
    self._portable = portable
    self._memory_stats: MemoryStats | None = None
    self._serialized: bytes | None = None  # set when loaded from serialized bytes
    self._source = None  # (code, compile options) it was compiled from, where known
    self._optimized_hlo = None  # (text, proto), made by hlo_dump.optimized_hlo when asked
    self._read_signature()
    if portable:
      self.devices = list(backend.devices)
    else:
      listed = api.call("LoadedExecutable_AddressableDevices", executable=pointer)
      self.devices = [backend._device_by_pointer[p] for p in
                      _pointer_list(listed.addressable_devices, listed.num_addressable_devices)]
    self._options = pjrt.ExecuteOptions(struct_size=pjrt.ExecuteOptions.STRUCT_SIZE)
    self._host_transfers = None  # set by host_transfer.ProgramTransfers.attach
    self._scratch: list[_ExecuteScratch] = []
    self._out_specs_indexed = tuple(enumerate(self.out_specs))
    self._infos_by_device: dict[int, tuple] = {}
    self._pending_by_device: dict[int, tuple] = {}
    # whether a call waits for the program to finish (it calls back into Python: set by
    # Backend.compile from the program's text)
    self.waits = False
    self._fn_execute = api.functions["LoadedExecutable_Execute"]
    self._fn_event_await = api.functions["Event_Await"]
    self._fn_event_destroy = api.functions["Event_Destroy"]
    # the compiled execute-and-await (fastpath.py), or None: then `_run` goes through ctypes
    self._runner = fastpath.runner(api, pointer, self._options, self.num_outputs, portable)
    self._sharded_runner = None if portable or len(self.devices) < 2 else fastpath.runner(
        api, pointer, self._options, self.num_outputs, False, len(self.devices))

  def _read_signature(self) -> None:
    """Outputs and sizes, read once from the PJRT_Executable behind the loaded one."""
    with _UnloadedExecutable(self._api, self._ptr) as executable:
      api = self._api
      self.num_outputs = api.call("Executable_NumOutputs", executable=executable).num_outputs
      self.num_replicas = api.call("Executable_NumReplicas",
                                   executable=executable).num_replicas
      self.num_partitions = api.call("Executable_NumPartitions",
                                     executable=executable).num_partitions
      types = api.call("Executable_OutputElementTypes", executable=executable)
      dims = api.call("Executable_OutputDimensions", executable=executable)
      type_codes = list((C.c_int * types.num_output_types).from_address(types.output_types)
                        ) if types.num_output_types else []
      ranks = list((C.c_size_t * dims.num_outputs).from_address(dims.dim_sizes)
                   ) if dims.num_outputs else []
      flat = _int64_list(dims.dims, sum(ranks))
    specs, start = [], 0
    for rank, type_code in zip(ranks, type_codes, strict=True):
      specs.append((tuple(flat[start:start + rank]), pjrt.numpy_dtype(type_code)))
      start += rank
    self.out_specs: list[tuple[tuple[int, ...], np.dtype]] = specs

  def __repr__(self) -> str:
    return f"Executable(num_outputs={self.num_outputs}, out_specs={self.out_specs})"

  def execute(self, args: Sequence[Buffer]) -> list[Buffer]:
    """Run the program on one device; return once it is queued.

    Args:
      args: one buffer per parameter, all on one device: the program runs there (on
        `devices[0]` when there are no arguments). Shapes and dtypes are not checked beyond
        byte sizes: validate them before calling.

    Returns:
      The output buffers, on the same device: futures, whose `to_numpy()` and
      `block_until_ready()` wait for the program (and raise its error).

    Raises:
      RuntimeBackendError: the plugin refused the arguments, or the execution failed before
        this returned (a program that finished at once, or one that `waits`).

    Example:
      >>> from revax._src.runtime.client import get_backend
      >>> backend = get_backend()
      >>> exe = backend.compile(revax.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text())
      >>> (y,) = exe.execute([backend.buffer_from_numpy(np.arange(3, dtype=np.float32))])
      >>> y.to_numpy()
      array([0., 2., 4.], dtype=float32)
    """
    try:
      pointers = list(map(_pointer_of, args))
    except AttributeError:
      raise TypeError("execute() takes a sequence of Buffers") from None
    if not all(pointers):  # None: freed (a live pointer is never 0)
      raise RuntimeError(f"argument {pointers.index(None)} of execute() is a deleted buffer")
    device = args[0]._info.device if pointers else self.devices[0]
    return _new_buffers(*self._run(pointers, device))

  def execute_arrays(self, pointers: list, device: Device, avals) -> list[Array]:
    """Run on already validated arguments and return the outputs as device-backed Arrays.

    jit's hot path: the caller checked the arguments (their avals fixed the signature this
    program was compiled for), so this only runs and wraps.

    Args:
      pointers: the PJRT_Buffer pointers of live buffers on `device`, one per parameter.
      device: where to run.
      avals: one aval per output, matching `out_specs`.

    Returns:
      One Array per output, each owning a new Buffer (computed, or still being computed).
    """
    outputs, infos = self._run(pointers, device)
    out = []
    append = out.append
    for pointer, info, aval in zip(outputs, infos, avals):
      buffer = _new(Buffer)
      buffer._info = info
      buffer._ptr = pointer
      array = _new_array(Array)
      array.aval = aval
      array._npy = None
      array._buf = buffer
      append(array)
    return out

  def new_runner(self):
    """A new compiled runner of this executable (see fastpath.py), or None without one."""
    if self._runner is None:
      return None
    return fastpath.runner(self._api, self._ptr, self._options, self.num_outputs, self._portable)

  def output_infos(self, device: Device) -> tuple:
    """The `_BufferInfo` of each output on `device` (what a Buffer of that output holds once it
    is known to be computed)."""
    return self._infos_by_device.get(device._ptr) or self._output_infos(device)

  def pending_infos(self, device: Device) -> tuple:
    """The `_BufferInfo` of each output on `device` while it is still being computed (each
    settles to the one of `output_infos`)."""
    infos = self._pending_by_device.get(device._ptr)
    if infos is None:
      backend = self._backend
      infos = self._pending_by_device[device._ptr] = tuple(
          _BufferInfo(backend, i.shape, i.dtype, device, False, i)
          for i in self.output_infos(device))
    return infos

  def window(self, device: Device):
    """The window a launch on `device` queues in, or None where calls wait (`waits`)."""
    return None if self.waits else self._backend._windows.get(device._ptr)

  def set_plan(self, runner, avals: tuple, consts: tuple, out_avals: tuple,
               device: Device) -> None:
    """Attach jit's repeated call on `device` to `runner` (a `new_runner()`): see fastpath.py."""
    runner.set_plan(avals, consts, self.output_infos(device), self.pending_infos(device),
                    out_avals, device._ptr, self.window(device))

  def _output_infos(self, device: Device) -> tuple:
    """The `_BufferInfo` of each output on `device` (made once per device)."""
    infos = self._infos_by_device.get(device._ptr)
    if infos is None:
      backend = self._backend
      infos = self._infos_by_device[device._ptr] = tuple(
          _BufferInfo(backend, shape, dtype, device, True) for shape, dtype in self.out_specs)
    return infos

  def place_outputs_in(self, kinds: tuple) -> None:
    """Make each call leave output i in the memory of kind `kinds[i]` (None: where the plugin
    puts it), copying where the plugin puts it elsewhere (memories.py). Such calls go through
    ctypes (`_run_placing`), not the compiled runner."""
    self._out_kinds = kinds
    self._runner = None
    self._run = self._run_placing

  def _run_placing(self, pointers: list, device: Device) -> tuple:
    outputs, infos = Executable._run(self, pointers, device)
    outputs = list(outputs)
    if memories.place_outputs(outputs, self._out_kinds, device):
      infos = self.pending_infos(device)  # (a copy may still be in flight)
    return outputs, infos

  def _run(self, pointers: list, device: Device) -> tuple:
    """Execute on `pointers` (live buffers on `device`); return the output pointers and the
    `_BufferInfo`s their Buffers take: the ready ones where the program had finished when the
    launch returned (or was waited for: `waits`), else the pending ones, its completion event
    then joining the device's window (see the module docstring)."""
    if _callback_thread.on_xla_thread:
      raise _nested_execution_error()
    if config.no_execution:
      raise _no_execution_error()
    window = None if self.waits else self._backend._windows.get(device._ptr)
    runner = self._runner
    if runner is not None:
      outputs = runner.run(pointers if type(pointers) is list else list(pointers), device._ptr,
                           window)
      if type(outputs) is tuple:
        if len(outputs) == 1:
          return outputs[0], (self._pending_by_device.get(device._ptr)
                              or self.pending_infos(device))
        self.raise_failure(outputs)
      return outputs, self._infos_by_device.get(device._ptr) or self._output_infos(device)
    untracked = window is not None and not window.track
    if window is not None and not untracked:
      window.make_room()
    ident = _get_ident()
    waiting = ident not in _executing_threads
    if waiting:
      _executing_threads.add(ident)
    pool = self._scratch
    try:
      scratch = pool.pop()
    except IndexError:
      scratch = _ExecuteScratch(self._api, self._ptr, self._options, self.num_outputs,
                                len(pointers))
    try:
      count = len(pointers)
      if count > scratch.capacity:
        scratch.reserve(count)
      scratch.inputs[:count] = pointers
      call = scratch.args
      call.num_args = count
      if self._portable:
        call.execute_device = device._ptr
      call.device_complete_events = None if untracked else C.addressof(scratch.events)
      transfers = self._host_transfers
      if transfers is not None:  # fresh callback state for this execution
        launch = transfers.launch(self._options, 1)
        call.options = launch.address
      error = self._fn_execute(scratch.address)
      if error:
        raise _with_callback_cause(self._api.take_error(error))
      outputs = scratch.outputs
      if untracked:  # the plugin bounds its work in flight: nothing to wait for or keep
        window.launched += 1
        return outputs[:self.num_outputs], self.pending_infos(device)
      event = scratch.events[0]
      if window is not None and event and not window.is_ready(event):
        window.push(event)
        return outputs[:self.num_outputs], self.pending_infos(device)
      # finished already, or a program that waits (whose errors surface here)
      scratch.event.event = event
      error = self._fn_event_await(scratch.event_address)
      destroy_error = self._fn_event_destroy(scratch.event_address)
      if error and window is not None:
        # The error of a failed input (a program failing at once makes execute fail): its
        # outputs carry it, to raise where they are used, as in JAX.
        self._api.take_error(error)
        if destroy_error:
          self._api.take_error(destroy_error)
        return outputs[:self.num_outputs], self.pending_infos(device)
      if error or destroy_error:
        self._fail(outputs, error, destroy_error)
      return outputs[:self.num_outputs], self.output_infos(device)
    finally:
      pool.append(scratch)
      if waiting:
        _executing_threads.discard(ident)

  def raise_failure(self, failure: tuple):
    """Free the outputs of a failed compiled-path execution and raise its error.

    Args:
      failure: what `_fastpath.Runner` returns when a call fails: the PJRT_Error pointers of
        execute, await and the event's destroy (0 where that step succeeded or did not run),
        and the output pointers made (None where XLA made none).
    """
    execute_error, error, destroy_error, outputs = failure
    for pointer in outputs:
      if pointer:
        self._backend._destroy_buffer(pointer)
    if execute_error:
      raise _with_callback_cause(self._api.take_error(execute_error))
    if not (error or destroy_error):  # the outputs could not be wrapped: Python is out of memory
      raise MemoryError(f"out of memory making the {self.num_outputs} outputs of a program")
    if error and destroy_error:
      self._api.take_error(destroy_error)  # only freed: the execution's error is the one to show
    raise _with_callback_cause(self._api.take_error(error or destroy_error))

  def _fail(self, outputs: C.Array, error: int | None, destroy_error: int | None):
    """Free the outputs of a failed execution and raise its error."""
    for k in range(self.num_outputs):
      self._backend._destroy_buffer(outputs[k])
    if error and destroy_error:
      self._api.take_error(destroy_error)  # only freed: the execution's error is the one to show
    raise _with_callback_cause(self._api.take_error(error or destroy_error))

  def execute_sharded(self, args_per_device: Sequence[Sequence[Buffer]],
                      wait: bool = True) -> list[list[Buffer]]:
    """Run a multi-device program: one argument list per device of `devices`, in order.

    Args:
      args_per_device: one list of argument buffers per device.
      wait: whether to return only once every device has finished (raising the program's
        error). When false the call returns as soon as the work is queued (JAX's asynchronous
        dispatch): the outputs are computed when their `block_until_ready` or `to_numpy` returns,
        which is also where an error of the run is raised. The plugin keeps the arguments alive
        until the run is done, even if they are deleted meanwhile.

    Returns:
      One list of output buffers per device.
    """
    if config.no_execution:
      raise _no_execution_error()
    if self._portable:
      raise ValueError("execute_sharded() is for programs compiled with several replicas or "
                       "partitions; use execute()")
    if _callback_thread.on_xla_thread:
      raise _nested_execution_error()
    count = len(self.devices)
    if len(args_per_device) != count:
      raise ValueError(f"expected {count} argument lists (one per device), "
                       f"got {len(args_per_device)}")
    num_args = len(args_per_device[0]) if count else 0
    runner = self._sharded_runner
    if runner is not None:
      return self._execute_sharded_compiled(runner, args_per_device, num_args, wait)
    inputs = [(_ptr * max(num_args, 1))(*[a._live_pointer() for a in per_device])
              for per_device in args_per_device]
    outputs = [(_ptr * max(self.num_outputs, 1))() for _ in range(count)]
    argument_lists = (_ptr * count)(*[C.addressof(a) for a in inputs])
    output_lists = (_ptr * count)(*[C.addressof(o) for o in outputs])
    events = (_ptr * count)()
    options = pjrt.ExecuteOptions(struct_size=pjrt.ExecuteOptions.STRUCT_SIZE,
                                  launch_id=_next_launch_id())
    if self._host_transfers is not None:  # fresh callback state for this execution
      launch = self._host_transfers.launch(options, count)
      options = launch.options
    infos = None if wait else self._fresh_infos()
    with _in_flight.lock:
      _in_flight.settle()
      self._api.call("LoadedExecutable_Execute", executable=self._ptr,
                     options=C.addressof(options), argument_lists=C.addressof(argument_lists),
                     num_devices=count, num_args=num_args,
                     output_lists=C.addressof(output_lists),
                     device_complete_events=C.addressof(events))
      if not wait:
        _in_flight.launched(self, list(events), [i for per in infos for i in per])
    failure = None
    for event in events if wait else ():
      try:
        self._api.await_event(event)
      except RuntimeBackendError as e:
        failure = failure or e
    backend = self._backend
    if failure is not None:
      failure = _with_callback_cause(failure)
      for per_device in outputs:
        for k in range(self.num_outputs):
          backend._destroy_buffer(per_device[k])
      raise failure
    if not wait:
      return [_new_buffers(per_device[:self.num_outputs], per_infos)
              for per_device, per_infos in zip(outputs, infos, strict=True)]
    return [[Buffer(backend, per_device[k], shape, dtype, device, wait)
             for k, (shape, dtype) in self._out_specs_indexed]
            for per_device, device in zip(outputs, self.devices, strict=True)]

  def _fresh_infos(self) -> list:
    """Per device, one not-yet-ready _BufferInfo per output (a launch that does not wait: each
    output turns ready on its own, not as the shared ready infos of `_output_infos`)."""
    backend = self._backend
    return [[_BufferInfo(backend, shape, dtype, device) for shape, dtype in self.out_specs]
            for device in self.devices]

  def _execute_sharded_compiled(self, runner, args_per_device, num_args: int, wait: bool):
    """`execute_sharded` through the compiled runner (fastpath.py): the same steps and errors."""
    lists = []
    for per_device in args_per_device:
      if len(per_device) != num_args:
        raise ValueError(f"every device takes {num_args} arguments, got {len(per_device)}")
      lists.append([a._live_pointer() for a in per_device])
    in_flight = _in_flight
    infos = None if wait else self._fresh_infos()
    with in_flight.lock:  # orders launches; a run that waits does its waiting outside
      in_flight.settle()
      if not wait:
        outputs = runner.run_sharded(lists, False, _next_launch_id())
        if len(outputs) == 2:  # queued (else the failure tuple below)
          outputs, events = outputs
          in_flight.launched(self, events, [i for per in infos for i in per])
    if wait:
      outputs = runner.run_sharded(lists, True, _next_launch_id())
    backend = self._backend
    if type(outputs) is tuple:
      execute_error, await_errors, destroy_errors, outputs = outputs
      if execute_error:
        raise _with_callback_cause(self._api.take_error(execute_error))
      errors = [self._api.take_error(e) for e in await_errors + destroy_errors if e]
      for per_device in outputs:
        for pointer in per_device:
          backend._destroy_buffer(pointer)
      raise _with_callback_cause(errors[0])
    out = []
    if wait:
      for per_device, device in zip(outputs, self.devices, strict=True):
        infos = self._infos_by_device.get(device._ptr) or self._output_infos(device)
        out.append(_new_buffers(per_device, infos))
    else:
      for per_device, per_infos in zip(outputs, infos, strict=True):
        out.append(_new_buffers(per_device, per_infos))
    return out

  def cost_analysis(self) -> dict:
    """XLA's cost analysis of the compiled program ("flops", "bytes accessed", ... as floats),
    as JAX's `Compiled.cost_analysis()`."""
    with _UnloadedExecutable(self._api, self._ptr) as executable:
      out = self._api.call("Executable_GetCostAnalysis", executable=executable)
      return {name: float(v) for name, v in
              self._api.read_named_values(out.properties, out.num_properties).items()}

  def serialize(self) -> bytes:
    """The executable as bytes that `Backend.deserialize_executable` loads back.

    The bytes hold machine code for this plugin and this CPU: load them with the same plugin on
    the same kind of machine (the compilation cache's key makes sure of that).

    Example:
      >>> from revax._src.runtime.client import get_backend
      >>> backend = get_backend()
      >>> exe = backend.compile(revax.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text())
      >>> data = exe.serialize()
      >>> args = [backend.buffer_from_numpy(np.ones(3, np.float32))]
      >>> [y.to_numpy() for y in backend.deserialize_executable(data).execute(args)]
      [array([2., 2., 2.], dtype=float32)]
    """
    if self._serialized is not None:
      return self._serialized
    with _UnloadedExecutable(self._api, self._ptr) as executable:
      out = self._api.call("Executable_Serialize", executable=executable)
      try:
        payload = C.string_at(out.serialized_bytes, out.serialized_bytes_size)
      finally:
        if out.serialized_executable_deleter:
          _SERIALIZE_DELETER(out.serialized_executable_deleter)(out.serialized_executable)
    flags = int(self._portable) | int(self.waits) << 1
    return _SERIALIZED.pack(_SERIALIZED_MAGIC, _SERIALIZED_VERSION, flags) + payload

  def hlo_modules(self) -> list:
    """XLA's optimized HLO of the program (jaxlib's `LoadedExecutable.hlo_modules()`): one
    `hlo_dump.HloModule` (`name`, `to_string()`, `as_serialized_hlo_module_proto()`); XLA
    compiles the program once more to print it, on the first call (hlo_dump.optimized_hlo)."""
    return [hlo_dump.HloModule(*hlo_dump.optimized_hlo(self))]

  def get_hlo_text(self) -> str:
    """XLA's optimized HLO of the program as text (jaxlib's `LoadedExecutable.get_hlo_text()`,
    what JAX's `Compiled.as_text()` returns).

    Example:
      >>> from revax._src.runtime.client import get_backend
      >>> exe = get_backend().compile(revax.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text())
      >>> print(exe.get_hlo_text().split("\\n")[0])
      HloModule jit__lambda, is_scheduled=true, entry_computation_layout={(f32[3]{0})->f32[3]{0}}
    """
    return hlo_dump.optimized_hlo(self)[0]

  def memory_stats(self) -> MemoryStats:
    """XLA's memory figures for this program: argument, output, temp bytes and more."""
    if self._memory_stats is None:
      with _UnloadedExecutable(self._api, self._ptr) as executable:
        stats = self._api.call("Executable_GetCompiledMemoryStats", executable=executable)
      self._memory_stats = MemoryStats(
          **{name: int(getattr(stats, name)) for name in pjrt.MEMORY_STATS_FIELDS})
    return self._memory_stats

  def __del__(self, _is_finalizing=sys.is_finalizing):
    pointer = getattr(self, "_ptr", None)
    if pointer and not _is_finalizing():
      self._ptr = None
      try:
        self._api.call("LoadedExecutable_Destroy", executable=pointer)
      except Exception:  # noqa: BLE001 - a finalizer must not raise
        pass


# Host callbacks (runtime/ffi.py): XLA:CPU runs a program's callbacks on the thread that called
# execute when it runs the program inline, and on one of its own threads when it runs it
# asynchronously. In the second case the device is still busy with the calling program, so a
# program launched from the callback would wait for it forever. ffi.py marks such callback
# threads (`on_xla_thread`) by checking them against the threads waiting in execute.
_executing_threads: set[int] = set()
_get_ident = threading.get_ident


class _CallbackThread(threading.local):
  on_xla_thread = False


_callback_thread = _CallbackThread()

fastpath.configure(Array, Buffer, _executing_threads)  # the classes the compiled path makes
fastpath.configure_info(_BufferInfo)


def execution_refused() -> bool:
  """Whether this thread may not run a program now: it is a host callback's XLA thread (see
  above), where `_run` raises `_nested_execution_error`."""
  return _callback_thread.on_xla_thread


def _no_execution_error() -> RuntimeError:
  return RuntimeError("revax tried to execute a compiled program, but the no_execution config "
                      "option is set (revax.no_execution / jax_no_execution)")


def _nested_execution_error() -> RuntimeError:
  return RuntimeError(
      "a host callback tried to run a compiled revax program while the program that called it "
      "is still executing on the device (XLA runs this callback on one of its own threads); "
      "the CPU runtime cannot start another program until the first finishes, so this would "
      "wait forever. Inside such callbacks compute with NumPy (or eager revax operations that "
      "run on the host), or return the values and compute after the call.")


def _with_callback_cause(error: RuntimeBackendError) -> RuntimeBackendError:
  """`error` with the exception of the host callback that caused it (if any) as its cause."""
  from revax._src.runtime import ffi
  return ffi.restore_callback_error(error)


class _UnloadedExecutable:
  """`with` block holding the PJRT_Executable of a loaded one (it must be destroyed after use)."""

  def __init__(self, api: pjrt.Api, loaded: int):
    self._api = api
    self._pointer = api.call("LoadedExecutable_GetExecutable",
                             loaded_executable=loaded).executable

  def __enter__(self) -> int:
    return self._pointer

  def __exit__(self, *exc_info) -> None:
    self._api.call("Executable_Destroy", executable=self._pointer)
