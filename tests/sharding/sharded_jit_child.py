"""Run in a subprocess with 4 CPU devices for both libraries (see test_sharded_jit.py): sharded
Arrays, jit over a mesh and with_sharding_constraint, compared with jax; the two pitfalls; a
data-parallel training step; per-device memory of a model-sharded gradient."""
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
from revax._src import spmd_program
from revax._src.runtime import sharded as rt

assert len(jax.devices()) == 4 and revax.local_device_count() == 4, revax.devices()
assert revax.local_devices() == revax.devices()
rng = np.random.default_rng(0)
X = rng.standard_normal((8, 4)).astype(np.float32)
W = rng.standard_normal((4, 6)).astype(np.float32)
JM2 = JMesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))
RM2 = auto_mesh((2, 2), ("a", "b"))
JM1 = JMesh(np.array(jax.devices()), ("x",))
RM1 = auto_mesh((4,), ("x",))




def same(r, j, what):
  np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=1e-5, atol=1e-5, err_msg=what)


# --- 1. sharded Arrays -----------------------------------------------------------------------
for spec in [("a", "b"), ("b", None), (("a", "b"),), (None, "a"), ()]:
  r = revax.device_put(X, RNS(RM2, RP(*spec)))
  j = jax.device_put(X, JNS(JM2, JP(*spec)))
  same(r, j, f"device_put {spec}")
  got = [(s.device.id, s.index) for s in r.addressable_shards]
  want = [(s.device.id, s.index) for s in j.addressable_shards]
  assert sorted(got, key=str) == sorted(want, key=str), (spec, got, want)
  for s in r.addressable_shards:
    np.testing.assert_array_equal(np.asarray(s.data), X[s.index])
    assert s.data.devices() == {s.device}
  assert r.sharding == RNS(RM2, RP(*spec)) and r.is_fully_addressable
  assert r.is_fully_replicated == j.is_fully_replicated
  er, ej = rnp.tanh(r * 2 + 1).sum(0), jnp.tanh(j * 2 + 1).sum(0)  # eager ops over the mesh
  same(er, ej, "eager ops on a sharded array")
  assert spec_of(er.sharding) == spec_of(ej.sharding), (spec, er.sharding, ej.sharding)

cb = lambda ix: X[ix]
r = revax.make_array_from_callback(X.shape, RNS(RM1, RP("x")), cb)
j = jax.make_array_from_callback(X.shape, JNS(JM1, JP("x")), cb)
same(r, j, "make_array_from_callback")
assert [s.data.shape for s in r.addressable_shards] == [(2, 4)] * 4
singles = [revax.device_put(X[2 * i:2 * i + 2], d) for i, d in enumerate(revax.devices())]
r = revax.make_array_from_single_device_arrays(X.shape, RNS(RM1, RP("x")), singles[::-1])
same(r, X, "make_array_from_single_device_arrays")
try:  # a block on the wrong device is refused before anything runs
  revax.make_array_from_single_device_arrays(
      X.shape, RNS(RM1, RP("x")), [revax.device_put(X[:2], revax.devices()[0])] * 4)
  raise AssertionError("no error")
except ValueError as e:
  assert "no array on devices" in str(e), e
plain = revax.device_put(X, revax.devices()[1])
assert plain.sharding == revax.sharding.SingleDeviceSharding(revax.devices()[1])
assert len(plain.addressable_shards) == 1

