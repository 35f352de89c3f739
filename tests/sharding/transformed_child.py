"""Run in a subprocess with 4 CPU devices for both libraries (see test_transformed_shardings.py):
a jitted function's own in_shardings/out_shardings under grad, jvp, vjp, linearize and vmap
(and inside an outer jit), compared with jax: the .sharding of every result and its value."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh
from jax.sharding import NamedSharding as JNS
from jax.sharding import PartitionSpec as JP

import revax
from tests.sharding.children import auto_mesh, spec_of
import revax.numpy as rnp
from revax.sharding import NamedSharding as RNS
from revax.sharding import PartitionSpec as RP

assert len(jax.devices()) == 4 and revax.local_device_count() == 4
rng = np.random.default_rng(0)
X = rng.standard_normal((8, 4)).astype(np.float32)
W = rng.standard_normal((4, 6)).astype(np.float32)
JM = JMesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))
RM = auto_mesh((2, 2), ("a", "b"))




def build(lib):
  """The same programs in each library: {case name: a thunk giving a result or a list}."""
  if lib == "jax":
    j, np_, S = jax, jnp, lambda *s: JNS(JM, JP(*s))
  else:
    j, np_, S = revax, rnp, lambda *s: RNS(RM, RP(*s))
  f = j.jit(lambda v: np_.sin(v) * 2, in_shardings=S("a"), out_shardings=S(None, "b"))
  g = j.jit(lambda v, w: (np_.sin(v) @ w, (v * v).sum()), in_shardings=(S("a"), S()),
            out_shardings=(S("a", "b"), S()))
  h = j.jit(lambda v: v * 3, out_shardings=S("b"))  # only the result's sharding
  k = j.jit(lambda v: np_.tanh(v), in_shardings=S(None, "b"))  # only the argument's
  loss = lambda v: f(v).sum()
  xs = np.stack([X, 2 * X])
  return {
      "call": lambda: f(X),
      "grad": lambda: j.grad(loss)(X),
      "jvp": lambda: list(j.jvp(f, (X,), (X,))),
      "vjp": lambda: j.vjp(f, X)[1](X)[0],
      "linearize": lambda: j.linearize(f, X)[1](X),
      "vmap": lambda: j.vmap(f)(xs),
      "vmap_axis1": lambda: j.vmap(f, in_axes=1, out_axes=0)(np.swapaxes(xs, 0, 1)),
      "vmap_grad": lambda: j.vmap(j.grad(loss))(xs),
      "grad_two": lambda: list(j.grad(lambda v, w: g(v, w)[0].sum() + g(v, w)[1],
                                      argnums=(0, 1))(X, W)),
      "grad_out_only": lambda: j.grad(lambda v: h(v).sum())(X),
      "grad_in_only": lambda: j.grad(lambda v: k(v).sum())(X),
      "value_and_grad": lambda: list(j.value_and_grad(lambda v: (f(v) ** 2).mean())(X)),
      "jit_of_grad": lambda: j.jit(j.grad(loss))(X),
      "hessian_vp": lambda: j.jvp(j.grad(loss), (X,), (X,))[1],
  }


jcases, rcases = build("jax"), build("revax")
for name in jcases:
  want, got = jcases[name](), rcases[name]()
  want = want if isinstance(want, list) else [want]
  got = got if isinstance(got, list) else [got]
  for w, r in zip(want, got, strict=True):
    np.testing.assert_allclose(np.asarray(r), np.asarray(w), rtol=2e-5, atol=2e-5, err_msg=name)
    ws, rs = w.sharding, r.sharding
    assert type(rs).__name__ == type(ws).__name__, (name, rs, ws)
    if hasattr(ws, "spec"):
      assert spec_of(rs) == spec_of(ws), (name, rs, ws)
      assert len(r.addressable_shards) == 4
      for s in r.addressable_shards:
        np.testing.assert_allclose(np.asarray(s.data), np.asarray(w)[s.index], rtol=2e-5,
                                   atol=2e-5, err_msg=name)

# the jaxprs carry the shardings, as jax's do (JVP tangents take the primal's, the transpose's
# cotangents the value's, vmap leaves the batch dimension unsplit)
S = lambda *s: RNS(RM, RP(*s))
f = revax.jit(lambda v: rnp.sin(v) * 2, in_shardings=S("a"), out_shardings=S(None, "b"))
eqns = [e for e in revax.make_jaxpr(revax.grad(lambda v: f(v).sum()))(X).eqns
        if e.primitive.name == "jit"]
assert [e.params["in_shardings"] for e in eqns] == [(S("a"),), (None, S(None, "b"))], eqns
assert [e.params["out_shardings"] for e in eqns] == [(S(None, "b"), None), (S("a"),)], eqns
(eqn,) = revax.make_jaxpr(revax.vmap(f))(np.stack([X, X])).eqns
assert eqn.params["in_shardings"] == (S(None, "a"),)
assert eqn.params["out_shardings"] == (S(None, None, "b"),)
# nested in an outer jit, the shardings constrain the call's operands and results there
text = revax.jit(lambda v: f(v) + 1).lower(X).as_text()
assert 'sdy.sharding_constraint' in text and '[{"a"}, {}]' in text and '[{}, {"b"}]' in text
# an unsharded jit's equation has no sharding params (its jaxpr is unchanged)
(plain,) = revax.make_jaxpr(revax.grad(lambda v: revax.jit(rnp.sin)(v).sum()))(X).eqns[:1]
assert "in_shardings" not in plain.params
print("TRANSFORMED_OK")
