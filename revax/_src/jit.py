"""jit: trace once per signature, compile with XLA, run the cached executable.

`jit(f)` flattens its arguments, looks up (argument structure, avals, static arguments) in its
cache, and on a miss traces `f` to a jaxpr (Python runs once per cache entry). Outside any
transformation the compiled program is called directly; inside one (grad, vmap, another jit) the
call is the `jit` primitive holding the jaxpr, which each transformation interprets with its rule.
Closed-over arrays and outer tracers become leading operands of that primitive, so its jaxpr has
no constants.

A repeated call outside transformations goes through its signature's `_CallPlan` (made on the
first call with device Arrays): the structure, avals and buffer pointers of the arguments are
checked in a few C-level steps and the executable runs at once; anything the plan does not
cover takes the general path, which converts, uploads, retraces or raises as needed.
"""
from __future__ import annotations

import functools
import inspect
import operator
import threading
import warnings
import weakref

import optree

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.config import config
from revax._src.core.errors import JaxRuntimeError, UnexpectedTracerError
from revax._src.core import traceback_util
from revax._src.core.traceback_util import api_boundary
from revax._src.core.typecheck import check_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Primitive, Tracer, _context, eval_trace
from revax._src.interpreters import (ad, batching, dispatch, mlir, partial_eval, staging,
                                    transpose)
from revax._src.runtime.array import Array
from revax._src.runtime import array as _array
from revax._src.runtime import placement as _placement
from revax._src.runtime import sharded as _rt_sharded
from revax._src import stage_info as _stage_info
from revax._src.stage_info import Signature as _Signature
from revax._src.stage_info import StageAttributes as _StageAttributes



def sharded_call(jitted, args, kwargs):
  """Calls that involve a mesh (in/out shardings, sharded arguments) run in sharded_jit.py."""
  from revax._src import sharded_jit
  return sharded_jit.call(jitted, args, kwargs)


def _mesh_program(jaxpr, name):
  """A program over a mesh when the jaxpr names one of several devices (shard_map, sharding
  constraints), else None."""
  from revax._src import sharded_jit
  return sharded_jit.mesh_program(jaxpr, name)


def _names_mesh(jaxpr) -> bool:
  """Whether the jaxpr names a mesh of several devices (shard_map, sharding constraints)."""
  from revax._src import sharded_jit
  return sharded_jit.names_mesh(jaxpr)


def sharded_lower(jitted, args, kwargs):
  from revax._src import sharded_jit
  return sharded_jit.lower(jitted, args, kwargs)
from revax._src.runtime import client as _client
from revax._src.runtime.client import get_backend

# --- the jit primitive ---------------------------------------------------------------------------
jit_p = Primitive("jit", multiple_results=True)


def _jit_abstract_eval(*avals, jaxpr: ClosedJaxpr, name: str, **shardings):
  dispatch.check_arg_avals(name, jaxpr.in_avals, avals)
  return jaxpr.out_avals


_programs: "weakref.WeakKeyDictionary[ClosedJaxpr, dispatch.CompiledProgram]" = weakref.WeakKeyDictionary()
_programs_lock = threading.Lock()


_aliased_programs: "weakref.WeakKeyDictionary[ClosedJaxpr, dict]" = weakref.WeakKeyDictionary()


def program_for(jaxpr: ClosedJaxpr, name: str, aliases: tuple = ()) -> dispatch.CompiledProgram:
  """The compiled program of a jit jaxpr (compiled once, kept while the jaxpr lives).

  Args:
    aliases: (operand, result) pairs of donated operands and the results XLA may write into
      their buffers (see `donation_aliases`); each set of pairs is its own program.
  """
  if aliases:
    with _programs_lock:
      program = _aliased_programs.setdefault(jaxpr, {}).get(aliases)
    if program is None:
      program = dispatch.compile_jaxpr(jaxpr, name, aliases)
      with _programs_lock:
        program = _aliased_programs[jaxpr].setdefault(aliases, program)
    return program
  program = _programs.get(jaxpr)
  if program is None:
    program = _mesh_program(jaxpr, name) or dispatch.compile_jaxpr(jaxpr, name)
    with _programs_lock:
      program = _programs.setdefault(jaxpr, program)
  return program


# --- buffer donation on one device ------------------------------------------------------------
# As in JAX: the leaves of the positional arguments `donate_argnums` names are offered to XLA;
# each takes the first result of its shape and dtype not yet taken (`tf.aliasing_output` on the
# parameter), the others are named in a warning. After a call, a donated Array whose buffer XLA
# reused is deleted (using it raises JAX's RuntimeError); the same buffer passed both donated and
# as another argument is JAX's JaxRuntimeError, raised before the program runs.
def donated_operands(jitted, args, offset: int, num_operands: int) -> list[int]:
  """The flat operands (after `offset` consts) holding leaves of the positional arguments that
  `jitted`'s donate_argnums names."""
  nums = jitted._donate_argnums
  if not nums:
    return []
  nargs = len(args)
  donate = {i % nargs for i in nums if -nargs <= i < nargs}
  static = {i % nargs for i in jitted.static_argnums if -nargs <= i < nargs}
  if donate & static:
    raise ValueError(f"jit: donate_argnums {sorted(donate & static)} are also static arguments")
  flags = []
  for i, a in enumerate(args):
    if i not in static:
      flags += [i in donate] * len(tree_util.tree_leaves(a))
  return [offset + k for k, f in enumerate(flags[:num_operands - offset]) if f]


def donation_aliases(jitted, args, entry) -> tuple:
  """(operand, result) pairs for a one-device call of `entry` on `args` (see above)."""
  jaxpr = entry.jaxpr
  flagged = donated_operands(jitted, args, len(entry.consts), len(jaxpr.in_avals))
  free = [(k, (a.shape, a.dtype)) for k, a in enumerate(jaxpr.out_avals)]
  pairs, unused = [], []
  for k in flagged:
    aval = jaxpr.in_avals[k]
    match = next((f for f in free if f[1] == (aval.shape, aval.dtype)), None)
    if match is None:
      unused.append(f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]")
    else:
      free.remove(match)
      pairs.append((k, match[0]))
  if unused:
    warnings.warn(f"Some donated buffers were not usable: {', '.join(unused)}.")
  return tuple(pairs)


