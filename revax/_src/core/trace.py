"""Primitives, traces and tracers, and the context that says which trace is current.

A transformation is a `Trace`: it decides what `bind`ing a primitive means (evaluate it, record it
in a jaxpr, push tangents through it, batch it). Values under a transformation are `Tracer`s, each
knowing its trace. The current trace lives in a thread-local context; `Primitive.bind` hands the
primitive to it. A trace's rules run with its *parent* trace made current, so transformations
nest without a global level stack: the innermost trace processes a primitive first, and the
operations its rule performs are processed by the trace below it. Values that are not tracers of
the current trace are constants to it (a jvp trace gives them zero tangents, a jaxpr trace
records them as constants).
"""
from __future__ import annotations

import contextlib
import gc
import operator
import threading

from revax._src.core import dtypes, memory_space, sharding_types, vma
from revax._src.core.avals import ShapedArray, get_aval, pytype_aval_mappings
from revax._src.core.errors import (ConcretizationTypeError, ConcreteValueError, EscapedTracerError,
                                    TracerArrayConversionError, TracerBoolConversionError,
                                    TracerIntegerConversionError, UnexpectedTracerError)


class Primitive:
  """An operation that transformations know about.

  `bind(*args, **params)` applies it under the current trace. Params must be hashable (tuples,
  never lists), since jitted programs are cached by them. `multiple_results` primitives return a
  list of outputs.
  """
  multiple_results = False

  def __init__(self, name: str, *, multiple_results: bool = False):
    self.name = name
    self.multiple_results = multiple_results
    self._abstract_eval = None

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    return _context.trace.process_primitive(self, args, params)

  def def_abstract_eval(self, rule):
    """Register `rule(*avals, **params) -> aval` (or list of avals if multiple_results)."""
    if self._abstract_eval is not None:
      raise ValueError(f"abstract evaluation rule for primitive '{self.name}' is already registered")
    self._abstract_eval = rule
    return rule

  def abstract_eval(self, *avals, **params):
    if self._abstract_eval is None:
      raise NotImplementedError(f"primitive '{self.name}' has no abstract evaluation rule")
    out = self._abstract_eval(*avals, **params)
    if vma._state.depth:  # inside a shard_map body with check_vma: results vary as JAX types them
      out = vma.apply(self, avals, params, out)
    if memory_space.active:  # a value was typed outside device memory (pinned host memory)
      out = memory_space.apply(self, avals, params, out)
    if sharding_types.active:  # shardings in types (Explicit mesh axes) exist in this process
      for a in avals:
        if getattr(a, "sharding", None) is not None:
          return sharding_types.apply(self, avals, params, out)
    return out

  def get_bind_params(self, params) -> dict:
    """The keyword arguments that re-bind an equation of this primitive with `params` (JAX's
    `get_bind_params`; equinox's jaxpr interpreters call it). revax's equation params are its
    bind params, call primitives' included."""
    return dict(params)

  def impl(self, *args, **params):
    """Evaluate on concrete values (what the eval trace does)."""
    return _eager_apply[0](self, args, params)


def _no_eager_apply(prim, args, params):
  raise RuntimeError("revax's eager dispatcher is not loaded; import revax")


_eager_apply = [_no_eager_apply]


def set_eager_apply(fn) -> None:
  """Install `fn(primitive, args, params)`, the evaluation of primitives on concrete values."""
  _eager_apply[0] = fn


# --- traces and tracers --------------------------------------------------------------------------
class Trace:
  """A transformation's interpretation of primitives. Subclasses implement process_primitive."""

  def process_primitive(self, primitive: Primitive, args, params):
    raise NotImplementedError

  @property
  def main(self):
    """What identifies this transformation (JAX's `trace.main`, its tag): the trace itself,
    which every tracer of it holds (equinox asks `x._trace.main is main`)."""
    return self


class EvalTrace(Trace):
  """The bottom of every stack: primitives run on concrete values."""

  def process_primitive(self, primitive, args, params):
    for a in args:
      if isinstance(a, Tracer):
        raise UnexpectedTracerError(
            f"Encountered an unexpected tracer {a!r} at primitive '{primitive.name}': a value "
            "computed inside a transformation (jit, grad, vmap, ...) escaped it, e.g. through a "
            "global variable or a side effect. Return it from the transformed function instead.")
    return _eager_apply[0](primitive, args, params)

  def __repr__(self):
    return "EvalTrace"


