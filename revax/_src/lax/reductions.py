"""Reductions over axes: reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or,
reduce_xor, argmax and argmin, and the monoid fast path of the generic `reduce`
(variadic_reduce.py).

Each reduction lowers to `stablehlo.reduce` with the identity of its monoid as init value and a
region that applies the matching elementwise primitive's own lowering to scalars, so NaN
propagation and complex ordering are exactly those of `max`/`min` (XLA:CPU's raw
`stablehlo.maximum` would drop NaNs). Reducing over no axes returns the operand. argmax/argmin
are a variadic reduce over (value, index) pairs: NaN beats every number, ties go to the smallest
index. reduce_sum is linear; reduce_max/min spread the tangent evenly over the positions that
attain the extremum (as JAX does); reduce_prod's JVP differentiates a pairwise product tree, so
zeros in the operand are handled exactly. Batching moves the reduced axes past the batch
dimension. Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive, Tracer
from revax._src.interpreters import ad, batching, dispatch, mlir, sharding_lowering
from revax._src.interpreters import invertible as inv
from revax._src.lax import binary, comparison, shapes
from revax._src.lax.comparison import compare
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.sharding_constraint import placed

__all__ = [
  "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
  "argmax", "argmin",
  "reduce_sum_p", "reduce_prod_p", "reduce_max_p", "reduce_min_p", "reduce_and_p", "reduce_or_p",
  "reduce_xor", "reduce_xor_p",
  "argmax_p", "argmin_p",
]


def canonicalize_axes(axes, ndim: int, op_name: str) -> tuple[int, ...]:
  """A tuple of ints with negative axes in [-ndim, 0) made positive (others left for the
  abstract evaluation to reject)."""
  if isinstance(axes, (int, np.integer)):
    axes = (axes,)
  try:
    axes = tuple(operator.index(a) for a in axes)
  except TypeError:
    raise TypeError(f"{op_name} axes must be a sequence of integers, got {axes!r}") from None
  return tuple(a + ndim if -ndim <= a < 0 else a for a in axes)


def _check_axes(op_name: str, x: ShapedArray, axes) -> None:
  if any(not 0 <= a < x.ndim for a in axes):
    raise ValueError(f"{op_name} axes {axes} contains out-of-bounds indices for operand of shape "
                     f"{x.shape} (rank {x.ndim})")
  if len(set(axes)) != len(axes):
    raise ValueError(f"duplicate value in 'axes' of {op_name}: {axes}")


def _reduced_shape(shape, axes):
  return tuple(d for i, d in enumerate(shape) if i not in axes)


def combiner_region(ctx, prim: Primitive, dtype) -> str:
  """A region `(a, b) -> prim(a, b)` on scalars of `dtype`, emitted by `prim`'s own lowering."""
  aval = ShapedArray((), dtype)
  t = mlir.ir_type(aval)
  rule = mlir.get_lowering(prim, ctx.platform)

  def body(fb, a, b):
    return [rule(mlir.LoweringRuleContext(fb, [aval, aval], [aval], ctx.platform), a, b)]

  return ctx.fb.region([t, t], body)


def _max_identity(dtype):
  if dtypes.is_inexact(dtype):  # (floats without infinities: their lowest finite value, as JAX)
    return np.asarray(-np.inf if dtypes.supports_inf(dtype) else dtypes.finfo(dtype).min, dtype)
  if dtypes.is_integer(dtype):
    return np.asarray(dtypes.iinfo(dtype).min, dtype)
  return np.asarray(False)


def _min_identity(dtype):
  if dtypes.is_inexact(dtype):
    return np.asarray(np.inf if dtypes.supports_inf(dtype) else dtypes.finfo(dtype).max, dtype)
  if dtypes.is_integer(dtype):
    return np.asarray(dtypes.iinfo(dtype).max, dtype)
  return np.asarray(True)


_LOW_PRECISION = (dtypes.float16, dtypes.bfloat16)


