"""Meshes and partition specs: JAX's names for how an array's dimensions map onto devices.

`Mesh(devices, axis_names)` arranges devices in an n-d grid with named axes; `make_mesh(shape,
names)` builds one over the first devices. `PartitionSpec` (also `P`) says, per array dimension,
which mesh axes it is split over (None: not split; a tuple of names: split over several axes,
the first major). `NamedSharding(mesh, spec)` pairs the two; `SingleDeviceSharding(device)` is
an array on one device. A sharding answers which block of a global array each of its devices
holds (`devices_indices_map`, `shard_shape`); `device_put`, jit and shard_map use that to place
shards (sharded_api.py, sharded_jit.py).
"""
from __future__ import annotations

import collections
import enum
import math

import numpy as np

from revax._src.core import mesh_context
from revax._src.runtime import memories

__all__ = ["Mesh", "AbstractMesh", "AbstractDevice", "AxisType", "PartitionSpec", "P", "Sharding",
           "NamedSharding", "SingleDeviceSharding", "make_mesh", "DuplicateSpecError"]


class AxisType(enum.Enum):
  """How a mesh axis is partitioned (JAX's three kinds).

  Auto: XLA's partitioner chooses how values are split over the axis. Explicit: shardings over
  the axis are part of the program's types (revax runs these as Auto: the same values, with
  the layout XLA's propagation picks; see docs). Manual: inside shard_map, each member sees its
  own block."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self):
    return self.name


def _axis_types(axis_types, names: tuple) -> tuple:
  """Mesh axis types normalised as JAX does: None -> all Auto; one AxisType -> a 1-tuple."""
  if axis_types is None:
    return (AxisType.Auto,) * len(names)
  types = (axis_types,) if isinstance(axis_types, AxisType) else tuple(axis_types)
  if not all(isinstance(t, AxisType) for t in types):
    raise TypeError(f"axis_types passed to Mesh must be of type `revax.sharding.AxisType`. Got "
                    f"{types} of type {tuple(type(t) for t in types)}")
  if len(types) != len(names):
    raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                     f"axis_names={names} and axis_types={types}")
  return types


class _MeshAxes:
  """What meshes and abstract meshes share: axis names, sizes and types, and questions on them.
  Subclasses set `axis_names`, `axis_types` and define `axis_sizes`."""

  @property
  def shape(self) -> collections.OrderedDict:
    """{axis name: size}, in mesh order (an OrderedDict, as JAX's)."""
    return collections.OrderedDict(zip(self.axis_names, self.axis_sizes, strict=True))

  @property
  def shape_tuple(self) -> tuple:
    return tuple(zip(self.axis_names, self.axis_sizes, strict=True))

  @property
  def size(self) -> int:
    return math.prod(self.axis_sizes)

  @property
  def empty(self) -> bool:
    return not self.axis_names

  def _of_type(self, kind) -> tuple:
    return tuple(n for n, t in zip(self.axis_names, self.axis_types, strict=True) if t is kind)

  explicit_axes = property(lambda self: self._of_type(AxisType.Explicit))
  auto_axes = property(lambda self: self._of_type(AxisType.Auto))
  manual_axes = property(lambda self: self._of_type(AxisType.Manual))
  are_all_axes_auto = property(lambda self: len(self.auto_axes) == len(self.axis_names))
  are_all_axes_explicit = property(lambda self: len(self.explicit_axes) == len(self.axis_names))
  are_all_axes_manual = property(lambda self: len(self.manual_axes) == len(self.axis_names))

  def _types_repr(self) -> str:
    return f"axis_types={self.axis_types!r}"


class DuplicateSpecError(ValueError):
  """A PartitionSpec that maps one mesh axis to two dimensions (JAX's error of that name)."""


class Sharding:
  """The base of every sharding (NamedSharding, SingleDeviceSharding, ...): how an array's
  blocks are laid out over devices. `devices_indices_map(shape)` gives each device's block."""

  @property
  def device_set(self) -> set:
    raise NotImplementedError

  @property
  def _device_assignment(self) -> tuple:
    """The devices in the sharding's order (JAX's name)."""
    return tuple(self._device_list)

  def devices_indices_map(self, global_shape) -> dict:
    raise NotImplementedError

  def addressable_devices_indices_map(self, global_shape) -> dict:
    """{addressable device: its block}; with one process, `devices_indices_map`."""
    return self.devices_indices_map(global_shape)

  def shard_shape(self, global_shape) -> tuple:
    raise NotImplementedError

  def is_equivalent_to(self, other, ndim: int) -> bool:
    """Whether the two place the same blocks of an array of rank `ndim` on the same devices
    (a NamedSharding over one device is equivalent to that device's SingleDeviceSharding)."""
    if not hasattr(type(other), "_indices") or not hasattr(type(other), "_device_list"):
      return False
    try:
      probe = (_probe_size(self) * _probe_size(other),) * ndim
      return (self._device_list == other._device_list
              and [_blocks(i) for i in self._indices(probe)]
              == [_blocks(i) for i in other._indices(probe)])
    except ValueError:
      return False


class Mesh(_MeshAxes):
  """Devices in an n-d grid with a name per grid axis.

  Args:
    devices: an array (or nested sequence) of devices; its shape is the mesh's shape.
    axis_names: one name per dimension of `devices`.
    axis_types: an AxisType per axis (or one for a 1-d mesh); None: all Auto.

  Example:
    >>> from revax.sharding import Mesh
    >>> mesh = Mesh(np.array(revax.devices()[:1]), ("data",))
    >>> mesh.shape
    OrderedDict([('data', 1)])
  """

  def __init__(self, devices, axis_names, axis_types=None):
    devices = np.asarray(devices, dtype=object)
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if devices.ndim != len(names):
      raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal the "
                       f"length of its second argument (`axis_names`), but got devices.ndim == "
                       f"{devices.ndim} and len(axis_names) == {len(names)}.")
    if len(set(names)) != len(names):
      raise ValueError(f"Mesh axis names must be unique, got {names}")
    flat = list(devices.flat) if names else []
    if len(set(map(id, flat))) != len(flat):
      raise ValueError("Mesh devices must be distinct")
    self.devices = devices
    self.axis_names = names
    self.axis_types = _axis_types(axis_types, names)
    self._abstract = None
    # (devices and names are fixed once made: jit's caches hash meshes on every call)
    self._hash = hash((names, devices.shape, tuple(d.id for d in flat), self.axis_types))

  @property
  def axis_sizes(self) -> tuple:
    return tuple(self.devices.shape) if self.axis_names else ()

  @property
  def abstract_mesh(self) -> "AbstractMesh":
    """The mesh without its devices: names, sizes and axis types."""
    if self._abstract is None:
      first = self.devices.flat[0] if self.axis_names else None
      kind = None if first is None else AbstractDevice(first.device_kind, None, first.platform)
      self._abstract = AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                                    abstract_device=kind)
    return self._abstract

  def update(self, devices=None, axis_names=None, axis_types=None) -> "Mesh":
    """A copy with the given fields replaced."""
    return Mesh(self.devices if devices is None else devices,
                self.axis_names if axis_names is None else axis_names,
                self.axis_types if axis_types is None else axis_types)

  @property
  def device_ids(self) -> np.ndarray:
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False

  def __eq__(self, other):
    return (isinstance(other, Mesh) and self.axis_names == other.axis_names
            and self.devices.shape == other.devices.shape
            and self.axis_types == other.axis_types
            and all(a is b or a == b for a, b in zip(self.devices.flat, other.devices.flat)))

  def __hash__(self):
    return self._hash

  def __str__(self):
    if self.empty:
      return "Mesh()"
    axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
    return f"Mesh({axes}, {self._types_repr()})"

  def __repr__(self):
    if self.empty:
      return "Mesh(axis_sizes=(), axis_names=())"
    return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"{self._types_repr()})")


