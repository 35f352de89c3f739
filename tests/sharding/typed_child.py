"""Run with 4 CPU devices as `typed_child.py jax|revax` (see test_sharding_in_types.py): values
split over Explicit mesh axes carry the split in their types; the same program on either library
prints, per check, the spec of the result's type (trailing Nones dropped) or the type of the
exception raised."""
import sys

import numpy as np

from tests.sharding.children import show, spec_of

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
P = lib.sharding.PartitionSpec


def ts(a):
  return spec_of(lib.typeof(a).sharding)


mesh = lib.make_mesh((2, 2), ("d", "m"))
with lib.set_mesh(mesh):
  x = lib.device_put(np.linspace(0, 1, 32).reshape(8, 4).astype(np.float32), P("d"))
  w1 = lib.device_put(np.linspace(-1, 1, 24).reshape(4, 6).astype(np.float32), P(None, "m"))
  w2 = lib.device_put(np.linspace(-1, 1, 12).reshape(6, 2).astype(np.float32), P())
  other = lib.device_put(np.ones((8, 4), np.float32), P("m"))

  def loss(params, x):
    h = lnp.tanh(x @ params[0])
    return lnp.mean((h @ params[1]) ** 2)

  show("placed", lambda: (ts(x), ts(w1), ts(w2), str(lib.typeof(x).shape)))
  show("unsplit sharding", lambda: (type(lib.typeof(w2).sharding).__name__,
                                    lib.typeof(w2).sharding.spec == P(None, None)))
  show("matmul", lambda: ts(lnp.tanh(x @ w1)))
  show("two layers", lambda: ts(lnp.tanh(x @ w1) @ w2))
  show("contracted split", lambda: ts(x @ lib.device_put(np.ones((4, 3), np.float32), P("m"))))
  show("loss", lambda: ts(loss((w1, w2), x)))
  show("grads", lambda: [ts(g) for g in lib.grad(loss)((w1, w2), x)])
  step = lib.jit(lambda p, x: [a - 0.1 * b for a, b in zip(p, lib.grad(loss)(p, x))])
  show("jit step types", lambda: [(ts(a), spec_of(a.sharding)) for a in step((w1, w2), x)])
  show("jit step values", lambda: [float(np.round(np.asarray(a).sum(), 4))
                                   for a in step((w1, w2), x)])
  show("inside jit", lambda: lib.jit(lambda a: (a @ w1).sum() * 0 + len(ts(a @ w1)))(x).item())
  show("jaxpr prints splits", lambda: "f32[8@d,6@m]" in str(lib.make_jaxpr(lambda a: a @ w1)(x)))
  host = np.ones((8, 4), np.float32)
  show("jit in_shardings type the trace", lambda: (
      lib.jit(lambda a: a.sum() * 0 + len(ts(a * 2)), in_shardings=P("d"))(host).item(),
      ts(lib.jit(lambda a: a * 2, in_shardings=P("d"))(host)),
      ts(lib.jit(lambda a: a * 2, in_shardings=P("d"), out_shardings=P())(host))))
  show("reduce kept", lambda: ts(lnp.sum(x, 1)))
  show("reduce split", lambda: ts(lnp.sum(x, 0)))
  show("transpose", lambda: ts(x.T))
  show("reshape split minor", lambda: ts(x.reshape(8, 2, 2)))
  show("expand", lambda: ts(x[None]))
  show("concatenate", lambda: ts(lnp.concatenate([x, x], 1)))
  show("slice whole", lambda: ts(x[:, 1:]))
  show("astype", lambda: ts(x.astype(np.int32)))
  show("where", lambda: ts(lnp.where(x > 0.5, x, 0.0)))
  show("argmax", lambda: ts(lnp.argmax(x, 1)))
  show("cumsum", lambda: ts(lnp.cumsum(x, 1)))
  show("product", lambda: ts(x * x))
  show("broadcast row", lambda: ts(x + lnp.ones(4)))
  show("vmap", lambda: ts(lib.vmap(lambda r: r * 2)(x)))
  show("created", lambda: ts(lnp.ones((3,))))
  show("reshard", lambda: (ts(lib.sharding.reshard(x, P(None, "d"))),
                           ts(lib.jit(lambda a: lib.sharding.reshard(a, P()) * 2)(x))))
  show("shard_map infers under jit", lambda: float(lib.jit(lib.shard_map(
      lambda a: lib.lax.psum(a.sum(), ("d",)), out_specs=P(), axis_names={"d"}))(x)))
  # a shard_map body using a split array from outside (its region is manual: no typed layouts)
  show("shard_map closure over a split array", lambda: float(lib.jit(lib.shard_map(
      lambda a: lib.lax.psum(a.sum() + (x * 2).sum(), ("d",)), mesh=mesh, in_specs=P("d"),
      out_specs=P(), axis_names={"d"}))(x)))
  # given in_specs must say how each argument is split over Explicit axes (NumPy: unsplit)
  double = lambda a: a * 2
  for name, arg, spec in (("split arg, P('d')", x, P("d")), ("split arg, P()", x, P()),
                          ("unsplit arg, P('d')", w2, P("d")), ("numpy arg, P('d')", host, P("d")),
                          ("numpy arg, P()", host, P()), ("python scalar, P()", 2.0, P())):
    for how, wrap in (("eager", lambda f: f), ("jit", lib.jit)):
      for manual in ({"d"}, {"d", "m"}):  # jax checks only when every axis is manual
        show(f"shard_map in_specs {name} {how} {sorted(manual)}", lambda: ts(wrap(lib.shard_map(
            double, mesh=mesh, in_specs=spec, out_specs=spec, axis_names=manual))(arg)))
  # errors: two different axes on one dimension, one axis on two dimensions
  show("conflict", lambda: ts(x + other))
  show("axis twice", lambda: ts(x @ x.T))
  # revax computes where jax asks for out_sharding (see test_sharding_in_types.py)
  show("reshape merged", lambda: ts(x.reshape(4, 8)))
  show("slice split", lambda: ts(x[1:]))
  show("sort split", lambda: ts(lnp.sort(x, 0)))
