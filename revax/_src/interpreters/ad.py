"""Forward-mode autodiff (jvp) and the symbolic zero.

`JVPTrace` carries a tangent beside each primal. A primitive's JVP rule maps primals and tangents
to the primal output and its tangent; it runs under the parent trace, so what it computes is
itself traced (by jit, by another jvp, by the linearizer).

A tangent known to be zero is `Zero(aval)`: it knows its shape and dtype, so no rule ever needs an
example value to build a zero, and known-zero work never reaches a jaxpr. A primitive whose
tangent inputs are all `Zero` is not differentiated at all. Integer and bool values have `float0`
tangents, as in JAX. Rules are declared with helpers: `defjvp` (one function per input),
`defjvp_from_output` (rules that reuse the primal output, such as exp's), `deflinear` and
`defbilinear` (which also register transposes).

Differentiation points enter as arrays (Python scalars become weakly typed arrays), so rules
never see raw Python numbers. An output whose tangent is a symbolic zero is returned as its plain
primal value, not as a tracer. Outside jit the primals are concrete (the parent trace is the eval
trace, or partial evaluation that runs known work at once), and a `JVPTracer` reports its
primal's value through `to_concrete_value`: Python control flow on values works under eager
jvp/grad/vjp/linearize and their Jacobians, as in JAX, while jit and vmap still trace abstractly.
"""
from __future__ import annotations

import itertools

import numpy as np

from revax._src.core import dtypes, sharding_types, vma
from revax._src.core.avals import AbstractRef, AbstractToken, ShapedArray, get_aval
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.core.rules import RuleTable
from revax._src.core.trace import (Primitive, Trace, Tracer, current_trace, set_current_trace,
                                   to_concrete_value)
from revax._src.interpreters import dispatch, mlir, staging
from revax._src.runtime.array import Array, from_numpy

primitive_jvps = RuleTable("jvp")  # prim -> rule(primals, tangents, **params) -> (out, tangent)
primitive_transposes = RuleTable("transpose")  # prim -> rule(ct, *invals, **params) -> cts
not_differentiable_reasons: dict = {}  # prim -> why it has no JVP rule
# primitives whose JVP rule runs even when every input tangent is zero: `new_ref` gives every ref
# made under differentiation a tangent ref, since a differentiated value may be written into it
jvp_with_zero_tangents: set = set()


# --- symbolic zeros --------------------------------------------------------------------------------
def tangent_aval(aval: ShapedArray) -> ShapedArray:
  """The type of tangents of values of type `aval`: float0 for integer and bool values (a
  token's is the token type, as JAX's `AbstractToken.to_tangent_aval`)."""
  if type(aval) is AbstractToken:
    return aval
  if not isinstance(aval.dtype, np.dtype):  # an extended dtype (typed keys): float0, as JAX's
    return ShapedArray(aval.shape, dtypes.float0, manual_axis_type=getattr(aval, "_mat", None))
  if dtypes.is_inexact(aval.dtype):  # (split over a mesh, varying over manual axes, as it is)
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type, aval.sharding,
                       manual_axis_type=getattr(aval, "_mat", None),
                       memory_space=aval.memory_space)  # (in the primal's memory, as JAX's)
  return ShapedArray(aval.shape, dtypes.float0, manual_axis_type=getattr(aval, "_mat", None),
                     memory_space=aval.memory_space)


class Zero:
  """A symbolic zero tangent or cotangent of type `aval`."""
  __slots__ = ("aval",)

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  @staticmethod
  def from_value(x) -> "Zero":
    """The zero tangent for primal value `x` (float0-typed for integer and bool values)."""
    return Zero(tangent_aval(get_aval(x)))

  from_primal_value = from_value  # JAX's name (jax.custom_derivatives.SymbolicZero)

  def __repr__(self):
    return f"Zero({self.aval.str_short()})"


_zeros_maker = [None]


