"""Arrays split over several devices, and SPMD programs that run on several devices at once.

`ShardedArray` is a revax Array held as one device buffer per device of its sharding (each the
block of the global array that device holds, `index` a tuple of slices); NumPy conversion
assembles the global value from the blocks (and keeps it). Eager primitives on sharded arrays
run as one-primitive programs over their mesh (sharded_eager.apply_primitive); code that reads the
host value (NumPy conversion, single-device programs) sees the assembled array.

`compile_spmd` compiles a Shardy-annotated StableHLO module for an ordered list of devices (mesh
position p runs on devices[p]); `run_spmd` checks every per-device argument (device, shape,
dtype) before a single byte reaches XLA -- a multi-device Execute in which only some devices
reject their argument leaves the others waiting in a collective for ever, and later aborts the
process -- and runs it. `compiled_shardings` reads back the shardings XLA chose for parameters
and results (`Executable_OptimizedProgram`), and `op_sharding_indices` turns one into the block
each mesh position holds.

This module knows nothing of meshes or partition specs (those live above, in sharding.py): a
sharding is an opaque object with a device list, and blocks are given as tuples of slices.
"""
from __future__ import annotations

import ctypes as C
import math

import numpy as np

from revax._src.core import sharding_types
from revax._src.core.avals import ShapedArray, pytype_aval_mappings
from revax._src.core.errors import JaxRuntimeError
from revax._src.runtime import array as _array
from revax._src.runtime import pjrt
from revax._src.runtime.array import Array
from revax._src.runtime.hlo_dump import optimized_module_proto
from revax._src.runtime.pjrt import proto_fields as _proto_fields
from revax._src.runtime.pjrt import read_varint as _read_varint

__all__ = ["ShardedArray", "Shard", "compile_spmd", "run_spmd", "compiled_shardings",
           "op_sharding_indices", "check_shard", "any_sharded", "mark", "unmarked",
           "own_sharding"]

pjrt.ARGS.setdefault("Buffer_IsDeleted", pjrt._struct(
    "PJRT_Buffer_IsDeleted_Args", [("buffer", C.c_void_p), ("is_deleted", C.c_bool)]))


def consumed(buf) -> bool:
  """Whether the plugin has deleted `buf` (a Buffer whose own pointer is still live): what an
  Execute that aliased a donated argument to a result does to that argument."""
  if buf._ptr is None:
    return True
  return bool(buf._info.backend._api.call("Buffer_IsDeleted", buffer=buf._ptr).is_deleted)


# True once a ShardedArray has been made: jit looks for sharded arguments only after that.
live = False


class Shard:
  """One device's block of an array: `device`, `index` (a tuple of slices into the global
  array), `data` (an Array of the block's shape on `device`), `replica_id`."""
  __slots__ = ("device", "index", "data", "replica_id")

  def __init__(self, device, index, data, replica_id=0):
    self.device, self.index, self.data, self.replica_id = device, index, data, replica_id

  def __repr__(self):
    return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, " \
           f"data={self.data!r})"


