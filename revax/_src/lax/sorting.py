"""Sorting and cumulative reductions: sort (several operands, lexicographic keys), sort_key_val,
top_k, and cumsum, cumprod, cummax, cummin.

Sorting orders values as JAX does: floats ascending with -0.0 equal to 0.0 and every NaN after
+inf (all NaNs equal); complex numbers lexicographically (real part, then imaginary part); bool
False before True. `sort` is stable by default, so equal keys keep their order. The lowering is
`stablehlo.sort` with a comparator region spelling that order out with ordered comparisons.
`top_k` returns the k largest values in IEEE totalOrder (XLA's TopK order: NaN above inf, 0.0
above -0.0); ties go to the lower index.

Cumulative reductions lower to `stablehlo.reduce_window` with a window covering the whole axis
and padding (n-1, 0) (as JAX does on CPU), reversed with `stablehlo.reverse` for reverse=True;
the region applies the elementwise primitive's own lowering, so cummax/cummin propagate NaNs.
Derivatives: sort and top_k carry their tangents along the permutation they apply (a gather);
cumsum is linear (its transpose is the reverse cumsum); cumprod/cummax/cummin differentiate a
log-depth prefix scan of the elementwise op. Each primitive is one block: wrapper, rules,
registration.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.shape_poly import canonical_dim
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util, binary, shapes, slicing
from revax._src.lax.associative_scan import associative_scan
from revax._src.lax.comparison import compare, compare_type
from revax._src.lax.reductions import combiner_region

__all__ = [
  "sort", "sort_key_val", "top_k", "cumsum", "cumprod", "cummax", "cummin",
  "sort_p", "top_k_p", "cumsum_p", "cumprod_p", "cummax_p", "cummin_p",
]


def _take_along_axis(x, idx, axis: int):
  """`numpy.take_along_axis(x, idx, axis)` as one gather whose other dimensions are batching
  dimensions (idx may be shorter than x along `axis`)."""
  ndim = get_aval(x).ndim
  others = tuple(d for d in range(ndim) if d != axis)
  indices = shapes.reshape(idx, get_aval(idx).shape + (1,))
  dn = slicing.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                      start_index_map=(axis,), operand_batching_dims=others,
                                      start_indices_batching_dims=others)
  return slicing.gather(x, indices, dn, (1,) * ndim,
                        mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS)


def _canonical_dim(dim, ndim: int) -> int:
  """`dim` made non-negative when it is in [-ndim, ndim); out-of-range values are left for the
  abstract evaluation to reject."""
  dim = operator.index(dim)
  return dim + ndim if -ndim <= dim < 0 else dim


# --- the sort order, as NumPy keys and as comparator regions -------------------------------------
def _numpy_sort_key(x):
  """A key NumPy's argsort orders as JAX's sort does (its float order already puts NaN last and
  treats -0.0 as 0.0; half-precision floats are widened so NumPy can compare them)."""
  if x.dtype in (dtypes.bfloat16, dtypes.float16):
    return x.astype(np.float32)
  return x


def _scalar_ctx(fb, platform):
  b = ShapedArray((), dtypes.bool_)
  return mlir.LoweringRuleContext(fb, [b], [b], platform)


def _either(sub, p, q):
  return sub.op1("stablehlo.or", [p, q], ShapedArray((), dtypes.bool_))


def _both(sub, p, q):
  return sub.op1("stablehlo.and", [p, q], ShapedArray((), dtypes.bool_))


def _float_lt_eq(sub, a, b, aval):
  """(a before b, a equal to b) in sort order: numbers ascending, then NaNs, all equal."""
  before = compare(sub, a, b, "LT", aval)
  equal = compare(sub, a, b, "EQ", aval)
  a_nan, b_nan = compare(sub, a, a, "NE", aval), compare(sub, b, b, "NE", aval)
  before = _either(sub, before, _both(sub, compare(sub, a, a, "EQ", aval), b_nan))
  return before, _either(sub, equal, _both(sub, a_nan, b_nan))


def _lt_eq(sub, a, b, dtype):
  """(a before b, a equal to b) for scalars of `dtype` in JAX's sort order."""
  aval = ShapedArray((), dtype)
  if dtypes.is_float(dtype):
    return _float_lt_eq(sub, a, b, aval)
  if dtypes.is_complex(dtype):
    part = ShapedArray((), np.finfo(dtype).dtype)
    ar, br = (sub.op1("stablehlo.real", [v], part) for v in (a, b))
    ai, bi = (sub.op1("stablehlo.imag", [v], part) for v in (a, b))
    r_lt, r_eq = _float_lt_eq(sub, ar, br, part)
    i_lt, i_eq = _float_lt_eq(sub, ai, bi, part)
    return _either(sub, r_lt, _both(sub, r_eq, i_lt)), _both(sub, r_eq, i_eq)
  return compare(sub, a, b, "LT", aval), compare(sub, a, b, "EQ", aval)


