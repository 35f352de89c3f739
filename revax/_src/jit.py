"""jit: trace once per signature, compile with XLA, run the cached executable.

One pipeline, each step a module below this one, handed data (never calling back up):

- trace (trace_cache.py): `jit(f)` flattens its arguments, looks up (argument structure, avals,
  static arguments) in its cache, and on a miss traces `f` to a jaxpr (Python runs once per
  cache entry);
- decide placement, as data: donated operands (donation.py), the device committed arguments
  name (jit_placement.py), or the shardings of a call over a mesh (sharded_jit.py);
- compile or take from the cache (program_cache.py on one device, spmd_program.py over a mesh);
- execute: the program on the operands, and a call plan (call_plans.py) for the next call.

Outside any transformation the compiled program is called directly; inside one (grad, vmap,
another jit) the call is the `jit` primitive holding the jaxpr (jit_primitive.py), which each
transformation interprets with its rule. Closed-over arrays and outer tracers become leading
operands of that primitive, so its jaxpr has no constants. `.trace`, `.lower` and `.compile`
return the stages of jit_stages.py.

A repeated call outside transformations goes through its signature's `CallPlan` (made on the
first call with device Arrays): the structure, avals and buffer pointers of the arguments are
checked in a few C-level steps and the executable runs at once; anything the plan does not
cover takes the general path, which converts, uploads, retraces or raises as needed.
"""
from __future__ import annotations

import functools
import inspect
import warnings
import weakref

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.config import config
from revax._src.core import mesh_context as _mesh_context
from revax._src.core.errors import UnexpectedTracerError
from revax._src.core import traceback_util
from revax._src.core.traceback_util import api_boundary
from revax._src.core.typecheck import check_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import Tracer, _context, eval_trace
from revax._src.interpreters import discharge, dispatch, staging
from revax._src.lax import state as _state
from revax._src.runtime.array import Array
from revax._src.runtime import array as _array
from revax._src.runtime import placement as _placement
from revax._src.runtime import sharded as _rt_sharded
from revax._src import sharded_jit
from revax._src import stages as _stages
from revax._src.call_plans import MISS as _MISS
from revax._src.call_plans import CallPlan as _CallPlan
from revax._src.call_plans import ShardedPlan as _ShardedPlan
from revax._src.call_plans import use_plan as _use_plan
from revax._src.donation import donated_operands, donation_aliases, run_donating
from revax._src.jit_placement import commit_if_read as _commit_if_read
from revax._src.jit_placement import placed_operands as _placed_operands
from revax._src.jit_placement import used_leaves as _used_leaves
from revax._src.jit_primitive import jit_p, run_with_refs, shard_params
from revax._src.jit_stages import Lowered, ShardedLowered, Traced
from revax._src.program_cache import program_for
from revax._src.sharded_api import devices
from revax._src.sharding import SingleDeviceSharding
from revax._src.spmd_program import names_mesh
from revax._src.stage_info import Signature as _Signature
from revax._src.trace_cache import Entry as _Entry
from revax._src.trace_cache import shared_cache as _shared_cache


all_jitted: "weakref.WeakSet[Jitted]" = weakref.WeakSet()


def _normalize_argnums(argnums, nargs_hint=None):
  if argnums is None:
    return ()
  if isinstance(argnums, int):
    return (argnums,)
  return tuple(argnums)


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


def _check_compiler_options(options, name, sharded):
  """XLA options must hash (they key the caches: JAX's error at jit()) and, in revax, go with
  a one-device program."""
  try:
    hash(options)
  except TypeError as e:
    raise ValueError(f"Hashing global cache key lead to an exception. The error was: {e} "
                     f"(compiler_options={dict(options)!r} of the jitted function {name})") from e
  if sharded:
    raise NotImplementedError(f"jit(compiler_options=...) with in_shardings/out_shardings "
                              f"({name}): revax hands XLA options to one-device programs only")


def _key_value(key):
  """The index or dict key inside a path entry (a raw key, or a SequenceKey/DictKey object)."""
  for attr in ("idx", "key"):
    if hasattr(key, attr):
      return getattr(key, attr)
  return key