class AbstractDevice:
  """What an abstract mesh knows of its devices: their kind, core count and platform."""
  __slots__ = ("device_kind", "num_cores", "platform")

  def __init__(self, device_kind: str, num_cores: int | None, platform: str):
    self.device_kind, self.num_cores, self.platform = device_kind, num_cores, platform

  def _key(self):
    return (self.device_kind, self.num_cores, self.platform)

  def __eq__(self, other):
    return isinstance(other, AbstractDevice) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return (f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, "
            f"platform={self.platform})")


class AbstractMesh(_MeshAxes):
  """A mesh's axis names, sizes and types without its devices: what traced code may ask of the
  mesh in context (`revax.sharding.get_abstract_mesh()`).

  Args:
    axis_sizes: one size per axis.
    axis_names: one name per axis.
    axis_types: an AxisType per axis (or one for a 1-d mesh); None: all Auto.
    abstract_device: an AbstractDevice (kind, cores, platform of the devices), when made from
      a Mesh.
  """

  def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
    self.axis_sizes = tuple(int(s) for s in axis_sizes)
    self.axis_names = tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"AbstractMesh: axis_sizes {self.axis_sizes} and axis_names "
                       f"{self.axis_names} differ in length")
    self.axis_types = _axis_types(axis_types, self.axis_names)
    self.abstract_device = abstract_device
    self._key = (self.axis_sizes, self.axis_names, self.axis_types, abstract_device)

  @property
  def abstract_mesh(self) -> "AbstractMesh":
    return self

  def update(self, axis_sizes=None, axis_names=None, axis_types=None) -> "AbstractMesh":
    """A copy with the given fields replaced."""
    return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                        self.axis_names if axis_names is None else axis_names,
                        self.axis_types if axis_types is None else axis_types,
                        abstract_device=self.abstract_device)

  def update_axis_types(self, name_to_type: dict) -> "AbstractMesh":
    """A copy with the types of the named axes replaced."""
    return self.update(axis_types=tuple(name_to_type.get(n, t) for n, t in
                                        zip(self.axis_names, self.axis_types, strict=True)))

  def __eq__(self, other):
    return isinstance(other, AbstractMesh) and self._key == other._key

  def __hash__(self):
    return hash(self._key)

  def __repr__(self):
    if self.empty:
      return "AbstractMesh((), axis_types=())"
    axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
    d = self.abstract_device
    kind = (f", device_kind={d.device_kind}, num_cores={d.num_cores}, platform={d.platform}"
            if d is not None else "")
    return f"AbstractMesh({axes}, {self._types_repr()}{kind})"


EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
  """A mesh of the given shape over the first `prod(axis_shapes)` devices.

  As in JAX, its axes are Explicit unless `axis_types` says otherwise.

  Raises:
    ValueError: fewer devices than the mesh needs, or shapes and names of different lengths.
  """
  from revax._src.runtime.client import get_backend
  shape = tuple(int(s) for s in axis_shapes)
  names = tuple(axis_names)
  if len(shape) != len(names):
    raise ValueError(f"make_mesh: axis_shapes {shape} and axis_names {names} differ in length")
  devices = list(get_backend().devices if devices is None else devices)
  need = math.prod(shape)
  if len(devices) < need:
    raise ValueError(f"Number of devices {len(devices)} must be >= the product of mesh_shape "
                     f"{shape}")
  grid = np.empty(need, dtype=object)
  for i, d in enumerate(devices[:need]):
    grid[i] = d
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(names)
  return Mesh(grid.reshape(shape), names, axis_types)


class UnconstrainedSingleton:
  """The type of `PartitionSpec.UNCONSTRAINED`: a dimension whose split is left to XLA."""
  __slots__ = ()

  def __repr__(self):
    return "UNCONSTRAINED"

  def __reduce__(self):
    return (_get_default_unconstrained, ())


def _canonical_part(p):
  """A spec entry as jax keeps it: a list or tuple of one axis is that axis, an empty one None."""
  if isinstance(p, (list, tuple)):
    p = tuple(p)
    if len(p) == 0:
      return None
    if len(p) == 1:
      return p[0]
  return p


def _get_default_unconstrained():
  return UNCONSTRAINED


UNCONSTRAINED = UnconstrainedSingleton()


