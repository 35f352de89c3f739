"""optimization_barrier and fenced_call: identity semantics under every transformation, and the
StableHLO each lowers to."""
import numpy as np

import revax
import revax.lax as lax
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from revax._src.interpreters.barrier import fenced_call
from revax.test_util import check_vmap
from tests.gradcheck import check_grads
from tests.platform_tolerances import allclose_tol

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


def test_optimization_barrier_is_the_identity_under_transformations():
  f = lambda x, y: lax.optimization_barrier((rnp.sin(x), {"y": y * 2}))
  out = f(X, 3.0)
  np.testing.assert_allclose(out[0], np.sin(X), rtol=1e-6)
  assert float(out[1]["y"]) == 6.0
  jitted = revax.jit(f)(X, 3.0)
  np.testing.assert_allclose(jitted[0], np.sin(X), rtol=1e-6)
  text = revax.jit(f).lower(X, 3.0).as_text()
  assert '"stablehlo.optimization_barrier"' in text
  g = lambda x: (lax.optimization_barrier(rnp.sin(x)) * x).sum()
  check_grads(g, (X,), order=2, modes=("fwd", "rev"))
  check_vmap(lambda x: lax.optimization_barrier(x * 2), (X,), in_axes=1)
  check_jaxpr(revax.make_jaxpr(revax.grad(g))(X))


def test_fenced_call_evaluates_its_jaxpr_inside_a_conditional():
  closed = revax.make_jaxpr(lambda x: rnp.tanh(x) * 2)(X)
  f = lambda x: fenced_call(closed, x)[0]
  np.testing.assert_allclose(f(X), np.tanh(X) * 2, **allclose_tol(rtol=1e-6))
  np.testing.assert_allclose(revax.jit(f)(X), np.tanh(X) * 2, **allclose_tol(rtol=1e-6))
  text = revax.jit(f).lower(X).as_text()
  assert '"stablehlo.if"' in text and '"stablehlo.rng"' in text
  check_grads(lambda x: f(x).sum(), (X,), order=2, modes=("fwd", "rev"))
  check_vmap(f, (np.stack([X, -X]),), in_axes=0)
  check_jaxpr(revax.make_jaxpr(revax.grad(lambda x: f(x).sum()))(X))
  grads = revax.jit(revax.grad(lambda x: f(x).sum()))(X)
  np.testing.assert_allclose(grads, 2 * (1 - np.tanh(X) ** 2), **allclose_tol(rtol=1e-5))


def test_fenced_calls_share_one_opaque_predicate_per_body():
  """One `rng` per function body or region, whatever the number of fenced calls in it: each
  call is its own conditional on the shared predicate, and nested bodies (a loop's, a branch's)
  make their own, so the module stays well formed."""
  closed = revax.make_jaxpr(lambda x: rnp.tanh(x) * 2)(X)
  fence = lambda v: fenced_call(closed, v)[0]

  def f(x):
    y = fence(fence(fence(x)))
    z, _ = lax.scan(lambda c, _: (fence(fence(c)), None), y, None, length=2)
    return lax.cond(x.sum() > 0, fence, lambda v: -v, z)

  text = revax.jit(f).lower(X).as_text()
  assert text.count('"stablehlo.rng"') == 3  # main, the loop body, the true branch
  assert text.count('"stablehlo.if"') == 6  # one per call
  g = lambda v: np.tanh(v) * 2
  for x in (X + 0.5, X - 0.5):  # the true branch (sum > 0), then the false one
    z = x
    for _ in range(7):  # three calls, then two per loop step
      z = g(z)
    np.testing.assert_allclose(revax.jit(f)(x), g(z) if x.sum() > 0 else -z, **allclose_tol(rtol=1e-5))
