"""jit over a mesh: in_shardings / out_shardings, shardings inferred from sharded arguments, and
programs partitioned by XLA (Shardy) to run on every device of the mesh at once.

A call of a jitted function that involves a mesh of several devices (an explicit in/out
sharding, a sharded argument, or a with_sharding_constraint in the program) comes here from
jit.py. The program is the one jit traces anyway (same cache entry); it is lowered with a Shardy
annotation on every argument and result (interpreters/sharding_lowering.py): the requested
sharding, the argument's own sharding, or open (`{?}`) where nothing was said, and compiled for
the mesh's devices. The shardings XLA chose are read back from the compiled program: arguments
are cut to them (a sharded argument already laid out so passes its buffers as they are), and
results come back as sharded Arrays with the requested sharding or, when none was requested,
the compiled one. Compiled programs are cached per (program, shardings).

Under a transformation (grad, vmap, an outer jit) the call is an ordinary jit call: the
shardings of the outer program decide.
"""
from __future__ import annotations

import threading
import warnings
import weakref

from revax._src import tree_util
from revax._src.core import sharding_types
from revax._src.core.avals import get_aval
from revax._src.core.config import config
from revax._src.core.errors import JaxRuntimeError
from revax._src.core.trace import Tracer, _context, eval_trace
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from revax._src.interpreters import dispatch, sharding_lowering
from revax._src.runtime import client as rt_client
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array
from revax._src.runtime.client import CompileError, get_backend
from revax._src.sharded_api import GSPMDSharding, is_sharding, place
from revax._src.sharding import (Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding,
                                 block_shape, resolve_specs)
from revax._src import stage_info as _stage_info
from revax._src.stage_info import Signature, StageAttributes
from revax._src import stages as _stages

__all__ = ["call", "lower", "SpmdProgram", "UNSPECIFIED"]


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
    return [spec] * n_leaves
  is_leaf = lambda s: s is None or is_sharding(s) or isinstance(s, PartitionSpec)
  try:
    out = tree_util.tree_leaves(tree_util.tree_map(
        lambda s, sub: [s] * len(tree_util.tree_leaves(sub)), spec, tree_value, is_leaf=is_leaf),
        is_leaf=lambda s: isinstance(s, list))
  except (ValueError, TypeError) as e:
    raise ValueError(f"jit {what} must be a sharding or a pytree prefix of the "
                     f"{'arguments' if what == 'in_shardings' else 'outputs'} with a sharding "
                     f"(or None) at each leaf: {e}") from None
  flat = [s for group in out for s in group]
  if len(flat) != n_leaves:
    raise ValueError(f"jit {what}: {len(flat)} shardings for {n_leaves} values")
  return flat


def _constraint_meshes(jaxpr: Jaxpr, out: list) -> list:
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
          _constraint_meshes(sub.jaxpr, out)
        elif isinstance(sub, Jaxpr):
          _constraint_meshes(sub, out)
  return out


def _program_mesh(shardings, jaxpr) -> Mesh | None:
  """The one mesh of several devices the call uses, or None (an ordinary jit call)."""
  meshes = [s.mesh for s in shardings if isinstance(s, NamedSharding)]
  meshes += _constraint_meshes(jaxpr.jaxpr, [])
  big = [m for m in meshes if m.size > 1]
  if not big:
    devices = {d for s in shardings if s is not None for d in s.device_set}
    if len(devices) > 1:
      raise ValueError(f"Received incompatible devices for jitted computation: the arguments "
                       f"and shardings name devices {sorted(devices, key=lambda d: d.id)} "
                       "without one mesh over them")
    return None
  mesh = big[0]
  for m in big[1:]:
    if m != mesh:
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


def _dims_of(sharding, mesh: Mesh, ndim: int):
  """The Shardy dims of a sharding over `mesh` (None: open)."""
  if sharding is None:
    return None
  if isinstance(sharding, NamedSharding):
    return sharding_lowering.spec_dims(sharding.spec, ndim)
  if isinstance(sharding, GSPMDSharding):
    return None
  return [()] * ndim  # SingleDeviceSharding over a 1-device mesh: whole


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
    self.text = sharding_lowering.lower_sharded_module(closed, name, mesh.shape, in_dims,
                                                       out_dims, backend.platform, self.donated)
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
  key = (mesh, tuple(map(_sharding_key, in_shardings)), tuple(map(_sharding_key, out_shardings)),
         tuple(donated))
  per = _programs.get(closed)
  program = per.get(key) if per is not None else None
  if program is None:
    program = SpmdProgram(closed, name, mesh, in_shardings, out_shardings, donated)
    with _lock:
      program = _programs.setdefault(closed, {}).setdefault(key, program)
  return program


