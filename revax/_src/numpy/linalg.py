"""revax.numpy.linalg: NumPy's linear algebra on revax arrays, as jax.numpy.linalg.

Built on the revax.lax.linalg primitives (cholesky, triangular_solve, lu, qr, eigh, svd), so
every function batches over leading axes, differentiates through the primitives' JVP rules and
lowers to XLA. Non-symmetric eigen-decomposition (eig, eigvals) calls LAPACK's ?geev on the
host, as revax.lax.linalg.eig says.
"""
from __future__ import annotations

import operator
from functools import partial
from typing import NamedTuple

import numpy as np

from revax._src.core import dtypes
from revax._src.custom_derivatives import custom_jvp
from revax._src.lax import linalg as lax_linalg
from revax._src.lax.linalg_eig import eig as _lax_eig
from revax._src.lax.conversion import convert_element_type
from revax._src.numpy import contractions, creation, reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact, promote_dtypes

__all__ = [
  "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
  "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
  "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
  "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
  "EighResult", "QRResult", "SlogdetResult", "SVDResult",
]

matmul = contractions.matmul
tensordot = contractions.tensordot
matrix_transpose = shape_ops.matrix_transpose


class EigResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class EighResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class QRResult(NamedTuple):
  Q: object
  R: object


class SlogdetResult(NamedTuple):
  sign: object
  logabsdet: object


class SVDResult(NamedTuple):
  U: object
  S: object
  Vh: object


def _inexact(fun_name, *args):
  out = promote_args_inexact(fun_name, *args)
  return out[0] if len(out) == 1 else out


def _check_matrix(fun_name, a, square=True):
  shape = aval_of(a).shape
  if len(shape) < 2:
    raise ValueError(f"{fun_name} requires an array of rank >= 2 (a stack of matrices), got "
                     f"shape {shape}")
  if square and shape[-1] != shape[-2]:
    raise ValueError(f"{fun_name} requires square matrices in the last two axes, got shape "
                     f"{shape}")


def _H(x):
  return ufuncs.conj(shape_ops.swapaxes(x, -1, -2)) if dtypes.is_complex(aval_of(x).dtype) \
      else shape_ops.swapaxes(x, -1, -2)


def _diag(x, offset=0):
  """The diagonals of the last two axes, shape (..., k)."""
  from revax._src.lax import linalg_util as U
  from revax._src.lax import slicing
  shape = aval_of(x).shape
  m, n = shape[-2:]
  nd = len(shape)
  if offset > 0:
    x = slicing.slice(x, (0,) * (nd - 1) + (min(offset, n),), shape)
  elif offset < 0:
    x = slicing.slice(x, (0,) * (nd - 2) + (min(-offset, m), 0), shape)
  return U.diag_part(x)


# --- factorizations ------------------------------------------------------------------------------
def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
  """The Cholesky factor of Hermitian positive-definite matrices.

  Args:
    a: array (..., n, n).
    upper: return the upper factor U (a = U^H U) instead of the lower L (a = L L^H).
    symmetrize_input: factor (a + a^H) / 2 (gradients are then symmetric).

  Returns:
    The factor; NaN where a matrix is not positive definite.

  Example:
    >>> jnp.linalg.cholesky(jnp.array([[4., 2.], [2., 3.]]))
    Array([[2.       , 0.       ],
           [1.       , 1.4142135]], dtype=float32)
  """
  check_arraylike("cholesky", a)
  a = _inexact("cholesky", a)
  _check_matrix("cholesky", a)
  L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(L) if upper else L


