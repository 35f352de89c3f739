"""odeint against jax's odeint, scipy and finite differences: values, adjoint gradients (with
respect to the initial state, the times, extra arguments and closed-over values), pytree states,
jit and vmap."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental.ode import odeint as jodeint

import revax
import revax.numpy as jnp
from revax.experimental.ode import odeint
from tests.platform_tolerances import FLOAT64_EMULATION, ON_TPU, allclose_tol, skip_on_tpu


def _decay(np_mod):
  return lambda y, t, a: -a * y + np_mod.sin(t)


def _pendulum(np_mod):
  def f(state, t, damping):
    theta, omega = state["theta"], state["omega"]
    return {"theta": omega, "omega": -np_mod.sin(theta) - damping * omega}
  return f


TS = np.linspace(0., 3., 5).astype(np.float32)
Y0 = np.array([1., 2.], np.float32)


def test_values_match_jax_and_scipy():
  from scipy.integrate import solve_ivp
  ys = odeint(_decay(jnp), jnp.asarray(Y0), jnp.asarray(TS), 0.5)
  assert ys.shape == (5, 2) and ys.dtype == np.float32
  jys = jodeint(_decay(jjnp), jjnp.asarray(Y0), jjnp.asarray(TS), 0.5)
  np.testing.assert_allclose(ys, jys, **allclose_tol(rtol=1e-6, atol=1e-6))  # (sin, pow)
  ref = solve_ivp(lambda t, y: -0.5 * y + np.sin(t), (0., 3.), Y0.astype(np.float64),
                  t_eval=TS.astype(np.float64), rtol=1e-10, atol=1e-10).y.T
  np.testing.assert_allclose(ys, ref, rtol=1e-5, atol=1e-5)


def test_pytree_state_values_and_grads_match_jax():
  y0 = {"theta": np.float32(1.), "omega": np.float32(0.)}

  def loss(ode, f, y0, ts, c):
    out = ode(f, y0, ts, c)
    return (out["theta"] ** 2).sum() + out["omega"][-1], out

  (_, ys), g = revax.value_and_grad(
      lambda y0, ts, c: loss(odeint, _pendulum(jnp), y0, ts, c), argnums=(0, 1, 2),
      has_aux=True)(y0, jnp.asarray(TS), 0.1)
  (_, jys), jg = jax.value_and_grad(
      lambda y0, ts, c: loss(jodeint, _pendulum(jjnp), y0, ts, c), argnums=(0, 1, 2),
      has_aux=True)(y0, jjnp.asarray(TS), 0.1)
  assert set(ys) == {"theta", "omega"} and ys["theta"].shape == (5,)
  for k in ys:
    np.testing.assert_allclose(ys[k], jys[k], rtol=1e-5, atol=1e-6)
  for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(jg)):
    np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


@skip_on_tpu(FLOAT64_EMULATION)
def test_grad_matches_finite_differences_in_float64(x64):
  ts = jnp.asarray(TS.astype(np.float64))
  y0 = jnp.asarray(Y0.astype(np.float64))

  def loss(y0, a, ts):
    return (odeint(_decay(jnp), y0, ts, a, rtol=1e-10, atol=1e-10) ** 2).sum()

  g_y0, g_a, g_ts = revax.grad(loss, argnums=(0, 1, 2))(y0, 0.5, ts)
  eps = 1e-5
  fd_a = (loss(y0, 0.5 + eps, ts) - loss(y0, 0.5 - eps, ts)) / (2 * eps)
  np.testing.assert_allclose(g_a, fd_a, rtol=1e-6)
  e0 = jnp.asarray([1., 0.])
  fd_y0 = (loss(y0 + eps * e0, 0.5, ts) - loss(y0 - eps * e0, 0.5, ts)) / (2 * eps)
  np.testing.assert_allclose(g_y0[0], fd_y0, rtol=1e-6)
  e2 = jnp.zeros(5).at[2].set(1.)
  fd_t = (loss(y0, 0.5, ts + eps * e2) - loss(y0, 0.5, ts - eps * e2)) / (2 * eps)
  np.testing.assert_allclose(g_ts[2], fd_t, rtol=1e-6)


def test_grad_of_closed_over_value_jit_and_vmap_match_jax():
  def loss(ode, np_mod, w, y0):
    f = lambda y, t: -w * y ** 2 + np_mod.cos(t)  # noqa: E731  (w is closed over)
    return ode(f, y0, np_mod.asarray(TS)).sum()

  y0s = np.array([[1.], [0.5], [2.]], np.float32)
  rev = revax.jit(revax.vmap(revax.grad(lambda w, y0: loss(odeint, jnp, w, y0)),
                             in_axes=(None, 0)))(0.3, jnp.asarray(y0s))
  ref = jax.vmap(jax.grad(lambda w, y0: loss(jodeint, jjnp, w, y0)), in_axes=(None, 0))(
      0.3, jjnp.asarray(y0s))
  np.testing.assert_allclose(rev, ref, rtol=2e-4, atol=2e-5)
  vals = revax.vmap(lambda y0: odeint(lambda y, t: -y, y0, jnp.asarray(TS)))(jnp.asarray(y0s))
  assert vals.shape == (3, 5, 1)
  np.testing.assert_allclose(vals[:, :, 0], y0s * np.exp(-TS)[None], rtol=1e-5)


def test_options_mxstep_hmax_and_repeated_calls():
  decay = lambda y, t: -y  # noqa: E731
  ys = odeint(decay, jnp.asarray(Y0), jnp.asarray(TS), hmax=0.05, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(ys, Y0 * np.exp(-TS)[:, None], rtol=1e-4)
  again = odeint(decay, jnp.asarray(Y0), jnp.asarray(TS), hmax=0.05, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(ys, again)
  # 10 steps of at most 0.05 cannot reach the next output time (0.75 apart): both libraries
  # stop early and extrapolate the same wrong answer (at tolerances float32 can meet: with the
  # default rtol of 1.4e-8 the step control reads rounding noise, and the stopped trajectory
  # depends on the order a dot sums its terms in)
  short = odeint(decay, jnp.asarray(Y0), jnp.asarray(TS), hmax=0.05, mxstep=10, rtol=1e-5,
                 atol=1e-5)
  jshort = jodeint(decay, jjnp.asarray(Y0), jjnp.asarray(TS), hmax=0.05, mxstep=10, rtol=1e-5,
                   atol=1e-5)
  # (on a TPU the rows after the truncation are left out: STEP_CONTROL)
  rows = slice(0, 3) if ON_TPU else slice(None)
  np.testing.assert_allclose(short[rows], jshort[rows], **allclose_tol(rtol=1e-5, atol=1e-6))
  assert abs(float(short[-1, 0]) - np.exp(-3.)) > 1e-3


def test_bad_inputs_raise_like_jax():
  f = lambda y, t, s: -y  # noqa: E731
  with pytest.raises(TypeError, match="must be arrays or scalars"):
    odeint(f, jnp.ones(2), jnp.asarray(TS), "a")
  with pytest.raises(TypeError, match="must be arrays or scalars"):
    jodeint(f, jjnp.ones(2), jjnp.asarray(TS), "a")
  with pytest.raises(TypeError, match="t must be an array of floats"):
    odeint(lambda y, t: -y, jnp.ones(2), jnp.arange(3))
  with pytest.raises(TypeError, match="t must be an array of floats"):
    jodeint(lambda y, t: -y, jjnp.ones(2), jjnp.arange(3))


def test_exposed_dormand_prince_pieces_match_jax():
  import jax.experimental.ode as jode

  import revax.experimental.ode as rode
  f = lambda y, t: -2. * y + t  # noqa: E731
  y0, t0, dt = np.array([1., 3.], np.float32), np.float32(0.1), np.float32(0.2)
  f0 = -2. * y0 + t0
  for a, b in zip(rode.runge_kutta_step(f, jnp.asarray(y0), jnp.asarray(f0), jnp.asarray(t0),
                                        jnp.asarray(dt)),
                  jode.runge_kutta_step(f, jjnp.asarray(y0), jjnp.asarray(f0), jjnp.asarray(t0),
                                        jjnp.asarray(dt))):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  h = rode.initial_step_size(f, t0, jnp.asarray(y0), 4, 1e-6, 1e-6, jnp.asarray(f0))
  jh = jode.initial_step_size(f, t0, jjnp.asarray(y0), 4, 1e-6, 1e-6, jjnp.asarray(f0))
  np.testing.assert_allclose(h, jh, rtol=1e-6)
  for ratio in (0., 0.5, 3.):
    np.testing.assert_allclose(rode.optimal_step_size(jnp.float32(0.1), jnp.float32(ratio)),
                               jode.optimal_step_size(jjnp.float32(0.1), jjnp.float32(ratio)),
                               rtol=1e-6)


def test_neural_ode_pytree_params_grad_matches_jax():
  """The neural-ODE pattern: an MLP's parameters (a dict) as the extra argument."""
  rng = np.random.default_rng(0)
  params = {"W": rng.normal(size=(2, 2)).astype(np.float32) * 0.5,
            "b": rng.normal(size=2).astype(np.float32)}
  y0 = np.array([0.3, -0.2], np.float32)
  ts = np.linspace(0, 1, 4).astype(np.float32)

  def loss(ode, np_, p):
    f = lambda y, t, p: np_.tanh(y @ p["W"] + p["b"])  # noqa: E731
    return (ode(f, np_.asarray(y0), np_.asarray(ts), p) ** 2).sum()

  g = revax.jit(revax.grad(lambda p: loss(odeint, jnp, p)))(params)
  jg = jax.grad(lambda p: loss(jodeint, jjnp, p))(params)
  for k in params:
    np.testing.assert_allclose(g[k], jg[k], **allclose_tol(rtol=1e-4, atol=1e-7))  # (tanh)
