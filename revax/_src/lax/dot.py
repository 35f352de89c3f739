"""dot_general: contractions with batch and contracting dimensions in any positions.

XLA's DotGeneral lets batch dimensions sit anywhere in either operand; so does revax's. The
output holds the batch dimensions (in lhs_batch order), then lhs's free dimensions, then rhs's,
each in order. `dot` and `matmul`-style helpers are wrappers over it.

bool and integer operands are accepted everywhere. The jaxpr always shows one `dot_general`;
how it runs is the lowering's business: XLA:CPU has native bool/integer dots, so the default
lowering emits `stablehlo.dot_general` for every dtype, and `lower_integer_dots_as_sums(platform)`
selects, for a backend without them, a lowering rule written in revax (`mlir.lower_fun`) that
expands such a dot into broadcast products summed over the contracting dimensions (`and`/`or`
for bool).
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes, sharding_types
from revax._src.core.jaxpr import pp_param_rules
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import dot_algorithms
from revax._src.lax.binary import bitwise_and, mul
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.reductions import reduce_or, reduce_sum
from revax._src.lax import sharding_constraint
from revax._src.lax.sharding_constraint import placed
from revax._src.lax.shapes import broadcast_in_dim, transpose

__all__ = [
  "dot_general",
  "dot",
  "Precision",
  "dot_general_p",
  "lower_integer_dots_as_sums",
]


class Precision:
  """Precision of a dot on accelerators: DEFAULT, HIGH or HIGHEST (as jax.lax.Precision)."""
  DEFAULT = "DEFAULT"
  HIGH = "HIGH"
  HIGHEST = "HIGHEST"
  _MLIR = {"DEFAULT": "DEFAULT", "HIGH": "HIGH", "HIGHEST": "HIGHEST",
           "bfloat16": "DEFAULT", "tensorfloat32": "HIGH", "float32": "HIGHEST",
           "fastest": "DEFAULT", "high": "HIGH", "highest": "HIGHEST"}


def _canonicalize_precision(precision):
  """None, one precision, or a (lhs, rhs) pair -> None or a pair of names."""
  if precision is None:
    return None
  if isinstance(precision, (tuple, list)):
    if len(precision) != 2:
      raise ValueError(f"precision must be None, a Precision, or a pair of them, got {precision}")
    return tuple(_one_precision(p) for p in precision)
  p = _one_precision(precision)
  return (p, p)


def canonicalize_dot_precision(precision):
  """A dot's precision: None, a (lhs, rhs) pair of names, or a dot algorithm (a
  `DotAlgorithm`, a `DotAlgorithmPreset`, or a preset's name)."""
  if dot_algorithms.is_algorithm(precision):
    return precision
  if isinstance(precision, str) and precision in dot_algorithms.DotAlgorithmPreset.__members__:
    return dot_algorithms.DotAlgorithmPreset[precision]
  return _canonicalize_precision(precision)


def _one_precision(p):
  name = getattr(p, "name", p)
  if name not in Precision._MLIR:
    raise ValueError(f"unknown precision {p!r}; expected one of DEFAULT, HIGH, HIGHEST")
  return Precision._MLIR[name]