def _check_donated(aliases, operands) -> None:
  for k, _ in aliases:
    x = operands[k]
    buf = getattr(x, "_buf", None)
    for i, other in enumerate(operands):
      if i != k and (other is x or (buf is not None and getattr(other, "_buf", None) is buf)):
        raise JaxRuntimeError(
            f"INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the "
            f"same call to Execute() (flattened argument {max(k, i)}, first use: {min(k, i)}). "
            "Toy example for this bug: `f(donate(a), a)`.")


def _consume_donated(aliases, operands) -> None:
  for k, _ in aliases:
    x = operands[k]
    if type(x) is Array and x._buf is not None and _rt_sharded.consumed(x._buf):
      x.delete()


def run_donating(program, aliases, operands) -> list:
  """`program.run_unchecked(operands)` for a program compiled with `aliases`."""
  _check_donated(aliases, operands)
  outs = program.run_unchecked(operands)
  _consume_donated(aliases, operands)
  return outs


# A jit equation of a function jitted with in_shardings/out_shardings carries them as params
# `in_shardings` / `out_shardings`: one sharding (or None: unspecified) per operand / result.
# Both are absent when nothing was specified, so unsharded programs are unchanged. Every rule
# below keeps them matched to its new operands and results (as JAX's jit primitive does): JVP
# tangents take their primal's sharding, residuals are unspecified, a transpose's cotangents
# take the sharding of the value they are the cotangent of, and vmap leaves the batch dimension
# unsplit (split over vmap's spmd_axis_name when it has one). Eagerly such a call runs over the
# shardings' mesh (sharded_jit.call_sharded); nested in another program it constrains its
# operands and results there.
def _shard_params(in_shardings, out_shardings) -> dict:
  """The params of a jit equation for these per-operand / per-result shardings."""
  if all(s is None for s in in_shardings) and all(s is None for s in out_shardings):
    return {}
  return {"in_shardings": tuple(in_shardings), "out_shardings": tuple(out_shardings)}


def _pick(values, mask, keep=True) -> list:
  return [v for v, m in zip(values, mask, strict=True) if bool(m) == keep]


def _jit_impl(*args, jaxpr: ClosedJaxpr, name: str, in_shardings=None, out_shardings=None):
  if in_shardings is None and not _rt_sharded.any_sharded(args):
    return program_for(jaxpr, name).call_arrays(args)
  from revax._src import sharded_jit
  return sharded_jit.call_sharded(jaxpr, name, args, in_shardings, out_shardings)


def _jit_lower(ctx, *args, jaxpr: ClosedJaxpr, name: str, in_shardings=None,
               out_shardings=None):
  if in_shardings is None:
    return mlir.call_jaxpr(ctx, jaxpr, args, name)
  from revax._src.lax.sharding_constraint import constrain
  args = [x if s is None else constrain(ctx, x, s, a)
          for x, s, a in zip(args, in_shardings, ctx.avals_in, strict=True)]
  outs = mlir.call_jaxpr(ctx, jaxpr, args, name)
  return [x if s is None else constrain(ctx, x, s, a)
          for x, s, a in zip(outs, out_shardings, ctx.avals_out, strict=True)]


def bind_jit(closed: ClosedJaxpr, args, name: str, in_shardings=None, out_shardings=None):
  """Bind jit_p on `closed`, turning its constants into leading operands (jit jaxprs have none).
  `in_shardings`/`out_shardings` (per argument in `args` / per result, or None) become params."""
  params = {}
  if in_shardings is not None:
    params = _shard_params([None] * len(closed.consts) + list(in_shardings), out_shardings)
  if closed.consts:
    jaxpr = ClosedJaxpr(staging.convert_constvars_jaxpr(closed.jaxpr), [])
    return jit_p.bind(*closed.consts, *args, jaxpr=jaxpr, name=name, **params)
  return jit_p.bind(*args, jaxpr=closed, name=name, **params)


def _jit_jvp(primals, tangents, *, jaxpr, name, in_shardings=None, out_shardings=None):
  ins = outs = None
  if in_shardings is not None:
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    _, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
    ins = list(in_shardings) + _pick(in_shardings, nonzeros)
    outs = list(out_shardings) + _pick(out_shardings, out_nonzeros)
  return ad.call_jvp(jaxpr, primals, tangents,
                     lambda jvp_closed, args: bind_jit(jvp_closed, args, f"jvp_{name}", ins, outs))


def _jit_partial_eval(trace, args, params, unknowns):
  """Run the known part of the call now and stage the unknown part, as two jit calls."""
  split = None
  if "in_shardings" in params:
    base = {"name": params["name"]}
    ins, outs = params["in_shardings"], params["out_shardings"]

    def split(out_unknowns, num_res):  # residuals: unspecified
      known = _shard_params(_pick(ins, unknowns, False),
                            _pick(outs, out_unknowns, False) + [None] * num_res)
      unknown = _shard_params([None] * num_res + _pick(ins, unknowns),
                              _pick(outs, out_unknowns))
      return {**base, **known}, {**base, **unknown}
  return partial_eval.partial_eval_call(
      trace, jit_p, args, params, unknowns, split_params=split,
      bind_known=lambda known, known_args, kp: bind_jit(
          known, known_args, kp["name"], kp.get("in_shardings"), kp.get("out_shardings")))


def _jit_transpose(cts, *args, jaxpr, name, in_shardings=None, out_shardings=None):
  linear_mask = tuple(ad.is_undefined_primal(a) for a in args)
  ct_closed = transpose.transpose_jaxpr(jaxpr, linear_mask)
  nonlinear = [a for a in args if not ad.is_undefined_primal(a)]
  cts = [ad.instantiate_zeros(c) for c in cts]
  ins = outs = None
  if in_shardings is not None:  # a cotangent is laid out as the value it belongs to
    ins = _pick(in_shardings, linear_mask, False) + list(out_shardings)
    outs = _pick(in_shardings, linear_mask)
  lin_cts = iter(bind_jit(ct_closed, nonlinear + cts, f"transpose_{name}", ins, outs))
  return [next(lin_cts) if lin else None for lin in linear_mask]


def _batched_sharding(s, d, spmd_axis_name=None):
  """`s` for the value batched at `d`: the batch dimension unsplit, or split over vmap's
  `spmd_axis_name` (a spec that already uses those axes is JAX's DuplicateSpecError)."""
  if s is None or d is batching.not_mapped or not hasattr(s, "spec"):
    return s  # SingleDeviceSharding: still whole on its device
  parts = list(s.spec)
  parts[len(parts):d] = [None] * (d - len(parts))
  parts.insert(d, spmd_axis_name)
  return type(s)(s.mesh, type(s.spec)(*parts))


