"""The mesh in context: what `revax.set_mesh(mesh)` sets, and what a bare PartitionSpec means.

JAX lets a program name a mesh once (`jax.set_mesh(mesh)`, as a global setter or a `with`
block) and then pass bare `PartitionSpec`s wherever a sharding is asked for (device_put, jit's
in/out shardings, with_sharding_constraint, reshard, shard_map's mesh, `out_sharding=`). The
context is thread-local, as JAX's: a concrete mesh (devices) and its abstract mesh (axis names,
sizes and types only; `use_abstract_mesh` sets that one alone).

The mesh and sharding classes live above this layer (revax/_src/sharding.py); this module holds
them as opaque objects, and sharding.py installs `named_sharding`, the constructor a bare spec
is resolved with, so lax-level code can resolve specs without importing upwards.
"""
from __future__ import annotations

import threading

__all__ = ["concrete_mesh", "abstract_mesh", "swap", "resolve_spec", "is_spec"]


class _State(threading.local):
  def __init__(self):
    self.mesh = None  # the concrete Mesh set by set_mesh, or None
    self.abstract = None  # its AbstractMesh (or one set by use_abstract_mesh), or None


_state = _State()

# Installed by revax._src.sharding: (mesh, spec) -> NamedSharding, the PartitionSpec type, and
# (sharding, where, like_mesh) -> the sharding over a concrete mesh (a type's sharding names an
# AbstractMesh; `concrete_sharding` there).
named_sharding = None
spec_type = None
concrete = None


def concrete_mesh():
  """The Mesh set by `set_mesh` in this thread, or None."""
  return _state.mesh


def abstract_mesh():
  """The AbstractMesh in context in this thread, or None."""
  return _state.abstract


# Called (then forgotten) the first time a concrete mesh is set: mesh_placement installs its
# hooks there, so that programs which never set a mesh pay nothing for them.
on_first_mesh: list = []
# Installed there too: fn(entry, leaves, out) -> a jit call's results placed over the mesh in
# context (as JAX places them under `set_mesh`); None until a mesh was set.
settle_jit = None


def swap(mesh, abstract) -> tuple:
  """Set the context's concrete and abstract mesh; returns the previous pair (to restore)."""
  prev = (_state.mesh, _state.abstract)
  if mesh is not None and on_first_mesh:
    for install in on_first_mesh:
      install()
    on_first_mesh.clear()
  _state.mesh, _state.abstract = mesh, abstract
  return prev


def is_spec(x) -> bool:
  return spec_type is not None and isinstance(x, spec_type)


def resolve_spec(spec, where: str, error=ValueError):
  """`spec` (a PartitionSpec) as a NamedSharding over the mesh in context.

  Raises:
    ValueError (or `error`: JAX raises RuntimeError from jit and with_sharding_constraint): no
      mesh is set.
  """
  mesh = _state.mesh
  if mesh is None:
    raise error(f"{where} got the PartitionSpec {spec!r} but no mesh is set: use "
                     "`with revax.set_mesh(mesh):` (or revax.set_mesh(mesh) as a global "
                     "setter) around the call, or pass NamedSharding(mesh, spec)")
  return named_sharding(concrete_for_abstract(mesh, _state.abstract), spec)


def concrete_for_abstract(mesh, abstract):
  """The concrete mesh that the abstract mesh in context (`use_abstract_mesh`) stands for:
  `mesh`'s devices laid out with `abstract`'s axis sizes, names and types (JAX lets a program
  change those under jit as long as the number of devices stays); `mesh` itself when `abstract`
  is its own abstract mesh or none is set."""
  if abstract is None:
    return mesh
  names, sizes = tuple(abstract.axis_names), tuple(abstract.axis_sizes)
  if (tuple(mesh.axis_names), tuple(mesh.axis_sizes)) == (names, sizes):
    if tuple(mesh.axis_types) == tuple(abstract.axis_types):
      return mesh
    return mesh.update(axis_types=abstract.axis_types)
  if mesh.devices.size != abstract.size:
    return mesh
  return mesh.update(devices=mesh.devices.reshape(sizes), axis_names=names,
                     axis_types=abstract.axis_types)
