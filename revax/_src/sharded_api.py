"""The devices (devices, device_count, local_devices, local_device_count, process_count, ...)
and placing arrays on several of them: sharded device_put, make_array_from_callback,
make_array_from_single_device_arrays, and the sharding properties every Array has
(`.sharding`, `.addressable_shards`, `.is_fully_addressable`).

A sharded array (runtime.sharded.ShardedArray) holds one buffer per device of its sharding, each
the block `sharding.devices_indices_map(shape)[device]` of the global value. A sharding over one
device gives a plain single-device Array. Eager primitives on sharded arrays are compiled for
their mesh with the operands' shardings and return sharded arrays (sharded_eager.apply_primitive;
where that is impossible they read the assembled value); jit over the same mesh uses the shards
where they are (sharded_jit.py).
"""
from __future__ import annotations


import numpy as np

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray
from revax._src.core.memory_space import MemorySpace, mem_space_to_kind
from revax._src.core.trace import Tracer, _context, eval_trace
from revax._src.interpreters import dispatch
from revax._src.lax import creation, sharding_constraint
from revax._src.lax.device_put import bind_device_put, copy_semantics_of
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array, commit, in_memory, keep_memory_kind
from revax._src.runtime.client import Device, get_backend
from revax._src.sharded_place import GSPMDSharding, is_sharding, place
from revax._src.sharded_place import one_device as _one_device
# eager primitives on sharded arrays run over their mesh: importing sharded_eager installs its
# hook in the eager dispatcher
from revax._src import sharded_eager  # noqa: F401
from revax._src import mesh_placement  # noqa: F401 (installs its hooks once a mesh is set)
from revax._src.sharding import (AxisType, NamedSharding, PartitionSpec,
                                 SingleDeviceSharding, block_shape, concrete_sharding,
                                 resolve_specs, use_abstract_mesh)

__all__ = ["devices", "device_count", "device_put", "make_array_from_callback",
           "make_array_from_single_device_arrays", "local_devices", "local_device_count",
           "is_sharding", "place", "GSPMDSharding"]

_DEVICE = MemorySpace.Device  # (an enum member's lookup on its class is slow)


def devices(backend=None):
  """The devices of a backend, e.g. `[CpuDevice(id=0)]`.

  Args:
    backend: "cpu", "tpu" (or a Backend); None for the default backend (the TPU where one is
      attached and libtpu installed, else the CPU).

  Returns:
    The backend's devices, in order.

  Raises:
    RuntimeError: JAX's error for a backend that is not present (e.g. "gpu").
  """
  return list(_backend_of(backend, get_backend).devices)


def _backend_of(backend, get_backend):
  """The Backend a `backend=` argument names (a platform name, a Backend, or None)."""
  if backend is None or isinstance(backend, str):
    return get_backend(backend)
  if hasattr(backend, "devices") and hasattr(backend, "platform"):
    return backend
  raise TypeError(f"backend must be a platform name such as 'cpu' or 'tpu', got {backend!r}")


def device_count(backend=None) -> int:
  """The number of devices of a backend, as `len(revax.devices(backend))`.

  Args:
    backend: "cpu", "tpu" or None (the default backend), as for `devices`.

  Returns:
    The device count: on the CPU 1 unless `REVAX_CPU_DEVICE_COUNT=N` (set before the first
    computation) asked for N.

  Example:
    >>> revax.device_count() == len(revax.devices())
    True
  """
  return len(devices(backend))


def local_devices(process_index=None, backend=None, host_id=None) -> list:
  """The devices of this process (all of them: revax runs one process) on a backend ("cpu",
  "tpu"; None: the default one); RuntimeError as JAX's for a backend that is not present."""
  return list(get_backend(backend).devices)


def local_device_count(backend=None) -> int:
  """The number of devices attached to this process on a backend: all of them, as revax runs
  in one process.

  Args:
    backend: "cpu", "tpu" or None (the default backend); JAX's RuntimeError for one that is
      not present.

  Returns:
    The device count, on the CPU 1 unless `REVAX_CPU_DEVICE_COUNT` asked for more.

  Example:
    >>> revax.local_device_count() == revax.device_count()
    True
  """
  return len(get_backend(backend).devices)


