"""Programs over a mesh: a jit jaxpr lowered with a Shardy annotation on every argument and
result (interpreters/sharding_lowering.py) and compiled for the mesh's devices, cached per
(jaxpr, mesh, shardings, donation). `SpmdProgram` reads back the shardings XLA chose, cuts its
arguments to them and returns sharded Arrays; `MeshProgram` is a program whose jaxpr names a mesh
(a shard_map, a sharding constraint) while nothing else in the call does.

This is the compile-and-run step of a jit call over a mesh (sharded_jit.py decides the shardings,
program_cache.py keeps one-device programs); it knows no jitted function.
"""
from __future__ import annotations

import threading
import weakref

from revax._src.core import sharding_types
from revax._src.core.avals import get_aval
from revax._src.core.errors import JaxRuntimeError
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from revax._src.interpreters import dispatch, sharding_lowering
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array
from revax._src.runtime.client import get_backend
from revax._src.sharded_place import GSPMDSharding, place
from revax._src.sharding import (Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding,
                                 block_shape)

__all__ = ["SpmdProgram", "MeshProgram", "program_for", "mesh_program", "names_mesh",
           "constraint_meshes", "typed_results", "same_device_order"]


def constraint_meshes(jaxpr: Jaxpr, out: list) -> list:
  """Meshes named by sharding constraints and shard_maps anywhere in `jaxpr` (sub-jaxprs
  included)."""
  for eqn in jaxpr.eqns:
    s = eqn.params.get("sharding") if eqn.primitive.name == "sharding_constraint" else None
    if isinstance(s, NamedSharding):
      out.append(s.mesh)
    if eqn.primitive.name == "jit":  # a jit call with its own shardings
      out += [s.mesh for s in eqn.params.get("in_shardings", ()) + eqn.params.get(
          "out_shardings", ()) if isinstance(s, NamedSharding)]
    if eqn.primitive.name == "shard_map" and isinstance(eqn.params.get("mesh"), Mesh):
      out.append(eqn.params["mesh"])
      continue  # the member program runs inside the region
    for v in eqn.params.values():
      for sub in (v if isinstance(v, (tuple, list)) else (v,)):
        if isinstance(sub, ClosedJaxpr):
          constraint_meshes(sub.jaxpr, out)
        elif isinstance(sub, Jaxpr):
          constraint_meshes(sub, out)
  return out


def _dims_of(sharding, mesh: Mesh, ndim: int):
  """The Shardy dims of a sharding over `mesh` (None: open)."""
  if sharding is None:
    return None
  if isinstance(sharding, NamedSharding):
    return sharding_lowering.spec_dims(sharding.spec, ndim)
  if isinstance(sharding, GSPMDSharding):
    return None
  return [()] * ndim  # SingleDeviceSharding over a 1-device mesh: whole


def _other_mesh(sharding, mesh: Mesh):
  """The mesh of `sharding` where it is a NamedSharding over another mesh (of the devices of
  the program's `mesh`: use_abstract_mesh to other axes), else None."""
  if (isinstance(sharding, NamedSharding) and sharding.mesh.size > 1
      and dict(sharding.mesh.shape) != dict(mesh.shape)):
    return sharding.mesh
  return None


def _to_named(indices, mesh: Mesh, shape) -> NamedSharding | None:
  """The NamedSharding over `mesh` whose blocks are `indices` (per mesh position), if any."""
  names = [a for a in mesh.axis_names if mesh.shape[a] > 1]
  ndim = len(shape)
  want = [rt._index_key(ix, shape) for ix in indices]
  best = None

  def search(k, parts):
    nonlocal best
    if best is not None:
      return
    if k == len(names):
      entries = [tuple(p) if p else None for p in parts]
      while entries and entries[-1] is None:  # P('x'), not P('x', None), as JAX prints it
        entries.pop()
      spec = PartitionSpec(*entries)
      try:
        got = [rt._index_key(ix, shape) for ix in NamedSharding(mesh, spec)._indices(shape)]
      except ValueError:
        return
      if got == want:
        best = NamedSharding(mesh, spec)
      return
    for d in [None] + list(range(ndim)):
      if d is None:
        search(k + 1, parts)
      else:
        for pos in range(len(parts[d]) + 1):
          new = [list(p) for p in parts]
          new[d].insert(pos, names[k])
          search(k + 1, new)

  search(0, [[] for _ in range(ndim)])
  return best


