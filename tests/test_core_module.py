"""revax.core: jax.core's public names on revax's core objects."""
import numpy as np

import revax
import revax.core as core
import revax.numpy as rnp


def test_core_names_work_on_revax_objects():
  closed = revax.make_jaxpr(lambda x, y: x * y + 1)(2.0, 3.0)
  (out,) = core.eval_jaxpr(closed.jaxpr, closed.consts, 2.0, 3.0)
  assert float(out) == 7.0
  assert all(isinstance(v, core.Atom) for v in closed.jaxpr.invars)
  assert isinstance(revax.typeof(rnp.ones(2)), core.AbstractValue)
  assert isinstance(revax.typeof(rnp.ones(2)), core.ShapedArray)
  seen = []

  @revax.jit
  def f(x):
    seen.append(isinstance(x, core.Tracer))
    with core.eval_context():
      y = rnp.ones(2) * 2  # computed now, not staged
    assert not isinstance(y, core.Tracer)
    return x + y

  np.testing.assert_array_equal(f(rnp.zeros(2)), [2.0, 2.0])
  assert seen == [True]
  assert core.max_dim(2, 3) == 3 and core.min_dim(2, 3) == 2
  assert core.ensure_compile_time_eval is revax.ensure_compile_time_eval