def qr(a, mode: str = "reduced"):
  """QR decomposition.

  Args:
    a: array (..., m, n).
    mode: "reduced" (Q (..., m, k), R (..., k, n)), "complete" (Q (..., m, m)), "r" (R only)
      or "raw" (LAPACK's packed form: (h (..., n, m), taus (..., k)), as NumPy and JAX).

  Returns:
    QRResult(Q, R), or R for mode="r", or QRResult(h, taus) for mode="raw".

  Example:
    >>> q, r = jnp.linalg.qr(jnp.array([[3., 1.], [4., 2.]]))
    >>> r
    Array([[-5. , -2.2],
           [ 0. ,  0.4]], dtype=float32)
  """
  check_arraylike("qr", a)
  a = _inexact("qr", a)
  _check_matrix("qr", a, square=False)
  if mode == "raw":
    h, taus = lax_linalg.geqrf(a)
    return QRResult(shape_ops.swapaxes(h, -1, -2), taus)
  if mode == "reduced":
    full = False
  elif mode in ("complete", "r"):
    full = mode == "complete"
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  q, r = lax_linalg.qr(a, full_matrices=full)
  return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
  """Eigen-decomposition of Hermitian matrices.

  Args:
    a: array (..., n, n).
    UPLO: "L" or "U": the triangle read when symmetrize_input is False (default "L").
    symmetrize_input: use (a + a^H) / 2.

  Returns:
    EighResult(eigenvalues (..., n) ascending, eigenvectors (..., n, n) as columns).

  Example:
    >>> a = jnp.array([[2., 1.], [1., 2.]])
    >>> w, v = jnp.linalg.eigh(a)
    >>> w
    Array([1., 3.], dtype=float32)
    >>> jnp.allclose(a @ v, v * w, atol=1e-5)
    Array(True, dtype=bool)
  """
  check_arraylike("eigh", a)
  if UPLO is None or UPLO == "L":
    lower = True
  elif UPLO == "U":
    lower = False
  else:
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
  a = _inexact("eigh", a)
  _check_matrix("eigh", a)
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
  """Eigenvalues of Hermitian matrices, ascending.

  Example:
    >>> jnp.linalg.eigvalsh(jnp.array([[2., 1.], [1., 2.]]))
    Array([1., 3.], dtype=float32)
  """
  return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a):
  """Eigenvalues and right eigenvectors of general square matrices (LAPACK ?geev, as JAX on
  CPU): complex results, eigenvalues in LAPACK's order, unit-norm eigenvectors as columns.

  Example:
    >>> w, v = jnp.linalg.eig(jnp.array([[0., -1.], [1., 0.]]))
    >>> w
    Array([0.+1.j, 0.-1.j], dtype=complex64)
  """
  check_arraylike("eig", a)
  a = _inexact("eig", a)
  _check_matrix("eig", a)
  w, v = _lax_eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a):
  """Eigenvalues of general square matrices (complex, in LAPACK ?geev's order).

  Example:
    >>> jnp.linalg.eigvals(jnp.array([[2., 1.], [0., 3.]]))
    Array([2.+0.j, 3.+0.j], dtype=complex64)
  """
  check_arraylike("eigvals", a)
  a = _inexact("eigvals", a)
  _check_matrix("eigvals", a)
  return _lax_eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
  """Singular value decomposition a = U diag(S) Vh.

  Args:
    a: array (..., m, n).
    full_matrices: U (..., m, m) and Vh (..., n, n); else reduced to k = min(m, n).
    compute_uv: return U and Vh too.
    hermitian: a is Hermitian (computed from its eigen-decomposition).
    subset_by_index: optional (lo, hi) range of singular values (descending order).

  Returns:
    SVDResult(U, S, Vh), or S when compute_uv is False.

  Example:
    >>> a = jnp.array([[3., 0.], [0., -2.], [0., 0.]])
    >>> u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    >>> s
    Array([3., 2.], dtype=float32)
    >>> jnp.allclose((u * s) @ vh, a, atol=1e-5)
    Array(True, dtype=bool)
  """
  check_arraylike("svd", a)
  a = _inexact("svd", a)
  _check_matrix("svd", a, square=False)
  if hermitian:
    w, v = eigh(a)
    s = ufuncs.abs(w)
    from revax._src.lax.sorting import sort
    from revax._src.lax import shapes, slicing
    nd = aval_of(s).ndim
    idx = shapes.broadcasted_iota(np.int32, aval_of(s).shape, nd - 1)
    _, idx = sort((ufuncs.negative(s), idx), nd - 1, num_keys=1)
    s = slicing.gather_along_axis(s, idx, nd - 1)
    if not compute_uv:
      return s
    v = lax_linalg._take_cols(v, idx)
    sign = ufuncs.sign(slicing.gather_along_axis(w, idx, nd - 1))
    sign = ufuncs.where(sign == 0, 1, sign).astype(aval_of(v).dtype)
    u = v * sign[..., None, :]
    return SVDResult(u, s, _H(v))
  out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                       subset_by_index=subset_by_index)
  return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
  """Singular values, descending.

  Example:
    >>> jnp.linalg.svdvals(jnp.array([[3., 0.], [0., -2.]]))
    Array([3., 2.], dtype=float32)
  """
  return svd(x, compute_uv=False)


# --- solving and inverting -----------------------------------------------------------------------
def _lu_solve(lu_, perm, b, trans: int = 0):
  """Solve a x = b (trans 0), a^T x = b (1) or a^H x = b (2) from a's LU factors; b (..., n, m)
  with batch axes equal to those of lu_."""
  from revax._src.lax.linalg import _permute_rows
  if trans == 0:
    x = _permute_rows(b, perm)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
  conj = trans == 2
  x = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                                  conjugate_a=conj)
  x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                                  transpose_a=True, conjugate_a=conj)
  from revax._src.lax.sorting import sort
  from revax._src.lax import shapes
  nd = aval_of(perm).ndim
  _, inv_perm = sort((perm, shapes.broadcasted_iota(np.int32, aval_of(perm).shape, nd - 1)),
                     nd - 1)
  return _permute_rows(x, inv_perm)


