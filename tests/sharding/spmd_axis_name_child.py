"""Run with 4 CPU devices for both libraries (see test_spmd_axis_name.py): vmap's spmd_axis_name
splits the batch dimension over mesh axes where the function states a layout
(with_sharding_constraint, a jit's shardings, shard_map's specs), compared with jax: the
.sharding of every result, its values (equal to the computation without any layout), and the
errors jax raises."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh
from jax.sharding import NamedSharding as JNS
from jax.sharding import PartitionSpec as JP

import revax
import revax.numpy as rnp
from revax.sharding import NamedSharding as RNS
from revax.sharding import PartitionSpec as RP
from tests.sharding.children import auto_mesh, spec_of

assert len(jax.devices()) == 4 and revax.local_device_count() == 4
rng = np.random.default_rng(0)
X = rng.standard_normal((8, 4)).astype(np.float32)
X3 = rng.standard_normal((2, 2, 4)).astype(np.float32)
W = np.arange(4, dtype=np.float32)
MESHES = {"jax": (JMesh(np.array(jax.devices()), ("x",)),
                  JMesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))),
          "revax": (auto_mesh((4,), ("x",)), auto_mesh((2, 2), ("a", "b")))}


def build(lib):
  """{case name: (thunk giving a result or a list, thunk of the same without any layout)}."""
  j, np_, NS, P = ((jax, jnp, JNS, JP) if lib == "jax" else (revax, rnp, RNS, RP))
  m1, m2 = MESHES[lib]
  wsc = j.lax.with_sharding_constraint
  c1 = lambda v, *s: wsc(v, NS(m1, P(*s)))
  c2 = lambda v, *s: wsc(v, NS(m2, P(*s)))
  f = lambda v: np_.sin(c1(v * 2, None))
  plain_f = lambda v: np_.sin(v * 2)
  vm = lambda fn, **kw: j.vmap(fn, **kw)
  sm = lambda fn, i, o, **kw: j.shard_map(fn, mesh=m2, in_specs=i, out_specs=o, **kw)
  psum_b = sm(lambda v: j.lax.psum(v, "b"), P("b"), P())
  twice = sm(lambda v: np_.sin(v) * 2, P("b"), P("b"))
  pair = sm(lambda v, w: (v * w, w + 1), (P("b"), P("b")), (P("b"), P("b")))
  repl = sm(lambda v: v * 3, P(), P())
  jitted = j.jit(lambda v: np_.cos(v), in_shardings=NS(m2, P("b")),
                 out_shardings=NS(m2, P("b")))
  plain_twice = lambda v: np_.sin(v) * 2
  sq = lambda fn: (lambda v: (fn(v) ** 2).sum())
  scan_body = lambda v: j.lax.scan(lambda c, r: (c1(c + r, ), None), np_.zeros(()), v)[0]
  cond_body = lambda v: j.lax.cond(True, lambda u: c1(u * 2, None), lambda u: u, v)
  return {
      "wsc": (lambda: j.jit(vm(f, spmd_axis_name="x"))(X), lambda: j.vmap(plain_f)(X)),
      "wsc_eager": (lambda: vm(f, spmd_axis_name="x")(X), lambda: j.vmap(plain_f)(X)),
      "wsc_no_spmd": (lambda: j.jit(vm(f))(X), lambda: j.vmap(plain_f)(X)),
      "wsc_axis1": (lambda: j.jit(vm(f, in_axes=1, out_axes=1, spmd_axis_name="x"))(X.T),
                    lambda: j.vmap(plain_f, in_axes=1, out_axes=1)(X.T)),
      "wsc_tuple": (lambda: j.jit(vm(lambda v: c2(v, None) * 3, spmd_axis_name=("a", "b")))(X),
                    lambda: X * 3),
      "wsc_other_axis": (lambda: j.jit(vm(lambda v: c2(v + 1, "b"), spmd_axis_name="a"))(X),
                         lambda: X + 1),
      "wsc_nested": (lambda: j.jit(vm(vm(lambda v: c2(v * 2), in_axes=1, out_axes=1,
                                         spmd_axis_name="b"), spmd_axis_name="a"))(X3),
                     lambda: X3 * 2),
      "wsc_unbatched": (lambda: j.jit(vm(lambda v, w: v + c1(w, None).sum(), in_axes=(0, None),
                                         spmd_axis_name="x"))(X, W), lambda: X + W.sum()),
      "wsc_scan": (lambda: j.jit(vm(scan_body, spmd_axis_name="x"))(X),
                   lambda: X.sum(1)),
      "wsc_cond": (lambda: j.jit(vm(cond_body, spmd_axis_name="x"))(X), lambda: X * 2),
      "wsc_checkpoint": (lambda: j.jit(vm(j.checkpoint(f), spmd_axis_name="x"))(X),
                         lambda: j.vmap(plain_f)(X)),
      "wsc_grad": (lambda: j.jit(j.grad(sq(vm(f, spmd_axis_name="x"))))(X),
                   lambda: j.grad(sq(j.vmap(plain_f)))(X)),
      "wsc_vmap_grad": (lambda: j.jit(vm(j.grad(sq(f)), spmd_axis_name="x"))(X),
                        lambda: j.vmap(j.grad(sq(plain_f)))(X)),
      "jit_shardings": (lambda: j.jit(vm(jitted, spmd_axis_name="a"))(X),
                        lambda: np_.cos(X)),
      "shard_map_psum": (lambda: j.jit(vm(psum_b, spmd_axis_name="a"))(X),
                         lambda: X.reshape(8, 2, 2).sum(1)),
      "shard_map": (lambda: j.jit(vm(twice, spmd_axis_name="a"))(X),
                    lambda: plain_twice(X)),
      "shard_map_axis1": (lambda: j.jit(vm(twice, in_axes=1, out_axes=1,
                                           spmd_axis_name="a"))(X.T),
                          lambda: plain_twice(X.T)),
      "shard_map_tuple": (lambda: j.jit(vm(repl, spmd_axis_name=("a", "b")))(X),
                          lambda: X * 3),
      "shard_map_unbatched_arg": (
          lambda: list(j.jit(vm(pair, in_axes=(0, None), spmd_axis_name="a"))(X, W)),
          lambda: [X * W, np_.broadcast_to(W + 1, (8, 4))]),
      "shard_map_in_jit": (lambda: j.jit(vm(j.jit(twice), spmd_axis_name="a"))(X),
                           lambda: plain_twice(X)),
      "shard_map_in_jit_no_spmd": (lambda: j.jit(vm(j.jit(twice)))(X), lambda: plain_twice(X)),
      "shard_map_values_eager": (lambda: vm(twice, spmd_axis_name="a")(X),
                                 lambda: plain_twice(X)),
      "shard_map_grad": (lambda: j.jit(j.grad(sq(vm(twice, spmd_axis_name="a"))))(X),
                         lambda: j.grad(sq(plain_twice))(X)),
      "shard_map_vmap_grad": (lambda: j.jit(vm(j.grad(sq(twice)), spmd_axis_name="a"))(X),
                              lambda: j.vmap(j.grad(sq(plain_twice)))(X)),
  }


# revax evaluates a shard_map eagerly, and differentiates it, as its vmap form (jit's rules on
# it, shard_map.py), so those results are not laid out over the mesh as jax's are: only their
# values are compared.
VALUES_ONLY = {"shard_map_values_eager", "shard_map_grad", "shard_map_vmap_grad"}
jcases, rcases = build("jax"), build("revax")
for name in jcases:
  (jrun, jplain), (rrun, rplain) = jcases[name], rcases[name]
  want, got, plain = jrun(), rrun(), rplain()
  want, got, plain = ([v] if not isinstance(v, list) else v for v in (want, got, plain))
  for w, r, p in zip(want, got, plain, strict=True):
    np.testing.assert_allclose(np.asarray(r), np.asarray(w), rtol=2e-5, atol=2e-5, err_msg=name)
    np.testing.assert_allclose(np.asarray(r), np.asarray(p), rtol=2e-5, atol=2e-5, err_msg=name)
    if name in VALUES_ONLY:
      continue
    ws, rs = w.sharding, r.sharding
    assert type(rs).__name__ == type(ws).__name__, (name, rs, ws)
    if hasattr(ws, "spec"):
      assert spec_of(rs) == spec_of(ws), (name, rs, ws)
      for s in r.addressable_shards:
        np.testing.assert_allclose(np.asarray(s.data), np.asarray(w)[s.index], rtol=2e-5,
                                   atol=2e-5, err_msg=name)


def errors(lib):
  """{case: thunk that raises} in each library."""
  j, NS, P = (jax, JNS, JP) if lib == "jax" else (revax, RNS, RP)
  m1, m2 = MESHES[lib]
  wsc = lambda spec, m=m2: (lambda v: j.lax.with_sharding_constraint(v, NS(m, spec)))
  sm = lambda i, o, **kw: j.shard_map(lambda v: v * 2, mesh=m2, in_specs=i, out_specs=o, **kw)
  jitted = j.jit(lambda v: v * 2, in_shardings=NS(m2, P("a")), out_shardings=NS(m2, P("a")))
  run = lambda fn, spmd, x=X: (lambda: j.jit(j.vmap(fn, spmd_axis_name=spmd))(x))
  return {
      "wsc_spec_uses_it": run(wsc(P("a")), "a"),
      "wsc_spec_uses_one": run(wsc(P(("a", "b"))), ("b",)),
      "wsc_not_in_mesh": run(wsc(P(), m1), "z"),
      "shard_map_in_specs_use_it": run(sm(P("b"), P("b")), "b"),
      "shard_map_out_specs_use_it": run(sm(P(), P("b")), "b"),
      "shard_map_not_divisible": run(sm(P("b"), P("b")), "a", np.ones((3, 4), np.float32)),
      "shard_map_axis_not_manual": run(sm(P("b"), P("b"), axis_names={"b"}), "a"),
      "jit_spec_uses_it": run(jitted, "a"),
      "unhashable_name": lambda: j.vmap(lambda v: v, spmd_axis_name=["x"])(X),
  }


# the same message as jax's where jax's names the cause; the same exception type everywhere
SAME_MESSAGE = {"wsc_spec_uses_it", "wsc_spec_uses_one", "shard_map_in_specs_use_it",
                "unhashable_name"}
jerrs, rerrs = errors("jax"), errors("revax")
for name in jerrs:
  caught = []
  for thunk in (jerrs[name], rerrs[name]):
    try:
      thunk()
    except Exception as e:  # noqa: BLE001 (compared below)
      caught.append(e)
    else:
      raise AssertionError(f"{name}: no error")
  je, re_ = caught
  assert type(je).__name__ == type(re_).__name__, (name, je, re_)
  if name in SAME_MESSAGE:
    assert str(je) == str(re_), (name, str(je), str(re_))
  if name == "wsc_not_in_mesh":
    for e in caught:
      assert "Resource axis: z of P('z'" in str(e) and "not found in mesh: ('x',)" in str(e), e

# a collective over the vmap's own axis inside the shard_map (jax 0.10.2 fails on it with an
# AssertionError): without spmd_axis_name every member holds the whole batch, so it is the sum
# over the batch; with it each member holds a share, and revax refuses (NotImplementedError)
# rather than sum a share
over_i = revax.shard_map(lambda v: revax.lax.psum(v, "i"), mesh=MESHES["revax"][1],
                         in_specs=RP("b"), out_specs=RP("b"))
got = revax.jit(revax.vmap(over_i, axis_name="i"))(X)
np.testing.assert_allclose(np.asarray(got), np.broadcast_to(X.sum(0), X.shape), rtol=1e-5)
try:
  revax.jit(revax.vmap(over_i, axis_name="i", spmd_axis_name="a"))(X)
except NotImplementedError as e:
  assert "collective over vmap axis 'i'" in str(e), e
else:
  raise AssertionError("a collective over the spmd-split vmap axis inside shard_map ran")
print("SPMD_AXIS_NAME_OK")
