"""odeint: adaptive-step Dormand-Prince (RK45) integration of y' = func(y, t, *args), with the
adjoint-method reverse-mode derivative, as jax.experimental.ode (the same algorithm step for
step, so results agree with JAX's to rounding).

The state may be any pytree of arrays (raveled to one vector inside); the whole solve is one
jitted program (a lax.scan over the output times, each a lax.while_loop of RK steps, with
output values from a 4th-order interpolation of the last step); its VJP integrates the augmented
system backwards in time between the output times."""
from __future__ import annotations

import functools
import operator

import numpy as np

from revax._src import tree_util
from revax._src.autodiff import vjp
from revax._src.closure_convert import closure_convert
from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.config import default_matmul_precision
from revax._src.custom_derivatives import custom_vjp
from revax._src.flatten_util import ravel_pytree
from revax._src.jit import jit
from revax._src.lax.control_flow import fori_loop, scan, while_loop
from revax._src.numpy import contractions, creation, reductions, shape_ops, ufuncs
from revax._src.numpy.linalg import norm
from revax._src.numpy.polynomial import polyval
from revax._src.numpy.util import promote_args_inexact
from revax._src.vmap import vmap

__all__ = ["odeint"]

_where = ufuncs.where
_dot = contractions.dot


def _ravel_first_arg(f, unravel):
  def flat_f(y_flat, *args):
    return ravel_pytree(f(unravel(y_flat), *args))[0]
  return flat_f


