"""Run with 2 CPU devices as `abstract_sharding_child.py jax|revax` (see
test_abstract_sharding.py): a NamedSharding over an AbstractMesh (what flax builds from
`get_abstract_mesh()` under `set_mesh`), what each of its methods answers or raises, and where
jit, device_put and with_sharding_constraint take it. One line per check: `name: result`, a
value or the type of the exception raised (with, for ValueErrors about the abstract mesh, the
method the message names)."""
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib
else:
  import revax as lib
S = lib.sharding
P, AxisType = S.PartitionSpec, S.AxisType
NAME = sys.argv[1]


def show(name, fn):
  try:
    result = fn()
  except Exception as e:  # noqa: BLE001 (the exception's type is the result)
    result = type(e).__name__
    msg = str(e)
    if isinstance(e, ValueError) and f"not implemented for `{NAME}.sharding.AbstractMesh`" in msg:
      result += " " + msg.split(" ")[0]  # the method jax's message names
  print(f"{name}: {result}".replace(NAME + ".", "LIB."))


def spec(s):
  parts = list(s.spec)
  while parts and parts[-1] is None:
    parts.pop()
  return tuple(parts)


mesh = lib.make_mesh((2, 1), ("a", "b"), (AxisType.Auto,) * 2)
am = mesh.abstract_mesh
bare = S.AbstractMesh((2, 1), ("a", "b"))
for mname, m in (("from mesh", am), ("bare", bare)):
  ns = S.NamedSharding(m, P("a"))
  for attr in ("device_set", "is_fully_replicated", "num_devices", "_device_assignment",
               "is_fully_addressable", "addressable_devices", "memory_kind", "spec"):
    show(f"{mname} {attr}", lambda: getattr(ns, attr))
  show(f"{mname} mesh is", lambda: ns.mesh is m)
  for shape in ((4, 3), (2,), (6, 1, 5)):
    show(f"{mname} shard_shape {shape}", lambda: ns.shard_shape(shape))
  show(f"{mname} devices_indices_map", lambda: ns.devices_indices_map((4, 3)))
  show(f"{mname} addressable_devices_indices_map",
       lambda: ns.addressable_devices_indices_map((4, 3)))
  show(f"{mname} repr", lambda: repr(ns).replace(", device_kind=cpu, num_cores=None, "
                                                 "platform=cpu", ""))
  show(f"{mname} equal", lambda: (ns == S.NamedSharding(m, P("a")), ns == S.NamedSharding(m, P()),
                                  hash(ns) == hash(S.NamedSharding(m, P("a")))))
  show(f"{mname} with_memory_kind", lambda: (ns.with_memory_kind("device").memory_kind,
                                             repr(ns.with_memory_kind("device")).endswith(
                                                 "memory_kind=device)")))
  show(f"{mname} update spec", lambda: (spec(ns.update(spec=P("b"))), ns.update(spec=P()).mesh
                                        is m))
  show(f"{mname} update spec tuple", lambda: spec(ns.update(spec=("b", "a"))))
  show(f"{mname} update mesh", lambda: type(ns.update(mesh=mesh).mesh).__name__)
  show(f"{mname} update memory_kind", lambda: ns.update(memory_kind="device").memory_kind)
  show(f"{mname} is_equivalent_to", lambda: (ns.is_equivalent_to(S.NamedSharding(m, P("a")), 2),
                                             ns.is_equivalent_to(S.NamedSharding(m, P()), 2),
                                             ns.is_equivalent_to(S.NamedSharding(m, P("b")), 1)))
  show(f"{mname} replicated", lambda: (S.NamedSharding(m, P()).is_fully_replicated,
                                       S.NamedSharding(m, P("b")).is_fully_replicated,
                                       S.NamedSharding(m, P(None, "a")).is_fully_replicated))
  show(f"{mname} bad axis", lambda: S.NamedSharding(m, P("z")))
  show(f"{mname} axis twice", lambda: S.NamedSharding(m, P("a", "a")))
show("concrete update spec", lambda: spec(S.NamedSharding(mesh, P("a")).update(spec=P(None, "a"))))
show("concrete update keeps mesh", lambda: S.NamedSharding(mesh, P("a")).update(spec=P()).mesh
     == mesh)
show("concrete with_memory_kind", lambda: S.NamedSharding(mesh, P("a")).with_memory_kind(
    "device").memory_kind)
show("concrete _device_assignment", lambda: [d.id for d in
                                            S.NamedSharding(mesh, P("a"))._device_assignment])
show("concrete addressable map", lambda: sorted(
    (d.id, str(i)) for d, i in S.NamedSharding(mesh, P("a")).addressable_devices_indices_map(
        (4,)).items()))