def process_count(backend=None) -> int:
  """The number of processes of the program: 1 (revax runs in one process; every device is
  local)."""
  del backend
  return 1


def process_index(backend=None) -> int:
  """This process's index among `process_count()` processes: 0."""
  del backend
  return 0


def process_indices(backend=None) -> list[int]:
  """The indices of every process: [0]."""
  del backend
  return [0]


host_count = process_count  # JAX's older names, kept by JAX as aliases
host_id = process_index
host_ids = process_indices


def copy_to_host_async(x):
  """Start copying each Array leaf of `x` to the host (calls the leaf's `copy_to_host_async`
  where it has one; other leaves are left alone) and return `x`.

  Example:
    >>> x = jnp.arange(3.0)
    >>> revax.copy_to_host_async({"x": x})["x"] is x
    True
  """
  for leaf in tree_util.tree_leaves(x):
    start = getattr(leaf, "copy_to_host_async", None)
    if start is not None:
      start()
  return x


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """A global array from the data this process holds. revax runs one process, which holds all
  of it: this places `local_data` as `sharding` says (a pytree of them, with a pytree prefix of
  shardings and global shapes).

  Raises:
    ValueError: a `global_shape` other than the data's own shape (with one process the local
      data is the global array).
  """
  leaves, treedef = tree_util.tree_flatten(local_data)
  if global_shape is None:
    shapes = [None] * len(leaves)
  else:
    shapes = treedef.flatten_up_to(
        tree_util.tree_map(lambda _: global_shape, local_data)
        if isinstance(global_shape, tuple) else global_shape)
  for shape, leaf in zip(shapes, leaves, strict=True):
    if shape is not None and tuple(shape) != tuple(np.shape(leaf)):
      raise ValueError(f"make_array_from_process_local_data on a single process: global_shape "
                       f"must be None or equal to local_data.shape, got global_shape={shape} "
                       f"and local_data.shape={np.shape(leaf)}")
  return device_put(local_data, sharding)


def reshard(xs, out_shardings):
  """Place `xs` (a pytree) as `out_shardings` (shardings, or a pytree prefix of them) say: on
  Arrays, `device_put`; on traced values inside `jit`, `with_sharding_constraint`.

  Raises:
    ValueError: a bare PartitionSpec and no mesh set with `revax.set_mesh`.
  """
  out_shardings = resolve_specs(out_shardings, "reshard")
  like = next((getattr(getattr(leaf, "sharding", None), "mesh", None)
               for leaf in tree_util.tree_leaves(xs)
               if isinstance(getattr(leaf, "sharding", None), NamedSharding)), None)
  if like is None:  # (traced values: the mesh of their types)
    like = next((leaf.aval.sharding.mesh for leaf in tree_util.tree_leaves(xs)
                 if isinstance(leaf, Tracer) and getattr(leaf.aval, "sharding", None)), None)

  def check(s):
    if not isinstance(s, NamedSharding):
      raise TypeError("`out_sharding` argument of reshard only supports instances of "
                      f"`NamedSharding` or `PartitionSpec`. Got {s} of type: {type(s)}")
    return concrete_sharding(s, "reshard", like)
  out_shardings = tree_util.tree_map(check, out_shardings)
  leaves = tree_util.tree_leaves(xs)
  if any(isinstance(leaf, Tracer) for leaf in leaves):
    return sharding_constraint.with_sharding_constraint(xs, out_shardings)
  if any(map(_unreduced, leaves)):  # partial values to add up: on the devices, not the host
    per_leaf = tree_util.tree_broadcast(out_shardings, xs)
    return tree_util.tree_map(_reshard_on_devices, xs, per_leaf)
  return device_put(xs, out_shardings)


def _unreduced(x) -> bool:
  return bool(getattr(getattr(getattr(x, "sharding", None), "spec", None), "unreduced", None))


