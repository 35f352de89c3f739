"""Call plans: how to call one jit signature again on arguments like those of the call that
made it, with no per-argument Python work beyond reading avals and buffer pointers (`CallPlan`,
one device) or, over a mesh, with the checks in C (`ShardedPlan`). A repeated call outside
transformations goes through its signature's plan; anything a plan does not cover returns
`MISS`, and the general path (jit.py) converts, uploads, retraces or raises as needed.

The execute step of the fast path: a plan holds the compiled program and the cache entry's
constants and output tree, nothing of the jitted function."""
from __future__ import annotations

import operator

import optree

from revax._src import tree_util
from revax._src.core.config import config
from revax._src.interpreters import dispatch
from revax._src.runtime import client as _client
from revax._src.runtime import sharded as rt
from revax._src.runtime.array import Array
from revax._src.runtime.client import get_backend
from revax._src.sharding import block_shape

__all__ = ["CallPlan", "ShardedPlan", "MISS", "plan_leaves", "use_plan"]


_get_aval = operator.attrgetter("aval")
_buffer_pointer = operator.attrgetter("_buf._ptr")
_buffer_device = operator.attrgetter("_buf.device")
MISS = object()  # what a plan's call returns where the general path must run the call


class CallPlan:
  """How to call one cache entry again on arguments like those of the call that made it.

  Made after a call whose dynamic arguments were all device-backed Arrays (positional, no static
  arguments), outside any transformation. Running it again costs no per-argument Python work
  beyond reading each argument's aval and buffer pointer in one C-level `map` each, and no
  per-output work beyond making its Buffer and Array:

  - the arguments' avals are compared with the plan's as one tuple (element identity first, so
    the outputs of an earlier call or the same Arrays again compare at C speed); equal avals are
    what the cache key required, so shapes, dtypes and weak types need no further check;
  - an argument that is not an Array (a NumPy array, a scalar, a tracer), a host-only Array, a
    deleted buffer, or (with several devices) buffers on different devices make the call take
    the general path, which converts, uploads, or raises the error that input deserves.
  """
  __slots__ = ("epoch", "treedef", "up_to", "avals", "entry", "executable", "out_avals",
               "device", "one_device", "runner", "backends")

  def __init__(self, epoch, treedef, avals, entry, program):
    self.epoch = epoch
    # optree's spec of the arguments (None: the arguments themselves are the leaves)
    self.treedef = None if treedef is None else treedef._spec
    self.up_to = treedef is not None and _only_sequences(self.treedef)
    self.avals = avals
    self.entry = entry
    self.executable = program.executable
    self.out_avals = tuple(program.out_avals)
    # (the backend the program was compiled for first: the default one, or where the call that
    # compiled it ran; a call on another backend's buffers takes the general path)
    backend = self.executable._backend
    self.device = backend.devices[0]
    # (a second backend started later makes this plan's check of devices insufficient: `call`
    # then leaves the call to the general path, which runs it where its arguments are)
    self.backends = _client.backend_count()
    self.one_device = len(backend.devices) == 1 and self.backends == 1
    # With the compiled call path (runtime/fastpath.py), one C call checks the leaves exactly
    # as below, runs the program and makes the output Arrays.
    self.runner = None
    if self.one_device:
      runner = self.executable.new_runner()
      if runner is not None:
        self.executable.set_plan(runner, avals, tuple(entry.consts), self.out_avals,
                                 self.device)
        self.runner = runner

  def call(self, args):
    """The outputs of the call on `args`, or `MISS` where the general path must run it."""
    treedef = self.treedef
    if treedef is None:
      leaves = args
    else:
      leaves = plan_leaves(treedef, self.up_to, args)
      if leaves is MISS:
        return MISS
    runner = self.runner
    if runner is not None:
      if (config.trace_epoch != self.epoch or config.disable_jit or config.no_execution
          or _client.execution_refused() or _client.backend_count() != self.backends):
        return MISS  # the general path retraces, runs eagerly, or raises the refusal
      outs = runner.call(leaves)
      if outs is None:
        return MISS
      if type(outs) is tuple:
        self.executable.raise_failure(outs)
      entry = self.entry
      return outs[0] if entry.out_is_leaf else entry.out_tree.unflatten(outs)
    try:
      if tuple(map(_get_aval, leaves)) != self.avals:
        return MISS
      pointers = list(map(_buffer_pointer, leaves))  # AttributeError: not a device Array
    except AttributeError:
      return MISS
    # A freed buffer's pointer is None (a live one is never 0): `all` tests truth at C speed,
    # where `None in` compares every int with None.
    if config.trace_epoch != self.epoch or config.disable_jit or not all(pointers):
      return MISS  # a deleted buffer, which the general path reports
    entry = self.entry
    device = self.device
    if not self.one_device and leaves:
      device = leaves[0]._buf.device
      for d in map(_buffer_device, leaves):
        if d is not device:
          return MISS
      if device.client is not self.device.client:
        return MISS  # (another backend's program: the general path compiles it there)
    if entry.consts:
      try:
        const_pointers = list(map(_buffer_pointer, entry.consts))
      except AttributeError:
        return MISS
      if not all(const_pointers) or not (
          self.one_device or all(d is device for d in map(_buffer_device, entry.consts))):
        return MISS
      pointers = const_pointers + pointers
    outs = self.executable.execute_arrays(pointers, device, self.out_avals)
    return outs[0] if entry.out_is_leaf else entry.out_tree.unflatten(outs)