def _jit_batch(axis_size, vals, dims, *, jaxpr, name, in_shardings=None, out_shardings=None):
  batched, out_dims = batching.batch_jaxpr(jaxpr, dims, axis_size)
  ins = outs = None
  if in_shardings is not None:
    spmd = batching.batching_spmd_axis_name()
    ins = [_batched_sharding(s, d, spmd) for s, d in zip(in_shardings, dims, strict=True)]
    outs = [_batched_sharding(s, d, spmd)
            for s, d in zip(out_shardings, out_dims, strict=True)]
  return bind_jit(batched, list(vals), f"vmap_{name}", ins, outs), list(out_dims)


_dce_call = staging.dce_call()


def _jit_dce(eqn, used_outputs):
  used_inputs, new = _dce_call(eqn, used_outputs)
  if new is not None and "in_shardings" in eqn.params:
    params = {k: v for k, v in new.params.items() if not k.endswith("_shardings")}
    params.update(_shard_params(_pick(eqn.params["in_shardings"], used_inputs),
                                _pick(eqn.params["out_shardings"], used_outputs)))
    new = new.replace(params=params)
  return used_inputs, new


jit_p.def_abstract_eval(_jit_abstract_eval)
dispatch.custom_impls[jit_p] = _jit_impl  # a jit call always runs compiled
mlir.register_lowering(jit_p, _jit_lower)
staging.dce_rules[jit_p] = _jit_dce
ad.primitive_jvps[jit_p] = _jit_jvp
partial_eval.partial_eval_rules[jit_p] = _jit_partial_eval
ad.primitive_transposes[jit_p] = _jit_transpose
batching.axis_size_batchers[jit_p] = _jit_batch


# --- the cached call ---------------------------------------------------------------------------
_get_aval = operator.attrgetter("aval")
_buffer_pointer = operator.attrgetter("_buf._ptr")
_buffer_device = operator.attrgetter("_buf.device")
_MISS = object()


class _CallPlan:
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
    self.treedef = treedef  # None: the arguments themselves are the leaves
    self.up_to = treedef is not None and _only_sequences(treedef)
    self.avals = avals
    self.entry = entry
    self.executable = program.executable
    self.out_avals = tuple(program.out_avals)
    backend = get_backend()
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
    """The outputs of the call on `args`, or `_MISS` where the general path must run it."""
    treedef = self.treedef
    if treedef is None:
      leaves = args
    else:
      leaves = plan_leaves(treedef, self.up_to, args)
      if leaves is _MISS:
        return _MISS
    runner = self.runner
    if runner is not None:
      if (config.trace_epoch != self.epoch or config.disable_jit or config.no_execution
          or _client.execution_refused() or _client.backend_count() != self.backends):
        return _MISS  # the general path retraces, runs eagerly, or raises the refusal
      outs = runner.call(leaves)
      if outs is None:
        return _MISS
      if type(outs) is tuple:
        self.executable.raise_failure(outs)
      entry = self.entry
      return outs[0] if entry.out_is_leaf else entry.out_tree.unflatten(outs)
    try:
      if tuple(map(_get_aval, leaves)) != self.avals:
        return _MISS
      pointers = list(map(_buffer_pointer, leaves))  # AttributeError: not a device Array
    except AttributeError:
      return _MISS
    # A freed buffer's pointer is None (a live one is never 0): `all` tests truth at C speed,
    # where `None in` compares every int with None.
    if config.trace_epoch != self.epoch or config.disable_jit or not all(pointers):
      return _MISS  # a deleted buffer, which the general path reports
    entry = self.entry
    device = self.device
    if not self.one_device and leaves:
      device = leaves[0]._buf.device
      for d in map(_buffer_device, leaves):
        if d is not device:
          return _MISS
      if device.client is not self.device.client:
        return _MISS  # (another backend's program: the general path compiles it there)
    if entry.consts:
      try:
        const_pointers = list(map(_buffer_pointer, entry.consts))
      except AttributeError:
        return _MISS
      if not all(const_pointers) or not (
          self.one_device or all(d is device for d in map(_buffer_device, entry.consts))):
        return _MISS
      pointers = const_pointers + pointers
    outs = self.executable.execute_arrays(pointers, device, self.out_avals)
    return outs[0] if entry.out_is_leaf else entry.out_tree.unflatten(outs)


def plan_leaves(treedef, up_to: bool, args):
  """The leaves of `args` if its structure is `treedef`, else `_MISS` (a plan's call then takes
  the general path). `up_to`: `treedef` has only sequence nodes (`_only_sequences`)."""
  if up_to:
    try:
      return treedef.flatten_up_to(args)
    except (ValueError, TypeError):  # another structure
      return _MISS
  try:
    leaves, other = optree.tree_flatten(args, none_is_leaf=False, namespace=tree_util.NAMESPACE)
  except Exception:  # noqa: BLE001 - a bad pytree: the general path reports it
    return _MISS
  return leaves if other == treedef else _MISS


def _commit_if_read(entry, leaves, outs) -> None:
  """Mark the Arrays among `outs` (a jit call's results) committed when the program reads a
  committed argument among `leaves` (its dynamic arguments), as JAX commits a jit's results. An
  argument the program does not read does not count: JAX prunes it before the call. An output
  that is an argument itself keeps its own commitment."""
  if not _array.any_committed(leaves):
    return
  if _array.any_committed([a for a, u in zip(leaves, entry.reads()) if u]):
    _array.commit_results(tree_util.tree_leaves(outs), leaves)


def _used_leaves(entry, leaves) -> list:
  """`leaves` (a call's dynamic arguments), with None for each one `entry`'s program does not
  read."""
  return [a if u else None for a, u in zip(leaves, entry.reads())]