def _accumulate(np_reduce, x, axes):
  """`np_reduce(x, axes)` in x's dtype; f16/bf16 accumulate in f32 (as XLA:CPU does)."""
  dtype = x.dtype
  if not axes:  # nothing to reduce: the value itself (XLA keeps -0.0 too; a sum would not)
    return x
  acc = dtypes.float32 if dtype in _LOW_PRECISION else dtype
  with np.errstate(all="ignore"):
    return np.asarray(np_reduce(x.astype(acc), axis=axes, dtype=acc)).astype(dtype)


# In a program partitioned over a mesh, XLA's SPMD partitioner splits a reduction over a sharded
# dimension only when its region is one op it knows (it fails on the NaN-propagating region).
_PLAIN_OPS = {"reduce_max": "stablehlo.maximum", "reduce_min": "stablehlo.minimum"}


def _partitionable_extremum(ctx, x, axes, monoid, op: str):
  """max/min over `axes` with plain `op` regions the partitioner knows, and NaN restored where
  any reduced value is NaN (a reduce-or of `x != x`), as the NaN-propagating region gives."""
  fb = ctx.fb
  dtype = ctx.avals_in[0].dtype
  out_aval = ctx.avals_out[0]
  scalar, flag = ShapedArray((), dtype), ShapedArray((), np.dtype(bool))
  t, tb = mlir.ir_type(scalar), mlir.ir_type(flag)
  dims = {"dimensions": mlir.i64_array(axes)}
  plain = fb.op("stablehlo.reduce", [x, ctx.constant(monoid.identity(dtype), scalar)],
                [mlir.ir_type(out_aval)], props=dims,
                regions=[fb.region([t, t], lambda sub, a, b: [sub.op(op, [a, b], [t])[0]])])[0]
  in_flags = ShapedArray(ctx.avals_in[0].shape, np.dtype(bool))
  ne = mlir.get_lowering(comparison.ne_p, ctx.platform)
  isnan = ne(mlir.LoweringRuleContext(fb, [ctx.avals_in[0]] * 2, [in_flags], ctx.platform), x, x)
  out_flags = ShapedArray(out_aval.shape, np.dtype(bool))
  anynan = fb.op("stablehlo.reduce", [isnan, ctx.constant(np.asarray(False), flag)],
                 [mlir.ir_type(out_flags)], props=dims,
                 regions=[fb.region([tb, tb], lambda sub, a, b: [sub.op("stablehlo.or", [a, b],
                                                                        [tb])[0]])])[0]
  nan = fb.op("stablehlo.broadcast_in_dim", [ctx.constant(np.asarray(np.nan, dtype), scalar)],
              [mlir.ir_type(out_aval)], props={"broadcast_dimensions": mlir.i64_array(())})[0]
  return fb.op("stablehlo.select", [anynan, nan, plain], [mlir.ir_type(out_aval)])[0]


class _Monoid:
  """What one reduction needs: accepted dtypes, identity, NumPy reduction, combining primitive."""

  def __init__(self, name, accepts, accepts_msg, identity, numpy_fn, combiner):
    self.name, self.accepts, self.accepts_msg = name, accepts, accepts_msg
    self.identity, self.numpy_fn, self.combiner = identity, numpy_fn, combiner