# --- dot_general ---------------------------------------------------------------------------------
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
  """General tensor contraction.

  Args:
    lhs, rhs: arrays. Their dtypes may differ as in jax.lax.dot_general: the result has the
      "wider" of the two (float32 for float32 x int32, int32 for int8 x int32, ...).
    dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`, sequences
      of dimension indices; batch and contracting dimensions may be in any positions.
    precision: None, a `Precision`, a pair of them, or a dot algorithm (`DotAlgorithm`,
      `DotAlgorithmPreset` or a preset's name: the operands are rounded to its input types and
      accumulated in its accumulation type).
    preferred_element_type: the accumulation/result dtype (e.g. float32 for bf16 inputs).
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Returns:
    An array of shape batch + lhs free + rhs free.

  Example:
    >>> x, y = jnp.array([[1., 2.], [3., 4.]]), jnp.array([[1., 0.], [1., 1.]])
    >>> lax.dot_general(x, y, (((1,), (0,)), ((), ())))  # contract x's 1 with y's 0: x @ y
    Array([[3., 2.],
           [7., 4.]], dtype=float32)
    >>> b = jnp.ones((3, 2, 4))  # batch dimensions need not lead
    >>> lax.dot_general(jnp.ones((2, 3, 5)), b, (((0,), (1,)), ((1,), (0,)))).shape
    (3, 5, 4)
  """
  dims = _canonicalize_dimension_numbers(dimension_numbers)
  pref = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
  given = sharding_constraint.typed_result_param(out_sharding)
  if given and given["out_sharding"].spec.unreduced:  # (checked with unsplit operands too)
    sharding_types.ur_rules[dot_general_p]((get_aval(lhs), get_aval(rhs)),
                                           {"dimension_numbers": dims, **given})
  out = dot_general_p.bind(lhs, rhs, dimension_numbers=dims,
                           precision=canonicalize_dot_precision(precision),
                           preferred_element_type=pref,
                           **sharding_constraint.typed_result_param(out_sharding))
  return placed(out, out_sharding)


def _canonicalize_dimension_numbers(dimension_numbers):
  try:
    (lc, rc), (lb, rb) = dimension_numbers
    return ((_dims_tuple(lc), _dims_tuple(rc)), (_dims_tuple(lb), _dims_tuple(rb)))
  except (TypeError, ValueError):
    msg = ("dot_general dimension_numbers must be ((lhs_contracting, rhs_contracting), "
           f"(lhs_batch, rhs_batch)), sequences of ints, got {dimension_numbers!r}")
    raise TypeError(msg) from None


def _dims_tuple(ds):
  if isinstance(ds, (int, np.integer)):
    return (int(ds),)
  out = []
  for d in ds:
    if not isinstance(d, (int, np.integer)) or isinstance(d, (bool, np.bool_)):
      raise TypeError(f"dimension {d!r} is not an int")
    out.append(int(d))
  return tuple(out)


def _check_dims(kind, side, dims, shape):
  ndim = len(shape)
  bad = [d for d in dims if not 0 <= d < ndim]
  if bad:
    raise TypeError(f"dot_general requires {side} {kind} dimensions to be nonnegative and less "
                    f"than the rank of {side}, got {side}_{kind} {dims} (dimension "
                    f"{bad[0]} is out of range) for {side} of shape {shape} (rank {ndim})")
  if len(set(dims)) != len(dims):
    dup = next(d for d in dims if dims.count(d) > 1)
    raise TypeError(f"dot_general requires {side} {kind} dimensions to be distinct, got "
                    f"{side}_{kind} {dims} (dimension {dup} repeats) for {side} of shape {shape}")


