"""Comparison and selection primitives: eq, ne, lt, le, gt, ge, select_n, clamp.

Comparisons take operands of one dtype (a Python scalar adopts the other operand's dtype), broadcast
NumPy-style and return bool. They lower to `stablehlo.compare` with the comparison type of the
dtype: FLOAT for floating and complex values (an ordered comparison: every comparison with a NaN
is false except `ne`, which is true), SIGNED for signed integers, UNSIGNED for unsigned integers
and bool. Each primitive is one block: wrapper, rules, registration.
"""
from __future__ import annotations

import numpy as np

from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax import batch_util
from revax._src.lax.binary import bitwise_and, bitwise_or
from revax._src.lax.shapes import broadcast_in_dim, reshape
from revax._src.lax.standard import (as_operand, binary_operands, broadcast_to_out,
                                     naryop_abstract_eval, operand_dtype, same_dtypes)


__all__ = [
  "eq", "ne", "lt", "le", "gt", "ge", "select_n", "clamp",
  "eq_p", "ne_p", "lt_p", "le_p", "gt_p", "ge_p", "select_n_p", "clamp_p",
  "eq_to_p", "le_to_p", "lt_to_p",
]


def compare_type(dtype) -> str:
  """The `#stablehlo<comparison_type ...>` attribute for comparing values of `dtype`."""
  if dtypes.is_inexact(dtype):
    kind = "FLOAT"
  elif dtypes.is_signed_integer(dtype):
    kind = "SIGNED"
  else:
    kind = "UNSIGNED"  # unsigned integers and bool
  return f"#stablehlo<comparison_type {kind}>"


