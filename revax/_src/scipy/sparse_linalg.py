"""Krylov solvers of A x = b for a linear operator A given as a matrix or a function (as
jax.scipy.sparse.linalg): conjugate gradients `cg` (Hermitian positive-definite A), `bicgstab`
and restarted `gmres` (any A), with an optional preconditioner M ~ A^-1 and SciPy's non-legacy tolerance
||r|| <= max(tol ||b||, atol). b, x0 and A's results may be pytrees of arrays; the vector
operations act leaf by leaf and the inner products sum over leaves.

Each solver runs inside `lax.custom_linear_solve` (as JAX's do), so its derivatives come from
the linear equation, not from the iterations (a `while_loop`, which reverse mode cannot
differentiate): x_dot solves A x_dot = b_dot - A_dot x, and reverse mode solves the transposed
system with the same Krylov method (cg declares a real operator symmetric, so it reuses A).
Gradients therefore flow to b and to whatever A (a matrix or a function's closed-over arrays)
depends on; x0, M and the tolerances get none.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.lax import unary
from revax._src.lax.control_flow.loops import fori_loop, while_loop
from revax._src.lax.control_flow.solves import custom_linear_solve
from revax._src.lax.dot import Precision
from revax._src.numpy import contractions, creation, padding, shape_ops, ufuncs
from revax._src.numpy.util import result_type_of
from revax._src.scipy import linalg as scipy_linalg
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


def _norm(x):
  return ufuncs.sqrt(sum(_vdot_real(leaf, leaf) for leaf in tree_leaves(x)))


def _safe_normalize(x, thresh=None):
  """(x / ||x||, ||x||), or (0, 0) where ||x|| <= thresh (default: the dtype's epsilon)."""
  norm = _norm(x)
  dtype = _result_dtype(x)
  if thresh is None:
    thresh = dtypes.finfo(get_aval(norm).dtype).eps
  thresh = ufuncs.real(creation.asarray(thresh).astype(dtype))
  use_norm = norm > thresh
  norm_cast = norm.astype(dtype)
  normalized = tree_map(lambda y: ufuncs.where(use_norm, y / norm_cast, 0.0), x)
  return normalized, ufuncs.where(use_norm, norm, 0.0)


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


# --- GMRES ----------------------------------------------------------------------------------------
def _project_on_columns(Q, v):
  """Q^H v summed over leaves (each leaf of Q holds the basis vectors along its last axis)."""
  return sum(tree_leaves(tree_map(
      lambda X, y: contractions.einsum("...n,...->n", ufuncs.conj(X), y,
                                       precision=Precision.HIGHEST), Q, v)))


def _gram_schmidt(Q, x, xnorm, max_iterations=2):
  """Orthogonalize x against Q's (orthonormal) columns by classical Gram-Schmidt, repeated while
  the overlap stays large (at most `max_iterations` passes): (q, overlaps r)."""
  q0 = tree_leaves(Q)[0]
  sqrt2 = np.sqrt(2.0)

  def one_pass(state):
    k, q, r, qnorm_scaled = state
    h = _project_on_columns(Q, q)
    q = _sub(q, tree_map(lambda X: _dot(X, h), Q))
    again = k < max_iterations - 1
    qnorm_scaled = ufuncs.where(again, _safe_normalize(q)[1] / sqrt2, qnorm_scaled)
    return k + 1, q, r + h, qnorm_scaled

  def more(state):
    k, _, r, qnorm_scaled = state
    return (k < max_iterations - 1) & (_safe_normalize(r)[1] < qnorm_scaled)

  r = creation.zeros(q0.shape[-1], dtype=q0.dtype)
  state = one_pass((0, x, r, xnorm / sqrt2))
  _, q, r, _ = while_loop(more, one_pass, state)
  return q, r


def _arnoldi_step(k, A, M, V, H):
  """Add the k-th Krylov vector M(A(V[:, k])), orthonormalized, as V[:, k + 1] and its overlaps
  as row k of H; a vector of norm below eps * its initial norm (an invariant subspace) becomes
  0 and reports a breakdown."""
  dtype = _result_dtype(V)
  v = M(A(tree_map(lambda X: X[..., k], V)))
  _, v_norm_0 = _safe_normalize(v)
  v, h = _gram_schmidt(V, v, v_norm_0)
  unit_v, v_norm_1 = _safe_normalize(v, thresh=dtypes.finfo(dtype).eps * v_norm_0)
  V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
  h = h.at[k + 1].set(v_norm_1.astype(dtype))
  return V, H.at[k, :].set(h), v_norm_1 == 0.0


def _rotate(H, i, cs, sn):
  """Apply the Givens rotation (cs, sn) to entries i, i + 1 of H."""
  x, y = H[i], H[i + 1]
  H = H.at[i].set(ufuncs.conj(cs) * x - ufuncs.conj(sn) * y)
  return H.at[i + 1].set(sn * x + cs * y)


def _givens(a, b):
  """The rotation (cs, sn) that zeroes b in (a, b)."""
  b_zero = ufuncs.abs(b) == 0
  a_lt_b = ufuncs.abs(a) < ufuncs.abs(b)
  t = -ufuncs.where(a_lt_b, a, b) / ufuncs.where(a_lt_b, b, a)
  r = unary.rsqrt(1 + ufuncs.abs(t) ** 2).astype(t.dtype)
  cs = ufuncs.where(b_zero, 1, ufuncs.where(a_lt_b, r * t, r))
  sn = ufuncs.where(b_zero, 0, ufuncs.where(a_lt_b, r, r * t))
  return cs, sn


def _apply_givens(row, givens, k):
  """Apply the first k stored rotations to `row`, then store and apply the one zeroing
  row[k + 1]."""
  row = fori_loop(0, k, lambda i, h: _rotate(h, i, givens[i, 0], givens[i, 1]), row)
  cs, sn = _givens(row[k], row[k + 1])
  givens = givens.at[k, :].set(shape_ops.stack([cs, sn]))
  return _rotate(row, k, cs, sn), givens


def _initial_basis(unit_residual, restart):
  return tree_map(lambda x: padding.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
                  unit_residual)


def _finish_restart(A, M, b, x0, V, y):
  x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
  unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
  return x, unit_residual, residual_norm


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
  """One restart, QR-factoring the Hessenberg matrix by Givens rotations as the Krylov basis
  grows (which also gives the residual norm, for early exit)."""
  dtype = _result_dtype(b)
  R = creation.eye(restart, restart + 1, dtype=dtype)  # identity rows keep R nonsingular
  givens = creation.zeros((restart, 2), dtype=dtype)
  beta = creation.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

  def going(state):
    k, err = state[0], state[1]
    return (k < restart) & (err > ptol)

  def step(state):
    k, _, V, R, beta, givens = state
    V, H, _ = _arnoldi_step(k, A, M, V, R)
    row, givens = _apply_givens(H[k, :], givens, k)
    R = R.at[k, :].set(row)
    beta = _rotate(beta, k, givens[k, 0], givens[k, 1])
    return k + 1, ufuncs.abs(beta[k + 1]), V, R, beta, givens

  state = (0, residual_norm, _initial_basis(unit_residual, restart), R, beta, givens)
  _, _, V, R, beta, _ = while_loop(going, step, state)
  y = scipy_linalg.solve_triangular(R[:, :-1].T, beta[:-1])
  return _finish_restart(A, M, b, x0, V, y)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
  """One restart, building the whole Krylov basis (unless it breaks down) and then solving the
  small least-squares problem through its normal equations."""
  del ptol
  dtype = _result_dtype(b)
  H = creation.eye(restart, restart + 1, dtype=dtype)

  def going(state):
    _, _, breakdown, k = state
    return (k < restart) & ~breakdown

  def step(state):
    V, H, _, k = state
    V, H, breakdown = _arnoldi_step(k, A, M, V, H)
    return V, H, breakdown, k + 1

  state = (_initial_basis(unit_residual, restart), H, creation.asarray(False), 0)
  V, H, _, _ = while_loop(going, step, state)
  beta = creation.zeros(restart + 1, dtype=H.dtype).at[0].set(residual_norm.astype(dtype))
  a = H.T
  a_h = ufuncs.conj(a.T)
  y = scipy_linalg.solve(_dot(a_h, a), _dot(a_h, beta), assume_a="pos")
  return _finish_restart(A, M, b, x0, V, y)


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
  """Solve A x = b by restarted GMRES: the best solution in a Krylov space of dimension
  `restart`, rebuilt from the current solution up to `maxiter` times.

  Args:
    A: a square matrix, a function x -> A x, or an object with `@`.
    b: the right-hand side: an array or a pytree of arrays.
    x0: the starting guess, structured like b (default zeros).
    tol, atol: stop when ||b - A x|| <= max(tol ||b||, atol).
    restart: the Krylov space dimension per restart (default 20, at most the size of b).
    maxiter: the maximum number of restarts (default 10 * size of b).
    M: a preconditioner approximating A^-1 (matrix or function), default none.
    solve_method: "batched" (default: build the space, then solve a least-squares problem) or
      "incremental" (Givens-rotation QR as the space grows, exiting early at convergence).

  Returns:
    (x, info): the solution, structured like b, and -1 where it is NaN, else 0.

  Example:
    >>> from revax.scipy.sparse.linalg import gmres
    >>> a = jnp.array([[4., 1.], [-1., 3.]])
    >>> x, info = gmres(a, jnp.array([1., 2.]))
    >>> x
    Array([0.07692308, 0.6923077 ], dtype=float32)
    >>> gmres(lambda v: a @ v, jnp.array([1., 2.]), solve_method='incremental')[0]
    Array([0.07692308, 0.6923077 ], dtype=float32)
  """
  if x0 is None:
    x0 = tree_map(creation.zeros_like, b)
  M = _identity if M is None else _as_operator(M)
  A = _as_operator(A)
  b = tree_map(creation.asarray, b)
  x0 = tree_map(creation.asarray, x0)
  size = sum(get_aval(leaf).size for leaf in tree_leaves(b))
  if maxiter is None:
    maxiter = 10 * size  # SciPy's default
  restart = min(restart, size)
  if tree_structure(x0) != tree_structure(b):
    raise ValueError(f"x0 and b must have matching tree structure: {tree_structure(x0)} vs "
                     f"{tree_structure(b)}")
  b_norm = _norm(b)
  atol = ufuncs.maximum(tol * b_norm, atol)
  ptol = _norm(M(b)) * ufuncs.minimum(1.0, atol / b_norm)
  if solve_method == "incremental":
    restart_fn = _gmres_incremental
  elif solve_method == "batched":
    restart_fn = _gmres_batched
  else:
    raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' or "
                     f"'batched'")

  def solve(A, b):
    # A is custom_linear_solve's matvec (or its transpose); the tolerances stay those of the
    # original b, as in JAX
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

    def going(state):
      _, k, _, residual_norm = state
      return (k < maxiter) & (residual_norm > atol)

    def one_restart(state):
      x, k, unit_residual, residual_norm = state
      x, unit_residual, residual_norm = restart_fn(A, b, x, unit_residual, residual_norm, ptol,
                                                   restart, M)
      return x, k + 1, unit_residual, residual_norm

    return while_loop(going, one_restart, (x0, 0, unit_residual, residual_norm))[0]

  x = custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
  info = ufuncs.where(ufuncs.isnan(_norm(x)), -1, 0)
  return x, info