def solve(a, b):
  """Solve a x = b.

  Args:
    a: array (..., n, n).
    b: array (n,) (one vector) or (..., n, m); batch axes broadcast with a's.

  Returns:
    x, shaped like b (batch axes broadcast).

  Example:
    >>> jnp.linalg.solve(jnp.array([[2., 1.], [1., 3.]]), jnp.array([3., 5.]))
    Array([0.8, 1.4], dtype=float32)
  """
  check_arraylike("solve", a, b)
  a, b = _inexact("solve", a, b)
  _check_matrix("solve", a)
  a_shape, b_shape = aval_of(a).shape, aval_of(b).shape
  vector = len(b_shape) == 1
  if vector:
    b = b[:, None]
    b_shape = aval_of(b).shape
  if b_shape[-2] != a_shape[-1]:
    raise ValueError(f"solve: a has shape {a_shape} and b has shape "
                     f"{b_shape[:-1] if vector else b_shape}; the last axis of a must match "
                     f"b's {'only' if vector else 'second-to-last'} axis")
  batch = shape_ops.broadcast_shapes(a_shape[:-2], b_shape[:-2])
  a = shape_ops.broadcast_to(a, batch + a_shape[-2:])
  b = shape_ops.broadcast_to(b, batch + b_shape[-2:])
  lu_, _, perm = lax_linalg.lu(a)
  x = _lu_solve(lu_, perm, b)
  return x[..., 0] if vector else x


def inv(a):
  """The inverse of square matrices (inf/NaN where singular).

  Example:
    >>> jnp.linalg.inv(jnp.array([[2., 0.], [0., 4.]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
  """
  check_arraylike("inv", a)
  a = _inexact("inv", a)
  _check_matrix("inv", a)
  shape = aval_of(a).shape
  eye = shape_ops.broadcast_to(creation.eye(shape[-1], dtype=aval_of(a).dtype), shape)
  return solve(a, eye)


def _lu_det_parts(a):
  lu_, pivots, _ = lax_linalg.lu(a)
  d = _diag(lu_)
  n = aval_of(pivots).shape[-1]
  swaps = reductions.sum(pivots != creation.arange(n, dtype=np.int32), axis=-1)
  parity = ufuncs.where(swaps % 2 == 1, -1, 1).astype(aval_of(a).dtype)
  return d, parity


def _det_2x2(a):
  return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
  return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2] +
          a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0] +
          a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1] -
          a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0] -
          a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1] -
          a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


def det(a):
  """Determinants of square matrices.

  As jax's: 2x2 and 3x3 matrices by their explicit expansion (any floating dtype, float16
  included; derivatives are the polynomial's, the cofactors, at singular matrices too); larger
  ones as sign * exp(logabsdet)
  of an LU decomposition, with a JVP through the cofactors (`_cofactor_solve`), finite at
  singular matrices.

  Args:
    a: array (..., n, n).

  Returns:
    The determinants, shape (...).

  Example:
    >>> jnp.linalg.det(jnp.array([[1., 2.], [3., 4.]]))
    Array(-2., dtype=float32)
  """
  check_arraylike("det", a)
  a = _inexact("det", a)
  shape = aval_of(a).shape
  if len(shape) >= 2 and shape[-2:] == (2, 2):
    return _det_2x2(a)
  if len(shape) >= 2 and shape[-2:] == (3, 3):
    return _det_3x3(a)
  _check_matrix("det", a)
  return _det_lu(a)


@custom_jvp
def _det_lu(a):
  sign, logdet = slogdet(a)
  return sign * ufuncs.exp(logdet).astype(aval_of(sign).dtype)


@_det_lu.defjvp
def _det_lu_jvp(primals, tangents):
  y, z = _cofactor_solve(primals[0], tangents[0])
  return y, trace(z)


