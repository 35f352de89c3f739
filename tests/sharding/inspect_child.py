"""Run with 4 CPU devices as `inspect_child.py jax|revax` (see test_inspect_sharding.py):
`debug.inspect_array_sharding` eagerly, under jit, vmap and grad, and
`debug.visualize_array_sharding` / `visualize_sharding` (their tables where `rich` is installed,
its ValueError where not). Prints one line per check, and the tables as drawn."""
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
S = lib.sharding
P, N = S.PartitionSpec, S.NamedSharding


def show(name, fn):
  try:
    result = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    result = type(e).__name__ + (f": {e}" if isinstance(e, ValueError) else "")
  print(f"{name}: {result}")


mesh = lib.make_mesh((2, 2), ("a", "b"))
x = lib.device_put(np.ones((8, 4), np.float32), N(mesh, P("a", "b")))
got = []


def run(f):
  got.clear()
  f()
  return list(got)


def seen(s):
  got.append(repr(s))


def body(a):
  b = lnp.sin(a)
  lib.debug.inspect_array_sharding(b, callback=seen)
  lib.debug.inspect_array_sharding(b.sum(0), callback=seen)
  return b * 2


show("eager", lambda: run(lambda: lib.debug.inspect_array_sharding(x, callback=seen)))
show("eager one device", lambda: run(lambda: lib.debug.inspect_array_sharding(
    lnp.ones(3), callback=seen)))
show("eager tree", lambda: run(lambda: lib.debug.inspect_array_sharding(
    {"a": x, "b": (x * 2,)}, callback=seen)))
show("jit", lambda: run(lambda: lib.jit(body)(x)))
show("jit cached", lambda: run(lambda: lib.jit(body)(x)))
show("vmap", lambda: run(lambda: lib.vmap(
    lambda r: (lib.debug.inspect_array_sharding(r, callback=seen), r)[1])(x)))
with lib.set_mesh(mesh):
  show("grad", lambda: run(lambda: lib.grad(
      lambda r: (lib.debug.inspect_array_sharding(r, callback=seen), r.sum())[1])(x)))
for shape, spec in [((8, 4), P("a", "b")), ((8, 4), P("a")), ((8,), P(("a", "b"))),
                    ((8, 4), P(None, "b")), ((8, 4), P())]:
  y = lib.device_put(np.ones(shape, np.float32), N(mesh, spec))
  print(f"visualize {shape} {spec}:")
  show("  array", lambda: lib.debug.visualize_array_sharding(y))
  show("  sharding", lambda: lib.debug.visualize_sharding(shape, y.sharding, use_color=False,
                                                         max_width=40))
show("visualize rank 3", lambda: lib.debug.visualize_sharding((2, 2, 2), x.sharding))
show("visualize one device", lambda: lib.debug.visualize_array_sharding(lnp.ones((4, 4))))
print("INSPECT_DONE")