def plan_leaves(treedef, up_to: bool, args):
  """The leaves of `args` if its structure is `treedef`, else `MISS` (a plan's call then takes
  the general path). `up_to`: `treedef` has only sequence nodes (`_only_sequences`)."""
  if up_to:
    try:
      return treedef.flatten_up_to(args)
    except (ValueError, TypeError):  # another structure
      return MISS
  try:
    leaves, other = optree.tree_flatten(args, none_is_leaf=False, namespace=tree_util.NAMESPACE)
  except Exception:  # noqa: BLE001 - a bad pytree: the general path reports it
    return MISS
  return leaves if other == treedef else MISS


_SEQUENCE_KINDS = (optree.PyTreeKind.TUPLE, optree.PyTreeKind.LIST, optree.PyTreeKind.NONE,
                   optree.PyTreeKind.LEAF)


def _only_sequences(treedef) -> bool:
  """Whether `treedef` has only tuple, list and None nodes. For those, `flatten_up_to` (measured
  ~10x faster than flattening here) checks the structure exactly; it would also take a dict
  subclass where a dict was traced, and custom nodes carry metadata it may not compare."""
  if treedef.kind not in _SEQUENCE_KINDS:
    return False
  return all(_only_sequences(child) for child in treedef.children())


def use_plan(cache, args, leaves, entry, program) -> None:
  """Make `entry`'s plan the one `cache` tries first, making it if the call's arguments
  allow (see `CallPlan`): each entry's plan is made once, so calls that alternate between
  signatures only swap which plan is tried."""
  plan = entry.plan
  if plan is None:
    if not isinstance(program, dispatch.CompiledProgram):
      return  # a program over a mesh (MeshProgram) places its own shards
    if program._float0_in or program._float0_out or program.has_tokens:
      return
    for x in leaves:
      if type(x) is not Array or x._buf is None:
        return
    flat = len(leaves) == len(args) and all(type(a) is Array for a in args)
    treedef = None if flat else tree_util.tree_structure(args)
    plan = entry.plan = CallPlan(config.trace_epoch, treedef, tuple(x.aval for x in leaves),
                                 entry, program)
  cache.plan = plan


class ShardedPlan:
  """How to call one jit signature over a mesh again, as `CallPlan` does on one
  device: the compiled call path (`Runner.call_sharded`) checks that every argument is a
  ShardedArray with the plan's sharding and aval and live shards, queues the launch and makes
  the output ShardedArrays, all in C. Anything else (another structure, a NumPy argument, an
  equal sharding of another layout, a deleted shard) takes the general path (jit.py), which
  places, checks or raises as needed.

  Made for programs that queue without waiting and donate nothing, when every argument and
  closed-over constant of the call is a ShardedArray. (Its results are ShardedArrays, which are
  always committed, as the general path's.)"""
  __slots__ = ("epoch", "treedef", "up_to", "entry", "executable", "runner")

  @classmethod
  def make(cls, args, leaves, entry, program) -> "ShardedPlan | None":
    if (program is None or program.wait or program.donated or config.debug_checks
        or program.executable._sharded_runner is None):
      return None
    if not all(type(x) is rt.ShardedArray for x in (*entry.consts, *leaves)):
      return None
    return cls(args, leaves, entry, program)

  def __init__(self, args, leaves, entry, program):
    self.epoch = config.trace_epoch
    flat = len(leaves) == len(args) and all(a is x for a, x in zip(args, leaves))
    # optree's spec of the arguments (None: the arguments themselves are the leaves)
    self.treedef = None if flat else tree_util.tree_structure(args)._spec
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
    """The outputs of the call on `args`, or `MISS` where the general path must run it."""
    treedef = self.treedef
    if treedef is None:
      leaves = args
    else:
      leaves = plan_leaves(treedef, self.up_to, args)
      if leaves is MISS:
        return MISS
    if (config.trace_epoch != self.epoch or config.disable_jit or config.no_execution
        or config.debug_checks or _client.execution_refused()):
      return MISS  # the general path retraces, runs eagerly, checks values or refuses
    outs = _client.call_planned(self.executable, self.runner, leaves)
    if outs is None:
      return MISS
    entry = self.entry
    return outs[0] if entry.out_is_leaf else entry.out_tree.unflatten(outs)
