"""Colocated Python (`jax.experimental.colocated_python`) for revax's single process.

JAX runs a colocated Python function in the Python process next to the CPU devices that hold
its array arguments (on Pathways, a remote host). revax runs one process, so those CPU devices
are its own and the function runs right here, as JAX itself does on a plain CPU backend: the
arguments are placed on the colocated CPU devices, the function is called, and its results are
returned as it made them.

`colocated_cpu_devices` maps devices (or a mesh) to their colocated CPU devices: CPU devices are
their own, other devices take the CPU backend's devices in order (JAX's fallback for a
platform without colocation ids). `colocated_python_class` (objects living next to the
devices) is not provided.
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src import tree_util
from revax._src.runtime.array import Array
from revax._src.sharding import Mesh

__all__ = ["DeviceList", "colocated_cpu_devices", "colocated_python",
           "colocated_python_class"]


class DeviceList:
  """An immutable sequence of devices (jaxlib's `DeviceList`, which colocated Python's
  serialization names): built from a tuple of devices, compared and hashed by them.

  Example:
    >>> from revax.experimental.colocated_python.serialization import DeviceList
    >>> DeviceList(tuple(revax.devices()[:1]))
    (CpuDevice(id=0),)
  """
  __slots__ = ("_devices",)

  def __init__(self, devices):
    if not isinstance(devices, tuple):
      raise TypeError(f"DeviceList expects a tuple of devices, got {type(devices).__name__}")
    self._devices = devices

  def __len__(self):
    return len(self._devices)

  def __getitem__(self, i):
    return self._devices[i]

  def __iter__(self):
    return iter(self._devices)

  def __eq__(self, other):
    return isinstance(other, DeviceList) and self._devices == other._devices

  def __hash__(self):
    return hash(self._devices)

  def __repr__(self):
    return repr(self._devices)

  @property
  def is_fully_addressable(self) -> bool:
    return True  # (one process: every device is its own)

  @property
  def addressable_device_list(self) -> "DeviceList":
    return self

  @property
  def process_indices(self) -> set:
    return {d.process_index for d in self._devices}

  @property
  def device_kind(self) -> str:
    return self._devices[0].device_kind

  @property
  def default_memory_kind(self) -> str:
    return self._devices[0].default_memory().kind

  @property
  def memory_kinds(self) -> tuple:
    return tuple(m.kind for m in self._devices[0].addressable_memories())


def colocated_cpu_devices(devices_or_mesh):
  """The CPU devices colocated with `devices_or_mesh` (a sequence of devices: a list, in
  order; a Mesh: a mesh of the same shape, names and axis types over them).

  Raises:
    ValueError: there are not enough CPU devices for the given accelerator devices.

  Example:
    >>> from revax.experimental.colocated_python import colocated_cpu_devices
    >>> colocated_cpu_devices(revax.devices()[:1])
    [CpuDevice(id=0)]
  """
  if isinstance(devices_or_mesh, Mesh):
    mesh = devices_or_mesh
    flat = colocated_cpu_devices(tuple(mesh.devices.flat))
    grid = np.empty(len(flat), dtype=object)
    for i, d in enumerate(flat):
      grid[i] = d
    return Mesh(grid.reshape(mesh.axis_sizes), mesh.axis_names, axis_types=mesh.axis_types)
  devices = tuple(devices_or_mesh)
  if all(d.platform == "cpu" for d in devices):
    return list(devices)
  from revax._src.sharded_api import devices as backend_devices
  try:
    cpus = list(backend_devices("cpu"))
  except RuntimeError:
    cpus = []
  out, taken = [], 0
  for d in devices:
    if d.platform == "cpu":
      out.append(d)
      continue
    if taken >= len(cpus):
      raise ValueError(f"Process {d.process_index} does not have enough local CPU devices")
    out.append(cpus[taken])
    taken += 1
  return out


class _ColocatedCallable:
  """`colocated_python(fun)`: call it, or `specialize` it first (devices for a function of no
  arrays; `in_specs` / `out_specs_fn` describe the arguments and results, as in JAX)."""

  def __init__(self, fun, devices=None, in_specs=None, out_specs_fn=None):
    self._fun, self._devices = fun, devices
    self._in_specs, self._out_specs_fn = in_specs, out_specs_fn
    functools.update_wrapper(self, fun, updated=())

  def specialize(self, in_specs=None, out_specs_fn=None, devices=None) -> "_ColocatedCallable":
    """A copy with the given argument structure, result-spec function or devices fixed.

    Raises:
      ValueError: a field that this callable already has specialized."""
    for name, new, old in (("in_specs", in_specs, self._in_specs),
                           ("out_specs_fn", out_specs_fn, self._out_specs_fn),
                           ("devices", devices, self._devices)):
      if new is not None and old is not None:
        raise ValueError(f"{name} already specified")
    return _ColocatedCallable(
        self._fun, self._devices if devices is None else tuple(devices),
        self._in_specs if in_specs is None else in_specs,
        self._out_specs_fn if out_specs_fn is None else out_specs_fn)

  def __call__(self, *args, **kwargs):
    leaves = tree_util.tree_leaves((args, kwargs))
    for x in leaves:
      if not isinstance(x, Array):  # (jax's type: it reads the argument's .dtype)
        raise AttributeError(f"colocated_python only supports revax Arrays as input and output, "
                             f"but got {type(x)}, which has no attribute 'dtype'")
    if not leaves and self._devices is None:
      raise ValueError("No devices found. colocated_python function without input arguments "
                       "must be first specialized with devices.")
    if any(d.platform != "cpu" for x in leaves for d in x.devices()):
      from revax._src.sharded_api import device_put
      cpu = {d: c for x in leaves for d, c in zip(
          x.devices(), colocated_cpu_devices(tuple(x.devices())), strict=True)}

      def to_cpu(x):
        if not isinstance(x, Array) or all(d.platform == "cpu" for d in x.devices()):
          return x
        return device_put(x, cpu[next(iter(x.devices()))])
      args, kwargs = tree_util.tree_map(to_cpu, (args, kwargs))
    out = self._fun(*args, **kwargs)
    for x in tree_util.tree_leaves(out):
      if not isinstance(x, Array):
        raise ValueError(f"colocated_python only supports jax.Array as input and output, but "
                         f"got {type(x)}.")
    return out


def colocated_python(fun):
  """`fun` as a colocated Python callable: called with arrays, it runs next to (here: in the
  process of) the CPU devices colocated with theirs, on the arguments placed there.

  Args:
    fun: a Python function of arrays (and pytrees of them).

  Returns:
    A callable with `specialize(in_specs=None, out_specs_fn=None, devices=None)`.

  Raises:
    ValueError (at call): no array arguments and no devices specialized, or a result that is
      not an Array; AttributeError (jax's type): an argument that is not an Array.

  Example:
    >>> from revax.experimental.colocated_python import colocated_python
    >>> colocated_python(lambda x: x * 2)(jnp.arange(3.0))
    Array([0., 2., 4.], dtype=float32)
  """
  return _ColocatedCallable(fun)


def colocated_python_class(cls):
  """JAX's colocated objects (a class whose instances live next to the devices they are
  called with) are not provided.

  Raises:
    NotImplementedError: always, naming the class."""
  raise NotImplementedError(f"revax.experimental.colocated_python.colocated_python_class "
                            f"({getattr(cls, '__name__', cls)}): revax does not provide "
                            "colocated Python objects")