def _dot_general_shape(lhs_shape, rhs_shape, dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  shapes = f"lhs shape {lhs_shape} and rhs shape {rhs_shape}"
  if len(lb) != len(rb):
    raise TypeError(f"dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, "
                    f"got lhs_batch {lb} and rhs_batch {rb} for {shapes}")
  if len(lc) != len(rc):
    raise TypeError(f"dot_general requires equal numbers of lhs and rhs contracting dimensions, "
                    f"got lhs_contracting {lc} and rhs_contracting {rc} for {shapes}")
  for side, shape, b, c in (("lhs", lhs_shape, lb, lc), ("rhs", rhs_shape, rb, rc)):
    _check_dims("batch", side, b, shape)
    _check_dims("contracting", side, c, shape)
    both = sorted(set(b) & set(c))
    if both:
      raise TypeError(f"dot_general requires {side} batch dimensions and contracting dimensions "
                      f"to be distinct, got {side}_batch {b} and {side}_contracting {c} (dimension "
                      f"{both[0]} is both) for {side} of shape {shape}")
  for kind, ls, rs in (("batch", lb, rb), ("contracting", lc, rc)):
    lsz = tuple(lhs_shape[d] for d in ls)
    rsz = tuple(rhs_shape[d] for d in rs)
    if lsz != rsz:
      raise TypeError(f"dot_general requires lhs {kind} dimension sizes to equal rhs {kind} "
                      f"dimension sizes, got lhs {kind} dims {ls} of sizes {lsz} and rhs {kind} "
                      f"dims {rs} of sizes {rsz} ({shapes})")
  batch = tuple(lhs_shape[d] for d in lb)
  lfree = tuple(lhs_shape[d] for d in _free_dims(len(lhs_shape), lc, lb))
  rfree = tuple(rhs_shape[d] for d in _free_dims(len(rhs_shape), rc, rb))
  return batch + lfree + rfree


_type_ranks: dict = {}


def _type_rank(dtype):
  """XLA's order of element types for mixed-dtype dots (shape_inference's HigherPrecisionType):
  complex > float (by exponent range, then mantissa) > integer (by width, signed first) > bool."""
  dtype = np.dtype(dtype)
  rank = _type_ranks.get(dtype)
  if rank is None:
    rank = _type_ranks[dtype] = _compute_type_rank(dtype)
  return rank


def _compute_type_rank(dtype):
  real = dtypes.finfo(dtype).dtype if dtypes.is_complex(dtype) else dtype
  floating = dtypes.is_float(real)
  width = 1 if dtypes.is_bool(real) else 8 * real.itemsize
  return (dtypes.is_complex(dtype),
          dtypes.finfo(real).maxexp if floating else -1,
          dtypes.finfo(real).nmant if floating else -1,
          width, not dtypes.is_unsigned_integer(real))


def _dot_general_result_dtype(lhs_dtype, rhs_dtype, preferred_element_type, algorithm=False):
  """The result dtype, as jax.lax.dot_general: the higher of the operand types (they may
  differ), or `preferred_element_type`, which must not narrow a bool/integer result."""
  lrank, rrank = _type_rank(lhs_dtype), _type_rank(rhs_dtype)
  if lrank == rrank and lhs_dtype != rhs_dtype:
    raise TypeError(f"dot_general argument type error: {np.dtype(lhs_dtype).name}, "
                    f"{np.dtype(rhs_dtype).name}")
  result = np.dtype(lhs_dtype if lrank >= rrank else rhs_dtype)
  if preferred_element_type is None or preferred_element_type == result:
    return result
  pref = np.dtype(preferred_element_type)
  if not algorithm and not dtypes.is_float(result) and _type_rank(pref)[3] < _type_rank(result)[3]:
    raise TypeError(f"dot_general preferred_element_type must not be narrower than the original "
                    f"type, got preferred_element_type of {pref.name} for result type of "
                    f"{result.name}")
  return pref


_shapes: dict = {}  # (lhs shape, rhs shape, dimension numbers) -> result shape (checked)


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision, preferred_element_type,
                               out_sharding=None):
  key = (lhs.shape, rhs.shape, dimension_numbers)
  try:
    shape = _shapes.get(key)
  except TypeError:  # unhashable dimension numbers: checked below, never cached
    key = shape = None
  if shape is None:
    shape = _dot_general_shape(lhs.shape, rhs.shape, dimension_numbers)
    if key is not None and len(_shapes) < 4096:
      _shapes[key] = shape
  dtype = _dot_general_result_dtype(lhs.dtype, rhs.dtype, preferred_element_type,
                                    dot_algorithms.is_algorithm(precision))
  weak = lhs.weak_type and rhs.weak_type  # as JAX: preferred_element_type does not strengthen it
  return ShapedArray(shape, dtype, weak)


