"""The explicit-sharding part of jax's parallelism guide ("Distributed arrays and automatic
parallelization": meshes, shardings, sharding in types, auto_axes/explicit_axes, Auto meshes,
shard_map) exercised in this suite's own words, on 8 CPU devices: run with `jax` or `revax` as
its argument, it prints one `name: result` line per step (test_explicit_guide.py compares)."""
import sys, functools
import numpy as np
if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp

def show(name, fn):
  try:
    r = fn()
  except Exception as e:
    r = f"{type(e).__name__}: {e}"
  print(f"{name}: {r}".replace("\n", " | "))

grid = lib.make_mesh((4, 2), ("r", "c"))
show("mesh", lambda: grid)
show("axis types", lambda: grid.axis_types)
lib.set_mesh(grid)
show("abstract", lambda: lib.sharding.get_abstract_mesh())
show("get_mesh", lambda: lib.sharding.get_mesh() if hasattr(lib.sharding, 'get_mesh') else 'none')
a = lnp.arange(32.0).reshape(8, 4)
show("a type", lambda: lib.typeof(a))
show("a sharding", lambda: a.sharding)
a = lib.device_put(a, lib.P("r", "c"))
show("a split", lambda: lib.typeof(a))
show("visualize", lambda: lib.debug.visualize_array_sharding(a))
b = lnp.cos(a).T
show("cos T", lambda: lib.typeof(b))
show("b sharding", lambda: b.sharding)

@lib.jit
def change_mesh(v):
  am = lib.sharding.AbstractMesh((8,), ("k",), (lib.sharding.AxisType.Explicit,))
  with lib.sharding.use_abstract_mesh(am):
    w = lib.reshard(v, lib.P("k", None))
    print("inside:", lib.typeof(w))
    return w + 1
show("changed", lambda: (lib.typeof(change_mesh(a)), change_mesh(a).sharding))
show("a.sharding", lambda: a.sharding)
for s in a.addressable_shards:
  print("shard:", s.device.id, s.index, np.asarray(s.data).tolist())
for spec in [lib.P("c", "r"), lib.P("r", None), lib.P(("r", "c")), lib.P(None, None), lib.P()]:
  d = lib.device_put(a, spec)
  show(f"put {spec}", lambda: (d.sharding, lib.typeof(d)))
  print("shapes:", sorted((s.device.id, s.data.shape) for s in d.addressable_shards))
show("unreduced", lambda: lib.device_put(a, lib.P("r", None, unreduced={"c"})).sharding)
other = lib.make_mesh((8,), ("k",))
e = lib.device_put(a, lib.sharding.NamedSharding(other, lib.P("k", None)))
show("other mesh", lambda: (e.sharding, lib.typeof(e)))
show("type sharding", lambda: lib.typeof(a).sharding)
lib.jit(lambda v: print("traced sharding:", lib.typeof(v).sharding))(a)
p = lib.device_put(np.arange(4).reshape(4, 1), lib.P("r", None))
q = lib.device_put(np.arange(8).reshape(1, 8), lib.P(None, "c"))
show("outer", lambda: (lib.typeof(p), lib.typeof(q), lib.typeof(p * q)))
@lib.jit
def outer(u, v):
  w = u - v
  print("jit outer:", lib.typeof(u), lib.typeof(v), lib.typeof(w))
  return w
show("outer jit", lambda: lib.typeof(outer(p, q)))
n = lib.random.normal(lib.random.key(1), (8, 4), out_sharding=lib.P("r", "c"))
show("normal", lambda: (lib.typeof(n), np.asarray(n).round(4).tolist()[0]))
show("sum0", lambda: lib.typeof(n.sum(0)))
show("sum1", lambda: lib.typeof(n.sum(1)))
txt = lib.jit(lambda v: v.sum(0)).lower(n).compile().as_text()
show("all-reduce", lambda: "all-reduce" in txt)
u = lib.device_put(lnp.arange(32.0).reshape(8, 4), lib.P(None, "r"))
v = lib.device_put(lnp.arange(64.0).reshape(4, 16), lib.P("r", None))
show("dot ambiguous", lambda: lnp.dot(u, v))
z = lnp.dot(u, v, out_sharding=lib.P("r", None))
show("dot out", lambda: (lib.typeof(z), float(z.sum())))
show("dot fsdp", lambda: lib.typeof(lnp.dot(lnp.ones((8, 4)), v)))
x1 = lib.device_put(np.arange(16).reshape(4, 4), lib.P("r", None))
y1 = lib.device_put(np.arange(16).reshape(4, 4), lib.P(None, "r"))
show("clash", lambda: x1 + y1)
AA = lib.sharding.auto_axes if hasattr(lib.sharding, "auto_axes") else None
@AA
def plus(s, t):
  print("auto mesh:", lib.sharding.get_abstract_mesh())
  print("auto types:", lib.typeof(s), lib.typeof(t))
  return s + t