def _check_unreduced(parts, unreduced, reduced):
  """jax's checks of a spec's unreduced and reduced axes."""
  if not reduced and not unreduced:
    return
  if None in unreduced:
    raise ValueError("unreduced cannot contain None. All elements in unreduced should refer to "
                     "the mesh axes.")
  if None in reduced:
    raise ValueError("reduced cannot contain None. All elements in reduced should refer to the "
                     "mesh axes.")
  if unreduced & reduced:
    raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. "
                     f"Got unreduced: {unreduced} and reduced: {reduced}")
  for part in parts:
    for a in (part if isinstance(part, tuple) else (part,)):
      for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
        if a in axes:
          raise ValueError(f"partitions cannot overlap with {what} axes passed to "
                           f"PartitionSpec. Got partitions: {parts} and {what} axes: {axes}")


def _axis_set(value, what: str) -> frozenset:
  if isinstance(value, frozenset):
    return value
  if not isinstance(value, set):
    raise TypeError(f"{what} argument of PartitionSpec should of type `frozenset` or `set`. "
                    f"Got type {value}")
  return frozenset(value)


class PartitionSpec:
  """Per array dimension: the mesh axis (or tuple of axes, major first) it is split over, or
  None. Trailing dimensions not listed are not split.

  `unreduced` names mesh axes over which the value is a sum of per-device partial values not
  yet added up (what a contraction over a split dimension leaves with `out_sharding=` saying
  so; `reshard` to a spec without them adds them up); `reduced` names axes over which it is
  whole on every device (and its cotangent will be unreduced there). As jax's, a spec with
  either cannot be indexed or iterated (use `.partitions`).

  Example:
    >>> from revax.sharding import PartitionSpec as P
    >>> P("data", None)  # rows split over the "data" axis, columns whole
    P('data', None)
    >>> P("data", unreduced={"model"})
    P('data', unreduced={'model'})
  """
  __slots__ = ("_parts", "unreduced", "reduced")
  # a dimension left open: with_sharding_constraint lets XLA choose its split (`{?}`); where a
  # sharding places values (device_put, jit arguments), it is not split (as None)
  UNCONSTRAINED = UNCONSTRAINED

  def __init__(self, *parts, unreduced=frozenset(), reduced=frozenset()):
    parts = tuple(map(_canonical_part, parts))
    unreduced, reduced = _axis_set(unreduced, "unreduced"), _axis_set(reduced, "reduced")
    _check_unreduced(parts, unreduced, reduced)
    self._parts, self.unreduced, self.reduced = parts, unreduced, reduced

  @property
  def partitions(self) -> tuple:
    """The entries, one per dimension."""
    return self._parts

  def __len__(self):
    return len(self._parts)

  def index(self, value) -> int:
    """The position of the first entry equal to `value` (as a tuple's index)."""
    return self._parts.index(_canonical_part(value))

  def count(self, value) -> int:
    """How many entries equal `value`."""
    return self._parts.count(_canonical_part(value))

  def _tuple_refused(self, other, where: str):
    for what in ("unreduced", "reduced"):
      if getattr(self, what):
        raise TypeError(f"other {other} cannot be of instance `tuple` when self {self} has "
                        f"{what} in `{where}` of PartitionSpec.")

  def __add__(self, other):
    if isinstance(other, PartitionSpec):
      return PartitionSpec(*self._parts, *other._parts,
                           unreduced={*self.unreduced, *other.unreduced},
                           reduced={*self.reduced, *other.reduced})
    if isinstance(other, tuple):
      self._tuple_refused(other, "__add__")
      return PartitionSpec(*self._parts, *other)
    raise NotImplementedError  # (jax's, for anything but a PartitionSpec or a tuple)

  def __radd__(self, other):
    if isinstance(other, tuple):
      self._tuple_refused(other, "__radd__")
      return PartitionSpec(*other, *self._parts)
    raise NotImplementedError

  def update(self, partitions=None, unreduced=None, reduced=None) -> "PartitionSpec":
    """A copy with its entries, unreduced or reduced axes replaced by those given."""
    return PartitionSpec(*(self._parts if partitions is None else partitions),
                         unreduced=self.unreduced if unreduced is None else unreduced,
                         reduced=self.reduced if reduced is None else reduced)

  def _refuse_positional(self, how: str):
    if self.unreduced or self.reduced:
      raise ValueError(f"Using {how} is dangerous when PartitionSpec has non-empty "
                       "unreduced/reduced set. Please use "
                       f"{'spec.partitions[...]' if how == 'pspec[...]' else '*spec.partitions'}")

  def __getitem__(self, i):
    self._refuse_positional("pspec[...]")
    return self._parts[i]

  def __iter__(self):
    self._refuse_positional("*pspec")
    return iter(self._parts)

  def axes_of(self, dim: int) -> tuple:
    """The mesh axes dimension `dim` is split over (major first), () when not split."""
    part = self._parts[dim] if dim < len(self._parts) else None
    if part is None or part is UNCONSTRAINED:
      return ()
    return part if isinstance(part, tuple) else (part,)

  def _key(self):
    parts = self._parts
    while parts and parts[-1] is None:
      parts = parts[:-1]
    return parts, self.unreduced, self.reduced

  def __eq__(self, other):
    if not isinstance(other, PartitionSpec):
      return NotImplemented
    return self._key() == other._key()

  def __hash__(self):
    key = self._key()
    return hash(key[0]) if not (key[1] or key[2]) else hash(key)

  def __repr__(self):
    inner = repr(self._parts)[1:-1]
    if not self.unreduced and not self.reduced:
      return f"P({inner})"
    sets = [f"{what}={set(axes)!r}" for what, axes in
            (("unreduced", self.unreduced), ("reduced", self.reduced)) if axes]
    inner = "" if not inner else f"{inner} " if inner.endswith(",") else f"{inner}, "
    return f"P({inner}{', '.join(sets)})"