def _placed_operands(entry, leaves, operands, fun_name: str, names=None) -> list:
  """`operands` (constants, then the dynamic `leaves`) placed by JAX's rule for committed
  arrays (runtime/placement.py): on the device the committed arguments the program reads share
  (ValueError naming two that differ); an argument it does not read does not count (JAX prunes
  it) but still moves, as the program takes every operand on one device; with no committed
  argument read, the default device (closed-over constants do not count, as in JAX: one
  committed elsewhere moves there). Unchanged when no argument is committed and every operand
  is on the default device. Called off the cached call path (`_CallPlan` runs arguments that
  all live on one device itself), and only once some Array was committed. `fun_name` and
  `names` (a thunk naming the leaves) are for the error message."""
  if _array.any_committed(leaves):
    device = _placement.committed_device(_used_leaves(entry, leaves), fun_name, names)
  elif all(map(_placement.on_default_device, entry.consts)):
    return operands  # (uncommitted arguments are where they run, or uploaded there)
  else:
    device = None
  if device is None:
    device = _placement.default_device()
  return [_placement.on_device(x, device) for x in operands]


_SEQUENCE_KINDS = (optree.PyTreeKind.TUPLE, optree.PyTreeKind.LIST, optree.PyTreeKind.NONE,
                   optree.PyTreeKind.LEAF)


def _only_sequences(treedef) -> bool:
  """Whether `treedef` has only tuple, list and None nodes. For those, `flatten_up_to` (measured
  ~10x faster than flattening here) checks the structure exactly; it would also take a dict
  subclass where a dict was traced, and custom nodes carry metadata it may not compare."""
  if treedef.kind not in _SEQUENCE_KINDS:
    return False
  return all(_only_sequences(child) for child in treedef.children())


def _use_plan(cache: _TraceCache, args, leaves, entry: _Entry, program) -> None:
  """Make `entry`'s plan the one `cache` tries first, making it if the call's arguments
  allow (see `_CallPlan`): each entry's plan is made once, so calls that alternate between
  signatures only swap which plan is tried."""
  plan = entry.plan
  if plan is None:
    if not isinstance(program, dispatch.CompiledProgram):
      return  # a program over a mesh (MeshProgram) places its own shards
    if program._float0_in or program._float0_out:
      return
    for x in leaves:
      if type(x) is not Array or x._buf is None:
        return
    flat = len(leaves) == len(args) and all(type(a) is Array for a in args)
    treedef = None if flat else tree_util.tree_structure(args)
    plan = entry.plan = _CallPlan(config.trace_epoch, treedef, tuple(x.aval for x in leaves),
                                  entry, program)
  cache.plan = plan


# --- the wrapper -----------------------------------------------------------------------------
all_jitted: "weakref.WeakSet[Jitted]" = weakref.WeakSet()


class _Entry:
  """One cache entry: the traced program for one signature."""
  __slots__ = ("jaxpr", "consts", "out_tree", "out_is_leaf", "program", "name", "plan",
               "aliases", "used_inputs")

  def __init__(self, jaxpr, consts, out_tree, name):
    self.jaxpr, self.consts, self.out_tree, self.name = jaxpr, consts, out_tree, name
    self.out_is_leaf = out_tree.num_nodes == 1 and out_tree.num_leaves == 1
    self.program = None
    self.aliases = None  # donated (operand, result) pairs; None until a call decides them
    self.plan: _CallPlan | None = None  # made on the first call that allows one
    self.used_inputs = None  # per argument, whether the program reads it (see `reads`)

  def reads(self) -> list:
    """Per dynamic argument (the closed-over constants left out), whether the program reads
    it: what decides commitment and placement, as JAX prunes unread arguments."""
    used = self.used_inputs
    if used is None:  # the jaxpr's inputs are the closed-over constants, then the arguments
      used = self.used_inputs = staging.dce_jaxpr(self.jaxpr.jaxpr)[1][len(self.consts):]
    return used


def _normalize_argnums(argnums, nargs_hint=None):
  if argnums is None:
    return ()
  if isinstance(argnums, int):
    return (argnums,)
  return tuple(argnums)


class _TraceCache:
  """The traces of one function under one set of jit options, shared by every `jit(f)` built
  for that function (JAX keys its cache by the function: `jit(f)(x)` written inline, or jit
  inside a loop, traces once). Keys include the config options that change tracing.

  `full` maps (config key, (input tree, static key), avals) to entries; `fast` and `arrays` are
  per-config-epoch shortcuts for calls without static arguments and for calls whose positional
  arguments are all Arrays.
  """
  __slots__ = ("full", "fast", "arrays", "lock", "plan")

  def __init__(self):
    self.full: dict = {}
    self.fast: dict = {}  # epoch -> {(treedef, avals): entry}
    self.arrays: dict = {}  # epoch -> {avals: entry}
    self.lock = threading.Lock()
    self.plan: _CallPlan | None = None  # the signature called last, ready to run again

  def clear(self):
    self.full.clear()
    self.fast.clear()
    self.arrays.clear()
    self.plan = None


# fun -> {jit options: _TraceCache}; held weakly, so a cache lives as long as its function.
_trace_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_trace_caches_lock = threading.Lock()


def _shared_cache(fun, options) -> _TraceCache:
  """The trace cache of `fun` under `options`; a private one when `fun` cannot be held weakly
  or hashed."""
  try:
    with _trace_caches_lock:
      per_fun = _trace_caches.get(fun)
      if per_fun is None:
        per_fun = _trace_caches[fun] = {}
      cache = per_fun.get(options)
      if cache is None:
        cache = per_fun[options] = _TraceCache()
      return cache
  except TypeError:  # not weakly referenceable, or unhashable
    return _TraceCache()


def clear_trace_caches() -> None:
  """Forget every jitted function's traces (revax.clear_caches uses this)."""
  with _trace_caches_lock:
    for per_fun in list(_trace_caches.values()):
      for cache in per_fun.values():
        cache.clear()


def _static_key(value):
  """A cache key for a static argument: its value and its type, recursively through tuples
  (so 2, 2.0, True and np.int32(2) -- equal and hashing alike -- trace separately, as in JAX)."""
  if type(value) is tuple or isinstance(value, tuple):
    return (type(value), tuple(_static_key(v) for v in value))
  return (type(value), value)


def _leaf_names(signature, static_pos, static_names, args, kwargs):
  """One name per flat dynamic argument, for error messages: `x`, `x[0]`, `params['w']`."""
  params = list(signature.parameters.values()) if signature is not None else []
  positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  var_pos = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), "args")
  dyn_args = []
  for i, a in enumerate(args):
    if i in static_pos:
      continue
    name = positional[i] if i < len(positional) else f"{var_pos}[{i - len(positional)}]"
    dyn_args.append((name, a))
  dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
  paths, _ = tree_util.tree_flatten_with_path((tuple(a for _, a in dyn_args), dyn_kwargs))
  names = []
  for path, _ in paths:
    head, key, rest = _key_value(path[0]), _key_value(path[1]), path[2:]
    base = dyn_args[key][0] if head == 0 else str(key)
    names.append(base + tree_util.keystr(rest) if rest else base)
  return names