# --- the entry points jit.py calls ----------------------------------------------------------------
def _requested(jitted, entry, key_head, leaves):
  """(per flat argument: the requested sharding or None, per result: the same), checked
  against the arguments' shapes."""
  dyn_args = tree_util.tree_unflatten(key_head[0], leaves)[0] if leaves else ()
  n_pos = len(tree_util.tree_leaves(dyn_args))
  explicit = _leaf_shardings(jitted._in_shardings, tuple(dyn_args), "in_shardings", n_pos)
  explicit += [None] * (len(leaves) - n_pos)  # keyword arguments: from the values
  for x, s in zip(leaves, explicit, strict=True):
    if s is not None:
      s._indices(x.aval.shape if isinstance(x, Array) else get_aval(x).shape)  # ValueError
  out_avals = entry.jaxpr.out_avals
  out_tree_value = tree_util.tree_unflatten(entry.out_tree, list(range(len(out_avals))))
  out_shardings = _leaf_shardings(jitted._out_shardings, out_tree_value, "out_shardings",
                                  len(out_avals))
  for s, a in zip(out_shardings, out_avals, strict=True):
    if s is not None:
      s._indices(a.shape)
  return explicit, out_shardings


def _typed_results(out_avals, out_shardings, in_shardings) -> list:
  """Over a mesh whose axes are all Explicit, a result with no requested sharding is laid out as
  its type says (unsplit: whole on every device), as in JAX; elsewhere XLA chooses."""
  mesh = next((s.mesh for s in in_shardings if isinstance(s, NamedSharding)), None)
  if (mesh is None or mesh.size == 1 or not mesh.axis_types
      or not all(t.name == "Explicit" for t in mesh.axis_types)):
    return out_shardings
  return [s if s is not None else
          a.sharding if a.sharding is not None and a.sharding.mesh == mesh else
          NamedSharding(mesh, PartitionSpec())
          for s, a in zip(out_shardings, out_avals, strict=True)]


def _prepare(jitted, args, kwargs):
  """(entry, flat arguments with consts first, SpmdProgram or None)."""
  leaves, key_head, call_fn, names = jitted._split(args, kwargs)
  entry = jitted._entry(leaves, key_head, call_fn, names)
  explicit, out_shardings = _requested(jitted, entry, key_head, leaves)
  arg_shardings = []
  for k, (x, s) in enumerate(zip(leaves, explicit, strict=True)):
    own = rt.own_sharding(x)
    if s is not None and own is not None and not _same_layout(s, own, x.aval.shape):
      raise ValueError(f"Sharding passed to jit does not match the sharding of argument {k} "
                       f"({names()[k] if k < len(names()) else k}): jit's in_shardings say "
                       f"{s!r}, the array is sharded as {own!r}")
    arg_shardings.append(s if s is not None else own)
  const_shardings = [rt.own_sharding(c) for c in entry.consts]
  out_shardings = _typed_results(entry.jaxpr.out_avals, out_shardings,
                                 const_shardings + arg_shardings)
  flat = list(entry.consts) + list(leaves)
  donated = _donated(jitted, args, entry, len(entry.consts), const_shardings + arg_shardings,
                     out_shardings)
  program, out_shardings = _program_or_none(entry.jaxpr, entry.name,
                                            const_shardings + arg_shardings, out_shardings,
                                            donated)
  return entry, flat, program, out_shardings, arg_shardings


def _donated(jitted, args, entry, offset: int, in_shardings, out_shardings) -> tuple:
  """The flat operands (consts first) of the call that `donate_argnums` gives up, as JAX
  decides: with a result whose sharding is left to XLA, every leaf of those arguments (XLA
  reuses what it can); with every result's sharding given, those a result of the same
  per-device shape and dtype can take the place of (each result takes one; a warning names
  the others)."""
  from revax._src.jit import donated_operands
  flagged = donated_operands(jitted, args, offset, len(entry.jaxpr.in_avals))
  if not flagged:
    return ()
  if any(s is None for s in out_shardings):
    return tuple(flagged)

  def local(aval, s):
    shape = aval.shape if s is None else s.shard_shape(aval.shape)
    return (tuple(shape), aval.dtype)
  free = [local(a, s) for a, s in zip(entry.jaxpr.out_avals, out_shardings, strict=True)]
  out, unused = [], []
  for k in flagged:
    key = local(entry.jaxpr.in_avals[k], in_shardings[k])
    if key in free:
      free.remove(key)
      out.append(k)
    else:
      unused.append(f"{key[1].name}[{','.join(map(str, key[0]))}]")
  if unused:
    warnings.warn(f"Some donated buffers were not usable: {', '.join(unused)}.")
  return tuple(out)


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
    meshes = [m for m in _constraint_meshes(closed.jaxpr, [])] if closed is not None else []
    meshes += [s.mesh for s in out_shardings if isinstance(s, NamedSharding)]
    orig = NamedSharding(meshes[0], PartitionSpec()) if meshes else None
  if not isinstance(orig, NamedSharding):
    return list(out_shardings)
  return [s if s is not None else NamedSharding(orig.mesh, PartitionSpec())
          for s in out_shardings]