P = PartitionSpec


class NamedSharding(Sharding):
  """An array split over `mesh` as `spec` says."""

  def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec(), *, memory_kind=None):
    if not isinstance(mesh, (Mesh, AbstractMesh)):
      raise TypeError(f"NamedSharding expects a Mesh or an AbstractMesh, got "
                      f"{type(mesh).__name__}")
    if not isinstance(spec, PartitionSpec):
      raise TypeError(f"NamedSharding expects a PartitionSpec, got {type(spec).__name__}")
    check_spec(spec, mesh, "NamedSharding")
    if isinstance(mesh, Mesh) and mesh.devices.size:  # a concrete mesh: a kind its devices have
      memory_kind = _checked_kind(mesh.devices.flat[0], memory_kind)
    self.mesh, self.spec, self.memory_kind = mesh, spec, memory_kind
    self._hash = hash((mesh, spec))
    self._index_cache: dict = {}  # shape -> the blocks of `_indices`

  @property
  def num_devices(self) -> int:
    return self.mesh.size

  def _concrete_mesh(self, what: str) -> Mesh:
    """The mesh, whose devices `what` needs.

    Raises:
      ValueError: the mesh is an AbstractMesh (as a type's sharding is; JAX's error)."""
    if isinstance(self.mesh, AbstractMesh):
      raise ValueError(f"{what} is not implemented for `revax.sharding.AbstractMesh`.")
    return self.mesh

  @property
  def device_set(self) -> set:
    return set(self._concrete_mesh("device_set").devices.flat)

  @property
  def is_fully_replicated(self) -> bool:
    return all(self.mesh.shape[a] == 1 for d in range(len(self.spec))
               for a in self.spec.axes_of(d))

  @property
  def _device_list(self) -> list:
    """The devices in mesh order (row-major): mesh position p is `_device_list[p]`."""
    return list(self._concrete_mesh("_device_assignment").devices.flat)

  @property
  def addressable_devices(self) -> set:
    return set(self._concrete_mesh("addressable_devices").devices.flat)

  @property
  def is_fully_addressable(self) -> bool:
    self._concrete_mesh("is_fully_addressable")
    return True

  @property
  def _is_concrete(self) -> bool:
    return not isinstance(self.mesh, AbstractMesh)

  def update(self, **kwargs) -> "NamedSharding":
    """A copy with `mesh`, `spec` (a PartitionSpec or a sequence of its entries) or
    `memory_kind` replaced.

    Example:
      >>> from revax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P
      >>> NamedSharding(AbstractMesh((2,), ("x",)), P("x")).update(spec=P())
      NamedSharding(mesh=AbstractMesh('x': 2, axis_types=(Auto,)), spec=P())
    """
    spec = kwargs.pop("spec", self.spec)
    if not isinstance(spec, PartitionSpec):
      spec = PartitionSpec(*spec)
    out = NamedSharding(kwargs.pop("mesh", self.mesh), spec,
                        memory_kind=kwargs.pop("memory_kind", self.memory_kind))
    if kwargs:
      raise TypeError(f"NamedSharding.update() got unexpected keyword arguments "
                      f"{sorted(kwargs)}")
    return out

  def with_memory_kind(self, kind: str) -> "NamedSharding":
    """A copy whose memory kind is `kind`."""
    return self.update(memory_kind=kind)

  def _indices(self, shape) -> list:
    """The block (a tuple of slices) each device of `_device_list` holds of an array of
    `shape`.

    Raises:
      ValueError: the spec has more entries than `shape` has dimensions, or a split dimension
        is not divisible by its number of shards.
    """
    shape = tuple(shape)
    cached = self._index_cache.get(shape)
    if cached is not None:
      return cached
    if len(self.spec) > len(shape):
      raise ValueError(f"One of device_put/jit/with_sharding_constraint got sharding {self!r}, "
                       f"which is only valid for values of rank at least {len(self.spec)}, but "
                       f"the value has shape {shape} (rank {len(shape)})")
    sizes = self.mesh.shape
    blocks = []
    for dim, n in enumerate(shape):
      count = math.prod(sizes[a] for a in self.spec.axes_of(dim))
      if n % count:
        raise ValueError(f"sharding {self!r} splits dimension {dim} of an array of shape {shape} "
                         f"into {count} shards, which does not divide its size {n}")
      blocks.append(n // count)
    out = []
    names = self.mesh.axis_names
    for coord in np.ndindex(*self.mesh.axis_sizes):
      where = dict(zip(names, coord, strict=True))
      index = []
      for dim, block in enumerate(blocks):
        k = 0
        for a in self.spec.axes_of(dim):
          k = k * sizes[a] + where[a]
        index.append(slice(k * block, (k + 1) * block) if block != shape[dim] else slice(None))
      out.append(tuple(index))
    if len(self._index_cache) < 64:
      self._index_cache[shape] = out
    return out

  def devices_indices_map(self, global_shape) -> dict:
    """{device: the tuple of slices of the global array it holds}."""
    return dict(zip(self._device_list, self._indices(global_shape), strict=True))

  def shard_shape(self, global_shape) -> tuple:
    """The shape of each device's block of an array of `global_shape`."""
    return block_shape(self._indices(global_shape)[0], global_shape)

  def is_equivalent_to(self, other, ndim: int) -> bool:
    if not hasattr(type(other), "_indices") or not hasattr(type(other), "_device_list"):
      return False
    if isinstance(self.mesh, AbstractMesh) and isinstance(getattr(other, "mesh", None),
                                                          AbstractMesh):
      # no devices to compare (as jax): the same blocks in the same mesh positions
      try:
        return (self.mesh.size == other.mesh.size
                and [_blocks(i) for i in self._indices(_probe(self, ndim))]
                == [_blocks(i) for i in other._indices(_probe(self, ndim))])
      except ValueError:
        return False
    return Sharding.is_equivalent_to(self, other, ndim)

  def __eq__(self, other):
    return isinstance(other, NamedSharding) and (self.mesh, self.spec) == (
        other.mesh, other.spec) and (self.memory_kind or "device") == (
            other.memory_kind or "device")

  def __hash__(self):
    return self._hash

  def __repr__(self):
    if isinstance(self.mesh, AbstractMesh):  # a type's sharding (JAX prints no memory kind)
      kind = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
      return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}{kind})"
    return (f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, "
            f"memory_kind={self.memory_kind or 'device'})")


