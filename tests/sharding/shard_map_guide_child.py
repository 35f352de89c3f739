"""jax's shard_map guide ("Manual parallelism with shard_map": blocked matmul, rank-preserving
maps, in/out specs and untiling, varying manual axes, collectives, and the data-parallel, FSDP,
tensor-parallel, FSDP+TP and pipeline networks) exercised in this suite's own words, on 8 CPU
devices: run with `jax` or `revax` as its argument, it prints one `name: result` line per step
(test_shard_map_guide.py compares)."""
import sys
from functools import partial
import numpy as np
if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
P = lib.sharding.PartitionSpec
Explicit, Auto = lib.sharding.AxisType.Explicit, lib.sharding.AxisType.Auto

def show(name, fn):
  try:
    r = fn()
  except Exception as e:
    r = f"{type(e).__name__}: {e}"
  print(f"{name}: {r}".replace("\n", " | "))

def close(u, v):
  return bool(lib.tree_util.tree_all(lib.tree_util.tree_map(partial(lnp.allclose, atol=1e-2,
                                                                    rtol=1e-2), u, v)))

grid = lib.make_mesh((4, 2), ("p", "q"))
lib.set_mesh(grid)
lhs = lib.device_put(lnp.arange(8 * 16.).reshape(8, 16) / 10, P("p", "q"))
rhs = lib.device_put(lnp.arange(16 * 4.).reshape(16, 4) / 10, P("q", None))

@lib.shard_map(in_specs=(P("p", "q"), P("q", None)), out_specs=P("p", None))
def blocked_matmul(l, r):
  print("block shapes:", l.shape, r.shape, lib.typeof(l), lib.typeof(r))
  return lib.lax.psum(lnp.dot(l, r), "q")
prod = blocked_matmul(lhs, rhs)
show("blocked",
     lambda: (lib.typeof(prod), prod.sharding,
              close(prod, lnp.dot(lhs, rhs, out_sharding=P("p", None)))))
show("blocked jit ref",
     lambda: close(lib.jit(lambda u, v: lnp.dot(u, v, out_sharding=P("p", None)))(lhs, rhs), prod))
show("jit shard_map", lambda: lib.typeof(lib.jit(blocked_matmul)(lhs, rhs)))

line = lib.sharding.Mesh(np.array(lib.devices()[:4]), ("s",))
lib.set_mesh(line)
y = lnp.arange(32).reshape(8, 4)
ans = lib.shard_map(lambda t: t.T @ t, in_specs=P("s"), out_specs=P("s"))(y)
ref = lnp.concatenate([b.T @ b for b in lnp.split(y, 4)])
show("rank preserving", lambda: (ans.shape, close(ans, ref)))
show("vmap vs stack",
     lambda: close(lib.vmap(lambda t: t @ t)(lnp.arange(12).reshape(4, 3)),
                   lnp.stack([t @ t for t in lnp.arange(12).reshape(4, 3)])))

grid2 = lib.make_mesh((4, 2), ("u", "v"))
lib.set_mesh(grid2)
@lib.shard_map(in_specs=P("u", None), out_specs=P("u", "v"))
def keep(b):
  print("keep block:", b.shape)
  return b
big = lib.device_put(lnp.arange(12 * 12).reshape(12, 12), P("u", None))
kept = keep(big)
show("tile out", lambda: (kept.shape, lib.typeof(kept)))
amesh = lib.make_mesh((4, 2), ("u", "v"), (Auto, Auto))
with lib.set_mesh(amesh):
  one = lnp.array([[5.]])
  for spec in (P("u", "v"), P("u", None), P(None, None)):
    show(f"closure out {spec}",
         lambda: np.asarray(lib.shard_map(lambda: one, in_specs=(), out_specs=spec)()).tolist())
m = lib.device_put(lnp.arange(12 * 12).reshape(12, 12), P("u", "v"))
for name, spec, axes in (("sum v", P("u", None), "v"), ("sum u", P(None, "v"), "u"),
                         ("sum uv", P(None, None), ("u", "v"))):
  show(name,
       lambda: (lib.shard_map(lambda b: lib.lax.psum(b, axes), in_specs=P("u", "v"),
                              out_specs=spec)(m).shape))

pair = lib.make_mesh((2,), ("w",))
lib.set_mesh(pair)
v6 = lib.device_put(lnp.arange(6.), P("w"))
@lib.shard_map(in_specs=P("w"), out_specs=P("w"))
def twice(t):
  print("vary type:", lib.typeof(t))
  return 2 * t
show("twice", lambda: twice(v6))
@lib.shard_map(in_specs=P("w"), out_specs=P())
def summed(t):
  s = lib.lax.psum(t, "w")
  print("summed type:", lib.typeof(s))
  return s