def _comparator(ctx, dtypes_, num_keys: int) -> str:
  """The comparator region of a sort of operands of `dtypes_`: lexicographic over the first
  `num_keys` operands."""
  types = []
  for d in dtypes_:
    t = mlir.ir_type(ShapedArray((), d))
    types += [t, t]

  def body(fb, *args):
    sub = _scalar_ctx(fb, ctx.platform)
    result = None
    for k in reversed(range(num_keys)):
      lt, eq = _lt_eq(sub, args[2 * k], args[2 * k + 1], dtypes_[k])
      result = lt if result is None else _either(sub, lt, _both(sub, eq, result))
    return [result]

  return ctx.fb.region(types, body)


# --- sort ----------------------------------------------------------------------------------------
def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
  """Sort along `dimension`; with a sequence of operands, sort them all by the first `num_keys`
  (lexicographically) and return a tuple.

  Floats sort NaNs last and treat -0.0 as equal to 0.0 (so a stable sort keeps their order).

  Args:
    operand: an array, or a sequence of arrays of one shape.
    dimension: the axis to sort along (negative counts from the end).
    is_stable: keep the order of equal keys.
    num_keys: how many leading operands are keys.

  Returns:
    The sorted array, or a tuple of sorted arrays for a sequence.

  Example:
    >>> keys, values = jnp.array([3, 1, 2]), jnp.array([30., 10., 20.])
    >>> lax.sort((keys, values), num_keys=1)  # values permuted like the sorted keys
    (Array([1, 2, 3], dtype=int32), Array([10., 20., 30.], dtype=float32))
  """
  single = not isinstance(operand, (tuple, list))
  operands = (operand,) if single else tuple(operand)
  if not operands:
    raise TypeError("sort requires at least one operand")
  # as jax's: the first operand's shape is read (a Python scalar there is an AttributeError)
  # and the dimension checked against it before anything else
  ndim = len(operands[0].shape)
  if not -ndim <= operator.index(dimension) < ndim:
    raise ValueError(f"sort dimension {dimension} is out of bounds for operands of shape "
                     f"{tuple(operands[0].shape)} (rank {ndim})")
  dimension = _canonical_dim(dimension, ndim)
  outs = sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable),
                     num_keys=operator.index(num_keys))
  return outs[0] if single else tuple(outs)


def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
  if not operands:
    raise TypeError("sort requires at least one operand")
  shapes = [o.shape for o in operands]
  if len(set(shapes)) != 1:
    raise TypeError(f"sort arguments must have the same shape, got {', '.join(map(str, shapes))}")
  if not 1 <= num_keys <= len(operands):
    raise ValueError(f"sort num_keys must be between 1 and the number of operands "
                     f"({len(operands)}), got num_keys={num_keys}")
  ndim = len(shapes[0])
  if not 0 <= dimension < ndim:
    raise ValueError(f"sort dimension {dimension} is out of bounds for operands of shape "
                     f"{shapes[0]} (rank {ndim})")
  return [ShapedArray(o.shape, o.dtype, o.weak_type) for o in operands]


def _sort_numpy(*operands, dimension, is_stable, num_keys):
  keys = []
  for k in operands[:num_keys]:
    # a complex key is two keys, real then imaginary part, each NaN-last (NumPy's complex order
    # puts every x+nanj after every number: JAX's comparator does not)
    keys += [k.real, k.imag] if np.iscomplexobj(k) else [_numpy_sort_key(k)]
  if len(keys) == 1:
    perm = np.argsort(keys[0], axis=dimension, kind="stable")
  else:
    perm = np.lexsort(keys[::-1], axis=dimension)
  return [np.take_along_axis(o, perm, axis=dimension) for o in operands]


