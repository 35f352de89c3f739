"""The `accuracy=` request of the transcendental ops (Tolerance, AccuracyMode) against jax
0.10.2 on CPU: every op that takes one gives jax's bits with and without a request (XLA:CPU has
one implementation of each), eagerly and under jit; malformed requests raise JAX's errors."""
import numpy as np
import pytest

import revax
import revax.lax as rlax
from revax._src.runtime.pjrt import CompileError
from tests.platform_tolerances import ON_TPU, jax_on_the_chip

jax = pytest.importorskip("jax")
jlax = jax.lax

OPS = ["exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "sqrt",
       "rsqrt", "cbrt"]
X = np.linspace(0.1, 2.5, 9, dtype=np.float32)


LABELS = ["HIGHEST", "DEFAULT", "atol1e-6", "rtol1e-3_ulps2"]  # (tests/tpu/probe_numerics.py)


def _requests(lax):
  return [lax.AccuracyMode.HIGHEST, lax.AccuracyMode.DEFAULT, lax.Tolerance(atol=1e-6),
          lax.Tolerance(rtol=1e-3, ulps=2)]


def _as_jax_on_the_chip(check, compute, rtol):
  """On a TPU: revax's jitted result as jax's on the same chip (ACCURACY_REFUSED: where XLA:TPU
  refused jax's request with a compile error, revax's identical request is refused too)."""
  want = jax_on_the_chip(check)
  if not want["ok"]:
    with pytest.raises(CompileError, match="LLO_CHECK failure"):
      compute()
  else:
    np.testing.assert_allclose(np.asarray(compute()), np.asarray(want["value"]), rtol=rtol)


@pytest.mark.parametrize("op", OPS)
def test_requests_give_jax_values(op):
  want = np.asarray(getattr(jlax, op)(X))
  for label, req, jreq in zip(LABELS, _requests(rlax), _requests(jlax), strict=True):
    np.testing.assert_array_equal(np.asarray(getattr(jlax, op)(X, accuracy=jreq)), want)
    f = lambda x, req=req: getattr(rlax, op)(x, accuracy=req)
    np.testing.assert_allclose(np.asarray(f(X)), want, rtol=2e-6)
    if ON_TPU:  # (the chip's functions, as jax's on the chip: ACCURACY_REFUSED)
      _as_jax_on_the_chip(f"accuracy/{op}/{label}", lambda f=f: revax.jit(f)(X), rtol=2e-6)
    else:
      np.testing.assert_allclose(np.asarray(revax.jit(f)(X)), want, rtol=2e-6)


@pytest.mark.parametrize("op", OPS)
def test_lowering_keeps_the_request(op):
  """The request reaches XLA as jax's StableHLO `result_accuracy` (XLA:TPU picks its
  implementation by it; found by the chip run of 2026-12-06, where revax dropped it), and the
  jaxpr carries it as jax's `accuracy` parameter; gradients as jax's."""
  import re
  for label, req, jreq in zip(LABELS, _requests(rlax), _requests(jlax), strict=True):
    f = lambda x, req=req: getattr(rlax, op)(x, accuracy=req)
    ours = revax.jit(f).lower(X).as_text()
    theirs = jax.jit(lambda x, r=jreq: getattr(jlax, op)(x, accuracy=r)).lower(X).as_text()
    modes = lambda text: re.findall(r"result_accuracy_mode<(\w+)>", text)
    assert set(modes(ours)) == set(modes(theirs)), (req, ours)
    (eqn,) = revax.make_jaxpr(f)(X).eqns
    assert eqn.params == {"accuracy": req}
    grad = lambda f=f: revax.jit(revax.grad(lambda x: f(x).sum()))(X)
    if ON_TPU:
      _as_jax_on_the_chip(f"accuracy_grad/{op}/{label}", grad, rtol=2e-5)
      continue
    g = grad()
    want = jax.grad(lambda x, r=jreq: getattr(jlax, op)(x, accuracy=r).sum())(X)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-5)
  # no request: the equation holds accuracy=None, as jax's, and prints none
  closed = revax.make_jaxpr(getattr(rlax, op))(X)
  assert closed.eqns[0].params == jax.make_jaxpr(getattr(jlax, op))(X).eqns[0].params
  assert closed.eqns[0].params == {"accuracy": None} and "accuracy" not in str(closed)


def test_errors_of_jax():
  for lax in (rlax, jlax):
    with pytest.raises(ValueError, match="Tolerances must be non-negative"):
      lax.Tolerance(atol=-1.0)
    with pytest.raises(ValueError, match="At least one of atol, rtol, or ulps must be set"):
      lax.Tolerance()
    with pytest.raises(NotImplementedError, match="Accuracy high not supported"):
      jax.block_until_ready(lax.exp(X, accuracy="high"))
  assert [m.name for m in rlax.AccuracyMode] == [m.name for m in jlax.AccuracyMode]
