"""`dim_as_value`: a symbolic dimension size used as a value (JAX's `dimension_as_value`).

Under shape polymorphism, `x.shape[0]` is a `DimExpr`; where it meets arrays (`x.sum() /
x.shape[0]`, `jnp.arange(n)`), it becomes this primitive's output: a weakly typed scalar of the
default integer dtype whose value is the size. Its `dim` parameter is the expression; when an
exported program is specialised to concrete shapes the parameter becomes an int, and the
primitive evaluates and lowers to that constant.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes, shape_poly
from revax._src.core.avals import ShapedArray, pytype_aval_mappings
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv

__all__ = ["dim_as_value", "dim_as_value_p"]


def dim_as_value(dim, dtype=None):
  """The size `dim` (an int or a symbolic dimension) as a weakly typed scalar of `dtype`
  (default: the default integer dtype); an int stays an int."""
  if not shape_poly.is_symbolic_dim(dim):
    return dim
  dtype = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
  return dim_as_value_p.bind(dim=dim, dtype=dtype)


def _dim_aval(_=None) -> ShapedArray:
  return ShapedArray((), dtypes.default_int_dtype(), weak_type=True)


def _dim_as_value_abstract_eval(*, dim, dtype):
  return ShapedArray((), dtype, weak_type=True)


def _dim_as_value_numpy(*, dim, dtype):
  return np.asarray(shape_poly.canonical_dim(dim), dtype)


def _dim_as_value_lower(ctx, *, dim, dtype):
  if shape_poly.is_symbolic_dim(dim):
    raise NotImplementedError(
        f"lowering the symbolic dimension '{dim}' as a value: revax lowers shape-polymorphic "
        "programs only after specialising them to concrete shapes")
  return ctx.constant(np.asarray(dim, dtype), ctx.avals_out[0])


def _dim_as_value_batch(vals, dims, *, dim, dtype):
  raise TypeError("dim_as_value has no operands, so vmap never batches it")


dim_as_value_p = Primitive("dim_as_value")
dim_as_value_p.def_abstract_eval(_dim_as_value_abstract_eval)
dispatch.def_numpy_impl(dim_as_value_p, _dim_as_value_numpy)
mlir.register_lowering(dim_as_value_p, _dim_as_value_lower)
ad.not_differentiable(dim_as_value_p, "it has no operands (and integer-valued output)")
batching.primitive_batchers[dim_as_value_p] = _dim_as_value_batch
inv.not_invertible(dim_as_value_p, "it has no operands to rebuild")
pytype_aval_mappings[shape_poly.DimExpr] = _dim_aval
shape_poly.dim_as_value_hook = dim_as_value
