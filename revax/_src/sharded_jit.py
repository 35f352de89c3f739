"""jit over a mesh: in_shardings / out_shardings, shardings inferred from sharded arguments, and
programs partitioned by XLA (Shardy) to run on every device of the mesh at once.

A call of a jitted function that involves a mesh of several devices (an explicit in/out
sharding, a sharded argument, or a with_sharding_constraint in the program) is prepared here
from data jit.py hands down: the cache entry it traced, the dynamic arguments, the shardings
requested for them and the donated operands. The program is the one jit traces anyway (same
cache entry); it is lowered with a Shardy annotation on every argument and result
(spmd_program.py): the requested sharding, the argument's own sharding, or open (`{?}`) where
nothing was said, and compiled for the mesh's devices. The shardings XLA chose are read back
from the compiled program: arguments are cut to them (a sharded argument already laid out so
passes its buffers as they are), and results come back as sharded Arrays with the requested
sharding or, when none was requested, the compiled one. Where no mesh of several devices is
involved the one-device program runs (program_cache.py) and its results are laid out as the
shardings say.

Under a transformation (grad, vmap, an outer jit) the call is an ordinary jit call carrying its
shardings as params (jit_primitive.py): the shardings of the outer program decide, and the jit
equation's eager rule comes back here (`call_sharded`).
"""
from __future__ import annotations

from revax._src import tree_util
from revax._src.core.avals import get_aval
from typing import NamedTuple

from revax._src.core.config import config
from revax._src.interpreters import dispatch
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array
from revax._src.runtime.array import commit as _commit
from revax._src.runtime.client import get_backend
from revax._src.donation import mesh_donated
from revax._src.program_cache import program_for as one_device_program
from revax._src.sharded_place import is_sharding, place
from revax._src.sharding import (Mesh, NamedSharding, PartitionSpec, concrete_sharding,
                                 resolve_specs)
from revax._src.spmd_program import (SpmdProgram, constraint_meshes, program_for,
                                     same_device_order, same_devices_and_axes, typed_results)

__all__ = ["requested", "argument_shardings", "prepare", "PreparedCall", "run", "fast_key",
           "finish_actions", "call_sharded", "UNSPECIFIED"]


class _Unspecified:
  def __repr__(self):
    return "UnspecifiedValue"


UNSPECIFIED = _Unspecified()


# --- which sharding each argument / result gets ------------------------------------------------
def _leaf_shardings(spec, tree_value, what: str, n_leaves: int) -> list:
  """One sharding (or None) per leaf, from `spec`: UNSPECIFIED, one sharding for all, or a
  pytree prefix of `tree_value`."""
  if spec is UNSPECIFIED or spec is None:
    return [None] * n_leaves
  spec = resolve_specs(spec, f"jit {what}", RuntimeError)  # bare specs: over the set_mesh mesh
  if is_sharding(spec):
    return [_concrete(spec, what)] * n_leaves
  is_leaf = lambda s: s is None or is_sharding(s) or isinstance(s, PartitionSpec)
  try:
    flat = tree_util.prefix_leaves(spec, tree_value, is_leaf=is_leaf)
  except (ValueError, TypeError) as e:
    raise ValueError(f"jit {what} must be a sharding or a pytree prefix of the "
                     f"{'arguments' if what == 'in_shardings' else 'outputs'} with a sharding "
                     f"(or None) at each leaf: {e}") from None
  if len(flat) != n_leaves:
    raise ValueError(f"jit {what}: {len(flat)} shardings for {n_leaves} values")
  return [_concrete(s, what) for s in flat]


def _concrete(s, what: str):
  """`s`, with a sharding over an AbstractMesh made one over the mesh in context (as jax does
  for out_shardings; it refuses such in_shardings with a ValueError).

  Raises:
    ValueError: an abstract mesh's sharding in in_shardings, or in out_shardings with no
      mesh of its axes set."""
  if not isinstance(s, NamedSharding) or s._is_concrete:
    return s
  if what == "in_shardings":
    raise ValueError(f"jit in_shardings got {s!r}, whose mesh is abstract (it has no devices "
                     "to place the arguments on): pass a NamedSharding over a concrete Mesh")
  return concrete_sharding(s, f"jit {what}")


