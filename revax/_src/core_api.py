"""The public names of jax.core, mapped to revax's core: the abstract value type, tracers and
traces, jaxpr atoms and evaluation, and the eval context.

revax has one kind of abstract value, `ShapedArray`, so `AbstractValue` is that class; `Atom` is
a jaxpr variable or literal, `Value` any value, `ParamDict` an equation's parameters.
"""
from __future__ import annotations

import contextlib
import operator
from typing import Any

from revax._src.core import eval as _eval
from revax._src.core.avals import ShapedArray
from revax._src.core.jaxpr import Atom
from revax._src.core.trace import Trace, Tracer, eval_trace, set_current_trace

__all__ = ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
           "eval_context", "eval_jaxpr", "max_dim", "min_dim"]

AbstractValue = ShapedArray
ParamDict = dict[str, Any]
Value = Any


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
  """Evaluate `jaxpr` with its constants `consts` on `args`: the list of its outputs.
  `propagate_source_info` is accepted for JAX compatibility (revax keeps no source info)."""
  del propagate_source_info
  return _eval.eval_jaxpr(jaxpr, consts, *args)


@contextlib.contextmanager
def eval_context():
  """Run the enclosed code outside every transformation (operations compute values at once),
  as jax.core.eval_context."""
  with set_current_trace(eval_trace):
    yield


def max_dim(d1, d2):
  """max(d1, d2) of two dimension sizes (revax's dimensions are integers)."""
  return max(operator.index(d1), operator.index(d2))


def min_dim(d1, d2):
  """min(d1, d2) of two dimension sizes (revax's dimensions are integers)."""
  return min(operator.index(d1), operator.index(d2))