def _reshard_on_devices(x, sharding):
  """`x` resharded by a program over its mesh (the sum of the partial values of an unreduced
  array is an all-reduce there); device_put for the others."""
  if not _unreduced(x):
    return device_put(x, sharding)
  have, want = x.sharding.spec.unreduced, sharding.spec.unreduced
  if want - have:  # (Shardy aborts the process on it; jax 0.10.2 with it)
    raise NotImplementedError(f"reshard of an array unreduced over {set(have)} to one unreduced "
                              f"over {set(want)}: reshard it to a spec without unreduced axes "
                              "first")
  out = sharded_eager.apply_primitive(sharding_constraint.sharding_constraint_p, [x],
                                      {"sharding": sharding})
  if out is None:
    raise NotImplementedError(f"reshard of an unreduced array to {sharding}: its mesh differs")
  return out


def _mesh_with_axes(axes, kind, api: str, shardings=None):
  """(the mesh to use, the abstract mesh with `axes` made `kind`, axes) for auto_axes /
  explicit_axes: the mesh in context, or the one the shardings name; None when neither is."""
  from revax._src.core import mesh_context
  from revax._src.sharding import AxisType
  named = [s.mesh for s in tree_util.tree_leaves(shardings) if isinstance(s, NamedSharding)]
  current = mesh_context.concrete_mesh()
  if named and current is not None and named[0] != current:
    raise ValueError(f"Context mesh {current} must match the mesh passed to shardings "
                     f"{named[0]}. Use the `revax.set_mesh` context manager.")
  mesh = current if current is not None else (named[0] if named else None)
  if mesh is None:
    return None
  axes = mesh.axis_names if axes is None else (axes if isinstance(axes, tuple) else (axes,))
  for a in axes:
    if a not in mesh.axis_names:
      raise ValueError(f"{api}: {a!r} is not an axis of the mesh {mesh}")
    if mesh.axis_types[mesh.axis_names.index(a)] is AxisType.Manual:
      raise NotImplementedError("Going from `Manual` AxisType to `Auto` or `Explicit` AxisType "
                                "is not allowed")
  abstract = mesh.abstract_mesh.update_axis_types({a: kind for a in axes})
  return mesh, abstract, axes


def _required_keyword(kwargs, name: str, given):
  """`given` (from the decorator), else the call's keyword `name` (taken out of `kwargs`).

  Raises:
    TypeError: neither gives it (JAX's error)."""
  value = kwargs.pop(name) if given is None and name in kwargs else given
  if value is None:
    raise TypeError(f"Missing required keyword argument: '{name}'")
  return value


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """Run `f` with the mesh axes `axes` (default: all) Auto, then lay its outputs out as
  `out_sharding` (given here or as an `out_sharding=` keyword of the call).

  Raises:
    TypeError: no out_sharding given.
  """
  if f is None:
    return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

  @wrapping.wraps(f)
  def wrapped(*args, **kwargs):
    out_s = _required_keyword(kwargs, "out_sharding", out_sharding)
    info = _mesh_with_axes(axes, AxisType.Auto, "auto_axes", out_s)
    if info is None or set(info[0].abstract_mesh.auto_axes) == set(info[2]):
      return f(*args, **kwargs)  # (JAX's rule: nothing to switch, so the outputs stay as made)
    cast_mesh = info[0].update(axis_types=info[1].axis_types)
    args, kwargs = tree_util.tree_map(lambda leaf: _cast_to(leaf, info[0], cast_mesh),
                                      (args, kwargs))
    with use_abstract_mesh(info[1]):
      out = f(*args, **kwargs)
    return reshard(out, out_s)
  return wrapped


def _keep_layout(leaf, mesh):
  """An explicit_axes result back over the mesh in context (`mesh`), laid out as it was: a
  traced value as its type inside said, an Array as it is placed."""
  if isinstance(leaf, Tracer):
    s = getattr(leaf.aval, "sharding", None)
    if s is None:
      return leaf
    return sharding_constraint.with_sharding_constraint(leaf, NamedSharding(mesh, s.spec))
  s = getattr(leaf, "sharding", None)
  return reshard(leaf, s if isinstance(s, NamedSharding) else PartitionSpec())


