"""revax.scipy.optimize: minimize with BFGS (as jax.scipy.optimize).

BFGS keeps an approximation H of the inverse Hessian; each iteration searches along
p = -H g for a step satisfying the strong Wolfe conditions (sufficient decrease, and a
directional derivative shrunk in magnitude), then updates H with s = x_new - x and
y = g_new - g: H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T, rho = 1 / (y^T s). The
whole solve is one `while_loop`, so it runs under jit, and the line search is a bracketing loop
with bisection zoom inside it.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from revax._src import lax
from revax._src.autodiff import value_and_grad
from revax._src.core import dtypes
from revax._src.numpy import creation, reductions, ufuncs
from revax._src.numpy.contractions import dot, outer
from revax._src.numpy.util import aval_of, as_array

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
  """The result of `minimize`.

  Attributes:
    x: the final point.
    success: whether the gradient norm fell below gtol without a failed line search.
    status: 0 converged, 1 maximum iterations, 3 line search failed, -1 otherwise.
    fun: the objective at x.
    jac: the gradient at x.
    hess_inv: the final inverse-Hessian approximation.
    nfev, njev: objective and gradient evaluations.
    nit: iterations.
  """
  x: Any
  success: Any
  status: Any
  fun: Any
  jac: Any
  hess_inv: Any
  nfev: Any
  njev: Any
  nit: Any


def _norm(g, order):
  if order == np.inf:
    return reductions.max(ufuncs.abs(g))
  if order == -np.inf:
    return reductions.min(ufuncs.abs(g))
  return reductions.sum(ufuncs.abs(g) ** order) ** (1.0 / order)


_C1, _C2 = 1e-4, 0.9


def _line_search(fg, x, f0, g0, p, a0, maxiter: int):
  """A step a > 0 along p satisfying the strong Wolfe conditions, starting from a0: while no
  interval brackets an acceptable step, the step doubles; once one does (lo: a step with
  sufficient decrease and a descending slope, hi: one past the acceptable region), the next
  trial is the minimizer of the quadratic through f(lo), f'(lo) and f(hi), kept in the middle
  80% of the bracket. Returns (a, f, g, evaluations, failed)."""
  slope0 = dot(g0, p)
  dtype = aval_of(f0).dtype

  def evaluate(a):
    f, g = fg(x + a * p)
    return f, g, dot(g, p)

  def cond(c):
    return (c[0] < maxiter) & ~c[1]

  def body(c):
    it, _, lo, f_lo, s_lo, hi, f_hi, a, f_best, g_best, nfev = c
    f, g, slope = evaluate(a)
    too_long = (f > f0 + _C1 * a * slope0) | (f >= f_lo) & (it > 0) | ~ufuncs.isfinite(f)
    accept = ~too_long & (ufuncs.abs(slope) <= -_C2 * slope0)
    too_short = ~too_long & ~accept & (slope < 0)
    past = ~too_long & ~accept & ~too_short  # ascending beyond a minimum: a bounds it above
    new_hi = ufuncs.where(too_long | past, a, hi)
    new_f_hi = ufuncs.where(too_long | past, f, f_hi)
    new_lo = ufuncs.where(too_short, a, lo)
    new_f_lo = ufuncs.where(too_short, f, f_lo)
    new_s_lo = ufuncs.where(too_short, slope, s_lo)
    width = new_hi - new_lo
    safe_width = ufuncs.where(width > 0, width, 1.0)
    curvature = (new_f_hi - new_f_lo - new_s_lo * width) / (safe_width * safe_width)
    step = ufuncs.where(curvature > 0, -new_s_lo / (2 * ufuncs.where(curvature > 0, curvature, 1.0)),
                        0.5 * width)
    inside = new_lo + ufuncs.clip(step, 0.1 * width, 0.9 * width)
    next_a = ufuncs.where(new_hi > 0, inside, 2.0 * a)
    cast = lambda v: v.astype(dtype)
    return (it + 1, accept, cast(new_lo), cast(new_f_lo), cast(new_s_lo), cast(new_hi),
            cast(new_f_hi), cast(ufuncs.where(accept, a, next_a)), cast(ufuncs.where(accept, f, f_best)),
            cast(ufuncs.where(accept, g, g_best)), nfev + 1)

  zero = creation.zeros((), dtype)
  init = (np.int32(0), creation.zeros((), bool), zero, f0, slope0.astype(dtype), zero, f0,
          a0.astype(dtype), f0, g0, np.int32(0))
  out = lax.while_loop(cond, body, init)
  done, a, f, g, nfev = out[1], out[7], out[8], out[9], out[10]
  return a, f, g, nfev, ~done


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol: float = 1e-5,
                   line_search_maxiter: int = 10):
  x0 = as_array(x0)
  if aval_of(x0).ndim != 1:
    raise ValueError(f"x0 must be one-dimensional, got shape {aval_of(x0).shape}")
  if not dtypes.is_inexact(aval_of(x0).dtype):
    x0 = x0.astype(dtypes.default_float_dtype())
  dtype = aval_of(x0).dtype
  n = aval_of(x0).shape[0]
  if maxiter is None:
    maxiter = n * 200
  fg = value_and_grad(fun)
  f0, g0 = fg(x0)
  eye = creation.eye(n, dtype=dtype)

  # carry: (k, converged, failed, x, f, g, H, nfev, ngev, f_previous)
  def cond(c):
    k, converged, failed = c[0], c[1], c[2]
    return ~converged & ~failed & (k < maxiter)

  def body(c):
    k, _, _, x, f, g, H, nfev, ngev, f_prev = c
    p = -dot(H, g)
    # first trial step: the one that would repeat the last decrease along a linear model
    # (Nocedal and Wright's rule, as SciPy's), at most 1
    guess = 1.01 * 2.0 * (f - f_prev) / dot(g, p)
    a0 = ufuncs.where((guess > 0) & ufuncs.isfinite(guess), ufuncs.minimum(guess, 1.0), 1.0)
    a, f_new, g_new, evals, ls_failed = _line_search(fg, x, f, g, p, a0, line_search_maxiter)
    s = a * p
    x_new = x + s
    y = g_new - g
    ys = dot(y, s)
    rho = ufuncs.where(ys > 0, 1.0 / ufuncs.where(ys > 0, ys, 1.0), 0.0).astype(dtype)
    left = eye - rho * outer(s, y)
    H_new = dot(dot(left, H), left.T) + rho * outer(s, s)
    H_new = ufuncs.where(ys > 0, H_new, H).astype(dtype)
    keep = lambda new, old: ufuncs.where(ls_failed, old, new).astype(aval_of(old).dtype)
    x_next, f_next, g_next = keep(x_new, x), keep(f_new, f), keep(g_new, g)
    converged = _norm(g_next, norm) < gtol
    return (k + 1, converged, ls_failed, x_next, f_next, g_next, keep(H_new, H),
            nfev + evals, ngev + evals, f)

  f_before = (f0 + reductions.sum(g0 * g0) ** 0.5 / 2).astype(dtype)  # as SciPy's first guess
  init = (np.int32(0), _norm(g0, norm) < gtol, creation.zeros((), bool), x0, f0, g0, eye,
          np.int32(1), np.int32(1), f_before)
  k, converged, failed, x, f, g, H, nfev, ngev, _ = lax.while_loop(cond, body, init)
  status = ufuncs.where(converged, 0, ufuncs.where(k == maxiter, 1, ufuncs.where(failed, 3, -1)))
  return OptimizeResults(x=x, success=converged & ~failed, status=status.astype(np.int32),
                         fun=f, jac=g, hess_inv=H, nfev=nfev, njev=ngev, nit=k)


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
  """Minimize a scalar function of one vector (as jax.scipy.optimize.minimize).

  Args:
    fun: the objective, `fun(x, *args)` returning a scalar; differentiable.
    x0: the initial point (1-D).
    args: extra positional arguments of `fun` (a tuple).
    method: "BFGS".
    tol: unused (as in JAX; use options["gtol"]).
    options: BFGS options: maxiter (default 200 len(x0)), norm (of the gradient in the
      convergence test, default inf), gtol (default 1e-5), line_search_maxiter (default 10).

  Returns:
    OptimizeResults.

  Example:
    >>> import revax.scipy.optimize
    >>> f = lambda x: ((x - 1.0) ** 2).sum()
    >>> revax.scipy.optimize.minimize(f, jnp.zeros(3), method="BFGS").x
    Array([1., 1., 1.], dtype=float32)
  """
  if options is None:
    options = {}
  if not isinstance(args, tuple):
    raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")
  if method.lower() != "bfgs":
    raise ValueError(f"Method {method} not recognized")
  return _minimize_bfgs(lambda x: fun(x, *args), x0, **options)
