"""JAX's extension API for defining primitives (`jax.extend.core`), on revax's own core.

A library defines a primitive the way it does with JAX: `Primitive(name)`, `def_impl`,
`def_abstract_eval`, and rules put in the interpreters' tables (`revax.interpreters.ad`,
`.batching`, `.mlir`). Those tables are revax's own, so the primitive then works under jit, grad,
vmap and scan exactly as revax's built-in primitives do. `def_impl` makes eager evaluation call
the given Python function (as JAX's does); without one, an eager call compiles the primitive
alone through its lowering rule.

The jaxpr classes (`Jaxpr`, `ClosedJaxpr`, `Var`, `Literal`, `JaxprEqn`) are revax's; the helpers
here (`mapped_aval`, `jaxpr_as_fun`, `get_opaque_trace_state`, ...) follow JAX's signatures.
"""
from __future__ import annotations

import weakref

from revax._src.core import effects as _effects
from revax._src.core.effect_types import Effect, Effects, no_effects
from revax._src.core.avals import ShapedArray
from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn
from revax._src.core.trace import Primitive as _CorePrimitive
from revax._src.core.trace import current_trace
from revax._src.interpreters import dispatch

__all__ = ["Primitive", "Effect", "Effects", "no_effects", "mapped_aval", "unmapped_aval",
           "jaxpr_as_fun", "get_opaque_trace_state", "find_top_trace", "new_jaxpr_eqn", "subjaxprs",
           "jaxprs_in_params", "primal_dtype_to_tangent_dtype", "valid_jaxtype"]


class Primitive(_CorePrimitive):
  """A primitive defined by a library, with JAX's `jax.extend.core.Primitive` interface.

  Args:
    name: the primitive's name (as printed in jaxprs).

  Example:
    >>> from revax.extend.core import Primitive
    >>> double_p = Primitive("double_example")
    >>> _ = double_p.def_impl(lambda x: x * 2)
    >>> _ = double_p.def_abstract_eval(lambda a: a)
    >>> double_p.bind(jnp.float32(3.0))
    Array(6., dtype=float32)
  """

  def __init__(self, name: str):
    super().__init__(name)
    self._effectful = False

  def def_impl(self, impl):
    """Register `impl(*args, **params)` as the primitive's eager evaluation.

    Args:
      impl: a Python function on concrete arrays (it may call other revax operations).

    Returns:
      `impl` (so that it can be used as a decorator).
    """
    self.impl = impl
    dispatch.custom_impls[self] = impl
    return impl

  def def_effectful_abstract_eval(self, rule):
    """Register `rule(*avals, **params) -> (aval(s), effects)`: JAX's form for primitives with
    side effects. A non-empty effect set marks the primitive effectful (never removed as dead
    code), and is what its equations' `eqn.effects` hold (an effect naming an input by position,
    `ReadEffect(0)`, there names the input's variable).

    Args:
      rule: the abstract evaluation rule returning a pair (out aval or avals, effects).

    Returns:
      `rule`.
    """
    def plain(*avals, **params):
      out, effects = rule(*avals, **params)
      if effects and not self._effectful:
        self._effectful = True
        _effects.def_effectful(self)
      return out

    def eqn_effects(eqn):
      return rule(*[v.aval for v in eqn.invars], **eqn.params)[1]

    self.def_abstract_eval(plain)
    _effects.def_effects(self, eqn_effects)
    return rule

  def bind_with_trace(self, trace, args, params):
    """Apply the primitive under `trace` (JAX's spelling of `trace.process_primitive`)."""
    return trace.process_primitive(self, args, params)


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
  """`aval` with mapped axis `axis` (of length `size`) removed; `aval` itself when `axis` is None.

  Args:
    size: the mapped axis' length.
    axis: its position, or None for an unmapped value.
    aval: the type of the batched value.

  Returns:
    The type of one element of the batch.

  Example:
    >>> from revax.extend.core import mapped_aval
    >>> from revax.core import ShapedArray
    >>> mapped_aval(3, 0, ShapedArray((3, 4), jnp.float32)).shape
    (4,)
  """
  if axis is None:
    return aval
  shape = list(aval.shape)
  if shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has length {shape[axis]}, "
                     f"not {size}")
  del shape[axis]
  return aval.update(shape=tuple(shape))


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray, *_) -> ShapedArray:
  """`aval` with an axis of length `size` inserted at `axis`; `aval` when `axis` is None.

  Args:
    size: the length of the new axis.
    axis: where to insert it, or None.
    aval: the type of one element.

  Returns:
    The type of the batch.

  Example:
    >>> from revax.extend.core import unmapped_aval
    >>> from revax.core import ShapedArray
    >>> unmapped_aval(3, 1, ShapedArray((2,), jnp.float32)).shape
    (2, 3)
  """
  if axis is None:
    return aval
  shape = list(aval.shape)
  shape.insert(axis if axis >= 0 else len(shape) + axis + 1, size)
  return aval.update(shape=tuple(shape))