# --- 2. jit over a mesh, against jax (values and the shardings XLA chose) ----------------------
CASES = [
    # (function of (numpy module, x, w), in specs or None, out spec or None, arg shardings)
    (lambda n, x, w: n.tanh(x @ w), (("a", "b"), ("b", None)), ("a",), None),
    (lambda n, x, w: n.tanh(x @ w), (("a", None), (None, "b")), None, None),
    (lambda n, x, w: (x * 2).sum(0), None, None, (("a", "b"), None)),
    (lambda n, x, w: x.T, None, None, (("a", "b"), None)),
    (lambda n, x, w: n.concatenate([x[-1:], x[:-1]]), (("a", None), None), (("a", None)), None),
    (lambda n, x, w: (x @ w, x + 1), ((None, "a"), ("a", None)), [("b", None), ()], None),
]
for k, (fn, ins, out, args_spec) in enumerate(CASES):
  def both(spec, mesh_r, mesh_j):
    return (None if spec is None else RNS(mesh_r, RP(*spec)),
            None if spec is None else JNS(mesh_j, JP(*spec)))
  kw_r, kw_j = {}, {}
  if ins is not None:
    kw_r["in_shardings"] = tuple(both(s, RM2, JM2)[0] for s in ins)
    kw_j["in_shardings"] = tuple(both(s, RM2, JM2)[1] for s in ins)
  if isinstance(out, list):
    kw_r["out_shardings"] = tuple(both(s, RM2, JM2)[0] for s in out)
    kw_j["out_shardings"] = tuple(both(s, RM2, JM2)[1] for s in out)
  elif out is not None:
    kw_r["out_shardings"], kw_j["out_shardings"] = both(out, RM2, JM2)
  ra, ja = [X, W], [X, W]
  if args_spec is not None:
    ra = [revax.device_put(a, both(s, RM2, JM2)[0]) if s else a for a, s in zip(ra, args_spec)]
    ja = [jax.device_put(a, both(s, RM2, JM2)[1]) if s else a for a, s in zip(ja, args_spec)]
  got = revax.jit(lambda x, w: fn(rnp, x, w), **kw_r)(*ra)
  want = jax.jit(lambda x, w: fn(jnp, x, w), **kw_j)(*ja)
  for g, w_ in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
    same(g, w_, f"jit case {k}")
    assert spec_of(g.sharding) == spec_of(w_.sharding), (k, g.sharding, w_.sharding)
    assert sorted((s.device.id, str(s.index)) for s in g.addressable_shards) == \
        sorted((s.device.id, str(s.index)) for s in w_.addressable_shards), k

f = revax.jit(lambda x, w: rnp.tanh(x @ w), in_shardings=(RNS(RM2, RP("a", "b")),
                                                         RNS(RM2, RP("b", None))))
text = f.lower(X, W).as_text()
assert 'sdy.mesh @mesh = <["a"=2, "b"=2]>' in text and "mhlo.num_partitions = 4" in text, text
assert text.count("#sdy.sharding<@mesh") == 3 and '[{"a"}, {"b"}]' in text and "{?}" in text
for _ in range(3):
  f(X, W)
f(revax.device_put(X, RNS(RM2, RP("a", "b"))), W)  # same shardings: the same program
programs = spmd_program._programs[f.trace(X, W).jaxpr]
assert len(programs) == 1, programs  # compiled once per sharding
g = revax.jit(lambda x, w: x @ w)
XS2 = revax.device_put(X, RNS(RM2, RP("a", "b")))
g(XS2, W), g(XS2, W)
assert len(spmd_program._programs[g.trace(X, W).jaxpr]) == 1  # (Auto axes: layouts are not types)
g(XS2, revax.device_put(W, RNS(RM2, RP("b", None))))  # another layout: another program
assert len(spmd_program._programs[g.trace(X, W).jaxpr]) == 2
compiled = f.lower(X, W).compile()
same(compiled(X, W), np.tanh(X @ W), "Compiled call")
assert spec_of(compiled.output_shardings[0]) == ("a",) or compiled.output_shardings[0]

# with_sharding_constraint: value, layout, grad, vmap
for fn in (lambda l, n, x: l.with_sharding_constraint(x * 2, None) + 1,):
  pass
wsc_r = lambda x: revax.lax.with_sharding_constraint(rnp.sin(x) * 2, RNS(RM1, RP(None, "x"))) + 1
wsc_j = lambda x: jax.lax.with_sharding_constraint(jnp.sin(x) * 2, JNS(JM1, JP(None, "x"))) + 1
got = revax.jit(wsc_r, in_shardings=RNS(RM1, RP("x")))(X)
want = jax.jit(wsc_j, in_shardings=JNS(JM1, JP("x")))(X)
same(got, want, "with_sharding_constraint")
assert spec_of(got.sharding) == spec_of(want.sharding), (got.sharding, want.sharding)
assert "sdy.sharding_constraint" in revax.jit(wsc_r, in_shardings=RNS(RM1, RP("x"))).lower(
    X).as_text()
