"""Laying one value out as a sharding says (`place`), and `GSPMDSharding`, the sharding XLA chose
where no PartitionSpec describes it. Below the jit and device_put entry points: sharded_api.py's
device_put, spmd_program.py's programs (their arguments) and lax's sharding constraints (eagerly)
all place values through here."""
from __future__ import annotations

import numpy as np

from revax._src.core.avals import ShapedArray, get_aval
from revax._src.interpreters import dispatch
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array, commit, in_memory
from revax._src.runtime.client import get_backend
from revax._src.sharding import NamedSharding, Sharding, block_shape

__all__ = ["is_sharding", "GSPMDSharding", "place", "one_device"]


def is_sharding(x) -> bool:
  return isinstance(x, Sharding)


class GSPMDSharding(Sharding):
  """A sharding XLA chose that no PartitionSpec of the mesh describes: the block each device
  holds, as read back from the compiled program, for arrays of one shape."""

  def __init__(self, devices, indices_by_shape: dict):
    self._devices = list(devices)
    self._by_shape = dict(indices_by_shape)

  @property
  def _device_list(self):
    return list(self._devices)

  @property
  def device_set(self):
    return set(self._devices)

  addressable_devices = device_set
  is_fully_addressable = True

  @property
  def num_devices(self):
    return len(self._devices)

  def _indices(self, shape):
    shape = tuple(shape)
    if shape not in self._by_shape:
      raise ValueError(f"{self!r} describes arrays of shapes {list(self._by_shape)}, not {shape}")
    return self._by_shape[shape]

  def devices_indices_map(self, global_shape):
    return dict(zip(self._devices, self._indices(global_shape), strict=True))

  def shard_shape(self, global_shape):
    return block_shape(self._indices(global_shape)[0], global_shape)

  @property
  def is_fully_replicated(self):
    return all(block_shape(ix, shape) == shape for shape, ixs in self._by_shape.items()
               for ix in ixs)

  def __repr__(self):
    return f"GSPMDSharding(devices={self._devices})"


def _check_devices(sharding) -> None:
  known = set(get_backend().devices)
  for d in sharding._device_list:
    if d not in known:
      raise ValueError(f"{sharding!r} names device {d!r}, which is not a device of this backend "
                       f"({sorted(known, key=lambda x: x.id)})")


def place(value, sharding, aval: ShapedArray | None = None) -> Array:
  """`value` (an Array, a NumPy array or a scalar) laid out as `sharding` says.

  Shards of a ShardedArray already where `sharding` wants them are reused; anything else is
  cut from the host value and copied to each device.
  """
  if aval is None:
    aval = value.aval if isinstance(value, Array) else get_aval(value)
  devices = sharding._device_list
  indices = sharding._indices(aval.shape)
  kind = getattr(sharding, "memory_kind", None) or "device"
  if len(devices) == 1:
    arr = dispatch.to_array(value)
    if arr.aval != aval:
      arr = Array(aval, arr._npy, arr._buf)
    if kind != "device" or arr.memory_kind() != "device":  # into the memory the sharding names
      return one_device(in_memory(arr, kind, devices[0]), sharding)
    buf = arr._device_buffer(devices[0])
    # over a 1-device mesh the array stays a plain Array that reports its NamedSharding
    return one_device(Array(aval, npy=arr._npy, buf=buf), sharding)
  if kind != "device":
    raise NotImplementedError(f"placing an array over several devices in memory kind {kind!r}: "
                              "revax places one-device arrays in other memories only")
  _check_devices(sharding)
  reuse = None if _adds_unreduced(value, sharding) else _matching_buffers(value, devices,
                                                                          indices, aval)
  if reuse is not None:
    return rt.ShardedArray(aval, sharding, reuse, indices, npy=value._npy)
  host = np.asarray(dispatch.host_value(value), dtype=aval.dtype)
  backend = get_backend()
  zeroed = _unreduced_copies(sharding)
  bufs = [backend.buffer_from_numpy(  # (any strides are fine)
      np.zeros_like(host[ix]) if k in zeroed else np.asarray(host[ix]), d)
      for k, (d, ix) in enumerate(zip(devices, indices, strict=True))]
  npy = host if not host.flags.writeable and not zeroed else None
  return rt.ShardedArray(aval, sharding, bufs, indices, npy=npy)


def _adds_unreduced(value, sharding) -> bool:
  """Whether `sharding` is unreduced over axes `value` is not (its copies there become zeros)."""
  want = getattr(getattr(sharding, "spec", None), "unreduced", None)
  if not want:
    return False
  have = getattr(getattr(getattr(value, "sharding", None), "spec", None), "unreduced", None)
  return bool(want - (have or frozenset()))


def _unreduced_copies(sharding) -> set:
  """The positions (in the mesh's device order) that hold zeros of a value placed unreduced
  over some mesh axes: as jax, the value lies on the devices at coordinate 0 of each unreduced
  axis and zeros elsewhere, so that the sum over those axes is the value."""
  unreduced = getattr(getattr(sharding, "spec", None), "unreduced", None)
  if not unreduced:
    return set()
  mesh = sharding.mesh
  return {k for k, coord in enumerate(np.ndindex(*mesh.axis_sizes))
          if any(c for a, c in zip(mesh.axis_names, coord, strict=True) if a in unreduced)}


def _matching_buffers(value, devices, indices, aval):
  """The buffers of `value` in `devices` order when it already holds exactly these blocks."""
  if type(value) is not rt.ShardedArray or value.aval.dtype != aval.dtype:
    return None
  shape = aval.shape
  have = {(b.device, rt._index_key(ix, shape)): b
          for b, ix in zip(value._buffers, value._indices, strict=True)}
  out = []
  for d, ix in zip(devices, indices, strict=True):
    b = have.get((d, rt._index_key(ix, shape)))
    if b is None:
      return None
    out.append(b)
  return out


def one_device(arr: Array, sharding) -> Array:
  """A new single-device Array placed by `sharding`: marked with it when it is a NamedSharding
  (over a mesh of one device), as JAX reports such arrays; committed, as placed explicitly."""
  return rt.mark(arr, sharding) if isinstance(sharding, NamedSharding) else commit(arr)