def _finish_actions(shardings):
  """Per result of a single-device program, what laying it out as `shardings` say takes: None
  (nothing), ("mark", s) (a NamedSharding over a 1-device mesh on the first device: recorded
  on the result), ("place", s) (a copy elsewhere); None when every result is left as it is."""
  first = get_backend().devices[0]
  actions = [None if s is None else ("mark", s) if s._device_list == [first] and isinstance(
      s, NamedSharding) else None if s._device_list == [first] else ("place", s)
             for s in shardings]
  return actions if any(actions) else None


def _finish_one_device(outs, actions) -> list:
  """Results of a single-device program laid out as `_finish_actions` says."""
  if actions is None:
    return outs
  done = []
  for o, act in zip(outs, actions, strict=True):
    if act is None or type(o) is not Array:
      done.append(o)
    elif act[0] == "mark":
      done.append(rt.mark(o, act[1]))
    else:
      done.append(place(o, act[1]))
  return done


def _bind_traced(jitted, args, kwargs):
  """A call under a transformation (grad, vmap, an outer jit): the jit primitive, carrying the
  requested shardings as its params (jit.py's rules keep them through every transformation)."""
  from revax._src.jit import _shard_params, jit_p
  leaves, key_head, call_fn, names = jitted._split(args, kwargs)
  entry = jitted._entry(leaves, key_head, call_fn, names)
  explicit, out_shardings = _requested(jitted, entry, key_head, leaves)
  params = _shard_params([None] * len(entry.consts) + explicit, out_shardings)
  outs = jit_p.bind(*entry.consts, *leaves, jaxpr=entry.jaxpr, name=entry.name, **params)
  return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)


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
    from revax._src.jit import program_for as plain_program
    return _finish_one_device(plain_program(closed, name).call_arrays(args),
                              _finish_actions(outs))
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


def _fast_key(args):
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


def call(jitted, args, kwargs):
  """Run a jitted function whose call involves shardings (bound as the jit primitive under a
  transformation)."""
  if _context.trace is not eval_trace:
    return _bind_traced(jitted, args, kwargs)
  key = None
  if not kwargs and not jitted.static_argnums:
    key, leaves = _fast_key(args)
    if key is not None:
      cache = jitted.__dict__.setdefault("_sharded_calls", {})
      fast = cache.get(key)
      if fast is not None:
        entry, program, actions, plan = fast
        flat = entry.consts + leaves if entry.consts else leaves
        out = _checked(jitted, args, kwargs, _run(entry, program, actions, flat))
        if plan is not None:
          jitted._traces.plan = plan  # this signature's next call goes through it
        return out
  entry, flat, program, out_shardings, _ = _prepare(jitted, args, kwargs)
  actions = None if program is not None else _finish_actions(out_shardings)
  out = _checked(jitted, args, kwargs, _run(entry, program, actions, flat))
  if (not kwargs and not jitted.static_argnums and key is not None
      and not any(isinstance(c, Tracer) for c in entry.consts)):
    plan = ShardedPlan.make(jitted, args, leaves, entry, program)
    cache[key] = (entry, program, actions, plan)
    if plan is not None:
      jitted._traces.plan = plan
  return out