def _reduction(monoid: _Monoid) -> Primitive:
  """A reduction primitive `monoid.name` with param `axes`."""
  name = monoid.name

  def abstract_eval(x, *, axes):
    if not monoid.accepts(x.dtype):
      raise TypeError(f"{name} does not accept dtype {x.dtype.name}. Accepted dtypes are "
                      f"{monoid.accepts_msg}.")
    _check_axes(name, x, axes)
    return ShapedArray(_reduced_shape(x.shape, axes), x.dtype, x.weak_type)

  def numpy_impl(x, *, axes):
    return monoid.numpy_fn(x, axes)

  def lower(ctx, x, *, axes):
    if not axes:
      return x
    dtype = ctx.avals_in[0].dtype
    if (name in _PLAIN_OPS and dtypes.is_float(dtype)
        and sharding_lowering.module_mesh(ctx) is not None):
      return _partitionable_extremum(ctx, x, axes, monoid, _PLAIN_OPS[name])
    init = ctx.constant(monoid.identity(dtype), ShapedArray((), dtype))
    return ctx.op1("stablehlo.reduce", [x, init], props={"dimensions": mlir.i64_array(axes)},
                   regions=[combiner_region(ctx, monoid.combiner(dtype), dtype)])

  prim = Primitive(name)
  prim.def_abstract_eval(abstract_eval)
  dispatch.def_numpy_impl(prim, numpy_impl)
  mlir.register_lowering(prim, lower)
  batching.primitive_batchers[prim] = _reduction_batch_rule(prim)
  return prim


def _reduction_batch_rule(prim):
  """Batching of a reduction over `axes` (argmax/argmin too): the reduced axes skip the batch
  dimension, which stays put, shifted left by the reduced axes before it."""
  def rule(vals, dims, *, axes, **params):
    (x,), (d,) = vals, dims
    axes = tuple(a + (a >= d) for a in axes)
    return prim.bind(x, axes=axes, **params), d - sum(a < d for a in axes)
  return rule


def _kept_dims(ndim, axes):
  return tuple(d for d in range(ndim) if d not in axes)


def _reduce_bind(prim, operand, axes, op_name):
  axes = canonicalize_axes(axes, get_aval(operand).ndim, op_name)
  return prim.bind(operand, axes=axes)


_num = lambda d: not dtypes.is_bool(d)
_intbool = lambda d: dtypes.is_integer(d) or dtypes.is_bool(d)
_any = lambda d: True
_NUM_MSG = "subtypes of number (integer, floating or complex)"
_INTBOOL_MSG = "bool or integer"


def _numpy_extremum(np_fn, identity):
  def fn(x, axes):
    with np.errstate(invalid="ignore"):
      return np.asarray(np_fn(x, axis=axes, initial=identity(x.dtype)))
  return fn


def _numpy_bitwise(ufunc, identity):
  def fn(x, axes):
    return np.asarray(ufunc.reduce(x, axis=axes, initial=identity(x.dtype)), x.dtype)
  return fn


def _all_ones(dtype):
  return np.asarray(True) if dtypes.is_bool(dtype) else ~np.zeros((), dtype)


# --- reduce_sum ----------------------------------------------------------------------------------
def reduce_sum(operand, axes, *, out_sharding=None):
  """Sum over `axes` (a tuple of ints; negative axes count from the end), placed as
  `out_sharding` says (None: as XLA chooses).

  Example:
    >>> x = jnp.array([[1., 5., 3.], [4., 2., 6.]])
    >>> lax.reduce_sum(x, (1,))  # row sums
    Array([ 9., 12.], dtype=float32)
  """
  return placed(_reduce_bind(reduce_sum_p, operand, axes, "reduce_sum"), out_sharding)


def _reduce_sum_transpose(ct, x, *, axes):
  shape = x.aval.shape
  # (as JAX's: the cotangent is split as the summed operand)
  return [shapes.broadcast_in_dim(ct, shape, _kept_dims(len(shape), axes),
                                  out_sharding=getattr(x.aval, "sharding", None))]


reduce_sum_p = _reduction(_Monoid(
    "reduce_sum", _num, _NUM_MSG, lambda d: np.zeros((), d),
    lambda x, axes: _accumulate(np.sum, x, axes), lambda d: binary.add_p))
ad.deflinear(reduce_sum_p, _reduce_sum_transpose)
inv.not_invertible(reduce_sum_p, "many-to-one: a reduction")