def _einsum_subscripts(lhs_ndim, rhs_ndim, dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
  lsub = [None] * lhs_ndim
  rsub = [None] * rhs_ndim
  for l, r in zip(lb + lc, rb + rc, strict=True):
    lsub[l] = rsub[r] = next(letters)
  for subs in (lsub, rsub):
    for i, s in enumerate(subs):
      if s is None:
        subs[i] = next(letters)
  out = [lsub[d] for d in lb] + [lsub[d] for d in _free_dims(lhs_ndim, lc, lb)] + \
      [rsub[d] for d in _free_dims(rhs_ndim, rc, rb)]
  return f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}"


def _dot_general_numpy(lhs, rhs, *, dimension_numbers, precision, preferred_element_type,
                       out_sharding=None):
  spec = _einsum_subscripts(lhs.ndim, rhs.ndim, dimension_numbers)
  algorithm = dot_algorithms.is_algorithm(precision)
  out_dtype = _dot_general_result_dtype(lhs.dtype, rhs.dtype, preferred_element_type, algorithm)
  if algorithm:
    dot_algorithms.check_supported(precision, "cpu")
    lhs_t, rhs_t, acc = dot_algorithms.compute_types(precision, lhs.dtype, rhs.dtype, out_dtype)
    if lhs_t == rhs_t:
      lhs, rhs = lhs.astype(lhs_t), rhs.astype(rhs_t)
    res = _dot_general_numpy(lhs, rhs, dimension_numbers=dimension_numbers, precision=None,
                             preferred_element_type=None if lhs_t != rhs_t else acc)
    return np.asarray(res).astype(acc).astype(out_dtype)
  if lhs.dtype != rhs.dtype:  # as the lowering: both operands in the result type first
    lhs, rhs = lhs.astype(out_dtype), rhs.astype(out_dtype)
  if dtypes.is_bool(lhs.dtype):
    acc = np.einsum(spec, lhs.astype(np.int32), rhs.astype(np.int32))
    return (acc > 0).astype(out_dtype) if dtypes.is_bool(out_dtype) else acc.astype(out_dtype)
  compute = np.promote_types(lhs.dtype, out_dtype)
  if compute in (dtypes.bfloat16, dtypes.float16) or compute in dtypes.NARROW_FLOATS:
    compute = dtypes.float32  # accumulate low-precision floats in f32, as XLA does
  elif compute in dtypes.NARROW_SIGNED or compute in dtypes.NARROW_UNSIGNED:
    compute = dtypes.int32  # (NumPy's einsum has no int4 loop; the result wraps as XLA's)
  res = np.einsum(spec, lhs.astype(compute), rhs.astype(compute))
  return np.asarray(res).astype(out_dtype)


def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type,
                       out_sharding=None):
  """A native `stablehlo.dot_general`; operands of different dtypes are converted to the result
  dtype first (as JAX does on CPU and GPU)."""
  (lc, rc), (lb, rb) = dimension_numbers
  lhs_aval, rhs_aval = ctx.avals_in
  out_aval = acc_aval = ctx.avals_out[0]
  algorithm = None
  if precision is None:
    precision = dot_algorithms.config_precision()
  if dot_algorithms.is_algorithm(precision):
    dot_algorithms.check_supported(precision, ctx.platform)
    lhs_t, rhs_t, acc = dot_algorithms.compute_types(precision, lhs_aval.dtype, rhs_aval.dtype,
                                                     out_aval.dtype)
    if lhs_t != lhs_aval.dtype:
      lhs_aval = ShapedArray(lhs_aval.shape, lhs_t)
      lhs = ctx.op1("stablehlo.convert", [lhs], lhs_aval)
    if rhs_t != rhs_aval.dtype:
      rhs_aval = ShapedArray(rhs_aval.shape, rhs_t)
      rhs = ctx.op1("stablehlo.convert", [rhs], rhs_aval)
    acc_aval = ShapedArray(out_aval.shape, acc)
    if precision != dot_algorithms.DotAlgorithmPreset.DEFAULT:
      algorithm = dot_algorithms.algorithm_attr(precision, lhs_t, rhs_t)
    precision = ("DEFAULT", "DEFAULT")
  if lhs_aval.dtype != rhs_aval.dtype:
    lhs = ctx.op1("stablehlo.convert", [lhs], ShapedArray(lhs_aval.shape, acc_aval.dtype))
    rhs = ctx.op1("stablehlo.convert", [rhs], ShapedArray(rhs_aval.shape, acc_aval.dtype))
  dn = (f"#stablehlo.dot<lhs_batching_dimensions = [{', '.join(map(str, lb))}], "
        f"rhs_batching_dimensions = [{', '.join(map(str, rb))}], "
        f"lhs_contracting_dimensions = [{', '.join(map(str, lc))}], "
        f"rhs_contracting_dimensions = [{', '.join(map(str, rc))}]>")
  props = {"dot_dimension_numbers": dn}
  if precision is not None:
    props["precision_config"] = ("[" + ", ".join(f"#stablehlo<precision {p}>" for p in precision)
                                 + "]")
  if algorithm is not None:
    props["algorithm"] = algorithm
  out = ctx.op1("stablehlo.dot_general", [lhs, rhs], acc_aval, props=props)
  if acc_aval.dtype != out_aval.dtype:
    out = ctx.op1("stablehlo.convert", [out], out_aval)
  return out