def compare(ctx, x, y, direction: str, aval: ShapedArray, result_aval: ShapedArray | None = None,
            total_order: bool = False):
  """Emit `stablehlo.compare` of `x` and `y` (both of `aval`'s dtype) in `direction` (EQ, LT, ...);
  with `total_order`, floats compare in XLA's total order (TOTALORDER)."""
  result_aval = aval.update(dtype=dtypes.bool_, weak_type=False) if result_aval is None \
      else result_aval
  kind = compare_type(aval.dtype)
  if total_order and dtypes.is_inexact(aval.dtype):
    kind = "#stablehlo<comparison_type TOTALORDER>"
  return ctx.op1("stablehlo.compare", [x, y], result_aval,
                 props={"comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                        "compare_type": kind})


def broadcasting_batcher(prim: Primitive):
  """Batching for an elementwise primitive whose operands broadcast NumPy-style.

  The output's batch dim goes where the highest-rank mapped operand already has it. Unmapped
  operands stay as they are when they only cover dimensions after the batch dim; otherwise they
  get a size-1 dim there (a reshape). Other mapped operands move their batch dim into line.
  """
  def rule(vals, dims, **params):
    ranks = [get_aval(v).ndim - (d is not None) for v, d in zip(vals, dims, strict=True)]
    rank = max(ranks)
    lead = max((i for i, d in enumerate(dims) if d is not None), key=lambda i: ranks[i])
    out_dim = dims[lead] + rank - ranks[lead]
    args = [_align_batch_dim(v, d, r, rank, out_dim) for v, d, r in zip(vals, dims, ranks)]
    return prim.bind(*args, **params), out_dim
  return rule


def _align_batch_dim(x, dim, x_rank: int, rank: int, out_dim: int):
  """`x` (per-example rank `x_rank`) arranged to broadcast against a rank-`rank` result batched
  at `out_dim`; `dim` is x's batch dim or None."""
  at = out_dim - (rank - x_rank)  # where the batch dim falls among x's trailing-aligned dims
  if dim is None:
    return batch_util.insert_unit_dim(x, at) if at > 0 else x
  if at >= 0:
    return batch_util.moveaxis(x, dim, at)
  x = batch_util.moveaxis(x, dim, 0)
  shape = get_aval(x).shape
  return reshape(x, shape[:1] + (1,) * -at + shape[1:])


def _comparison(name: str, direction: str, numpy_fn, ordered: bool,
                total_order: bool = False) -> Primitive:
  """A comparison primitive; `ordered` ones (lt, le, gt, ge) reject complex operands;
  `total_order` ones compare floats in XLA's total order (-NaN < -inf < ... < -0 < +0 < ... <
  inf < NaN, NaNs by payload)."""
  kind = "any"
  base_rule = naryop_abstract_eval(name, (kind, kind), result_dtype=lambda d: dtypes.bool_)

  def abstract_eval(x, y):
    if total_order and any(dtypes.is_complex(a.dtype) for a in (x, y)):
      # (jax accepts them here; XLA's verifier then refuses TOTALORDER on complex values)
      raise TypeError(f"{name} does not accept complex operands: XLA's total order compares "
                      f"real numbers only")
    if ordered:
      for i, a in enumerate((x, y)):
        if dtypes.is_complex(a.dtype):
          raise TypeError(f"{name} does not accept dtype {a.dtype.name} at position {i}; it "
                          f"takes integer, floating-point or bool arguments")
    return base_rule(x, y)

  def lower(ctx, x, y):
    x, y = broadcast_to_out(ctx, (x, y))
    aval = ctx.avals_in[0].update(shape=ctx.avals_out[0].shape)
    return compare(ctx, x, y, direction, aval, ctx.avals_out[0], total_order)

  def numpy_impl(x, y):
    if total_order:
      return _total_order_compare(numpy_fn, x, y)
    with np.errstate(invalid="ignore"):  # NaN operands: ordered comparisons are simply false
      return numpy_fn(x, y)

  prim = Primitive(name)
  prim.def_abstract_eval(abstract_eval)
  dispatch.def_numpy_impl(prim, numpy_impl)
  mlir.register_lowering(prim, lower)
  ad.zero_output_jvp(prim, "bool output: a comparison is piecewise constant")
  inv.not_invertible(prim, "many-to-one: a bool of each pair")
  batching.primitive_batchers[prim] = broadcasting_batcher(prim)
  return prim


# --- eq ------------------------------------------------------------------------------------------
def eq(x, y):
  """Elementwise x == y, as a bool array. NaN compares unequal to everything."""
  return eq_p.bind(*binary_operands(x, y))


eq_p = _comparison("eq", "EQ", np.equal, ordered=False)


# --- ne ------------------------------------------------------------------------------------------
def ne(x, y):
  """Elementwise x != y, as a bool array. True where either operand is NaN."""
  return ne_p.bind(*binary_operands(x, y))


ne_p = _comparison("ne", "NE", np.not_equal, ordered=False)


# --- lt ------------------------------------------------------------------------------------------
def lt(x, y):
  """Elementwise x < y, as a bool array (not defined for complex values)."""
  return lt_p.bind(*binary_operands(x, y))


lt_p = _comparison("lt", "LT", np.less, ordered=True)


# --- le ------------------------------------------------------------------------------------------
def le(x, y):
  """Elementwise x <= y, as a bool array (not defined for complex values)."""
  return le_p.bind(*binary_operands(x, y))


le_p = _comparison("le", "LE", np.less_equal, ordered=True)


# --- gt ------------------------------------------------------------------------------------------
def gt(x, y):
  """Elementwise x > y, as a bool array (not defined for complex values)."""
  return gt_p.bind(*binary_operands(x, y))


gt_p = _comparison("gt", "GT", np.greater, ordered=True)


# --- ge ------------------------------------------------------------------------------------------
def ge(x, y):
  """Elementwise x >= y, as a bool array (not defined for complex values)."""
  return ge_p.bind(*binary_operands(x, y))


ge_p = _comparison("ge", "GE", np.greater_equal, ordered=True)


# --- eq_to, le_to, lt_to: comparisons in XLA's total order ---------------------------------------
def _total_order_key(x: np.ndarray) -> np.ndarray:
  """Signed integers ordered as XLA's TOTALORDER orders the floats `x`: the bit pattern, with
  the magnitude bits of negative values flipped (so -0 < +0, and NaNs sort by sign and payload
  beyond the infinities)."""
  bits = x.view(np.dtype(f"int{x.dtype.itemsize * 8}")).astype(np.int64)
  magnitude = np.int64((1 << (x.dtype.itemsize * 8 - 1)) - 1)
  return np.where(bits < 0, bits ^ magnitude, bits)


def _total_order_compare(numpy_fn, x, y):
  x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
  if not dtypes.is_inexact(x.dtype):
    return numpy_fn(x, y)
  return numpy_fn(_total_order_key(np.ascontiguousarray(x)),
                  _total_order_key(np.ascontiguousarray(y)))


eq_to_p = _comparison("eq_to", "EQ", np.equal, ordered=False, total_order=True)
le_to_p = _comparison("le_to", "LE", np.less_equal, ordered=True, total_order=True)
lt_to_p = _comparison("lt_to", "LT", np.less, ordered=True, total_order=True)


# --- select_n ------------------------------------------------------------------------------------
@tree_util.accepts_array_leaves("rest")
def select_n(which, *cases):
  """Elementwise choice among `cases` by the index `which`.

  Args:
    which: a bool or integer scalar, or an array of the cases' shape. A bool `which` picks
      `cases[1]` where true and `cases[0]` where false (it allows exactly two cases); an integer
      `which` picks `cases[which]` (indices out of range are clamped to the first/last case).
    *cases: one or more arrays of one shape and dtype.

  Returns:
    An array of the cases' shape and dtype.

  Example:
    >>> x = jnp.array([-2., 3.])
    >>> lax.select_n(x > 0, -x, x)  # case 0 where False, case 1 where True: abs(x)
    Array([2., 3.], dtype=float32)
  """
  if not cases:
    raise ValueError("select_n() must have at least one case")
  like = next((d for d in map(operand_dtype, cases) if d is not None), None)
  cases = tuple(as_operand(c, like) for c in cases)
  return select_n_p.bind(which, *cases)


def _select_n_abstract_eval(which, *cases):
  if not cases:
    raise ValueError("select_n() must have at least one case")
  if not (dtypes.is_bool(which.dtype) or dtypes.is_integer(which.dtype)):
    raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype.name}.")
  if dtypes.is_bool(which.dtype) and len(cases) > 2:
    raise TypeError(f"select with boolean `which` cannot have > 2 cases, got {len(cases)} cases.")
  if any(c.shape != cases[0].shape for c in cases):
    raise TypeError(f"select cases must have the same shapes, got "
                    f"[{', '.join(str(c.shape) for c in cases)}].")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError(f"select `which` must be scalar or have the same shape as cases, got `which` "
                    f"shape {which.shape} but case shape {cases[0].shape}.")
  dtype = same_dtypes("select_n", cases)
  return ShapedArray(cases[0].shape, dtype, all(c.weak_type for c in cases))


def _select_n_numpy(which, *cases):
  last = len(cases) - 1
  if dtypes.is_bool(which.dtype):
    return np.where(which, cases[last], cases[0])
  index = np.minimum(which, last) if dtypes.is_unsigned_integer(which.dtype) \
      else np.clip(which, 0, last)
  if not index.shape:
    return cases[int(index)]
  out = cases[last]
  for i in range(last - 1, -1, -1):
    out = np.where(index == i, cases[i], out)
  return out


def _select_n_lower(ctx, which, *cases):
  which_aval = ctx.avals_in[0]

  def tree(lo, hi):  # select among cases[lo:hi]
    if hi - lo == 1:
      return cases[lo]
    mid = (lo + hi) // 2
    if dtypes.is_bool(which_aval.dtype):
      pred, on_true, on_false = which, tree(mid, hi), tree(lo, mid)
    else:
      bound = ctx.constant(np.full(which_aval.shape, mid), which_aval)
      pred = compare(ctx, which, bound, "LT", which_aval)
      on_true, on_false = tree(lo, mid), tree(mid, hi)
    return ctx.op1("stablehlo.select", [pred, on_true, on_false])

  return tree(0, len(cases))


def _select_n_jvp(primals, tangents):
  which, *cases = primals
  out = select_n_p.bind(which, *cases)
  case_tangents = tangents[1:]
  if all(type(t) is ad.Zero for t in case_tangents):
    return out, ad.Zero(ad.tangent_aval(get_aval(out)))
  return out, select_n_p.bind(which, *map(ad.instantiate_zeros, case_tangents))


def _select_n_transpose(ct, which, *cases):
  if ad.is_undefined_primal(which):
    raise ValueError("select_n is not linear in its `which` argument")
  undefined = [ad.is_undefined_primal(c) for c in cases]
  if type(ct) is ad.Zero:
    return [None] + [ad.Zero(c.aval) if u else None for c, u in zip(cases, undefined)]
  zeros = ad.instantiate_zeros(ad.Zero(get_aval(ct)))
  return [None] + [select_n_p.bind(which, *(ct if j == i else zeros for j in range(len(cases))))
                   if u else None for i, u in enumerate(undefined)]


def _select_n_batch(vals, dims):
  (which, *cases), (which_dim, *case_dims) = vals, dims
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  out_dim = next((d for d in case_dims if d is not None), which_dim)
  cases = [batch_util.bdim_at(c, d, out_dim, size) for c, d in zip(cases, case_dims)]
  which_aval = get_aval(which)
  if which_dim is None:
    if which_aval.ndim:  # an array `which` must have the cases' (batched) shape
      which = batch_util.broadcast_batched(which, size, out_dim)
  elif which_aval.ndim == 1 and get_aval(cases[0]).ndim > 1:  # a scalar `which` per example
    which = broadcast_in_dim(which, get_aval(cases[0]).shape, (out_dim,))
  else:
    which = batch_util.moveaxis(which, which_dim, out_dim)
  return select_n_p.bind(which, *cases), out_dim


select_n_p = Primitive("select_n")
select_n_p.def_abstract_eval(_select_n_abstract_eval)
dispatch.def_numpy_impl(select_n_p, _select_n_numpy)
mlir.register_lowering(select_n_p, _select_n_lower)
ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _select_n_batch
inv.not_invertible(select_n_p, "many-to-one: the cases not selected are lost")


# --- clamp ---------------------------------------------------------------------------------------
def clamp(min, x, max):  # noqa: A002 (JAX's parameter names)
  """Elementwise `min(max(x, min), max)`.

  Args:
    min: lower bound, a scalar or an array of `x`'s shape.
    x: the array to clamp.
    max: upper bound, a scalar or an array of `x`'s shape.

  Returns:
    An array of `x`'s shape and dtype. A NaN in any operand gives NaN; complex values are
    ordered lexicographically (real part first).

  Example:
    >>> lax.clamp(0., jnp.array([-1., 0.5, 2.]), 1.)
    Array([0. , 0.5, 1. ], dtype=float32)
  """
  like = operand_dtype(x)
  return clamp_p.bind(as_operand(min, like), as_operand(x, like), as_operand(max, like))


def _clamp_abstract_eval(lo, x, hi):
  same_dtypes("clamp", (lo, x, hi))
  for name, bound in (("min", lo), ("max", hi)):
    if bound.shape and bound.shape != x.shape:
      raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == (), got "
                      f"{name}.shape={bound.shape}, operand.shape={x.shape}.")
  return ShapedArray(x.shape, x.dtype, lo.weak_type and x.weak_type and hi.weak_type)