def _sort_lower(ctx, *operands, dimension, is_stable, num_keys):
  region = _comparator(ctx, [a.dtype for a in ctx.avals_in], num_keys)
  return ctx.op("stablehlo.sort", list(operands), ctx.avals_out,
                props={"dimension": f"{dimension} : i64",
                       "is_stable": "true" if is_stable else "false"}, regions=[region])


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  """Sort an iota along with the operands; the tangents follow that permutation."""
  shape = get_aval(primals[0]).shape
  iota = shapes.broadcasted_iota(np.int32, shape, dimension)
  *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                            num_keys=num_keys)
  if not all(shape):  # nothing to permute (and a gather cannot take slices of an empty axis)
    return outs, list(tangents)
  return outs, [t if type(t) is ad.Zero else _take_along_axis(t, perm, dimension)
                for t in tangents]


def _sort_batch(size, vals, dims, *, dimension, is_stable, num_keys):
  """All operands share one batch dim (moved to the front unless they already agree)."""
  mapped = {d for d in dims if d is not batching.not_mapped}
  if len(mapped) == 1 and batching.not_mapped not in dims:
    (d,) = mapped
  else:
    vals, d = [batch_util.bdim_to_front(v, b, size) for v, b in zip(vals, dims)], 0
  outs = sort_p.bind(*vals, dimension=dimension + (dimension >= d), is_stable=is_stable,
                     num_keys=num_keys)
  return outs, [d] * len(outs)


sort_p = Primitive("sort", multiple_results=True)
sort_p.def_abstract_eval(_sort_abstract_eval)
dispatch.def_numpy_impl(sort_p, _sort_numpy)
mlir.register_lowering(sort_p, _sort_lower)
ad.primitive_jvps[sort_p] = _sort_jvp
batching.axis_size_batchers[sort_p] = _sort_batch


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
  """Sort `keys` along `dimension` and permute `values` alike. Returns (sorted keys, values)."""
  k, v = sort((keys, values), dimension, is_stable, num_keys=1)
  return k, v
inv.not_invertible(sort_p, "many-to-one: the order of the operand is lost")


# --- top_k ---------------------------------------------------------------------------------------
def top_k(operand, k: int, *, axis: int = -1):
  """The `k` largest values along `axis` in descending order, and their int32 indices.

  Values are ordered as XLA's TopK orders them, by IEEE totalOrder: NaN above inf, 0.0 above
  -0.0, and NaNs with the sign bit set below -inf. Equal values come lower index first.

  Example:
    >>> values, indices = lax.top_k(jnp.array([4., 1., 7., 3., 9.]), 3)
    >>> values, indices
    (Array([9., 7., 4.], dtype=float32), Array([4, 2, 0], dtype=int32))
  """
  k = canonical_dim(k)  # an int, or a symbolic size
  axis = _canonical_dim(axis, get_aval(operand).ndim)
  return list(top_k_p.bind(operand, k=k, axis=axis))  # a list, as JAX's


def _top_k_abstract_eval(x, *, k, axis):
  if dtypes.is_complex(x.dtype):
    raise TypeError(f"top_k does not accept dtype {x.dtype.name}; it takes integer, "
                    f"floating-point or bool operands")
  if not 0 <= axis < x.ndim:
    raise ValueError(f"top_k axis {axis} is out of bounds for operand of shape {x.shape} "
                     f"(rank {x.ndim})")
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  if k > x.shape[axis]:
    raise ValueError(f"k argument to top_k must be no larger than the size of axis {axis}; "
                     f"got k={k} for operand shape {x.shape}")
  shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
  return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, dtypes.int32)]


def _total_order_key(x):
  """Signed integers ordered like IEEE totalOrder of the floats `x` (-NaN < -inf < ... < -0.0 <
  0.0 < ... < inf < NaN), which is the order of XLA's TopK; integers are their own key."""
  if not dtypes.is_float(x.dtype):
    return x
  signed = np.dtype(f"i{x.dtype.itemsize}")
  bits = x.view(signed)
  return bits ^ ((bits >> (8 * x.dtype.itemsize - 1)) & np.array(np.iinfo(signed).max, signed))


def _top_k_numpy(x, *, k, axis):
  descending = ~_total_order_key(x)  # bitwise NOT reverses an integer order without overflow
  perm = np.argsort(descending, axis=axis, kind="stable")
  perm = np.take(perm, np.arange(k), axis=axis)
  return [np.take_along_axis(x, perm, axis=axis), perm.astype(np.int32)]