# --- compiled programs -------------------------------------------------------------------------
class SpmdProgram:
  """One jit program compiled for a mesh, with the blocks each device takes and gives."""

  def __init__(self, closed: ClosedJaxpr, name: str, mesh: Mesh, in_shardings, out_shardings,
               donated=()):
    backend = get_backend()
    self.mesh, self.name = mesh, name
    self.donated = tuple(donated)  # arguments the call consumes (deleted after it)
    self.devices = list(mesh.devices.flat)
    self.in_avals, self.out_avals = list(closed.in_avals), list(closed.out_avals)
    in_dims = [_dims_of(s, mesh, a.ndim) for s, a in zip(in_shardings, self.in_avals,
                                                          strict=True)]
    out_dims = [_dims_of(s, mesh, a.ndim) for s, a in zip(out_shardings, self.out_avals,
                                                           strict=True)]
    self.text = sharding_lowering.lower_sharded_module(
        closed, name, mesh.shape, in_dims, out_dims, backend.platform, self.donated,
        devices=self.devices, in_meshes=[_other_mesh(s, mesh) for s in in_shardings],
        out_meshes=[_other_mesh(s, mesh) for s in out_shardings])
    self.executable = rt.compile_spmd(backend, self.text, [d.id for d in self.devices])
    # A call returns once its work is queued, as JAX's do, unless the program calls a host or
    # FFI function (custom_call), which can fail while it runs: its error (a callback's
    # exception) is then raised by the call that ran it.
    self.wait = "stablehlo.custom_call" in self.text
    n = len(self.devices)
    params, results = rt.compiled_shardings(self.executable)
    if len(params) != len(self.in_avals):
      params = [{"type": "replicated"}] * len(self.in_avals) if not params else params
    self.in_indices = [rt.op_sharding_indices(p, a.shape, n) for p, a in
                       zip(params, self.in_avals, strict=True)]
    self.out_indices = [rt.op_sharding_indices(r, a.shape, n) for r, a in
                        zip(results, self.out_avals, strict=True)]
    self.in_shardings = [self._sharding(s, ix, a.shape) for s, ix, a in
                         zip(in_shardings, self.in_indices, self.in_avals, strict=True)]
    self.out_shardings = [self._sharding(s, ix, a.shape) for s, ix, a in
                          zip(out_shardings, self.out_indices, self.out_avals, strict=True)]
    # the results' types, as their shardings make them (ShardedArray need not redo it per call)
    self.out_avals = [sharding_types.of_placement(a, s)
                      for a, s in zip(self.out_avals, self.out_shardings, strict=True)]
    # Execute takes one argument list per device in the executable's order
    position = {d.id: p for p, d in enumerate(self.devices)}
    self.order = [position[d.id] for d in self.executable.devices]
    self.in_specs = [[(block_shape(ix[p], a.shape), a.dtype)
                      for ix, a in zip(self.in_indices, self.in_avals, strict=True)]
                     for p in self.order]

  def _sharding(self, requested, indices, shape):
    if requested is not None and not isinstance(requested, SingleDeviceSharding):
      got = [rt._index_key(ix, shape) for ix in requested._indices(shape)]
      if got == [rt._index_key(ix, shape) for ix in indices]:
        return requested
    named = _to_named(indices, self.mesh, shape)
    if named is not None:
      return named
    return GSPMDSharding(self.devices, {tuple(shape): indices})

  def __call__(self, args) -> list[Array]:
    per_position = [[] for _ in self.devices]
    as_is = []  # the arguments whose own buffers go in
    for a, s, aval in zip(args, self.in_shardings, self.in_avals, strict=True):
      if isinstance(a, Array) and a.is_deleted():
        raise a._deleted_error()
      if type(a) is rt.ShardedArray and (a._sharding is s or a._sharding == s):
        bufs = a._buffers  # already laid out as the program takes it (checked below)
        as_is.append(True)
      else:
        bufs = place(a, s, aval)._buffers
        as_is.append(False)
      for p, b in enumerate(bufs):
        per_position[p].append(b)
    if self.donated:
      self._check_donation(per_position)
    per_device = [per_position[p] for p in self.order]
    trusted = frozenset(k for k, same in enumerate(as_is) if same)
    outs = rt.run_spmd(self.executable, per_device, self.in_specs, trusted, self.wait)
    for k in self.donated:  # consumed by the call where XLA reused its buffers, as in JAX
      if as_is[k] and any(rt.consumed(b) for b in args[k]._buffers):
        args[k].delete()
    results = []
    for k, (aval, sharding, indices) in enumerate(zip(self.out_avals, self.out_shardings,
                                                      self.out_indices, strict=True)):
      bufs = [None] * len(self.devices)
      for p, per in zip(self.order, outs, strict=True):
        bufs[p] = per[k]
      results.append(rt.ShardedArray(aval, sharding, bufs, indices, typed=True))
    return results

  def _check_donation(self, per_position) -> None:
    """A donated buffer that is also another argument of the call: JAX's error, raised before
    any device starts (a buffer XLA refuses on some devices only would leave the others
    waiting in a collective)."""
    for bufs in per_position:
      ids = [id(b) for b in bufs]
      for k in self.donated:
        if ids.count(ids[k]) > 1:
          other = next(i for i, x in enumerate(ids) if x == ids[k] and i != k)
          raise JaxRuntimeError(
              f"INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the "
              f"same call to Execute() (flattened argument {max(k, other)}, first use: "
              f"{min(k, other)}). Toy example for this bug: `f(donate(a), a)`.")

  def memory_stats(self):
    return self.executable.memory_stats()