def _dot_general_sum_of_products(lhs, rhs, *, dimension_numbers, precision,
                                 preferred_element_type, out_sharding=None):
  """dot_general without a dot: both operands are laid out as (batch, lhs free, rhs free,
  contracting), multiplied (`and` for bool) and summed (`or` for bool) over the contracting
  dims, all in the result dtype. A revax function: `lower_fun` makes it a lowering rule."""
  del precision, out_sharding  # (the result is typed by the equation it lowers)
  (lc, rc), (lb, rb) = dimension_numbers
  lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
  out_dtype = _dot_general_result_dtype(lhs_aval.dtype, rhs_aval.dtype, preferred_element_type)
  lfree = _free_dims(lhs_aval.ndim, lc, lb)
  rfree = _free_dims(rhs_aval.ndim, rc, rb)
  nb, nlf, nrf, nc = len(lb), len(lfree), len(rfree), len(lc)
  shape = tuple(lhs_aval.shape[d] for d in lb + lfree) + \
      tuple(rhs_aval.shape[d] for d in rfree + rc)
  lhs = _transpose_if_needed(convert_element_type(lhs, out_dtype), lb + lfree + lc)
  rhs = _transpose_if_needed(convert_element_type(rhs, out_dtype), rb + rfree + rc)
  lhs = broadcast_in_dim(lhs, shape, tuple(range(nb + nlf)) + tuple(range(nb + nlf + nrf,
                                                                            len(shape))))
  rhs = broadcast_in_dim(rhs, shape, tuple(range(nb)) + tuple(range(nb + nlf, len(shape))))
  contracting = tuple(range(nb + nlf + nrf, nb + nlf + nrf + nc))
  if dtypes.is_bool(out_dtype):
    prods = bitwise_and(lhs, rhs)
    return reduce_or(prods, contracting) if contracting else prods
  prods = mul(lhs, rhs)
  return reduce_sum(prods, contracting) if contracting else prods


_dot_general_sum_of_products_lower = mlir.lower_fun(_dot_general_sum_of_products,
                                                    multiple_results=False)


def _dot_general_lower_without_integer_dots(ctx, lhs, rhs, **params):
  """For backends without bool/integer dots: such dots become sums of products; an integer
  operand of a floating-point dot is converted first; other dots stay native."""
  out_dtype = ctx.avals_out[0].dtype
  if dtypes.is_bool(out_dtype) or dtypes.is_integer(out_dtype):
    return _dot_general_sum_of_products_lower(ctx, lhs, rhs, **params)
  converted = []
  for x, aval in zip((lhs, rhs), ctx.avals_in, strict=True):
    if aval.dtype != out_dtype and not dtypes.is_inexact(aval.dtype):
      x = ctx.op1("stablehlo.convert", [x], ShapedArray(aval.shape, out_dtype))
      aval = ShapedArray(aval.shape, out_dtype)
    converted.append((x, aval))
  ctx_native = mlir.LoweringRuleContext(ctx.fb, [a for _, a in converted], ctx.avals_out,
                                        ctx.platform)
  return _dot_general_lower(ctx_native, *(x for x, _ in converted), **params)


