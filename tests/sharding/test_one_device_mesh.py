"""A mesh of one device, as JAX 0.10.2 treats it (compared with jax in this single-device
process): arrays placed by a NamedSharding over it stay single-device arrays that report that
NamedSharding (device_put, make_array_*, with_sharding_constraint, jit with in/out shardings,
whose unspecified results follow JAX's rule), the data of their shards is a SingleDeviceSharding
array, and the programs are single-device ones (no Shardy mesh or manual computation).

Where revax differs on purpose: eager ops and plain jit calls (no shardings given) on such an
array give plain single-device arrays (JAX propagates the NamedSharding): their cached fast
paths do not look at shardings, and a result that depended on which path ran would differ from
call to call."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh as JMesh
from jax.sharding import NamedSharding as JNS
from jax.sharding import PartitionSpec as JP

import revax
from revax._src.runtime.array import Array as ConcreteArray  # the concrete class
import revax.numpy as rnp
from revax.sharding import Mesh as RMesh
from revax.sharding import NamedSharding as RNS
from revax.sharding import PartitionSpec as RP

X = np.arange(12.0, dtype=np.float32).reshape(4, 3)


def _kind(s):
  """(type name, spec as tuples with trailing Nones dropped, mesh shape) of a sharding."""
  if not hasattr(s, "spec"):
    return (type(s).__name__,)
  parts = list(s.spec)
  while parts and parts[-1] is None:
    parts.pop()
  return (type(s).__name__, tuple(parts), tuple(s.mesh.shape.items()))


def _cases(lib):
  if lib == "jax":
    j, np_, S = jax, jnp, lambda *s: JNS(JMesh(np.array(jax.devices()[:1]), ("x",)), JP(*s))
  else:
    j, np_, S = revax, rnp, lambda *s: RNS(RMesh(np.array(revax.devices()[:1]), ("x",)), RP(*s))
  a = j.device_put(X, S("x"))
  f = j.jit(lambda v: v * 2, in_shardings=S("x"), out_shardings=S())
  g = j.jit(lambda v: (v + 1, v.sum()), out_shardings=(S(None, "x"), None))
  compiled = f.lower(X).compile()
  return {
      "device_put": a,
      "device_put_replicated": j.device_put(X, S()),
      "reshard": j.device_put(a, S()),
      "jit_shardings": f(X),
      "jit_out_only": g(X)[0],
      "jit_out_unspecified": g(X)[1],
      "jit_in_only": j.jit(lambda v: (v * 2, v.sum()), in_shardings=S("x"))(X),
      "jit_marked_argument": j.jit(lambda v: (v - 1, v[0]), out_shardings=(S(), None))(a),
      "constraint_eager": j.lax.with_sharding_constraint(X, S("x")),
      "from_callback": j.make_array_from_callback(X.shape, S("x"), lambda ix: X[ix]),
      "from_single_arrays": j.make_array_from_single_device_arrays(
          X.shape, S("x"), [np_.asarray(X)]),
      "shard_data": a.addressable_shards[0].data,
      "plain": np_.ones(3),
      "compiled_in": compiled.input_shardings,
      "compiled_out": compiled.output_shardings,
  }


def test_one_device_mesh_shardings_match_jax():
  want, got = _cases("jax"), _cases("revax")
  for name, w in want.items():
    r = got[name]
    if name == "compiled_in":  # jax: ((args...), {kwargs}); revax: the flat argument list
      assert [_kind(s) for s in r] == [_kind(s) for s in w[0]], (name, r, w)
      continue
    if name == "compiled_out":
      assert _kind(r[0] if isinstance(r, list) else r) == _kind(w), (name, r, w)
      continue
    for r1, w1 in zip(revax.tree_util.tree_leaves(r), jax.tree_util.tree_leaves(w), strict=True):
      assert _kind(r1.sharding) == _kind(w1.sharding), (name, r1.sharding, w1.sharding)
      np.testing.assert_allclose(np.asarray(r1), np.asarray(w1), rtol=1e-6, err_msg=name)
      assert len(r1.addressable_shards) == 1 and r1.is_fully_replicated
      assert r1.is_fully_addressable


def test_eager_ops_and_plain_jit_give_plain_arrays():
  a = revax.device_put(X, RNS(revax.make_mesh((1,), ("x",)), RP("x")))
  f = revax.jit(lambda v: v * 2)
  for _ in range(3):  # the same every call (the cached call plans included)
    for out in (f(a), a * 2, rnp.sin(a), revax.vmap(lambda v: v + 1)(a)):
      assert type(out) is ConcreteArray and _kind(out.sharding) == ("SingleDeviceSharding",)
  np.testing.assert_array_equal(f(a), 2 * X)


def test_one_device_mesh_programs_are_single_device():
  mesh = RMesh(np.array(revax.devices()[:1]), ("x",))  # Auto: shard_map specs on unsplit inputs
  s = RNS(mesh, RP("x"))
  f = revax.jit(lambda v: revax.lax.with_sharding_constraint(v * 2, s), in_shardings=s,
                out_shardings=s)
  assert "sdy" not in f.lower(X).as_text()
  sm = revax.jit(revax.shard_map(lambda v: revax.lax.psum(v, "x"), mesh=mesh, in_specs=RP("x"),
                                 out_specs=RP()))
  text = sm.lower(X).as_text()
  assert "sdy" not in text and "manual_computation" not in text
  np.testing.assert_array_equal(sm(X), X)
  a = revax.device_put(X, s)
  assert type(a) is ConcreteArray and a.devices() == {revax.devices()[0]}
  np.testing.assert_array_equal(f(a), 2 * X)
  assert f(a).sharding == s
