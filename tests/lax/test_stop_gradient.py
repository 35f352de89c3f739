"""stop_gradient: zero derivatives in every mode, integer leaves untouched, jax's values."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp

jax = pytest.importorskip("jax")

X = np.linspace(-1, 1, 6, dtype=np.float32)


def test_gradient_does_not_flow_through():
  f = lambda x: (x * lax.stop_gradient(x)).sum()
  np.testing.assert_allclose(revax.grad(f)(X), X)
  np.testing.assert_allclose(revax.jit(revax.grad(f))(X), X)
  np.testing.assert_allclose(revax.jvp(lambda x: lax.stop_gradient(x) * 2, (X,), (X,))[1],
                             np.zeros_like(X))
  np.testing.assert_allclose(revax.vmap(revax.grad(lambda x: x * lax.stop_gradient(x ** 2)))(X),
                             X ** 2)
  g = jax.grad(lambda x: (x * jax.lax.stop_gradient(rnp_sin(x))).sum())
  np.testing.assert_allclose(revax.grad(lambda x: (x * lax.stop_gradient(rnp.sin(x))).sum())(X),
                             g(X), rtol=1e-6)


def rnp_sin(x):
  return jax.numpy.sin(x)


def test_pytrees_and_integer_leaves():
  out = lax.stop_gradient({"a": X, "n": np.arange(3)})
  np.testing.assert_array_equal(out["n"], np.arange(3))
  jaxpr = revax.make_jaxpr(lambda t: lax.stop_gradient(t))({"a": X, "n": np.arange(3)})
  assert [e.primitive.name for e in jaxpr.eqns] == ["stop_gradient"]
