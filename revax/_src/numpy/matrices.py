"""Diagonals, triangles and products that build matrices: diag, diagonal, tri/tril/triu, their
index helpers, trace, fill_diagonal, vander, kron and cross.

Index helpers whose results have data-dependent lengths (tril_indices, mask_indices, ...) take
static sizes (Python ints), so they work under jit; the values they read may be traced.
"""
from __future__ import annotations

import operator

import numpy as np

from revax._src import lax
from revax._src.core import dtypes
from revax._src.core.shape_poly import is_symbolic_dim, max_dim, min_dim
from revax._src.numpy import util
from revax._src.numpy.util import aval_of
from revax._src.numpy.util import convert_pytree_operands


def _ndim(a):
  return aval_of(a).ndim


def _index_array(values):
  return util.as_array(np.asarray(values, dtype=dtypes.default_int_dtype()))


def diagonal(a, offset=0, axis1: int = 0, axis2: int = 1):
  """The `offset` diagonal of `a` over axes (axis1, axis2), appended as the last axis.

  Args:
    a: an array of at least 2 dimensions.
    offset: the diagonal (> 0 above the main one, < 0 below).
    axis1, axis2: the two axes the diagonal runs over.

  Returns:
    An array with axis1 and axis2 removed and the diagonal as its last axis.
  """
  from revax._src.numpy.shape_ops import moveaxis
  util.check_arraylike("diagonal", a)
  nd = _ndim(a)
  if nd < 2:
    raise ValueError(f"diagonal requires an array of at least two dimensions, got shape "
                     f"{aval_of(a).shape}")
  axis1 = util.canonicalize_axis(axis1, nd)
  axis2 = util.canonicalize_axis(axis2, nd)
  if axis1 == axis2:
    raise ValueError("axis1 and axis2 can not be the same")
  offset = operator.index(offset)
  a = moveaxis(util.as_array(a), (axis1, axis2), (-2, -1))
  n, m = aval_of(a).shape[-2:]
  row0, col0 = max(-offset, 0), max(offset, 0)
  length = max_dim(0, min_dim(n - row0, m - col0))
  if is_symbolic_dim(length):  # an iota of the symbolic length
    count = lax.iota(dtypes.default_int_dtype(), length)
    rows, cols = count + row0, count + col0
  else:
    rows = _index_array(np.arange(length) + row0)
    cols = _index_array(np.arange(length) + col0)
  return a[..., rows, cols]


def diag(v, k: int = 0):
  """A 1-D `v` placed on the `k`-th diagonal of a square matrix, or the `k`-th diagonal of a 2-D
  `v`.

  Args:
    v: a 1-D or 2-D array.
    k: which diagonal.

  Returns:
    A 2-D array (from a 1-D one) or a 1-D array (from a 2-D one).
  """
  util.check_arraylike("diag", v)
  k = operator.index(k)
  nd = _ndim(v)
  if nd == 2:
    return diagonal(v, offset=k)
  if nd != 1:
    raise ValueError(f"diag input must be 1d or 2d, got shape {aval_of(v).shape}")
  v = util.as_array(v)
  n = aval_of(v).shape[0] + abs(k)
  mask = _eye_mask(n, n, k)
  return lax.select_n(mask, util.full_of((n, n), 0, aval_of(v).dtype, aval_of(v).weak_type),
                      _spread_diag(v, n, k))


def _eye_mask(n, m, k):
  rows = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
  return lax.eq(lax.add(rows, util.scalar_constant(k, dtypes.int32)), cols)


def _spread_diag(v, n, k):
  """A (n, n) array whose row i (k >= 0) or column j (k < 0) holds the diagonal element."""
  length = aval_of(v).shape[0]
  pad = n - length
  if k >= 0:  # element (i, i + k) is v[i]: broadcast v along columns
    v = lax.pad(v, util.constant_like(v, 0), ((0, pad, 0),))
    return lax.broadcast_in_dim(v, (n, n), (0,))
  v = lax.pad(v, util.constant_like(v, 0), ((0, pad, 0),))
  return lax.broadcast_in_dim(v, (n, n), (1,))