def _clamp_numpy(lo, x, hi):
  return np.minimum(np.maximum(x, lo), hi)


def _clamp_lower(ctx, lo, x, hi):
  aval = ctx.avals_out[0]
  if dtypes.is_complex(aval.dtype):
    return _complex_clamp_lower(ctx, lo, x, hi)
  if ctx.platform == "tpu" and aval.dtype == np.bool_:
    # The TPU compiler has no clamp of booleans ("unimplemented case while compiling clamp as
    # an elementwise vector operation"): min is `and`, max is `or`, so clamp is (x | lo) & hi.
    lo, hi = _broadcast_bounds(ctx, lo, hi)
    return ctx.op1("stablehlo.and", [ctx.op1("stablehlo.or", [x, lo]), hi])
  out = ctx.op1("stablehlo.clamp", [lo, x, hi])
  if not dtypes.is_float(aval.dtype):
    return out
  # XLA:CPU's default ("fast") min/max drops NaN operands; propagate them as NumPy and JAX do.
  for v in _broadcast_bounds(ctx, lo, hi) + [x]:
    out = ctx.op1("stablehlo.select", [compare(ctx, v, v, "NE", aval), v, out])
  return out


def _broadcast_bounds(ctx, lo, hi):
  """`lo` and `hi` broadcast to the operand's shape (they may be scalars)."""
  aval = ctx.avals_out[0]
  out = []
  for v, v_aval in ((lo, ctx.avals_in[0]), (hi, ctx.avals_in[2])):
    if v_aval.shape != aval.shape:
      v = ctx.op1("stablehlo.broadcast_in_dim", [v], aval,
                  props={"broadcast_dimensions": mlir.i64_array(())})
    out.append(v)
  return out


