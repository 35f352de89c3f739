"""Run in a subprocess with 4 CPU devices for both libraries (see test_shard_map.py): shard_map
programs over 1-d and 2-d meshes through jax.jit(jax.shard_map) and revax.shard_map, compared."""
import numpy as np
import jax
from jax.sharding import Mesh as JMesh
from jax.sharding import PartitionSpec as JP

import revax
from tests.sharding.children import auto_mesh
from revax import P as RP

assert len(jax.devices()) == 4 and len(revax.devices()) == 4, (jax.devices(), revax.devices())
rng = np.random.default_rng(0)
X = rng.standard_normal((8, 6)).astype(np.float32)
W = rng.standard_normal((6, 4)).astype(np.float32)
MESHES = {
    "1d": (JMesh(np.array(jax.devices()), ("x",)), auto_mesh((4,), ("x",))),
    "2d": (JMesh(np.array(jax.devices()).reshape(2, 2), ("a", "b")),
           auto_mesh((2, 2), ("a", "b"))),
}
# (mesh, per-member function of (lax, numpy, *blocks), in_specs, out_specs, args, check_vma)
CASES = [
    ("1d", lambda l, n, v: l.psum(v.sum(0), "x"), lambda P: P("x"), lambda P: P(), (X,), True),
    ("1d", lambda l, n, v: v * 2 + l.axis_index("x"), lambda P: P("x"), lambda P: P("x"), (X,),
     True),
    ("1d", lambda l, n, v: l.all_gather(v, "x", tiled=True), lambda P: P("x"), lambda P: P(),
     (X,), False),
    ("1d", lambda l, n, v: l.ppermute(v, "x", [(i, (i + 1) % 4) for i in range(4)]),
     lambda P: P("x"), lambda P: P("x"), (X,), True),
    ("1d", lambda l, n, v: l.psum_scatter(v, "x", scatter_dimension=0, tiled=True),
     lambda P: P(None, None), lambda P: P("x"), (X,), False),
    ("1d", lambda l, n, v, w: l.psum(v @ w, "x"), lambda P: (P(None, "x"), P("x")),
     lambda P: P(), (X[:, :4], W[:4]), True),
    ("2d", lambda l, n, v: l.psum(v.sum(0), "a"), lambda P: P("a", "b"), lambda P: P("b"), (X,),
     True),
    ("2d", lambda l, n, v, w: l.psum(v @ w, "b"), lambda P: (P("a", "b"), P("b", None)),
     lambda P: P("a"), (X[:, :4], W[:4]), True),
    ("2d", lambda l, n, v: l.pmean(v, ("a", "b")), lambda P: P(("a", "b")), lambda P: P(),
     (X,), True),
    ("2d", lambda l, n, v: v + l.axis_index(("a", "b")), lambda P: P(("b", "a")),
     lambda P: P(("b", "a")), (X,), True),
]
COLLECTIVE_OPS = [("all_reduce",), ("partition_id",), ("all_gather",), ("collective_permute",),
                  ("reduce_scatter",), ("all_reduce",), ("all_reduce",), ("all_reduce",),
                  ("all_reduce",), ("partition_id",)]
for k, (mesh, fn, ins, outs, args, check) in enumerate(CASES):
  jm, rm = MESHES[mesh]
  import jax.numpy as jnp
  import revax.numpy as rnp
  want = jax.jit(jax.shard_map(lambda *v: fn(jax.lax, jnp, *v), mesh=jm, in_specs=ins(JP),
                               out_specs=outs(JP), check_vma=check))(*args)
  got = revax.shard_map(lambda *v: fn(revax.lax, rnp, *v), mesh=rm, in_specs=ins(RP),
                        out_specs=outs(RP), check_vma=check)(*args)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5,
                             err_msg=f"case {k}")
  jitted = revax.jit(revax.shard_map(lambda *v: fn(revax.lax, rnp, *v), mesh=rm,
                                     in_specs=ins(RP), out_specs=outs(RP), check_vma=check))
  got_jit = jitted(*args)
  np.testing.assert_allclose(np.asarray(got_jit), np.asarray(want), rtol=1e-5, atol=1e-5)
  # under jit over the 4-device mesh: one manual region, the collectives as StableHLO ones
  text = jitted.lower(*args).as_text()
  assert "sdy.manual_computation" in text and "num_partitions = 4" in text, (k, text)
  assert any(op in text for op in COLLECTIVE_OPS[k]), (k, text)
  assert len(got_jit.addressable_shards) == 4, k

# grad through shard_map: a data-parallel loss equals the unsharded one, gradient included
jm, rm = MESHES["1d"]