def set_zeros_maker(fn) -> None:
  """Install `fn(aval) -> array of zeros`; revax.lax provides it (this layer has no ops)."""
  _zeros_maker[0] = fn


def zeros_like_aval(aval: ShapedArray):
  """A concrete zero array of `aval`'s shape and dtype (float0 zeros for integer tangents)."""
  if type(aval) is AbstractToken:
    raise TypeError("a token has no tangent or cotangent value: differentiate a function "
                    "whose outputs are arrays, and return tokens from it as auxiliary data")
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  zeros = _zeros_maker[0](aval)
  if vma._state.depth and vma.varying(aval):  # zeros of a value varying over manual axes
    zeros = vma.cast_to(zeros, get_aval(zeros), vma.varying(aval))
  return zeros


def instantiate_zeros(t):
  """`t` itself, or an array of zeros of the right type if `t` is a symbolic Zero."""
  return zeros_like_aval(t.aval) if type(t) is Zero else t


def is_float0(x) -> bool:
  return getattr(x, "dtype", None) == dtypes.float0


# --- add_any: the accumulation of tangents and cotangents --------------------------------------
def add_tangents(x, y):
  """x + y where either may be a symbolic Zero (and the result is one only if both are)."""
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  if is_float0(x):
    return x
  return add_any_p.bind(x, y)


def _add_any_abstract_eval(x, y):
  if x.shape != y.shape or x.dtype != y.dtype:
    raise TypeError(f"add_any requires operands of one type, got {x.str_short()} and "
                    f"{y.str_short()}")
  return ShapedArray(x.shape, x.dtype, x.weak_type and y.weak_type)


def _add_any_lower(ctx, x, y):
  return ctx.op1("stablehlo.add", [x, y])


def _add_any_jvp(primals, tangents):
  return add_any_p.bind(*primals), add_tangents(*tangents)


def _add_any_transpose(ct, x, y):
  return [ct, ct]


add_any_p = Primitive("add_any")
add_any_p.def_abstract_eval(_add_any_abstract_eval)
dispatch.def_numpy_impl(add_any_p, np.add)
mlir.register_lowering(add_any_p, _add_any_lower)
primitive_jvps[add_any_p] = _add_any_jvp
primitive_transposes[add_any_p] = _add_any_transpose
sharding_types.rules[add_any_p] = sharding_types.elementwise


_RAW_SCALARS = (bool, int, float, complex)


def _as_array(t):
  """A primitive's output tangent as an Array when its rule passed a user's raw tangent through
  (a Python or NumPy scalar given to jvp): JAX's primitives always output arrays."""
  if type(t) in _RAW_SCALARS or (isinstance(t, (np.ndarray, np.generic))
                                 and t.dtype != dtypes.float0):
    return dispatch.to_array(t)
  return t


# --- the JVP trace -------------------------------------------------------------------------------
class JVPTracer(Tracer):
  """A value in forward-mode differentiation: its primal and its tangent (possibly a Zero)."""
  __slots__ = ("primal", "tangent")

  def __init__(self, trace, primal, tangent):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent

  @property
  def aval(self):
    return get_aval(self.primal)

  def to_concrete_value(self):
    return to_concrete_value(self.primal)

  def __repr__(self):
    """As JAX's: 'JVPTracer(primal=[1. 1.], tangent=[1. 1.])' when the tangent is a value (jvp),
    'GradTracer(primal=2.0, typeof(tangent)=f32[])' when it is being traced (grad, linearize)."""
    if isinstance(self.tangent, Tracer):
      return f"GradTracer(primal={self.primal}, typeof(tangent)={self.tangent.aval.str_short()})"
    return f"JVPTracer(primal={self.primal}, tangent={self.tangent})"


_tags = itertools.count()