def _argument_named(x, xs, debug):
  """The name of the flat argument among `xs` that `x` is (None when it is none of them)."""
  for i, a in enumerate(xs):
    if a is x:
      names = debug.arg_names_thunk() if debug.arg_names_thunk is not None else None
      return names[i] if names is not None and i < len(names) else f"args[{i}]"
  return None


class Jitted:
  """The result of `revax.jit(fun)`: call it, or `.lower(*args)` to see and compile the program.

  Its type is named `PjitFunction` and it prints as `<PjitFunction of fun>`, as JAX's jitted
  functions do (chex's `is_traceable` recognises a jitted function by that type name)."""

  def __init__(self, fun, static_argnums=None, static_argnames=None, donate_argnums=(),
               name=None, in_shardings=None, out_shardings=None, keep_unused=False,
               compiler_options=()):
    if not callable(fun):
      raise TypeError(f"jit expects a callable, got {fun!r} of type {type(fun).__name__}")
    self.fun = fun
    self.name = name or getattr(fun, "__name__", "fun")
    self._signature = _try_signature(fun)
    # (as jax: the names of static positions are inferred only when no names are given, and
    # the positions of static names only when no positions are)
    infer = (static_argnums is None, static_argnames is None)
    self.static_argnums = _normalize_argnums(() if static_argnums is None else static_argnums)
    self.static_argnames = ((static_argnames,) if isinstance(static_argnames, str)
                            else tuple(static_argnames or ()))
    self._resolve_static_names(*infer)
    self._compiler_options = tuple(compiler_options)  # ((name, value), ...): JAX's kvs
    if self._compiler_options:
      _check_compiler_options(self._compiler_options, self.name,
                              in_shardings is not None or out_shardings is not None)
    self._traces = _shared_cache(fun, (self.static_argnums, self.static_argnames, self.name,
                                       self._compiler_options))
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

  def _resolve_static_names(self, infer_nums: bool = True, infer_names: bool = True):
    """Static args given by position or by name refer to the same parameters (as in JAX): the
    positions of the static names are static too when `infer_nums` (no static_argnums were
    given), the names of the static positions when `infer_names`."""
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
    given_names, given_nums = set(names), set(nums)
    for i, p in enumerate(params):
      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
        if infer_names and i in given_nums and p.kind is p.POSITIONAL_OR_KEYWORD:
          names.add(p.name)
        if infer_nums and p.name in given_names:
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
      discharge.ref_error_for_outputs(
          [get_aval(x) for x in flat_out],
          f"function {debug.fun_description()} traced for jit",
          origin=lambda k: _argument_named(flat_out[k], xs, debug))
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
    consts = [c if isinstance(c, (Tracer, Array, _state.Ref)) else dispatch.to_array(c)
              for c in consts]
    closed = ClosedJaxpr(jaxpr, [])
    if config.enable_checks:
      check_jaxpr(closed)
    return _Entry(closed, consts, out_store["tree"], self.name, self._compiler_options)

  def __call__(self, *args, **kwargs):
    # The work of `api_boundary`, inlined: a wrapper costs more than the cached call itself.
    depth = traceback_util.boundary_depth
    if _mesh_context.settle_jit is not None and _mesh_context._state.mesh is not None and \
        _context.trace is eval_trace:
      return self._call_on_mesh(args, kwargs)
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

  def _call_on_mesh(self, args, kwargs):
    """A call under `set_mesh(mesh)`: its results placed over the mesh as JAX places them
    (mesh_placement.py); jit with in/out shardings places its own."""
    depth = traceback_util.boundary_depth
    depth.value += 1
    try:
      plan = self._traces.plan
      if type(plan) is _CallPlan and not kwargs and not self._sharded:  # (as __call__'s)
        outs = plan.call(args)
        if outs is not _MISS:
          leaves = args if plan.treedef is None else tree_util.tree_leaves(args)
          if _array.committed_live:
            _commit_if_read(plan.entry, leaves, outs)
          return _mesh_context.settle_jit(plan.entry, leaves, outs)
      out = self._call(args, kwargs)
      if self._sharded or config.disable_jit:
        return out
      entry, leaves = self._lookup(args, kwargs)
      return _mesh_context.settle_jit(entry, leaves, out)
    except Exception as e:
      if depth.value != 1:
        raise
      raise traceback_util.filtered(e)
    finally:
      depth.value -= 1

  def _call(self, args, kwargs):
    """A call that its signature's plan could not run (see `CallPlan`): looks the signature up
    (tracing on a miss), converts and checks the arguments, and runs or binds the program."""
    if config.disable_jit:
      return self.fun(*args, **kwargs)
    if self._sharded:  # eagerly runs over the mesh; traced, binds jit_p with the shardings
      out = self._call_with_shardings(args, kwargs)
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
        if entry.compiler_options:
          raise NotImplementedError(f"jit(compiler_options=...) of {self.name} called on "
                                    "arguments over a mesh: revax hands XLA options to "
                                    "one-device programs only")
        _placement.committed_device(_used_leaves(entry, leaves), self._error_name(),
                                    lambda: self._split(args, kwargs)[3]())  # (conflicts only)
        out = self._call_with_shardings(args, kwargs)
        _commit_if_read(entry, leaves, out)
        return out
    if entry.ref_mask is not None:
      outs = self._call_with_refs(entry, leaves, args, kwargs)
    elif _context.trace is eval_trace:
      # the cache key fixed the avals: no check needed before running
      operands = entry.consts + leaves if entry.consts else leaves
      if _array.committed_live:
        operands = _placed_operands(entry, leaves, operands, self._error_name(),
                                    lambda: self._split(args, kwargs)[3]())
      program = entry.program
      if program is None or entry.aliases is None:
        if entry.aliases is None:
          entry.aliases = self._donation_aliases(args, entry) if self._donate_argnums else ()
        # (compiled first for the backend the operands are on: a program that only that
        # backend compiles, e.g. complex128 on the CPU device beside a TPU, runs there)
        program = entry.program = program_for(entry.jaxpr, entry.name, entry.aliases,
                                              entry.compiler_options, _operand_backend(operands))
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
      options = {"compiler_options": entry.compiler_options} if entry.compiler_options else {}
      outs = jit_p.bind(*entry.consts, *leaves, jaxpr=entry.jaxpr, name=entry.name, **options)
    return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)

  def _call_with_refs(self, entry: _Entry, leaves, args, kwargs) -> list:
    """A call of a program that takes mutable array refs (arguments, or closed-over ones):
    checked for a ref passed twice, then run by `jit_primitive.run_with_refs`."""
    operands = list(entry.consts) + list(leaves)
    nconst = len(entry.consts)
    seen: dict = {}
    for k, (x, is_ref) in enumerate(zip(operands, entry.ref_mask, strict=True)):
      if is_ref and seen.setdefault(id(x), k) != k:
        self._aliased_ref_error(seen[id(x)], k, nconst, x, args, kwargs)
    return run_with_refs(entry, operands)

  def _aliased_ref_error(self, first, second, nconst, ref, args, kwargs):
    names = self._split(args, kwargs)[3]()
    where = staging.DebugInfo(self.fun, "jit", None).fun_description()
    ty = repr(get_aval(ref))  # (JAX's messages print dtypes in full: Ref{float32[]})
    if first < nconst:
      raise ValueError(f"when tracing {where} for jit, a mutable array reference of type {ty} "
                       f"was both closed over and passed as the argument {names[second - nconst]}")
    raise ValueError(f"only one reference to a mutable array may be passed as an argument to a "
                     f"function, but when tracing {where} for jit the mutable array reference of "
                     f"type {ty} appeared at both {names[first - nconst]} and "
                     f"{names[second - nconst]}.")

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
      return self._lower_with_shardings(args, kwargs)
    entry = self._entry(leaves, key_head, call, names)
    if (self._reads_sharded(entry, leaves) or _rt_sharded.any_sharded(entry.consts)
        or names_mesh(entry.jaxpr)):
      return self._lower_with_shardings(args, kwargs)
    in_tree = key_head[0]
    if entry.aliases is None and self._donate_argnums:
      entry.aliases = self._donation_aliases(args, entry)
    return Lowered(entry, len(entry.consts),
                   self._stage_signature(args, kwargs, in_tree, leaves, entry, lowered=True))

  def eval_shape(self, *args, **kwargs):
    """The results' shapes and dtypes for these arguments (ShapeDtypeStructs), nothing run."""
    return self.trace(*args, **kwargs).out_info

  def trace(self, *args, **kwargs) -> "Traced":
    """Trace for these arguments (no lowering): a `Traced`, whose `.jaxpr` is the program and
    `.lower()` lowers it."""
    leaves, key_head, call, names = self._split(args, kwargs)
    entry = self._entry(leaves, key_head, call, names)
    return Traced(entry, self._stage_signature(args, kwargs, key_head[0], leaves, entry),
                  lambda: self.lower(*args, **kwargs))

  def _donated_operands(self, args, entry: _Entry) -> list[int]:
    """The flat operands of `entry`'s program (closed-over values first) that a call on `args`
    donates."""
    return donated_operands(self._donate_argnums, self.static_argnums, args, len(entry.consts),
                            len(entry.jaxpr.in_avals))

  def _donation_aliases(self, args, entry: _Entry) -> tuple:
    """(operand, result) pairs of a one-device call of `entry` on `args` (donation.py)."""
    return donation_aliases(entry.jaxpr, self._donated_operands(args, entry))

  # --- calls over shardings (sharded_jit.py prepares them from the data handed down) ---------
  def _prepare_with_shardings(self, args, kwargs):
    """(entry, dynamic leaves, their structure, sharded_jit.PreparedCall) of a call over
    shardings: traced, the shardings requested and the arguments' own, donation."""
    leaves, key_head, call, names = self._split(args, kwargs)
    entry = self._entry(leaves, key_head, call, names)
    explicit, out_shardings = sharded_jit.requested(self._in_shardings, self._out_shardings,
                                                    entry, key_head[0], leaves)
    arg_shardings = sharded_jit.argument_shardings(leaves, explicit, names)
    prepared = sharded_jit.prepare(entry, leaves, arg_shardings, out_shardings,
                                   self._donated_operands(args, entry))
    return entry, leaves, key_head[0], prepared

  def _call_with_shardings(self, args, kwargs):
    """A call that involves shardings (in/out shardings, sharded arguments, a program naming a
    mesh): run over the mesh, or on one device with its results laid out as the shardings say;
    under a transformation, the jit primitive carrying the requested shardings as params."""
    if _context.trace is not eval_trace:
      return self._bind_with_shardings(args, kwargs)
    key = None
    if not kwargs and not self.static_argnums:
      key, leaves = sharded_jit.fast_key(args)
      if key is not None:
        cache = self.__dict__.setdefault("_sharded_calls", {})
        fast = cache.get(key)
        if fast is not None:
          entry, program, actions, plan = fast
          flat = entry.consts + leaves if entry.consts else leaves
          out = self._checked_over_mesh(args, kwargs,
                                        sharded_jit.run(entry, program, actions, flat))
          if plan is not None:
            self._traces.plan = plan  # this signature's next call goes through it
          return out
    entry, leaves, _, prepared = self._prepare_with_shardings(args, kwargs)
    program = prepared.program
    actions = None if program is not None else sharded_jit.finish_actions(prepared.out_shardings)
    if entry.ref_mask is not None:  # mutable array refs among the operands (flax's nnx.jit)
      if program is not None:
        raise NotImplementedError(f"jit of {self.name}: mutable array references as operands "
                                  "of a program over a mesh of several devices")
      outs = sharded_jit.finish_one_device(self._call_with_refs(entry, leaves, args, kwargs),
                                           actions)
      return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)
    out = self._checked_over_mesh(args, kwargs,
                                  sharded_jit.run(entry, program, actions, prepared.flat))
    if (not kwargs and not self.static_argnums and key is not None
        and not any(isinstance(c, Tracer) for c in entry.consts)):
      plan = _ShardedPlan.make(args, leaves, entry, program)
      cache[key] = (entry, program, actions, plan)
      if plan is not None:
        self._traces.plan = plan
    return out

  def _bind_with_shardings(self, args, kwargs):
    """A call under a transformation (grad, vmap, an outer jit): the jit primitive, carrying the
    requested shardings as its params (jit_primitive.py's rules keep them through every
    transformation)."""
    leaves, key_head, call, names = self._split(args, kwargs)
    entry = self._entry(leaves, key_head, call, names)
    explicit, out_shardings = sharded_jit.requested(self._in_shardings, self._out_shardings,
                                                    entry, key_head[0], leaves)
    params = shard_params([None] * len(entry.consts) + explicit, out_shardings)
    outs = jit_p.bind(*entry.consts, *leaves, jaxpr=entry.jaxpr, name=entry.name, **params)
    return outs[0] if entry.out_is_leaf else tree_util.tree_unflatten(entry.out_tree, outs)

  def _checked_over_mesh(self, args, kwargs, result):
    """`result`, after debug_nans/debug_infs checks of its values (assembled from the shards):
    on a NaN/inf, `fun` runs again op by op to name the primitive that made it, as on one
    device (the FloatingPointError of the jitted function itself when that run is clean or
    cannot run, e.g. because the call consumed a donated argument)."""
    if not config.debug_checks:
      return result
    try:
      dispatch.check_special_values(f"jit({self.name})", tree_util.tree_leaves(result))
    except FloatingPointError as e:
      try:
        with config.override("disable_jit", True):
          self.fun(*args, **kwargs)
      except FloatingPointError:
        raise
      except Exception:  # noqa: BLE001 - the call's own error is the one to report
        raise e from None
      raise
    return result

  def _lower_with_shardings(self, args, kwargs) -> ShardedLowered:
    entry, leaves, in_tree, prepared = self._prepare_with_shardings(args, kwargs)
    signature = self._stage_signature(args, kwargs, in_tree, leaves, entry, lowered=True)
    return ShardedLowered(entry, prepared.flat, prepared.program, prepared.out_shardings,
                          prepared.arg_shardings, signature)

  def _stage_signature(self, args, kwargs, in_tree, leaves, entry, lowered=False) -> _Signature:
    """What the stages of a call on `args`/`kwargs` report (stage_info.Signature)."""
    return _Signature.for_call(self.name, in_tree, leaves, self._donated_leaves(args, kwargs),
                               self._donate_argnums, entry, lowered)

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


