"""Batching (vmap): run a function on a batch by carrying each value's batch dimension.

`BatchTracer` holds a value and the position of its batch dimension (`not_mapped` when the value
is the same for every example). A primitive's batching rule maps input values and batch dims to
outputs and output batch dims. Rules move axes only when the operation needs it, and never
broadcast an unmapped operand when the primitive can take it as is. Rules run under the parent
trace, so nested vmaps, vmap of jit and vmap of grad compose.

Named axes: `vmap(f, axis_name="i")` makes "i" an axis that collectives (`psum(x, "i")`, ...)
reduce or exchange over. While `f` is traced the name is in the *axis environment* (so a
collective's wrapper can check the name is bound and read its size); the BatchTrace that owns the
name applies the primitive's collective rule (`collective_batchers`), which turns the collective
into ordinary operations over the batch dimension, even when its operand is unmapped (`psum` of a
value that is the same for every member is that value times the axis size). A trace that does
not own the name batches the collective like any primitive, and the owner below it handles it.

SPMD axes: `vmap(f, spmd_axis_name="x")` asks that, in a program partitioned over a mesh, the
batch dimension be split over mesh axis "x" (or a tuple of axes) wherever the program says how a
value is laid out. The BatchTrace carries the name; while one of its rules runs,
`batching_spmd_axis_name()` gives it, so the rules of `with_sharding_constraint`, of a jit with
in/out shardings and of shard_map put the batch dimension on those mesh axes (and jaxpr-batching
rules pass it on to the trace they batch with). While `f` is traced the names are also in
`spmd_axis_names()`, so shard_map can see that it runs under such a vmap.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import weakref

from revax._src.core.avals import get_aval
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.rules import RuleTable
from revax._src.core.trace import Trace, Tracer, set_current_trace
from revax._src.interpreters import staging

not_mapped = None
primitive_batchers = RuleTable("batching")  # prim -> rule(vals, dims, **params) -> (outs, dims)
# rules that also need the mapped axis's size (to batch a value built from unbatched inputs):
# prim -> rule(axis_size, vals, dims, **params) -> (outs, dims)
axis_size_batchers = RuleTable("batching (with axis size)")
# primitives batched even when no input is: `new_ref`, whose ref may later be written with a
# batched value, so every ref made under vmap is batched
batch_unmapped_inputs: set = set()

# prim -> rule(axis_size, axis_name, vals, dims, **params) -> (outs, dims): a collective over the
# mapped axis, applied by the BatchTrace that owns the axis name.
collective_batchers = RuleTable("collective batching")

_ids = itertools.count()
_local = threading.local()


def axis_env() -> tuple:
  """The bound named axes, outermost first, as (name, size) pairs."""
  return getattr(_local, "axis_env", ())


@contextlib.contextmanager
def extend_axis_env(name, size: int):
  """Bind axis `name` of `size` while tracing a mapped function."""
  saved = axis_env()
  _local.axis_env = saved + ((name, size),)
  try:
    yield
  finally:
    _local.axis_env = saved


def axis_size(name) -> int:
  """The size of bound axis `name`; NameError, as JAX raises, when no transformation binds it."""
  for bound, size in reversed(axis_env()):
    if bound == name:
      return size
  names = [n for n, _ in axis_env()]
  raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by vmap "
                  f"or shard_map) are available to collective operations: {names}")


def batching_axis_name():
  """The axis name of the BatchTrace whose rule is running (None for an unnamed vmap): rules
  that batch a whole jaxpr (jit, scan, cond) give it to the trace they batch it with."""
  return getattr(_local, "rule_axis_name", None)


def batching_spmd_axis_name():
  """The spmd_axis_name (a tuple of mesh axis names) of the BatchTrace whose rule is running,
  None when its vmap has none: the mesh axes the batch dimension is split over where a rule
  states a layout (a sharding constraint, a jit's shardings, shard_map's specs)."""
  return getattr(_local, "rule_spmd_axis_name", None)


def spmd_axis_names() -> tuple:
  """The spmd axis names of every vmap whose function is being traced (outermost first)."""
  return getattr(_local, "spmd_axis_names", ())


@contextlib.contextmanager
def _extend_spmd_axis_names(names):
  saved = spmd_axis_names()
  _local.spmd_axis_names = saved + tuple(names or ())
  try:
    yield
  finally:
    _local.spmd_axis_names = saved


class BatchTracer(Tracer):
  __slots__ = ("val", "batch_dim")

  def __init__(self, trace, val, batch_dim):
    self._trace = trace
    self.val = val
    self.batch_dim = batch_dim

  @property
  def aval(self):
    aval = get_aval(self.val)
    if self.batch_dim is not_mapped:
      return aval
    shape = aval.shape[:self.batch_dim] + aval.shape[self.batch_dim + 1:]
    return aval.update(shape=shape)

  def __repr__(self):
    """As JAX's: 'VmapTracer(aval=float32[2], batched=float32[3,2])' (per-example and whole)."""
    return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"


