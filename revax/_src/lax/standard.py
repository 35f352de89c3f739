"""Shared machinery for the standard elementwise primitives.

`unop` and `naryop` build the abstract evaluation, NumPy implementation and lowering of an
elementwise primitive from a dtype rule, a NumPy function and a StableHLO op name, so a family
file can declare each primitive in a few lines and keep its derivative rules beside it.

Elementwise primitives broadcast their operands NumPy-style (a batched operand next to an
unbatched one needs no materialized copy): the abstract evaluation computes the broadcast shape
and the lowering inserts `broadcast_in_dim` where an operand's shape differs.

The same broadcasting shapes their transformation rules: a tangent of a broadcast operand is
broadcast to the output's shape (`broadcast_tangent`), the cotangent of a broadcast operand is
summed back to the operand's shape (`unbroadcast`), and the batching rule (`defbroadcasting`,
registered by `unop`/`naryop`) lines batch dims up so that broadcasting does the rest.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes, sharding_types
from revax._src.core.avals import ShapedArray
from revax._src.core.trace import Primitive
from revax._src.core.avals import get_aval
from revax._src.core.shape_poly import DimExpr
from revax._src.interpreters import batching, dispatch, mlir
from revax._src.lax.dim_value import dim_as_value
from revax._src.runtime.array import Array

# dtype categories accepted by elementwise primitives, as sets for fast membership tests
_BOOL = frozenset([dtypes.bool_])
# (ml_dtypes' narrow types -- float8/float4, int4/uint4, int2/uint2 -- are floats and ints as
# in JAX: XLA computes with them)
_SIGNED = frozenset([dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
                     *dtypes.NARROW_SIGNED])
_INT = _SIGNED | {dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64,
                  *dtypes.NARROW_UNSIGNED}
_FLOAT = frozenset([dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64,
                    *dtypes.NARROW_FLOATS])
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
                      f"{', '.join(map(str, map(tuple, shapes)))}.")
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
    # as in jax, a weak operand gives a weak result even of a fixed dtype (`isfinite(2.0)`)
    return ShapedArray(x.shape, dtype, x.weak_type)
  return rule


def naryop_abstract_eval(name, kinds, result_dtype=None):
  def rule(*avals, **params):
    for kind, a in zip(kinds, avals, strict=True):
      check_dtype(name, kind, a.dtype)
    dtype = same_dtypes(name, avals)
    shape = broadcast_shapes(*(a.shape for a in avals), op_name=name)
    weak = all(a.weak_type for a in avals)  # weak even for a fixed result dtype (`3 > 2.5`)
    if result_dtype is not None:
      dtype = result_dtype(dtype)
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
  """A standard unary elementwise primitive (batched where its operand is)."""
  prim = Primitive(name)
  prim.def_abstract_eval(unop_abstract_eval(name, kind, result_dtype))
  if numpy_fn is not None:
    dispatch.def_numpy_impl(prim, numpy_fn)
  if hlo_op is not None:
    mlir.register_lowering(prim, hlo_lowering(hlo_op))
  batching.defvectorized(prim)
  sharding_types.rules[prim] = sharding_types.elementwise_named(name)
  return prim


def naryop(name: str, kinds, numpy_fn, hlo_op: str | None, result_dtype=None) -> Primitive:
  """A standard n-ary elementwise primitive (operands of one dtype, broadcast shapes), with the
  broadcasting batching rule."""
  prim = Primitive(name)
  prim.def_abstract_eval(naryop_abstract_eval(name, kinds, result_dtype))
  if numpy_fn is not None:
    dispatch.def_numpy_impl(prim, numpy_fn)
  if hlo_op is not None:
    mlir.register_lowering(prim, hlo_lowering(hlo_op))
  defbroadcasting(prim)
  sharding_types.rules[prim] = sharding_types.elementwise_named(name)
  return prim


# --- autodiff helpers for broadcasting operands ----------------------------------------------------
def broadcast_tangent(t, shape):
  """`t` (the tangent of an operand) broadcast NumPy-style to the output `shape`; `t` itself when
  its shape is `shape`."""
  from revax._src.lax.shapes import broadcast_in_dim  # shapes imports this module
  t_shape = get_aval(t).shape
  if t_shape == tuple(shape):
    return t
  return broadcast_in_dim(t, shape, tuple(range(len(shape) - len(t_shape), len(shape))))


def unbroadcast(ct, aval: ShapedArray):
  """The cotangent `ct` of a broadcast result summed back to the shape of operand `aval`: over
  the leading dims the operand lacks and the dims where it has size 1 (the transpose of NumPy
  broadcasting)."""
  from revax._src.lax import reductions, shapes  # both import the families that import this
  ct_shape = get_aval(ct).shape
  if ct_shape == aval.shape:
    return ct
  lead = len(ct_shape) - aval.ndim
  axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(aval.shape)
                                    if d == 1 and ct_shape[lead + i] != 1)
  summed = reductions.reduce_sum(ct, axes) if axes else ct
  return shapes.reshape(summed, aval.shape) if get_aval(summed).shape != aval.shape else summed


# --- batching: the broadcasting rule ---------------------------------------------------------------
def defbroadcasting(prim: Primitive):
  """Register the batching rule of an elementwise primitive whose operands broadcast NumPy-style.

  Broadcasting aligns operands at their trailing dims, so a batched operand lines up with the
  others when its batch dim has the same number of per-example dims after it. The rule picks the
  output batch position `b` that costs fewest transposes, then fewest reshapes: a mapped operand
  already there costs nothing, one with its batch dim in front reaches any earlier position by a
  reshape (size-1 dims after the batch dim), others need a transpose; an unmapped operand costs
  nothing when all its dims come after `b` and a size-1 dim inserted at `b` (a reshape)
  otherwise. No unmapped operand is ever materialized at the batch size.

  Example: vmap of add over x: (B, 2, 3) at 0 and y: (3,) unmapped binds add(x, y) unchanged.
  """
  def rule(vals, dims, **params):
    ranks = [get_aval(v).ndim - (d is not batching.not_mapped) for v, d in zip(vals, dims)]
    rank = max(ranks)
    b = min(range(rank + 1), key=lambda b: _broadcast_cost(b, dims, ranks, rank))
    args = [_batch_at(v, d, r, rank, b) for v, d, r in zip(vals, dims, ranks, strict=True)]
    return prim.bind(*args, **params), b
  batching.primitive_batchers[prim] = rule
  return rule



def _broadcast_cost(b, dims, ranks, rank):
  """(transposes, reshapes) needed to batch every operand at output position `b`."""
  transposes = reshapes = 0
  for d, r in zip(dims, ranks):
    lead = rank - r  # output dims before this operand's first dim
    if d is batching.not_mapped:
      reshapes += r > rank - b
    elif d + lead != b:
      if d == 0 and b < lead:
        reshapes += 1
      else:
        transposes += 1
  return transposes, reshapes


def _batch_at(x, dim, x_rank: int, rank: int, b: int):
  """`x` (per-example rank `x_rank`, batch dim `dim` or not mapped) arranged so that it
  broadcasts against a rank-`rank` result batched at output position `b`."""
  from revax._src.lax import batch_util, shapes  # shapes imports this module
  lead = rank - x_rank
  if dim is batching.not_mapped:
    return batch_util.insert_unit_dim(x, b - lead) if x_rank > rank - b else x
  if b >= lead:
    return batch_util.moveaxis(x, dim, b - lead)
  x = batch_util.moveaxis(x, dim, 0)
  shape = get_aval(x).shape
  return shapes.reshape(x, shape[:1] + (1,) * (lead - b) + shape[1:])


_SCALAR_FITS = {bool: dtypes.is_bool, int: lambda d: not dtypes.is_bool(d),
                float: dtypes.is_inexact, complex: dtypes.is_complex,
                DimExpr: lambda d: not dtypes.is_bool(d)}


def as_operand(x, like_dtype):
  """A Python scalar that fits `like_dtype` becomes a weakly typed 0-d value of that dtype (as
  JAX's weak typing does); anything else is returned unchanged."""
  fits = _SCALAR_FITS.get(type(x))
  if fits is not None and like_dtype is not None and fits(like_dtype):
    if type(x) is DimExpr:  # a symbolic size: the dim_as_value primitive
      return dim_as_value(x, like_dtype)
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
