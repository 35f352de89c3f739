"""Array, revax's concrete array: immutable, held on the host (a NumPy array) or on a device (a
PJRT buffer). (The public `revax.Array` is the abstract type of these and of tracers:
basearray.py.)

Each form is made from the other lazily, on first need, and kept: eager NumPy implementations read
the host copy, compiled programs read the device buffer. Arithmetic operators and indexing are
installed by revax.numpy, which sits above this layer.
"""
from __future__ import annotations

import warnings

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, pytype_aval_mappings
from revax._src.core.errors import JaxRuntimeError
from revax._src.core.memory_space import MemorySpace, mem_kind_to_space, mem_space_to_kind
from revax._src.runtime import memories

_DEVICE = MemorySpace.Device

try:  # the buffer protocol (memoryview, read-only), where the C extension was built
  from revax._src.runtime._buffer import BufferBase as _BufferBase
except ImportError:  # pragma: no cover -- built without a C compiler
  class _BufferBase:
    __slots__ = ()


# True once some Array was committed to its device (see `Array.committed`): until then eager ops
# and jit calls skip looking for committed inputs.
committed_live = False


class Array(_BufferBase):
  """A revax array. Immutable; use `x.at[idx].set(v)` for functional updates."""
  # `_mesh_sharding` (unset on most Arrays) records a sharding over a 1-device mesh the array
  # was placed by, which `.sharding` reports as JAX does (runtime/sharded.py: `mark`).
  # `_committed` records that it is committed to its device (unset: False).
  # `_mem_kind` (unset on most Arrays) records a memory kind its type does not tell
  # ("unpinned_host"); `memory_kind()` says where the array lives.
  __slots__ = ("aval", "_npy", "_buf", "_mesh_sharding", "_committed", "_mem_kind",
               "__weakref__")
  __array_priority__ = 100

  def __init__(self, aval: ShapedArray, npy: np.ndarray | None = None, buf=None):
    self.aval = aval
    self._npy = npy
    self._buf = buf
    self._committed = False  # (reading an unset slot costs an exception; the compiled call
    # path's outputs, made in C, leave it unset: `committed` reads it with a default)

  # --- the two representations -------------------------------------------------------------
  def _value(self) -> np.ndarray:
    """The host copy (read-only NumPy array), read back from the device on first use."""
    npy = self._npy
    if npy is None:
      buf = self._buf
      if buf is None or buf._ptr is None:
        raise self._deleted_error()
      npy = buf.to_numpy()
      npy.flags.writeable = False
      self._npy = npy
    return npy

  def _buffer_export(self) -> np.ndarray:
    """What the buffer protocol exports (runtime/_buffer.c): the value as a read-only
    C-contiguous NumPy array, as jax's Arrays export theirs. dtypes outside NumPy's own
    (bfloat16, float8, int4, ...) have no buffer format: BufferError, as in jax."""
    dtype = self.aval.dtype
    if dtype.isbuiltin != 1:
      raise BufferError(f"Buffers of type {dtype.name} are not supported by the Python buffer "
                        f"protocol.")
    npy = self._value()
    if not npy.flags.c_contiguous:
      npy = np.ascontiguousarray(npy)
      npy.flags.writeable = False
    return npy

  def _device_buffer(self, device=None):
    """The device buffer, uploaded from the host copy on first use; with `device`, a buffer on
    that device (a copy through the host when the array's own buffer is elsewhere)."""
    buf = self._buf
    if buf is None or (device is not None and buf.device != device):
      npy = self._npy
      if npy is None:
        if buf is None:
          raise self._deleted_error()
        npy = self._value()  # (raises for a freed buffer)
      from revax._src.runtime.client import get_backend
      backend = device.client if device is not None else get_backend()
      kind = self.memory_kind()
      memory = None if kind == "device" else memories.memory_of(
          device or backend.devices[0], kind)  # (its type's memory, e.g. pinned host memory)
      buf = backend.buffer_from_numpy(npy, device, memory)
      if self._buf is None:
        self._buf = buf
    return buf

  def memory_kind(self) -> str:
    """The kind of the device memory the array lives in (or goes to when it is uploaded):
    "device", "pinned_host" (its type's memory space is Host) or "unpinned_host"."""
    kind = getattr(self, "_mem_kind", None)
    if kind is not None:
      return kind
    space = getattr(self.aval, "memory_space", _DEVICE)
    return "device" if space is _DEVICE else mem_space_to_kind(space)

  @property
  def is_on_host(self) -> bool:
    return self._npy is not None

  # --- metadata ----------------------------------------------------------------------------
  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  @property
  def nbytes(self) -> int:
    return self.aval.size * self.aval.dtype.itemsize

  @property
  def itemsize(self) -> int:
    return self.aval.dtype.itemsize

  @property
  def device(self):
    from revax._src.runtime.client import get_backend
    return self._buf.device if self._buf is not None else get_backend().devices[0]

  def devices(self) -> set:
    return {self.device}

  @property
  def committed(self) -> bool:
    """Whether the array is committed to its device(s), as in JAX: True after `device_put` with
    a device or sharding (or `to_device`) and for results computed from committed arrays; False
    for arrays made by creation functions, NumPy conversion, or computations on uncommitted
    arrays only."""
    return getattr(self, "_committed", False)

  def platform(self) -> str:
    """The platform of the array's devices, e.g. 'cpu'."""
    buf = self._buf
    if buf is not None:
      return buf.device.platform
    from revax._src.runtime.client import get_backend
    return get_backend().platform

  def addressable_data(self, index: int) -> "Array":
    """The data of the `index`-th addressable shard as a single-device Array. A fully
    replicated array (every single-device one) holds the whole value everywhere, and `index` is
    not looked at, as in JAX."""
    if self.is_deleted():
      raise self._deleted_error()
    out = Array(self.aval, self._npy, self._buf)
    keep_memory_kind(self, out)
    if self.committed:
      commit(out)
    return out

  def clone(self) -> "Array":
    """A new Array with the same value, sharding and commitment. As in JAX it holds the same
    device buffer (uploaded first if the value is only on the host): `delete()` of the original
    deletes the clone too."""
    out = Array(self.aval, None, self._device_buffer())
    keep_memory_kind(self, out)
    mesh_sharding = getattr(self, "_mesh_sharding", None)
    if mesh_sharding is not None:
      out._mesh_sharding = mesh_sharding
    if self.committed:
      commit(out)
    return out

  def on_device_size_in_bytes(self) -> int:
    """The bytes the array occupies on its device(s) (XLA:CPU stores elements densely)."""
    if self.is_deleted():
      raise JaxRuntimeError("INVALID_ARGUMENT: GetOnDeviceSizeInBytes() called on deleted or "
                            "donated buffer")
    return self.nbytes

  def unsafe_buffer_pointer(self) -> int:
    """The address of the array's device memory (PJRT_Buffer_UnsafePointer), uploading a
    host-only value first. Valid while the array is alive and not deleted."""
    if self.is_deleted():
      raise JaxRuntimeError("INVALID_ARGUMENT: UnsafeBufferPointer( called on deleted or donated "
                            "buffer")
    buf = self._device_buffer()
    return int(buf._backend._api.call("Buffer_UnsafePointer",
                                      buffer=buf._ptr).buffer_pointer)

  @property
  def traceback(self):
    """JAX records the Python traceback of the call that made an array; revax records none
    (recording one per array costs time on every operation), so this is None, as JAX reports
    for arrays made without one."""
    return None

  @property
  def device_buffer(self):
    raise AttributeError("arr.device_buffer has been deprecated. Use arr.addressable_data(0)")

  @property
  def device_buffers(self):
    raise AttributeError("arr.device_buffers has been deprecated. Use [x.data for x in "
                         "arr.addressable_shards]")

  def block_until_ready(self) -> "Array":
    buf = self._buf
    if buf is not None:
      if buf._ptr is None:
        raise self._deleted_error()
      buf.block_until_ready()
    elif self._npy is None:
      raise self._deleted_error()
    return self

  def delete(self) -> None:
    """Free this Array's memory (its device buffer and host copy) now; later uses raise
    RuntimeError. Arrays made from the same buffer (`device_put` of this one) lose it too."""
    buf, self._buf, self._npy = self._buf, None, None
    if buf is not None:
      buf.delete()

  def is_ready(self) -> bool:
    """Whether the value is computed, without waiting (a multi-device call returns before its
    devices finish). RuntimeError for a deleted Array."""
    buf = self._buf
    if buf is not None:
      if buf._ptr is None:
        raise self._deleted_error()
      return buf.is_ready()
    if self._npy is None:
      raise self._deleted_error()
    return True

  def is_deleted(self) -> bool:
    """Whether `delete()` freed this Array (or its device buffer was freed)."""
    buf = self._buf
    return self._npy is None and (buf is None or buf._ptr is None)

  def _deleted_error(self) -> RuntimeError:
    shape = ",".join(map(str, self.aval.shape))
    return RuntimeError(f"Array has been deleted with shape={self.aval.dtype.name}[{shape}].")

  def copy_to_host_async(self) -> None:
    """Start bringing the value to the host without waiting for it: a value still being
    computed is read back where it is first used; a computed one is copied now."""
    buf = self._buf
    if self._npy is None and buf is not None and buf._ptr is not None and \
        not buf._info.ready and not buf.is_ready():
      return
    self._value()

  # --- conversions -------------------------------------------------------------------------
  def __array__(self, dtype=None, copy=None):
    v = self._value()
    if dtype is not None and np.dtype(dtype) != v.dtype:
      if copy is False:
        raise ValueError(f"converting a revax Array of dtype {v.dtype} to {np.dtype(dtype)} "
                         "needs a copy, but copy=False was given")
      return v.astype(dtype)
    if copy:
      return v.copy()
    # A view of the read-only host copy is read-only, and its WRITEABLE flag cannot be set
    # again (its base is read-only), so the memory handed out never mutates the Array.
    return v.view()

  def item(self, *args):
    return self._value().item(*args)

  def tolist(self):
    return self._value().tolist()

  def __bool__(self):
    if self.size == 0:
      raise ValueError(f"The truth value of an empty array is ambiguous (shape {self.shape}). "
                       "Use `array.size > 0` to check that an array is not empty.")
    if self.size != 1:
      raise ValueError(f"The truth value of an array with more than one element is ambiguous "
                       f"(shape {self.shape}). Use a.any() or a.all()")
    return bool(self._value())

  def __int__(self):
    return int(self._value())

  def __float__(self):
    return float(self._value())

  def __complex__(self):
    return complex(self._value())

  def __index__(self):
    if not dtypes.is_integer(self.dtype) or self.shape:
      raise TypeError(f"only integer scalar arrays can be converted to a scalar index, "
                      f"got {self.aval.str_short()}")
    return int(self._value())

  def __hex__(self):
    return hex(self.__index__())

  def __oct__(self):
    return oct(self.__index__())

  @property
  def __numpy_dtype__(self) -> np.dtype:
    """NumPy 2.4's protocol for `np.dtype(x)`: the dtype, with JAX's DeprecationWarning (pass
    `dtype=x.dtype` instead)."""
    warnings.warn("Implicit conversion of an array to a dtype is deprecated; rather than "
                  "dtype=arr use dtype=arr.dtype. In the future this will result in an error.",
                  DeprecationWarning, stacklevel=2)
    return self.dtype

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object (a 0-d array)")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))

  def __hash__(self):
    raise TypeError("unhashable type: 'revax.Array'")

  def __reduce__(self):
    return (_reconstruct, (self._value(), self.aval.weak_type))

  def __repr__(self):
    v = self._value()
    prefix = "Array("
    if v.size == 0 and v.ndim:
      body = f"[], shape={v.shape}"
    else:
      body = np.array2string(v, separator=", ", prefix=prefix, max_line_width=100)
    extra = ", weak_type=True" if self.aval.weak_type else ""
    return f"{prefix}{body}, dtype={v.dtype.name}{extra})"

  def __str__(self):
    return str(self._value())

  def __format__(self, spec):
    # as JAX's (after NumPy's own rule): a 0-d array formats as its NumPy scalar, so an empty
    # spec gives that scalar's `format` (a float32 prints as the Python float it converts to)
    v = self._value()
    return format(v[()] if self.ndim == 0 else v, spec)


