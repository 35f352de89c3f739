"""The Schur-based functions of revax.scipy.linalg: schur, rsf2csf, sqrtm and funm, as
jax.scipy.linalg computes them (on LAPACK's ?gees, lax.linalg.schur).

- `schur(a, output)`: the real (quasi-triangular) or complex (triangular) Schur form.
- `rsf2csf(T, Z)`: a real Schur form made complex by Givens rotations on each 2x2 block whose
  subdiagonal entry is not negligible (batched over leading axes).
- `sqrtm(A)`: the complex Schur method of Björck and Hammarling: sqrt of the triangular factor
  column by column, then Z sqrt(T) Z^H (always complex, as in JAX).
- `funm(A, func)`: func on the eigenvalues of the complex Schur form, spread over the
  triangle by Parlett's recurrence (Golub and Van Loan's algorithm 11.1.1).

Derivatives: schur has none (NotImplementedError, as JAX), so neither have these.
"""
from __future__ import annotations

import numpy as np

from revax._src.core import dtypes
from revax._src.jit import jit
from revax._src.lax import convenience as lax_conv
from revax._src.lax.control_flow import cond, fori_loop
from revax._src.lax.linalg_schur import schur as lax_schur
from revax._src.numpy import creation, functional, matrices, reductions, ufuncs
from revax._src.numpy import linalg as np_linalg

__all__ = ["funm", "rsf2csf", "schur", "sqrtm"]


def _to_complex(dtype):
  return np.dtype(np.complex128 if np.dtype(dtype) in (np.float64, np.complex128)
                  else np.complex64)


def schur(a, output: str = "real"):
  """The Schur decomposition a = Z T Z^H (LAPACK ?gees on the host, as JAX on CPU).

  Args:
    a: array (..., n, n).
    output: "real" (T quasi upper triangular for real input) or "complex" (T upper
      triangular).

  Returns:
    (T, Z), both of a's shape.

  Example:
    >>> t, z = revax.scipy.linalg.schur(jnp.array([[0., 2.], [-2., 0.]]))
    >>> t
    Array([[ 0.,  2.],
           [-2.,  0.]], dtype=float32)
  """
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got {output=}.")
  return _schur(a, output)


@jit(static_argnames=("output",))
def _schur(a, output):
  if output == "complex":
    a = a.astype(_to_complex(a.dtype))
  return lax_schur(a)


# --- rsf2csf -------------------------------------------------------------------------------------
def _rsf2csf_2d(T, Z):
  dtype = np.result_type(_to_complex(T.dtype), _to_complex(Z.dtype))
  T, Z = T.astype(dtype), Z.astype(dtype)
  eps = dtypes.finfo(dtype).eps
  n = T.shape[0]
  if n == 1:
    return T, Z

  def update(m, T, Z):
    mu = np_linalg.eigvals(lax_conv.dynamic_slice_in_dim(
        lax_conv.dynamic_slice_in_dim(T, m - 1, 2, 0), m - 1, 2, 1)) - T[m, m]
    r = np_linalg.norm(creation.array([mu[0], T[m, m - 1]])).astype(dtype)
    c, s = mu[0] / r, T[m, m - 1] / r
    G = creation.array([[c.conj(), s], [-s, c]], dtype=dtype)
    rows = lax_conv.dynamic_slice_in_dim(T, m - 1, 2, 0)
    col_mask = creation.arange(n) >= m - 1
    rows = ufuncs.where(~col_mask, rows, G @ ufuncs.where(col_mask, rows, 0))
    T = lax_conv.dynamic_update_slice_in_dim(T, rows, m - 1, 0)
    cols = lax_conv.dynamic_slice_in_dim(T, m - 1, 2, 1)
    row_mask = creation.arange(n)[:, None] < m + 1
    cols = ufuncs.where(~row_mask, cols, ufuncs.where(row_mask, cols, 0) @ G.conj().T)
    T = lax_conv.dynamic_update_slice_in_dim(T, cols, m - 1, 1)
    zcols = lax_conv.dynamic_slice_in_dim(Z, m - 1, 2, 1)
    Z = lax_conv.dynamic_update_slice_in_dim(Z, zcols @ G.conj().T, m - 1, 1)
    return T, Z

  def step(i, TZ):
    m = n - i
    T, Z = TZ
    big = abs(T[m, m - 1]) > eps * (abs(T[m - 1, m - 1]) + abs(T[m, m]))
    T, Z = cond(big, update, lambda m, T, Z: (T, Z), m, T, Z)
    return T.at[m, m - 1].set(0.0), Z

  return fori_loop(1, n, step, (T, Z))


