"""JaxprTracer (interpreters/staging.py) and its siblings: a tracer must answer every public
Array attribute as an Array would. Its slot `var` shadowed `Array.var`, so `x.var(-1)` inside
jit raised "'Var' object is not callable" (found by a layer norm in tests/programs)."""
import numpy as np

import revax
import revax.numpy as rnp
from revax._src.core.trace import Tracer
from revax._src.interpreters import ad, batching, staging
from revax._src.runtime.array import Array


def _all_tracer_types():
  seen, todo = [], [Tracer]
  while todo:
    for sub in todo.pop().__subclasses__():
      seen.append(sub)
      todo.append(sub)
  return seen


def test_no_tracer_attribute_shadows_an_array_attribute():
  # every public Array name a tracer type defines itself (a slot or a class attribute) would
  # hide the array method of that name, which Tracer provides for all of them
  public = {n for n in dir(Array) if not n.startswith("_")}
  types = _all_tracer_types()
  assert {staging.JaxprTracer, ad.JVPTracer, batching.BatchTracer} <= set(types)
  for t in types:
    own = set()
    for klass in t.__mro__[:t.__mro__.index(Tracer)]:
      own |= set(getattr(klass, "__slots__", ())) | set(vars(klass))
    assert not own & public - {"aval"}, (t.__name__, sorted(own & public))


def test_var_and_std_methods_under_every_transformation():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  want = x.var(-1, keepdims=True)
  np.testing.assert_allclose(revax.jit(lambda a: a.var(-1, keepdims=True))(x), want, rtol=1e-6)
  np.testing.assert_allclose(revax.vmap(lambda a: a.var())(x), x.var(-1), rtol=1e-6)
  np.testing.assert_allclose(revax.grad(lambda a: a.var())(x[0]), 2 * (x[0] - x[0].mean()) / 3,
                             rtol=1e-6)
  np.testing.assert_allclose(revax.jit(lambda a: a.std())(x), x.std(), rtol=1e-6)


def test_tracers_print_as_jax_tracers():
  # a user's `print(x)` inside a transformation: revax printed 'Traced<f32[3]>with<...>'
  import jax
  import jax.numpy as jnp
  programs = [
      lambda m, n: m.jit(lambda x: print(repr(x), str(x), f"{x}") or x)(n.ones((2, 3), n.int8)),
      lambda m, n: m.jit(lambda x: print(x) or x)(1.0),
      lambda m, n: m.jvp(lambda x: print(x) or x, (n.ones(2),), (n.ones(2),)),
      lambda m, n: m.grad(lambda x: print(x) or x.sum())(n.arange(3.0)),
      lambda m, n: m.jit(m.grad(lambda x: print(x) or x))(2.0),
      lambda m, n: m.vmap(lambda x: print(x) or x, in_axes=1)(n.ones((3, 2))),
      lambda m, n: m.vmap(m.vmap(lambda x: print(x) or x))(n.ones((3, 2))),
  ]
  import contextlib
  import io
  for program in programs:
    outs = []
    for m, n in ((revax, rnp), (jax, jnp)):
      buf = io.StringIO()
      with contextlib.redirect_stdout(buf):
        program(m, n)
      outs.append(buf.getvalue())
    assert outs[0] == outs[1]
