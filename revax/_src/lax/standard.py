"""Shared machinery for the standard elementwise primitives.

`unop` and `naryop` build the abstract evaluation, NumPy implementation and lowering of an
elementwise primitive from a dtype rule, a NumPy function and a StableHLO op name, so a family
file can declare each primitive in a few lines and keep its derivative rules beside it.

Elementwise primitives broadcast their operands NumPy-style (a batched operand next to an
unbatched one needs no materialized copy): the abstract evaluation computes the broadcast shape
and the lowering inserts `broadcast_in_dim` where an operand's shape differs.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray
from revax._src.core.trace import Primitive
from revax._src.interpreters import dispatch, mlir
from revax._src.runtime.array import Array

# dtype categories accepted by elementwise primitives, as sets for fast membership tests
_BOOL = frozenset([dtypes.bool_])
_SIGNED = frozenset([dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64])
_INT = _SIGNED | {dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64}
_FLOAT = frozenset([dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64])
_COMPLEX = frozenset([dtypes.complex64, dtypes.complex128])
DTYPE_KINDS = {"bool": _BOOL, "int": _INT, "signed": _SIGNED, "float": _FLOAT,
               "complex": _COMPLEX, "inexact": _FLOAT | _COMPLEX,
               "num": _INT | _FLOAT | _COMPLEX, "any": _BOOL | _INT | _FLOAT | _COMPLEX,
               "intbool": _INT | _BOOL, "signed_num": _SIGNED | _FLOAT | _COMPLEX,
               "float_int": _FLOAT | _INT}
_KIND_DESCRIPTIONS = {"bool": "bool", "int": "integer", "signed": "signed integer",
                      "float": "floating-point", "complex": "complex", "inexact": "floating or complex",
                      "num": "numeric (non-bool)", "any": "any", "intbool": "integer or bool",
                      "signed_num": "signed integer, floating or complex",
                      "float_int": "floating-point or integer"}


def broadcast_shapes(*shapes, op_name: str = "operation"):
  """NumPy broadcasting of `shapes`; TypeError naming all shapes if they are incompatible."""
  if len(set(shapes)) == 1:
    return shapes[0]
  ndim = max(len(s) for s in shapes)
  padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
  out = []
  for sizes in zip(*padded):
    non1 = {d for d in sizes if d != 1}
    if len(non1) > 1:
      raise TypeError(f"{op_name} got incompatible shapes for broadcasting: "
                      f"{', '.join(map(str, map(tuple, shapes)))}")
    out.append(non1.pop() if non1 else 1)
  return tuple(out)


def check_dtype(op_name: str, kind: str, dtype) -> None:
  if dtype not in DTYPE_KINDS[kind]:
    raise TypeError(f"{op_name} does not accept dtype {np.dtype(dtype).name}; it takes "
                    f"{_KIND_DESCRIPTIONS[kind]} arguments")


def same_dtypes(op_name: str, avals) -> np.dtype:
  dts = {a.dtype for a in avals}
  if len(dts) != 1:
    raise TypeError(f"{op_name} requires arguments to have the same dtypes, got "
                    f"{', '.join(a.dtype.name for a in avals)}")
  return avals[0].dtype


def unop_abstract_eval(name, kind, result_dtype=None):
  def rule(x: ShapedArray, **params):
    check_dtype(name, kind, x.dtype)
    dtype = x.dtype if result_dtype is None else result_dtype(x.dtype)
    return ShapedArray(x.shape, dtype, x.weak_type if result_dtype is None else False)
  return rule


def naryop_abstract_eval(name, kinds, result_dtype=None):
  def rule(*avals, **params):
    for kind, a in zip(kinds, avals, strict=True):
      check_dtype(name, kind, a.dtype)
    dtype = same_dtypes(name, avals)
    shape = broadcast_shapes(*(a.shape for a in avals), op_name=name)
    weak = all(a.weak_type for a in avals)
    if result_dtype is not None:
      dtype, weak = result_dtype(dtype), False
    return ShapedArray(shape, dtype, weak)
  return rule


def broadcast_to_out(ctx: mlir.LoweringRuleContext, args):
  """Broadcast each operand to the output shape with `broadcast_in_dim` where it differs."""
  out_shape = ctx.avals_out[0].shape
  res = []
  for x, aval in zip(args, ctx.avals_in, strict=True):
    if aval.shape != out_shape:
      offset = len(out_shape) - len(aval.shape)
      x = ctx.op1("stablehlo.broadcast_in_dim", [x], aval.update(shape=out_shape),
                  props={"broadcast_dimensions": mlir.i64_array(range(offset, len(out_shape)))})
    res.append(x)
  return res


def hlo_lowering(op_name: str, **props):
  """A lowering rule emitting the elementwise StableHLO op `op_name` (operands broadcast)."""
  def rule(ctx, *args, **params):
    return ctx.op1(op_name, broadcast_to_out(ctx, args), props=props or None)
  rule.__name__ = f"lower_{op_name.split('.')[-1]}"
  return rule


def unop(name: str, kind: str, numpy_fn, hlo_op: str | None, result_dtype=None) -> Primitive:
  """A standard unary elementwise primitive."""
  prim = Primitive(name)
  prim.def_abstract_eval(unop_abstract_eval(name, kind, result_dtype))
  if numpy_fn is not None:
    dispatch.def_numpy_impl(prim, numpy_fn)
  if hlo_op is not None:
    mlir.register_lowering(prim, hlo_lowering(hlo_op))
  return prim


def naryop(name: str, kinds, numpy_fn, hlo_op: str | None, result_dtype=None) -> Primitive:
  """A standard n-ary elementwise primitive (operands of one dtype, broadcast shapes)."""
  prim = Primitive(name)
  prim.def_abstract_eval(naryop_abstract_eval(name, kinds, result_dtype))
  if numpy_fn is not None:
    dispatch.def_numpy_impl(prim, numpy_fn)
  if hlo_op is not None:
    mlir.register_lowering(prim, hlo_lowering(hlo_op))
  return prim


_SCALAR_FITS = {bool: dtypes.is_bool, int: lambda d: not dtypes.is_bool(d),
                float: dtypes.is_inexact, complex: dtypes.is_complex}


def as_operand(x, like_dtype):
  """A Python scalar that fits `like_dtype` becomes a weakly typed 0-d value of that dtype (as
  JAX's weak typing does); anything else is returned unchanged."""
  fits = _SCALAR_FITS.get(type(x))
  if fits is not None and like_dtype is not None and fits(like_dtype):
    v = np.asarray(x, like_dtype)
    v.flags.writeable = False
    return Array(ShapedArray((), like_dtype, weak_type=True), npy=v)
  return x


def operand_dtype(x):
  """dtype of an operand, or None for a Python scalar."""
  if type(x) in _SCALAR_FITS:
    return None
  if isinstance(x, np.ndarray):
    return dtypes.canonicalize_dtype(x.dtype)
  return getattr(x, "dtype", None)


def binary_operands(x, y):
  """Give a Python-scalar operand of a binary op the dtype of the other operand."""
  if type(x) in _SCALAR_FITS:
    x = as_operand(x, operand_dtype(y))
  elif type(y) in _SCALAR_FITS:
    y = as_operand(y, operand_dtype(x))
  return x, y