def _interp_fit_dopri(y0, y1, k, dt):
  """Fit a polynomial to the results of a Runge-Kutta step."""
  dps_c_mid = creation.array([
      6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
      -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
      -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2], dtype=y0.dtype)
  y_mid = y0 + dt.astype(y0.dtype) * _dot(dps_c_mid, k)
  return creation.asarray(_fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def _fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
  dt = dt.astype(y0.dtype)
  a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  d = dt * dy0
  e = y0
  return a, b, c, d, e


def _initial_step_size(fun, t0, y0, order, rtol, atol, f0):
  """E. Hairer, S. P. Norsett, G. Wanner, Solving Ordinary Differential Equations I: Nonstiff
  Problems, Sec. II.4."""
  y0, f0 = promote_args_inexact("odeint", y0, f0)
  dtype = y0.dtype
  scale = atol + ufuncs.abs(y0) * rtol
  d0 = norm(y0 / scale.astype(dtype))
  d1 = norm(f0 / scale.astype(dtype))
  h0 = _where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  y1 = y0 + h0.astype(dtype) * f0
  f1 = fun(y1, t0 + h0)
  d2 = norm((f1 - f0) / scale.astype(dtype)) / h0
  h1 = _where((d1 <= 1e-15) & (d2 <= 1e-15), ufuncs.maximum(1e-6, h0 * 1e-3),
              (0.01 / ufuncs.maximum(d1, d2)) ** (1. / (order + 1.)))
  return ufuncs.minimum(100. * h0, h1)


def _runge_kutta_step(func, y0, f0, t0, dt):
  """One Dopri5 step: (y1, f1, error estimate, stages k)."""
  alpha = creation.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0], dtype=dt.dtype)
  beta = creation.array(
      [[1 / 5, 0, 0, 0, 0, 0, 0], [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
       [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
       [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
       [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
       [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]], dtype=f0.dtype)
  c_sol = creation.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
                         dtype=f0.dtype)
  c_error = creation.array([
      35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
      -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.], dtype=f0.dtype)

  def body_fun(i, k):
    ti = t0 + dt * alpha[i - 1]
    yi = y0 + dt.astype(f0.dtype) * _dot(beta[i - 1, :], k)
    ft = func(yi, ti)
    return k.at[i, :].set(ft)

  k = creation.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
  k = fori_loop(1, 7, body_fun, k)
  y1 = dt.astype(f0.dtype) * _dot(c_sol, k) + y0
  y1_error = dt.astype(f0.dtype) * _dot(c_error, k)
  f1 = k[-1]
  return y1, f1, y1_error, k


def _abs2(x):
  if dtypes.is_complex(get_aval(x).dtype):
    return ufuncs.real(x) ** 2 + ufuncs.imag(x) ** 2
  return x ** 2


def _mean_error_ratio(error_estimate, rtol, atol, y0, y1):
  err_tol = atol + rtol * ufuncs.maximum(ufuncs.abs(y0), ufuncs.abs(y1))
  err_ratio = error_estimate / err_tol.astype(error_estimate.dtype)
  return ufuncs.sqrt(reductions.mean(_abs2(err_ratio)))


def _optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2,
                       order=5.0):
  dfactor = _where(mean_error_ratio < 1, 1.0, dfactor)
  factor = ufuncs.minimum(ifactor, ufuncs.maximum(mean_error_ratio ** (-1.0 / order) * safety,
                                                  dfactor))
  return _where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
  """Adaptive stepsize (Dormand-Prince) Runge-Kutta odeint.

  Args:
    func: the time derivative of the solution `y` at time `t`, as `func(y, t, *args)`, with
      the shape/structure of `y0`.
    y0: array or pytree of arrays: the initial state.
    t: array of float times for evaluation, strictly increasing.
    *args: extra arguments of `func`: arrays, scalars or pytrees of them.
    rtol, atol: relative and absolute local error tolerances.
    mxstep: maximum number of steps for each output time.
    hmax: maximum step size.

  Returns:
    The solution at each time of `t`: the structure of `y0` with a new leading axis len(t).

  Example:
    >>> from revax.experimental.ode import odeint
    >>> odeint(lambda y, t: -y, jnp.ones(1), jnp.array([0., 1.]))[1]
    Array([0.36787942], dtype=float32)
  """
  for arg in tree_util.tree_leaves(args):
    try:
      get_aval(arg)
    except TypeError:
      raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got "
                      f"{arg}.") from None
  if not dtypes.issubdtype(get_aval(t).dtype, np.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, consts = closure_convert(func, y0, t[0], *args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  with default_matmul_precision("highest"):
    y0, unravel = ravel_pytree(y0)
    func = _ravel_first_arg(func, unravel)
    out = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return vmap(unravel)(out)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  func_ = lambda y, t: func(y, t, *args)

  def scan_fun(carry, target_t):

    def cond_fun(state):
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def body_fun(state):
      i, y, f, t, dt, last_t, interp_coeff = state
      next_y, next_f, next_y_error, k = _runge_kutta_step(func_, y, f, t, dt)
      next_t = t + dt
      error_ratio = _mean_error_ratio(next_y_error, rtol, atol, y, next_y)
      new_interp_coeff = _interp_fit_dopri(y, next_y, k, dt)
      dt = ufuncs.clip(_optimal_step_size(dt, error_ratio), min=0., max=hmax)
      new = [i + 1, next_y, next_f, next_t, dt, t, new_interp_coeff]
      old = [i + 1, y, f, t, dt, last_t, interp_coeff]
      return [_where(error_ratio <= 1., n, o) for n, o in zip(new, old, strict=True)]

    _, *carry = while_loop(cond_fun, body_fun, [0] + carry)
    _, _, t, _, last_t, interp_coeff = carry
    relative_output_time = (target_t - last_t) / (t - last_t)
    y_target = polyval(interp_coeff, relative_output_time.astype(interp_coeff.dtype))
    return carry, y_target

  with default_matmul_precision("highest"):
    f0 = func_(y0, ts[0])
    dt = ufuncs.clip(_initial_step_size(func_, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
    interp_coeff = creation.array([y0] * 5)
    init_carry = [y0, f0, ts[0], dt, ts[0], interp_coeff]
    _, ys = scan(scan_fun, init_carry, ts[1:])
    return shape_ops.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
  ys, ts, args = res

  def aug_dynamics(augmented_state, t, *args):
    """The system augmented with vjp_y, vjp_t and vjp_args; `t` is negative time."""
    y, y_bar, *_ = augmented_state
    y_dot, vjpfun = vjp(func, y, -t, *args)
    return (-y_dot, *vjpfun(y_bar))

  def scan_fun(carry, i):
    y_bar, t0_bar, args_bar = carry
    # the effect of moving the measurement time (real: it represents time)
    t_bar = ufuncs.real(_dot(func(ys[i], ts[i], *args), g[i]))
    t0_bar = t0_bar - t_bar
    # run the augmented system backwards to the previous observation
    _, y_bar, t0_bar, args_bar = odeint(
        aug_dynamics, (ys[i], y_bar, t0_bar, args_bar),
        creation.array([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_util.tree_map(operator.itemgetter(1),
                                                 (y_bar, t0_bar, args_bar))
    y_bar = y_bar + g[i - 1]  # the gradient from the current output
    return (y_bar, t0_bar, args_bar), t_bar

  with default_matmul_precision("highest"):
    init_carry = (g[-1], 0., tree_util.tree_map(creation.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = scan(
        scan_fun, init_carry, creation.arange(len(ts) - 1, 0, -1))
    ts_bar = shape_ops.concatenate([creation.array([t0_bar]), rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