class ShardedArray(Array):
  """A revax Array stored as one buffer per device.

  Attributes:
    sharding: how the array is split (a NamedSharding or another sharding object).
  """
  __slots__ = ("_sharding", "_buffers", "_indices")

  def __init__(self, aval: ShapedArray, sharding, buffers, indices, npy=None, typed=False):
    global live
    # over Explicit mesh axes the split is part of the type (JAX's sharding in types);
    # `typed`: the caller typed `aval` so already
    super().__init__(aval if typed else sharding_types.of_placement(aval, sharding), npy, None)
    self._sharding = sharding
    self._buffers = list(buffers)
    self._indices = [tuple(ix) for ix in indices]
    live = True
    _array.committed_live = True

  # --- the two representations -------------------------------------------------------------
  def _value(self) -> np.ndarray:
    npy = self._npy
    if npy is None:
      if getattr(getattr(self._sharding, "spec", None), "unreduced", None):
        # (a sum of the devices' partial values not yet added up: jax refuses to read it too)
        raise NotImplementedError("device_indices_map doesn't work with unreduced. Reduce the "
                                  "array first (revax.sharding.reshard to a spec without "
                                  "unreduced axes).")
      if self.is_deleted():
        raise self._deleted_error()
      npy = np.empty(self.aval.shape, self.aval.dtype)
      done = set()
      for buf, index in zip(self._buffers, self._indices, strict=True):
        key = _index_key(index, self.aval.shape)
        if key in done:
          continue
        done.add(key)
        npy[index] = buf.to_numpy()
      npy.flags.writeable = False
      self._npy = npy
    return npy

  def __repr__(self):
    if getattr(getattr(self._sharding, "spec", None), "unreduced", None):  # (no value to show)
      return (f"Array(shape={self.aval.shape}, dtype={self.aval.dtype.name}, "
              f"sharding={self._sharding!r})")
    return super().__repr__()

  def _device_buffer(self, device=None):
    """The whole array on one device (a gather): what single-device programs read."""
    from revax._src.runtime.client import get_backend
    return (device.client if device is not None else get_backend()).buffer_from_numpy(
        self._value(), device)

  # --- sharding ----------------------------------------------------------------------------
  @property
  def sharding(self):
    return self._sharding

  @property
  def addressable_shards(self) -> list:
    shards, seen = [], {}
    for buf, index in zip(self._buffers, self._indices, strict=True):
      key = _index_key(index, self.aval.shape)
      replica = seen.get(key, 0)
      seen[key] = replica + 1
      shards.append(Shard(buf.device, index, self._shard_data(buf), replica))
    return shards

  def _shard_data(self, buf) -> Array:
    """One device's buffer as a single-device Array (committed, as the array is)."""
    return _array.commit(Array(ShapedArray(buf.shape, self.aval.dtype, self.aval.weak_type),
                               buf=buf))

  # An array over several devices was placed there explicitly (device_put with a sharding, a
  # jit with shardings, or computed from such arrays): JAX reports it committed.
  committed = True

  def addressable_data(self, index: int) -> Array:
    """The `index`-th shard's data as a single-device Array; for a fully replicated array the
    first shard's whatever `index` says, as in JAX. IndexError past the last shard."""
    if self.is_deleted():
      raise self._deleted_error()
    if self.is_fully_replicated:
      return self._shard_data(self._buffers[0])
    return self._shard_data(self._buffers[index])

  def clone(self) -> "ShardedArray":
    """A new Array with the same value and sharding, holding the same device buffers (as in
    JAX: `delete()` of the original deletes the clone too)."""
    if self.is_deleted():
      raise self._deleted_error()
    return ShardedArray(self.aval, self._sharding, self._buffers, self._indices, typed=True)

  def on_device_size_in_bytes(self) -> int:
    """The bytes over all devices: one shard's size times the number of devices, as JAX
    counts it (a replicated array counts each copy)."""
    if self.is_deleted():
      raise JaxRuntimeError("INVALID_ARGUMENT: GetOnDeviceSizeInBytes() called on deleted or "
                            "donated buffer")
    return self._buffers[0].nbytes * len(self._buffers)

  def unsafe_buffer_pointer(self) -> int:
    raise JaxRuntimeError("INVALID_ARGUMENT: UnsafeBufferPointer() is supported only for "
                          "unsharded arrays.")

  global_shards = addressable_shards
  is_fully_addressable = True

  def __iter__(self):
    """The rows. Of an array split over devices, as JAX's: each row read on the host and put
    on the default device (uncommitted), not indexed on the devices (which JAX's sharding
    rules refuse for a split first dimension)."""
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    if self.is_fully_replicated:
      return super().__iter__()
    value = self._value()
    return (Array(ShapedArray(value.shape[1:], value.dtype), npy=np.array(value[i]))
            for i in range(self.shape[0]))

  @property
  def is_fully_replicated(self) -> bool:
    return all(_index_key(ix, self.aval.shape) == _index_key((), self.aval.shape)
               for ix in self._indices)

  @property
  def device(self):
    raise ValueError("device is not defined for an array sharded over several devices; use "
                     ".sharding or .addressable_shards")

  def devices(self) -> set:
    return {b.device for b in self._buffers}

  def block_until_ready(self) -> "ShardedArray":
    buffers = self._buffers
    for b in buffers:
      if not b._info.ready:  # one settle of the launch in flight readies all its outputs
        from revax._src.runtime.client import settle_in_flight
        settle_in_flight()
        break
    for b in buffers:
      b.block_until_ready()
    return self

  def is_ready(self) -> bool:
    if self.is_deleted():
      raise self._deleted_error()
    return all(b.is_ready() for b in self._buffers)

  def delete(self) -> None:
    """Free every shard (and the host copy) now; later uses raise RuntimeError. Also what a
    jit that donates this array does after the call."""
    self._npy = None
    for b in self._buffers:
      b.delete()

  def is_deleted(self) -> bool:
    return any(b.is_deleted() for b in self._buffers)


pytype_aval_mappings[ShardedArray] = lambda x: x.aval