def _top_k_lower(ctx, x, *, k, axis):
  """A stable sort of (x, iota), descending in the total order, sliced to the first k."""
  aval = ctx.avals_in[0]
  idx_aval = aval.update(dtype=dtypes.int32, weak_type=False)
  iota = ctx.op1("stablehlo.iota", [], idx_aval, props={"iota_dimension": f"{axis} : i64"})
  scalar = ShapedArray((), aval.dtype)
  t, it = mlir.ir_type(scalar), mlir.ir_type(ShapedArray((), dtypes.int32))
  kind = ("#stablehlo<comparison_type TOTALORDER>" if dtypes.is_float(aval.dtype)
          else compare_type(aval.dtype))

  def body(fb, a, b, ia, ib):
    sub = _scalar_ctx(fb, ctx.platform)
    return [sub.op1("stablehlo.compare", [a, b], ShapedArray((), dtypes.bool_), props={
        "comparison_direction": "#stablehlo<comparison_direction GT>",
        "compare_type": kind})]

  region = ctx.fb.region([t, t, it, it], body)
  vals, idx = ctx.op("stablehlo.sort", [x, iota], [aval, idx_aval],
                     props={"dimension": f"{axis} : i64", "is_stable": "true"}, regions=[region])
  limits = list(aval.shape)
  limits[axis] = k
  props = {"start_indices": mlir.i64_array([0] * aval.ndim),
           "limit_indices": mlir.i64_array(limits), "strides": mlir.i64_array([1] * aval.ndim)}
  return [ctx.op1("stablehlo.slice", [v], out, props=props)
          for v, out in zip((vals, idx), ctx.avals_out, strict=True)]


def _top_k_jvp(primals, tangents, *, k, axis):
  (x,), (t,) = primals, tangents
  values, indices = top_k_p.bind(x, k=k, axis=axis)
  v_aval = get_aval(values)
  t_values = (_take_along_axis(t, indices, axis) if v_aval.size else
              ad.Zero(ad.tangent_aval(v_aval)))
  return [values, indices], [t_values, ad.Zero(ad.tangent_aval(get_aval(indices)))]


def _top_k_batch(vals, dims, *, k, axis):
  (x,), (d,) = vals, dims
  return top_k_p.bind(x, k=k, axis=axis + (axis >= d)), [d, d]


top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.def_abstract_eval(_top_k_abstract_eval)
dispatch.def_numpy_impl(top_k_p, _top_k_numpy)
mlir.register_lowering(top_k_p, _top_k_lower)
ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch
inv.not_invertible(top_k_p, "many-to-one: the order and the other values are lost")


# --- cumulative reductions: shared rules ---------------------------------------------------------
def _cumulative_abstract_eval(name):
  def rule(x, *, axis, reverse):
    if dtypes.is_bool(x.dtype):
      raise TypeError(f"{name} does not accept dtype bool. Accepted dtypes are subtypes of number.")
    if not 0 <= axis < x.ndim:
      raise ValueError(f"{name} axis {axis} is out of bounds for operand of shape {x.shape} "
                       f"(rank {x.ndim})")
    return ShapedArray(x.shape, x.dtype, x.weak_type)
  return rule


def _cumulative_numpy(accumulate):
  def impl(x, *, axis, reverse):
    acc = dtypes.float32 if x.dtype in (dtypes.bfloat16, dtypes.float16) else x.dtype
    y = np.flip(x, axis) if reverse else x
    with np.errstate(all="ignore"):
      out = accumulate(y.astype(acc), axis=axis, dtype=acc).astype(x.dtype)
    return np.flip(out, axis) if reverse else out
  return impl


def _cumulative_lower(combiner, identity):
  def rule(ctx, x, *, axis, reverse):
    aval = ctx.avals_in[0]
    n = aval.shape[axis]
    if aval.size == 0 or n <= 1:
      return x
    rev = {"dimensions": mlir.i64_array([axis])}
    if reverse:
      x = ctx.op1("stablehlo.reverse", [x], aval, props=rev)
    ones = [1] * aval.ndim
    window = list(ones)
    window[axis] = n
    pads = [[0, 0] for _ in range(aval.ndim)]
    pads[axis][0] = n - 1
    init = ctx.constant(identity(aval.dtype), ShapedArray((), aval.dtype))
    out = ctx.op1("stablehlo.reduce_window", [x, init], aval, props={
        "base_dilations": mlir.i64_array(ones), "padding": mlir.i64_dense(pads),
        "window_dilations": mlir.i64_array(ones), "window_dimensions": mlir.i64_array(window),
        "window_strides": mlir.i64_array(ones)},
        regions=[combiner_region(ctx, combiner, aval.dtype)])
    return ctx.op1("stablehlo.reverse", [out], aval, props=rev) if reverse else out
  return rule


