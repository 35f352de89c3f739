"""Run with 4 CPU devices as `set_mesh_child.py jax|revax` (see test_set_mesh.py): the same
program on either library prints one line per check; the test compares the two transcripts.
Each line is `name: result`, where a result is a value or the type of the exception raised."""
import sys

import numpy as np

from tests.sharding.children import show, spec_of

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
S = lib.sharding
P, AxisType = S.PartitionSpec, S.AxisType


spec = lambda a: spec_of(a.sharding)
value = lambda a: np.round(np.asarray(a), 5).tolist()
m = lib.make_mesh((4,), ("x",))
auto = lib.make_mesh((2, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
devs = np.array(lib.devices())

# meshes and axis types
show("make_mesh types", lambda: m.axis_types)
show("make_mesh auto", lambda: (repr(auto), str(auto), auto.axis_types))
show("Mesh default types", lambda: S.Mesh(devs, "x").axis_types)
show("Mesh one type", lambda: S.Mesh(devs, "x", axis_types=AxisType.Explicit).axis_types)
show("Mesh str types", lambda: S.Mesh(devs, "x", axis_types=("Auto",)))
show("Mesh short types", lambda: S.Mesh(devs.reshape(2, 2), ("x", "y"), AxisType.Auto))
show("mesh eq types", lambda: m == S.Mesh(devs, "x"))
show("mesh axes", lambda: (m.explicit_axes, m.auto_axes, m.manual_axes, auto.auto_axes,
                           m.are_all_axes_explicit, auto.are_all_axes_auto, m.shape_tuple))
show("mesh update", lambda: m.update(axis_types=(AxisType.Auto,)).axis_types)
am = S.AbstractMesh((2, 2), ("a", "b"))
show("abstract mesh", lambda: (repr(am), am.axis_types, dict(am.shape), am.size, am.empty))
show("abstract explicit", lambda: repr(S.AbstractMesh((2,), ("x",), AxisType.Explicit)))
show("abstract of mesh", lambda: (m.abstract_mesh.axis_names, m.abstract_mesh.axis_sizes,
                                  m.abstract_mesh.axis_types,
                                  m.abstract_mesh.abstract_mesh is m.abstract_mesh,
                                  m.abstract_mesh == m.abstract_mesh))
show("abstract device", lambda: (m.abstract_mesh.abstract_device.device_kind,
                                 m.abstract_mesh.abstract_device.platform,
                                 m.abstract_mesh.abstract_device.num_cores,
                                 m.abstract_mesh.abstract_device == m.abstract_mesh.abstract_device,
                                 type(m.abstract_mesh.abstract_device).__name__,
                                 S.AbstractDevice("cpu", None, "cpu").platform))
show("abstract update", lambda: repr(am.update_axis_types({"a": AxisType.Explicit})))
show("single device sharding", lambda: repr(S.make_single_device_sharding(lib.devices()[1])))

# no mesh in context: bare specs are errors of JAX's types
show("empty context", lambda: (repr(S.get_mesh()), S.get_mesh().empty,
                               repr(S.get_abstract_mesh()), S.get_abstract_mesh().empty))
x8 = np.arange(8.0)
show("device_put no mesh", lambda: lib.device_put(x8, P("x")))
show("jit no mesh", lambda: lib.jit(lambda a: a, in_shardings=P("x"))(x8))
show("jit out no mesh", lambda: lib.jit(lambda a: a, out_shardings=P("x"))(x8))
show("wsc no mesh", lambda: lib.jit(lambda a: lib.lax.with_sharding_constraint(a, P("x")))(x8))
show("reshard no mesh", lambda: S.reshard(x8, P("x")))
show("shard_map no mesh", lambda: lib.shard_map(lambda a: a, out_specs=P("x"),
                                                in_specs=P("x"))(x8))
show("smap no mesh", lambda: lib.smap(lambda a: a, in_axes=0, out_axes=0, axis_name="x")(x8))
show("set_mesh not a mesh", lambda: lib.set_mesh(1))
show("set_mesh abstract", lambda: lib.set_mesh(am))
show("use_abstract_mesh concrete", lambda: S.use_abstract_mesh(m))
show("explicit_axes no mesh", lambda: S.explicit_axes(lambda a: a, in_sharding=P("x"))(x8))

for mesh in (lib.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,)), m):
  kind = mesh.axis_types[0]
  with lib.set_mesh(mesh):
    show(f"{kind} context", lambda: (S.get_mesh() == mesh,
                                     S.get_abstract_mesh() == mesh.abstract_mesh))
    x = lib.device_put(x8, P("x"))
    show(f"{kind} device_put", lambda: (spec(x), len(x.addressable_shards), value(x)))
    show(f"{kind} device_put tree", lambda: [spec(a) for a in lib.device_put(
        (x8, np.ones((4, 4))), (P("x"), P(None, "x")))])
    show(f"{kind} out_sharding", lambda: (
        spec(lnp.zeros(8, out_sharding=P("x"))),
        spec(lib.jit(lambda: lnp.arange(8.0, out_sharding=P("x")))()),
        spec(lib.random.normal(lib.random.key(0), (8, 4), out_sharding=P("x")))))
    f = lib.jit(lambda a: a * 2, in_shardings=P("x"), out_shardings=P(None))
    show(f"{kind} jit specs", lambda: (spec(f(x8)), value(f(x8))))
    show(f"{kind} shard_map", lambda: (spec(lib.shard_map(
        lambda a: a * 2, out_specs=P("x"), in_specs=P("x"))(x)), value(lib.shard_map(
            lambda a: lib.lax.psum(a, "x"), out_specs=P(), in_specs=P("x"))(x))))
    traces = []
    counted = lib.shard_map(lambda a: (traces.append(1), a * 2)[1], out_specs=P("x"),
                            in_specs=P("x"))
    show(f"{kind} shard_map traces once", lambda: ([value(counted(x)) for _ in range(3)][0],
                                                   len(traces)))
    show(f"{kind} shard_map static", lambda: value(lib.shard_map(
        lambda a, k: a * k, out_specs=P("x"), in_specs=(P("x"), None))(x, 3.0)))
    show(f"{kind} shard_map infer", lambda: value(lib.shard_map(
        lambda a: a + lib.lax.axis_index("x"), out_specs=P("x"))(x)))
    show(f"{kind} smap", lambda: (spec(lib.smap(lambda a: a * 2, in_axes=0, out_axes=0,
                                                axis_name="x")(x)),
                                  value(lib.smap(lambda a: lib.lax.psum(a, "x"), in_axes=(0,),
                                                 out_axes=None, axis_name="x")(x))))
    show(f"{kind} smap bad name", lambda: lib.smap(lambda a: a, out_axes=0, axis_name=("x",)))
    show(f"{kind} smap bad axes", lambda: lib.smap(lambda a: a, in_axes=0.5, out_axes=0,
                                                   axis_name="x"))
    show(f"{kind} auto_axes", lambda: (
        spec(S.auto_axes(lambda a: a * 2, out_sharding=P("x"))(x)),
        S.auto_axes(lambda a: S.get_abstract_mesh().axis_types, out_sharding=P())(x)))
    show(f"{kind} auto_axes keyword", lambda: spec(
        S.auto_axes(lambda a: a + 1)(x, out_sharding=P("x"))))
    show(f"{kind} auto_axes missing", lambda: S.auto_axes(lambda a: a)(x))
    show(f"{kind} explicit_axes", lambda: (spec(S.explicit_axes(
        lambda a: a * 2, in_sharding=P("x"))(x8)), value(S.explicit_axes(
            lambda a: a + 1)(x, in_sharding=P(None)))))
    show(f"{kind} explicit_axes non-array out", lambda: S.explicit_axes(
        lambda a: S.get_abstract_mesh().axis_types, in_sharding=P("x"))(x))
    show(f"{kind} set_mesh in jit", lambda: lib.jit(lambda a: (lib.set_mesh(mesh), a)[1])(1.0))
    show(f"{kind} get_mesh in jit", lambda: lib.jit(lambda a: (S.get_mesh(), a)[1])(1.0))
    show(f"{kind} abstract in jit", lambda: lib.jit(
        lambda a: a + len(S.get_abstract_mesh().axis_names))(1.0).item())
    # a data-parallel training step written with bare specs
    w = lib.device_put(np.linspace(-1, 1, 12).reshape(4, 3).astype(np.float32), P())
    batch = lib.device_put(np.linspace(0, 2, 32).reshape(8, 4).astype(np.float32), P("x"))
    loss = lambda w, b: lnp.mean(lnp.tanh(b @ w) ** 2)
    step = lib.jit(lambda w, b: w - 0.1 * lib.grad(loss)(w, b), in_shardings=(P(), P("x")),
                   out_shardings=P())
    show(f"{kind} training step", lambda: (spec(step(w, batch)), value(step(w, batch))))
  show(f"{kind} restored", lambda: (S.get_mesh().empty, S.get_abstract_mesh().empty))

lib.set_mesh(m)  # as a global setter
show("global setter", lambda: S.get_mesh() == m)
lib.set_mesh(None)
show("global cleared", lambda: S.get_mesh().empty)
with S.use_abstract_mesh(m.abstract_mesh):
  show("use_abstract_mesh", lambda: (S.get_abstract_mesh() == m.abstract_mesh,
                                     S.get_mesh().empty))
show("use_abstract_mesh restored", lambda: S.get_abstract_mesh().empty)
print("SET_MESH_DONE")