def _key_value(key):
  """The index or dict key inside a path entry (a raw key, or a SequenceKey/DictKey object)."""
  for attr in ("idx", "key"):
    if hasattr(key, attr):
      return getattr(key, attr)
  return key


class Jitted:
  """The result of `revax.jit(fun)`: call it, or `.lower(*args)` to see and compile the program.

  Its type is named `PjitFunction` and it prints as `<PjitFunction of fun>`, as JAX's jitted
  functions do (chex's `is_traceable` recognises a jitted function by that type name)."""

  def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(), name=None,
               in_shardings=None, out_shardings=None, keep_unused=False):
    if not callable(fun):
      raise TypeError(f"jit expects a callable, got {fun!r} of type {type(fun).__name__}")
    self.fun = fun
    self.name = name or getattr(fun, "__name__", "fun")
    self._signature = _try_signature(fun)
    self.static_argnums = _normalize_argnums(static_argnums)
    self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames or ())
    self._resolve_static_names()
    self._traces = _shared_cache(fun, (self.static_argnums, self.static_argnames, self.name))
    self._in_shardings, self._out_shardings = in_shardings, out_shardings
    self._sharded = in_shardings is not None or out_shardings is not None
    self._donate_argnums = _normalize_argnums(donate_argnums)  # honoured over a mesh
    self._keep_unused = bool(keep_unused)  # whether an unread sharded argument places the call
    all_jitted.add(self)  # for revax.clear_caches
    wrapping.update_wrapper(self, fun, updated=())

  @property
  def __signature__(self):
    """The wrapped function's signature (`inspect.signature(jitted, follow_wrapped=False)`, as
    on JAX's jitted functions; chex's fake_pmap reads it)."""
    return self._signature

  def _resolve_static_names(self):
    """Static args given by position or by name refer to the same parameters (as in JAX)."""
    sig = self._signature
    if sig is None:
      return
    params = list(sig.parameters.values())
    names = set(self.static_argnames)
    nums = set(self.static_argnums)
    if not any(p.kind is p.VAR_POSITIONAL for p in params):
      npos = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
      if any(not -npos <= i < npos for i in nums):
        raise ValueError(f"Jitted function has static_argnums={self.static_argnums}, but only "
                         f"accepts {npos} positional arguments.")
    for i, p in enumerate(params):
      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
        if i in nums and p.kind is p.POSITIONAL_OR_KEYWORD:
          names.add(p.name)
        if p.name in names:
          nums.add(i)
    self.static_argnums = tuple(sorted(nums))
    self.static_argnames = tuple(sorted(names))

  def _split(self, args, kwargs):
    """(dynamic flat leaves, key, a function rebuilding the call from leaves, leaf names)."""
    static_nums, static_names = self.static_argnums, self.static_argnames
    nargs = len(args)
    for i in static_nums:
      if i >= nargs and not (-nargs <= i < 0):
        if self._signature is not None:
          continue  # given by keyword: handled through static_argnames
        raise ValueError(f"jitted function {self.name} has static_argnums={static_nums} but was "
                         f"called with only {nargs} positional arguments")
    static_pos = {i % nargs for i in static_nums if -nargs <= i < nargs}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
    statics = tuple((i, args[i]) for i in sorted(static_pos))
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
    static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_names))
    try:
      static_key = (tuple((i, _static_key(v)) for i, v in statics),
                    tuple((k, _static_key(v)) for k, v in static_kw))
      hash(static_key)
    except TypeError as e:
      raise ValueError(
          f"Non-hashable static arguments are not supported: jitted function {self.name} got "
          f"static arguments {statics + static_kw}. Static arguments must be hashable; pass arrays "
          "as dynamic arguments instead.") from e
    leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))

    def call(*flat):
      d_args, d_kwargs = tree_util.tree_unflatten(treedef, flat)
      it = iter(d_args)
      full = [args[i] if i in static_pos else next(it) for i in range(nargs)]
      return self.fun(*full, **d_kwargs, **dict(static_kw))

    def names():
      return _leaf_names(self._signature, static_pos, static_names, args, kwargs)

    return leaves, (treedef, static_key), call, names

  def _entry(self, leaves, key_head, call, names) -> _Entry:
    avals = tuple(x.aval if type(x) is Array else get_aval(x) for x in leaves)
    key = (config.trace_key, key_head, avals)
    cache = self._traces
    entry = cache.full.get(key)
    if entry is None:
      entry = self._trace(call, avals, names)
      if not any(isinstance(c, Tracer) for c in entry.consts):
        with cache.lock:
          entry = cache.full.setdefault(key, entry)
    return entry

  def _trace(self, call, avals, names) -> _Entry:
    if config.no_tracing:
      raise RuntimeError(f"re-tracing function {self.name} for `jit`, but 'no_tracing' is set")
    out_store = {}

    def flat_fun(*xs):
      out = call(*xs)
      flat_out, out_store["tree"] = tree_util.tree_flatten(out)
      for x in flat_out:
        try:
          get_aval(x)
        except TypeError:
          raise TypeError(f"jitted function {self.name} returned a value of type "
                          f"{type(x).__name__} ({x!r}); outputs must be arrays or scalars, or "
                          "pytrees of them") from None
      return flat_out

    debug = staging.DebugInfo(self.fun, "jit", names)
    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, avals, debug)
    jaxpr = staging.convert_constvars_jaxpr(jaxpr)
    jaxpr, _ = staging.dce_jaxpr(jaxpr)
    if _context.trace is eval_trace:
      for c in consts:
        if isinstance(c, Tracer):
          raise UnexpectedTracerError(
              f"Encountered an unexpected tracer {c!r} while tracing the jitted function "
              f"{debug.fun_description()}: a value computed inside another transformation "
              "(jit, grad, vmap, ...) escaped it, e.g. through a global variable, a list or an "
              "attribute it was stored in, and is used here after that transformation finished. "
              "Return such values from the transformed function instead.")
    consts = [c if isinstance(c, (Tracer, Array)) else dispatch.to_array(c) for c in consts]
    closed = ClosedJaxpr(jaxpr, [])
    if config.enable_checks:
      check_jaxpr(closed)
    return _Entry(closed, consts, out_store["tree"], self.name)

  def __call__(self, *args, **kwargs):
    # The work of `api_boundary`, inlined: a wrapper costs more than the cached call itself.
    depth = traceback_util.boundary_depth
    plan = self._traces.plan
    if plan is not None and not kwargs and _context.trace is eval_trace:
      try:
        outs = plan.call(args)
      except Exception as e:
        if depth.value:
          raise
        raise traceback_util.filtered(e)
      if outs is not _MISS:
        # (a plan's calls have no static or keyword arguments; a plan over a mesh commits its
        # results itself)
        if _array.committed_live and type(plan) is _CallPlan:
          _commit_if_read(plan.entry, args if plan.treedef is None else
                          tree_util.tree_leaves(args), outs)
        return outs
    depth.value += 1
    try:
      return self._call(args, kwargs)
    except Exception as e:
      if depth.value != 1:
        raise
      raise traceback_util.filtered(e)
    finally:
      depth.value -= 1

  def _call(self, args, kwargs):
    """A call that its signature's plan could not run (see `_CallPlan`): looks the signature up
    (tracing on a miss), converts and checks the arguments, and runs or binds the program."""
    if config.disable_jit:
      return self.fun(*args, **kwargs)
    if self._sharded:  # eagerly runs over the mesh; traced, binds jit_p with the shardings
      out = sharded_call(self, args, kwargs)
      if _context.trace is eval_trace:  # results placed by explicit shardings are committed
        _array.commit_results(tree_util.tree_leaves(out), tree_util.tree_leaves((args, kwargs)))
      return out
    entry = None
    if not (kwargs or self.static_argnums):
      # positional arguments that are all Arrays need no pytree flattening.
      avals = []
      for a in args:
        if type(a) is not Array:
          break
        avals.append(a.aval)
      else:
        arrays = self._traces.arrays.get(config.trace_epoch)
        if arrays is not None:
          entry = arrays.get(tuple(avals))
        leaves = list(args)
    if entry is None:
      entry, leaves = self._lookup(args, kwargs)
      if _rt_sharded.live and _context.trace is eval_trace and (
          self._reads_sharded(entry, leaves) or _rt_sharded.any_sharded(entry.consts)):
        _placement.committed_device(_used_leaves(entry, leaves), self._error_name(),
                                    lambda: self._split(args, kwargs)[3]())  # (conflicts only)
        out = sharded_call(self, args, kwargs)
        _commit_if_read(entry, leaves, out)
        return out
    if _context.trace is eval_trace:
      program = entry.program
      if program is None or entry.aliases is None:
        if entry.aliases is None:
          entry.aliases = donation_aliases(self, args, entry) if self._donate_argnums else ()
        program = entry.program = program_for(entry.jaxpr, entry.name, entry.aliases)
      # the cache key fixed the avals: no check needed before running
      operands = entry.consts + leaves if entry.consts else leaves
      if _array.committed_live:
        operands = _placed_operands(entry, leaves, operands, self._error_name(),
                                    lambda: self._split(args, kwargs)[3]())
      if entry.aliases:  # no plan: each call checks and consumes its donated arguments
        outs = run_donating(program, entry.aliases, operands)
      else:
        outs = program.run_unchecked(operands)
      if config.debug_checks:
        self._check_special_values(outs, args, kwargs)
      elif not (kwargs or self.static_argnums or entry.aliases) and not any(
          isinstance(c, Tracer) for c in entry.consts):
        _use_plan(self._traces, args, leaves, entry, program)
      if _array.committed_live:
        _commit_if_read(entry, leaves, outs)
    else:
      outs = jit_p.bind(*entry.consts, *leaves, jaxpr=entry.jaxpr, name=entry.name)
    return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)

  def _error_name(self) -> str:
    """The function's name in placement errors (its qualified name, as JAX's)."""
    return getattr(self.fun, "__qualname__", None) or self.name

  def _check_special_values(self, outs, args, kwargs):
    """debug_nans/debug_infs: when the compiled outputs hold a NaN/inf, re-run `fun` op by op
    (which names the primitive that produced it), as JAX does; if that run is clean, name the
    jitted function."""
    try:
      dispatch.check_special_values(f"jit({self.name})", outs)
    except FloatingPointError:
      with config.override("disable_jit", True):
        self.fun(*args, **kwargs)
      raise

  def _lookup(self, args, kwargs):
    """(cache entry, flat dynamic arguments) for a call, tracing on a miss."""
    if kwargs or self.static_argnums:
      leaves, key_head, call, names = self._split(args, kwargs)
      return self._entry(leaves, key_head, call, names), leaves
    leaves, treedef = tree_util.tree_flatten(args)
    avals = tuple(x.aval if type(x) is Array else get_aval(x) for x in leaves)
    cache = self._traces
    epoch = config.trace_epoch
    fast = cache.fast.get(epoch)
    entry = fast.get((treedef, avals)) if fast is not None else None
    if entry is None:
      _, key_head, call, names = self._split(args, kwargs)
      entry = self._entry(leaves, key_head, call, names)
      if not any(isinstance(c, Tracer) for c in entry.consts):
        with cache.lock:
          cache.fast.setdefault(epoch, {})[(treedef, avals)] = entry
          if all(type(a) is Array for a in args):
            cache.arrays.setdefault(epoch, {})[avals] = entry
    return entry, leaves

  def _reads_sharded(self, entry: _Entry, leaves) -> bool:
    """Whether a sharded argument places the call over its mesh: one the program reads, as JAX
    prunes the others before placing the call (unless `keep_unused`)."""
    if not _rt_sharded.any_sharded(leaves):
      return False
    if self._keep_unused:
      return True
    return _rt_sharded.any_sharded([x for x, u in zip(leaves, entry.reads()) if u])

  @api_boundary
  def lower(self, *args, **kwargs) -> "Lowered":
    """Trace and lower for these arguments: `.as_text()` is the StableHLO, `.compile()` compiles."""
    leaves, key_head, call, names = self._split(args, kwargs)
    if self._sharded:
      return sharded_lower(self, args, kwargs)
    entry = self._entry(leaves, key_head, call, names)
    if (self._reads_sharded(entry, leaves) or _rt_sharded.any_sharded(entry.consts)
        or _names_mesh(entry.jaxpr)):
      return sharded_lower(self, args, kwargs)
    in_tree = key_head[0]
    if entry.aliases is None and self._donate_argnums:
      entry.aliases = donation_aliases(self, args, entry)
    return Lowered(entry, len(entry.consts),
                   _Signature.for_call(self, args, kwargs, in_tree, leaves, entry, lowered=True))

  def eval_shape(self, *args, **kwargs):
    """The results' shapes and dtypes for these arguments (ShapeDtypeStructs), nothing run."""
    return self.trace(*args, **kwargs).out_info

  def trace(self, *args, **kwargs) -> "Traced":
    """Trace for these arguments (no lowering): a `Traced`, whose `.jaxpr` is the program and
    `.lower()` lowers it."""
    leaves, key_head, call, names = self._split(args, kwargs)
    entry = self._entry(leaves, key_head, call, names)
    return Traced(self, args, kwargs, entry,
                  _Signature.for_call(self, args, kwargs, key_head[0], leaves, entry))

  def _donated_leaves(self, args, kwargs) -> list[bool]:
    """Per dynamic leaf of a call, whether `donate_argnums` donates it."""
    donated = set(i % len(args) for i in self._donate_argnums if -len(args) <= i < len(args))
    static = set(i % len(args) for i in self.static_argnums if -len(args) <= i < len(args))
    flags = []
    for i, a in enumerate(args):
      if i not in static:
        flags += [i in donated] * len(tree_util.tree_leaves(a))
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
    return flags + [False] * len(tree_util.tree_leaves(dyn_kwargs))

  def clear_cache(self):
    self._traces.clear()

  def _cache_size(self) -> int:
    return len(self._traces.full)

  def __get__(self, obj, objtype=None):  # jit on methods binds like a function
    if obj is None:
      return self
    return functools.partial(self, obj)

  def __repr__(self):
    return f"<PjitFunction of {self.fun!r}>"