def _cumulative_batch(prim):
  def rule(vals, dims, *, axis, reverse):
    (x,), (d,) = vals, dims
    return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d
  return rule


def _prefix_scan(op, identity, x, axis: int, reverse: bool):
  """The inclusive scan of `op` along `axis` in log2(n) steps (Hillis-Steele): step k combines
  each element with the one 2**k before it, whose window is disjoint from its own."""
  aval = get_aval(x)
  if reverse:
    x = shapes.rev(x, (axis,))
  shift, n = 1, aval.shape[axis]
  fill = identity(aval.dtype)
  while shift < n:
    config = [(0, 0, 0)] * aval.ndim
    config[axis] = (shift, -shift, 0)
    x = op(x, shapes.pad(x, fill, config))
    shift *= 2
  return shapes.rev(x, (axis,)) if reverse else x


def _cumulative_jvp_by_scan(prim, op, identity):
  """JVP of a cumulative reduction: the output from `prim`, the tangent from differentiating
  `_prefix_scan` (so zeros of cumprod and ties of cummax are handled by mul's and max's rules)."""
  def rule(primals, tangents, *, axis, reverse):
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axis=axis, reverse=reverse)
    scan = lambda v: [_prefix_scan(op, identity, v, axis, reverse)]
    _, (t_out,) = ad.jvp_flat(scan, [x], [ad.instantiate_zeros(t)])
    return out, ad.instantiate_zeros(t_out)
  return rule


def _cumulative(name: str, accumulate, combiner, identity) -> Primitive:
  prim = Primitive(name)
  prim.def_abstract_eval(_cumulative_abstract_eval(name))
  dispatch.def_numpy_impl(prim, _cumulative_numpy(accumulate))
  mlir.register_lowering(prim, _cumulative_lower(combiner, identity))
  batching.primitive_batchers[prim] = _cumulative_batch(prim)
  return prim


def _cumulative_bind(prim, operand, axis, reverse):
  axis = _canonical_dim(axis, get_aval(operand).ndim)
  return prim.bind(operand, axis=axis, reverse=bool(reverse))


def _lowest(dtype):
  if dtypes.is_inexact(dtype):
    return np.asarray(-np.inf, dtype)
  return np.asarray(dtypes.iinfo(dtype).min, dtype)


def _highest(dtype):
  if dtypes.is_inexact(dtype):
    return np.asarray(np.inf, dtype)
  return np.asarray(dtypes.iinfo(dtype).max, dtype)


# --- cumsum --------------------------------------------------------------------------------------
def cumsum(operand, axis: int = 0, reverse: bool = False):
  """Cumulative sum along `axis` (from the end if `reverse`).

  Example:
    >>> lax.cumsum(jnp.array([1, 2, 3]))
    Array([1, 3, 6], dtype=int32)
    >>> lax.cumsum(jnp.array([1, 2, 3]), reverse=True)
    Array([6, 5, 3], dtype=int32)
  """
  return _cumulative_bind(cumsum_p, operand, axis, reverse)


def _cumsum_transpose(ct, x, *, axis, reverse):
  return [cumsum(ct, axis, not reverse)]


def _cumsum_inverse(y, *, axis, reverse):
  """x from its running sum: each sum minus the one before it (a zero before the first)."""
  from revax._src.lax.shapes import pad
  config = [(0, 0, 0)] * get_aval(y).ndim
  config[axis] = (-1, 1, 0) if reverse else (1, -1, 0)  # shift by one, a zero coming in
  return binary.sub(y, pad(y, np.zeros((), get_aval(y).dtype), tuple(config)))


def _cumsum_from_zero(y, axis, dtype):
  """np.cumsum as XLA's lowering computes it: from a +0.0 start, so no sum is -0.0."""
  out = np.cumsum(y, axis=axis, dtype=dtype)
  if y.shape[axis] > 1 and dtypes.is_inexact(dtype):
    out += np.zeros((), dtype)
  return out


