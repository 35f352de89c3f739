"""revax.scipy.linalg: SciPy's linear algebra on revax arrays, as jax.scipy.linalg.

Factorizations come from the revax.lax.linalg primitives; everything batches over leading axes,
differentiates and compiles. The Schur-based functions (schur, rsf2csf, sqrtm, funm) live in
linalg_schur.py.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.lax import linalg as lax_linalg
from revax._src.lax.control_flow import fori_loop
from revax._src.numpy import creation, linalg as np_linalg, reductions, shape_ops, ufuncs
from revax._src.numpy.util import aval_of, check_arraylike, promote_args_inexact

__all__ = [
  "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
  "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
  "fiedler", "fiedler_companion", "hadamard", "hankel", "helmert", "hessenberg", "hilbert", "inv",
  "invhilbert",
  "invpascal", "leslie", "lu", "lu_factor", "lu_solve", "pascal", "polar", "qr", "qr_multiply",
  "solve", "solve_sylvester", "solve_triangular", "svd", "toeplitz",
]


def _inexact(fun_name, *args):
  out = promote_args_inexact(fun_name, *args)
  return out[0] if len(out) == 1 else out


def _H(x):
  return np_linalg._H(x)


# --- factorizations ------------------------------------------------------------------------------
def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """Cholesky factor of Hermitian positive-definite matrices: upper U (a = U^H U) by default.

  Example:
    >>> revax.scipy.linalg.cholesky(jnp.array([[4., 2.], [2., 3.]]), lower=True)
    Array([[2.       , 0.       ],
           [1.       , 1.4142135]], dtype=float32)
  """
  del overwrite_a, check_finite
  check_arraylike("cholesky", a)
  a = _inexact("cholesky", a)
  np_linalg._check_matrix("cholesky", a)
  # only one triangle is read (no symmetrization, as SciPy): the upper one via its adjoint
  L = lax_linalg.cholesky(a if lower else _H(a), symmetrize_input=False)
  return L if lower else _H(L)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """(c, lower): the Cholesky factor and which triangle it is, for cho_solve.

  Example:
    >>> a = jnp.array([[4., 2.], [2., 3.]])
    >>> c, lower = revax.scipy.linalg.cho_factor(a)
    >>> lower
    False
  """
  return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
  """Solve a x = b given cho_factor(a).

  Example:
    >>> a = jnp.array([[4., 2.], [2., 3.]])
    >>> b = jnp.array([2., 1.])
    >>> sl = revax.scipy.linalg
    >>> sl.cho_solve(sl.cho_factor(a), b)
    Array([0.5, 0. ], dtype=float32)
  """
  del overwrite_b, check_finite
  c, lower = c_and_lower
  check_arraylike("cho_solve", c, b)
  c, b = _inexact("cho_solve", c, b)
  vector = aval_of(b).ndim == aval_of(c).ndim - 1
  if vector:
    b = b[..., None]
  if aval_of(b).shape[-2] != aval_of(c).shape[-1]:
    raise ValueError(f"cho_solve: shapes of c {aval_of(c).shape} and b "
                     f"{aval_of(b).shape} are incompatible")
  batch = shape_ops.broadcast_shapes(aval_of(c).shape[:-2], aval_of(b).shape[:-2])
  c = shape_ops.broadcast_to(c, batch + aval_of(c).shape[-2:])
  b = shape_ops.broadcast_to(b, batch + aval_of(b).shape[-2:])
  # a = L L^H: solve L y = b, then L^H x = y (with L = c^H when c is upper)
  y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)
  x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                                  conjugate_a=lower)
  return x[..., 0] if vector else x


_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
  """Solve op(a) x = b for triangular a; op is a, a^T or a^H for trans 0/'N', 1/'T', 2/'C'.

  Args:
    a: (..., n, n); only its `lower` (else upper) triangle is read.
    b: (..., n) or (..., n, k).

  Example:
    >>> L = jnp.array([[2., 0.], [1., 4.]])
    >>> revax.scipy.linalg.solve_triangular(L, jnp.array([2., 9.]), lower=True)
    Array([1., 2.], dtype=float32)
  """
  del overwrite_b, debug, check_finite
  check_arraylike("solve_triangular", a, b)
  if trans not in _TRANS:
    raise ValueError(f"Invalid 'trans' value {trans}")
  t = _TRANS[trans]
  a, b = _inexact("solve_triangular", a, b)
  vector = aval_of(b).ndim == aval_of(a).ndim - 1
  if vector:
    b = b[..., None]
  out = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=t > 0,
                                    conjugate_a=t == 2, unit_diagonal=unit_diagonal)
  return out[..., 0] if vector else out


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """LU decomposition a = P L U.

  Returns:
    (p, l, u) with p a permutation matrix, or (p @ l, u) when permute_l.

  Example:
    >>> a = jnp.array([[1., 2.], [3., 4.]])
    >>> p, l, u = revax.scipy.linalg.lu(a)
    >>> p
    Array([[0., 1.],
           [1., 0.]], dtype=float32)
    >>> l
    Array([[1.        , 0.        ],
           [0.33333334, 1.        ]], dtype=float32)
    >>> u
    Array([[3.       , 4.       ],
           [0.       , 0.6666666]], dtype=float32)
  """
  del overwrite_a, check_finite
  check_arraylike("lu", a)
  a = _inexact("lu", a)
  lu_, _, perm = lax_linalg.lu(a)
  shape = aval_of(a).shape
  m, n = shape[-2:]
  k = min(m, n)
  dtype = aval_of(a).dtype
  from revax._src.lax import linalg_util as U
  lower = U.tril(lu_[..., :, :k], -1) + creation.eye(m, k, dtype=dtype)
  upper = U.triu(lu_[..., :k, :])
  # p[perm[i], i] = 1, so that a = p @ l @ u
  p = (perm[..., :, None] == creation.arange(m, dtype=np.int32)).astype(dtype)
  p = shape_ops.swapaxes(p, -1, -2)
  if permute_l:
    return np_linalg.matmul(p, lower), upper
  return p, lower, upper


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
  """(lu, piv): the packed factors and LAPACK-style row swaps (0-based), for lu_solve.

  Example:
    >>> a = jnp.array([[1., 2.], [3., 4.]])
    >>> lu, piv = revax.scipy.linalg.lu_factor(a)
    >>> piv
    Array([1, 1], dtype=int32)
  """
  del overwrite_a, check_finite
  check_arraylike("lu_factor", a)
  a = _inexact("lu_factor", a)
  lu_, pivots, _ = lax_linalg.lu(a)
  return lu_, pivots


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
  """Solve a x = b (trans 0), a^T x = b (1) or a^H x = b (2) from lu_factor(a).

  Example:
    >>> a = jnp.array([[1., 2.], [3., 4.]])
    >>> sl = revax.scipy.linalg
    >>> sl.lu_solve(sl.lu_factor(a), jnp.array([5., 11.]))
    Array([1., 2.], dtype=float32)
  """
  del overwrite_b, check_finite
  lu_, piv = lu_and_piv
  check_arraylike("lu_solve", lu_, b)
  if trans not in (0, 1, 2):
    raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
  lu_, b = _inexact("lu_solve", lu_, b)
  m = aval_of(lu_).shape[-1]
  perm = lax_linalg.lu_pivots_to_permutation(creation.asarray(piv).astype(np.int32), m)
  vector = aval_of(b).ndim == 1
  if vector:
    b = b[:, None]
  if aval_of(b).shape[-2] != m:
    raise ValueError(f"lu_solve: b's shape {aval_of(b).shape} does not match the factors' "
                     f"{aval_of(lu_).shape}")
  batch = shape_ops.broadcast_shapes(aval_of(lu_).shape[:-2], aval_of(b).shape[:-2])
  lu_ = shape_ops.broadcast_to(lu_, batch + aval_of(lu_).shape[-2:])
  perm = shape_ops.broadcast_to(perm, batch + (m,))
  b = shape_ops.broadcast_to(b, batch + aval_of(b).shape[-2:])
  x = np_linalg._lu_solve(lu_, perm, b, trans)
  return x[..., 0] if vector else x


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
  """QR decomposition, as scipy.linalg.qr.

  Args:
    a: (..., m, n).
    mode: "full" (Q (m, m)), "economic" (Q (m, k)) or "r" (R only).
    pivoting: column pivoting (a[:, p] = Q R); p is returned last.

  Returns:
    (q, r), (r,) for mode "r", with p appended when pivoting.

  Example:
    >>> a = jnp.array([[3., 1.], [4., 2.], [0., 2.]])
    >>> q, r = revax.scipy.linalg.qr(a, mode="economic")
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    >>> jnp.allclose(q @ r, a, atol=1e-5)
    Array(True, dtype=bool)
  """
  del overwrite_a, lwork, check_finite
  check_arraylike("qr", a)
  a = _inexact("qr", a)
  if mode not in ("full", "r", "economic"):
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  outs = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
  q, r = outs[0], outs[1]
  p = (outs[2],) if pivoting else ()
  if mode == "r":
    return (r,) + p
  return (q, r) + p


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
  """Q @ c (mode "left") or c @ Q (mode "right") with Q from the economic QR of a, and R.

  Returns:
    (product, r), with the column permutation appended when pivoting.

  Example:
    >>> a = jnp.array([[3., 1.], [4., 2.]])
    >>> cq, r = revax.scipy.linalg.qr_multiply(a, jnp.eye(2))
    >>> cq.shape, r.shape
    ((2, 2), (2, 2))
  """
  del overwrite_a, overwrite_c
  check_arraylike("qr_multiply", a, c)
  a, c = _inexact("qr_multiply", a, c)
  if mode not in ("left", "right"):
    raise ValueError(f"mode must be 'left' or 'right', got {mode!r}")
  outs = lax_linalg.qr(a, pivoting=pivoting, full_matrices=False)
  q, r = outs[0], outs[1]
  if conjugate:
    q = ufuncs.conj(q)
  c_vec = aval_of(c).ndim == 1
  if mode == "left":
    out = np_linalg.matmul(q, c[:, None] if c_vec else c)
  else:
    out = np_linalg.matmul(c[None, :] if c_vec else c, q)
  if c_vec:
    out = out.ravel()
  return (out, r) + ((outs[2],) if pivoting else ())


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
  """Singular value decomposition: (u, s, vh), or s when compute_uv is False.

  Example:
    >>> a = jnp.array([[3., 0.], [0., -2.], [0., 0.]])
    >>> u, s, vh = revax.scipy.linalg.svd(a, full_matrices=False)
    >>> s
    Array([3., 2.], dtype=float32)
    >>> u.shape, vh.shape
    ((3, 2), (2, 2))
  """
  del overwrite_a, check_finite
  if lapack_driver not in ("gesdd", "gesvd"):
    raise ValueError(f"lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}")
  out = np_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
  return tuple(out) if compute_uv else out


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002
         check_finite: bool = True):
  """Eigen-decomposition of Hermitian matrices: (w, v), or w when eigvals_only.

  Args:
    a: (..., n, n); its `lower` (else upper) triangle is read.
    b: must be None (the generalized problem is not supported, as in JAX).

  Example:
    >>> w, v = revax.scipy.linalg.eigh(jnp.array([[2., 1.], [1., 2.]]))
    >>> w
    Array([1., 3.], dtype=float32)
  """
  del overwrite_a, overwrite_b, turbo, check_finite
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if type != 1:
    raise NotImplementedError("Only the type=1 case of eigh is implemented.")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  check_arraylike("eigh", a)
  a = _inexact("eigh", a)
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False)
  return w if eigvals_only else (w, v)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
  """Hessenberg form H = Q^H a Q (zeros below the first subdiagonal), and Q when calc_q.

  Example:
    >>> a = jnp.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 10.]])
    >>> h, q = revax.scipy.linalg.hessenberg(a, calc_q=True)
    >>> float(h[2, 0])
    0.0
    >>> jnp.allclose(q @ h @ q.T, a, atol=1e-4)
    Array(True, dtype=bool)
  """
  del overwrite_a, check_finite
  check_arraylike("hessenberg", a)
  a = _inexact("hessenberg", a)
  np_linalg._check_matrix("hessenberg", a)
  from revax._src.lax import linalg_util as U
  packed, taus = lax_linalg.hessenberg(a)
  h = U.triu(packed, -1)
  if not calc_q:
    return h
  n = aval_of(a).shape[-1]
  if n <= 1:
    return h, shape_ops.broadcast_to(creation.eye(n, dtype=aval_of(a).dtype), aval_of(a).shape)
  # Q = diag(1, Q'), Q' from the reflectors stored one row down
  q_sub = lax_linalg.householder_product(packed[..., 1:, :n - 1], taus)
  from revax._src.lax import shapes
  pad = [(0, 0, 0)] * (aval_of(a).ndim - 2) + [(1, 0, 0), (1, 0, 0)]
  q = shapes.pad(q_sub, np.zeros((), aval_of(a).dtype), tuple(pad))
  e0 = shapes.pad(creation.ones((1, 1), aval_of(a).dtype), np.zeros((), aval_of(a).dtype),
                  ((0, n - 1, 0), (0, n - 1, 0)))
  return h, q + e0


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
  """Eigenvalues of the symmetric tridiagonal matrix with diagonal d and off-diagonal e.

  Only eigvals_only=True is supported (as in JAX); select "a" (all) or "i" (an index range).

  Example:
    >>> d, e = jnp.array([2., 2.]), jnp.array([1.])
    >>> revax.scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
    Array([1., 3.], dtype=float32)
  """
  del tol, key
  if not eigvals_only:
    raise NotImplementedError("Calculation of eigenvectors is not implemented")
  check_arraylike("eigh_tridiagonal", d, e)
  d, e = _inexact("eigh_tridiagonal", d, e)
  n = aval_of(d).shape[-1]
  if aval_of(e).shape[-1] != n - 1:
    raise ValueError(f"e must have one element less than d, got shapes {aval_of(d).shape} and "
                     f"{aval_of(e).shape}")
  e_c = e.astype(aval_of(d).dtype) if not dtypes.is_complex(aval_of(e).dtype) else e
  t = _diag_matrix(d) + _diag_matrix(e_c, 1) + _diag_matrix(ufuncs.conj(e_c), -1)
  w = np_linalg.eigvalsh(t)
  if select == "a":
    return w
  if select == "i":
    lo, hi = (operator.index(i) for i in select_range)
    return w[..., lo:hi + 1]
  raise NotImplementedError(f"select={select!r} is not implemented (use 'a' or 'i')")


def _diag_matrix(v, k: int = 0):
  """Matrices with v (..., n) on diagonal k."""
  from revax._src.lax import linalg_util as U
  n = aval_of(v).shape[-1]
  m = n + abs(k)
  mat = U.vector_to_diag(v)
  pad = [(0, 0, 0)] * (aval_of(v).ndim - 1)
  from revax._src.lax import shapes
  if k > 0:
    pad += [(0, k, 0), (k, 0, 0)]
  elif k < 0:
    pad += [(-k, 0, 0), (0, -k, 0)]
  else:
    return mat
  del m
  return shapes.pad(mat, np.zeros((), aval_of(v).dtype), tuple(pad))


# --- solving, inverting, determinants ------------------------------------------------------------
def det(a, overwrite_a: bool = False, check_finite: bool = True):
  """Determinants of square matrices.

  Example:
    >>> revax.scipy.linalg.det(jnp.array([[1., 2.], [3., 4.]]))
    Array(-2., dtype=float32)
  """
  return np_linalg.det(a)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
  """Inverses of square matrices.

  Example:
    >>> revax.scipy.linalg.inv(jnp.array([[4., 7.], [2., 6.]]))
    Array([[ 0.6, -0.7],
           [-0.2,  0.4]], dtype=float32)
  """
  return np_linalg.inv(a)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
  """Solve a x = b; assume_a "pos" uses a Cholesky factorization, "sym"/"her"/"gen" LU.

  Example:
    >>> a = jnp.array([[4., 2.], [2., 3.]])
    >>> revax.scipy.linalg.solve(a, jnp.array([2., 1.]), assume_a="pos")
    Array([0.5, 0. ], dtype=float32)
  """
  del overwrite_a, overwrite_b, debug, check_finite
  if assume_a not in ("gen", "sym", "her", "pos"):
    raise ValueError(f"Expected assume_a to be one of 'gen', 'sym', 'her', or 'pos'; got "
                     f"{assume_a!r}")
  if assume_a != "pos":
    check_arraylike("solve", a, b)
    a, b = _inexact("solve", a, b)
    if aval_of(b).ndim == aval_of(a).ndim - 1 and aval_of(b).ndim > 1:
      return np_linalg.solve(a, b[..., None])[..., 0]
    return np_linalg.solve(a, b)
  return cho_solve(cho_factor(a, lower=lower), b)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
  """Solve A X + X B = C (as one linear system on vec(X); small matrices).

  The Kronecker form (I kron A + B^T kron I) vec(X) = vec(C) is solved with an LU factorization:
  exact and differentiable, at O((mn)^3) cost, which suits the small systems this is used for
  (JAX uses a Schur decomposition, which revax does not have).

  Example:
    >>> a, b = jnp.array([[2., 0.], [0., 3.]]), jnp.array([[1., 0.], [0., 1.]])
    >>> revax.scipy.linalg.solve_sylvester(a, b, jnp.array([[3., 6.], [4., 8.]]))
    Array([[1., 2.],
           [1., 2.]], dtype=float32)
  """
  del method, tol
  check_arraylike("solve_sylvester", A, B, C)
  A, B, C = _inexact("solve_sylvester", A, B, C)
  m, n = aval_of(C).shape[-2:]
  if aval_of(A).shape[-2:] != (m, m) or aval_of(B).shape[-2:] != (n, n):
    raise ValueError(f"solve_sylvester: shapes A {aval_of(A).shape}, B {aval_of(B).shape} and "
                     f"C {aval_of(C).shape} do not fit A X + X B = C")
  dtype = aval_of(C).dtype
  eye_m, eye_n = creation.eye(m, dtype=dtype), creation.eye(n, dtype=dtype)
  # row-major vec: vec(A X) = (A kron I_n) vec(X), vec(X B) = (I_m kron B^T) vec(X)
  kron = lambda p, q: (p[:, None, :, None] * q[None, :, None, :]).reshape(
      (aval_of(p).shape[0] * aval_of(q).shape[0], aval_of(p).shape[1] * aval_of(q).shape[1]))
  system = kron(A, eye_n) + kron(eye_m, shape_ops.swapaxes(B, -1, -2))
  return np_linalg.solve(system, C.reshape((m * n,))).reshape((m, n))


# --- matrix functions ----------------------------------------------------------------------------
def _pade_coefficients(m: int):
  """b_k of the [m/m] Pade approximant of exp: (2m-k)! m! / ((2m)! k! (m-k)!)."""
  f = math.factorial
  return [f(2 * m - k) * f(m) / (f(2 * m) * f(k) * f(m - k)) for k in range(m + 1)]


# Higham (2005): the largest 1-norm for which the [m/m] approximant is accurate to unit roundoff
_THETA = {np.dtype(np.float32): (7, 3.925724783138660), np.dtype(np.float64): (13, 5.371920351148152)}


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
  """Matrix exponential by scaling and squaring with a Pade approximant (degree 7 for single
  precision, 13 for double); NaN where more than max_squarings squarings would be needed.

  Args:
    A: (..., n, n).
    upper_triangular: A is upper triangular (the Pade solve is then triangular).
    max_squarings: the most squarings allowed.

  Example:
    >>> revax.scipy.linalg.expm(jnp.array([[0., 1.], [0., 0.]]))  # I + A: A @ A is zero
    Array([[1., 1.],
           [0., 1.]], dtype=float32)
  """
  check_arraylike("expm", A)
  A = _inexact("expm", A)
  shape = aval_of(A).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={shape}.")
  dtype = aval_of(A).dtype
  real = np.finfo(dtype).dtype
  m, theta = _THETA[np.dtype(real)]
  n = shape[-1]
  norm1 = reductions.max(reductions.sum(ufuncs.abs(A), axis=-2), axis=-1, initial=0)  # (0 x 0)
  s = ufuncs.maximum(0, ufuncs.ceil(ufuncs.log2(norm1 / theta))).astype(real)
  s = ufuncs.where(norm1 == 0, 0, s).astype(real)
  scaled = A / (2 ** s).astype(dtype)[..., None, None]
  eye = shape_ops.broadcast_to(creation.eye(n, dtype=dtype), shape)
  b = _pade_coefficients(m)
  powers = [eye, scaled]
  for _ in range(2, m + 1):
    powers.append(np_linalg.matmul(powers[-1], scaled) if len(powers) % 2 else
                  np_linalg.matmul(powers[len(powers) // 2], powers[len(powers) // 2]))
  u = sum(b[k] * powers[k] for k in range(1, m + 1, 2))
  v = sum(b[k] * powers[k] for k in range(0, m + 1, 2))
  if upper_triangular:
    r = solve_triangular(v - u, v + u)
  else:
    r = np_linalg.solve(v - u, v + u)
  s_int = s.astype(np.int32)

  def square(i, r):
    return ufuncs.where((i < s_int)[..., None, None], np_linalg.matmul(r, r), r)

  r = fori_loop(0, max_squarings, square, r)
  too_big = (s_int > max_squarings)[..., None, None]
  return ufuncs.where(too_big, np.nan, r).astype(dtype)


def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
  """The Frechet derivative of expm at A in direction E (the JVP of expm), and expm(A).

  Returns:
    (expm(A), L(A, E)), or L(A, E) when compute_expm is False.

  Example:
    >>> a = jnp.array([[1., 0.], [0., 2.]])
    >>> e = jnp.array([[1., 0.], [0., 0.]])
    >>> expm_a, frechet = revax.scipy.linalg.expm_frechet(a, e)
    >>> frechet  # d/dt expm(a + t e) at t = 0: e * exp(1) in the corner
    Array([[2.718283, 0.      ],
           [0.      , 0.      ]], dtype=float32)
  """
  from revax._src.autodiff import jvp
  if method not in (None, "SPS", "blockEnlarge"):
    raise ValueError(f"method not supported: {method!r}")
  check_arraylike("expm_frechet", A, E)
  A, E = _inexact("expm_frechet", A, E)
  if aval_of(A).shape != aval_of(E).shape:
    raise ValueError(f"expected A and E to have one shape, got {aval_of(A).shape} and "
                     f"{aval_of(E).shape}")
  primal, tangent = jvp(expm, (A,), (E,))
  return (primal, tangent) if compute_expm else tangent


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
  """Polar decomposition a = U P (side "right") or P U ("left"), U unitary, P positive
  semi-definite: by the QDWH iteration (method "qdwh", for a tall matrix on the right or a wide
  one on the left, as JAX) or from the SVD.

  Example:
    >>> a = jnp.array([[2., 0.], [0., -3.]])
    >>> u, p = revax.scipy.linalg.polar(a)
    >>> u
    Array([[ 1.,  0.],
           [ 0., -1.]], dtype=float32)
    >>> p
    Array([[2., 0.],
           [0., 3.]], dtype=float32)
  """
  del eps, max_iterations
  check_arraylike("polar", a)
  if side not in ("right", "left"):
    raise ValueError(f"side={side!r} is not understood; use 'right' or 'left'")
  if method not in ("qdwh", "svd"):
    raise ValueError(f"Unknown polar decomposition method {method!r}.")
  a = _inexact("polar", a)
  m, n = aval_of(a).shape[-2:]
  if method == "qdwh" and aval_of(a).ndim == 2 and (m >= n if side == "right" else m <= n):
    if side == "right":
      unitary, p, _, _ = lax_linalg.qdwh(a)
      return unitary, p
    unitary, _, _, _ = lax_linalg.qdwh(_H(a))
    unitary = _H(unitary)
    p = np_linalg.matmul(a, _H(unitary))
    return unitary, (p + _H(p)) / 2
  u_svd, s, vh = np_linalg.svd(a, full_matrices=False)
  unitary = np_linalg.matmul(u_svd, vh)
  s_c = s.astype(aval_of(a).dtype)
  if side == "right":
    p = np_linalg.matmul(_H(vh) * s_c[..., None, :], vh)
  else:
    p = np_linalg.matmul(u_svd * s_c[..., None, :], _H(u_svd))
  return unitary, p


# --- special matrices ----------------------------------------------------------------------------
def block_diag(*arrs):
  """A block-diagonal matrix of the given (at most 2-d) arrays.

  Example:
    >>> revax.scipy.linalg.block_diag(jnp.ones((1, 1)), 2 * jnp.ones((2, 2)))
    Array([[1., 0., 0.],
           [0., 2., 2.],
           [0., 2., 2.]], dtype=float32)
  """
  if not arrs:
    return creation.zeros((1, 0))
  check_arraylike("block_diag", *arrs)
  arrs = [shape_ops.atleast_2d(creation.asarray(a)) for a in arrs]
  from revax._src.numpy.util import promote_dtypes
  arrs = promote_dtypes(*arrs)
  bad = [aval_of(a).shape for a in arrs if aval_of(a).ndim != 2]
  if bad:
    raise ValueError(f"Arguments to block_diag must have at most 2 dimensions, got {bad[0]}")
  total = sum(aval_of(a).shape[1] for a in arrs)
  rows, col = [], 0
  for a in arrs:
    r, c = aval_of(a).shape
    from revax._src.lax import shapes
    rows.append(shapes.pad(a, np.zeros((), aval_of(a).dtype),
                           ((0, 0, 0), (col, total - col - c, 0))))
    col += c
  return shape_ops.concatenate(rows, axis=0)


def toeplitz(c, r=None):
  """The Toeplitz matrix with first column c and first row r (r defaults to conj(c)).

  Example:
    >>> revax.scipy.linalg.toeplitz(jnp.array([1, 2, 3]))
    Array([[1, 2, 3],
           [2, 1, 2],
           [3, 2, 1]], dtype=int32)
  """
  check_arraylike("toeplitz", c)
  c = creation.asarray(c)
  if r is None:
    r = ufuncs.conj(c)
  else:
    check_arraylike("toeplitz", r)
    r = creation.asarray(r)
  c, r = _flat_promote(c, r)
  nr, nc = aval_of(c).shape[-1], aval_of(r).shape[-1]
  i = creation.arange(nr)[:, None]
  j = creation.arange(nc)[None, :]
  vals = shape_ops.concatenate([r[..., :0:-1], c], axis=-1)  # r reversed (without r[0]), then c
  idx = (i - j) + (nc - 1)
  return vals[..., idx]


def _flat_promote(*xs):
  from revax._src.numpy.util import promote_dtypes
  return promote_dtypes(*(x.ravel() if aval_of(x).ndim != 1 else x for x in xs))


def hankel(c, r=None):
  """The Hankel matrix with first column c and last row r (r defaults to zeros).

  Example:
    >>> revax.scipy.linalg.hankel(jnp.array([1, 2, 3]))
    Array([[1, 2, 3],
           [2, 3, 0],
           [3, 0, 0]], dtype=int32)
  """
  check_arraylike("hankel", c)
  c = creation.asarray(c).ravel()
  r = creation.zeros_like(c) if r is None else creation.asarray(r).ravel()
  c, r = _flat_promote(c, r)
  nr, nc = aval_of(c).shape[0], aval_of(r).shape[0]
  vals = shape_ops.concatenate([c, r[1:]], axis=0)
  idx = creation.arange(nr)[:, None] + creation.arange(nc)[None, :]
  return vals[idx]


def circulant(c):
  """The circulant matrix whose first column is c.

  Example:
    >>> revax.scipy.linalg.circulant(jnp.array([1, 2, 3]))
    Array([[1, 3, 2],
           [2, 1, 3],
           [3, 2, 1]], dtype=int32)
  """
  check_arraylike("circulant", c)
  c = creation.asarray(c)
  n = aval_of(c).shape[-1]
  idx = (creation.arange(n)[:, None] - creation.arange(n)[None, :]) % n
  return c[..., idx]


def companion(a):
  """The companion matrix of the polynomial with coefficients a (highest degree first).

  Example:
    >>> revax.scipy.linalg.companion(jnp.array([1., -3., 2.]))
    Array([[ 3., -2.],
           [ 1.,  0.]], dtype=float32)
  """
  check_arraylike("companion", a)
  a = creation.asarray(a)
  if aval_of(a).ndim != 1:
    raise ValueError("Incorrect shape for `a`.  `a` must be one-dimensional.")
  n = aval_of(a).shape[0]
  if n < 2:
    raise ValueError("The length of `a` must be at least 2.")
  first = -a[1:] / a[0]
  dtype = aval_of(first).dtype
  sub = creation.eye(n - 2, n - 1, dtype=dtype) if n > 2 else creation.zeros((0, 1), dtype)
  return shape_ops.concatenate([first[None, :], sub], axis=0)


def fiedler(a):
  """The Fiedler matrix |a_i - a_j|.

  Example:
    >>> revax.scipy.linalg.fiedler(jnp.array([1., 4., 12.]))
    Array([[ 0.,  3., 11.],
           [ 3.,  0.,  8.],
           [11.,  8.,  0.]], dtype=float32)
  """
  check_arraylike("fiedler", a)
  a = creation.asarray(a)
  if aval_of(a).ndim != 1:
    raise ValueError("Input 'a' must be a 1D array.")
  return ufuncs.abs(a[:, None] - a[None, :])


def fiedler_companion(a):
  """The Fiedler companion matrix of the polynomial with coefficients a.

  Example:
    >>> revax.scipy.linalg.fiedler_companion(jnp.array([1., -3., 2.]))
    Array([[ 3., -2.],
           [ 1.,  0.]], dtype=float32)
  """
  check_arraylike("fiedler_companion", a)
  a = creation.asarray(a)
  if aval_of(a).ndim != 1:
    raise ValueError("Input 'a' must be a 1-D array.")
  n = aval_of(a).shape[0]
  if n < 2:
    raise ValueError("Input 'a' must have at least two elements.")
  a = a / a[0] if n else a
  m = n - 1
  dtype = aval_of(a).dtype if dtypes.is_inexact(aval_of(a).dtype) else np.float32
  a = a.astype(dtype)
  if m == 1:
    return -a[1:].reshape((1, 1))
  entries = _fiedler_full(m)
  vals = shape_ops.stack([coef * (a[k] if k > 0 else creation.ones((), dtype))
                          for _, _, k, coef in entries])
  r = np.array([e[0] for e in entries])
  c = np.array([e[1] for e in entries])
  return creation.zeros((m, m), dtype).at[r, c].set(vals)


def _fiedler_full(m):
  """The Fiedler companion pattern from its definition as a product of 2x2 blocks, computed on
  symbolic indices: the matrix is F = F_odd @ F_even with F_k = diag(I, [[-a_k, 1], [1, 0]], I)."""
  # symbolic entries: each entry is a dict {k: coefficient} with k = 0 meaning the constant 1
  def block_product(blocks_at):
    mat = [[{} for _ in range(m)] for _ in range(m)]
    for i in range(m):
      mat[i][i] = {0: 1}
    for k in blocks_at:
      # block occupying rows/cols (k-1, k) (0-based), coefficient index k
      f = [[{} for _ in range(m)] for _ in range(m)]
      for i in range(m):
        f[i][i] = {0: 1}
      if k == m:  # the last, 1x1 block: -a_m
        f[k - 1][k - 1] = {k: -1}
      else:
        f[k - 1][k - 1] = {k: -1}
        f[k - 1][k] = {0: 1}
        f[k][k - 1] = {0: 1}
        f[k][k] = {}
      mat = _sym_matmul(mat, f)
    return mat
  odd = block_product([k for k in range(1, m + 1) if k % 2 == 1])
  even = block_product([k for k in range(1, m + 1) if k % 2 == 0])
  prod = _sym_matmul(odd, even)
  entries = []
  for i in range(m):
    for j in range(m):
      for k, coef in prod[i][j].items():
        entries.append((i, j, k, coef))
  return entries


def _sym_matmul(x, y):
  m = len(x)
  out = [[{} for _ in range(m)] for _ in range(m)]
  for i in range(m):
    for j in range(m):
      acc = {}
      for t in range(m):
        if x[i][t] and y[t][j]:
          for k1, c1 in x[i][t].items():
            for k2, c2 in y[t][j].items():
              if k1 and k2:
                raise AssertionError("Fiedler blocks never multiply two coefficients")
              k = k1 or k2
              acc[k] = acc.get(k, 0) + c1 * c2
      out[i][j] = {k: c for k, c in acc.items() if c}
  return out


def hadamard(n: int, dtype=int):
  """The n x n Hadamard matrix (Sylvester's construction; n a power of 2).

  Example:
    >>> revax.scipy.linalg.hadamard(2)
    Array([[ 1,  1],
           [ 1, -1]], dtype=int32)
  """
  n = operator.index(n)
  if n < 1 or n & (n - 1):
    raise ValueError("n must be an positive a power of 2 integer")
  h = np.array([[1]])
  while h.shape[0] < n:
    h = np.block([[h, h], [h, -h]])
  return creation.asarray(h, dtype=dtype)


def helmert(n: int, full: bool = False):
  """The Helmert matrix of order n (the first row dropped unless full).

  Example:
    >>> revax.scipy.linalg.helmert(3)
    Array([[ 0.70710677, -0.70710677,  0.        ],
           [ 0.4082483 ,  0.4082483 , -0.8164966 ]], dtype=float32)
  """
  n = operator.index(n)
  h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
  d = np.arange(n) * np.arange(1, n + 1)
  h[0] = 1
  d[0] = n
  out = h / np.sqrt(d)[:, None]
  out = out if full else out[1:]
  return creation.asarray(out, dtype=_default_float())


def _default_float():
  return dtypes.default_float_dtype()


def hilbert(n: int):
  """The Hilbert matrix 1 / (i + j + 1).

  Example:
    >>> revax.scipy.linalg.hilbert(3)
    Array([[1.        , 0.5       , 0.33333334],
           [0.5       , 0.33333334, 0.25      ],
           [0.33333334, 0.25      , 0.2       ]], dtype=float32)
  """
  n = operator.index(n)
  i = np.arange(n)
  return creation.asarray(1.0 / (i[:, None] + i[None, :] + 1), dtype=_default_float())


def invhilbert(n: int):
  """The inverse of the Hilbert matrix of order n (exact integers, in floating point).

  Example:
    >>> revax.scipy.linalg.invhilbert(3)
    Array([[   9.,  -36.,   30.],
           [ -36.,  192., -180.],
           [  30., -180.,  180.]], dtype=float32)
  """
  n = operator.index(n)
  out = np.empty((n, n), np.float64)
  c = math.comb
  for i in range(n):
    for j in range(n):
      out[i, j] = ((-1) ** (i + j) * (i + j + 1) * c(n + i, n - j - 1) * c(n + j, n - i - 1)
                   * c(i + j, i) ** 2)
  return creation.asarray(out, dtype=_default_float())


def pascal(n: int, kind: str | None = None):
  """The Pascal matrix: "symmetric" (default), "lower" or "upper".

  Example:
    >>> revax.scipy.linalg.pascal(3)
    Array([[1., 1., 1.],
           [1., 2., 3.],
           [1., 3., 6.]], dtype=float32)
  """
  n = operator.index(n)
  kind = "symmetric" if kind is None else kind
  if kind not in ("symmetric", "lower", "upper"):
    raise ValueError(f"Expected kind to be one of 'symmetric', 'lower', or 'upper'; got {kind!r}")
  i = np.arange(n)
  lower = np.array([[math.comb(int(r), int(col)) for col in i] for r in i], np.float64)
  out = {"lower": lower, "upper": lower.T, "symmetric": lower @ lower.T}[kind]
  return creation.asarray(out, dtype=_default_float())


def invpascal(n: int, kind: str | None = None):
  """The inverse of the Pascal matrix of order n.

  Example:
    >>> revax.scipy.linalg.invpascal(3)
    Array([[ 3., -3.,  1.],
           [-3.,  5., -2.],
           [ 1., -2.,  1.]], dtype=float32)
  """
  n = operator.index(n)
  kind = "symmetric" if kind is None else kind
  if kind not in ("symmetric", "lower", "upper"):
    raise ValueError(f"Expected kind to be one of 'symmetric', 'lower', or 'upper'; got {kind!r}")
  i = np.arange(n)
  inv_lower = np.array([[(-1) ** (int(r) - int(col)) * math.comb(int(r), int(col)) for col in i]
                        for r in i], np.float64)
  out = {"lower": inv_lower, "upper": inv_lower.T,
         "symmetric": inv_lower.T @ inv_lower}[kind]
  return creation.asarray(out, dtype=_default_float())


def leslie(f, s):
  """The Leslie matrix of fecundities f (n,) and survival rates s (n - 1,).

  Example:
    >>> revax.scipy.linalg.leslie(jnp.array([0.1, 2., 1.]), jnp.array([0.2, 0.8]))
    Array([[0.1, 2. , 1. ],
           [0.2, 0. , 0. ],
           [0. , 0.8, 0. ]], dtype=float32)
  """
  check_arraylike("leslie", f, s)
  f, s = _flat_promote(creation.asarray(f), creation.asarray(s))
  n = aval_of(f).shape[-1]
  if aval_of(s).shape[-1] != n - 1:
    raise ValueError(f"Incorrect lengths for f and s. The length of s must be one less than the "
                     f"length of f; got {n} and {aval_of(s).shape[-1]}")
  dtype = aval_of(f).dtype
  below = _diag_matrix(s, -1) if n > 1 else creation.zeros((1, 1), dtype)
  return shape_ops.concatenate([f[None, :], below[1:]], axis=0)


def convolution_matrix(a, n: int, mode: str = "full"):
  """The matrix A with A @ v == numpy.convolve(a, v, mode) for v of length n.

  Example:
    >>> revax.scipy.linalg.convolution_matrix(jnp.array([1., 2.]), 3)
    Array([[1., 0., 0.],
           [2., 1., 0.],
           [0., 2., 1.],
           [0., 0., 2.]], dtype=float32)
  """
  check_arraylike("convolution_matrix", a)
  a = creation.asarray(a)
  n = operator.index(n)
  if aval_of(a).ndim != 1:
    raise ValueError("convolution_matrix expects a one-dimensional a")
  if n <= 0:
    raise ValueError(f"n must be a positive integer, got {n}")
  m = aval_of(a).shape[0]
  if mode == "full":
    rows, start = m + n - 1, 0
  elif mode == "same":
    rows, start = max(m, n), (min(m, n) - 1) // 2
  elif mode == "valid":
    rows, start = max(m, n) - min(m, n) + 1, min(m, n) - 1
  else:
    raise ValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}")
  i = np.arange(rows)[:, None] + start
  j = np.arange(n)[None, :]
  k = i - j
  valid = (k >= 0) & (k < m)
  vals = a[np.clip(k, 0, m - 1)]
  return ufuncs.where(valid, vals, 0).astype(aval_of(a).dtype)


def dft(n: int, scale: str | None = None, *, dtype=None):
  """The n x n discrete Fourier transform matrix exp(-2 pi i jk / n), optionally scaled by
  1/n ("n") or 1/sqrt(n) ("sqrtn").

  Example:
    >>> m = revax.scipy.linalg.dft(4)
    >>> x = jnp.array([1., 2., 3., 4.])
    >>> jnp.allclose(m @ x, jnp.fft.fft(x), atol=1e-5)
    Array(True, dtype=bool)
  """
  n = operator.index(n)
  if scale not in (None, "n", "sqrtn"):
    raise ValueError(f"scale must be None, 'n' or 'sqrtn', got {scale!r}")
  cdt = np.dtype(dtype) if dtype is not None else np.dtype(
      np.complex128 if _default_float() == np.float64 else np.complex64)
  jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)
  out = np.exp(-2j * np.pi * jk / max(n, 1))
  if scale == "n":
    out = out / n
  elif scale == "sqrtn":
    out = out / math.sqrt(n)
  return creation.asarray(out.astype(cdt))
