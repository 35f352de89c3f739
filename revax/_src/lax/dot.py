"""dot_general: contractions with batch and contracting dimensions in any positions.

XLA's DotGeneral lets batch dimensions sit anywhere in either operand; so does revax's. The
output holds the batch dimensions (in lhs_batch order), then lhs's free dimensions, then rhs's,
each in order. `dot` and `matmul`-style helpers are wrappers over it.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.shapes import transpose

__all__ = [
  "dot_general",
  "dot",
  "Precision",
  "dot_general_p",
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


def _one_precision(p):
  name = getattr(p, "name", p)
  if name not in Precision._MLIR:
    raise ValueError(f"unknown precision {p!r}; expected one of DEFAULT, HIGH, HIGHEST")
  return Precision._MLIR[name]


# --- dot_general ---------------------------------------------------------------------------------
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
  """General tensor contraction.

  Args:
    lhs, rhs: arrays of one dtype.
    dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`, sequences
      of dimension indices; batch and contracting dimensions may be in any positions.
    precision: None, a `Precision`, or a pair of them.
    preferred_element_type: the accumulation/result dtype (e.g. float32 for bf16 inputs).

  Returns:
    An array of shape batch + lhs free + rhs free.

  Example:
    >>> dot_general(x, y, (((1,), (0,)), ((), ())))  # matrix product
  """
  (lc, rc), (lb, rb) = dimension_numbers
  dims = ((_dims_tuple(lc), _dims_tuple(rc)), (_dims_tuple(lb), _dims_tuple(rb)))
  pref = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dims,
                            precision=_canonicalize_precision(precision),
                            preferred_element_type=pref)


def _dims_tuple(ds):
  if isinstance(ds, (int, np.integer)):
    return (int(ds),)
  return tuple(int(d) for d in ds)


def _check_dims(name, side, dims, ndim, shape):
  for d in dims:
    if not 0 <= d < ndim:
      raise TypeError(f"dot_general requires {name} dimensions to be in range for {side} of rank "
                      f"{ndim} (shape {shape}), got {name} dimensions {dims}")
  if len(set(dims)) != len(dims):
    raise TypeError(f"dot_general requires {side} {name} dimensions to be distinct, got {dims}")


def _dot_general_shape(lhs_shape, rhs_shape, dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  ln, rn = len(lhs_shape), len(rhs_shape)
  if len(lb) != len(rb):
    raise TypeError(f"dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, "
                    f"got lhs_batch {lb} and rhs_batch {rb}")
  if len(lc) != len(rc):
    raise TypeError(f"dot_general requires equal numbers of lhs and rhs contracting dimensions, "
                    f"got lhs_contracting {lc} and rhs_contracting {rc}")
  _check_dims("batch", "lhs", lb, ln, lhs_shape)
  _check_dims("batch", "rhs", rb, rn, rhs_shape)
  _check_dims("contracting", "lhs", lc, ln, lhs_shape)
  _check_dims("contracting", "rhs", rc, rn, rhs_shape)
  for side, b, c in (("lhs", lb, lc), ("rhs", rb, rc)):
    both = set(b) & set(c)
    if both:
      raise TypeError(f"dot_general requires {side} batch dimensions and contracting dimensions "
                      f"to be distinct, got {side}_batch {b} and {side}_contracting {c}")
  for kind, ls, rs in (("batch", lb, rb), ("contracting", lc, rc)):
    lsz = tuple(lhs_shape[d] for d in ls)
    rsz = tuple(rhs_shape[d] for d in rs)
    if lsz != rsz:
      raise TypeError(f"dot_general requires lhs {kind} dimension sizes to equal rhs {kind} "
                      f"dimension sizes, got lhs {kind} dims {ls} of sizes {lsz} and rhs {kind} "
                      f"dims {rs} of sizes {rsz} (lhs shape {lhs_shape}, rhs shape {rhs_shape})")
  batch = tuple(lhs_shape[d] for d in lb)
  lfree = tuple(s for i, s in enumerate(lhs_shape) if i not in lb and i not in lc)
  rfree = tuple(s for i, s in enumerate(rhs_shape) if i not in rb and i not in rc)
  return batch + lfree + rfree


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
  if lhs.dtype != rhs.dtype:
    raise TypeError(f"dot_general requires operands of the same dtype, got {lhs.dtype.name} and "
                    f"{rhs.dtype.name}")
  shape = _dot_general_shape(lhs.shape, rhs.shape, dimension_numbers)
  dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
  if preferred_element_type is not None and dtypes.is_bool(lhs.dtype) != dtypes.is_bool(dtype) \
      and not dtypes.is_bool(lhs.dtype):
    raise TypeError(f"dot_general preferred_element_type {np.dtype(dtype).name} is not valid for "
                    f"{lhs.dtype.name} operands")
  return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type and preferred_element_type is None)


def _dot_general_numpy(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
  (lc, rc), (lb, rb) = dimension_numbers
  letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
  lsub = [None] * lhs.ndim
  rsub = [None] * rhs.ndim
  for l, r in zip(lb + lc, rb + rc):
    lsub[l] = rsub[r] = next(letters)
  for subs in (lsub, rsub):
    for i, s in enumerate(subs):
      if s is None:
        subs[i] = next(letters)
  out = [lsub[d] for d in lb] + [s for i, s in enumerate(lsub) if i not in lb and i not in lc] + \
      [s for i, s in enumerate(rsub) if i not in rb and i not in rc]
  out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
  if dtypes.is_bool(lhs.dtype):
    acc = np.einsum(f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}", lhs.astype(np.int32),
                    rhs.astype(np.int32))
    return (acc > 0).astype(out_dtype) if dtypes.is_bool(out_dtype) else acc.astype(out_dtype)
  compute = np.promote_types(lhs.dtype, out_dtype)
  if compute in (dtypes.bfloat16, dtypes.float16):
    compute = dtypes.float32  # accumulate low-precision floats in f32, as XLA does
  res = np.einsum(f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}", lhs.astype(compute),
                  rhs.astype(compute))
  return np.asarray(res).astype(out_dtype)


def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
  (lc, rc), (lb, rb) = dimension_numbers
  dn = (f"#stablehlo.dot<lhs_batching_dimensions = [{', '.join(map(str, lb))}], "
        f"rhs_batching_dimensions = [{', '.join(map(str, rb))}], "
        f"lhs_contracting_dimensions = [{', '.join(map(str, lc))}], "
        f"rhs_contracting_dimensions = [{', '.join(map(str, rc))}]>")
  props = {"dot_dimension_numbers": dn}
  if precision is not None:
    props["precision_config"] = ("[" + ", ".join(f"#stablehlo<precision {p}>" for p in precision)
                                 + "]")
  return ctx.op1("stablehlo.dot_general", [lhs, rhs], props=props)


def _ranges_like(*xs):
  start = 0
  for x in xs:
    yield tuple(range(start, start + len(x)))
    start += len(x)


def _free_dims(ndim, contracting, batch):
  return tuple(i for i in range(ndim) if i not in contracting and i not in batch)


def _dot_general_transpose_lhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, swap_ans=False):
  """Cotangent of lhs: contract ct's rhs-free dims with y's free dims, batch with y's batch,
  then permute the result into lhs's layout (valid for any batch/contracting positions)."""
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
  if get_aval(ct).dtype != get_aval(y).dtype:
    ct = convert_element_type(ct, get_aval(y).dtype)
  res = dot_general(ct, y, dims, precision=precision)
  res = transpose(res, out_axes) if out_axes != tuple(range(len(out_axes))) else res
  if get_aval(res).dtype != x_aval.dtype:
    res = convert_element_type(res, x_aval.dtype)
  return res


def _dot_general_transpose_rhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  return _dot_general_transpose_lhs(ct, y, x, dimension_numbers=swapped, precision=precision,
                                    preferred_element_type=preferred_element_type, swap_ans=True)


def _shift(dims, bdim):
  """Operand dims after inserting a batch dim at `bdim`."""
  return tuple(d + 1 if d >= bdim else d for d in dims)


def _dot_general_batch(vals, bdims, *, dimension_numbers, precision, preferred_element_type):
  """Transpose-free batching: both operands mapped -> a new leading batch dimension of the dot;
  one mapped -> its mapped axis is a free dimension, and we compute where it lands."""
  lhs, rhs = vals
  lbd, rbd = bdims
  (lc, rc), (lb, rb) = dimension_numbers
  if lbd is not None and rbd is not None:
    dims = ((_shift(lc, lbd), _shift(rc, rbd)), ((lbd,) + _shift(lb, lbd), (rbd,) + _shift(rb, rbd)))
    out_bdim = 0
  elif lbd is not None:
    dims = ((_shift(lc, lbd), rc), (_shift(lb, lbd), rb))
    lhs_ndim = get_aval(lhs).ndim
    free = _free_dims(lhs_ndim, dims[0][0], dims[1][0])
    out_bdim = len(lb) + free.index(lbd)
  else:
    dims = ((lc, _shift(rc, rbd)), (lb, _shift(rb, rbd)))
    lhs_ndim = get_aval(lhs).ndim
    rhs_ndim = get_aval(rhs).ndim
    n_lhs_free = lhs_ndim - len(lc) - len(lb)
    free = _free_dims(rhs_ndim, dims[0][1], dims[1][1])
    out_bdim = len(lb) + n_lhs_free + free.index(rbd)
  out = dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=precision,
                           preferred_element_type=preferred_element_type)
  return out, out_bdim


dot_general_p = Primitive("dot_general")
dot_general_p.def_abstract_eval(_dot_general_abstract_eval)
dispatch.def_numpy_impl(dot_general_p, _dot_general_numpy)
mlir.register_lowering(dot_general_p, _dot_general_lower)
ad.defbilinear(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)
batching.primitive_batchers[dot_general_p] = _dot_general_batch


def dot(lhs, rhs, precision=None, preferred_element_type=None):
  """Vector/matrix products as jax.lax.dot: contracts lhs's last dim with rhs's first."""
  ln, rn = get_aval(lhs).ndim, get_aval(rhs).ndim
  if ln not in (1, 2) or rn not in (1, 2):
    raise TypeError(f"lax.dot takes rank-1 or rank-2 operands, got ranks {ln} and {rn}; use "
                    "dot_general for higher ranks")
  return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision, preferred_element_type)