cumsum_p = _cumulative("cumsum", _cumsum_from_zero, binary.add_p, lambda d: np.zeros((), d))
ad.deflinear(cumsum_p, _cumsum_transpose)
inv.definverse_unary(cumsum_p, _cumsum_inverse)


# --- cumprod -------------------------------------------------------------------------------------
def cumprod(operand, axis: int = 0, reverse: bool = False):
  """Cumulative product along `axis` (from the end if `reverse`)."""
  return _cumulative_bind(cumprod_p, operand, axis, reverse)


cumprod_p = _cumulative("cumprod", np.cumprod, binary.mul_p, lambda d: np.ones((), d))
ad.primitive_jvps[cumprod_p] = _cumulative_jvp_by_scan(cumprod_p, binary.mul,
                                                       lambda d: np.ones((), d))
inv.not_invertible(cumprod_p, "a zero in the running product hides the values after it")


# --- cummax --------------------------------------------------------------------------------------
def cummax(operand, axis: int = 0, reverse: bool = False):
  """Cumulative maximum along `axis` (NaN propagates to every later position)."""
  return _cumulative_bind(cummax_p, operand, axis, reverse)


def _max_accumulate(x, axis, dtype):
  return np.maximum.accumulate(x, axis=axis, dtype=dtype)


cummax_p = _cumulative("cummax", _max_accumulate, binary.max_p, _lowest)
ad.primitive_jvps[cummax_p] = _cumulative_jvp_by_scan(cummax_p, binary.max, _lowest)
inv.not_invertible(cummax_p, "many-to-one: values below the running maximum are lost")


# --- cummin --------------------------------------------------------------------------------------
def cummin(operand, axis: int = 0, reverse: bool = False):
  """Cumulative minimum along `axis` (NaN propagates to every later position)."""
  return _cumulative_bind(cummin_p, operand, axis, reverse)


def _min_accumulate(x, axis, dtype):
  return np.minimum.accumulate(x, axis=axis, dtype=dtype)


cummin_p = _cumulative("cummin", _min_accumulate, binary.min_p, _highest)
ad.primitive_jvps[cummin_p] = _cumulative_jvp_by_scan(cummin_p, binary.min, _highest)
inv.not_invertible(cummin_p, "many-to-one: values above the running minimum are lost")


# --- cumlogsumexp --------------------------------------------------------------------------------
def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
  """Cumulative log(sum(exp(x))) along `axis` (from the end if `reverse`), computed stably.

  Args:
    operand: a floating-point array.
    axis: the axis to accumulate along (negative counts from the end).
    reverse: accumulate from the end.

  Returns:
    An array of the operand's shape and dtype.

  Example:
    >>> lax.cumlogsumexp(jnp.log(jnp.array([1.0, 2.0, 3.0])))
    Array([0.       , 1.0986123, 1.7917595], dtype=float32)
  """
  if not dtypes.is_float(get_aval(operand).dtype):
    raise TypeError(f"cumlogsumexp requires a floating-point operand, got "
                    f"{get_aval(operand).dtype}")
  return _cumulative_bind(cumlogsumexp_p, operand, axis, reverse)


def _logaddexp(a, b):
  """log(exp(a) + exp(b)) from the larger one (both -inf stays -inf, not inf - inf)."""
  from revax._src.lax import comparison, creation, unary
  big = binary.max(a, b)
  small = binary.min(a, b)
  shift = comparison.select_n(unary.is_finite(big), creation.full_like(big, 0), big)
  return binary.add(big, unary.log1p(unary.exp(binary.sub(small, shift))))


def _cumlogsumexp_scan(x, *, axis, reverse):
  """The parallel prefix scan of `_logaddexp` (associative_scan): the lowering, the NumPy
  implementation (run op by op on host values) and the JVP all follow it."""
  return associative_scan(_logaddexp, x, reverse=reverse, axis=axis)


def _cumlogsumexp_abstract_eval(x, *, axis, reverse):
  if not dtypes.is_float(x.dtype):
    raise TypeError(f"cumlogsumexp requires a floating-point operand, got {x.dtype}")
  return _cumulative_abstract_eval("cumlogsumexp")(x, axis=axis, reverse=reverse)


