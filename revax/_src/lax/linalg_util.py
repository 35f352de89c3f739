"""Small matrix helpers shared by the linear-algebra primitives and their algorithms.

Everything here acts on the last two axes ("the matrix") of arrays whose leading axes are batch
axes, and is written with lax operations only, so it can be traced into lowering rules, JVP rules
and the factorization algorithms alike.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.interpreters import batching
from revax._src.lax import binary, comparison, shapes, unary
from revax._src.lax.dot import dot_general
from revax._src.lax.reductions import reduce_sum

__all__ = []


def dtype_of(x):
  return get_aval(x).dtype


def shape_of(x):
  return get_aval(x).shape


def const(v, dtype):
  return np.asarray(v, dtype)


def full(shape, v, dtype):
  """An array of `shape` filled with `v`."""
  return shapes.broadcast_in_dim(np.asarray(v, dtype), tuple(shape), ())


def real_dtype(dtype):
  return np.finfo(dtype).dtype if dtypes.is_complex(dtype) else np.dtype(dtype)


def swap_last(x):
  """The transpose of each matrix (last two axes swapped)."""
  nd = get_aval(x).ndim
  return shapes.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def conj(x):
  return unary.conj(x) if dtypes.is_complex(dtype_of(x)) else x


def adjoint(x):
  """The conjugate transpose of each matrix."""
  return conj(swap_last(x))


def matmul(a, b):
  """Batched matrix product over equal leading batch axes."""
  nd = get_aval(a).ndim
  batch = tuple(range(nd - 2))
  return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def tri_mask(shape, k: int = 0, lower: bool = True):
  """Boolean mask of `shape` true on and below diagonal k (above, if not lower)."""
  nd = len(shape)
  rows = shapes.broadcasted_iota(np.int32, shape, nd - 2)
  cols = shapes.broadcasted_iota(np.int32, shape, nd - 1)
  if lower:
    return comparison.ge(binary.add(rows, np.int32(k)), cols)
  return comparison.le(binary.add(rows, np.int32(k)), cols)


def tril(x, k: int = 0):
  aval = get_aval(x)
  return comparison.select_n(tri_mask(aval.shape, k, True), full(aval.shape, 0, aval.dtype), x)


def triu(x, k: int = 0):
  aval = get_aval(x)
  return comparison.select_n(tri_mask(aval.shape, k, False), full(aval.shape, 0, aval.dtype), x)


def eye(n: int, m: int | None, dtype, batch_shape=()):
  m = n if m is None else m
  shape = tuple(batch_shape) + (n, m)
  on = tri_mask(shape, 0, True)
  on = binary.bitwise_and(on, tri_mask(shape, 0, False))
  return comparison.select_n(on, full(shape, 0, dtype), full(shape, 1, dtype))


def diag_part(x):
  """The main diagonals of the matrices: shape (..., min(m, n))."""
  aval = get_aval(x)
  m, n = aval.shape[-2:]
  k = min(m, n)
  sq = _leading_square(x, k)
  mask = binary.bitwise_and(tri_mask(get_aval(sq).shape, 0, True),
                            tri_mask(get_aval(sq).shape, 0, False))
  z = full(get_aval(sq).shape, 0, aval.dtype)
  return reduce_sum(comparison.select_n(mask, z, sq), (aval.ndim - 1,))


def _leading_square(x, k):
  from revax._src.lax import slicing
  aval = get_aval(x)
  nd = aval.ndim
  return slicing.slice(x, (0,) * nd, aval.shape[:-2] + (k, k))


def vector_to_diag(v, n_rows=None, n_cols=None):
  """Matrices with `v` (..., k) on the diagonal (zeros elsewhere), of shape (..., k, k)."""
  aval = get_aval(v)
  k = aval.shape[-1]
  shape = aval.shape + (k,)
  nd = len(shape)
  vm = shapes.broadcast_in_dim(v, shape, tuple(range(nd - 2)) + (nd - 1,))
  mask = binary.bitwise_and(tri_mask(shape, 0, True), tri_mask(shape, 0, False))
  return comparison.select_n(mask, full(shape, 0, aval.dtype), vm)


def scale_cols(x, v):
  """x * v[..., None, :] (v broadcast along the rows)."""
  xa, va = get_aval(x), get_aval(v)
  vb = shapes.broadcast_in_dim(v, xa.shape, tuple(range(xa.ndim - 2)) + (xa.ndim - 1,))
  return binary.mul(x, vb)


def scale_rows(x, v):
  """x * v[..., :, None]."""
  xa = get_aval(x)
  vb = shapes.broadcast_in_dim(v, xa.shape, tuple(range(xa.ndim - 1)))
  return binary.mul(x, vb)


def to_dtype(x, dtype):
  from revax._src.lax.conversion import convert_element_type
  return x if dtype_of(x) == np.dtype(dtype) else convert_element_type(x, dtype)


def abs_sq(x):
  """|x|**2 in the real dtype."""
  if dtypes.is_complex(dtype_of(x)):
    return binary.add(unary.square(unary.real(x)), unary.square(unary.imag(x)))
  return unary.square(x)


def map_batch(fn, args, nbatch: int, multiple_results: bool = True):
  """Apply `fn`, written for arguments without batch axes, to arguments with `nbatch` leading
  batch axes (the same for all): the batch axes are flattened into one and mapped with the
  batching interpreter (no Python loop, one algorithm in the program)."""
  if nbatch == 0:
    return fn(*args)
  batch_shape = get_aval(args[0]).shape[:nbatch]
  size = int(np.prod(batch_shape))
  flat = [shapes.reshape(a, (size,) + get_aval(a).shape[nbatch:]) for a in args]

  def flat_fn(*xs):
    out = fn(*xs)
    return list(out) if multiple_results else [out]

  outs, dims = batching.batch_flat(flat_fn, flat, [0] * len(flat), size)
  res = []
  for o, d in zip(outs, dims, strict=True):
    if d is batching.not_mapped:
      from revax._src.lax.batch_util import broadcast_batched
      o = broadcast_batched(o, size, 0)
    elif d != 0:
      from revax._src.lax.batch_util import moveaxis
      o = moveaxis(o, d, 0)
    res.append(shapes.reshape(o, tuple(batch_shape) + get_aval(o).shape[1:]))
  return res if multiple_results else res[0]


def np_batched(fn, arrays, nbatch: int, n_out: int):
  """NumPy: apply `fn` (one matrix problem -> n_out arrays) over `nbatch` leading axes."""
  batch = arrays[0].shape[:nbatch]
  outs = None
  for idx in np.ndindex(*batch):
    res = fn(*(a[idx] for a in arrays))
    res = res if isinstance(res, tuple) else (res,)
    if outs is None:
      outs = [np.empty(batch + np.shape(r), np.asarray(r).dtype) for r in res]
    for o, r in zip(outs, res, strict=True):
      o[idx] = r
  if outs is None:  # an empty batch: shapes from a run on zeros
    res = fn(*(np.zeros(a.shape[nbatch:], a.dtype) for a in arrays))
    res = res if isinstance(res, tuple) else (res,)
    outs = [np.empty(batch + np.shape(r), np.asarray(r).dtype) for r in res]
  return outs if n_out > 1 else outs[0]


def select(pred, on_false, on_true):
  """select_n(pred, on_false, on_true) with scalar cases broadcast to pred's shape."""
  shape = get_aval(pred).shape

  def fit(x):
    if not isinstance(x, np.ndarray) and get_aval(x).shape == shape:
      return x
    x_shape = np.shape(x) if isinstance(x, np.ndarray) else get_aval(x).shape
    if x_shape == shape:
      return x
    return shapes.broadcast_in_dim(x, shape, ())
  return comparison.select_n(pred, fit(on_false), fit(on_true))
