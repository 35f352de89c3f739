"""One jit program laying values out over several meshes of the same devices (jax's
`use_abstract_mesh` to other axes inside jit, then `reshard`; an out_sharding over another mesh
of the devices): run with `jax` or `revax` as its argument on 8 CPU devices, it prints one
`name: result` line per step (test_other_mesh.py compares): results' types, shardings, values
and blocks, the meshes the lowered module declares, and the incompatible-devices error of a
mesh with the devices in another order."""
import re
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
S = lib.sharding
P, AxisType = lib.P, S.AxisType


def show(name, fn):
  try:
    result = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    result = f"{type(e).__name__}: {re.split('[.:]', str(e))[0]}"  # (jax's words differ after)
  print(f"{name}: {result}".replace("\n", " | "))


def blocks(x):
  return sorted((s.device.id, str(s.index), np.asarray(s.data).tolist())
                for s in x.addressable_shards)


def meshes(lowered):  # the meshes the module declares, by name and axes
  return re.findall(r"sdy\.mesh (@\w+) = <(\[[^\]]*\])", lowered.as_text())


grid = lib.make_mesh((4, 2), ("r", "c"))
lib.set_mesh(grid)
a = lib.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4), P("r", "c"))
K = S.AbstractMesh((8,), ("k",), (AxisType.Explicit,))
XY = S.AbstractMesh((2, 4), ("x", "y"), (AxisType.Explicit,) * 2)


@lib.jit
def to_k(v):
  with S.use_abstract_mesh(K):
    w = lib.reshard(v, P("k", None))
    out = lnp.sin(w) + 1
  return out, v * 2


out, same = to_k(a)
show("k type", lambda: lib.typeof(out))
show("k sharding", lambda: out.sharding)
show("k values", lambda: np.allclose(np.asarray(out), np.sin(np.arange(32.0).reshape(8, 4)) + 1,
                                             atol=1e-5))
show("k blocks", lambda: blocks(out)[:3])
show("grid result", lambda: (lib.typeof(same), same.sharding))
show("k meshes", lambda: meshes(to_k.lower(a)))


@lib.jit
def two_others(v):
  with S.use_abstract_mesh(K):
    w = lib.reshard(v, P("k", None)) * 3
  with S.use_abstract_mesh(XY):
    u = lib.reshard(v, P("y", "x")) - 1
  return w, u


w, u = two_others(a)
show("two types", lambda: (lib.typeof(w), lib.typeof(u)))
show("two shardings", lambda: (w.sharding, u.sharding))
show("two values", lambda: (np.asarray(w).sum(), np.asarray(u).sum()))
show("two blocks", lambda: blocks(u)[:4])
show("two meshes", lambda: meshes(two_others.lower(a)))

Auto = (AxisType.Auto,)
auto_grid = lib.make_mesh((4, 2), ("r", "c"), axis_types=Auto * 2)
b = lib.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4),
                   S.NamedSharding(auto_grid, P("r", "c")))
same_order = S.Mesh(np.array(lib.devices()), ("k",), axis_types=Auto)
reversed_order = S.Mesh(np.array(lib.devices())[::-1], ("k",), axis_types=Auto)
with lib.set_mesh(auto_grid):
  for name, mesh in (("same order", same_order), ("reversed", reversed_order)):
    f = lib.jit(lambda v: v * 2, out_shardings=S.NamedSharding(mesh, P("k")))
    show(f"out {name}", lambda: (f(b).sharding, blocks(f(b))[:2]))
    g = lib.jit(lambda v: lib.lax.with_sharding_constraint(v * 2, S.NamedSharding(mesh, P("k"))))
    show(f"constraint {name}", lambda: np.asarray(g(b)).sum())
print("DONE")