def _configure_compiled_path():
  from revax._src.runtime import client, fastpath
  fastpath.configure_sharded(ShardedArray, client._BufferInfo)  # what sharded plans make


_configure_compiled_path()


def any_sharded(values) -> bool:
  """Whether any of `values` is a ShardedArray (cheap while none was ever made)."""
  if not live:
    return False
  return any(type(v) is ShardedArray for v in values)


def mark(x: Array, sharding) -> Array:
  """Record on the single-device Array `x` (made here, not shared) that it is laid out by
  `sharding`, a sharding over a mesh of one device: `x.sharding` reports it, and a jit with
  in/out shardings gives its results shardings from it as JAX does (sharded_jit.py). Plain jit
  calls and eager ops treat it as the single-device Array it is (their results are plain), so
  that their cached fast paths stay as they are and give the same result every call.
  Placed explicitly, `x` is committed (as JAX reports it). Returns `x`."""
  x._mesh_sharding = sharding
  return _array.commit(x)


def unmarked(x):
  """`x` without a recorded mesh sharding (the same buffers), or `x` itself if it has none."""
  if type(x) is Array and getattr(x, "_mesh_sharding", None) is not None:
    out = Array(x.aval, x._npy, x._buf)
    return _array.commit(out) if x.committed else out
  return x


def own_sharding(x):
  """The sharding an eager value carries (a ShardedArray's, or one recorded by `mark`), None for
  anything else (a plain single-device Array, NumPy, a scalar)."""
  if type(x) is ShardedArray:
    return x._sharding
  if type(x) is Array:
    return getattr(x, "_mesh_sharding", None)
  return None


def _index_key(index, shape) -> tuple:
  index = tuple(index) + (slice(None),) * (len(shape) - len(index))
  return tuple(s.indices(n)[:2] for s, n in zip(index, shape, strict=True))


# ----------------------------------------------------------------------------- compiling
def compile_spmd(backend, text: str, device_ids) -> "object":
  """Compile a Shardy-annotated module for len(device_ids) partitions; partition (mesh
  position) p runs on the device with id device_ids[p]. Returns the client's Executable."""
  ids = [int(i) for i in device_ids]
  if len(set(ids)) != len(ids):  # XLA CHECK-fails (aborts the process) on a repeated device
    raise ValueError(f"a program's devices must be distinct, got device ids {ids}")
  known = {d.id for d in backend.devices}
  missing = [i for i in ids if i not in known]
  if missing:
    raise ValueError(f"device ids {missing} are not devices of this backend ({sorted(known)})")
  n = len(ids)
  options = pjrt.compile_options(1, n, use_spmd_partitioning=n > 1,
                                 use_shardy_partitioner=n > 1 and "sdy." in text,
                                 device_assignment=[[i] for i in ids])
  code, transfers = text.encode(), None
  if b"is_host_transfer = true" in code:  # host callbacks as send/recv (host_transfer.py)
    from revax._src.runtime import host_transfer
    code, transfers = host_transfer.prepare_program(code, backend)
  executable = backend._compile(code, options, False)
  executable._source = (text if transfers is None else code, options)  # (hlo_dump.optimized_hlo)
  if transfers is not None:
    transfers.attach(executable)
  return executable


def check_shard(buf, device, shape, dtype, what: str) -> None:
  """ValueError unless `buf` is on `device` with this per-device shape and dtype."""
  info = buf._info  # the common case first, without properties or conversions
  if info.device is device and info.dtype == dtype and info.shape == shape:
    return
  if buf.device != device:
    raise ValueError(f"{what}: the shard for {device} is on {buf.device}")
  if tuple(buf.shape) != tuple(shape) or np.dtype(buf.dtype) != np.dtype(dtype):
    raise ValueError(f"{what}: the shard on {device} has shape {tuple(buf.shape)} and dtype "
                     f"{np.dtype(buf.dtype).name}, but the program expects "
                     f"{tuple(shape)} {np.dtype(dtype).name} per device")


