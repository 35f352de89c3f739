"""odeint: Dormand-Prince adaptive Runge-Kutta integration with an adjoint-method gradient.

As JAX's `jax.experimental.ode.odeint`: the state (a pytree) is raveled into one vector, the
integration is a `scan` over the requested times whose body is a `while_loop` of RK45 steps
(Dormand & Prince 1980) with error control, and the value at each requested time comes from the
4th-order interpolating polynomial of the step that covers it. The reverse-mode derivative is a
`custom_vjp` that integrates the adjoint system backwards in time (Chen et al. 2018, appendix C),
so memory does not grow with the number of steps; `jvp` through `odeint` is not defined (as in
JAX), while `grad`, `jit` and `vmap` compose.
"""
from __future__ import annotations

import functools
import operator
import weakref

from revax._src import lax
from revax._src import tree_util
from revax._src.autodiff import vjp
from revax._src.closure_convert import closure_convert
from revax._src.core import config as config_mod
from revax._src.core.avals import get_aval
from revax._src.core.trace import EvalTrace, current_trace
from revax._src.custom_derivatives import custom_vjp
from revax._src.flatten_util import ravel_pytree
from revax._src.jit import jit
from revax._src.numpy import contractions, creation, dtype_api, linalg, polynomial
from revax._src.numpy import reductions, shape_ops, type_predicates, ufunc_objects, ufuncs
from revax._src.numpy.util import promote_args_inexact
from revax._src.vmap import vmap

__all__ = ["odeint", "abs2", "fit_4th_order_polynomial", "initial_step_size", "interp_fit_dopri",
           "mean_error_ratio", "optimal_step_size", "ravel_first_arg", "runge_kutta_step"]

_inf = float("inf")


def _highest_precision(fun):
  """Run `fun` with default_matmul_precision "highest" (JAX's odeint does; the RK tableau
  contractions must not be computed in bfloat16 passes on accelerators)."""
  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    with config_mod.config.override("default_matmul_precision", "highest"):
      return fun(*args, **kwargs)
  return wrapped


def ravel_first_arg(func, unravel, debug_info):
  """`func(y, *args)` as a function of the raveled state returning the raveled derivative
  (`debug_info`, which JAX's takes for its tracing errors, is accepted and unused)."""
  def raveled(y_flat, *args):
    return ravel_pytree(func(unravel(y_flat), *args))[0]
  return raveled


# ---- the Dormand-Prince step ----------------------------------------------------------------