def rsf2csf(T, Z, check_finite: bool = True):
  """Convert a real Schur form (T, Z) to the complex Schur form.

  Args:
    T: real Schur form (..., n, n) (as `schur` returns).
    Z: its Schur vectors (..., n, n); batch dims broadcast with T's.
    check_finite: unused (as in JAX).

  Returns:
    (T, Z) complex: T upper triangular, Z unitary, with Z T Z^H the same matrix.

  Example:
    >>> t, z = revax.scipy.linalg.rsf2csf(jnp.array([[0., 2.], [-2., 0.]]), jnp.eye(2))
    >>> jnp.round(t, 4)
    Array([[0.+2.j, 0.+0.j],
           [0.+0.j, 0.-2.j]], dtype=complex64)
  """
  del check_finite
  T, Z = creation.asarray(T), creation.asarray(Z)
  if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
    raise ValueError("Input 'T' must be square.")
  if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
    raise ValueError("Input 'Z' must be square.")
  if T.shape[-1] != Z.shape[-1]:
    raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
  return _rsf2csf(T, Z)


@jit
def _rsf2csf(T, Z):
  return functional.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


# --- sqrtm ---------------------------------------------------------------------------------------
def _sqrtm_triu(T):
  """The upper-triangular square root of upper-triangular T (Björck and Hammarling, 1983)."""
  diag = ufuncs.sqrt(matrices.diag(T))
  n = diag.size
  U = matrices.diag(diag)

  def i_loop(l, data):
    j, U = data
    i = j - 1 - l
    s = fori_loop(i + 1, j, lambda k, val: val + U[i, k] * U[k, j], creation.zeros((), U.dtype))
    value = ufuncs.where(T[i, j] == s, 0.0, (T[i, j] - s) / (diag[i] + diag[j]))
    return j, U.at[i, j].set(value)

  def j_loop(j, U):
    return fori_loop(0, j, i_loop, (j, U))[1]

  return fori_loop(0, n, j_loop, U)


@jit
def _sqrtm(A):
  T, Z = schur(A, output="complex")
  return (Z @ _sqrtm_triu(T)) @ Z.conj().T


def sqrtm(A, blocksize: int = 1):
  """The matrix square root of A by the complex Schur method (always complex, as in JAX).

  Args:
    A: array (n, n).
    blocksize: must be 1 (the blocked algorithm is not implemented, as in JAX).

  Returns:
    X (n, n), complex, with X @ X = A.

  Example:
    >>> revax.scipy.linalg.sqrtm(jnp.array([[4., 0.], [0., 9.]]))
    Array([[2.+0.j, 0.+0.j],
           [0.+0.j, 3.+0.j]], dtype=complex64)
  """
  if blocksize > 1:
    raise NotImplementedError("Blocked version is not implemented yet.")
  return _sqrtm(A)


# --- funm ----------------------------------------------------------------------------------------
@jit
def _parlett(F, T):
  """Golub and Van Loan's algorithm 11.1.1: F's strict upper triangle from its diagonal."""
  n = T.shape[0]
  minden = abs(T[0, 0])

  def inner(i, p_F_minden):
    p, F, minden = p_F_minden
    j = i + p
    s = T[i - 1, j - 1] * (F[j - 1, j - 1] - F[i - 1, i - 1])
    ind = (creation.arange(n) >= i) & (creation.arange(n) < j - 1)
    s = s + (ufuncs.where(ind, T[i - 1], 0) @ ufuncs.where(ind, F[:, j - 1], 0)
             - ufuncs.where(ind, F[i - 1], 0) @ ufuncs.where(ind, T[:, j - 1], 0))
    den = T[j - 1, j - 1] - T[i - 1, i - 1]
    s = ufuncs.where(den != 0, s / den, s)
    return p, F.at[i - 1, j - 1].set(s), ufuncs.minimum(minden, abs(den))

  def outer(p, F_minden):
    _, F, minden = fori_loop(1, n - p + 1, inner, (p, *F_minden))
    return F, minden

  return fori_loop(1, n, outer, (F, minden))


def funm(A, func, disp: bool = True):
  """A matrix function: `func` applied to the eigenvalues of A (through its Schur form).

  Args:
    A: array (n, n).
    func: a function of an array of (complex) eigenvalues, elementwise.
    disp: if False, also return an estimate of the relative error.

  Returns:
    F (n, n), complex; with `disp=False`, (F, err).

  Example:
    >>> f = revax.scipy.linalg.funm(jnp.array([[1., 0.], [0., 2.]]), jnp.exp)
    >>> jnp.round(f.real, 4)
    Array([[2.7183, 0.    ],
           [0.    , 7.3891]], dtype=float32)
  """
  A = creation.asarray(A)
  if A.ndim != 2 or A.shape[0] != A.shape[1]:
    raise ValueError("expected square array_like input")
  T, Z = schur(A)
  T, Z = rsf2csf(T, Z)
  F = matrices.diag(func(matrices.diag(T))).astype(T.dtype.char)
  F, minden = _parlett(F, T)
  F = Z @ F @ Z.conj().T
  if disp:
    return F
  if F.dtype.char.lower() == "f":  # (as JAX: the float16 branch is overwritten below it)
    tol = dtypes.finfo(np.float32).eps
  else:
    tol = dtypes.finfo(np.float64).eps
  minden = ufuncs.where(minden == 0.0, tol, minden)
  err = ufuncs.where(reductions.any(ufuncs.isinf(F)), np.inf, ufuncs.minimum(1, ufuncs.maximum(
      tol, (tol / minden) * np_linalg.norm(matrices.triu(T, 1), 1))))
  return F, err