def lower_integer_dots_as_sums(platform: str) -> None:
  """Lower bool and integer `dot_general`s on `platform` as sums of products (`and`/`or` for
  bool) instead of native dots, for a backend that has none; float dots stay native. XLA:CPU
  has native integer dots, so revax selects this for no platform by default. Calling it again
  for the same platform does nothing.

  Args:
    platform: a platform name as `mlir.lower_jaxpr_to_module(..., platform=...)` takes it.

  Example:
    >>> lax.lower_integer_dots_as_sums("my_backend")  # a platform with no integer dots
  """
  table = mlir.platform_lowerings.get(platform)
  if table is not None and table.get(dot_general_p) is _dot_general_lower_without_integer_dots:
    return
  mlir.register_lowering(dot_general_p, _dot_general_lower_without_integer_dots, platform=platform)


def _transpose_if_needed(x, permutation):
  return x if tuple(permutation) == tuple(range(len(permutation))) else transpose(x, permutation)


def _ranges_like(*xs):
  start = 0
  for x in xs:
    yield tuple(range(start, start + len(x)))
    start += len(x)


def _free_dims(ndim, contracting, batch):
  return tuple(i for i in range(ndim) if i not in contracting and i not in batch)


def _dot_general_transpose_lhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding=None, swap_ans=False):
  """Cotangent of lhs: contract ct's rhs-free dims with y's free dims, batch with y's batch,
  then permute the result into lhs's layout (valid for any batch/contracting positions). The
  dot keeps the primal's precision and preferred_element_type; its result is cast to x's dtype."""
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_aval = x.aval
  y_ndim = get_aval(y).ndim
  x_kept = _free_dims(x_aval.ndim, x_contract, x_batch)
  y_kept = _free_dims(y_ndim, y_contract, y_batch)
  if swap_ans:
    ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
  else:
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
  dims = ((ans_y, y_kept), (ans_batch, y_batch))
  # the result has dims [batch, x_kept, y_contract ordered as y's contracting dims sorted]
  order = np.argsort(y_contract)
  x_contract_sorted_by_y = [x_contract[i] for i in order]
  out_axes = tuple(int(i) for i in np.argsort(list(x_batch) + list(x_kept) + x_contract_sorted_by_y))
  # the dot's result is x's dims in the order `order_in_x`; typed as x is (JAX's rule: a
  # cotangent takes its primal's type, so the dot never asks for an out_sharding)
  order_in_x = list(x_batch) + list(x_kept) + x_contract_sorted_by_y
  want = x_aval.update(shape=tuple(x_aval.shape[d] for d in order_in_x), sharding=None)
  if x_aval.sharding is not None:
    parts = sharding_types.spec_parts(x_aval)
    want = sharding_types.typed(want, x_aval.sharding.mesh, [parts[d] for d in order_in_x])
  res = dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                           preferred_element_type=preferred_element_type,
                           **sharding_constraint.wanted_type(want, (get_aval(ct), get_aval(y))))
  res = _transpose_if_needed(res, out_axes)
  if get_aval(res).dtype != x_aval.dtype:
    res = convert_element_type(res, x_aval.dtype, x_aval.weak_type)
  return sharding_constraint.like_type(res, x_aval)  # split as its primal (JAX's rule)


def _dot_general_transpose_rhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding=None):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  return _dot_general_transpose_lhs(ct, y, x, dimension_numbers=swapped, precision=precision,
                                    preferred_element_type=preferred_element_type, swap_ans=True)


def _shift(dims, bdim):
  """Operand dims after inserting a batch dim at `bdim`."""
  return tuple(d + 1 if d >= bdim else d for d in dims)


