"""Krylov solvers of A x = b for a linear operator A given as a matrix or a function (as
jax.scipy.sparse.linalg): conjugate gradients `cg` (Hermitian positive-definite A) and `bicgstab`
(any A), with an optional preconditioner M ~ A^-1 and SciPy's non-legacy tolerance
||r|| <= max(tol ||b||, atol). b, x0 and A's results may be pytrees of arrays; the vector
operations act leaf by leaf and the inner products sum over leaves.

The iterations are a `while_loop`, so values, jit, vmap and forward-mode derivatives work;
JAX differentiates these solvers implicitly through `lax.custom_linear_solve`, which revax does
not have yet, so reverse-mode differentiation raises while_loop's error.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.lax.control_flow.loops import while_loop
from revax._src.lax.dot import Precision
from revax._src.numpy import contractions, creation, ufuncs
from revax._src.numpy.util import result_type_of
from revax._src.tree_util import tree_leaves, tree_map, tree_structure

_dot = functools.partial(contractions.dot, precision=Precision.HIGHEST)
_vdot = functools.partial(contractions.vdot, precision=Precision.HIGHEST)


# --- vector operations on pytrees -----------------------------------------------------------------
def _vdot_real(x, y):
  """Re(x^H y) with the real-imaginary cross terms dropped: a real number (CG's inner products
  z^H M z are real for Hermitian M)."""
  result = _vdot(ufuncs.real(x), ufuncs.real(y))
  if dtypes.is_complex(get_aval(x).dtype) or dtypes.is_complex(get_aval(y).dtype):
    result = result + _vdot(ufuncs.imag(x), ufuncs.imag(y))
  return result


def _vdot_real_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot_real, x, y)))


def _vdot_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot, x, y)))


def _scale(scalar, tree):
  return tree_map(lambda leaf: scalar * leaf, tree)


def _add(x, y):
  return tree_map(operator.add, x, y)


def _sub(x, y):
  return tree_map(operator.sub, x, y)


def _identity(x):
  return x


def _as_operator(f):
  """A function computing A(x) from a callable, a square matrix, or an object with __matmul__."""
  if callable(f):
    return f
  if isinstance(f, np.ndarray) or (hasattr(f, "ndim") and hasattr(f, "dtype")):
    if f.ndim != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return functools.partial(_dot, f)
  if hasattr(f, "__matmul__"):
    if hasattr(f, "shape") and (len(f.shape) != 2 or f.shape[0] != f.shape[1]):
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return functools.partial(operator.matmul, f)
  raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _result_dtype(tree):
  return result_type_of(*tree_leaves(tree))[0]


# --- conjugate gradients ---------------------------------------------------------------------------
def _cg_solve(A, b, x0, *, maxiter, tol, atol, M):
  tolerance2 = ufuncs.maximum(ufuncs.square(tol) * _vdot_real_tree(b, b), ufuncs.square(atol))
  r0 = _sub(b, A(x0))
  p0 = z0 = M(r0)
  dtype = _result_dtype(p0)
  gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

  def cond(state):
    _, r, gamma, _, k = state
    residual2 = ufuncs.real(gamma) if M is _identity else _vdot_real_tree(r, r)
    return (residual2 > tolerance2) & (k < maxiter)

  def body(state):
    x, r, gamma, p, k = state
    ap = A(p)
    alpha = gamma / _vdot_real_tree(p, ap).astype(dtype)
    x = _add(x, _scale(alpha, p))
    r = _sub(r, _scale(alpha, ap))
    z = M(r)
    gamma_next = _vdot_real_tree(r, z).astype(dtype)
    p = _add(z, _scale(gamma_next / gamma, p))
    return x, r, gamma_next, p, k + 1

  return while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


# --- BiCGSTAB --------------------------------------------------------------------------------------
def _bicgstab_solve(A, b, x0, *, maxiter, tol, atol, M):
  tolerance2 = ufuncs.maximum(ufuncs.square(tol) * _vdot_real_tree(b, b), ufuncs.square(atol))
  r0 = _sub(b, A(x0))
  one = creation.asarray(1, dtype=_result_dtype(b))

  def cond(state):
    r, k = state[1], state[-1]
    # k < 0 marks a breakdown (rho, alpha or omega reached 0)
    return (_vdot_real_tree(r, r) > tolerance2) & (k < maxiter) & (k >= 0)

  def body(state):
    x, r, rhat, alpha, omega, rho, p, q, k = state
    rho_next = _vdot_tree(rhat, r)
    beta = rho_next / rho * alpha / omega
    p = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
    phat = M(p)
    q = A(phat)
    alpha = rho_next / _vdot_tree(rhat, q)
    s = _sub(r, _scale(alpha, q))
    converged = _vdot_real_tree(s, s) < tolerance2
    shat = M(s)
    t = A(shat)
    omega = _vdot_tree(t, s) / _vdot_tree(t, t)
    x_half = _add(x, _scale(alpha, phat))
    x = tree_map(functools.partial(ufuncs.where, converged), x_half,
                 _add(x, _add(_scale(alpha, phat), _scale(omega, shat))))
    r = tree_map(functools.partial(ufuncs.where, converged), s, _sub(s, _scale(omega, t)))
    k = ufuncs.where((omega == 0) | (alpha == 0), -11, k + 1)
    k = ufuncs.where(rho_next == 0, -10, k)
    return x, r, rhat, alpha, omega, rho_next, p, q, k

  return while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _solve(solver, A, b, x0, *, tol, atol, maxiter, M):
  if x0 is None:
    x0 = tree_map(creation.zeros_like, b)
  b = tree_map(creation.asarray, b)
  x0 = tree_map(creation.asarray, x0)
  if maxiter is None:
    maxiter = 10 * sum(get_aval(leaf).size for leaf in tree_leaves(b))  # SciPy's default
  A = _as_operator(A)
  M = _identity if M is None else _as_operator(M)
  if tree_structure(x0) != tree_structure(b):
    raise ValueError(f"x0 and b must have matching tree structure: {tree_structure(x0)} vs "
                     f"{tree_structure(b)}")
  shapes_x0 = [np.shape(leaf) for leaf in tree_leaves(x0)]
  shapes_b = [np.shape(leaf) for leaf in tree_leaves(b)]
  if shapes_x0 != shapes_b:
    raise ValueError(f"arrays in x0 and b must have matching shapes: {shapes_x0} vs {shapes_b}")
  return solver(A, b, x0, maxiter=maxiter, tol=tol, atol=atol, M=M), None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solve A x = b by (preconditioned) conjugate gradients, for Hermitian positive-definite A.

  Args:
    A: a square matrix, a function x -> A x, or an object with `@`.
    b: the right-hand side: an array or a pytree of arrays.
    x0: the starting guess, structured like b (default zeros).
    tol, atol: stop when ||b - A x|| <= max(tol ||b||, atol).
    maxiter: the maximum number of iterations (default 10 * size of b).
    M: a preconditioner approximating A^-1 (matrix or function), default none.

  Returns:
    (x, None): the solution, structured like b, and JAX's placeholder for convergence info.

  Example:
    >>> x, _ = cg(numpy.array([[4.0, 1.0], [1.0, 3.0]]), numpy.array([1.0, 2.0]))
  """
  return _solve(_cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solve A x = b by the (preconditioned) biconjugate gradient stabilized method, for any
  nonsingular A.

  Args:
    A: a square matrix, a function x -> A x, or an object with `@`.
    b: the right-hand side: an array or a pytree of arrays.
    x0: the starting guess, structured like b (default zeros).
    tol, atol: stop when ||b - A x|| <= max(tol ||b||, atol).
    maxiter: the maximum number of iterations (default 10 * size of b).
    M: a preconditioner approximating A^-1 (matrix or function), default none.

  Returns:
    (x, None): the solution, structured like b, and JAX's placeholder for convergence info.

  Example:
    >>> x, _ = bicgstab(numpy.array([[4.0, 1.0], [-1.0, 3.0]]), numpy.array([1.0, 2.0]))
  """
  return _solve(_bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