def _complex_clamp_lower(ctx, lo, x, hi):
  """Complex values clamp in lexicographic order (real part, then imaginary part), as NumPy's
  and JAX's complex max/min order them; XLA:CPU's clamp compares real parts only."""
  aval = ctx.avals_out[0]
  part = aval.update(dtype=np.finfo(aval.dtype).dtype)
  pred = aval.update(dtype=dtypes.bool_)

  def lex(a, b, direction):  # a <direction> b lexicographically, direction LT or GT
    ar, br = (ctx.op1("stablehlo.real", [v], part) for v in (a, b))
    ai, bi = (ctx.op1("stablehlo.imag", [v], part) for v in (a, b))
    ties = compare(ctx, ar, br, "EQ", part)
    imag = ctx.op1("stablehlo.and", [ties, compare(ctx, ai, bi, direction, part)], pred)
    return ctx.op1("stablehlo.or", [compare(ctx, ar, br, direction, part), imag], pred)

  lo, hi = _broadcast_bounds(ctx, lo, hi)
  out = ctx.op1("stablehlo.select", [lex(x, lo, "LT"), lo, x])
  return ctx.op1("stablehlo.select", [lex(out, hi, "GT"), hi, out])


def _clamp_jvp(primals, tangents):
  lo, x, hi = primals
  out = clamp_p.bind(lo, x, hi)
  t_aval = ad.tangent_aval(get_aval(out))
  zeros = None
  total = ad.Zero(t_aval)
  for t, binds in zip(tangents, (_clamp_lo_binds, _clamp_x_binds, _clamp_hi_binds)):
    if type(t) is ad.Zero:
      continue
    zeros = ad.instantiate_zeros(ad.Zero(t_aval)) if zeros is None else zeros
    t = broadcast_in_dim(t, t_aval.shape, ()) if get_aval(t).shape != t_aval.shape else t
    total = ad.add_tangents(total, select_n(binds(lo, x, hi), zeros, t))
  return out, total