eval_trace = EvalTrace()


class _Context(threading.local):
  def __init__(self):
    self.trace = eval_trace


_context = _Context()


def current_trace() -> Trace:
  return _context.trace


@contextlib.contextmanager
def set_current_trace(trace: Trace):
  """Make `trace` the current trace for the duration of the block."""
  ctx = _context
  prev, ctx.trace = ctx.trace, trace
  try:
    yield
  finally:
    ctx.trace = prev


def check_no_leaks(trace_ref) -> None:
  """With jax_check_tracer_leaks on: raise JAX's Exception if the trace `trace_ref` (a weak
  reference) is still alive after its transformation ended because a tracer of it is
  referenced (stored in a global, a list, an attribute). Call it once the tracing function's
  own references to the trace and its tracers are gone."""
  from revax._src.core.config import config
  if trace_ref() is None or not config.read("check_tracer_leaks"):
    return
  gc.collect()  # tracers alive only through reference cycles cannot be used, so do not count
  trace = trace_ref()
  if trace is None:
    return
  leaked = [r for r in gc.get_referrers(trace) if isinstance(r, Tracer)]
  if leaked:
    listing = "\n\n".join(f"{type(t).__name__} {t.aval.str_short()}" for t in leaked[:5])
    raise Exception(f"Leaked trace {trace!r}. Leaked tracer(s):\n\n{listing}")  # noqa: TRY002


def _concrete_only(what: str) -> property:
  """A property of concrete Arrays that raises JAX's ConcretizationTypeError on a tracer."""
  return property(lambda self: _raise(self._not_concrete(what)))