class JVPTrace(Trace):
  """Pushes tangents through primitives with their JVP rules."""

  def __init__(self, parent_trace: Trace):
    self.parent_trace = parent_trace
    self.tag = next(_tags)

  def to_primal_tangent(self, x):
    if isinstance(x, JVPTracer) and x._trace is self:
      return x.primal, x.tangent
    return x, Zero.from_value(x)

  def process_primitive(self, primitive, args, params):
    primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
    if all(type(t) is Zero for t in tangents) and primitive not in jvp_with_zero_tangents:
      with set_current_trace(self.parent_trace):
        return primitive.bind(*primals, **params)
    rule = primitive_jvps.get(primitive)
    if rule is None:
      raise _no_jvp_error(primitive)
    parent = self.parent_trace
    key = (_replay_key(parent, primitive, primals, tangents, params)
           if type(parent) is staging.DynamicJaxprTrace else None)
    with set_current_trace(parent):
      if key is None:
        primal_out, tangent_out = rule(primals, tangents, **params)
      else:
        primal_out, tangent_out = _replayed_jvp(parent, key, rule, primitive, primals, tangents,
                                                params)
    if primitive.multiple_results:
      return [self.wrap(p, _as_array(t)) for p, t in zip(primal_out, tangent_out, strict=True)]
    return self.wrap(primal_out, _as_array(tangent_out))

  def wrap(self, primal, tangent):
    """A tracer of this trace; a value whose tangent is a symbolic zero is returned as itself
    (a known-constant output, such as a comparison or an integer, needs no tracer)."""
    if type(tangent) is Zero:
      return primal
    return JVPTracer(self, primal, tangent)

  def __repr__(self):
    return f"JVPTrace(tag={self.tag})"


def _replay_key(trace, primitive, primals, tangents, params):
  """What a JVP rule's result depends on while `trace` stages it (see staging.values_key), or
  None where it must run afresh."""
  values = staging.values_key(trace, [x for x in primals + tangents if type(x) is not Zero])
  params = staging.params_key(params) if values is not None else None
  if params is None:
    return None
  zeros = tuple(t.aval if type(t) is Zero else None for t in tangents)
  return ("jvp", primitive, params, zeros, values)


def _replayed_jvp(trace, key, rule, primitive, primals, tangents, params):
  """The rule's result, recorded once per key in the staging `trace` and replayed for equations
  like it (a deep network's layers): a JVP of a staged program costs a copy per equation."""
  inputs = [x for x in primals + tangents if type(x) is not Zero]
  multiple = primitive.multiple_results

  def run():
    primal_out, tangent_out = rule(primals, tangents, **params)
    if not multiple:
      return [primal_out, tangent_out]
    return list(primal_out) + list(tangent_out)  # one tangent per output

  outs = staging.record_or_replay(trace, key, inputs, run)
  n = len(outs) // 2
  return (outs[:n], outs[n:]) if multiple else (outs[0], outs[1])


staging.immutable_results.add(Zero)


def _no_jvp_error(primitive):
  reason = not_differentiable_reasons.get(primitive)
  if reason is not None:
    return TypeError(f"primitive '{primitive.name}' is not differentiable: {reason}")
  return NotImplementedError(f"differentiation rule for '{primitive.name}' is not implemented")


def ref_cotangent_error(aval) -> ValueError:
  """JAX's error for a mutable array reference as a point of differentiation (`aval`: its
  AbstractRef), raised when its cotangent would come back (grad, a VJP's call)."""
  inner = aval.inner_aval.str_short(short_dtypes=False).lstrip("~")
  return ValueError(f"Expected cotangent type {aval!r} but got {inner}")


def canonicalize_primal(x):
  """A differentiation point as an array: Python scalars become weakly typed arrays and NumPy
  values revax Arrays, so JVP rules only ever see arrays (never mix a Python int literal with a
  raw Python float primal) and results keep JAX's weak types. Tracers pass unchanged."""
  if isinstance(x, (Tracer, Array)):
    return x
  aval = get_aval(x)
  if isinstance(aval, AbstractRef):  # (JAX's grad says so when the cotangent comes back)
    raise ref_cotangent_error(aval)
  if dtypes.is_python_scalar(x):
    return from_numpy(np.asarray(x, aval.dtype), weak_type=aval.weak_type)
  return from_numpy(np.asarray(x))