def _program_mesh(shardings, jaxpr) -> Mesh | None:
  """The one mesh of several devices the call uses, or None (an ordinary jit call)."""
  meshes = [s.mesh for s in shardings if isinstance(s, NamedSharding)]
  meshes += constraint_meshes(jaxpr.jaxpr, [])
  big = [m for m in meshes if m.size > 1]
  if not big:
    devices = {d for s in shardings if s is not None for d in s.device_set}
    if len(devices) > 1:
      raise ValueError(f"Received incompatible devices for jitted computation: the arguments "
                       f"and shardings name devices {sorted(devices, key=lambda d: d.id)} "
                       "without one mesh over them")
    return None
  mesh = big[0]
  for m in big[1:]:  # (or a mesh of the same devices with other axes: use_abstract_mesh)
    if not same_devices_and_axes(m, mesh) and not same_device_order(m, mesh):
      raise ValueError(f"Received incompatible devices for jitted computation: the shardings "
                       f"use different meshes {mesh!r} and {m!r}")
  for s in shardings:
    if s is None:
      continue
    if isinstance(s, NamedSharding) and s.mesh.size > 1:
      continue
    if s.device_set != mesh.device_set:
      raise ValueError(f"Received incompatible devices for jitted computation: {s!r} is not on "
                       f"the devices of the mesh {mesh!r}")
  return mesh


# --- the steps jit.py takes for a call over shardings ---------------------------------------------
def requested(in_shardings, out_shardings, entry, in_tree, leaves):
  """(per flat argument: the requested sharding or None, per result: the same), from jit's
  `in_shardings` / `out_shardings` for a call traced as `entry` on dynamic `leaves` of
  structure `in_tree`, checked against the arguments' shapes."""
  dyn_args = tree_util.tree_unflatten(in_tree, leaves)[0] if in_tree is not None else ()
  n_pos = len(tree_util.tree_leaves(dyn_args))
  if isinstance(in_shardings, list):  # (as jax: a list is taken for the tuple of arguments)
    in_shardings = tuple(in_shardings)
  explicit = _leaf_shardings(in_shardings, tuple(dyn_args), "in_shardings", n_pos)
  explicit += [None] * (len(leaves) - n_pos)  # keyword arguments: from the values
  for x, s in zip(leaves, explicit, strict=True):
    if s is not None:
      s._indices(x.aval.shape if isinstance(x, Array) else get_aval(x).shape)  # ValueError
  out_avals = entry.jaxpr.out_avals
  out_tree_value = tree_util.tree_unflatten(entry.out_tree, list(range(len(out_avals))))
  outs = _leaf_shardings(out_shardings, out_tree_value, "out_shardings", len(out_avals))
  for s, a in zip(outs, out_avals, strict=True):
    if s is not None:
      s._indices(a.shape)
  return explicit, outs


def argument_shardings(leaves, explicit, names) -> list:
  """Per dynamic argument, its sharding: the requested one (`explicit`, from `requested`) or
  else its own (a sharded Array's; None for others). `names` (a thunk naming the leaves) is for
  the error message.

  Raises:
    ValueError: a requested sharding that does not lay the argument out as it is."""
  arg_shardings = []
  for k, (x, s) in enumerate(zip(leaves, explicit, strict=True)):
    if s is not None and isinstance(x, Array):  # (JAX moves no array between memories here)
      have = x.sharding.memory_kind
      if (s.memory_kind or "device") != have:
        raise ValueError(f"Memory kinds passed to jax.jit does not match memory kind on the "
                         f"respective arg. Got jit memory kind: {s.memory_kind}, arg memory "
                         f"kind: {have} for arg type: {x.aval}")
    own = rt.own_sharding(x)
    if s is not None and own is not None and not _same_layout(s, own, x.aval.shape):
      raise ValueError(f"Sharding passed to jit does not match the sharding of argument {k} "
                       f"({names()[k] if k < len(names()) else k}): jit's in_shardings say "
                       f"{s!r}, the array is sharded as {own!r}")
    arg_shardings.append(s if s is not None else own)
  return arg_shardings


