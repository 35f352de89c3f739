"""revax.experimental.ode.odeint against jax.experimental.ode.odeint (the same Dormand-Prince
algorithm): solutions, pytree states, extra arguments and closures, gradients through the
adjoint, jit and vmap, and the argument errors."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax.experimental.ode import odeint

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.experimental.ode import odeint as jax_odeint  # noqa: E402

TS = np.linspace(0.0, 2.0, 5).astype(np.float32)


def _lotka_volterra(np_):
  def f(y, t, a, b):
    prey, pred = y
    return np_.stack([a * prey - b * prey * pred, -pred + 0.5 * prey * pred])
  return f


def _close(got, want, tol=1e-5):
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def test_solution_matches_jax():
  y0 = np.array([2.0, 1.0], np.float32)
  _close(odeint(_lotka_volterra(rnp), y0, TS, 1.0, 0.4),
         jax_odeint(_lotka_volterra(jnp), y0, TS, 1.0, 0.4))
  _close(odeint(lambda y, t: -2.0 * y, np.ones(2, np.float32), TS, rtol=1e-3, atol=1e-3),
         jax_odeint(lambda y, t: -2.0 * y, np.ones(2, np.float32), TS, rtol=1e-3, atol=1e-3))


def test_pytree_state_and_closure():
  scale = rnp.float32(0.5)
  out = odeint(lambda y, t: {"a": -y["a"], "b": y["b"] * scale}, {"a": rnp.ones(2), "b": 1.0},
               rnp.array([0.0, 1.0]))
  _close(out["a"][1], np.exp(-1.0) * np.ones(2))
  _close(out["b"][1], np.exp(0.5))
  assert out["a"].shape == (2, 2) and out["b"].shape == (2,)


def test_gradients_match_jax():
  y0 = np.array([2.0, 1.0], np.float32)
  g = revax.grad(lambda a, y: odeint(_lotka_volterra(rnp), y, TS, a, 0.4)[-1, 0],
                 argnums=(0, 1))(1.0, y0)
  jg = jax.grad(lambda a, y: jax_odeint(_lotka_volterra(jnp), y, TS, a, 0.4)[-1, 0],
                argnums=(0, 1))(1.0, y0)
  _close(g[0], jg[0], 1e-4)
  _close(g[1], jg[1], 1e-4)
  gt = revax.grad(lambda t: odeint(lambda y, s: -y, rnp.ones(1), t)[-1, 0])(TS)
  jgt = jax.grad(lambda t: jax_odeint(lambda y, s: -y, jnp.ones(1), t)[-1, 0])(TS)
  _close(gt, jgt, 1e-4)


def test_jit_and_vmap():
  f = lambda y0: odeint(lambda y, t: -y, y0, rnp.array([0.0, 1.0]))[1]
  _close(revax.jit(revax.vmap(f))(np.array([[1.0], [2.0]], np.float32)),
         np.exp(-1.0) * np.array([[1.0], [2.0]]))


def test_errors():
  with pytest.raises(TypeError, match="array of floats"):
    odeint(lambda y, t: -y, rnp.ones(1), rnp.arange(3))
  with pytest.raises(TypeError, match="arrays or scalars"):
    odeint(lambda y, t, s: -y, rnp.ones(1), rnp.array([0.0, 1.0]), "not an array")