def loss(l, n, sm, mesh, P):
  def per_shard(w, x):
    return l.pmean(n.mean(n.tanh(x @ w) ** 2), "x")
  return lambda w, x: sm(per_shard, mesh=mesh, in_specs=(P(), P("x")), out_specs=P())(w, x)


import jax.numpy as jnp
import revax.numpy as rnp
gj = jax.grad(loss(jax.lax, jnp, jax.shard_map, jm, JP))(W, X)
gr = revax.grad(loss(revax.lax, rnp, revax.shard_map, rm, RP))(W, X)
plain = revax.grad(lambda w, x: rnp.mean(rnp.tanh(x @ w) ** 2))(W, X)
np.testing.assert_allclose(np.asarray(gr), np.asarray(gj), rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(np.asarray(gr), np.asarray(plain), rtol=1e-5, atol=1e-6)

# grad and vmap of jit(shard_map): the rules of the staged shard_map use its vmap form
jm2, rm2 = MESHES["2d"]
gj = jax.grad(lambda w, x: jax.jit(loss(jax.lax, jnp, jax.shard_map, jm, JP))(w, x))(W, X)
gr = revax.grad(lambda w, x: revax.jit(loss(revax.lax, rnp, revax.shard_map, rm, RP))(w, x))(W, X)
np.testing.assert_allclose(np.asarray(gr), np.asarray(gj), rtol=1e-5, atol=1e-6)
XX = np.stack([X, 2 * X])
vj = jax.vmap(jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=jm, in_specs=JP("x"),
                                    out_specs=JP())))(XX)
vr = revax.vmap(revax.jit(revax.shard_map(lambda v: revax.lax.psum(v, "x"), mesh=rm,
                                          in_specs=RP("x"), out_specs=RP())))(XX)
np.testing.assert_allclose(np.asarray(vr), np.asarray(vj), rtol=1e-5)

# all_to_all (tiled and not) and untiled all_gather / psum_scatter, manual over the mesh
for body, ins, outs in [
    (lambda l, v: l.all_to_all(v, "x", 1, 0, tiled=True), "x", (None, "x")),
    (lambda l, v: l.all_to_all(v.reshape(2, 4, 1), "x", 1, 2), "x", "x"),
    (lambda l, v: l.all_gather(v, "x", axis=1), "x", None),
    (lambda l, v: l.psum_scatter(v.T, "x"), None, "x"),
    (lambda l, v: l.pmax(v, "x") - l.pmin(v, "x"), "x", None),
]:
  Y = rng.standard_normal((8, 4)).astype(np.float32)
  spec = lambda P, s: P() if s is None else (P(*s) if isinstance(s, tuple) else P(s))
  want = jax.jit(jax.shard_map(lambda v: body(jax.lax, v), mesh=jm, in_specs=spec(JP, ins),
                               out_specs=spec(JP, outs), check_vma=False))(Y)
  f = revax.jit(revax.shard_map(lambda v: body(revax.lax, v), mesh=rm, in_specs=spec(RP, ins),
                                out_specs=spec(RP, outs), check_vma=False))
  np.testing.assert_allclose(np.asarray(f(Y)), np.asarray(want), rtol=1e-5, atol=1e-6)
  assert "sdy.manual_computation" in f.lower(Y).as_text()

# partial-manual: manual over "a", "b" left to the partitioner
Y = rng.standard_normal((8, 8)).astype(np.float32)
want = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "a"), mesh=jm2, in_specs=JP("a"),
                             out_specs=JP(), axis_names={"a"}))(Y)
f = revax.jit(revax.shard_map(lambda v: revax.lax.psum(v, "a"), mesh=rm2, in_specs=RP("a"),
                              out_specs=RP(), axis_names={"a"}))
np.testing.assert_allclose(np.asarray(f(Y)), np.asarray(want), rtol=1e-5)
text = f.lower(Y).as_text()
assert 'manual_axes={"a"}' in text and '{"a", ?}' in text, text
# inputs placed by the caller's sharding go in as they are
ys = revax.device_put(Y, revax.NamedSharding(rm2, RP("a", "b")))
np.testing.assert_allclose(np.asarray(f(ys)), np.asarray(want), rtol=1e-5)
# errors of a staged shard_map (under jit over 4 devices) are raised while tracing, as eagerly
for body, spec, kind, match, arg in [
    (lambda v: v, RP(), ValueError, "could not infer replication", X),
    (lambda v: revax.lax.psum(v, "y"), RP(), NameError, "unbound axis name: y", X),
    (lambda v: v, RP("x"), ValueError, "not divisible", X[:6]),
]:
  try:
    revax.jit(revax.shard_map(body, mesh=rm, in_specs=RP("x"), out_specs=spec))(arg)
    raise AssertionError(f"no {kind.__name__}")
  except kind as e:
    assert match in str(e), e
print("SHARD_MAP_OK", len(CASES))