Jitted.__name__ = Jitted.__qualname__ = "PjitFunction"  # JAX's type name (see the docstring)
PjitFunction = Jitted  # so the type is found under its name (pickle, introspection)


def _try_signature(fun):
  try:
    return inspect.signature(fun)
  except (TypeError, ValueError):
    return None


class Traced(_StageAttributes):
  """A jitted function traced for one signature (`jit(f).trace(*args)`): `.jaxpr` is the
  traced program (closed-over arrays are its leading inputs), `.lower()` lowers it."""

  def __init__(self, jitted, args, kwargs, entry: _Entry, signature: _Signature):
    self._jitted, self._args, self._kwargs = jitted, args, kwargs
    self._entry, self._signature = entry, signature

  @property
  def jaxpr(self) -> ClosedJaxpr:
    return self._entry.jaxpr

  def lower(self):
    """The traced program lowered for the same arguments (a `Lowered`)."""
    return self._jitted.lower(*self._args, **self._kwargs)


class Lowered(_StageAttributes):
  """A jitted function lowered for one signature."""

  def __init__(self, entry: _Entry, num_consts: int, signature: _Signature):
    self._entry = entry  # (`in_tree`, the arguments' structure, is the signature's)
    self._num_consts = num_consts
    self._text = None
    self._signature = signature

  def compiler_ir(self, dialect: str | None = None):
    """The lowered StableHLO module (`str()` of it is the text); dialect "hlo" is refused."""
    return _stage_info.compiler_ir(self.as_text(), dialect)

  def as_text(self) -> str:
    """The StableHLO module, as text."""
    if self._text is None:
      self._text = mlir.lower_jaxpr_to_module(self._entry.jaxpr, self._entry.name,
                                              aliases=self._entry.aliases or ())
    return self._text

  @property
  def jaxpr(self) -> ClosedJaxpr:
    return self._entry.jaxpr

  def compile(self, compiler_options=None, *, device_assignment=None) -> "Compiled":
    """Compile (JAX's signature). `compiler_options`: XLA options by name (e.g.
    {"xla_cpu_enable_fast_math": False}), handed to XLA as JAX does (an unknown name is XLA's
    error); that program is compiled for this Compiled only, not shared with the jit's."""
    _stage_info.check_compile_args(compiler_options, device_assignment, options_supported=True)
    entry = self._entry
    if compiler_options:
      own = _Entry.__new__(_Entry)
      for slot in _Entry.__slots__:
        setattr(own, slot, getattr(entry, slot))
      own.program = dispatch.compile_jaxpr(entry.jaxpr, entry.name, entry.aliases or (),
                                           option_overrides=sorted(compiler_options.items()))
      return Compiled(own, self.in_tree, self._signature)
    if entry.program is None or entry.aliases:
      entry.program = program_for(entry.jaxpr, entry.name, entry.aliases or ())
    return Compiled(entry, self.in_tree, self._signature)

  def cost_analysis(self) -> dict:
    """XLA's cost estimates ("flops", "bytes accessed", ...): those of the compiled program
    (revax compiles to answer; JAX estimates from the unoptimized module, so figures of fused
    operations can differ)."""
    return self.compile().cost_analysis()