same(revax.jit(revax.grad(lambda x: (wsc_r(x) ** 2).sum()), in_shardings=RNS(RM1, RP("x")))(X),
     jax.grad(lambda x: (wsc_j(x) ** 2).sum())(X), "grad through the constraint")
XX = np.stack([X, X + 1])
same(revax.jit(revax.vmap(wsc_r))(XX), jax.vmap(wsc_j)(XX), "vmap of the constraint")
same(revax.jvp(wsc_r, (X,), (X,))[1], jax.jvp(wsc_j, (X,), (X,))[1], "jvp of the constraint")
eager = revax.lax.with_sharding_constraint(X, RNS(RM1, RP("x")))
assert eager.sharding == RNS(RM1, RP("x")) and len(eager.addressable_shards) == 4

# An argument the program does not read does not place the call (JAX prunes it first), unless
# keep_unused: then its mesh does, and the result is committed there.
for keep in (False, True):
  outs = []
  for lib, ns, mesh, P_ in ((revax, RNS, RM1, RP), (jax, JNS, JM1, JP)):
    unread = lib.device_put(X, ns(mesh, P_("x")))
    y = lib.jit(lambda a, b: b * 2, keep_unused=keep)(unread, W)
    outs.append((type(y.sharding).__name__, len(y.devices()), y.committed))
    same(y, W * 2, "unread sharded argument")
  assert outs[0] == outs[1], (keep, outs)

# --- 4. errors, not hangs -----------------------------------------------------------------------
XS = revax.device_put(X, RNS(RM2, RP("a", "b")))


def raises(kind, fn, match):
  try:
    fn()
  except kind as e:
    assert match in str(e), (match, str(e))
    return
  raise AssertionError(f"expected {kind.__name__} ({match})")


raises(ValueError, lambda: revax.jit(lambda v: v, in_shardings=RNS(RM2, RP("b", "a")))(XS),
       "does not match the sharding")
raises(ValueError, lambda: jax.jit(lambda v: v, in_shardings=JNS(JM2, JP("b", "a")))(
    jax.device_put(X, JNS(JM2, JP("a", "b")))), "does not match the sharding")
raises(ValueError, lambda: RNS(RM2, RP("a", "a")), "more than once")
raises(ValueError, lambda: revax.device_put(np.ones((3, 4)), RNS(RM2, RP("a"))), "divide")
raises(ValueError, lambda: revax.jit(lambda v: v, in_shardings=RNS(RM2, RP("a", "b", None)))(X),
       "rank")
raises(ValueError, lambda: revax.make_mesh((8,), ("x",)), "must be >= the product")
other = revax.sharding.Mesh(np.array(revax.devices()[:2]), ("x",))
raises(ValueError, lambda: revax.jit(lambda u, v: u + v, in_shardings=(
    RNS(RM1, RP("x")), RNS(other, RP("x"))))(X, X), "incompatible devices")

# Pitfall 1: a shard on the wrong device (or of the wrong shape) is refused before Execute; the
# devices that would have accepted theirs never enter the collective, so later runs work.
prog = next(iter(next(iter(spmd_program._programs.values())).values()))
backend = revax._src.runtime.client.get_backend()
dev0 = revax.devices()[0]
wrong = [[backend.buffer_from_numpy(np.zeros(shape, dtype), dev0) for shape, dtype in specs]
         for specs in prog.in_specs]
raises(ValueError, lambda: rt.run_spmd(prog.executable, wrong, prog.in_specs), "is on")
whole = [[backend.buffer_from_numpy(np.zeros((8,) + shape[1:], dtype), d) for shape, dtype in
          specs] for specs, d in zip(prog.in_specs, prog.executable.devices)]
