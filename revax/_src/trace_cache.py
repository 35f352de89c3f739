"""The trace stage of jit: one cache entry (`Entry`) per traced signature, holding the traced
program, its closed-over values, its output tree and what later stages decide for it (its
compiled program, donation aliases, call plan), and the trace caches (`TraceCache`) those
entries live in, shared by every `jit(f)` of one function under one set of options."""
from __future__ import annotations

import threading
import weakref

from revax._src.core.avals import AbstractRef
from revax._src.interpreters import staging

__all__ = ["Entry", "TraceCache", "shared_cache", "clear_trace_caches"]


class Entry:
  """One cache entry: the traced program for one signature."""
  __slots__ = ("jaxpr", "consts", "out_tree", "out_is_leaf", "program", "name", "plan",
               "aliases", "used_inputs", "ref_mask", "compiler_options")

  def __init__(self, jaxpr, consts, out_tree, name, compiler_options=()):
    self.jaxpr, self.consts, self.out_tree, self.name = jaxpr, consts, out_tree, name
    # the jit's XLA options ((name, value) pairs, JAX's compiler_options_kvs): its program is
    # compiled with them (the trace cache an entry lives in is keyed by them)
    self.compiler_options = compiler_options
    self.out_is_leaf = out_tree.num_nodes == 1 and out_tree.num_leaves == 1
    self.program = None
    self.aliases = None  # donated (operand, result) pairs; None until a call decides them
    self.plan = None  # its call_plans.CallPlan, made on the first call that allows one
    self.used_inputs = None  # per argument, whether the program reads it (see `reads`)
    # (a deserialized executable's entry has no jaxpr, and takes no refs)
    mask = () if jaxpr is None else tuple(isinstance(a, AbstractRef) for a in jaxpr.in_avals)
    self.ref_mask = mask if any(mask) else None  # which operands are mutable array refs

  def reads(self) -> list:
    """Per dynamic argument (the closed-over constants left out), whether the program reads
    it: what decides commitment and placement, as JAX prunes unread arguments."""
    used = self.used_inputs
    if used is None and self.jaxpr is None:  # a deserialized program: every argument counts
      used = self.used_inputs = [True] * (len(self.program.in_avals) - len(self.consts))
    elif used is None:  # the jaxpr's inputs are the closed-over constants, then the arguments
      used = self.used_inputs = staging.dce_jaxpr(self.jaxpr.jaxpr)[1][len(self.consts):]
    return used


class TraceCache:
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
    self.plan = None  # the plan of the signature called last, ready to run again

  def clear(self):
    self.full.clear()
    self.fast.clear()
    self.arrays.clear()
    self.plan = None


# fun -> {jit options: TraceCache}; held weakly, so a cache lives as long as its function.
_trace_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_trace_caches_lock = threading.Lock()


def shared_cache(fun, options) -> TraceCache:
  """The trace cache of `fun` under `options`; a private one when `fun` cannot be held weakly
  or hashed."""
  try:
    with _trace_caches_lock:
      per_fun = _trace_caches.get(fun)
      if per_fun is None:
        per_fun = _trace_caches[fun] = {}
      cache = per_fun.get(options)
      if cache is None:
        cache = per_fun[options] = TraceCache()
      return cache
  except TypeError:  # not weakly referenceable, or unhashable
    return TraceCache()


def clear_trace_caches() -> None:
  """Forget every jitted function's traces (revax.clear_caches uses this)."""
  with _trace_caches_lock:
    for per_fun in list(_trace_caches.values()):
      for cache in per_fun.values():
        cache.clear()