def diagflat(v, k: int = 0):
  """The flattened `v` placed on the `k`-th diagonal of a 2-D array."""
  from revax._src.numpy.shape_ops import ravel
  util.check_arraylike("diagflat", v)
  return diag(ravel(v), k)


def _tri_mask(n, m, k):
  rows = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
  return lax.ge(lax.add(rows, util.scalar_constant(k, dtypes.int32)), cols)


def tri(N, M=None, k: int = 0, dtype=None):
  """An (N, M) array with ones at and below the `k`-th diagonal and zeros above (float32)."""
  N = operator.index(N)
  M = N if M is None else operator.index(M)
  dtype = util.canonical_dtype_arg(dtype) or dtypes.default_float_dtype()
  return lax.convert_element_type(_tri_mask(N, M, operator.index(k)), dtype)


def _triangle(fun_name, m, k, lower):
  util.check_arraylike(fun_name, m)
  m = util.as_array(m)
  aval = aval_of(m)
  if aval.ndim < 2:
    raise ValueError(f"Argument to {fun_name} must be at least 2D, got shape {aval.shape}")
  n, cols = aval.shape[-2:]
  k = operator.index(k)
  mask = _tri_mask(n, cols, k) if lower else lax.bitwise_not(_tri_mask(n, cols, k - 1))
  mask = util.broadcast_to(mask, aval.shape)
  return lax.select_n(mask, util.full_of(aval.shape, 0, aval.dtype, aval.weak_type), m)


def tril(m, k: int = 0):
  """`m` with the elements above the `k`-th diagonal (of its last two axes) zeroed."""
  return _triangle("tril", m, k, lower=True)


def triu(m, k: int = 0):
  """`m` with the elements below the `k`-th diagonal (of its last two axes) zeroed."""
  return _triangle("triu", m, k, lower=False)


def tril_indices(n, k: int = 0, m=None):
  """(rows, cols) of the elements at or below the `k`-th diagonal of an (n, m) array."""
  n = operator.index(n)
  m = n if m is None else operator.index(m)
  return tuple(map(_index_array, np.tril_indices(n, operator.index(k), m)))


def triu_indices(n, k: int = 0, m=None):
  """(rows, cols) of the elements at or above the `k`-th diagonal of an (n, m) array."""
  n = operator.index(n)
  m = n if m is None else operator.index(m)
  return tuple(map(_index_array, np.triu_indices(n, operator.index(k), m)))


def _shape_2d(fun_name, arr):
  shape = np.shape(arr) if not hasattr(arr, "aval") else arr.aval.shape
  if len(shape) != 2:
    raise ValueError(f"{fun_name} requires a 2-D array, got shape {tuple(shape)}")
  return shape


def tril_indices_from(arr, k: int = 0):
  """tril_indices for the shape of the 2-D array `arr`."""
  n, m = _shape_2d("tril_indices_from", arr)
  return tril_indices(n, k, m)


def triu_indices_from(arr, k: int = 0):
  """triu_indices for the shape of the 2-D array `arr`."""
  n, m = _shape_2d("triu_indices_from", arr)
  return triu_indices(n, k, m)


def diag_indices(n, ndim: int = 2):
  """`ndim` copies of arange(n): the indices of the main diagonal of an n x ... x n array."""
  n, ndim = operator.index(n), operator.index(ndim)
  if n < 0 or ndim < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got n={n} ndim={ndim}")
  return (_index_array(np.arange(n)),) * ndim


def diag_indices_from(arr):
  """diag_indices for a square array `arr` (all its dimensions equal)."""
  util.check_arraylike("diag_indices_from", arr)
  shape = aval_of(arr).shape
  if len(shape) < 2:
    raise ValueError("input array must be at least 2-d")
  if len(set(shape)) != 1:
    raise ValueError(f"All dimensions of input must be of equal length, got shape {shape}")
  return diag_indices(shape[0], len(shape))


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
  """A copy of `a` with its main diagonal set to `val` (repeated cyclically if shorter).

  revax arrays are immutable, so `inplace=False` is required (as in JAX).
  """
  from revax._src.numpy.shape_ops import ravel
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  util.check_arraylike("fill_diagonal", a, val)
  a = util.as_array(a)
  shape = aval_of(a).shape
  if len(shape) < 2:
    raise ValueError("array must be at least 2-d")
  if len(shape) > 2 and len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  flat_idx = np.ravel_multi_index((np.arange(min(shape)),) * len(shape), shape)
  val = ravel(lax.convert_element_type(util.as_array(val), aval_of(a).dtype))
  nval = aval_of(val).shape[0]
  if nval == 0:
    return a
  vals = val[_index_array(np.arange(len(flat_idx)) % nval)]
  return ravel(a).at[_index_array(flat_idx)].set(vals).reshape(shape)