def run_spmd(executable, args_per_device, in_specs, trusted=(), wait=True) -> list:
  """Execute after checking every argument of every device.

  Args:
    executable: a multi-device Executable (from `compile_spmd`).
    args_per_device: one list of Buffers per device of `executable.devices`, in that order.
    in_specs: per argument, the expected per-device (shape, dtype), one list per device.
    trusted: indices of arguments whose buffers need no check: the live shards of a sharded
      Array laid out exactly as the program takes it (placed and checked when it was made).
    wait: false to return once the work is queued (`Executable.execute_sharded`).

  Returns:
    One list of output Buffers per device.
  """
  devices = executable.devices
  if len(args_per_device) != len(devices):
    raise ValueError(f"{len(args_per_device)} argument lists for a program on "
                     f"{len(devices)} devices")
  for d, (device, bufs, specs) in enumerate(zip(devices, args_per_device, in_specs,
                                                 strict=True)):
    if len(bufs) != len(specs):
      raise ValueError(f"{len(bufs)} arguments for device {device}, the program takes "
                       f"{len(specs)}")
    for k, (buf, (shape, dtype)) in enumerate(zip(bufs, specs, strict=True)):
      if k in trusted:
        continue
      if buf.is_deleted():
        raise RuntimeError(f"argument {k} on {device} is a deleted buffer")
      check_shard(buf, device, shape, dtype, f"argument {k}")
  return executable.execute_sharded(args_per_device, wait)


# ----------------------------------------------------------------------------- compiled shardings
def compiled_shardings(executable) -> tuple[list[dict], list[dict]]:
  """(per-parameter OpShardings, per-result OpShardings) XLA chose, as dicts (see
  `_op_sharding`); read from the partitioned HloModuleProto."""
  module = optimized_module_proto(executable)
  fields = _proto_fields(module)
  params = [_op_sharding(v) for f, _, v in fields if f == 14]
  outs = [_op_sharding(v) for f, _, v in fields if f == 12]
  out = outs[0] if outs else {"type": "replicated"}
  results = out["tuple_shardings"] if out.get("type") == "tuple" else [out]
  return params, results


def op_sharding_indices(sharding: dict, shape, num_partitions: int) -> list[tuple]:
  """The block (a tuple of slices) partition p holds, for p in range(num_partitions)."""
  kind = sharding.get("type", "replicated")
  full = tuple(slice(None) for _ in shape)
  if kind in ("replicated", "manual") or not shape and kind != "maximal":
    return [full] * num_partitions
  if kind == "maximal":
    return [full] * num_partitions  # one device computes it; the others hold copies
  if kind != "other":
    raise ValueError(f"unsupported compiled sharding {sharding}")
  tile = list(sharding.get("tile_assignment_dimensions", []))
  devices = sharding.get("tile_assignment_devices")
  if not devices:
    reshape = sharding.get("iota_reshape_dims") or [math.prod(tile)]
    perm = sharding.get("iota_transpose_perm") or list(range(len(reshape)))
    devices = np.arange(math.prod(reshape)).reshape(reshape).transpose(perm).reshape(-1)
  grid = np.asarray(devices).reshape(tile)
  out = [None] * num_partitions
  ndim = len(shape)
  for t in np.ndindex(*tile):
    p = int(grid[t])
    index = []
    for d in range(ndim):
      if tile[d] == 1:
        index.append(slice(None))
        continue
      block = -(-shape[d] // tile[d])
      index.append(slice(t[d] * block, min((t[d] + 1) * block, shape[d])))
    out[p] = tuple(index)
  return [full if ix is None else ix for ix in out]


def _packed(value, wire) -> list:
  if wire == 0:
    return [value]
  out, i = [], 0
  while i < len(value):
    x, i = _read_varint(value, i)
    out.append(x)
  return out


_OP_SHARDING_TYPES = {0: "replicated", 1: "maximal", 2: "tuple", 3: "other", 4: "manual",
                      5: "unknown"}
_OP_SHARDING_FIELDS = {1: "type", 3: "tile_assignment_dimensions", 4: "tile_assignment_devices",
                       5: "tuple_shardings", 6: "replicate_on_last_tile_dim", 8: "last_tile_dims",
                       9: "iota_reshape_dims", 10: "iota_transpose_perm"}


def _op_sharding(buf: bytes) -> dict:
  """xla.OpSharding -> {type, tile_assignment_dimensions, tile_assignment_devices,
  iota_reshape_dims, iota_transpose_perm, replicate_on_last_tile_dim, last_tile_dims,
  tuple_shardings}."""
  d: dict = {"type": "replicated"}
  for field, wire, value in _proto_fields(buf):
    name = _OP_SHARDING_FIELDS.get(field)
    if name == "type":
      d[name] = _OP_SHARDING_TYPES.get(value, value)
    elif name == "tuple_shardings":
      d.setdefault(name, []).append(_op_sharding(value))
    elif name == "replicate_on_last_tile_dim":
      d[name] = bool(value)
    elif name is not None:
      d.setdefault(name, []).extend(_packed(value, wire))
  return d