def jit(fun=None, /, *, in_shardings=None, out_shardings=None, static_argnums=None,
        static_argnames=None, donate_argnums=(), donate_argnames=(), keep_unused=False,
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
    compiler_options: XLA options by name (a dict, e.g. {"xla_cpu_enable_fast_math": True}),
      handed to XLA when the program compiles, as JAX does: an unknown name is XLA's error
      (JaxRuntimeError) at the first call; each set of options is its own trace and program.
      As in JAX, only a top-level jit takes them: one staged into another program (an outer
      jit, make_jaxpr, grad's linearization, a loop body) is a ValueError; vmap and jvp of it
      run with them. Not with in_shardings/out_shardings or arguments over a mesh.

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
  # (as JAX: a dict's items, in order; `.items()` of anything else is its AttributeError)
  options = () if compiler_options is None else tuple(compiler_options.items())
  if device is not None or backend is not None:
    warnings.warn("backend and device argument on jit is deprecated. You can use "
                  "`jax.device_put(..., jax.local_devices(backend=\"cpu\")[0])` on the inputs "
                  "to the jitted function to get the same behavior.", DeprecationWarning,
                  stacklevel=2)
    if in_shardings is not None or out_shardings is not None:
      raise ValueError("If backend or device is specified on jit, then in_shardings and "
                       "out_shardings should not be specified.")
    if backend is not None:
      found = devices(backend)
      device = found[0] if device is None else device
    in_shardings = out_shardings = SingleDeviceSharding(device)
  donate_argnums = _donated_positions(fun, donate_argnums, donate_argnames)
  return Jitted(fun, static_argnums, static_argnames, donate_argnums,
                in_shardings=in_shardings, out_shardings=out_shardings, keep_unused=keep_unused,
                compiler_options=options)


_stages.Wrapped.register(Jitted)


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


def _operand_backend(operands):
  """The backend of the first operand with a device buffer (None: none has one)."""
  for x in operands:
    if type(x) is Array and x._buf is not None:
      return x._buf.device.client
  return None