show("summed", lambda: summed(v6))
show("bad out spec", lambda: lib.shard_map(lambda t: t, in_specs=P("w"), out_specs=P())(v6))
show("unchecked",
     lambda: lib.shard_map(lambda t: t, in_specs=P("w"), out_specs=P(), check_vma=False)(v6).shape)
@lib.shard_map(in_specs=P(), out_specs=P("w"))
def cast(t):
  c = lib.lax.pcast(t, "w", to="varying")
  print("pcast:", lib.typeof(t), lib.typeof(c))
  return c
show("pcast", lambda: cast(lnp.arange(3.)).shape)
@lib.shard_map(in_specs=(P("w"), P()), out_specs=P("w"))
def mixed(a, b):
  return a * b
show("implicit pvary jaxpr",
     lambda: str(lib.make_jaxpr(mixed)(v6, lnp.arange(3.))).replace("\n", " | "))
def swapper(a, b):
  def body(carry, _):
    return (carry[1], carry[0]), ()
  (a2, b2), _ = lib.lax.scan(body, (a, b), (), length=2)
  return a2, b2
show("scan vma error",
     lambda: lib.shard_map(swapper, in_specs=(P("w"), P()), out_specs=P("w"))(v6, lnp.arange(3.)))
def swapper_ok(a, b):
  return swapper(a, lib.lax.pcast(b, "w", to="varying"))
show("scan vma fixed",
     lambda: lib.shard_map(swapper_ok, in_specs=(P("w"), P()), out_specs=P("w"))(v6,
                                                                                 lnp.arange(3.)))

grid3 = lib.make_mesh((4, 2), ("a", "b"))
lib.set_mesh(grid3)
x42 = lib.device_put(lnp.arange(8 * 4.).reshape(8, 4), P("a", "b"))
@lib.shard_map(in_specs=P("a", "b"), out_specs=P("a"))
def vma2(t):
  print("vma2:", lib.typeof(t))
  s = lib.lax.psum(t, "b")
  print("vma2 after:", lib.typeof(s))
  return s
show("vma2", lambda: vma2(x42).shape)

ring = lib.make_mesh((4,), ("i",))
lib.set_mesh(ring)
x16 = lib.device_put(lnp.arange(16.), P("i"))
def coll(name, body, out=P("i")):
  show(name, lambda: np.asarray(lib.shard_map(body, in_specs=P("i"), out_specs=out)(x16)).tolist())
coll("psum", lambda t: lib.lax.psum(t, "i"), P())
coll("pmean", lambda t: lib.lax.pmean(t, "i"), P())
coll("pmax", lambda t: lib.lax.pmax(t, "i"), P())
coll("all_gather", lambda t: lib.lax.all_gather(t, "i"))
coll("all_gather tiled", lambda t: lib.lax.all_gather(t, "i", tiled=True))
coll("psum_scatter", lambda t: lib.lax.psum_scatter(lnp.tile(t, 4), "i", tiled=True))
coll("psum_scatter untiled", lambda t: lib.lax.psum_scatter(t, "i").reshape(1))
coll("ppermute", lambda t: lib.lax.ppermute(t, "i", [(k, (k + 1) % 4) for k in range(4)]))
coll("all_to_all", lambda t: lib.lax.all_to_all(t, "i", 0, 0, tiled=True))
coll("axis_index", lambda t: t * 0 + lib.lax.axis_index("i"))
coll("axis_size", lambda t: t * 0 + lib.lax.axis_size("i"))
squares = lib.shard_map(lambda t: lib.lax.psum(t ** 2, "i"), in_specs=P("i"), out_specs=P())
show("grad psum", lambda: np.asarray(lib.grad(lambda z: squares(z).sum())(x16)).tolist())

# --- neural nets ---
batch_mesh = lib.make_mesh((8,), ("batch",))
lib.set_mesh(batch_mesh)
def init_layer(key, n_in, n_out):
  k1, k2 = lib.random.split(key)
  return lib.random.normal(k1, (n_in, n_out)) / np.sqrt(n_in), lib.random.normal(k2, (n_out,)) * 0.1
def init(key, sizes, nbatch):
  keys = lib.random.split(key, len(sizes))
  params = [init_layer(k, a, b) for k, a, b in zip(keys[:-1], sizes[:-1], sizes[1:])]
  return params, lib.random.normal(keys[-1], (nbatch, sizes[0]))
sizes = [16, 32, 32, 8]
params, batch = init(lib.random.key(3), sizes, 32)
def predict(params, x):
  for W, b in params:
    x = lnp.tanh(x @ W + b)
  return x
def loss(params, x):
  return lnp.mean(predict(params, x) ** 2)
ref_loss = loss(params, batch)
ref_grad = lib.grad(loss)(params, batch)
show("ref loss", lambda: round(float(ref_loss), 5))

@partial(lib.shard_map, in_specs=(P(), P("batch")), out_specs=P())
def dp_loss(params, x):
  return lib.lax.pmean(lnp.mean(predict(params, x) ** 2), "batch")