def keep_memory_kind(x: Array, out: Array) -> None:
  """`out` (an Array of `x`'s buffer) records the memory kind `x` records beside its type."""
  kind = getattr(x, "_mem_kind", None)
  if kind is not None:
    out._mem_kind = kind


def commit(x: Array) -> Array:
  """Mark the Array `x` (made by the caller, not shared) committed to its device. Returns `x`."""
  global committed_live
  x._committed = True
  committed_live = True
  return x


def any_committed(values) -> bool:
  """Whether any of `values` is a committed Array (cheap while none was ever committed)."""
  if not committed_live:
    return False
  for v in values:
    if isinstance(v, Array) and v.committed:
      return True
  return False


def commit_results(outs, inputs=()):
  """Mark the Arrays among `outs` (an Array, a list or tuple of values) committed, except any
  that is one of `inputs` (returned as it came, its commitment stays its own). Returns `outs`."""
  for o in (outs if isinstance(outs, (list, tuple)) else (outs,)):
    if isinstance(o, Array) and not getattr(o, "_committed", False) and \
        not any(o is i for i in inputs):
      commit(o)
  return outs


def in_memory(x: Array, kind: str, device=None) -> Array:
  """`x` (a one-device Array) as an Array in the memory of kind `kind` ("device",
  "pinned_host", "unpinned_host") of `device` (default: where `x` is), its type's memory space
  following (Host for pinned host memory). The buffer is put there for real: uploaded there
  from the host copy, or copied there by PJRT (PJRT_Buffer_CopyToMemory).

  Raises:
    ValueError: the device has no memory of that kind.
  """
  space = mem_kind_to_space(kind)
  aval = x.aval if x.aval.memory_space is space else x.aval.update(memory_space=space)
  buf = x._buf
  if buf is None or buf._ptr is None or (device is not None and buf.device != device):
    npy = x._value()
    if device is None:
      from revax._src.runtime.client import get_backend
      device = buf.device if buf is not None else get_backend().devices[0]
    memory = None if kind == "device" else memories.memory_of(device, kind)
    buf = device.client.buffer_from_numpy(npy, device, memory)
  elif kind != "device" or x.memory_kind() != "device":
    buf = memories.in_memory(buf, kind)
  out = Array(aval, npy=x._npy, buf=buf)
  if kind == "unpinned_host":  # (a kind its type does not tell)
    out._mem_kind = kind
  return out


