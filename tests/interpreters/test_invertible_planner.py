"""The invertible planner is deterministic and safe (issue 14, items 17-19).

- the reconstruction plan is a function of the jaxpr alone: the same gradient under eight
  PYTHONHASHSEEDs (one subprocess each) has identical bits, and eager equals jit;
- it never undoes a multiplication (or division) by a value known at trace time to hold zeros:
  the gradient matches plain reverse mode instead of turning NaN, allow_storing=True stores the
  operand, allow_storing=False names the singular step;
- unjitted gradients through `invertible` do not keep their jaxprs and plans alive.
"""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.core.jaxpr import ClosedJaxpr
from revax._src.interpreters import invertible as inv
from tests.child_env import child_env
from tests.platform_tolerances import allclose_tol

X = np.array([0.5, -1.0, 0.25], np.float32)
MASK = np.array([1.0, 0.0, 2.0], np.float32)


def _grad_pair(f):
  """(eager grad, jitted grad) of sum(f(x)) at X, and plain reverse mode's."""
  loss = lambda g: lambda x: sum(rnp.sum(o) for o in revax.tree_util.tree_leaves(g(x)))
  g = revax.grad(loss(revax.invertible(f)))
  return g(X), revax.jit(g)(X), revax.grad(loss(f))(X)


# --- 17. determinism ---------------------------------------------------------------------------
def test_exp_and_zero_product_uses_the_exp_inverse():
  eager, jitted, plain = _grad_pair(lambda x: (rnp.exp(x), x * 0.0))
  np.testing.assert_allclose(eager, np.exp(X), rtol=1e-6)
  np.testing.assert_allclose(jitted, np.exp(X), **allclose_tol(rtol=1e-6))  # the device's exp
  np.testing.assert_allclose(eager, plain, rtol=1e-6)


def test_plan_is_the_same_for_equal_jaxprs():
  """Two traces of one function (fresh variables, different addresses) plan the same steps."""
  f = lambda x, y: (rnp.exp(x) + y, y * 2.0, x * 0.0)

  def plan_summary():
    closed = revax.make_jaxpr(f)(X, X)
    plan = inv.reconstruction_plan(closed)
    order = {v: i for i, v in enumerate(
        closed.jaxpr.invars + [o for e in closed.jaxpr.eqns for o in e.outvars])}
    steps = sorted((order[v], kind, None if known is None else tuple(known),
                    getattr(what, "primitive", None) and what.primitive.name)
                   for v, (kind, what, known) in plan.steps.items())
    return plan.saved, steps

  first = plan_summary()
  for _ in range(3):
    assert plan_summary() == first


_HASHSEED_SCRIPT = textwrap.dedent("""
    import numpy as np
    import revax
    import revax.numpy as rnp
    f = revax.invertible(lambda x: (rnp.exp(x), x * 0.0, rnp.tanh(x) + x * 2.0))
    loss = lambda x: sum(rnp.sum(o) for o in f(x))
    x = np.array([0.5, -1.0, 0.25], np.float32)
    eager = np.asarray(revax.grad(loss)(x))
    jitted = np.asarray(revax.jit(revax.grad(loss))(x))
    print(eager.tobytes().hex(), jitted.tobytes().hex())
""")


def test_gradient_bits_do_not_depend_on_the_hash_seed():
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  results = set()
  for seed in range(8):
    env = child_env(PYTHONHASHSEED=str(seed * 7919 + 1))
    out = subprocess.run([sys.executable, "-c", _HASHSEED_SCRIPT], env=env, cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    results.add(out.stdout.strip())
  assert len(results) == 1, results
  eager_hex, jit_hex = results.pop().split()
  eager = np.frombuffer(bytes.fromhex(eager_hex), np.float32)
  expected = np.exp(X) + (1 - np.tanh(X) ** 2) + 2.0
  np.testing.assert_allclose(eager, expected, rtol=1e-6)
  np.testing.assert_allclose(np.frombuffer(bytes.fromhex(jit_hex), np.float32), expected,
                             rtol=1e-5)


# --- 18. no singular inverse -------------------------------------------------------------------
@pytest.mark.parametrize("name, f", [
    ("literal_zero", lambda x: rnp.exp(x) * 0.0 + x),
    ("constant_mask", lambda x: rnp.exp(x) * MASK),
    ("broadcast_zeros", lambda x: rnp.exp(x) * rnp.zeros(3)),
    ("divide_zero_numerator", lambda x: (rnp.zeros(3) / rnp.exp(x), x)),
])
def test_known_zero_factor_is_not_inverted(name, f):
  eager, jitted, plain = _grad_pair(f)
  assert np.all(np.isfinite(plain))
  np.testing.assert_allclose(eager, plain, rtol=1e-6)
  np.testing.assert_allclose(jitted, plain, **allclose_tol(rtol=1e-6))  # the device's exp


def test_known_zero_factor_is_stored_or_reported():
  f = lambda x: rnp.exp(x) * MASK
  closed = inv.inline_calls(revax.make_jaxpr(f)(X))
  plan = inv.reconstruction_plan(closed)
  assert plan.saved == (0,)  # x is stored rather than rebuilt as log(out / mask)
  with pytest.raises(ValueError, match="cannot invert"):
    revax.grad(lambda x: revax.invertible(f, allow_storing=False)(x).sum())(X)
  g = lambda x: revax.invertible(lambda x: x * MASK, allow_storing=False)(x).sum()
  with pytest.raises(ValueError, match="singular"):
    revax.grad(g)(X)


def test_nonzero_constant_factor_is_still_inverted():
  f = lambda x: rnp.exp(x) * np.array([1.0, 3.0, 2.0], np.float32)
  closed = inv.inline_calls(revax.make_jaxpr(f)(X))
  assert inv.reconstruction_plan(closed).saved == ()
  eager, jitted, plain = _grad_pair(f)
  np.testing.assert_allclose(eager, plain, rtol=1e-6)


# --- 19. no unbounded caches ------------------------------------------------------------------
def test_unjitted_invertible_grads_do_not_accumulate_jaxprs():
  w = rnp.ones((4, 4)) * 0.1

  def block(x1, x2):
    y1 = x1 + rnp.tanh(x2 @ w)
    return y1, x2 + rnp.tanh(y1 @ w)

  def net(a, b):
    for _ in range(4):
      a, b = revax.invertible(block)(a, b)
    return a.sum() + b.sum()

  g = revax.grad(net)
  a = rnp.ones((2, 4))
  for _ in range(2):
    g(a, a)
  gc.collect()
  before = sum(isinstance(o, ClosedJaxpr) for o in gc.get_objects())
  for _ in range(5):
    g(a, a)
  gc.collect()
  after = sum(isinstance(o, ClosedJaxpr) for o in gc.get_objects())
  assert after <= before, (before, after)
