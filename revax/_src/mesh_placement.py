"""Arrays computed under `set_mesh(mesh)` live on the mesh, as JAX places them.

JAX runs every eager operation and every jit call made while a concrete mesh is in context over
all of that mesh's devices: its results are committed Arrays with `NamedSharding(mesh, spec)`,
replicated unless their types split them. The spec JAX reports depends on where the value's type
comes from: a value typed over the mesh (made by a creation primitive or by a broadcasting
operation of several operands, or computed from an operand on the mesh) reads `P(None, ...)`
(one entry per dimension) when the mesh has Explicit axes; one typed over no mesh (computed from
NumPy arrays and Python scalars only, or made by `jnp.array`) reads `P()`, as does every value
under a mesh whose axes are all Auto.

revax computes such values where it would without a mesh (on the host or one device) and then
places them here (the values are the same; only their placement follows JAX). The hooks
(`dispatch.mesh_settle`, `mesh_context.settle_jit`; `jnp.array` asks `active`) are installed the
first time a mesh is set, so programs that never set one keep their fast paths untouched.
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core import mesh_context, sharding_types
from revax._src.core.trace import _context, eval_trace
from revax._src.interpreters import dispatch
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array, commit
from revax._src.sharded_place import place
from revax._src.sharding import AxisType, NamedSharding, PartitionSpec

__all__ = ["settle", "settle_eager", "settle_jit", "CREATION"]

# primitives whose results JAX types over the mesh in context whatever their operands
CREATION = frozenset({"iota", "broadcast_in_dim", "rng_bit_generator", "rng_uniform",
                      "random_bits", "random_seed", "random_wrap"})


def _on_mesh(x, mesh) -> bool:
  """Whether `x` is an Array placed over `mesh` (a typed key: its data)."""
  x = getattr(x, "_data", x) if not isinstance(x, Array) else x
  if type(x) is rt.ShardedArray:
    s = x._sharding
    return isinstance(s, NamedSharding) and (s.mesh is mesh or s.mesh == mesh)
  s = getattr(x, "_mesh_sharding", None)  # an Array over a mesh of one device
  return s is not None and (s.mesh is mesh or s.mesh == mesh)


def _broadcasts(prim, noperands: int) -> bool:
  """Whether `prim` (with `noperands` operands) has JAX's broadcasting sharding rule over
  several operands, whose result JAX types over the mesh in context."""
  return noperands >= 2 and getattr(sharding_types.rules.get(prim), "broadcasting", False)


def _spec(mesh, ndim: int, over_mesh: bool) -> PartitionSpec:
  if over_mesh and any(t == AxisType.Explicit for t in mesh.axis_types):
    return PartitionSpec(*([None] * ndim))
  return PartitionSpec()


_shardings: dict = {}  # (mesh, ndim, over the mesh?) -> the NamedSharding JAX reports


def _sharding(mesh, ndim: int, over_mesh: bool) -> NamedSharding:
  key = (mesh, ndim, over_mesh)
  s = _shardings.get(key)
  if s is None:
    if len(_shardings) > 1024:
      _shardings.clear()
    s = _shardings[key] = NamedSharding(mesh, _spec(mesh, ndim, over_mesh))
  return s


def settle(x, mesh, over_mesh: bool, relabel: bool = True):
  """`x` (a result) placed over `mesh` as JAX places it (see the module's docstring): a
  one-device Array is copied to every device (committed), or over a mesh of one device marked
  with the mesh's sharding; an unsplit Array already over the mesh has its spec set as JAX
  reports it when `relabel`; anything else is returned as it is."""
  if not isinstance(x, Array):
    data = getattr(x, "_data", None)  # a typed key array: its data is placed
    if not isinstance(data, Array):
      return x
    # (JAX makes keys with its random_seed/random_wrap primitives: typed over the mesh)
    y = settle(data, mesh, True, relabel)
    return x if y is data else type(x)(y, x._impl)
  ndim = len(x.aval.shape)
  if type(x) is rt.ShardedArray:
    s = x._sharding
    if not relabel or not isinstance(s, NamedSharding) or not (s.mesh is mesh or s.mesh == mesh):
      return x
    if any(p is not None for p in s.spec.partitions):
      return x
    target = _sharding(mesh, ndim, over_mesh)
    if s.spec.partitions == target.spec.partitions:
      return x
    return rt.ShardedArray(x.aval, target, x._buffers, x._indices, npy=x._npy, typed=True)
  sharding = _sharding(mesh, ndim, over_mesh)
  marked = getattr(x, "_mesh_sharding", None)
  if marked is not None:  # (over a mesh of one device: relabelled as an unsplit mesh value)
    if not relabel or not (marked.mesh is mesh or marked.mesh == mesh) or \
        marked.spec.partitions == sharding.spec.partitions or any(
            p is not None for p in marked.spec.partitions):
      return x
    return rt.mark(Array(x.aval, x._npy, x._buf), sharding)
  if len(mesh.devices.flat) == 1 and x._buf is not None and x._buf.device == mesh.devices.flat[0]:
    # over a mesh of one device: the same buffer, reporting the mesh's sharding (a new Array
    # object: `x` may be held elsewhere, an argument returned as it came)
    return rt.mark(Array(x.aval, x._npy, x._buf), sharding)
  out = place(x, sharding, x.aval)
  return commit(out) if not getattr(out, "_committed", False) else out


def settle_eager(prim, args, params, out):
  """The results `out` of the eager primitive `prim` on `args`, placed over the mesh in
  context (if any)."""
  mesh = mesh_context._state.mesh
  if mesh is None:
    return out
  over = prim.name in CREATION or _broadcasts(prim, len(args)) or \
      any(_on_mesh(a, mesh) for a in args) or any(_creates(j) for j in _subjaxprs(params))
  if prim.multiple_results:
    return [settle(o, mesh, over) for o in out]
  return settle(out, mesh, over)


def settle_created(x):
  """`jnp.array`'s result placed over the mesh in context (typed over no mesh: `P()`);
  values already over a mesh stay as they are."""
  mesh = mesh_context._state.mesh
  if mesh is None or _context.trace is not eval_trace:
    return x
  return settle(x, mesh, False, relabel=False)


def _subjaxprs(params):
  for v in params.values():
    for j in (v if isinstance(v, (list, tuple)) else (v,)):
      inner = getattr(j, "jaxpr", j)
      if hasattr(inner, "eqns"):
        yield inner


def _creates(jaxpr) -> bool:
  """Whether `jaxpr` (or one nested in it) binds a creation primitive."""
  for eqn in jaxpr.eqns:
    if eqn.primitive.name in CREATION or any(_creates(j) for j in _subjaxprs(eqn.params)):
      return True
  return False


def over_mesh_outputs(jaxpr, inputs_over) -> list:
  """Per output of `jaxpr` (a Jaxpr), whether JAX types it over the mesh in context, given
  which inputs are (`inputs_over`, one bool per invar): outputs of creation primitives and of
  equations with an input over the mesh are."""
  over = {}
  for v, o in zip(jaxpr.invars, inputs_over, strict=True):
    over[id(v)] = o
  for eqn in jaxpr.eqns:
    o = eqn.primitive.name in CREATION or _broadcasts(eqn.primitive, len(eqn.invars)) or \
        any(over.get(id(v), False) for v in eqn.invars)
    if not o:
      o = any(_creates(j) for j in _subjaxprs(eqn.params))
    for v in eqn.outvars:
      over[id(v)] = o
  return [over.get(id(v), False) for v in jaxpr.outvars]


def settle_jit(entry, leaves, out):
  """The results `out` of a jit call (cache entry `entry`, flat dynamic arguments `leaves`)
  placed over the mesh in context."""
  mesh = mesh_context._state.mesh
  if mesh is None or entry is None:
    return out
  operands = list(entry.consts) + list(leaves)
  inner = entry.jaxpr.jaxpr
  if len(inner.invars) != len(operands):
    return out
  inputs = tuple(_on_mesh(x, mesh) for x in operands)
  key = (id(inner), inputs)
  hit = _flags.get(key)
  if hit is None or hit[0] is not inner:
    if len(_flags) > 4096:
      _flags.clear()
    hit = _flags[key] = (inner, over_mesh_outputs(inner, inputs))
  flags = hit[1]
  flat, tree = tree_util.tree_flatten(out)
  if len(flat) != len(flags):
    return out
  return tree_util.tree_unflatten(tree, [settle(x, mesh, f) for x, f in zip(flat, flags)])


# (id(jaxpr), which inputs are over the mesh) -> (the jaxpr, per output: over the mesh?)
_flags: dict = {}

active = False  # True once a mesh was set in this process (the hooks are then installed)


def _install() -> None:
  global active
  dispatch.mesh_settle = settle_eager
  mesh_context.settle_jit = settle_jit
  active = True


mesh_context.on_first_mesh.append(_install)