sbatch = lib.device_put(batch, P("batch"))
show("data parallel", lambda: (lib.typeof(lib.jit(dp_loss)(params, sbatch)),
                             close(dp_loss(params, sbatch), ref_loss),
                             close(lib.jit(lib.grad(dp_loss))(params, sbatch), ref_grad)))

def gather(p):
  return lib.lax.all_gather(p, "batch", tiled=True)
def fsdp_predict(params, x):
  for W, b in params:
    x = lnp.tanh(x @ gather(W) + gather(b))
  return x
@partial(lib.shard_map, in_specs=(P("batch"), P("batch")), out_specs=P())
def fsdp_loss(params, x):
  return lib.lax.pmean(lnp.mean(fsdp_predict(params, x) ** 2), "batch")
shard_params = lib.device_put(params, P("batch"))
show("fsdp", lambda: (close(lib.jit(fsdp_loss)(shard_params, sbatch), ref_loss),
                    close(lib.jit(lib.grad(fsdp_loss))(shard_params, sbatch), ref_grad),
                    [str(lib.typeof(w)) for w,
                     _ in lib.jit(lib.grad(fsdp_loss))(shard_params, sbatch)]))

np_batch = np.asarray(batch)
np_params = [(np.asarray(W), np.asarray(b)) for W, b in params]
feat_mesh = lib.make_mesh((8,), ("feats",))
lib.set_mesh(feat_mesh)
xs = lib.device_put(np_batch, P(None, "feats"))
W0 = lib.device_put(np_params[0][0], P("feats", None))
tp = lib.shard_map(lambda x, W: lib.lax.psum(x @ W, "feats"),
                   in_specs=(P(None, "feats"), P("feats", None)), out_specs=P())
show("tensor parallel",
     lambda: (lib.typeof(tp(xs, W0)), close(tp(xs, W0), np_batch @ np_params[0][0])))
show("tensor parallel grad", lambda: lib.typeof(lib.grad(lambda W: tp(xs, W).sum())(W0)))

two = lib.make_mesh((4, 2), ("batch", "feats"))
lib.set_mesh(two)
@partial(lib.shard_map, in_specs=(P("feats", "batch"), P("batch"), P("batch", "feats")),
         out_specs=P())
def fsdp_tp(W, b, x):
  Wf = lib.lax.all_gather(W, "batch", axis=1, tiled=True)
  bf = lib.lax.all_gather(b, "batch", tiled=True)
  h = lnp.tanh(lib.lax.psum(x @ Wf, "feats") + bf)
  return lib.lax.pmean(lnp.mean(h ** 2), "batch")
W1, b1 = np_params[0]
args = (lib.device_put(W1, P("feats", "batch")), lib.device_put(b1, P("batch")),
        lib.device_put(np_batch, P("batch", "feats")))
show("fsdp+tp", lambda: close(fsdp_tp(*args), np.mean(np.tanh(np_batch @ W1 + b1) ** 2)))
show("fsdp+tp grad",
     lambda: [str(lib.typeof(g)) for g in lib.jit(lib.grad(fsdp_tp, argnums=(0, 1)))(*args)])

stage_mesh = lib.make_mesh((4,), ("stages",))
lib.set_mesh(stage_mesh)
L, D, B, M = 4, 8, 4, 6
Ws = np.asarray(lib.random.normal(lib.random.key(7), (L, D, D))) / np.sqrt(D)
micro = np.asarray(lib.random.normal(lib.random.key(8), (M, B, D)))
def seq(Ws, xs):
  def one(x):
    for l in range(L):
      x = lnp.tanh(x @ Ws[l])
    return x
  return lib.vmap(one)(xs)
def shift_right(t):
  return lib.lax.ppermute(t, "stages", [(k, k + 1) for k in range(3)])
@partial(lib.shard_map, in_specs=(P("stages"), P()), out_specs=P())
def pipeline(Wblk, xs):
  W = Wblk[0]
  idx = lib.lax.axis_index("stages")
  state = lnp.zeros((B, D))
  outs = lnp.zeros((M, B, D))
  def step(i, carry):
    state, outs = carry
    inp = lnp.where(idx == 0, xs[lnp.minimum(i, M - 1)], state)
    out = lnp.tanh(inp @ W)
    done = i - 3
    outs = lnp.where((idx == 3) & (done >= 0), outs.at[lnp.maximum(done, 0)].set(out), outs)
    return shift_right(out), outs
  state, outs = lib.lax.fori_loop(0, M + 3, step,
                                  (lib.lax.pcast(state, "stages", to="varying"),
                                   lib.lax.pcast(outs, "stages", to="varying")))
  return lib.lax.psum(outs, "stages")
show("pipeline",
     lambda: close(lib.jit(pipeline)(lib.device_put(Ws, P("stages")), micro), seq(Ws, micro)))
print("DONE")