def _cumlogsumexp_numpy(x, *, axis, reverse):
  return np.asarray(_cumlogsumexp_scan(x, axis=axis, reverse=reverse))


def _cumlogsumexp_jvp(primals, tangents, *, axis, reverse):
  (x,), (t,) = primals, tangents
  out = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
  scan = lambda v: [_cumlogsumexp_scan(v, axis=axis, reverse=reverse)]
  _, (t_out,) = ad.jvp_flat(scan, [x], [ad.instantiate_zeros(t)])
  return out, ad.instantiate_zeros(t_out)


cumlogsumexp_p = Primitive("cumlogsumexp")
cumlogsumexp_p.def_abstract_eval(_cumlogsumexp_abstract_eval)
dispatch.def_numpy_impl(cumlogsumexp_p, _cumlogsumexp_numpy)
mlir.register_lowering(cumlogsumexp_p,
                       mlir.lower_fun(_cumlogsumexp_scan, multiple_results=False))
ad.primitive_jvps[cumlogsumexp_p] = _cumlogsumexp_jvp
batching.primitive_batchers[cumlogsumexp_p] = _cumulative_batch(cumlogsumexp_p)
inv.not_invertible(cumlogsumexp_p, "rebuilding x as log(exp(y[i]) - exp(y[i-1])) cancels "
                   "catastrophically where the running sum is dominated by earlier values")


