"""JAX's partial-evaluation entry points (`jax.interpreters.partial_eval`) on revax's
`PartialEvalTrace`: run what is known now, stage what depends on unknown inputs.

`trace_to_jaxpr_nounits(fun, pvals)` calls a `WrappedFun` with known values and unknown avals;
operations on known values run at once (in the current trace), the others are recorded. flax's
`lazy_init` and its scan use it to compute what does not depend on traced inputs.
"""
from __future__ import annotations

from revax._src.core import extended_dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.trace import current_trace, set_current_trace
from revax._src.interpreters import staging
from revax._src.interpreters.partial_eval import PartialEvalTrace

__all__ = ["PartialVal", "trace_to_jaxpr_nounits", "trace_to_jaxpr_dynamic"]


class PartialVal(tuple):
  """`(aval, None)` for an unknown value of type aval, `(None, value)` for a known value.

  Example:
    >>> from revax.interpreters import partial_eval as pe
    >>> pe.PartialVal.known(2.0).is_known()
    True
  """

  def __new__(cls, xs):
    pv, const = xs
    return tuple.__new__(cls, (pv, const))

  @classmethod
  def known(cls, const) -> "PartialVal":
    return PartialVal((None, const))

  @classmethod
  def unknown(cls, aval: ShapedArray) -> "PartialVal":
    return PartialVal((aval, None))

  def is_known(self) -> bool:
    return self[0] is None

  def get_known(self):
    return self[1] if self[0] is None else None

  def get_aval(self) -> ShapedArray:
    return get_aval(self[1]) if self[0] is None else self[0]


def _call(fun, args):
  return fun.call_wrapped(*args) if hasattr(fun, "call_wrapped") else fun(*args)


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
  """Call `fun` with the known values of `pvals` and abstract unknown ones.

  Args:
    fun: a `WrappedFun` (or plain function) of flat arguments returning flat outputs.
    pvals: one `PartialVal` per argument.
    instantiate: a bool (or one per output): make those outputs unknown even if known.

  Returns:
    `(jaxpr, out_pvals, consts)`: the staged jaxpr computing the unknown outputs from the
    residuals `consts` (its constvars) and the unknown inputs; a `PartialVal` per output.
  """
  pe = PartialEvalTrace(current_trace())
  args = [_unknown_arg(pe, pv[0]) if not pv.is_known() else pv[1]
          for pv in map(PartialVal, pvals)]
  with set_current_trace(pe):
    outs = list(_call(fun, args))
  inst = [instantiate] * len(outs) if isinstance(instantiate, bool) else list(instantiate)
  unknown = [pe.is_unknown(_physical(o)) or i for o, i in zip(outs, inst, strict=True)]
  jaxpr, consts = pe.to_jaxpr([_physical(o) for o, u in zip(outs, unknown) if u])
  out_pvals = [PartialVal.unknown(_aval(o)) if u else PartialVal.known(o)
               for o, u in zip(outs, unknown)]
  return jaxpr, out_pvals, consts


def _is_key(x) -> bool:
  return extended_dtypes.is_extended(getattr(x, "dtype", None)) and hasattr(type(x), "_data")


def _unknown_arg(pe, aval):
  """An unknown input of type `aval`: a tracer, or for a typed-key aval (flax's scan makes
  them, `ShapedArray(shape, key<fry>)`) keys over a tracer of their uint32 data, as revax
  represents keys in every trace."""
  if extended_dtypes.is_extended(aval.dtype):
    return aval.dtype.abstract_leaf(aval.shape, lambda shape, dt: pe.new_arg(ShapedArray(shape,
                                                                                          dt)))
  return pe.new_arg(aval)


def _physical(x):
  """What the trace holds for output `x`: a typed key's data or key-typed value (what the key
  primitives made of it), else `x`."""
  return x._base if _is_key(x) else x


def _aval(x) -> ShapedArray:
  return ShapedArray(x.shape, x.dtype) if _is_key(x) else get_aval(x)


def trace_to_jaxpr_dynamic(fun, in_avals, *, keep_inputs=None):
  """Trace `fun` (a `WrappedFun` or plain function of flat arguments) at `in_avals`.

  Returns:
    `(jaxpr, out_avals, consts)`.
  """
  del keep_inputs
  jaxpr, consts = staging.trace_to_jaxpr(lambda *xs: list(_call(fun, xs)), list(in_avals))
  return jaxpr, [v.aval for v in jaxpr.outvars], consts


def close_jaxpr(jaxpr) -> ClosedJaxpr:
  """`jaxpr` (with no constvars) as a ClosedJaxpr."""
  return ClosedJaxpr(jaxpr, [])