class SingleDeviceSharding(Sharding):
  """An array whole on one device."""

  def __init__(self, device, *, memory_kind=None):
    self.device = device
    self.memory_kind = "device" if memory_kind is None else _checked_kind(device, memory_kind)

  @property
  def num_devices(self) -> int:
    return 1

  @property
  def device_set(self) -> set:
    return {self.device}

  is_fully_replicated = True
  is_fully_addressable = True

  def with_memory_kind(self, kind: str) -> "SingleDeviceSharding":
    """A copy whose memory kind is `kind`."""
    return SingleDeviceSharding(self.device, memory_kind=kind)

  @property
  def _device_list(self) -> list:
    return [self.device]

  addressable_devices = device_set

  def _indices(self, shape) -> list:
    return [tuple(slice(None) for _ in shape)]

  def devices_indices_map(self, global_shape) -> dict:
    return {self.device: self._indices(global_shape)[0]}

  def shard_shape(self, global_shape) -> tuple:
    return tuple(global_shape)

  def __eq__(self, other):
    return (isinstance(other, SingleDeviceSharding) and self.device == other.device
            and self.memory_kind == other.memory_kind)

  def __hash__(self):
    return hash(self.device) if self.memory_kind == "device" else hash(
        (self.device, self.memory_kind))

  def __repr__(self):
    return f"SingleDeviceSharding(device={self.device!r}, memory_kind={self.memory_kind})"


