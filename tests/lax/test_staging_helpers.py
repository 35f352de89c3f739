"""lax.stage and lax.dce_sink against jax 0.10.2: values and weak types, dce_sink kept in jaxprs
(and its operand's computation with it) under jit/grad/vmap, and its effect on dead-code
elimination."""
import numpy as np
import pytest

import revax
import revax.lax as rlax
from revax._src.interpreters import staging

jax = pytest.importorskip("jax")
jlax = jax.lax


def test_stage_matches_jax():
  for x in (3.0, 2, np.arange(3, dtype=np.float32)):
    got, want = rlax.stage(x), jlax.stage(x)
    assert got.dtype == want.dtype and got.aval.weak_type == want.weak_type
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert float(revax.grad(lambda x: rlax.stage(x) * 2.0)(1.0)) == float(jax.grad(
      lambda x: jlax.stage(x) * 2.0)(1.0))


def _program(lax):
  def f(x):
    lax.dce_sink({"a": x * 2.0, "b": lax.sin(x)})
    return x + 1.0
  return f


def test_dce_sink_is_kept_and_transparent():
  x = np.linspace(0, 1, 4, dtype=np.float32)
  for t in (lambda f: f, revax.jit, revax.vmap):
    np.testing.assert_allclose(np.asarray(t(_program(rlax))(x)), x + 1)
  np.testing.assert_allclose(np.asarray(revax.grad(lambda v: _program(rlax)(v).sum())(x)),
                             np.asarray(jax.grad(lambda v: _program(jlax)(v).sum())(x)))
  closed = revax.make_jaxpr(_program(rlax))(x)
  names = [e.primitive.name for e in closed.eqns]
  assert names.count("dce_sink") == 2 and names.count("mul") == 1
  jaxpr, _ = staging.dce_jaxpr(closed.jaxpr, [True])
  assert [e.primitive.name for e in jaxpr.eqns] == names  # nothing removed: sin and mul stay
  assert rlax.dce_sink(1.0) is None
  with pytest.raises(NotImplementedError, match="prevent_mlir_dce=True"):
    revax.jit(lambda v: (rlax.dce_sink(v, prevent_mlir_dce=True), v)[1])(x)