def _clamp_lo_binds(lo, x, hi):  # ties pass no tangent, as for max and min
  return bitwise_and(_ordered_lt(x, lo), _ordered_lt(lo, hi))


def _clamp_x_binds(lo, x, hi):
  return bitwise_and(_ordered_lt(lo, x), _ordered_lt(x, hi))


def _clamp_hi_binds(lo, x, hi):  # hi also binds where lo > hi, whatever x is
  return bitwise_or(_ordered_lt(hi, x), _ordered_lt(hi, lo))


def _ordered_lt(a, b):
  """a < b in clamp's order: lexicographic (real part, then imaginary part) for complex values."""
  if not dtypes.is_complex(get_aval(a).dtype):
    return lt(a, b)
  from revax._src.lax.unary import imag, real  # unary builds on this module
  ra, rb = real(a), real(b)
  return bitwise_or(lt(ra, rb), bitwise_and(eq(ra, rb), lt(imag(a), imag(b))))


def _clamp_batch(vals, dims):
  (lo, x, hi), (lo_dim, x_dim, hi_dim) = vals, dims
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  out_dim = next(d for d in (x_dim, lo_dim, hi_dim) if d is not None)
  x = _clamp_operand_batched(x, x_dim, size, out_dim, None)
  shape = get_aval(x).shape
  lo, hi = (_clamp_operand_batched(b, d, size, out_dim, shape) for b, d in ((lo, lo_dim),
                                                                           (hi, hi_dim)))
  return clamp_p.bind(lo, x, hi), out_dim


def _clamp_operand_batched(v, dim, size: int, out_dim: int, shape):
  """An operand of a batched clamp: unmapped scalar bounds stay scalars; everything else gets
  the operand's batched shape (`shape`, or for the operand itself its own shape)."""
  aval = get_aval(v)
  if dim is None:
    return v if shape is not None and aval.ndim == 0 else \
        batch_util.broadcast_batched(v, size, out_dim)
  if aval.ndim == 1 and shape is not None and len(shape) > 1:  # a scalar bound per example
    return broadcast_in_dim(v, shape, (out_dim,))
  return batch_util.moveaxis(v, dim, out_dim)


clamp_p = Primitive("clamp")
clamp_p.def_abstract_eval(_clamp_abstract_eval)
dispatch.def_numpy_impl(clamp_p, _clamp_numpy)
mlir.register_lowering(clamp_p, _clamp_lower)
ad.primitive_jvps[clamp_p] = _clamp_jvp
batching.primitive_batchers[clamp_p] = _clamp_batch
inv.not_invertible(clamp_p, "many-to-one: values beyond the bounds are lost")