def jvp_flat(fun, primals, tangents, has_aux=False):
  """Run `fun(*primals)` (flat in, flat out) carrying `tangents`. Returns (outs, out_tangents)
  with symbolic Zero tangents where the output does not depend on the inputs' tangents.

  With `has_aux`, `fun` returns `(outs, aux_leaves)`; the aux leaves come back as a third result
  holding their primal values only (never this trace's tracers), as JAX's has_aux does.
  """
  trace = JVPTrace(current_trace())
  primals = [canonicalize_primal(p) for p in primals]
  tracers = [trace.wrap(p, t) for p, t in zip(primals, tangents, strict=True)]
  with set_current_trace(trace):
    res = fun(*tracers)
  outs, aux = res if has_aux else (res, ())
  out_primals, out_tangents = [], []
  for o in outs:
    p, t = trace.to_primal_tangent(o)
    out_primals.append(p)
    out_tangents.append(t)
  aux_primals = [a.primal if isinstance(a, JVPTracer) and a._trace is trace else a for a in aux]
  if has_aux:
    return out_primals, out_tangents, aux_primals
  return out_primals, out_tangents


# --- rule helpers ----------------------------------------------------------------------------------
def _single_output(prim: Primitive, helper: str) -> None:
  if prim.multiple_results:
    raise ValueError(f"{helper} builds rules for single-output primitives, but primitive "
                     f"'{prim.name}' has multiple results; register a rule in "
                     f"ad.primitive_jvps directly")


def defjvp(prim: Primitive, *jvp_fns):
  """JVP from one function per input: `fn(tangent_i, *primals, **params) -> contribution`.

  A `None` function marks an input as non-differentiable. Contributions of inputs whose tangent
  is a symbolic Zero are never computed.
  """
  _single_output(prim, "defjvp")

  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    total = Zero(tangent_aval(get_aval(out)))
    for fn, t in zip(jvp_fns, tangents, strict=True):
      if fn is not None and type(t) is not Zero:
        total = add_tangents(total, fn(t, *primals, **params))
    return out, total

  primitive_jvps[prim] = rule
  return rule


# primitives whose JVP reads their own output (those defined by defjvp_from_output) -> their
# JVP functions, one per input (None: no tangent contribution)
jvp_reads_output: dict = {}


def defjvp_from_output(prim: Primitive, *jvp_fns):
  """JVP from one function per input that reuses the primal output:
  `fn(tangent_i, out, *primals, **params) -> contribution` (for exp, tanh, logistic, ...)."""
  _single_output(prim, "defjvp_from_output")
  jvp_reads_output[prim] = jvp_fns

  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    return out, tangent_from_output(prim, out, primals, tangents, **params)

  primitive_jvps[prim] = rule
  return rule


def tangent_from_output(prim: Primitive, out, primals, tangents, **params):
  """The output tangent of `prim` (declared with `defjvp_from_output`) at `primals`, reading
  the primal output from `out` instead of computing it: `out` may be a value equal to it that
  the caller has at hand (invertible's walk rebuilds a coupling's `tanh(h)` as `y - x`)."""
  total = Zero(tangent_aval(get_aval(out)))
  for fn, t in zip(jvp_reads_output[prim], tangents, strict=True):
    if fn is not None and type(t) is not Zero:
      total = add_tangents(total, fn(t, out, *primals, **params))
  return total


def deflinear(prim: Primitive, transpose_rule):
  """A primitive linear in all its inputs: its JVP applies it to the tangents (symbolic zeros
  instantiated only when some tangent is not zero) and `transpose_rule(ct, *invals, **params)`
  gives the cotangents of its inputs."""
  _single_output(prim, "deflinear")

  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    return out, prim.bind(*map(instantiate_zeros, tangents), **params)

  primitive_jvps[prim] = rule
  primitive_transposes[prim] = transpose_rule
  return rule