# --- approx_top_k --------------------------------------------------------------------------------
def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The `k` largest values along `reduction_dimension` and their int32 indices, as XLA's
  ApproxTopK gives them where it has no approximate algorithm (every backend but TPU): exactly,
  in descending order (NaN above inf, ties to the lower index), so every recall_target is met.

  Args:
    operand: a floating-point array of rank >= 1.
    k: how many values (> 0, at most the dimension's size).
    reduction_dimension: the dimension to search (negative counts from the end).
    recall_target: the recall a TPU search aims at (kept in the jaxpr).
    reduction_input_size_override: the logical size of the dimension, when the operand is a
      shard of a larger one (it only enters the output size with aggregate_to_topk=False).
    aggregate_to_topk: return `k` results; False returns as many as XLA's approximate
      reduction would keep (`approx_top_k_reduction_output_size`), sorted.

  Returns:
    [values, indices].

  Example:
    >>> lax.approx_max_k(jnp.array([[1.0, 5.0, 3.0, 4.0]]), 2)
    [Array([[5., 4.]], dtype=float32), Array([[1, 3]], dtype=int32)]
  """
  return list(approx_top_k_p.bind(
      operand, k=k, reduction_dimension=reduction_dimension, recall_target=recall_target,
      is_max_k=True, reduction_input_size_override=reduction_input_size_override,
      aggregate_to_topk=aggregate_to_topk))


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The `k` smallest values along `reduction_dimension` and their int32 indices (exactly, in
  ascending order; see `approx_max_k` for the arguments).

  Example:
    >>> lax.approx_min_k(jnp.array([[1.0, 5.0, 3.0, 4.0]]), 2)
    [Array([[1., 3.]], dtype=float32), Array([[0, 2]], dtype=int32)]
  """
  return list(approx_top_k_p.bind(
      operand, k=k, reduction_dimension=reduction_dimension, recall_target=recall_target,
      is_max_k=False, reduction_input_size_override=reduction_input_size_override,
      aggregate_to_topk=aggregate_to_topk))


def approx_top_k_reduction_output_size(input_size, rank, top_k, recall_target,
                                       aggregate_to_topk=True, input_size_override=-1):
  """(output size, log2 of the reduction) of XLA's ApproxTopK along a dimension of
  `input_size` (XLA's ApproxTopKReductionOutputSize): `top_k` when aggregating; else the
  windows of the approximate reduction (128 lanes, 1024 for rank 1) that keep
  `recall_target` of the top-k.

  Example:
    >>> from revax._src.lax.sorting import approx_top_k_reduction_output_size
    >>> approx_top_k_reduction_output_size(1000, 2, 5, 0.95, False)
    (256, 2)
  """
  if aggregate_to_topk:
    return top_k, -1
  tiling = 1024 if rank == 1 else 128  # (TPU lanes of a rank >= 2 operand; chunks of rank 1)
  if input_size <= tiling:
    return input_size, 0
  if 0 <= input_size_override < input_size:
    raise ValueError(f"reduction_input_size_override: {input_size_override} should be greater "
                     f"equals to operands[reduction_dim]: {input_size}")
  logical = input_size_override if input_size_override >= 0 else input_size
  log2_ceil = lambda v: (v - 1).bit_length() if v > 0 else 0
  if top_k == 1:  # one window per lane
    return tiling, log2_ceil(-(-logical // tiling))
  recall = float(np.float32(recall_target))  # (XLA takes it as a float)
  if recall == 1.0:
    return input_size, 0
  if not 0.0 < recall <= 1.0:
    raise ValueError("recall_target should range in (0,1]")
  # windows W keeping the recall: recall ~ exp((1 - k) / W), so W = (1 - k) / log(recall)
  windows = min(max(int((1.0 - top_k) / math.log(recall)), tiling), logical)
  log2_reduction = max((logical // windows).bit_length() - 1, 0)
  if log2_reduction == 0:
    return input_size, 0
  log2_reduction = min(log2_reduction, log2_ceil(input_size // tiling))
  lanes = -(-input_size // tiling)
  return -(-lanes // (1 << log2_reduction)) * tiling, log2_reduction


def _approx_top_k_abstract_eval(x, *, k, reduction_dimension, recall_target, is_max_k,
                                reduction_input_size_override, aggregate_to_topk):
  if k <= 0:
    raise ValueError(f"k must be positive, got {k}")
  if x.ndim == 0:
    raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {x.shape}")
  dims = list(x.shape)
  if dims[reduction_dimension] < k:
    raise ValueError(f"k must be smaller than the size of reduction_dim "
                     f"{dims[reduction_dimension]}, got {k}")
  if not dtypes.is_float(x.dtype):
    raise ValueError("operand must be a floating type")
  dims[reduction_dimension] = approx_top_k_reduction_output_size(
      dims[reduction_dimension], len(dims), k, recall_target, aggregate_to_topk,
      reduction_input_size_override)[0]
  return [ShapedArray(dims, x.dtype, x.weak_type), ShapedArray(dims, dtypes.int32)]


def _approx_top_k_exact(x, *, k, reduction_dimension, recall_target, is_max_k,
                        reduction_input_size_override, aggregate_to_topk):
  """The exact result: top_k along the dimension (of the negated operand for the smallest
  values), as many as the abstract evaluation keeps."""
  from revax._src.lax.unary import neg
  aval = get_aval(x)
  axis = reduction_dimension % aval.ndim
  size = approx_top_k_reduction_output_size(
      aval.shape[axis], aval.ndim, k, recall_target, aggregate_to_topk,
      reduction_input_size_override)[0]
  if is_max_k:
    return list(top_k_p.bind(x, k=size, axis=axis))
  values, indices = top_k_p.bind(neg(x), k=size, axis=axis)
  return [neg(values), indices]


def _approx_top_k_numpy(x, **params):
  return [np.asarray(v) for v in _approx_top_k_exact(x, **params)]


def _approx_top_k_jvp(primals, tangents, **params):
  (x,), (t,) = primals, tangents
  values, indices = approx_top_k_p.bind(x, **params)
  axis = params["reduction_dimension"] % get_aval(x).ndim
  t_values = (ad.Zero(ad.tangent_aval(get_aval(values))) if type(t) is ad.Zero
              or not get_aval(values).size else _take_along_axis(t, indices, axis))
  return [values, indices], [t_values, ad.Zero(ad.tangent_aval(get_aval(indices)))]


def _approx_top_k_batch(vals, dims, *, reduction_dimension, **params):
  (x,), (d,) = vals, dims
  dim_map = [i for i in range(get_aval(x).ndim) if i != d]
  outs = approx_top_k_p.bind(x, reduction_dimension=dim_map[reduction_dimension], **params)
  return outs, [d, d]


approx_top_k_p = Primitive("approx_top_k", multiple_results=True)
approx_top_k_p.def_abstract_eval(_approx_top_k_abstract_eval)
dispatch.def_numpy_impl(approx_top_k_p, _approx_top_k_numpy)
mlir.register_lowering(approx_top_k_p, mlir.lower_fun(_approx_top_k_exact, multiple_results=True))
ad.primitive_jvps[approx_top_k_p] = _approx_top_k_jvp
batching.primitive_batchers[approx_top_k_p] = _approx_top_k_batch
inv.not_invertible(approx_top_k_p, "many-to-one: the values left out are lost")