def mask_indices(n, mask_func, k: int = 0, *, size=None):
  """Indices where `mask_func(ones((n, n)), k)` is nonzero (e.g. mask_func=triu)."""
  from revax._src.numpy.indexing import nonzero
  n = operator.index(n)
  return nonzero(mask_func(util.full_of((n, n), 1, dtypes.int32), k), size=size)


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
  """Sum along the `offset` diagonal over axes (axis1, axis2)."""
  from revax._src.numpy.reductions import sum as _sum
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
  util.check_arraylike("trace", a)
  return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def vander(x, N=None, increasing: bool = False):
  """The Vandermonde matrix of the 1-D `x`: columns are powers x**(N-1), ..., x**0 (reversed if
  `increasing`)."""
  from revax._src.numpy.ufuncs import power
  util.check_arraylike("vander", x)
  x = util.as_array(x)
  if _ndim(x) != 1:
    raise ValueError(f"x must be a one-dimensional array, got shape {aval_of(x).shape}")
  n = aval_of(x).shape[0] if N is None else operator.index(N)
  if n < 0:
    raise ValueError("N must be nonnegative")
  exponents = lax.iota(aval_of(x).dtype if dtypes.is_integer(aval_of(x).dtype)
                       else dtypes.default_int_dtype(), n)
  if not increasing:
    exponents = lax.rev(exponents, (0,))
  return power(lax.expand_dims(x, (1,)), lax.expand_dims(exponents, (0,)))


def kron(a, b):
  """The Kronecker product of `a` and `b` (blocks a[i, j] * b)."""
  util.check_arraylike("kron", a, b)
  a, b = util.promote_dtypes(util.as_array(a), util.as_array(b))
  sa, sb = aval_of(a).shape, aval_of(b).shape
  nd = max(len(sa), len(sb))
  sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
  a, b = lax.reshape(a, sa), lax.reshape(b, sb)
  a = lax.reshape(a, tuple(d for s in sa for d in (s, 1)))
  b = lax.reshape(b, tuple(d for s in sb for d in (1, s)))
  # (lax.mul, as jax's: bool operands are a TypeError)
  return lax.reshape(lax.mul(a, b), tuple(x * y for x, y in zip(sa, sb, strict=True)))


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
  """The cross product of vectors of 2 or 3 components along the given axes."""
  from revax._src.numpy.shape_ops import moveaxis
  util.check_arraylike("cross", a, b)
  if axis is not None:
    axisa = axisb = axisc = axis
  a, b = util.promote_dtypes(util.as_array(a), util.as_array(b))
  a = moveaxis(a, axisa, -1)
  b = moveaxis(b, axisb, -1)
  na, nb = aval_of(a).shape[-1], aval_of(b).shape[-1]
  if na not in (2, 3) or nb not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")
  a0, a1 = a[..., 0], a[..., 1]
  b0, b1 = b[..., 0], b[..., 1]
  if na == 2 and nb == 2:
    return a0 * b1 - a1 * b0
  a2 = a[..., 2] if na == 3 else util.constant_like(a0, 0)
  b2 = b[..., 2] if nb == 3 else util.constant_like(b0, 0)
  from revax._src.numpy.shape_ops import stack
  c = stack(util.broadcast_arrays_of(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0),
            axis=-1)
  return moveaxis(c, -1, axisc)

# as JAX's: flax's nnx Variables (pytrees with __jax_array__) taken as arrays
convert_pytree_operands(globals(), ("diag", "diagflat", "diagonal", "trace", "tril",
                        "tril_indices_from", "triu", "triu_indices_from",))