def defbilinear(prim: Primitive, lhs_transpose, rhs_transpose):
  """A primitive linear in each of its two inputs separately (mul, dot_general, conv):
  d(x*y) = dx*y + x*dy. `lhs_transpose(ct, x_undefined, y, **params)` gives x's cotangent and
  `rhs_transpose(ct, x, y_undefined, **params)` y's."""
  _single_output(prim, "defbilinear")
  defjvp(prim, lambda t, x, y, **p: prim.bind(t, y, **p), lambda t, x, y, **p: prim.bind(x, t, **p))

  def transpose(ct, x, y, **params):
    if is_undefined_primal(x):
      return [lhs_transpose(ct, x, y, **params), None]
    return [None, rhs_transpose(ct, x, y, **params)]

  primitive_transposes[prim] = transpose
  return transpose


def not_differentiable(prim: Primitive, reason: str) -> None:
  """Declare that `prim` has no derivative (e.g. integer outputs); `reason` says why."""
  not_differentiable_reasons[prim] = reason


def zero_output_jvp(prim: Primitive, reason: str) -> None:
  """A primitive whose output is piecewise constant in its inputs (comparisons, floor, sign):
  its tangent is a symbolic zero."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
      return out, [Zero(tangent_aval(get_aval(o))) for o in out]
    return out, Zero(tangent_aval(get_aval(out)))
  primitive_jvps[prim] = rule
  not_differentiable_reasons.setdefault(prim, reason)


# --- undefined primals (the linear inputs of a transposition) ------------------------------------
class UndefinedPrimal:
  """Stands for a linear input of a transposed equation: its type is known, its value is not."""
  __slots__ = ("aval",)

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
  """Whether `x` is a linear input of a transpose rule (an UndefinedPrimal), as JAX's."""
  return type(x) is UndefinedPrimal


# --- linearize: JVP under partial evaluation -----------------------------------------------------
class Linearized:
  """The linear part of a function at a point: a jaxpr from the differentiable inputs' tangents
  to the non-zero output tangents, and the residuals it reads (its constants)."""
  __slots__ = ("jaxpr", "residuals", "in_mask", "out_zero_avals")

  def __init__(self, jaxpr, residuals, in_mask, out_zero_avals):
    self.jaxpr = jaxpr  # invars: tangents of inputs where in_mask; outvars: non-zero out tangents
    self.residuals = residuals
    self.in_mask = in_mask  # which inputs have a tangent input (inexact dtypes)
    self.out_zero_avals = out_zero_avals  # per output: its aval if its tangent is Zero, else None


def linearize_flat(fun, primals, has_aux=False):
  """Evaluate `fun(*primals)` and stage its linear (tangent) part.

  The JVP runs under a PartialEvalTrace: the primal computation is known and runs in the current
  trace at once (outside jit that means eagerly, on concrete values, so Python control flow on
  primal values works), while the tangent computation depends on the unknown tangent inputs and
  is staged into a jaxpr. Returns (primal outputs, Linearized), plus the aux leaves' values with
  `has_aux` (`fun` then returns `(outs, aux_leaves)`).
  """
  from revax._src.interpreters.partial_eval import PartialEvalTrace
  pe = PartialEvalTrace(current_trace())
  primals = [canonicalize_primal(p) for p in primals]
  in_mask = [dtypes.is_inexact(get_aval(p).dtype) for p in primals]
  tangents = [pe.new_arg(tangent_aval(get_aval(p))) if m else Zero.from_value(p)
              for p, m in zip(primals, in_mask, strict=True)]
  with set_current_trace(pe):
    res = jvp_flat(fun, primals, tangents, has_aux=has_aux)
  out_primals, out_tangents = res[0], res[1]
  for p in list(out_primals) + (list(res[2]) if has_aux else []):
    if pe.is_unknown(p):
      raise AssertionError("linearize: a primal output depends on tangents")
  out_zero_avals = [t.aval if type(t) is Zero else None for t in out_tangents]
  jaxpr, residuals = pe.to_jaxpr([t for t in out_tangents if type(t) is not Zero])
  lin = Linearized(jaxpr, residuals, in_mask, out_zero_avals)
  if has_aux:
    return out_primals, lin, res[2]
  return out_primals, lin