class PreparedCall(NamedTuple):
  """A jit call over shardings, ready to run: its operands (closed-over values first), the
  program over the mesh (None: the one-device program runs), the results' shardings, and the
  dynamic arguments' shardings (requested or their own)."""
  flat: list
  program: SpmdProgram | None
  out_shardings: list
  arg_shardings: list


def prepare(entry, leaves, arg_shardings, out_shardings, donated_operands) -> PreparedCall:
  """The call of `entry` (a trace_cache.Entry) on dynamic `leaves` laid out as
  `arg_shardings` (from `argument_shardings`), its results as `out_shardings` (None: XLA
  chooses), the flat operands `donated_operands` (from donation.donated_operands) donated."""
  const_shardings = [rt.own_sharding(c) for c in entry.consts]
  in_shardings = const_shardings + list(arg_shardings)
  out_shardings = typed_results(entry.jaxpr.out_avals, out_shardings, in_shardings)
  flat = list(entry.consts) + list(leaves)
  donated = mesh_donated(entry.jaxpr, donated_operands, in_shardings, out_shardings)
  program, out_shardings = _program_or_none(entry.jaxpr, entry.name, in_shardings,
                                            out_shardings, donated)
  return PreparedCall(flat, program, out_shardings, list(arg_shardings))


def _program_or_none(closed, name, in_shardings, out_shardings, donated=()):
  """(the SpmdProgram over the call's mesh, out_shardings) or (None, the out_shardings left to
  place after a single-device run) when no mesh of several devices is involved."""
  mesh = _program_mesh(list(in_shardings) + list(out_shardings), closed)
  if mesh is None:
    return None, _one_device_outs(in_shardings, out_shardings, closed)
  return (program_for(closed, name, mesh, list(in_shardings), list(out_shardings), donated),
          out_shardings)


def _one_device_outs(in_shardings, out_shardings, closed=None) -> list:
  """The shardings of the results of a jit with shardings that runs on one device, as JAX gives
  them: a requested one as it is; else, when the first sharding among the arguments' (requested
  or their own) or failing that one a constraint in the program or another result names is a
  NamedSharding, P() over its mesh (for SingleDeviceSharding, None here: a plain single-device
  result)."""
  orig = next((s for s in in_shardings if s is not None), None)
  if orig is None:
    meshes = [m for m in constraint_meshes(closed.jaxpr, [])] if closed is not None else []
    meshes += [s.mesh for s in out_shardings if isinstance(s, NamedSharding)]
    orig = NamedSharding(meshes[0], PartitionSpec()) if meshes else None
  if not isinstance(orig, NamedSharding):
    return list(out_shardings)
  return [s if s is not None else NamedSharding(orig.mesh, PartitionSpec())
          for s in out_shardings]


def finish_actions(shardings):
  """Per result of a single-device program, what laying it out as `shardings` say takes: None
  (nothing), ("mark", s) (a NamedSharding over a 1-device mesh on the first device: recorded
  on the result), ("place", s) (a copy elsewhere); None when every result is left as it is."""
  first = get_backend().devices[0]
  actions = [None if s is None else ("place", s) if _names_memory(s)
             else ("mark", s) if s._device_list == [first] and isinstance(s, NamedSharding)
             else None if s._device_list == [first] else ("place", s)
             for s in shardings]
  return actions if any(actions) else None


def _names_memory(s) -> bool:
  """Whether sharding `s` puts a value in a memory other than the device's own."""
  return getattr(s, "memory_kind", None) not in (None, "device")


def result_kinds(actions) -> tuple | None:
  """Per result, the memory kind `finish_actions`'s shardings name where it is not the
  device's own (the program places the result there itself: `annotate_device_placement`, as
  JAX lowers out_shardings); None when none does."""
  if actions is None:
    return None
  kinds = tuple(a[1].memory_kind if a is not None and _names_memory(a[1]) else None
                for a in actions)
  return kinds if any(kinds) else None