def _cast_to(leaf, mesh, cast_mesh):
  """`leaf` seen over `cast_mesh` (`mesh` with other axis types), as JAX's mesh_cast: an
  Array over `mesh` keeps its layout (`x.sharding` still says how it is split) while its type
  forgets the axes that are no longer Explicit; a traced value is constrained so."""
  if isinstance(leaf, Tracer):
    s = getattr(leaf.aval, "sharding", None)
    if s is None:
      return leaf
    return sharding_constraint.with_sharding_constraint(
        leaf, NamedSharding(cast_mesh, s.spec))
  s = getattr(leaf, "sharding", None) if isinstance(leaf, Array) else None
  if not isinstance(s, NamedSharding) or s.mesh != mesh:
    return leaf
  if type(leaf) is rt.ShardedArray:
    return commit(rt.ShardedArray(leaf.aval.update(sharding=None), NamedSharding(
        cast_mesh, s.spec, memory_kind=s.memory_kind), leaf._buffers, leaf._indices,
        npy=leaf._npy))
  return leaf


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """Lay the arguments out as `in_sharding` (given here or as an `in_sharding=` keyword of the
  call), then run `f` with the mesh axes `axes` (default: all) Explicit.

  Raises:
    TypeError: no in_sharding given.
    ValueError: no mesh is set with `revax.set_mesh`.
  """
  if f is None:
    return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

  @wrapping.wraps(f)
  def wrapped(*args, **kwargs):
    in_s = _required_keyword(kwargs, "in_sharding", in_sharding)
    info = _mesh_with_axes(axes, AxisType.Explicit, "explicit_axes")
    if info is None:
      raise ValueError("Context mesh cannot be empty. Please use `revax.set_mesh` to enter a "
                       "mesh context when using `explicit_axes`.")
    with use_abstract_mesh(info[1]):
      out = f(*reshard(args, in_s), **kwargs)
    # as in JAX, the results leave laid out over the mesh as they are
    return tree_util.tree_map(lambda leaf: _keep_layout(leaf, info[0]), out)
  return wrapped


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Place arrays (a pytree of them) on a device or as a sharding says.

  Args:
    x: an array or pytree of arrays.
    device: a Device, a sharding (NamedSharding, SingleDeviceSharding), a PartitionSpec (over
      the mesh set with `revax.set_mesh`), or a pytree prefix of `x` of those; None: the first
      device.
    src, donate, may_alias: accepted for compatibility.

  Returns:
    The placed arrays: one buffer per device for a sharding over several devices.

  Raises:
    ValueError: a device that is not the backend's, or a sharding the array's shape does not
      divide.
  """
  if not (device is None or isinstance(device, Device)):
    device = resolve_specs(device, "device_put")
  if _context.trace is not eval_trace:  # traced: the device_put primitive, as JAX's
    traced = _traced_put(x, device, src, donate, may_alias)
    if traced is not None:
      return traced
  del src, donate, may_alias
  if _is_placement(device):
    return tree_util.tree_map(lambda leaf: _put_leaf(leaf, device), x)
  try:  # the device of each leaf (a structure mismatch is the caller's ValueError) ...
    leaf_devices = tree_util.tree_map(
        lambda d, sub: tree_util.tree_map(lambda _: _Placement(d), sub), device, x,
        is_leaf=_is_placement)
  except (ValueError, TypeError) as e:
    raise ValueError(f"device_put only accepts None, a revax Device (from revax.devices()), a "
                     f"sharding or a pytree prefix of the value of those; got {device!r} ({e})") \
        from None
  # ... then the placing, whose errors (a leaf that is not an array: TypeError) are its own
  return tree_util.tree_map(lambda leaf, p: _put_leaf(leaf, p.device), x, leaf_devices)


def _traced_put(x, device, src, donate, may_alias):
  """device_put_p of the leaves of `x` (inside a transformation), one device or sharding each;
  None where a leaf's sharding types values over Explicit mesh axes (those are placed by the
  sharding in types, as before) or the devices or source do not come one per leaf."""
  leaves, treedef = tree_util.tree_flatten(x)
  if _is_placement(device):
    devices = [device] * len(leaves)
  else:
    try:
      devices = tree_util.tree_leaves(tree_util.tree_map(
          lambda d, sub: tree_util.tree_map(lambda _: _Placement(d), sub), device, x,
          is_leaf=_is_placement))
    except (ValueError, TypeError):
      return None  # (the general path raises the caller's error)
    devices = [p.device for p in devices]
  if not (src is None or isinstance(src, Device) or is_sharding(src)):
    return None
  for d in devices:
    if isinstance(d, NamedSharding) and AxisType.Explicit in tuple(d.mesh.axis_types):
      return None
  copy = copy_semantics_of(donate, may_alias)
  outs = bind_device_put(leaves, devices, [src] * len(leaves), [copy] * len(leaves))
  return tree_util.tree_unflatten(treedef, outs)


def _is_placement(d) -> bool:
  """Whether `d` says where one leaf goes: None, a Device, a sharding or a memory space."""
  return d is None or isinstance(d, (Device, MemorySpace)) or is_sharding(d)


class _Placement:
  """A leaf's device in device_put's per-leaf map (a box, so a None device stays a leaf)."""
  __slots__ = ("device",)

  def __init__(self, device):
    self.device = device


def _put_leaf(leaf, device):
  if not _is_placement(device):
    raise ValueError(f"device_put only accepts None or a revax Device (from revax.devices()) or "
                     f"a sharding as its device, got {device!r} of type "
                     f"{type(device).__name__}")
  if isinstance(leaf, Tracer):
    return leaf
  if getattr(leaf, "dtype", None) == dtypes.float0:
    return leaf  # tangents of integers hold no data: they stay NumPy float0 arrays, as in JAX
  if isinstance(device, MemorySpace):  # the leaf's own device, in that memory (committed)
    if type(leaf) is rt.ShardedArray:
      raise NotImplementedError("device_put of an array over several devices to a memory space: "
                                "revax places one-device arrays in other memories only")
    arr = dispatch.to_array(leaf)
    out = in_memory(arr, mem_space_to_kind(device))
    if getattr(arr, "_mesh_sharding", None) is not None:
      return rt.mark(out, arr._mesh_sharding)
    return commit(out)
  if is_sharding(device):
    if isinstance(device, NamedSharding) and not device._is_concrete:
      device.is_fully_addressable  # an AbstractMesh: no devices to place on (jax's ValueError)
    return place(leaf, device)
  arr = dispatch.to_array(leaf)
  buf = arr._device_buffer(device)
  out = Array(arr.aval, npy=arr._npy, buf=buf)
  if buf is arr._buf:
    keep_memory_kind(arr, out)
  if device is None and getattr(arr, "_mesh_sharding", None) is not None:
    return rt.mark(out, arr._mesh_sharding)  # device_put(x) keeps x's mesh of one device
  # committed to a device named; device_put(x) keeps x's commitment (as in JAX)
  return commit(out) if device is not None or arr.committed else out


def make_array_from_callback(shape, sharding, data_callback, dtype=None) -> Array:
  """A global array of `shape` whose block on each device is `data_callback(index)`.

  Args:
    shape: the global shape.
    sharding: where the blocks go.
    data_callback: called with each device's tuple of slices; returns that block.
    dtype: the array's dtype (default: the blocks').

  Returns:
    The sharded Array.
  """
  shape = tuple(int(n) for n in shape)
  if not is_sharding(sharding):
    raise TypeError(f"make_array_from_callback expects a sharding, got {sharding!r}")
  devices, indices = sharding._device_list, sharding._indices(shape)
  blocks = [np.asarray(data_callback(ix)) for ix in indices]
  return _from_blocks(shape, sharding, devices, indices, blocks, dtype,
                      "make_array_from_callback")


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None) -> Array:
  """A global array from one single-device Array per device of `sharding`, each already the
  block that device holds (in any order; each must be on its device with the block's shape).

  Raises:
    ValueError: a missing or extra device, a block of the wrong shape or dtype.
  """
  shape = tuple(int(n) for n in shape)
  if not is_sharding(sharding):
    raise TypeError(f"make_array_from_single_device_arrays expects a sharding, got {sharding!r}")
  devices, indices = sharding._device_list, sharding._indices(shape)
  arrays = list(arrays)
  if len(arrays) != len(devices):
    raise ValueError(f"make_array_from_single_device_arrays: the sharding has {len(devices)} "
                     f"devices but {len(arrays)} arrays were given")
  by_device = {}
  for a in arrays:
    if not isinstance(a, Array) or type(a) is rt.ShardedArray:
      raise ValueError(f"make_array_from_single_device_arrays expects single-device revax "
                       f"Arrays, got {type(a).__name__}")
    by_device[a.device] = a
  missing = [d for d in devices if d not in by_device]
  if missing:
    raise ValueError(f"make_array_from_single_device_arrays: no array on devices {missing}")
  dtype = np.dtype(dtype) if dtype is not None else arrays[0].dtype
  expect = sharding.shard_shape(shape)
  bufs = []
  for d, ix in zip(devices, indices, strict=True):
    a = by_device[d]
    buf = a._device_buffer(d)
    rt.check_shard(buf, d, expect, dtype, "make_array_from_single_device_arrays")
    bufs.append(buf)
  aval = ShapedArray(shape, dtypes.canonicalize_dtype(dtype))
  if len(devices) == 1:
    return _one_device(Array(aval, buf=bufs[0]), sharding)
  return rt.ShardedArray(aval, sharding, bufs, indices)


def _from_blocks(shape, sharding, devices, indices, blocks, dtype, where):
  dtype = dtypes.canonicalize_dtype(np.dtype(dtype) if dtype is not None else blocks[0].dtype)
  backend = get_backend()
  bufs = []
  for d, ix, b in zip(devices, indices, blocks, strict=True):
    want = block_shape(ix, shape)
    if b.shape != want:
      raise ValueError(f"{where}: the block for {d} (index {ix}) has shape {b.shape}, expected "
                       f"{want}")
    bufs.append(backend.buffer_from_numpy(np.asarray(b, dtype=dtype), d))
  aval = ShapedArray(shape, dtype)
  if len(devices) == 1:
    return _one_device(Array(aval, buf=bufs[0]), sharding)
  return rt.ShardedArray(aval, sharding, bufs, indices)


# --- the sharding properties of single-device Arrays ----------------------------------------------
def _single_sharding(self):
  marked = getattr(self, "_mesh_sharding", None)  # placed by a 1-device mesh's NamedSharding
  if marked is not None:
    kind = self.memory_kind()
    return marked if marked.memory_kind == kind else marked.with_memory_kind(kind)
  if self.aval.memory_space is _DEVICE and getattr(self, "_mem_kind", None) is None:
    return SingleDeviceSharding(self.device)  # (the common case, kept cheap)
  return SingleDeviceSharding(self.device, memory_kind=self.memory_kind())


def _single_shards(self):
  index = tuple(slice(None) for _ in self.shape)
  return [rt.Shard(self.device, index, rt.unmarked(self))]  # a shard's data is a plain Array


def _to_device(self, device, *, stream=None):
  """A copy of the array committed to `device` (a Device or a sharding), as
  `device_put(x, device)` makes; `stream` is not implemented (JAX raises NotImplementedError for
  any stream too)."""
  if stream is not None:
    raise NotImplementedError("stream argument of array.to_device()")
  if isinstance(self, Array) and self.is_deleted():
    raise self._deleted_error()
  return device_put(self, device)


def _format(self):
  """`x.format`, as JAX's: the array's layout with its sharding (no layout once deleted). revax
  keeps every array row-major without tiling, which is what XLA:CPU's default layout is; other
  backends tile their layouts, which revax does not read back.

  Raises:
    NotImplementedError: the array is on a backend other than the CPU.
  """
  from revax._src.layout import Format, Layout
  sharding = self.sharding
  if self.is_deleted():
    return Format(None, sharding)
  platforms = {d.platform for d in sharding.device_set}
  if platforms != {"cpu"}:
    raise NotImplementedError(f"Array.format on {', '.join(sorted(platforms))}: revax reads no "
                              "device layouts back from that backend (its layouts are tiled)")
  return Format(Layout(tuple(range(self.ndim)), tiling=()), sharding)


Array.to_device = _to_device
Array.format = property(_format)
Tracer.to_device = _to_device  # device_put of a traced value is the value, as in JAX
Array.sharding = property(_single_sharding)
Array.addressable_shards = property(_single_shards)
Array.global_shards = property(_single_shards)
Array.is_fully_addressable = True
Array.is_fully_replicated = True

sharding_constraint.eager_place = place
creation.device_put = device_put