def eval_linearized(lin: Linearized, tangents):
  """Apply the linear map to input tangents (one per input; ignored where not in_mask)."""
  from revax._src.core.eval import eval_jaxpr
  ins = [instantiate_zeros(t) for t, m in zip(tangents, lin.in_mask, strict=True) if m]
  outs = iter(eval_jaxpr(lin.jaxpr, lin.residuals, *ins))
  return [Zero(a) if a is not None else next(outs) for a in lin.out_zero_avals]


def transpose_linearized(lin: Linearized, cotangents):
  """Cotangents of the inputs for output cotangents `cotangents` (Zero where not in_mask)."""
  from revax._src.interpreters.transpose import backward_pass
  cts = [c for c, a in zip(cotangents, lin.out_zero_avals, strict=True) if a is None]
  undefined = [UndefinedPrimal(v.aval) for v in lin.jaxpr.invars]
  cts_in = iter(backward_pass(lin.jaxpr, lin.residuals, undefined, cts))
  return [next(cts_in) if m else None for m in lin.in_mask]


# --- jvp of a staged program ---------------------------------------------------------------------
@staging.memoize_on_jaxpr
def jvp_jaxpr(closed, nonzeros: tuple, instantiate: bool = False):
  """The JVP of a closed jaxpr, as a closed jaxpr and which of its tangent outputs are non-zero.

  The result takes (primals..., non-zero tangents...) -- one tangent per True in `nonzeros` --
  and returns (primal outputs..., non-zero tangent outputs...). With `instantiate`, every tangent
  output is returned (zeros materialized). Call primitives (jit, checkpoint) bind their own
  primitive on it, so the derivative of a staged program stays staged.
  """
  from revax._src.core.eval import eval_jaxpr
  avals = closed.in_avals
  tangent_avals = [tangent_aval(a) for a, nz in zip(avals, nonzeros, strict=True) if nz]
  store = {}

  def fun(*args):
    primals, nz_tangents = args[:len(avals)], iter(args[len(avals):])
    tangents = [next(nz_tangents) if nz else Zero(tangent_aval(a))
                for a, nz in zip(avals, nonzeros)]
    outs, out_tangents = jvp_flat(
        lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, tangents)
    if instantiate:
      out_tangents = [instantiate_zeros(t) for t in out_tangents]
    store["out_nonzeros"] = tuple(type(t) is not Zero for t in out_tangents)
    return list(outs) + [t for t in out_tangents if type(t) is not Zero]

  jaxpr, consts = staging.trace_to_jaxpr(fun, list(avals) + tangent_avals)
  return ClosedJaxpr(jaxpr, consts), store["out_nonzeros"]


def call_jvp(closed, primals, tangents, bind):
  """The JVP rule of a call primitive holding `closed`: `bind(jvp_closed, args)` binds the
  primitive again on the JVP jaxpr (primals and the non-zero tangents in; primal outputs and
  non-zero tangent outputs out), so the derivative of a staged call stays a staged call.
  Returns (primal outputs, tangents with symbolic Zeros)."""
  nonzeros = tuple(type(t) is not Zero for t in tangents)
  jvp_closed, out_nonzeros = jvp_jaxpr(closed, nonzeros)
  outs = bind(jvp_closed, list(primals) + [t for t in tangents if type(t) is not Zero])
  n = len(closed.out_avals)
  nz_tangents = iter(outs[n:])
  return outs[:n], [next(nz_tangents) if nz else Zero(tangent_aval(a))
                    for a, nz in zip(closed.out_avals, out_nonzeros, strict=True)]