def interp_fit_dopri(y0, y1, k, dt):
  """Coefficients of the 4th-order polynomial through a step's ends and its midpoint."""
  dps_c_mid = creation.array([
      6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
      -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
      -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2], dtype=get_aval(y0).dtype)
  y_mid = y0 + dt.astype(get_aval(y0).dtype) * contractions.dot(dps_c_mid, k)
  return creation.asarray(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
  """The coefficients of the quartic through a step's endpoints and midpoint with the given
  end slopes (odeint's dense output between steps), as in JAX.

  Args:
    y0, y1, y_mid: values at the start, end and middle of the step.
    dy0, dy1: derivatives at the start and end.
    dt: the step size.

  Returns:
    `(a, b, c, d, e)`, the quartic `a t^4 + b t^3 + c t^2 + d t + e` for `t` in [0, 1].

  Example:
    >>> coeffs = revax.experimental.ode.fit_4th_order_polynomial(
    ...     jnp.float32(0.0), jnp.float32(1.0), jnp.float32(0.5), jnp.float32(1.0),
    ...     jnp.float32(1.0), jnp.float32(1.0))
    >>> [round(float(c), 4) for c in coeffs]
    [0.0, 0.0, 0.0, 1.0, 0.0]
  """
  dt = dt.astype(get_aval(y0).dtype)
  a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  d = dt * dy0
  e = y0
  return a, b, c, d, e


def initial_step_size(fun, t0, y0, order, rtol, atol, f0):
  """First step size (Hairer, Norsett & Wanner, Solving ODEs I, sec. II.4)."""
  y0, f0 = promote_args_inexact("odeint", y0, f0)
  dtype = get_aval(y0).dtype
  scale = atol + ufuncs.abs(y0) * rtol
  d0 = linalg.norm(y0 / scale.astype(dtype))
  d1 = linalg.norm(f0 / scale.astype(dtype))
  h0 = ufuncs.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  y1 = y0 + h0.astype(dtype) * f0
  f1 = fun(y1, t0 + h0)
  d2 = linalg.norm((f1 - f0) / scale.astype(dtype)) / h0
  h1 = ufuncs.where((d1 <= 1e-15) & (d2 <= 1e-15),
                    ufunc_objects.maximum(1e-6, h0 * 1e-3),
                    (0.01 / ufunc_objects.maximum(d1, d2)) ** (1. / (order + 1.)))
  return ufunc_objects.minimum(100. * h0, h1)


def runge_kutta_step(func, y0, f0, t0, dt):
  """One Dormand-Prince step: (5th-order y1, f(y1), error estimate, the 7 stages)."""
  fdt = get_aval(f0).dtype
  alpha = creation.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0], dtype=get_aval(dt).dtype)
  beta = creation.array(
      [[1 / 5, 0, 0, 0, 0, 0, 0], [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
       [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
       [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
       [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
       [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]], dtype=fdt)
  c_sol = creation.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
                         dtype=fdt)
  c_error = creation.array([
      35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
      -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.], dtype=fdt)

  def body_fun(i, k):
    ti = t0 + dt * alpha[i - 1]
    yi = y0 + dt.astype(fdt) * contractions.dot(beta[i - 1, :], k)
    return k.at[i, :].set(func(yi, ti))

  k = creation.zeros((7, get_aval(f0).shape[0]), fdt).at[0, :].set(f0)
  k = lax.fori_loop(1, 7, body_fun, k)
  y1 = dt.astype(fdt) * contractions.dot(c_sol, k) + y0
  y1_error = dt.astype(fdt) * contractions.dot(c_error, k)
  return y1, k[-1], y1_error, k


def abs2(x):
  """The squared magnitude `|x|**2`, without a square root for complex `x`.

  Args:
    x: an array.

  Returns:
    `real(x)**2 + imag(x)**2` for complex `x`, else `x**2`.

  Example:
    >>> revax.experimental.ode.abs2(jnp.array([3 + 4j]))
    Array([25.], dtype=float32)
  """
  if type_predicates.iscomplexobj(x):
    return ufuncs.real(x) ** 2 + ufuncs.imag(x) ** 2
  return x ** 2


def mean_error_ratio(error_estimate, rtol, atol, y0, y1):
  """odeint's step-size control: the root mean square of the error estimate over the tolerance
  `atol + rtol * max(|y0|, |y1|)`; a step is accepted when it is at most 1.

  Args:
    error_estimate: the embedded Runge-Kutta error estimate of the step.
    rtol, atol: relative and absolute tolerances.
    y0, y1: the state before and after the step.

  Returns:
    A scalar array.

  Example:
    >>> float(revax.experimental.ode.mean_error_ratio(
    ...     jnp.array([1e-3]), 1e-3, 0.0, jnp.array([1.0]), jnp.array([1.0])))
    1.0
  """
  err_tol = atol + rtol * ufunc_objects.maximum(ufuncs.abs(y0), ufuncs.abs(y1))
  err_ratio = error_estimate / err_tol.astype(get_aval(error_estimate).dtype)
  return ufuncs.sqrt(reductions.mean(abs2(err_ratio)))


def optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2,
                       order=5.0):
  """Next step size from the error ratio of the last step."""
  dfactor = ufuncs.where(mean_error_ratio < 1, 1.0, dfactor)
  factor = ufunc_objects.minimum(
      ifactor, ufunc_objects.maximum(mean_error_ratio ** (-1.0 / order) * safety, dfactor))
  return ufuncs.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


# ---- the public function ------------------------------------------------------------------

def _valid_jaxtype(x) -> bool:
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


_converted_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _closure_convert(func, *example_args):
  """closure_convert, reusing the converted function for a function seen before at the same
  argument types outside any transformation (as JAX caches it), so that repeated eager calls of
  odeint with one `func` reuse one compiled program instead of compiling a new one each time.
  Under a transformation the closure may hold tracers, so nothing is cached there."""
  if not isinstance(current_trace(), EvalTrace):
    return closure_convert(func, *example_args)
  leaves, tree = tree_util.tree_flatten(example_args)
  avals = tuple(get_aval(x) for x in leaves)
  key = (tree, avals, config_mod.config.read("enable_x64"))
  try:
    per_func = _converted_cache.setdefault(func, {})
  except TypeError:  # not weakly referenceable
    return closure_convert(func, *example_args)
  hit = per_func.get(key)
  if hit is None:
    hit = per_func[key] = closure_convert(func, *example_args)
  return hit


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=_inf, hmax=_inf):
  """Adaptive stepsize (Dormand-Prince) Runge-Kutta odeint implementation.

  Args:
    func: function to evaluate the time derivative of the solution `y` at time `t` as
      `func(y, t, *args)`, producing the same shape/structure as `y0`.
    y0: array or pytree of arrays representing the initial value for the state.
    t: array of float times for evaluation, like `jnp.linspace(0., 10., 101)`, in which the
      values must be strictly increasing.
    *args: tuple of additional arguments for `func`, which must be arrays, scalars, or (nested)
      standard Python containers (tuples, lists, dicts, namedtuples, i.e. pytrees) of those.
    rtol: float, relative local error tolerance for solver (optional).
    atol: float, absolute local error tolerance for solver (optional).
    mxstep: int, maximum number of steps to take for each timepoint (optional).
    hmax: float, maximum step size allowed (optional).

  Returns:
    Values of the solution `y` (i.e. integrated system values) at each time point in `t`,
    represented as an array (or pytree of arrays) with the same shape/structure as `y0` except
    with a new leading axis of length `len(t)`.

  Example:
    >>> from revax.experimental.ode import odeint
    >>> ys = odeint(lambda y, t: -y, jnp.float32(1.), jnp.array([0., 1.]))
    >>> print(ys.round(4))
    [1.     0.3679]
  """
  for arg in tree_util.tree_leaves(args):
    if not _valid_jaxtype(arg):
      raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
  if not dtype_api.issubdtype(t.dtype, dtype_api.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, consts = _closure_convert(func, y0, t[0], *args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
@_highest_precision
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  y0, unravel = ravel_pytree(y0)
  func = ravel_first_arg(func, unravel, None)
  out = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return vmap(unravel)(out)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
@_highest_precision
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  func_ = lambda y, t: func(y, t, *args)  # noqa: E731

  def scan_fun(carry, target_t):

    def cond_fun(state):
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def body_fun(state):
      i, y, f, t, dt, last_t, interp_coeff = state
      next_y, next_f, next_y_error, k = runge_kutta_step(func_, y, f, t, dt)
      next_t = t + dt
      error_ratio = mean_error_ratio(next_y_error, rtol, atol, y, next_y)
      new_interp_coeff = interp_fit_dopri(y, next_y, k, dt)
      dt = ufuncs.clip(optimal_step_size(dt, error_ratio), min=0., max=hmax)
      new = [i + 1, next_y, next_f, next_t, dt, t, new_interp_coeff]
      old = [i + 1, y, f, t, dt, last_t, interp_coeff]
      accept = error_ratio <= 1.
      return [ufuncs.where(accept, a, b) for a, b in zip(new, old, strict=True)]

    _, *carry = lax.while_loop(cond_fun, body_fun, [0] + carry)
    _, _, t, _, last_t, interp_coeff = carry
    relative_output_time = (target_t - last_t) / (t - last_t)
    y_target = polynomial.polyval(interp_coeff, relative_output_time.astype(get_aval(interp_coeff).dtype))
    return carry, y_target

  f0 = func_(y0, ts[0])
  dt = ufuncs.clip(initial_step_size(func_, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
  interp_coeff = creation.array([y0] * 5)
  init_carry = [y0, f0, ts[0], dt, ts[0], interp_coeff]
  _, ys = lax.scan(scan_fun, init_carry, ts[1:])
  return shape_ops.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


@_highest_precision
def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
  """The adjoint method: integrate y, its cotangent and the cotangents of t0 and the extra
  arguments backwards between consecutive output times, adding each output's cotangent."""
  ys, ts, args = res

  def aug_dynamics(augmented_state, t, *args):
    """The system augmented with vjp_y, vjp_t and vjp_args (`t` is negated time: the
    augmented system runs forwards in -t)."""
    y, y_bar, *_ = augmented_state
    y_dot, vjpfun = vjp(func, y, -t, *args)
    return (-y_dot, *vjpfun(y_bar))

  def scan_fun(carry, i):
    y_bar, t0_bar, args_bar = carry
    # The effect of moving the measurement time (real: time is real even for complex states).
    t_bar = ufuncs.real(contractions.dot(func(ys[i], ts[i], *args), g[i]))
    t0_bar = t0_bar - t_bar
    # Run the augmented system backwards to the previous observation.
    _, y_bar, t0_bar, args_bar = odeint(
        aug_dynamics, (ys[i], y_bar, t0_bar, args_bar),
        creation.array([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_util.tree_map(operator.itemgetter(1),
                                                 (y_bar, t0_bar, args_bar))
    y_bar = y_bar + g[i - 1]  # the cotangent of the output at the previous time
    return (y_bar, t0_bar, args_bar), t_bar

  init_carry = (g[-1], 0., tree_util.tree_map(creation.zeros_like, args))
  (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(
      scan_fun, init_carry, creation.arange(get_aval(ts).shape[0] - 1, 0, -1))
  ts_bar = shape_ops.concatenate([creation.array([t0_bar]), rev_ts_bar[::-1]])
  return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