def finish_one_device(outs, actions) -> list:
  """Results of a single-device program laid out as `finish_actions` says."""
  if actions is None:
    return outs
  done = []
  for o, act in zip(outs, actions, strict=True):
    if act is None or type(o) is not Array:
      done.append(o)
    elif act[0] == "mark":
      done.append(rt.mark(o, act[1]))
    elif _names_memory(act[1]):
      done.append(_typed_as_computed(place(o, act[1]), o.aval))
    else:
      done.append(place(o, act[1]))
  return done


def _typed_as_computed(x, aval):
  """`x` (placed in another memory by out_shardings) keeping the type the program computed,
  as JAX's jit results do (`typeof` reads `float32[4]` while `.sharding.memory_kind` is
  "pinned_host"): the memory is recorded beside the type."""
  if x.aval == aval:
    return x
  kind = x.memory_kind()
  out = Array(aval, npy=x._npy, buf=x._buf)
  out._mem_kind = kind
  marked = getattr(x, "_mesh_sharding", None)
  return rt.mark(out, marked) if marked is not None else _commit(out)


def call_sharded(closed, name, args, in_shardings, out_shardings):
  """The eager impl of a jit equation with shardings (or sharded operands): run over the mesh
  they name, an operand's own sharding standing in for an unspecified one."""
  n_in, n_out = len(closed.in_avals), len(closed.out_avals)
  ins = list(in_shardings) if in_shardings is not None else [None] * n_in
  outs = list(out_shardings) if out_shardings is not None else [None] * n_out
  ins = [s if s is not None else (x._sharding if type(x) is rt.ShardedArray else None)
         for x, s in zip(args, ins, strict=True)]
  program, outs = _program_or_none(closed, name, ins, outs)
  if program is None:
    actions = finish_actions(outs)
    return finish_one_device(one_device_program(
        closed, name, result_kinds=result_kinds(actions)).call_arrays(args), actions)
  dispatch.check_arg_avals(name, closed.in_avals,
                           [x.aval if isinstance(x, Array) else get_aval(x) for x in args])
  return program(list(args))


def _same_layout(a, b, shape) -> bool:
  if a == b:
    return True
  try:
    return (a._device_list == b._device_list
            and [rt._index_key(i, shape) for i in a._indices(shape)]
            == [rt._index_key(i, shape) for i in b._indices(shape)])
  except ValueError:
    return False


def fast_key(args):
  """(a key of the call on positional `args` for jit.py's per-function cache of prepared calls
  over shardings: the config epoch, the structure, each leaf's aval and sharding, and the
  leaves), or (None, None) when a leaf has no aval."""
  leaves, treedef = tree_util.tree_flatten(args)
  sig = []
  for x in leaves:
    if type(x) is rt.ShardedArray:
      sig.append((x.aval, x._sharding))
    elif type(x) is Array:
      marked = getattr(x, "_mesh_sharding", None)
      sig.append(x.aval if marked is None else (x.aval, marked))
    else:
      try:
        sig.append((get_aval(x), type(x)))
      except TypeError:
        return None, None
  return (config.trace_epoch, treedef, tuple(sig)), leaves


def run(entry, program, actions, flat):
  """The results (in `entry`'s output tree) of `program` (None: `entry`'s one-device program,
  its results laid out as `actions` from `finish_actions` say) on the operands `flat`."""
  if program is None:  # no mesh of several devices: the ordinary compiled program
    kinds = result_kinds(actions)
    if kinds is not None:  # results placed in other memories by the program itself
      outs = one_device_program(entry.jaxpr, entry.name, result_kinds=kinds).run_unchecked(flat)
      return _tree(entry, finish_one_device(outs, actions))
    if entry.program is None:
      entry.program = one_device_program(entry.jaxpr, entry.name)
    outs = entry.program.run_unchecked(flat)
    outs = finish_one_device(outs, actions)
  else:
    outs = program(flat)
  return _tree(entry, outs)


def _tree(entry, outs):
  return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)