def _reconstruct(value, weak_type):
  return from_numpy(value, weak_type, fresh=True)


def from_numpy(x: np.ndarray, weak_type: bool = False, *, fresh: bool = False) -> Array:
  """Wrap a NumPy array (converted to its canonical dtype, made read-only) as an Array.

  Arrays are immutable, so the value is copied unless the caller says it is `fresh` (made for
  this Array and referenced nowhere else): a read-only array or view may still share memory with
  a writeable one its owner mutates later.
  """
  dtype = dtypes.canonicalize_dtype(x.dtype)
  if x.dtype != dtype:
    x = x.astype(dtype)
  elif not fresh or x.base is not None:
    x = x.copy()  # the caller may mutate its array (or the base of its view) later
  x.flags.writeable = False
  return Array(ShapedArray(x.shape, dtype, weak_type), npy=x)


def block_until_ready_all(leaves) -> None:
  """Wait for every Array among `leaves` (other leaves are skipped). An Array whose buffer is
  known to be computed costs a few attribute reads; the others are waited for together (one
  call into the runtime per backend); a deleted buffer raises as `Array.block_until_ready`
  does."""
  pending = []
  for leaf in leaves:
    if type(leaf) is Array:
      buf = leaf._buf
      if buf is None:
        if leaf._npy is None:
          raise leaf._deleted_error()
      elif buf._ptr is None:
        raise leaf._deleted_error()
      elif not buf._info.ready:
        pending.append(buf)
    elif isinstance(leaf, Array):
      leaf.block_until_ready()
  if pending:
    backend = pending[0]._info.backend
    if all(b._info.backend is backend for b in pending):
      backend.wait_buffers(pending)
    else:
      for b in pending:
        b.block_until_ready()


pytype_aval_mappings[Array] = lambda x: x.aval
