"""Fast paths of tracing that must not change what is traced: replayed rule recordings
(staging.record_or_replay, used by the JVP of staged programs and the invertible backward walk),
the invertible walk's per-walk VJP cache, DCE keeping untouched equations, and pausing the
garbage collector while tracing. Each is checked against the plain path (the fast path switched
off) on programs that repeat equations, by the printed jaxpr and the StableHLO text, and by
values against JAX."""
import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.core import gc_pause
from revax._src.core.avals import ShapedArray
from revax._src.interpreters import ad, staging
from revax._src.interpreters import invertible as inv
from tests.platform_tolerances import scaled_tol

rng = np.random.default_rng(0)
WS = [tuple((rng.standard_normal((8, 8)) * 0.3).astype(np.float32) for _ in range(2))
      for _ in range(4)]
X1, X2 = (rng.standard_normal((3, 8)).astype(np.float32) for _ in range(2))


def _loss(np_, wrap=None):
  def stack(ws, x1, x2):
    for k, w in enumerate(ws):  # repeated layers, with a literal that differs per layer
      x1 = x1 + np_.tanh(x2 @ w[0]) * (k + 1.0)
      x2 = x2 + np_.tanh(x1 @ w[1])
    return x1, x2
  stack = wrap(stack) if wrap is not None else stack

  def loss(ws, x1, x2):
    y1, y2 = stack(ws, x1, x2)
    return (y1 * y1).sum() + (y2 * y1).sum()  # y1 twice: aliased operands
  return loss


def _no_replay(monkeypatch):
  monkeypatch.setattr(staging, "record_or_replay", lambda trace, key, inputs, run: run())
  monkeypatch.setattr(inv, "_vjp_key", lambda *args: None)


@pytest.mark.parametrize("wrap", [None, revax.invertible], ids=["plain", "invertible"])
def test_replayed_traces_equal_the_plain_ones(monkeypatch, wrap):
  def traced():  # a fresh function each time: nothing comes from the caches of jit and AD
    loss = _loss(rnp, wrap)
    return (str(revax.make_jaxpr(revax.grad(revax.jit(loss)))(WS, X1, X2)),
            revax.jit(revax.grad(loss)).lower(WS, X1, X2).as_text())
  fast = traced()
  _no_replay(monkeypatch)
  assert traced() == fast


@pytest.mark.parametrize("wrap", [None, revax.invertible], ids=["plain", "invertible"])
def test_replayed_gradients_match_jax(wrap):
  got = revax.jit(revax.grad(_loss(rnp, wrap), argnums=(0, 1, 2)))(WS, X1, X2)
  want = jax.jit(jax.grad(_loss(jnp), argnums=(0, 1, 2)))(WS, X1, X2)
  for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), **scaled_tol(w, rtol=1e-4, atol=5e-4))


def test_jvp_of_a_staged_program_replays_repeated_equations(monkeypatch):
  def f(x):
    for _ in range(5):
      x = rnp.sin(x) * 2.0
    return x
  calls = []
  run_rule = ad._replayed_jvp

  def counting(trace, key, rule, *args):
    calls.append(key[1].name)
    return run_rule(trace, key, rule, *args)
  monkeypatch.setattr(ad, "_replayed_jvp", counting)
  x = np.linspace(-1, 1, 4, dtype=np.float32)
  got = revax.jit(lambda x: revax.jvp(revax.jit(f), (x,), (rnp.ones_like(x),)))(x)
  want = jax.jvp(lambda x: _jax_f(x), (x,), (np.ones_like(x),))
  np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-5)
  assert calls.count("sin") == 5  # every equation goes through the replay path


def _jax_f(x):
  for _ in range(5):
    x = jnp.sin(x) * 2.0
  return x


def test_values_key_tells_aliased_operands_and_literal_values_apart():
  trace = staging.DynamicJaxprTrace()
  a = trace.new_arg(ShapedArray((3,), np.float32))
  b = trace.new_arg(ShapedArray((3,), np.float32))
  assert staging.values_key(trace, [a, a]) != staging.values_key(trace, [a, b])
  assert staging.values_key(trace, [a, b]) == staging.values_key(trace, [b, a])
  assert staging.values_key(trace, [a, 2.0]) != staging.values_key(trace, [a, 3.0])
  assert staging.values_key(trace, [a, 0.0]) != staging.values_key(trace, [a, -0.0])
  assert staging.values_key(trace, [a, 1]) != staging.values_key(trace, [a, 1.0])
  assert staging.values_key(trace, [a, np.ones(3, np.float32)]) is None  # an array constant
  other = staging.DynamicJaxprTrace().new_arg(ShapedArray((3,), np.float32))
  assert staging.values_key(trace, [other]) is None  # another trace's tracer


def test_params_key_distinguishes_types_and_refuses_unhashable_params():
  assert staging.params_key({"y": 1}) != staging.params_key({"y": 1.0})
  assert staging.params_key({"y": 1}) != staging.params_key({"y": True})
  assert staging.params_key({"y": 0.0}) != staging.params_key({"y": -0.0})
  assert staging.params_key({"y": [1, 2]}) is None


def test_a_rule_reading_a_closed_over_value_is_not_replayed():
  trace = staging.DynamicJaxprTrace()
  x = trace.new_arg(ShapedArray((3,), np.float32))
  hidden = trace.new_arg(ShapedArray((3,), np.float32))
  runs = []

  def run():
    runs.append(1)
    return [revax.lax.add(x, hidden)]  # reads `hidden`, which is not an input
  from revax._src.core.trace import set_current_trace
  with set_current_trace(trace):
    staging.record_or_replay(trace, "k", [x], run)
    staging.record_or_replay(trace, "k", [x], run)
  assert len(runs) == 2 and len(trace.eqns) == 2


def test_dce_keeps_equations_whose_outputs_are_all_used():
  jaxpr = revax.make_jaxpr(lambda x: (rnp.sin(x), rnp.cos(x)))(1.0).jaxpr
  pruned, _ = staging.dce_jaxpr(jaxpr, [True, False])
  assert [e.primitive.name for e in pruned.eqns] == ["sin"]
  assert pruned.eqns[0] is jaxpr.eqns[0]


def test_gc_is_paused_while_tracing_and_restored_after():
  seen = []

  def f(x):
    seen.append(gc.isenabled())
    return x * 2
  assert gc.isenabled()
  revax.make_jaxpr(f)(1.0)
  assert seen == [False] and gc.isenabled()
  gc.disable()
  try:  # a collector turned off by the user stays off
    with gc_pause.paused_gc():
      with gc_pause.paused_gc():
        pass
    assert not gc.isenabled()
  finally:
    gc.enable()
  with pytest.raises(ValueError):
    with gc_pause.paused_gc():
      raise ValueError
  assert gc.isenabled()