one = S.SingleDeviceSharding(lib.devices()[0])
show("single with_memory_kind", lambda: one.with_memory_kind("device").memory_kind)
show("single _device_assignment", lambda: [d.id for d in one._device_assignment])
show("single addressable map", lambda: [(d.id, i) for d, i in
                                        one.addressable_devices_indices_map((3,)).items()])

# is_equivalent_to between every kind of concrete sharding (flax's spmd tests compare a
# SingleDeviceSharding with a NamedSharding)
d0, d1 = lib.devices()[:2]
m1 = lib.make_mesh((1,), ("a",), (AxisType.Auto,), devices=[d0])
m2 = lib.make_mesh((2,), ("a",), (AxisType.Auto,))
kinds = {"one": S.SingleDeviceSharding(d0), "other": S.SingleDeviceSharding(d1),
         "named1": S.NamedSharding(m1, P("a")), "named1 rep": S.NamedSharding(m1, P()),
         "named2": S.NamedSharding(m2, P("a")), "named2 rep": S.NamedSharding(m2, P()),
         "named2 b": S.NamedSharding(m2, P(None, "a"))}
for kname, kind in kinds.items():
  for ndim in (2, 3):  # (jax: IndexError at rank 1 against P(None, 'a'); revax: False)
    show(f"{kname} equivalent rank {ndim}", lambda: [int(kind.is_equivalent_to(o, ndim))
                                                     for o in kinds.values()])

# where the transformations take it
ns = S.NamedSharding(am, P("a"))
x = lib.numpy.arange(4.0)
show("device_put no mesh", lambda: lib.device_put(x, ns))
show("jit in_shardings no mesh", lambda: lib.jit(lambda v: v, in_shardings=ns)(x))
show("jit out_shardings no mesh", lambda: lib.jit(lambda v: v * 2, out_shardings=ns)(x))
with lib.set_mesh(mesh):
  show("device_put in mesh", lambda: lib.device_put(x, ns))
  show("jit in_shardings in mesh", lambda: lib.jit(lambda v: v, in_shardings=ns)(x))
  show("jit out_shardings in mesh", lambda: (
      spec(lib.jit(lambda v: v * 2, out_shardings=ns)(x).sharding),
      np.asarray(lib.jit(lambda v: v * 2, out_shardings=ns)(x)).tolist()))
  show("jit out_shardings tree in mesh", lambda: [
      spec(o.sharding) for o in lib.jit(lambda v: (v, v + 1), out_shardings=(ns, ns.update(
          spec=P())))(x)])
  show("constraint in mesh", lambda: spec(lib.jit(
      lambda v: lib.lax.with_sharding_constraint(v * 2, ns))(x).sharding))
  show("abstract mesh in context", lambda: spec(lib.jit(
      lambda v: v * 2, out_shardings=S.NamedSharding(S.get_abstract_mesh(), P("a")))(x).sharding))

# a type's sharding with no mesh (`typeof(x).sharding` outside set_mesh: the empty AbstractMesh)
# as out_sharding= asks for nothing (flax's Dropout passes it to random.bernoulli)
y = lib.numpy.ones((2, 3))
none = lib.typeof(y).sharding
k0 = lib.random.key(0)
OUT_SHARDING_OPS = {
    "bernoulli": lambda s: lib.random.bernoulli(k0, 0.5, (2, 3), out_sharding=s),
    "normal": lambda s: lib.random.normal(k0, (2, 3), out_sharding=s),
    "uniform": lambda s: lib.random.uniform(k0, (2, 3), out_sharding=s),
    "dot": lambda s: lib.numpy.dot(y, y.T, out_sharding=s),
    "matmul": lambda s: lib.numpy.matmul(y, y.T, out_sharding=s),
    "einsum": lambda s: lib.numpy.einsum("ij,kj->ik", y, y, out_sharding=s),
    "zeros": lambda s: lib.numpy.zeros((2, 3), out_sharding=s),
    "full": lambda s: lib.numpy.full((2, 3), 2.0, out_sharding=s),
    "reshape": lambda s: lib.numpy.reshape(y, (3, 2), out_sharding=s),
    "dot_general": lambda s: lib.lax.dot_general(y, y, (((1,), (1,)), ((), ())),
                                                out_sharding=s),
}
for op, fn in OUT_SHARDING_OPS.items():
  def described(v):
    return v.shape, str(v.dtype), np.asarray(v).tolist()
  show(f"no-mesh out_sharding {op}", lambda: described(fn(none)) == described(fn(None)))
  show(f"no-mesh out_sharding {op} jit", lambda: described(lib.jit(lambda: fn(none))())
       == described(fn(None)))
show("no-mesh reshard", lambda: lib.sharding.reshard(y, none))
show("no-mesh constraint", lambda: lib.jit(lambda v: lib.lax.with_sharding_constraint(v, none))(y))
print("ABSTRACT_SHARDING_DONE")