r = plus(x1, y1, out_sharding=lib.P("r", None))
show("auto result", lambda: (lib.typeof(r), np.asarray(r).tolist()))
@functools.partial(lib.sharding.auto_axes, out_sharding=lib.P(None, "c"))
def times(s):
  return s * 3
show("auto fixed", lambda: lib.typeof(times(x1)))
def compare(v):
  print("cmp mesh:", lib.sharding.get_abstract_mesh())
  print("cmp concrete:", v.sharding.spec)
  print("cmp typed:", lib.typeof(v).sharding.spec)
arr = lnp.sin(lib.device_put(np.arange(8), lib.P("r")))
compare(arr)
@lib.sharding.auto_axes
def in_auto(v):
  compare(v)
  return v
show("in auto", lambda: in_auto(arr, out_sharding=lib.P("r")).sharding)
@functools.partial(lib.sharding.auto_axes, axes="r")
def partial_auto(v):
  print("partial mesh:", lib.sharding.get_abstract_mesh())
  print("partial type:", lib.typeof(v))
  return v * 2
@lib.jit
def use_partial(v):
  w = lnp.sin(v)
  print("before:", lib.typeof(w))
  o = partial_auto(w, out_sharding=lib.P("r", "c"))
  print("after:", lib.typeof(o))
  return o + 1
show("partial",
     lambda: lib.typeof(use_partial(lib.device_put(np.arange(16.).reshape(4, 4), lib.P("r", "c")))))

Auto = lib.sharding.AxisType.Auto
amesh = lib.make_mesh((4, 2), ("r", "c"), (Auto, Auto))
lib.set_mesh(amesh)
show("auto abstract", lambda: lib.sharding.get_abstract_mesh())
u = lib.device_put(lnp.arange(32.0).reshape(8, 4), lib.P(None, "r"))
v = lib.device_put(lnp.arange(64.0).reshape(4, 16), lib.P("r", None))
show("auto types", lambda: (lib.typeof(u), lib.typeof(v)))
z = lnp.dot(u, v)
show("auto dot", lambda: (lib.typeof(z), float(z.sum())))
show("auto dot sharding type", lambda: type(z.sharding).__name__)
@lib.jit
def constrained(s, t):
  return lib.lax.with_sharding_constraint(lnp.dot(s, t), lib.P("r", None))
zc = constrained(u, v)
show("constrained", lambda: (zc.sharding, lib.typeof(zc)))
@lib.sharding.explicit_axes
def expl(v):
  print("expl mesh:", lib.sharding.get_abstract_mesh())
  print("expl in:", lib.typeof(v))
  w = v * 2
  print("expl out:", lib.typeof(w))
  return w
@lib.jit
def use_expl(v):
  print("outer mesh:", lib.sharding.get_abstract_mesh())
  return expl(lnp.sin(v), in_sharding=lib.P("r", "c")) + 1
xe = lib.device_put(np.arange(16.).reshape(4, 4), lib.P("r", "c"))
show("explicit_axes", lambda: (lib.typeof(use_expl(xe)), use_expl(xe).sharding))

lib.set_mesh(grid)
u = lib.device_put(lnp.arange(32.0).reshape(8, 4), lib.P(None, "r"))
v = lib.device_put(lnp.arange(64.0).reshape(4, 16), lib.P("r", None))
@functools.partial(lib.shard_map, out_specs=lib.P("r", None))
def mm(s, t):
  return lib.lax.psum_scatter(lnp.dot(s, t), "r", tiled=True)
zm = mm(u, v)
show("shard_map", lambda: lib.typeof(zm))
show("allclose", lambda: bool(lnp.allclose(zm, lnp.dot(u, v, out_sharding=lib.P("r", None)))))
print("DONE")