def _checked_kind(device, kind):
  """`kind` (a memory kind, or None: the device's default memory, "device"), checked against
  the memories `device` addresses.

  Raises:
    ValueError: the device has no memory of that kind (JAX's message).
  """
  if kind is None or kind == "device" or not hasattr(device, "addressable_memories"):
    return "device" if kind is None else kind
  memories.memory_of(device, kind)
  return kind


def check_spec(spec: PartitionSpec, mesh: Mesh, where: str) -> None:
  """ValueError for a spec naming an axis the mesh lacks, or one axis twice."""
  seen = []
  for dim in range(len(spec)):
    for axis in spec.axes_of(dim):
      if axis not in mesh.shape:
        raise ValueError(f"{where}: the spec {spec!r} refers to axis {axis!r}, which is not an "
                         f"axis of the mesh (axes {mesh.axis_names})")
      if axis in seen:
        raise DuplicateSpecError(f"{where}: the spec {spec!r} uses mesh axis {axis!r} more than once")
      seen.append(axis)
  for what, axes in (("Unreduced", spec.unreduced), ("Reduced", spec.reduced)):
    for axis in sorted(axes, key=str):
      if axis not in mesh.shape:
        raise ValueError(f"{what} axes {axis} is not found in mesh.axis_names="
                         f"{mesh.axis_names}. Got pspec={spec!r}")


def _probe_size(sharding) -> int:
  """A dimension size every split of `sharding` divides."""
  mesh = getattr(sharding, "mesh", None)
  return mesh.size if mesh is not None else max(len(sharding._device_list), 1)


def _probe(sharding, ndim: int) -> tuple:
  """A shape of rank `ndim` every spec of the sharding's mesh divides."""
  return (sharding.mesh.size,) * ndim


def _blocks(index) -> tuple:
  return tuple((s.start, s.stop) for s in index)


def block_shape(index, shape) -> tuple:
  """The shape of the block `index` (a tuple of slices) selects from an array of `shape`."""
  return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape, strict=True))


# --- the mesh in context (revax.set_mesh) -------------------------------------------------------
class set_mesh:
  """Set the mesh in context for this thread: as a global setter (`revax.set_mesh(mesh)`) or a
  `with` block that restores the previous one on exit. Under it, bare PartitionSpecs stand for
  NamedSharding(mesh, spec) wherever a sharding is asked for (device_put, jit's
  in_shardings/out_shardings, with_sharding_constraint, reshard, `out_sharding=`), and
  shard_map takes its mesh from it.

  Raises:
    ValueError: `mesh` is not a Mesh (or None), has Manual axes, or the call is inside a
      transformation (jit, grad, vmap, ...).

  Example:
    >>> from revax.sharding import PartitionSpec as P
    >>> mesh = revax.make_mesh((1,), ("x",))
    >>> with revax.set_mesh(mesh):
    ...   y = revax.device_put(jnp.arange(4.), P("x"))
    >>> y.sharding.spec
    P('x',)
  """
  __slots__ = ("_prev",)

  def __init__(self, mesh):
    from revax._src.core.trace import current_trace, eval_trace
    if mesh is not None and not isinstance(mesh, Mesh):
      raise ValueError(f"Expected mesh of type `revax.sharding.Mesh`. Got {type(mesh)}")
    if current_trace() is not eval_trace:
      raise ValueError("`set_mesh` can only be used outside of `revax.jit` (and of other "
                       "transformations)")
    if mesh is not None and mesh.manual_axes:
      raise ValueError(f"mesh {mesh} contains manual axes, which set_mesh does not allow: use "
                       "`revax.shard_map` to enter Manual mode instead")
    if mesh is not None and mesh.empty:
      mesh = None
    self._prev = mesh_context.swap(mesh, None if mesh is None else mesh.abstract_mesh)

  def __enter__(self):
    return None

  def __exit__(self, *exc):
    mesh_context.swap(*self._prev)
    return False


