"""What jax.extend.core offers libraries for asking about the trace they run under, on revax's
trace stack: `take_current_trace`, `concrete_or_error`, `gensym`, `array_types` and the
`unsafe_*_DO_NOT_USE` queries (is this code under jit? under vmap? which named axes are bound?).

JAX's queries look at the chain of parent traces from the current one (a vmap or jvp trace
keeps the trace it runs its rules under, a staging trace the one current when it began);
revax's BatchTrace and JVPTrace hold the same `parent_trace` and its DynamicJaxprTrace the
`enclosing_trace`, so the answers agree: under jit means a DynamicJaxprTrace (jit's and
make_jaxpr's staging trace) on that chain, under vmap a BatchTrace on it.
"""
from __future__ import annotations

import contextlib

import numpy as np

from revax._src.core import dtypes
from revax._src.core.jaxpr import Var
from revax._src.core.trace import (ConcretizationTypeError, Tracer, current_trace, eval_trace,
                                    set_current_trace)
from revax._src.interpreters import batching
from revax._src.interpreters.staging import DynamicJaxprTrace

# The concrete array types a value of an operand may be (JAX's abstract_arrays.array_types):
# NumPy arrays and the NumPy scalar types of revax's dtypes (with C long long and int, which
# NumPy keeps as types of their own).
array_types: set[type] = {np.ndarray} | {d.type for d in dtypes.SUPPORTED} | {np.longlong,
                                                                              np.intc}


@contextlib.contextmanager
def take_current_trace():
  """Yield the current trace, with the eval trace current inside the block (JAX's form for a
  rule that binds on the trace it was handed, not on the one it runs under).

  Example:
    >>> from revax.extend.core import take_current_trace
    >>> with take_current_trace() as t:
    ...   print(t)
    EvalTrace
  """
  prev = current_trace()
  with set_current_trace(eval_trace):
    yield prev


def concrete_or_error(force, val, context: str = ""):
  """`force(val)` for a concrete `val` (or a tracer whose value is known now); for a tracer
  without one, ConcretizationTypeError naming `context` (JAX's core.concrete_or_error).

  Args:
    force: the conversion (e.g. `int`), or None for the value itself.
    val: a value or a tracer.
    context: what needed the value, added to the error message.

  Example:
    >>> from revax.extend.core import concrete_or_error
    >>> concrete_or_error(int, jnp.int32(3), "the size")
    3
  """
  force = (lambda x: x) if force is None else force
  if isinstance(val, Tracer):
    value = val.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          "Abstract tracer value encountered where concrete value is expected: traced array "
          f"with shape {val.aval.str_short()}\n{context}{val._provenance()}")
    return force(value)
  return force(val)


def gensym():
  """A maker of fresh jaxpr variables: `gensym()(aval)` is a new `Var` (JAX's core.gensym)."""
  return Var


def _trace_stack() -> list:
  trace, stack = current_trace(), []
  while trace is not None:
    stack.append(trace)
    trace = getattr(trace, "parent_trace", None) or getattr(trace, "enclosing_trace", None)
  return stack


def unsafe_am_i_under_a_jit() -> bool:
  """Whether the current code is being staged out (jit, make_jaxpr), possibly under vmap or
  jvp traces above the staging one."""
  return any(type(t) is DynamicJaxprTrace for t in _trace_stack())


def unsafe_am_i_under_a_vmap() -> bool:
  """Whether a vmap trace is on the current trace's chain of parents."""
  return any(isinstance(t, batching.BatchTrace) for t in _trace_stack())


def unsafe_get_axis_names() -> list:
  """The named axes bound now (vmap's axis_name, shard_map's mesh axes), outermost first."""
  return [name for name, _ in batching.axis_env()]


def nonempty_axis_env() -> bool:
  """Whether any named axis is bound now."""
  return bool(batching.axis_env())