_programs: "weakref.WeakKeyDictionary[ClosedJaxpr, dict]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _sharding_key(s):
  return None if s is None else (type(s), s)


def program_for(closed, name, mesh, in_shardings, out_shardings, donated=()) -> SpmdProgram:
  """The `SpmdProgram` of `closed` over `mesh` with these per-operand / per-result shardings
  (None: open) and donated operands, compiled once and kept while `closed` lives."""
  key = (mesh, tuple(map(_sharding_key, in_shardings)), tuple(map(_sharding_key, out_shardings)),
         tuple(donated))
  per = _programs.get(closed)
  program = per.get(key) if per is not None else None
  if program is None:
    program = SpmdProgram(closed, name, mesh, in_shardings, out_shardings, donated)
    with _lock:
      program = _programs.setdefault(closed, {}).setdefault(key, program)
  return program


def typed_results(out_avals, out_shardings, in_shardings) -> list:
  """Over a mesh whose axes are all Explicit, a result with no requested sharding is laid out as
  its type says (unsplit: whole on every device), as in JAX; elsewhere XLA chooses."""
  mesh = next((s.mesh for s in in_shardings if isinstance(s, NamedSharding)), None)
  if (mesh is None or mesh.size == 1 or not mesh.axis_types
      or not all(t.name == "Explicit" for t in mesh.axis_types)):
    return out_shardings
  return [s if s is not None else
          a.sharding if a.sharding is not None and same_device_order(a.sharding.mesh, mesh) else
          NamedSharding(mesh, PartitionSpec())
          for s, a in zip(out_shardings, out_avals, strict=True)]


def same_device_order(m, mesh) -> bool:
  """Whether `m` is `mesh`, or a concrete mesh of its devices in the same order with other axes
  (the mesh of a `use_abstract_mesh` inside the program: JAX lets one program lay values out
  over both; the same devices in another order are "incompatible devices" there)."""
  return m == mesh or (isinstance(m, Mesh) and isinstance(mesh, Mesh) and m.size == mesh.size
                       and list(m.devices.flat) == list(mesh.devices.flat))


class MeshProgram:
  """A jit program with no sharded inputs or requested shardings that still names a mesh of
  several devices (a shard_map or a sharding constraint inside): compiled over that mesh, with
  every argument and result left for XLA to place. Has CompiledProgram's interface."""

  def __init__(self, closed: ClosedJaxpr, name: str, mesh: Mesh):
    self.in_avals, self.out_avals, self.name = list(closed.in_avals), list(closed.out_avals), name
    self._spmd = program_for(closed, name, mesh, [None] * len(self.in_avals),
                             [None] * len(self.out_avals))
    self.text = self._spmd.text

  def check_avals(self, avals) -> None:
    dispatch.check_arg_avals(self.name, self.in_avals, avals)

  def call_arrays(self, args):
    self.check_avals([a.aval if isinstance(a, Array) else get_aval(a) for a in args])
    return self._spmd(args)

  def run_unchecked(self, args):
    return self._spmd(args)

  def memory_stats(self):
    return self._spmd.memory_stats()


def same_devices_and_axes(m, mesh) -> bool:
  """Whether the meshes `m` and `mesh` differ at most in their axis types (which only say how
  types see an axis: a program over one serves shardings over the other)."""
  return m == mesh or (m.axis_names == mesh.axis_names and
                       m.update(axis_types=mesh.axis_types) == mesh)


def names_mesh(closed: ClosedJaxpr) -> bool:
  return any(m.size > 1 for m in constraint_meshes(closed.jaxpr, []))


def mesh_program(closed: ClosedJaxpr, name: str):
  """A MeshProgram when `closed` names a mesh of several devices, else None."""
  meshes = [m for m in constraint_meshes(closed.jaxpr, []) if m.size > 1]
  if not meshes:
    return None
  for m in meshes[1:]:
    if not same_devices_and_axes(m, meshes[0]):
      raise ValueError(f"Received incompatible devices for jitted computation: the program uses "
                       f"different meshes {meshes[0]!r} and {m!r}")
  return MeshProgram(closed, name, meshes[0])
