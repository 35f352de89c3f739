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
from revax._src.interpreters import dispatch, mlir

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


dot_general_p = Primitive("dot_general")
dot_general_p.def_abstract_eval(_dot_general_abstract_eval)
dispatch.def_numpy_impl(dot_general_p, _dot_general_numpy)
mlir.register_lowering(dot_general_p, _dot_general_lower)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
  """Vector/matrix products as jax.lax.dot: contracts lhs's last dim with rhs's first."""
  ln, rn = get_aval(lhs).ndim, get_aval(rhs).ndim
  if ln not in (1, 2) or rn not in (1, 2):
    raise TypeError(f"lax.dot takes rank-1 or rank-2 operands, got ranks {ln} and {rn}; use "
                    "dot_general for higher ranks")
  return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision, preferred_element_type)