class ShardedPlan:
  """How to call one jit signature over a mesh again, as jit.py's `_CallPlan` does on one
  device: the compiled call path (`Runner.call_sharded`) checks that every argument is a
  ShardedArray with the plan's sharding and aval and live shards, queues the launch and makes
  the output ShardedArrays, all in C. Anything else (another structure, a NumPy argument, an
  equal sharding of another layout, a deleted shard) takes the general path above, which places,
  checks or raises as needed.

  Made for programs that queue without waiting and donate nothing, when every argument and
  closed-over constant of the call is a ShardedArray. (Its results are ShardedArrays, which are
  always committed, as the general path's.)"""
  __slots__ = ("epoch", "treedef", "up_to", "entry", "executable", "runner")

  @classmethod
  def make(cls, jitted, args, leaves, entry, program) -> "ShardedPlan | None":
    if (program is None or program.wait or program.donated or config.debug_checks
        or program.executable._sharded_runner is None):
      return None
    if not all(type(x) is rt.ShardedArray for x in (*entry.consts, *leaves)):
      return None
    return cls(args, leaves, entry, program)

  def __init__(self, args, leaves, entry, program):
    from revax._src.jit import _only_sequences
    self.epoch = config.trace_epoch
    flat = len(leaves) == len(args) and all(a is x for a, x in zip(args, leaves))
    self.treedef = None if flat else tree_util.tree_structure(args)
    self.up_to = self.treedef is not None and _only_sequences(self.treedef)
    self.entry = entry
    self.executable = program.executable
    self.runner = program.executable._sharded_runner
    out_specs = tuple(
        tuple((block_shape(ix[p], a.shape), a.dtype, program.devices[p])
              for ix, a in zip(program.out_indices, program.out_avals, strict=True))
        for p in program.order)
    self.runner.set_sharded_plan(
        tuple(program.in_shardings), tuple(program.in_avals), tuple(entry.consts),
        tuple(program.order), tuple(program.out_avals), tuple(program.out_shardings),
        tuple([tuple(ix) for ix in indices] for indices in program.out_indices), out_specs,
        get_backend())

  def call(self, args):
    """The outputs of the call on `args`, or jit.py's `_MISS` where the general path must
    run it."""
    from revax._src.jit import _MISS, plan_leaves
    treedef = self.treedef
    if treedef is None:
      leaves = args
    else:
      leaves = plan_leaves(treedef, self.up_to, args)
      if leaves is _MISS:
        return _MISS
    if (config.trace_epoch != self.epoch or config.disable_jit or config.no_execution
        or config.debug_checks or rt_client.execution_refused()):
      return _MISS  # the general path retraces, runs eagerly, checks values or refuses
    outs = rt_client.call_planned(self.executable, self.runner, leaves)
    if outs is None:
      return _MISS
    entry = self.entry
    return outs[0] if entry.out_is_leaf else entry.out_tree.unflatten(outs)


def _checked(jitted, args, kwargs, result):
  """`result`, after debug_nans/debug_infs checks of its values (assembled from the shards):
  on a NaN/inf, `fun` runs again op by op to name the primitive that made it, as on one device
  (the FloatingPointError of the jitted function itself when that run is clean or cannot run,
  e.g. because the call consumed a donated argument)."""
  if not config.debug_checks:
    return result
  try:
    dispatch.check_special_values(f"jit({jitted.name})", tree_util.tree_leaves(result))
  except FloatingPointError as e:
    try:
      with config.override("disable_jit", True):
        jitted.fun(*args, **kwargs)
    except FloatingPointError:
      raise
    except Exception:  # noqa: BLE001 - the call's own error is the one to report
      raise e from None
    raise
  return result


def _run(entry, program, actions, flat):
  if program is None:  # no mesh of several devices: the ordinary compiled program
    from revax._src.jit import program_for as plain_program
    if entry.program is None:
      entry.program = plain_program(entry.jaxpr, entry.name)
    outs = entry.program.run_unchecked(flat)
    outs = _finish_one_device(outs, actions)
  else:
    outs = program(flat)
  return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)


def lower(jitted, args, kwargs) -> "ShardedLowered":
  entry, flat, program, out_shardings, arg_shardings = _prepare(jitted, args, kwargs)
  leaves, key_head = jitted._split(args, kwargs)[:2]
  signature = Signature.for_call(jitted, args, kwargs, key_head[0], leaves, entry, lowered=True)
  return ShardedLowered(entry, flat, program, out_shardings, arg_shardings, signature)


class ShardedLowered(StageAttributes):
  """A jitted function lowered for a mesh: `.as_text()` is the Shardy-annotated StableHLO."""

  def __init__(self, entry, flat, program, out_shardings, arg_shardings, signature):
    self._entry, self._flat, self._program = entry, flat, program
    self._out_shardings, self._arg_shardings = out_shardings, arg_shardings
    self._signature = signature

  def compiler_ir(self, dialect: str | None = None):
    """The lowered StableHLO module (`str()` of it is the text); dialect "hlo" is refused."""
    return _stage_info.compiler_ir(self.as_text(), dialect)

  def as_text(self) -> str:
    if self._program is None:
      from revax._src.interpreters import mlir
      return mlir.lower_jaxpr_to_module(self._entry.jaxpr, self._entry.name)
    return self._program.text

  @property
  def jaxpr(self):
    return self._entry.jaxpr

  def compile(self, compiler_options=None, *, device_assignment=None) -> "ShardedCompiled":
    """Compile (JAX's signature; revax passes no XLA options: only None or {} is accepted)."""
    _stage_info.check_compile_args(compiler_options, device_assignment)
    return ShardedCompiled(self)