def get_mesh() -> Mesh:
  """The concrete mesh set by `set_mesh` (an empty Mesh when none is).

  Raises:
    ValueError: called inside a transformation (use `get_abstract_mesh` there).
  """
  from revax._src.core.trace import current_trace, eval_trace
  if current_trace() is not eval_trace:
    raise ValueError("`get_mesh` can only be used outside of `revax.jit`. Maybe you want "
                     "`revax.sharding.get_abstract_mesh()`?")
  mesh = mesh_context.concrete_mesh()
  return EMPTY_MESH if mesh is None else mesh


def get_abstract_mesh() -> AbstractMesh:
  """The abstract mesh in context (an empty AbstractMesh when none is); usable under jit."""
  mesh = mesh_context.abstract_mesh()
  return EMPTY_ABSTRACT_MESH if mesh is None else mesh


class use_abstract_mesh:
  """A `with` block in which `get_abstract_mesh()` is `mesh` (an AbstractMesh); the concrete
  mesh in context stays as it is."""
  __slots__ = ("_mesh", "_prev")

  def __init__(self, mesh):
    if not isinstance(mesh, AbstractMesh):
      raise ValueError(f"Expected mesh of type `revax.sharding.AbstractMesh`. Got type: "
                       f"{type(mesh)}")
    self._mesh = None if mesh.empty else mesh

  def __enter__(self):
    self._prev = mesh_context.swap(mesh_context.concrete_mesh(), self._mesh)

  def __exit__(self, *exc):
    mesh_context.swap(*self._prev)
    return False


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
  """The sharding of an array whole on `device`."""
  return SingleDeviceSharding(device, memory_kind=memory_kind)


def resolve_specs(tree, where: str, error=ValueError):
  """`tree` (a sharding, a PartitionSpec, None, or a pytree of them) with every bare
  PartitionSpec made NamedSharding(mesh in context, spec).

  Raises:
    ValueError (or `error`): a bare PartitionSpec and no mesh set.
  """
  from revax._src import tree_util
  if isinstance(tree, PartitionSpec):
    return mesh_context.resolve_spec(tree, where, error)
  if tree is None or isinstance(tree, Sharding):
    return tree
  return tree_util.tree_map(
      lambda s: mesh_context.resolve_spec(s, where, error) if isinstance(s, PartitionSpec) else s,
      tree, is_leaf=lambda s: isinstance(s, PartitionSpec))


def concrete_sharding(s, where: str, like=None):
  """`s` with an AbstractMesh (a type's sharding, `typeof(x).sharding`) made a NamedSharding
  over the concrete mesh with the same axes: the mesh in context, else `like` (the value's own
  mesh); any other `s` as it is.

  Raises:
    ValueError: no such concrete mesh is at hand."""
  if not isinstance(s, NamedSharding) or not isinstance(s.mesh, AbstractMesh):
    return s
  for mesh in (mesh_context.concrete_mesh(), like):
    if isinstance(mesh, Mesh) and (mesh.axis_names, mesh.axis_sizes) == (s.mesh.axis_names,
                                                                         s.mesh.axis_sizes):
      return NamedSharding(mesh.update(axis_types=s.mesh.axis_types), s.spec,
                           memory_kind=s.memory_kind)
  raise ValueError(f"{where} got {s!r}, whose mesh is abstract, and no mesh with its axes is "
                   "set: use `with revax.set_mesh(mesh):` around the call")


EMPTY_MESH = Mesh(np.empty((), dtype=object), ())
mesh_context.named_sharding = lambda mesh, spec: NamedSharding(mesh, spec)
mesh_context.spec_type = PartitionSpec
mesh_context.concrete = concrete_sharding