def _cofactor_solve(a, b):
  """(det(a), adjugate(a) @ b), finite for singular `a` (jax's formulation).

  With a = P L U, det(a) solve(a, b) = prod(diag U) U^-1 L^-1 P^-1 b. Replacing U's last
  diagonal entry by 1 / prod(its other diagonal entries) and scaling all but the last row of
  L^-1 P^-1 b by det(a) gives the same value without dividing by U's last diagonal entry: exact
  for rank n - 1, where the adjugate has rank 1. Where U is singular before its last entry
  (rank < n - 1) the adjugate is zero, and zeros are returned.
  """
  from revax._src.lax.linalg import _permute_rows
  n = aval_of(a).shape[-1]
  if n == 1:
    return a[..., 0, 0], b
  lu_, pivots, perm = lax_linalg.lu(a)
  dtype = aval_of(lu_).dtype
  batch = shape_ops.broadcast_shapes(aval_of(lu_).shape[:-2], aval_of(b).shape[:-2])
  x = shape_ops.broadcast_to(b, batch + aval_of(b).shape[-2:])
  lu_ = shape_ops.broadcast_to(lu_, batch + (n, n))
  parity = reductions.count_nonzero(pivots != creation.arange(n, dtype=np.int32), axis=-1)
  sign = creation.asarray(-2 * (parity % 2) + 1, dtype=dtype)
  partial_det = reductions.cumprod(_diag(lu_), axis=-1) * sign[..., None]
  corner = (creation.arange(n)[:, None] == n - 1) & (creation.arange(n)[None, :] == n - 1)
  lu_ = ufuncs.where(corner, (1.0 / partial_det[..., -2])[..., None, None], lu_)
  perm = shape_ops.broadcast_to(perm, batch + (n,))
  # a matrix of rank < n - 1 (a non-finite solve with the replaced corner) has adjugate 0
  ones = creation.ones(aval_of(x).shape[:-1] + (1,), aval_of(x).dtype)
  d = lax_linalg.triangular_solve(lu_, ones, left_side=True, lower=False)[..., 0]
  d = reductions.any(ufuncs.logical_or(ufuncs.isnan(d), ufuncs.isinf(d)), axis=-1)
  d = d[..., None, None]
  zeros = creation.zeros_like(x)
  x = ufuncs.where(d, zeros, x)
  x = _permute_rows(x, perm)
  x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
  x = shape_ops.concatenate((x[..., :-1, :] * partial_det[..., -1, None, None],
                             x[..., -1:, :]), axis=-2)
  x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
  x = ufuncs.where(d, zeros, x)
  return partial_det[..., -1], x