# --- reduce_prod ---------------------------------------------------------------------------------
def reduce_prod(operand, axes):
  """Product over `axes` (integer products wrap around, as in XLA)."""
  return _reduce_bind(reduce_prod_p, operand, axes, "reduce_prod")


def _prod_tree(x, axes):
  """The product over `axes` as a tree of pairwise elementwise products (what the JVP of
  reduce_prod differentiates: exact at zeros, and differentiable again)."""
  from revax._src.lax import slicing
  aval = get_aval(x)
  kept = _kept_dims(aval.ndim, axes)
  rest = tuple(aval.shape[d] for d in kept)
  n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
  x = shapes.reshape(shapes.transpose(x, tuple(axes) + kept), (n,) + rest)
  if n == 0:
    return shapes.broadcast_in_dim(np.ones((), aval.dtype), rest, ())
  while n > 1:
    if n % 2:
      x = shapes.pad(x, np.ones((), aval.dtype), [(0, 1, 0)] + [(0, 0, 0)] * len(rest))
      n += 1
    half = (n // 2,) + rest
    pairs = shapes.reshape(x, (n // 2, 2) + rest)
    lo, hi = ((0, k) + (0,) * len(rest) for k in (0, 1))
    even = slicing.slice(pairs, lo, (n // 2, 1) + rest)
    odd = slicing.slice(pairs, hi, (n // 2, 2) + rest)
    x = binary.mul(shapes.reshape(even, half), shapes.reshape(odd, half))
    n //= 2
  return shapes.reshape(x, rest)


def _reduce_prod_jvp(primals, tangents, *, axes):
  (x,), (t,) = primals, tangents
  out = reduce_prod_p.bind(x, axes=axes)
  _, (t_out,) = ad.jvp_flat(lambda v: [_prod_tree(v, axes)], [x], [ad.instantiate_zeros(t)])
  return out, ad.instantiate_zeros(t_out)


reduce_prod_p = _reduction(_Monoid(
    "reduce_prod", _num, _NUM_MSG, lambda d: np.ones((), d),
    lambda x, axes: _accumulate(np.prod, x, axes), lambda d: binary.mul_p))
ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp
inv.not_invertible(reduce_prod_p, "many-to-one: a reduction")


# --- reduce_max ----------------------------------------------------------------------------------
def reduce_max(operand, axes):
  """Maximum over `axes`; NaN if any reduced value is NaN; -inf (or the dtype's minimum) over
  an empty axis. For bool it is `any`."""
  return _reduce_bind(reduce_max_p, operand, axes, "reduce_max")


def _extremum_jvp(prim):
  """The tangent at the positions attaining the extremum, averaged over ties."""
  def rule(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axes=axes)
    shape = get_aval(x).shape
    at_max = comparison.eq(x, shapes.broadcast_in_dim(out, shape, _kept_dims(len(shape), axes)))
    where = convert_element_type(at_max, get_aval(t).dtype)
    count = reduce_sum(where, axes)
    return out, binary.div(reduce_sum(binary.mul(ad.instantiate_zeros(t), where), axes), count)
  return rule


reduce_max_p = _reduction(_Monoid(
    "reduce_max", _any, "any dtype", _max_identity, _numpy_extremum(np.max, _max_identity),
    lambda d: binary.or_p if dtypes.is_bool(d) else binary.max_p))
ad.primitive_jvps[reduce_max_p] = _extremum_jvp(reduce_max_p)
inv.not_invertible(reduce_max_p, "many-to-one: a reduction")


# --- reduce_min ----------------------------------------------------------------------------------
def reduce_min(operand, axes):
  """Minimum over `axes`; NaN if any reduced value is NaN; +inf (or the dtype's maximum) over
  an empty axis. For bool it is `all`."""
  return _reduce_bind(reduce_min_p, operand, axes, "reduce_min")


reduce_min_p = _reduction(_Monoid(
    "reduce_min", _any, "any dtype", _min_identity, _numpy_extremum(np.min, _min_identity),
    lambda d: binary.and_p if dtypes.is_bool(d) else binary.min_p))
ad.primitive_jvps[reduce_min_p] = _extremum_jvp(reduce_min_p)
inv.not_invertible(reduce_min_p, "many-to-one: a reduction")


# --- reduce_and ----------------------------------------------------------------------------------
def reduce_and(operand, axes):
  """Logical (bool) or bitwise (integer) AND over `axes`; True / all bits set when empty."""
  return _reduce_bind(reduce_and_p, operand, axes, "reduce_and")


reduce_and_p = _reduction(_Monoid(
    "reduce_and", _intbool, _INTBOOL_MSG, _all_ones, _numpy_bitwise(np.bitwise_and, _all_ones),
    lambda d: binary.and_p))
ad.not_differentiable(reduce_and_p, "it takes bool or integer operands")
inv.not_invertible(reduce_and_p, "many-to-one: a reduction")


# --- reduce_or -----------------------------------------------------------------------------------
def reduce_or(operand, axes):
  """Logical (bool) or bitwise (integer) OR over `axes`; False / 0 when empty."""
  return _reduce_bind(reduce_or_p, operand, axes, "reduce_or")


reduce_or_p = _reduction(_Monoid(
    "reduce_or", _intbool, _INTBOOL_MSG, lambda d: np.zeros((), d),
    _numpy_bitwise(np.bitwise_or, lambda d: np.zeros((), d)), lambda d: binary.or_p))
ad.not_differentiable(reduce_or_p, "it takes bool or integer operands")
inv.not_invertible(reduce_or_p, "many-to-one: a reduction")


# --- reduce_xor ----------------------------------------------------------------------------------
def reduce_xor(operand, axes):
  """Bitwise XOR (integer) or logical XOR (bool) of the elements over `axes`; 0 / False when
  empty.

  Args:
    operand: a bool or integer array.
    axes: the axes to reduce (unique; negative values count from the end).

  Returns:
    An array of the operand's dtype without the reduced axes.

  Example:
    >>> lax.reduce_xor(jnp.array([[1, 2, 4], [3, 3, 0]]), (1,))
    Array([7, 0], dtype=int32)
  """
  return _reduce_bind(reduce_xor_p, operand, axes, "reduce_xor")


reduce_xor_p = _reduction(_Monoid(
    "reduce_xor", _intbool, _INTBOOL_MSG, lambda d: np.zeros((), d),
    _numpy_bitwise(np.bitwise_xor, lambda d: np.zeros((), d)), lambda d: binary.xor_p))
ad.not_differentiable(reduce_xor_p, "it takes bool or integer operands")
inv.not_invertible(reduce_xor_p, "many-to-one: a reduction")


# --- argmax / argmin -----------------------------------------------------------------------------
def _arg_bind(prim, operand, axis, index_dtype, op_name):
  (axis,) = canonicalize_axes((axis,), get_aval(operand).ndim, op_name)
  index_dtype = dtypes.canonicalize_dtype(index_dtype)
  return prim.bind(operand, axes=(axis,), index_dtype=index_dtype)


def _arg_abstract_eval(op_name):
  def rule(x, *, axes, index_dtype):
    if dtypes.is_complex(x.dtype):
      raise TypeError(f"{op_name} does not accept dtype {x.dtype.name}; it takes integer, "
                      f"floating-point or bool operands")
    if not dtypes.is_integer(index_dtype):
      raise TypeError(f"{op_name} index_dtype must be an integer type, got "
                      f"{np.dtype(index_dtype).name}")
    if len(axes) != 1:
      raise ValueError(f"{op_name} takes exactly one axis, got axes {axes}")
    _check_axes(op_name, x, axes)
    if x.shape[axes[0]] == 0:
      raise ValueError(f"argmin and argmax require non-empty reduced dimension. "
                       f"operand.shape={x.shape} axis={axes[0]}")
    return ShapedArray(_reduced_shape(x.shape, axes), index_dtype)
  return rule


def _arg_numpy(np_fn):
  def impl(x, *, axes, index_dtype):
    if x.dtype in _LOW_PRECISION:
      x = x.astype(dtypes.float32)
    return np.asarray(np_fn(x, axis=axes[0])).astype(index_dtype)
  return impl


def _arg_lower(direction: str, identity):
  """Variadic reduce over (value, index): a pair wins if its value is greater (less) or NaN
  while the other's is not; equal values (or two NaNs) go to the smaller index. This is a total
  order, so the result does not depend on XLA's reduction order."""
  def rule(ctx, x, *, axes, index_dtype):
    (axis,) = axes
    aval = ctx.avals_in[0]
    vt = ShapedArray((), aval.dtype)
    it = ShapedArray((), index_dtype)
    bt = ShapedArray((), dtypes.bool_)
    iota = ctx.op1("stablehlo.iota", [], aval.update(dtype=index_dtype, weak_type=False),
                   props={"iota_dimension": f"{axis} : i64"})
    inits = [ctx.constant(identity(aval.dtype), vt), ctx.constant(np.zeros((), index_dtype), it)]

    def body(fb, a, ia, b, ib):
      sub = mlir.LoweringRuleContext(fb, [vt, vt], [vt], ctx.platform)
      bor = lambda p, q: sub.op1("stablehlo.or", [p, q], bt)
      band = lambda p, q: sub.op1("stablehlo.and", [p, q], bt)
      wins = compare(sub, a, b, direction, vt)
      ties = compare(sub, a, b, "EQ", vt)
      if dtypes.is_float(aval.dtype):
        a_nan, b_nan = compare(sub, a, a, "NE", vt), compare(sub, b, b, "NE", vt)
        not_b_nan = compare(sub, b, b, "EQ", vt)
        wins = bor(wins, band(a_nan, not_b_nan))
        ties = bor(ties, band(a_nan, b_nan))
      pick_a = bor(wins, band(ties, compare(sub, ia, ib, "LT", it)))
      return [sub.op1("stablehlo.select", [pick_a, a, b], vt),
              sub.op1("stablehlo.select", [pick_a, ia, ib], it)]

    region = ctx.fb.region([mlir.ir_type(vt), mlir.ir_type(it)] * 2, body)
    _, idx = ctx.op("stablehlo.reduce", [x, iota] + inits,
                    [ctx.avals_out[0].update(dtype=aval.dtype), ctx.avals_out[0]],
                    props={"dimensions": mlir.i64_array(axes)}, regions=[region])
    return idx
  return rule


def argmax(operand, axis: int, index_dtype):
  """Index of the maximum along `axis` (NaN counts as the maximum; ties: the first index).

  Example:
    >>> x = jnp.array([[1., 5., 3.], [4., 2., 6.]])
    >>> lax.argmax(x, 1, jnp.int32)
    Array([1, 2], dtype=int32)
  """
  return _arg_bind(argmax_p, operand, axis, index_dtype, "argmax")


argmax_p = Primitive("argmax")
argmax_p.def_abstract_eval(_arg_abstract_eval("argmax"))
dispatch.def_numpy_impl(argmax_p, _arg_numpy(np.argmax))
mlir.register_lowering(argmax_p, _arg_lower("GT", _max_identity))
ad.zero_output_jvp(argmax_p, "integer output")
batching.primitive_batchers[argmax_p] = _reduction_batch_rule(argmax_p)


def argmin(operand, axis: int, index_dtype):
  """Index of the minimum along `axis` (NaN counts as the minimum; ties: the first index)."""
  return _arg_bind(argmin_p, operand, axis, index_dtype, "argmin")


argmin_p = Primitive("argmin")
argmin_p.def_abstract_eval(_arg_abstract_eval("argmin"))
dispatch.def_numpy_impl(argmin_p, _arg_numpy(np.argmin))
mlir.register_lowering(argmin_p, _arg_lower("LT", _min_identity))
ad.zero_output_jvp(argmin_p, "integer output")
batching.primitive_batchers[argmin_p] = _reduction_batch_rule(argmin_p)
inv.not_invertible(argmax_p, "many-to-one: an index")
inv.not_invertible(argmin_p, "many-to-one: an index")


# --- the monoid fast path of lax.reduce ---------------------------------------------------------
_MONOID_REDUCTIONS = {"add": reduce_sum, "mul": reduce_prod, "max": reduce_max,
                      "min": reduce_min, "and": reduce_and, "or": reduce_or, "xor": reduce_xor}


def monoid_reduction(x, init, computation, dimensions):
  """`lax.reduce` of one operand by a monoid reduction, or None when `computation` is not one.

  The computation is traced on scalars and recognized when it applies one of add, mul, max,
  min, and, or to its two arguments; the result is that reduction combined once with `init`
  (correct for any init value, since the monoid is associative and commutative). The result is
  weakly typed when both the operand and the init value are (as in JAX).
  """
  from revax._src.interpreters import staging
  aval = get_aval(x)
  try:
    init_aval = get_aval(init)
  except TypeError:
    return None
  scalar = ShapedArray((), aval.dtype)
  try:
    jaxpr, _ = staging.trace_to_jaxpr(lambda a, b: [computation(a, b)], [scalar, scalar])
  except Exception:  # not a function of two scalars to one: the general path says why
    return None
  name = _monoid_name(jaxpr)
  if name is None or init_aval.shape != () or (
      name in ("and", "or", "xor") and not _intbool(aval.dtype)):
    return None
  if not _is_identity(init, name, aval.dtype) and init_aval.dtype != aval.dtype:
    return None  # the general path rejects the dtype mismatch, as JAX does
  weak = aval.weak_type and init_aval.weak_type
  out = _MONOID_REDUCTIONS[name](x, dimensions)
  if not _is_identity(init, name, aval.dtype):
    combine = {"add": binary.add, "mul": binary.mul, "max": binary.max, "min": binary.min,
               "and": binary.bitwise_and, "or": binary.bitwise_or,
               "xor": binary.bitwise_xor}[name]
    out = combine(out, init)
  return convert_element_type(out, aval.dtype, weak_type=weak)


def _monoid_name(jaxpr):
  if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
    return None
  (eqn,) = jaxpr.eqns
  if eqn.primitive.name not in _MONOID_REDUCTIONS or eqn.outvars[0] is not jaxpr.outvars[0]:
    return None
  if set(map(id, eqn.invars)) != set(map(id, jaxpr.invars)) or len(eqn.invars) != 2:
    return None
  return eqn.primitive.name


def _is_identity(init, name, dtype) -> bool:
  """Whether `init` is a concrete scalar equal to the identity of monoid `name` in the init's
  own (canonical) dtype, as jax decides (so a Python 0 or False is the identity of a sum of any
  operand, and -inf that of a max of integers). `dtype` (the operand's) is used for values
  without a dtype of their own."""
  if isinstance(init, Tracer):
    return False
  try:
    value = np.asarray(init)
  except Exception:  # noqa: BLE001 (not convertible: not a concrete scalar)
    return False
  if value.shape != () or value.dtype.kind not in "biufcV":
    return False
  own = dtypes.canonicalize_dtype(value.dtype) if value.dtype in dtypes.SUPPORTED else dtype
  identity = {"add": lambda d: np.zeros((), d), "mul": lambda d: np.ones((), d),
              "max": _max_identity, "min": _min_identity, "and": _all_ones,
              "or": lambda d: np.zeros((), d), "xor": lambda d: np.zeros((), d)}[name](own)
  with np.errstate(all="ignore"):
    return bool(np.equal(value, identity))