class Compiled(_StageAttributes):
  """A compiled program. Calling it with arguments of other types raises TypeError."""

  def __init__(self, entry: _Entry, in_tree, signature: _Signature):
    self._entry = entry  # (`in_tree`, the arguments' structure, is the signature's)
    self._signature = signature

  def __call__(self, *args, **kwargs):
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    if treedef != self.in_tree:
      raise TypeError(f"compiled function {self._entry.name} was compiled for arguments of "
                      f"structure {self.in_tree}, got {treedef}")
    program = self._entry.program
    avals = [x.aval if type(x) is Array else get_aval(x) for x in leaves]
    program.check_avals([c.aval for c in self._entry.consts] + avals)
    operands = self._entry.consts + leaves
    if _array.committed_live:  # placed and committed as a jit call's (Jitted._call)
      operands = _placed_operands(self._entry, leaves, operands, self._entry.name)
    aliases = self._entry.aliases
    outs = (run_donating(program, aliases, operands) if aliases
            else program.call_arrays(operands))
    if _array.committed_live:
      _commit_if_read(self._entry, leaves, outs)
    return tree_util.tree_unflatten(self._entry.out_tree, outs)

  def as_text(self) -> str:
    return self._entry.program.text

  def serialize(self) -> bytes:
    """The executable (and the values it closed over) as bytes; load them with
    `revax.experimental.serialize_executable.deserialize_and_load(data, in_tree, out_tree)`."""
    from revax._src.serialize_executable import payload_of
    return payload_of(self._entry)

  def memory_analysis(self):
    """Compiled memory statistics: `temp_size_in_bytes`, `argument_size_in_bytes`, ..."""
    return self._entry.program.memory_stats()

  def cost_analysis(self) -> dict:
    """XLA's cost analysis of the program: "flops", "bytes accessed", ... (floats)."""
    return self._entry.program.executable.cost_analysis()

  def runtime_executable(self):
    """The runtime's loaded executable (revax's `Executable`)."""
    return self._entry.program.executable

  @property
  def input_shardings(self):
    """Where each dynamic argument goes (the default device), as the pytree of `in_avals`."""
    sig = self._signature
    from revax._src.sharding import SingleDeviceSharding
    device = SingleDeviceSharding(get_backend().devices[0])
    return tree_util.tree_unflatten(sig.in_tree, [device] * len(sig.avals))

  @property
  def output_shardings(self):
    sig = self._signature
    from revax._src.sharding import SingleDeviceSharding
    device = SingleDeviceSharding(get_backend().devices[0])
    return tree_util.tree_unflatten(sig.out_tree, [device] * len(sig.out_avals))