def slogdet(a, *, method: str | None = None):
  """Sign and natural log of the absolute determinant.

  Args:
    a: array (..., n, n).
    method: "lu" (default) or "qr".

  Returns:
    SlogdetResult(sign, logabsdet); sign 0 and logabsdet -inf for singular matrices.

  Example:
    >>> sign, logdet = jnp.linalg.slogdet(jnp.array([[1., 2.], [3., 4.]]))
    >>> sign, logdet  # det = -2
    (Array(-1., dtype=float32), Array(0.6931471, dtype=float32))
  """
  check_arraylike("slogdet", a)
  a = _inexact("slogdet", a)
  _check_matrix("slogdet", a)
  if method not in (None, "lu", "qr"):
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`), "
                     f"and 'qr'.")
  return SlogdetResult(*_slogdet(a, method or "lu"))


@partial(custom_jvp, nondiff_argnums=(1,))
def _slogdet(a, method):
  dtype = aval_of(a).dtype
  if method == "lu":
    d, parity = _lu_det_parts(a)
  else:
    q, r = lax_linalg.qr(a, full_matrices=True)
    d = _diag(r)
    parity = _householder_det(q)
  absd = ufuncs.abs(d)
  logabs = reductions.sum(ufuncs.log(absd), axis=-1)
  unit = d / ufuncs.where(absd == 0, 1, absd).astype(dtype)
  sign = parity * reductions.prod(unit, axis=-1)
  singular = reductions.any(absd == 0, axis=-1)
  sign = ufuncs.where(singular, 0, sign).astype(dtype)
  logabs = ufuncs.where(singular, -np.inf, logabs).astype(aval_of(logabs).dtype)
  return sign, logabs


@_slogdet.defjvp
def _slogdet_jvp(method, primals, tangents):
  """As jax's: d log|det a| = trace(solve(a, da)) (NaN/inf at singular a, as there); the sign's
  tangent is zero for real a and the imaginary part of that trace times the sign for complex."""
  a, = primals
  g, = tangents
  sign, ans = _slogdet(a, method)
  ans_dot = trace(solve(a, g))
  if dtypes.is_complex(aval_of(a).dtype):
    sign_dot = (ans_dot - ufuncs.real(ans_dot).astype(aval_of(ans_dot).dtype)) * sign
    ans_dot = ufuncs.real(ans_dot)
  else:
    sign_dot = creation.zeros_like(sign)
  return (sign, ans), (sign_dot, ans_dot)


def _householder_det(q):
  """det(Q) of an orthogonal/unitary Q, from its own LU (|det Q| = 1)."""
  d, parity = _lu_det_parts(q)
  prod = reductions.prod(d, axis=-1)
  return parity * prod / ufuncs.abs(prod).astype(aval_of(q).dtype)


def matrix_power(a, n: int):
  """a raised to the integer power n (negative n: powers of the inverse), by squaring.

  Example:
    >>> jnp.linalg.matrix_power(jnp.array([[1, 1], [0, 1]]), 3)
    Array([[1, 3],
           [0, 1]], dtype=int32)
  """
  check_arraylike("matrix_power", a)
  a = creation.asarray(a)
  _check_matrix("matrix_power", a)
  try:
    n = operator.index(n)
  except TypeError as err:
    raise TypeError(f"exponent must be an integer, got {n}") from err
  if n == 0:
    shape = aval_of(a).shape
    return shape_ops.broadcast_to(creation.eye(shape[-1], dtype=aval_of(a).dtype), shape)
  if n < 0:
    a = inv(a)
    n = -n
  result = None
  z = a
  while n > 0:
    if n & 1:
      result = z if result is None else matmul(result, z)
    n >>= 1
    if n:
      z = matmul(z, z)
  return result


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
  """Moore-Penrose pseudo-inverse (singular values below rtol * max(s) are treated as zero).

  Args:
    a: array (..., m, n).
    rtol: relative cutoff (default 10 * max(m, n) * eps).
    hermitian: a is Hermitian.
    rcond: older name of rtol.

  Returns:
    (..., n, m).

  Example:
    >>> jnp.linalg.pinv(jnp.array([[1., 0.], [0., 2.], [0., 0.]]))
    Array([[1. , 0. , 0. ],
           [0. , 0.5, 0. ]], dtype=float32)
  """
  check_arraylike("pinv", a)
  a = _inexact("pinv", a)
  _check_matrix("pinv", a, square=False)
  if rcond is not None:
    if rtol is not None:
      raise ValueError("pinv: only one of rtol and rcond may be specified.")
    rtol = rcond
  return _pinv(a, rtol, hermitian)


@partial(custom_jvp, nondiff_argnums=(1, 2))
def _pinv(a, rtol, hermitian):
  m, n = aval_of(a).shape[-2:]
  if m == 0 or n == 0:
    return creation.zeros(aval_of(a).shape[:-2] + (n, m), aval_of(a).dtype)
  a = ufuncs.conj(a) if dtypes.is_complex(aval_of(a).dtype) else a
  u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
  if rtol is None:
    rtol = 10.0 * max(m, n) * float(dtypes.finfo(aval_of(s).dtype).eps)
  rtol = creation.asarray(rtol)
  cutoff = rtol[..., None] * reductions.max(s, axis=-1, keepdims=True)
  s = ufuncs.where(s > cutoff, s, np.inf).astype(aval_of(u).dtype)
  return matmul(shape_ops.swapaxes(vh, -1, -2),
                ufuncs.divide(shape_ops.swapaxes(u, -1, -2), s[..., None]))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
  """As jax's (Golub and Pereyra 1973): exact where the rank is locally constant, and zero at
  the zero matrix (whose pseudo-inverse is zero)."""
  a, = primals
  a_dot, = tangents
  p = _pinv(a, rtol, hermitian)
  if hermitian:
    a = (a + _H(a)) / 2
    a_dot = (a_dot + _H(a_dot)) / 2
  m, n = aval_of(a).shape[-2:]
  if m >= n:
    s = matmul(matmul(p, _H(p)), _H(a_dot))
    t = matmul(matmul(_H(a_dot), _H(p)), p)
    p_dot = (-matmul(matmul(p, a_dot), p) + s - matmul(matmul(s, a), p) + t
             - matmul(matmul(p, a), t))
  else:
    s = matmul(p, matmul(_H(p), _H(a_dot)))
    t = matmul(_H(a_dot), matmul(_H(p), p))
    p_dot = (-matmul(p, matmul(a_dot, p)) + s - matmul(s, matmul(a, p)) + t
             - matmul(p, matmul(a, t)))
  return p, p_dot


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
  """Least-squares solution of a x = b (from the SVD of a).

  Args:
    a: (m, n). b: (m,) or (m, k).
    rcond: relative cutoff of small singular values (default: eps * max(m, n)).
    numpy_resid: compute residuals as NumPy does (only for full-rank, m > n); otherwise always.

  Returns:
    (x, residuals, rank, s).

  Example:
    >>> a = jnp.array([[1., 0.], [1., 1.], [1., 2.]])
    >>> x, resid, rank, s = jnp.linalg.lstsq(a, jnp.array([1., 2., 3.]))
    >>> x, rank
    (Array([1., 1.], dtype=float32), Array(2, dtype=int32))
  """
  check_arraylike("lstsq", a, b)
  a, b = _inexact("lstsq", a, b)
  if aval_of(a).ndim != 2:
    raise TypeError(f"{aval_of(a).ndim}-dimensional array given. Array must be two-dimensional")
  b_nd = aval_of(b).ndim
  if b_nd not in (1, 2):
    raise TypeError(f"{b_nd}-dimensional array given. Array must be one or two-dimensional")
  m, n = aval_of(a).shape
  if aval_of(b).shape[0] != m:
    raise ValueError(f"Leading dimensions of input arrays must match; got a {aval_of(a).shape} "
                     f"and b {aval_of(b).shape}")
  dtype = aval_of(a).dtype
  if rcond is None:
    rcond = float(dtypes.finfo(dtype).eps) * max(n, m)
  elif rcond < 0:
    rcond = float(dtypes.finfo(dtype).eps)
  u, s, vh = svd(a, full_matrices=False)
  mask = (s >= rcond * s[0]) & (s > 0) if aval_of(s).shape[0] else s > 0
  rank = reductions.sum(mask).astype(np.int32)
  safe_s = ufuncs.where(mask, s, 1).astype(aval_of(s).dtype)
  s_inv = ufuncs.where(mask, 1 / safe_s, 0).astype(dtype)
  b2 = b[:, None] if b_nd == 1 else b
  uTb = matmul(_H(u), b2)
  x = matmul(_H(vh), uTb * s_inv[:, None])
  resid = reductions.sum(ufuncs.abs(b2 - matmul(a, x)) ** 2, axis=0)
  if numpy_resid:
    if not (m > n):
      resid = creation.zeros((0,), aval_of(resid).dtype)
    else:
      resid = ufuncs.where(rank == n, resid, 0)  # NumPy returns an empty array there; see docs
  if b_nd == 1:
    x = x[:, 0]  # the residuals keep their (1,) shape, as NumPy's and JAX's do
  return x, resid, rank, s


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
  """Rank: the number of singular values above rtol * max(s).

  Example:
    >>> jnp.linalg.matrix_rank(jnp.array([[1., 2.], [2., 4.]]))
    Array(1, dtype=int32)
  """
  check_arraylike("matrix_rank", M)
  M = _inexact("matrix_rank", M)
  if tol is not None:
    if rtol is not None:
      raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
    rtol = tol
  shape = aval_of(M).shape
  if len(shape) < 2:
    return reductions.any(M != 0).astype(np.int32)
  s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
  if rtol is None:
    eps = float(dtypes.finfo(aval_of(s).dtype).eps)
    rtol = reductions.max(s, axis=-1) * (max(shape[-2:]) * eps)
  else:
    rtol = creation.asarray(rtol)
  return reductions.sum(s > rtol[..., None], axis=-1).astype(np.int32)


# --- norms ---------------------------------------------------------------------------------------
def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
  """Vector p-norm over `axis` (all axes if None).

  Example:
    >>> jnp.linalg.vector_norm(jnp.array([3., 4.]))
    Array(5., dtype=float32)
  """
  check_arraylike("vector_norm", x)
  x = _inexact("vector_norm", x)
  if axis is None:
    out = vector_norm(x.ravel(), axis=0, ord=ord)
    return out.reshape((1,) * aval_of(x).ndim) if keepdims else out
  ax = axis if isinstance(axis, tuple) else (axis,)
  return _vector_norm(x, ax, keepdims, ord)


def _vector_norm(x, axis, keepdims, ord):
  absx = ufuncs.abs(x)
  if ord is None or ord == 2:
    return ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x)) if dtypes.is_complex(
        aval_of(x).dtype) else x * x, axis=axis, keepdims=keepdims))
  if ord == np.inf:  # (0 for an empty vector, as in JAX)
    return reductions.max(absx, axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return reductions.min(absx, axis=axis, keepdims=keepdims)
  if ord == 0:
    return reductions.sum(x != 0, axis=axis, keepdims=keepdims).astype(aval_of(absx).dtype)
  if ord == 1:
    return reductions.sum(absx, axis=axis, keepdims=keepdims)
  if isinstance(ord, str):
    raise ValueError(f"Invalid order '{ord}' for vector norm.")
  p = float(ord)
  return reductions.sum(absx ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
  """Matrix norm of the last two axes.

  Example:
    >>> jnp.linalg.matrix_norm(jnp.array([[3., 0.], [0., -4.]]), ord=2)
    Array(4., dtype=float32)
  """
  check_arraylike("matrix_norm", x)
  return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def norm(x, ord=None, axis=None, keepdims: bool = False):
  """Vector or matrix norm, as numpy.linalg.norm.

  Args:
    x: array.
    ord: the norm's order (see numpy.linalg.norm).
    axis: None, an axis (vector norm) or a pair of axes (matrix norm).
    keepdims: keep the reduced axes as size 1.

  Example:
    >>> jnp.linalg.norm(jnp.array([3., 4.]))
    Array(5., dtype=float32)
  """
  check_arraylike("norm", x)
  x = _inexact("norm", x)
  nd = aval_of(x).ndim
  if axis is None:
    if ord is None:
      out = ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x)), axis=None))
      return out.reshape((1,) * nd) if keepdims else out
    axis = tuple(range(nd))
  elif isinstance(axis, (int, np.integer)):
    axis = (int(axis),)
  else:
    axis = tuple(axis)
  axis = tuple(a % nd if nd else a for a in axis)
  if len(axis) == 1:
    return _vector_norm(x, axis, keepdims, ord)
  if len(axis) != 2:
    raise ValueError(f"Invalid axis values ({axis}) for norm; axis must be None, an integer or "
                     f"a pair of integers")
  row, col = axis
  if row == col:
    raise ValueError("Duplicate axes given.")
  absx = ufuncs.abs(x)
  if ord is None or ord == "fro":
    return ufuncs.sqrt(reductions.sum(absx * absx, axis=axis, keepdims=keepdims))
  if ord in (1, -1, np.inf, -np.inf):
    summed, picked = (row, col) if ord in (1, -1) else (col, row)
    summed_abs = reductions.sum(absx, axis=summed, keepdims=True)
    if ord in (1, np.inf):  # (0 for an empty matrix, as in JAX; the min has no such value)
      out = reductions.max(summed_abs, axis=picked, keepdims=True, initial=0)
    else:
      out = reductions.min(summed_abs, axis=picked, keepdims=True)
    return out if keepdims else shape_ops.squeeze(out, axis=(row, col))
  if ord in ("nuc", 2, -2):
    y = shape_ops.moveaxis(x, (row, col), (-2, -1))
    s = svd(y, compute_uv=False)
    if ord == 2:
      out = reductions.max(s, axis=-1, initial=0)  # (0 for an empty matrix, as in JAX)
    elif ord == -2:
      out = reductions.min(s, axis=-1)
    else:
      out = reductions.sum(s, axis=-1)
    if keepdims:
      out = shape_ops.expand_dims(shape_ops.expand_dims(out, min(row, col)), max(row, col))
    return out
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def cond(x, p=None):
  """Condition number of matrices in norm p (2-norm: ratio of extreme singular values).

  Example:
    >>> jnp.linalg.cond(jnp.array([[1., 0.], [0., 4.]]))
    Array(4., dtype=float32)
  """
  check_arraylike("cond", x)
  x = _inexact("cond", x)
  _check_matrix("cond", x, square=p not in (None, 2, -2))
  if p is None or p == 2 or p == -2:
    s = svd(x, compute_uv=False)
    return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
  r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
  # NaN from a singular matrix means infinite condition
  return ufuncs.where(ufuncs.isnan(r) & ~reductions.any(ufuncs.isnan(x), axis=(-2, -1)),
                      np.inf, r).astype(aval_of(r).dtype)


# --- products and array-API functions ------------------------------------------------------------
def multi_dot(arrays, *, precision=None):
  """The product of a chain of matrices (first and last may be vectors), as numpy.linalg.multi_dot.

  Example:
    >>> a, b, c = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((4, 1))
    >>> jnp.linalg.multi_dot([a, b, c])
    Array([[12.],
           [12.]], dtype=float32)
  """
  arrays = list(arrays)
  if len(arrays) < 2:
    raise ValueError(f"multi_dot requires at least two arrays, got {len(arrays)}")
  check_arraylike("multi_dot", *arrays)
  ops = [creation.asarray(a) for a in arrays]
  first_vec = aval_of(ops[0]).ndim == 1
  last_vec = aval_of(ops[-1]).ndim == 1
  if first_vec:
    ops[0] = ops[0][None, :]
  if last_vec:
    ops[-1] = ops[-1][:, None]
  for o in ops:
    if aval_of(o).ndim != 2:
      raise ValueError(f"multi_dot: arrays other than the first and last must be 2-dimensional, "
                       f"got shape {aval_of(o).shape}")
  out = _chain(ops, precision)
  if first_vec:
    out = out[0]
  if last_vec:
    out = out[..., 0]
  return out


def _chain(ops, precision):
  """The product in the cheapest order (dynamic programming over split points)."""
  dims = [aval_of(ops[0]).shape[0]] + [aval_of(o).shape[1] for o in ops]
  n = len(ops)
  cost = [[0] * n for _ in range(n)]
  split = [[0] * n for _ in range(n)]
  for length in range(1, n):
    for i in range(n - length):
      j = i + length
      cost[i][j] = None
      for k in range(i, j):
        c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
        if cost[i][j] is None or c < cost[i][j]:
          cost[i][j], split[i][j] = c, k

  def build(i, j):
    if i == j:
      return ops[i]
    k = split[i][j]
    return matmul(build(i, k), build(k + 1, j), precision=precision)
  return build(0, n - 1)


def outer(x1, x2, /):
  """Outer product of two vectors (1-D only, as the array API's linalg.outer).

  Example:
    >>> jnp.linalg.outer(jnp.array([1, 2]), jnp.array([3, 4]))
    Array([[3, 4],
           [6, 8]], dtype=int32)
  """
  check_arraylike("outer", x1, x2)
  x1, x2 = creation.asarray(x1), creation.asarray(x2)
  if aval_of(x1).ndim != 1 or aval_of(x2).ndim != 1:
    raise ValueError(f"Input arrays must be one-dimensional, but they are "
                     f"x1.ndim={aval_of(x1).ndim} and x2.ndim={aval_of(x2).ndim}")
  return contractions.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
  """Cross product of 3-vectors along `axis` (other axes broadcast).

  Example:
    >>> jnp.linalg.cross(jnp.array([1., 0, 0]), jnp.array([0., 1, 0]))
    Array([0., 0., 1.], dtype=float32)
  """
  check_arraylike("cross", x1, x2)
  x1, x2 = promote_dtypes(creation.asarray(x1), creation.asarray(x2))
  if aval_of(x1).shape[axis] != 3 or aval_of(x2).shape[axis] != 3:
    raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                     f"have shape[axis]={aval_of(x1).shape[axis]} and "
                     f"{aval_of(x2).shape[axis]}")
  a = shape_ops.moveaxis(x1, axis, -1)
  b = shape_ops.moveaxis(x2, axis, -1)
  c = shape_ops.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                       a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                       a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)
  return shape_ops.moveaxis(c, -1, axis)


def trace(x, /, *, offset: int = 0, dtype=None):
  """Sum of the diagonals of the last two axes.

  Example:
    >>> jnp.linalg.trace(jnp.array([[1., 2.], [3., 4.]]))
    Array(5., dtype=float32)
  """
  check_arraylike("trace", x)
  x = creation.asarray(x)
  if aval_of(x).ndim < 2:
    raise ValueError(f"trace requires an array of rank >= 2, got shape {aval_of(x).shape}")
  return reductions.sum(_diag(x, offset), axis=-1, dtype=dtype)


def diagonal(x, /, *, offset: int = 0):
  """The diagonals of the last two axes, shape (..., k).

  Example:
    >>> jnp.linalg.diagonal(jnp.array([[1., 2.], [3., 4.]]))
    Array([1., 4.], dtype=float32)
  """
  check_arraylike("diagonal", x)
  x = creation.asarray(x)
  if aval_of(x).ndim < 2:
    raise ValueError(f"diagonal requires an array of rank >= 2, got shape {aval_of(x).shape}")
  return _diag(x, offset)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
  """sum(conj(x1) * x2) along `axis` (other axes broadcast).

  Example:
    >>> jnp.linalg.vecdot(jnp.array([1., 2.]), jnp.array([3., 4.]))
    Array(11., dtype=float32)
  """
  check_arraylike("vecdot", x1, x2)
  x1, x2 = creation.asarray(x1), creation.asarray(x2)
  if aval_of(x1).shape[axis] != aval_of(x2).shape[axis]:
    raise ValueError(f"axes must match; got shapes {aval_of(x1).shape} and {aval_of(x2).shape} "
                     f"with axis={axis}")
  # (jax's dot_general takes the operands unpromoted: integers wider than the result refused)
  avals = (aval_of(x1), aval_of(x2))
  result = dtypes.promote_types_weak(*((a.dtype, a.weak_type) for a in avals))[0]
  contractions.check_integer_widths([a.dtype for a in avals],
                                    result if preferred_element_type is None
                                    else dtypes.canonicalize_dtype(preferred_element_type))
  x1, x2 = promote_dtypes(x1, x2)
  a = shape_ops.moveaxis(x1, axis, -1)
  b = shape_ops.moveaxis(x2, axis, -1)
  a = ufuncs.conj(a) if dtypes.is_complex(aval_of(a).dtype) else a
  return matmul(a[..., None, :], b[..., :, None], precision=precision,
                preferred_element_type=preferred_element_type)[..., 0, 0]


# --- tensors -------------------------------------------------------------------------------------
def tensorinv(a, ind: int = 2):
  """The inverse of a tensor seen as a matrix (first `ind` axes as rows).

  Example:
    >>> jnp.linalg.tensorinv(2 * jnp.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
  """
  check_arraylike("tensorinv", a)
  a = creation.asarray(a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer, got {ind}")
  shape = aval_of(a).shape
  rows, cols = shape[:ind], shape[ind:]
  prod_r, prod_c = int(np.prod(rows)), int(np.prod(cols))
  if prod_r != prod_c:
    raise ValueError(f"tensorinv: product of the first {ind} axes ({prod_r}) must equal the "
                     f"product of the rest ({prod_c}); got shape {shape}")
  return inv(a.reshape((prod_r, prod_c))).reshape(cols + rows)


def tensorsolve(a, b, axes=None):
  """Solve tensordot(a, x, x.ndim) = b for x.

  Example:
    >>> a = 2 * jnp.eye(4).reshape(2, 2, 2, 2)
    >>> jnp.linalg.tensorsolve(a, jnp.ones((2, 2)))
    Array([[0.5, 0.5],
           [0.5, 0.5]], dtype=float32)
  """
  check_arraylike("tensorsolve", a, b)
  a, b = creation.asarray(a), creation.asarray(b)
  if axes is not None:
    a = shape_ops.moveaxis(a, axes, tuple(range(aval_of(a).ndim - len(axes), aval_of(a).ndim)))
  b_shape = aval_of(b).shape
  x_shape = aval_of(a).shape[len(b_shape):]
  n_b, n_x = int(np.prod(b_shape)), int(np.prod(x_shape))
  if n_b != n_x:
    raise ValueError(f"tensorsolve: a's shape {aval_of(a).shape} does not make a square "
                     f"system for b of shape {b_shape}")
  return solve(a.reshape((n_b, n_x)), b.ravel()).reshape(x_shape)