class BatchTrace(Trace):
  """Applies batching rules; `axis_size` is the size of the mapped axis, `spmd_axis_name` the
  mesh axes (a tuple, or None) its batch dimension is split over where a layout is stated."""

  def __init__(self, parent_trace: Trace, axis_size: int, axis_name=None, spmd_axis_name=None):
    self.parent_trace = parent_trace
    self.axis_size = axis_size
    self.axis_name = axis_name
    self.spmd_axis_name = spmd_axis_name
    self.id = next(_ids)

  def to_batch_info(self, x):
    if isinstance(x, BatchTracer) and x._trace is self:
      return x.val, x.batch_dim
    return x, not_mapped

  def process_primitive(self, primitive, args, params):
    vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
    collective = collective_batchers.get(primitive)
    if collective is not None and self.axis_name is not None and self.axis_name in params["axes"]:
      with set_current_trace(self.parent_trace):
        outs, out_dims = collective(self.axis_size, self.axis_name, vals, dims, **params)
    elif all(d is not_mapped for d in dims) and primitive not in batch_unmapped_inputs:
      with set_current_trace(self.parent_trace):
        return primitive.bind(*vals, **params)
    else:
      outs, out_dims = self._apply_rule(primitive, vals, dims, params)
    if primitive.multiple_results:
      return [self.wrap(o, d) for o, d in zip(outs, out_dims, strict=True)]
    return self.wrap(outs, out_dims)

  def _apply_rule(self, primitive, vals, dims, params):
    rule = primitive_batchers.get(primitive)
    saved = batching_axis_name(), batching_spmd_axis_name()
    _local.rule_axis_name, _local.rule_spmd_axis_name = self.axis_name, self.spmd_axis_name
    try:
      with set_current_trace(self.parent_trace):
        if rule is not None:
          return rule(vals, dims, **params)
        sized_rule = axis_size_batchers.get(primitive)
        if sized_rule is None:
          raise NotImplementedError(f"batching rule for '{primitive.name}' is not implemented")
        return sized_rule(self.axis_size, vals, dims, **params)
    finally:
      _local.rule_axis_name, _local.rule_spmd_axis_name = saved

  def wrap(self, val, dim):
    return BatchTracer(self, val, dim)

  def __repr__(self):
    return f"BatchTrace(axis_size={self.axis_size})"


def defvectorized(prim):
  """Batching for primitives that act on each element alone (unary elementwise): the output is
  batched where the input is."""
  def rule(vals, dims, **params):
    (x,), (d,) = vals, dims
    return prim.bind(x, **params), d
  primitive_batchers[prim] = rule
  return rule


def batch_flat(fun, args, in_dims, axis_size, axis_name=None, spmd_axis_name=None):
  """Run `fun(*args)` (flat) with each arg batched along its in_dim; returns (outs, out_dims).
  `spmd_axis_name` (a tuple of mesh axes, or None): see the module docstring."""
  from revax._src.core.trace import check_no_leaks, current_trace
  trace = BatchTrace(current_trace(), axis_size, axis_name, spmd_axis_name)
  tracers = [BatchTracer(trace, a, d) if d is not not_mapped else a
             for a, d in zip(args, in_dims, strict=True)]
  env = extend_axis_env(axis_name, axis_size) if axis_name is not None else contextlib.nullcontext()
  with env, _extend_spmd_axis_names(spmd_axis_name), set_current_trace(trace):
    outs = fun(*tracers)
  infos = [trace.to_batch_info(o) for o in outs]
  vals, dims = [v for v, _ in infos], [d for _, d in infos]
  ref = weakref.ref(trace)
  del trace, tracers, outs, infos
  check_no_leaks(ref)
  return vals, dims


def batch_jaxpr(closed, dims: tuple, axis_size: int):
  """A closed jaxpr run on batched inputs (input i batched at `dims[i]`, or not_mapped), and the
  batch dims of its outputs. Call primitives (jit, checkpoint) bind their own primitive on it.
  Collectives inside it over the batching trace's axis name are applied to the batch, and its
  layouts put the batch dimension on the trace's spmd axes."""
  return _batch_jaxpr(closed, tuple(dims), axis_size, batching_axis_name(),
                      batching_spmd_axis_name())


@staging.memoize_on_jaxpr
def _batch_jaxpr(closed, dims: tuple, axis_size: int, axis_name, spmd_axis_name=None):
  from revax._src.core.eval import eval_jaxpr
  in_avals = [a if d is not_mapped else a.update(shape=a.shape[:d] + (axis_size,) + a.shape[d:])
              for a, d in zip(closed.in_avals, dims, strict=True)]
  store = {}

  def fun(*args):
    outs, out_dims = batch_flat(
        lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), args, list(dims), axis_size,
        axis_name, spmd_axis_name)
    store["out_dims"] = tuple(out_dims)
    return outs

  jaxpr, consts = staging.trace_to_jaxpr(fun, in_avals)
  return ClosedJaxpr(jaxpr, consts), store["out_dims"]