raises(ValueError, lambda: rt.run_spmd(prog.executable, whole, prog.in_specs), "expects")
same(f(X, W), np.tanh(X @ W), "a correct run after refused ones")
# a repeated device would CHECK-fail inside XLA's compile: refused first
raises(ValueError, lambda: rt.compile_spmd(backend, text, [0, 0, 1, 2]), "distinct")

# Pitfall 2: a one-device mesh emits a single-device program (no sdy mesh, no manual region)
m1 = auto_mesh((1,), ("x",))
t1 = revax.jit(lambda v: v * 2, in_shardings=RNS(m1, RP("x"))).lower(X).as_text()
assert "sdy." not in t1 and "num_partitions = 1" in t1, t1
t2 = revax.jit(revax.shard_map(lambda v: revax.lax.psum(v, "x"), mesh=m1, in_specs=RP("x"),
                               out_specs=RP())).lower(X).as_text()
assert "manual_computation" not in t2 and "sdy." not in t2
same(revax.jit(lambda v: v * 2, in_shardings=RNS(m1, RP("x")))(X), X * 2, "one-device mesh")

# --- 5. a data-parallel MLP training step equals the single-device step ------------------------
def init(k):
  r = np.random.default_rng(k)
  return {"w1": r.standard_normal((16, 32)).astype(np.float32) * 0.3,
          "b1": np.zeros(32, np.float32),
          "w2": r.standard_normal((32, 4)).astype(np.float32) * 0.3}


def step(n, params, x, y):
  def loss(p):
    h = n.tanh(x @ p["w1"] + p["b1"])
    return n.mean((h @ p["w2"] - y) ** 2)
  g = (revax if n is rnp else jax).grad(loss)(params)
  return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g), loss(params)


params = init(1)
xb = rng.standard_normal((64, 16)).astype(np.float32)
yb = rng.standard_normal((64, 4)).astype(np.float32)
repl, data = RNS(RM1, RP()), RNS(RM1, RP("x"))
dp = revax.jit(lambda p, x, y: step(rnp, p, x, y), in_shardings=(repl, data, data),
               out_shardings=(repl, repl))
single = revax.jit(lambda p, x, y: step(rnp, p, x, y))
jx = jax.jit(lambda p, x, y: step(jnp, p, x, y),
             in_shardings=(JNS(JM1, JP()), JNS(JM1, JP("x")), JNS(JM1, JP("x"))))
p_dp, p_1, p_j = params, params, params
for _ in range(3):
  (p_dp, l_dp), (p_1, l_1), (p_j, l_j) = dp(p_dp, xb, yb), single(p_1, xb, yb), jx(p_j, xb, yb)
  same(l_dp, l_1, "dp loss")
  same(l_dp, l_j, "dp loss vs jax")
for k in params:
  same(p_dp[k], p_1[k], f"dp params {k}")
  same(p_dp[k], p_j[k], f"dp params {k} vs jax")
  assert type(p_dp[k]) is rt.ShardedArray and p_dp[k].sharding == repl

# a 2-d (data x model) mesh: batch over "a", hidden units over "b"; the step equals jax's
DM = {"w1": (None, "b"), "b1": ("b",), "w2": ("b", None)}
r_in = ({k: RNS(RM2, RP(*v)) for k, v in DM.items()}, RNS(RM2, RP("a")), RNS(RM2, RP("a")))
j_in = ({k: JNS(JM2, JP(*v)) for k, v in DM.items()}, JNS(JM2, JP("a")), JNS(JM2, JP("a")))
p_r, l_r = revax.jit(lambda p, x, y: step(rnp, p, x, y), in_shardings=r_in,
                     out_shardings=(r_in[0], None))(params, xb, yb)
p_j, l_j = jax.jit(lambda p, x, y: step(jnp, p, x, y), in_shardings=j_in,
                   out_shardings=(j_in[0], None))(params, xb, yb)
same(l_r, l_j, "2-d mesh loss")
for k in params:
  same(p_r[k], p_j[k], f"2-d mesh params {k}")
  assert p_r[k].sharding == r_in[0][k]
  assert sorted(str(s.index) for s in p_r[k].addressable_shards) == \
      sorted(str(s.index) for s in p_j[k].addressable_shards)