# a size-1 Explicit axis stays in the types (and the shardings) of eager and jitted results
thin = lib.make_mesh((4, 1), ("a", "b"))
with lib.set_mesh(thin):
  t = lib.device_put(np.ones((8, 4), np.float32), P("a", "b"))
  show("size-1 axis placed", lambda: (ts(t), spec_of(t.sharding)))
  show("size-1 axis eager", lambda: (ts(t * 2), spec_of((t * 2).sharding), ts(lnp.sin(t))))
  show("size-1 axis jit", lambda: (ts(lib.jit(lambda a: a + 1)(t)),
                                   ts(lib.jit(lambda a: a.sum(0))(t))))
  show("types print", lambda: (str(lib.typeof(t)), repr(lib.typeof(t))))
# a type's sharding is a NamedSharding over an AbstractMesh, and can be handed back
seen = []
show("type sharding", lambda: (repr(lib.typeof(t).sharding), repr(lib.typeof(t * 2).sharding)))
show("type of numpy, scalar", lambda: (repr(lib.typeof(np.ones((2, 3))).sharding),
                                       repr(lib.typeof(1.0).sharding)))
show("type sharding devices", lambda: lib.typeof(t).sharding.device_set)
show("type sharding shard_shape", lambda: (lib.typeof(t).sharding.shard_shape((8, 4)),
                                           lib.typeof(t).sharding.num_devices,
                                           lib.typeof(t).sharding.is_fully_replicated))
show("type sharding equality", lambda: (lib.typeof(t) == lib.typeof(t + 1),
                                        lib.typeof(t).sharding == t.sharding,
                                        lib.typeof(t).sharding.mesh == thin.abstract_mesh))
show("type in jit", lambda: (lib.jit(lambda a: (seen.append(repr(lib.typeof(a).sharding)),
                                                a)[1])(t).shape, seen[-1]))
show("reshard to a type", lambda: (ts(lib.sharding.reshard(x, lib.typeof(other).sharding)),
                                   ts(lib.jit(lambda a: lib.sharding.reshard(
                                       a * 2, lib.typeof(other).sharding))(x))))
show("reshard not a sharding", lambda: lib.sharding.reshard(t, 3))
# (jax 0.10.2 fails an internal assertion for device_put given a type's sharding; revax raises
# ValueError: its mesh has no devices)
with lib.set_mesh(mesh):
  show("type in context", lambda: (repr(lib.typeof(lnp.ones(3)).sharding),
                                   repr(lib.typeof(np.ones(3)).sharding)))
  show("out_sharding a type", lambda: ts(lnp.dot(x, w1, out_sharding=lib.typeof(x).sharding)))
  show("constraint to a type", lambda: ts(lib.jit(lambda a: lib.lax.with_sharding_constraint(
      a * 2, lib.typeof(other).sharding))(x)))
print("TYPED_DONE")