def jit(fun=None, /, *, in_shardings=None, out_shardings=None, static_argnums=(),
        static_argnames=(), donate_argnums=(), donate_argnames=(), keep_unused=False,
        device=None, backend=None, inline=False, compiler_options=None):
  """Compile `fun` with XLA.

  Args:
    fun: a function of arrays (and pytrees of arrays) returning arrays or pytrees of arrays.
    static_argnums: positions of arguments that are Python values fixed at trace time (hashable).
      A new value retraces.
    static_argnames: names of such arguments.
    donate_argnums: positions of arguments whose buffers the call may reuse for its results,
      as in JAX: each leaf of those arguments is offered to the first result of its shape and
      dtype not yet taken (per device over a mesh), a leaf no result can take is named in a
      warning, and an argument XLA reused is deleted by the call (using it again raises
      RuntimeError). Training loops that replace their parameters each step
      (`params = step(params, batch)`) so keep one copy of them instead of two.
    in_shardings: a sharding (NamedSharding, SingleDeviceSharding) for every argument, or a
      pytree prefix of the positional arguments with a sharding or None at each leaf. A program
      over a mesh of several devices is partitioned by XLA and runs on all of them
      (sharded_jit.py); unspecified shardings are taken from sharded arguments or left for XLA
      to choose.
    out_shardings: the same for the outputs: one sharding for every output, or a pytree prefix
      of the outputs with a sharding or None (XLA chooses) at each leaf.
    keep_unused: as in JAX, whether arguments the program does not read still count: with
      True a sharded argument that `fun` ignores still places the call on its mesh. (revax's
      compiled program takes every argument either way, where JAX's drops unused ones unless
      this is True.)
    inline: JAX's option to inline this function into an enclosing trace instead of staging a
      nested `jit` call. revax accepts it and stages the nested call either way (XLA inlines
      it when compiling, so values and speed are the same; `make_jaxpr` shows the call).
    donate_argnames: names of parameters to donate (as donate_argnums, for the arguments
      passed by position).
    device: the device to run on (JAX's older form of a single-device sharding): the
      arguments are placed there and the results committed to it. Not with shardings.
    backend: a platform name ("cpu"): RuntimeError, as in JAX, if it is not present.
    compiler_options: XLA compiler options; revax passes none to XLA, so only an empty dict
      (or None) is accepted.

  Returns:
    A function with `fun`'s signature that traces once per argument signature and runs the
    compiled program; `.lower(*args)` gives the StableHLO and `.compile()`.

  Example:
    >>> f = revax.jit(lambda x: revax.numpy.sin(x) * 2)
    >>> f(revax.numpy.ones(3))
    Array([1.6829419, 1.6829419, 1.6829419], dtype=float32)
  """
  kw = dict(in_shardings=in_shardings, out_shardings=out_shardings,
            static_argnums=static_argnums, static_argnames=static_argnames,
            donate_argnums=donate_argnums, donate_argnames=donate_argnames,
            keep_unused=keep_unused, device=device, backend=backend, inline=inline,
            compiler_options=compiler_options)
  if fun is None:
    return lambda f: jit(f, **kw)
  if compiler_options:
    raise NotImplementedError(f"jit(compiler_options={compiler_options!r}): revax passes no "
                              "options to XLA")
  if device is not None or backend is not None:
    warnings.warn("backend and device argument on jit is deprecated. You can use "
                  "`jax.device_put(..., jax.local_devices(backend=\"cpu\")[0])` on the inputs "
                  "to the jitted function to get the same behavior.", DeprecationWarning,
                  stacklevel=2)
    if in_shardings is not None or out_shardings is not None:
      raise ValueError("If backend or device is specified on jit, then in_shardings and "
                       "out_shardings should not be specified.")
    if backend is not None:
      from revax._src.api import devices as _devices
      found = _devices(backend)
      device = found[0] if device is None else device
    from revax._src.sharding import SingleDeviceSharding
    in_shardings = out_shardings = SingleDeviceSharding(device)
  donate_argnums = _donated_positions(fun, donate_argnums, donate_argnames)
  return Jitted(fun, static_argnums, static_argnames, donate_argnums,
                in_shardings=in_shardings, out_shardings=out_shardings, keep_unused=keep_unused)


def _donated_positions(fun, donate_argnums, donate_argnames) -> tuple:
  """donate_argnums together with the positions of the parameters named in donate_argnames."""
  names = (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames or ())
  nums = _normalize_argnums(donate_argnums)
  if not names:
    return nums
  sig = _try_signature(fun)
  params = list(sig.parameters.values()) if sig is not None else []
  positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  known = {p.name for p in params}
  for name in names:
    if sig is not None and name not in known and not any(p.kind is p.VAR_KEYWORD for p in params):
      raise ValueError(f"jitted function has donate_argnames={names} but the function has no "
                       f"parameter named {name!r}")
  return tuple(sorted(set(nums) | {i for i, n in enumerate(positional) if n in names}))