# --- 5. memory per device of a model-sharded MLP gradient ~ 1/N ----------------------------------
def mlp_loss(w1, w2, x):
  return (rnp.tanh(x @ w1) @ w2).sum()


w1 = np.ones((128, 512), np.float32)
w2 = np.ones((512, 128), np.float32)
x = np.ones((16, 128), np.float32)
grad = revax.grad(mlp_loss, argnums=(0, 1))
full = revax.jit(grad).lower(w1, w2, x).compile().memory_analysis()
cols, rows = RNS(RM1, RP(None, "x")), RNS(RM1, RP("x", None))
part = revax.jit(grad, in_shardings=(cols, rows, repl), out_shardings=(cols, rows)).lower(
    w1, w2, x).compile().memory_analysis()
for field in ("argument_size_in_bytes", "output_size_in_bytes", "peak_memory_in_bytes"):
  ratio = getattr(part, field) / getattr(full, field)
  assert 0.2 < ratio < 0.3, (field, ratio, full, part)
# invertible under a data-parallel jit keeps its saving on each device
def block(w, x1, x2):
  y1 = x1 + rnp.tanh(x2 @ w[0])
  return y1, x2 + rnp.tanh(y1 @ w[1])


def rev_loss(wrap):
  def loss(ws, x1, x2):
    def stack(ws, x1, x2):
      for w in ws:
        x1, x2 = block(w, x1, x2)
      return x1, x2
    y1, y2 = wrap(stack)(ws, x1, x2)
    return (y1 ** 2).sum() + (y2 ** 2).sum()
  return loss


r = np.random.default_rng(3)
x1, x2 = (r.standard_normal((512, 32)).astype(np.float32) for _ in range(2))
ws = [tuple((r.standard_normal((32, 32)) * 0.05).astype(np.float32) for _ in range(2))
      for _ in range(8)]
temps = {}
for name, wrap in (("plain", lambda f: f), ("invertible", revax.invertible)):
  g = revax.jit(revax.grad(rev_loss(wrap)), in_shardings=(repl, data, data), out_shardings=repl)
  temps[name] = g.lower(ws, x1, x2).compile().memory_analysis().temp_size_in_bytes
  if name == "invertible":
    want = revax.grad(rev_loss(lambda f: f))(ws, x1, x2)
    for a_, b_ in zip(jax.tree_util.tree_leaves(g(ws, x1, x2)), jax.tree_util.tree_leaves(want)):
      np.testing.assert_allclose(np.asarray(a_), np.asarray(b_), rtol=1e-4, atol=1e-3)
assert temps["invertible"] < 0.5 * temps["plain"], temps

# --- pmap: one member per device (jit of a shard_map over a 1-d mesh) ----------------------------
from revax import lax as rl
from jax import lax as jl
xp = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
for fn in (lambda l: (lambda v, y: l.psum(v * y, "i")),
           lambda l: (lambda v, y: (v + l.axis_index("i"), l.all_gather(v, "i")))):
  got = revax.pmap(fn(rl), axis_name="i", in_axes=(0, None))(xp, 2.0)  # a scalar broadcast too
  want = jax.pmap(fn(jl), axis_name="i", in_axes=(0, None))(xp, 2.0)
  for g, w_ in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
    same(g, w_, "pmap")
    assert len(g.addressable_shards) == 4
same(revax.pmap(lambda v: v * 2, in_axes=1, out_axes=1)(xp.transpose(1, 0, 2)),
     xp.transpose(1, 0, 2) * 2, "pmap in_axes/out_axes")
same(revax.grad(lambda v: revax.pmap(lambda u: rl.psum(u ** 2, "i"), axis_name="i")(v).sum())(xp),
     jax.grad(lambda v: jax.pmap(lambda u: jl.psum(u ** 2, "i"), axis_name="i")(v).sum())(xp),
     "grad of pmap")
print("SHARDED_JIT_OK")