def jaxpr_as_fun(closed: ClosedJaxpr, *args):
  """Evaluate `closed` on `args` (a list of outputs); with no `args`, a function doing so.

  Example:
    >>> from revax.extend.core import jaxpr_as_fun
    >>> closed = revax.make_jaxpr(lambda x: x + 1)(1.0)
    >>> jaxpr_as_fun(closed, 1.0)
    [Array(2., dtype=float32, weak_type=True)]
  """
  if args:
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)
  return lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs)


class OpaqueTraceState:
  """The current trace, compared by identity: equal states mean the same transformation is
  current (what flax checks to refuse mutating a variable across a transformation)."""
  __slots__ = ("_ref",)

  def __init__(self, trace):
    self._ref = weakref.ref(trace)

  def __eq__(self, other):
    return isinstance(other, OpaqueTraceState) and self._ref() is other._ref() is not None

  def __hash__(self):
    return id(self._ref())


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
  """An opaque token for the current trace (JAX's `get_opaque_trace_state`).

  Args:
    convention: the caller's name for its convention (accepted, as JAX accepts it).

  Returns:
    An object equal to another such token exactly when both were taken under the same trace.

  Example:
    >>> from revax.extend.core import get_opaque_trace_state
    >>> get_opaque_trace_state() == get_opaque_trace_state()
    True
  """
  del convention
  return OpaqueTraceState(current_trace())


def find_top_trace(xs):
  """The trace of the innermost transformation among the tracers in `xs` (the current trace
  when none is a tracer).

  Example:
    >>> from revax.extend.core import find_top_trace
    >>> find_top_trace([1.0]) is revax.extend.core.find_top_trace([])
    True
  """
  del xs  # (a tracer not of the current trace has escaped: binding it fails with a clear error)
  return current_trace()


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None, ctx=None):
  """A `JaxprEqn` (JAX's argument order: inputs, outputs, primitive, params).

  Example:
    >>> from revax.extend.core import new_jaxpr_eqn, Var
    >>> from revax.core import ShapedArray
    >>> a = Var(ShapedArray((), jnp.float32))
    >>> new_jaxpr_eqn([a], [Var(a.aval)], revax.lax.exp_p, {}).primitive.name
    'exp'
  """
  del effects, source_info, ctx
  return JaxprEqn(primitive, invars, outvars, params)


def jaxprs_in_params(params) -> list:
  """The jaxprs (as `Jaxpr`s) held in an equation's `params`."""
  out = []
  for v in params.values():
    for sub in v if isinstance(v, (tuple, list)) else (v,):
      if isinstance(sub, ClosedJaxpr):
        out.append(sub.jaxpr)
      elif isinstance(sub, Jaxpr):
        out.append(sub)
  return out


def subjaxprs(jaxpr: Jaxpr):
  """The jaxprs nested in `jaxpr`'s equations (one level down)."""
  for eqn in jaxpr.eqns:
    yield from jaxprs_in_params(eqn.params)


def primal_dtype_to_tangent_dtype(dtype):
  """float0 for integer and bool dtypes, the dtype itself for inexact ones."""
  from revax._src.core import dtypes
  return dtype if dtypes.is_inexact(dtype) else dtypes.float0


def valid_jaxtype(x) -> bool:
  """Whether `x` is a value revax can trace (an array, a NumPy value or a Python scalar)."""
  from revax._src.core.avals import get_aval
  try:
    get_aval(x)
  except TypeError:
    return False
  return True