def _solve(solver, A, b, x0, *, tol, atol, maxiter, M, check_symmetric=False):
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

  def solve(matvec, rhs):
    return solver(matvec, rhs, x0, maxiter=maxiter, tol=tol, atol=atol, M=M)

  # a real positive-definite operator is symmetric, so its transpose solve is the solve itself;
  # a complex Hermitian one is not symmetric (its transpose is its conjugate)
  symmetric = check_symmetric and not any(
      dtypes.is_complex(get_aval(leaf).dtype) for leaf in tree_leaves(b))
  x = custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
  return x, None


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
    >>> from revax.scipy.sparse.linalg import cg
    >>> a = jnp.array([[4., 1.], [1., 3.]])
    >>> x, info = cg(a, jnp.array([1., 2.]))
    >>> x
    Array([0.09090909, 0.6363636 ], dtype=float32)
    >>> cg(lambda v: a @ v, jnp.array([1., 2.]))[0]  # A may be a function
    Array([0.09090909, 0.6363636 ], dtype=float32)
  """
  return _solve(_cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                check_symmetric=True)


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
    >>> from revax.scipy.sparse.linalg import bicgstab
    >>> a = jnp.array([[4., 1.], [-1., 3.]])
    >>> x, info = bicgstab(a, jnp.array([1., 2.]))
    >>> x
    Array([0.07692308, 0.6923077 ], dtype=float32)
    >>> bicgstab(lambda v: a @ v, jnp.array([1., 2.]))[0]  # A may be a function
    Array([0.07692308, 0.6923077 ], dtype=float32)
  """
  return _solve(_bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