class ShardedCompiled:
  """A compiled jit program over a mesh; call it with arguments of the lowered types."""

  def __init__(self, lowered: ShardedLowered):
    self._lowered = lowered
    entry = lowered._entry
    if lowered._program is None:
      from revax._src.jit import program_for as plain_program
      if entry.program is None:
        entry.program = plain_program(entry.jaxpr, entry.name)

  def as_text(self) -> str:
    return self._lowered.as_text()

  @property
  def input_shardings(self):
    p = self._lowered._program
    if p is None:  # one device: as requested, or the whole array on it
      first = SingleDeviceSharding(get_backend().devices[0])
      return [s if s is not None else first for s in self._lowered._arg_shardings]
    return p.in_shardings[len(self._lowered._entry.consts):]

  @property
  def output_shardings(self):
    p = self._lowered._program
    if p is None:
      first = SingleDeviceSharding(get_backend().devices[0])
      return [s if s is not None else first for s in self._lowered._out_shardings]
    return p.out_shardings

  def __call__(self, *args, **kwargs):
    entry = self._lowered._entry
    leaves = tree_util.tree_leaves((args, kwargs))
    flat = list(entry.consts) + leaves
    dispatch.check_arg_avals(entry.name, entry.jaxpr.in_avals,
                             [x.aval if isinstance(x, Array) else get_aval(x) for x in flat])
    p = self._lowered._program
    outs = p(flat) if p is not None else entry.program.call_arrays(flat)
    return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)

  def memory_analysis(self):
    """XLA's memory figures for the program, per device for a program over a mesh."""
    p = self._lowered._program
    return p.memory_stats() if p is not None else self._lowered._entry.program.memory_stats()


_stages.Lowered.register(ShardedLowered)
_stages.Compiled.register(ShardedCompiled)


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


def names_mesh(closed: ClosedJaxpr) -> bool:
  return any(m.size > 1 for m in _constraint_meshes(closed.jaxpr, []))


def mesh_program(closed: ClosedJaxpr, name: str):
  """A MeshProgram when `closed` names a mesh of several devices, else None."""
  meshes = [m for m in _constraint_meshes(closed.jaxpr, []) if m.size > 1]
  if not meshes:
    return None
  for m in meshes[1:]:
    if m != meshes[0]:
      raise ValueError(f"Received incompatible devices for jitted computation: the program uses "
                       f"different meshes {meshes[0]!r} and {m!r}")
  return MeshProgram(closed, name, meshes[0])


# --- eager primitives on sharded arrays ------------------------------------------------------------
_eager: dict = {}  # (prim, avals, params, shardings) -> SpmdProgram, or None (gather instead)


def apply_primitive(prim, args, params):
  """Run one primitive over the mesh of its sharded operands, compiled with their shardings
  (results laid out as their types say over an all-Explicit mesh, else as XLA chooses, as JAX
  does); None when that is not possible (operands on
  different meshes, a primitive that cannot be partitioned): the caller then gathers."""
  shardings = [x._sharding if type(x) is rt.ShardedArray else None for x in args]
  meshes = {s.mesh for s in shardings if isinstance(s, NamedSharding)}
  if len(meshes) != 1 or any(s is not None and not isinstance(s, NamedSharding)
                             for s in shardings):
    return None
  (mesh,) = meshes
  try:
    avals = tuple(x.aval if isinstance(x, Array) else get_aval(x) for x in args)
    key = (prim, avals, tuple(sorted(params.items())), tuple(shardings))
    hash(key)
  except TypeError:
    return None
  program = _eager.get(key, False)
  if program is False:
    program = None
    try:
      out = prim.abstract_eval(*avals, **params)
      out_avals = out if prim.multiple_results else [out]
      invars = [Var(a) for a in avals]
      outvars = [Var(a) for a in out_avals]
      closed = ClosedJaxpr(Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars,
                                                                 dict(params))]), [])
      program = SpmdProgram(closed, prim.name, mesh, shardings,
                            _typed_results(out_avals, [None] * len(out_avals), shardings))
    except (CompileError, NotImplementedError):
      program = None  # e.g. a primitive whose lowering is single-device only
    if len(_eager) > 1024:  # a bound for long eager sessions over many shapes
      _eager.clear()
    _eager[key] = program
  if program is None:
    return None
  outs = program(list(args))
  return outs if prim.multiple_results else outs[0]


dispatch.sharded_apply = apply_primitive