class Tracer:
  """A value under a transformation. Operators are installed by revax.numpy (as on Array)."""
  __slots__ = ("_trace", "__weakref__")
  __array_priority__ = 1000

  @property
  def aval(self) -> ShapedArray:
    raise NotImplementedError

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)
  itemsize = property(lambda self: self.aval.dtype.itemsize)
  nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object (a 0-d traced array)")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d traced array")
    return (self[i] for i in range(self.shape[0]))

  def __reversed__(self):
    if not self.shape:  # JAX's reverses by indexing, whose error this is
      raise IndexError("Too many indices: array is 0-dimensional, but 1 were indexed")
    return (self[i] for i in reversed(range(self.shape[0])))

  # --- the parts of the Array API that need a concrete array ---------------------------------
  # As in JAX: these raise ConcretizationTypeError on a traced value (under grad too, where the
  # primal is known: they ask about device memory, which a traced value does not own), except
  # `sharding` and `device`, which raise AttributeError so that hasattr() and getattr() with a
  # default work.
  def _not_concrete(self, what: str) -> ConcretizationTypeError:
    return ConcretizationTypeError(
        f"Abstract tracer value encountered where concrete value is expected: {what} "
        f"traced array with shape {self.aval.str_short()}.{self._provenance()}")

  @property
  def sharding(self):
    raise AttributeError(f"The 'sharding' attribute is not available on traced array with shape "
                         f"{self.aval.str_short()}. To query sharding information on tracers, "
                         "use `revax.typeof(x)`.")

  @property
  def device(self):
    raise AttributeError(f"The 'device' attribute is not available on traced array with shape "
                         f"{self.aval.str_short()}.")

  # placement attributes of concrete Arrays: JAX's ConcretizationTypeError on a tracer
  committed = _concrete_only("The 'committed' attribute is not available on")
  addressable_shards = _concrete_only("The 'addressable_shards' attribute is not available on")
  global_shards = _concrete_only("The global_shards property was called on")
  is_fully_addressable = _concrete_only("The is_fully_addressable property was called on")
  is_fully_replicated = _concrete_only("The is_fully_replicated property was called on")
  traceback = _concrete_only("The traceback property was called on")

  def addressable_data(self, index):
    raise self._not_concrete("The addressable_data() method was called on")

  def delete(self):
    raise self._not_concrete("The delete() method was called on")

  def devices(self):
    raise self._not_concrete("The devices() method was called on")

  def is_deleted(self):
    raise self._not_concrete("The is_deleted() method was called on")

  def on_device_size_in_bytes(self):
    raise self._not_concrete("The on_device_size_in_bytes() method was called on")

  def unsafe_buffer_pointer(self):
    raise self._not_concrete("The unsafe_buffer_pointer() method was called on")

  def __dlpack__(self, *args, **kwargs):
    raise self._not_concrete("The __dlpack__() method was called on")

  def to_concrete_value(self):
    """This value as a concrete array if it is known now, else None.

    Outside jit a value under jvp, grad, vjp, linearize or their Jacobians has a concrete primal
    (reverse mode evaluates primals eagerly and stages only the linear part), so Python control
    flow on it works, as in JAX; transformations that compute abstractly (jit, vmap) return None.
    """
    return None

  def _provenance(self) -> str:
    """Where this traced value came from (the traced function and the arguments it depends
    on), for error messages; transformations that know it override this."""
    return ""

  def _concretization_error(self, what, cls=ConcretizationTypeError):
    where = self._provenance() or (" The value depends on the function's arguments and is not "
                                   "known while tracing.")
    return cls(
        f"Attempted {what} on a traced value {self.aval.str_short()} ({type(self).__name__})."
        f"{where} Use revax.lax.cond / revax.numpy.where for data-dependent choices, or "
        "mark the argument static (jit's static_argnums / static_argnames).")

  def _concrete(self, what, cls=ConcretizationTypeError):
    value = self.to_concrete_value()
    if value is None:
      raise self._concretization_error(what, cls)
    return value

  def __bool__(self):
    return bool(self._concrete("bool() conversion (e.g. in an `if` or `while`)",
                               TracerBoolConversionError))

  def __int__(self):
    return int(self._concrete("int() conversion"))

  def __float__(self):
    return float(self._concrete("float() conversion"))

  def __complex__(self):
    return complex(self._concrete("complex() conversion"))

  def __index__(self):
    self._integer_scalar()
    return operator.index(self._concrete("use as an index (__index__)",
                                         TracerIntegerConversionError))

  def _integer_scalar(self) -> None:
    """TypeError unless this is an integer scalar (what hex(), oct() and __index__ take)."""
    aval = self.aval
    if aval.shape or not dtypes.is_integer(aval.dtype):
      raise TypeError("Only integer scalar arrays can be converted to a scalar index.")

  def __hex__(self):
    self._integer_scalar()
    return hex(self._concrete("hex() conversion", TracerIntegerConversionError))

  def __oct__(self):
    self._integer_scalar()
    return oct(self._concrete("oct() conversion", TracerIntegerConversionError))

  def item(self, *args):
    return self._concrete("item()").item(*args)

  def tolist(self):
    return self._concrete("tolist()").tolist()

  def __array__(self, *args, **kwargs):
    raise TracerArrayConversionError(
        f"The numpy.ndarray conversion method __array__() was called on a traced array "
        f"{self.aval.str_short()}.{self._provenance()} NumPy cannot see values inside a "
        "transformation. Use revax.numpy functions instead of numpy ones on traced values.")

  def __hash__(self):
    raise TypeError(f"unhashable type: {type(self).__name__} (traced arrays are unhashable)")

  def __repr__(self):
    return f"Traced<{self.aval.str_short()}>with<{self._trace!r}>"


pytype_aval_mappings[Tracer] = lambda t: t.aval


def _raise(error: Exception):
  raise error


def to_concrete_value(x):
  """`x` itself if it is not a tracer; a tracer's concrete value if one is known (see
  `Tracer.to_concrete_value`); else None. Every place that needs a value while tracing (Python
  control flow, boolean masks, shapes read from values) asks this."""
  if isinstance(x, Tracer):
    return x.to_concrete_value()
  return x




__all__ = ["Primitive", "Trace", "Tracer", "EvalTrace", "eval_trace", "current_trace",
           "set_current_trace", "get_aval", "ConcretizationTypeError", "TracerArrayConversionError",
           "EscapedTracerError", "to_concrete_value", "ConcreteValueError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]