def _dot_general_batch(vals, bdims, *, dimension_numbers, precision, preferred_element_type,
                       out_sharding=None):
  """Transpose-free batching: both operands mapped -> the mapped axes are a new leading batch
  dimension of the dot (output dim 0); one mapped -> its mapped axis is a free dimension of
  that operand, and its place among the output's free dims is where the vmapped axis lands."""
  lhs, rhs = vals
  lbd, rbd = bdims
  (lc, rc), (lb, rb) = dimension_numbers
  if lbd is not None and rbd is not None:
    dims = ((_shift(lc, lbd), _shift(rc, rbd)), ((lbd,) + _shift(lb, lbd), (rbd,) + _shift(rb, rbd)))
    out_bdim = 0
  elif lbd is not None:
    dims = ((_shift(lc, lbd), rc), (_shift(lb, lbd), rb))
    free = _free_dims(get_aval(lhs).ndim, dims[0][0], dims[1][0])
    out_bdim = len(lb) + free.index(lbd)
  else:
    dims = ((lc, _shift(rc, rbd)), (lb, _shift(rb, rbd)))
    n_lhs_free = get_aval(lhs).ndim - len(lc) - len(lb)
    free = _free_dims(get_aval(rhs).ndim, dims[0][1], dims[1][1])
    out_bdim = len(lb) + n_lhs_free + free.index(rbd)
  extra = {}
  if out_sharding is not None:  # the asked-for type, the batch dimension split as the
    # operands' (JAX: the vmap's explicit mesh axis)
    rank = get_aval(lhs).ndim + get_aval(rhs).ndim - 2 * len(dims[0][0]) - len(dims[1][0]) - 1
    parts = list(out_sharding.spec.partitions) + [None] * (rank - len(out_sharding.spec))
    mapped, bd = (lhs, lbd) if lbd is not None else (rhs, rbd)
    parts.insert(out_bdim, sharding_types.spec_parts(get_aval(mapped))[bd])
    extra = {"out_sharding": sharding_types.make_sharding(
        out_sharding.mesh, parts, out_sharding.spec.unreduced, out_sharding.spec.reduced)}
  out = dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=precision,
                           preferred_element_type=preferred_element_type, **extra)
  return out, out_bdim


dot_general_p = Primitive("dot_general")
dot_general_p.def_abstract_eval(_dot_general_abstract_eval)


def _dot_general_printed(params: dict) -> dict:
  """The params as JAX prints them: none of those that are None, the dimension numbers as
  lists, the output sharding left to the result's type."""
  out = {k: v for k, v in params.items() if v is not None and k != "out_sharding"}
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  out["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
  return out


pp_param_rules[dot_general_p] = _dot_general_printed
dispatch.def_numpy_impl(dot_general_p, _dot_general_numpy)
mlir.register_lowering(dot_general_p, _dot_general_lower)
ad.defbilinear(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)
batching.primitive_batchers[dot_general_p] = _dot_general_batch
inv.not_invertible(dot_general_p, "it would need a linear solve")


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
  """Vector/matrix products as jax.lax.dot: contracts lhs's last dim with rhs's first, or as
  `dimension_numbers` says (then it is `dot_general`).

  Args:
    lhs, rhs: rank-1 or rank-2 arrays (any ranks with `dimension_numbers`).
    dimension_numbers: None, or `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`
      as for `dot_general`.
    precision, preferred_element_type, out_sharding: as for `dot_general`.

  Returns:
    The vector-vector, matrix-vector or matrix-matrix product.

  Raises:
    ValueError: no `dimension_numbers`, and the operands are not rank 1 or 2 with lhs's last
      dimension the size of rhs's first.
  """
  if dimension_numbers is None:
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if not (1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]):
      raise ValueError("lax.dot: dimension_numbers must be specified when not performing simple "
                       "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                       f"lhs_shape={ls} rhs_shape={rs}")
    dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
  return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                     out_sharding=out_sharding)
