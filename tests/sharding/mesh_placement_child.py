"""Where arrays computed under `set_mesh` live, for jax and revax (test_mesh_placement.py):
creation functions, eager operations on NumPy values, Python scalars and arrays already on the
mesh, jit results, random draws and keys, under a mesh of Explicit axes and one of Auto axes,
a mesh of one device and one over 2 of the 4 devices, and after the mesh is unset. Prints
`name: sharding kind, spec, device count, type, committed` per case (run with `jax` or `revax`
as its argument, on 4 CPU devices)."""
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
P = lib.sharding.PartitionSpec


def placed(a):
  s = a.sharding
  return (f"{type(s).__name__} {getattr(s, 'spec', None)} {len(s.device_set)} {lib.typeof(a)} "
          f"{a.committed}")


def show(name, fn):
  try:
    r = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    r = f"{type(e).__name__}"
  print(f"{name}: {r}")


host = np.ones(3, np.float32)
CASES = {
    "ones": lambda: lnp.ones(3),
    "zeros 2d": lambda: lnp.zeros((2, 4)),
    "arange": lambda: lnp.arange(4),
    "arange reshape": lambda: lnp.arange(6.).reshape(2, 3),
    "eye": lambda: lnp.eye(3),
    "linspace": lambda: lnp.linspace(0, 1, 5),
    "full": lambda: lnp.full((2,), 3.0),
    "zeros_like np": lambda: lnp.zeros_like(host),
    "array list": lambda: lnp.array([1.0, 2.0]),
    "array np 2d": lambda: lnp.array(np.ones((2, 2))),
    "asarray np": lambda: lnp.asarray(host),
    "sin np": lambda: lnp.sin(host),
    "reshape of asarray": lambda: lnp.reshape(lnp.asarray(host), (3, 1)),
    "np times scalar": lambda: lnp.multiply(host, 2),
    "np times np": lambda: lnp.multiply(host, host),
    "lax mul np": lambda: lib.lax.mul(host, np.float32(2)),
    "scalar op": lambda: lnp.add(1.0, 2.0),
    "sin of asarray": lambda: lnp.sin(lnp.asarray(host)),
    "asarray plus ones": lambda: lnp.asarray(host) + lnp.ones(3),
    "ones T": lambda: lnp.ones((2, 3)).T,
    "sum ones": lambda: lnp.ones(3).sum(),
    "concat": lambda: lnp.concatenate([lnp.ones(3), lnp.asarray(host)]),
    "index": lambda: lnp.ones(3)[1],
    "at set": lambda: lnp.ones(3).at[0].set(5.0),
    "astype": lambda: lnp.asarray(host).astype(np.int32),
    "key": lambda: lib.random.key(0),
    "uniform": lambda: lib.random.uniform(lib.random.key(0), (2, 2)),
    "normal raw key": lambda: lib.random.normal(lib.random.PRNGKey(0), (3,)),
    "jit identity np": lambda: lib.jit(lambda a: a)(host),
    "jit sin np": lambda: lib.jit(lnp.sin)(np.ones((2, 3))),
    "jit a+a": lambda: lib.jit(lambda a: a + a)(host),
    "jit a*2": lambda: lib.jit(lambda a: a * 2)(host),
    "jit sum": lambda: lib.jit(lambda a: a.reshape(3, 1).sum(1))(host),
    "jit ones": lambda: lib.jit(lambda: lnp.ones(3))(),
    "jit scalar": lambda: lib.jit(lambda a: a * 2)(3.0),
    "jit of ones": lambda: lib.jit(lnp.sin)(lnp.ones(3)),
    "device_put np": lambda: lib.device_put(host),
    "device_put ones": lambda: lib.device_put(lnp.ones(3)),
    "device_put P()": lambda: lib.device_put(np.ones((2, 2)), P()),
    "device_put P(None,None)": lambda: lib.device_put(np.ones((2, 2)), P(None, None)),
    "grad": lambda: lib.grad(lambda v: (v ** 2).sum())(lnp.ones(3)),
    "vmap": lambda: lib.vmap(lnp.sin)(lnp.ones(3)),
    "jit static": lambda: lib.jit(lambda x, n: x * n, static_argnums=1)(lnp.ones(3), 2),
    "jit pytree": lambda: lib.jit(lambda x: {"a": x, "b": (x + 1, None)})(lnp.ones(2))["b"][0],
    "jit donate": lambda: lib.jit(lambda x: x + 1, donate_argnums=0)(lnp.ones(3)),
    "jit kwargs": lambda: lib.jit(lambda x, y: x + y)(x=lnp.ones(3), y=2.0),
    "cond of creations": lambda: lib.lax.cond(True, lambda: lnp.ones(2), lambda: lnp.zeros(2)),
    "scan": lambda: lib.lax.scan(lambda c, x: (c + x, x), 0.0, lnp.arange(3.))[0],
    "vmap jit": lambda: lib.vmap(lib.jit(lnp.sin))(lnp.ones((2, 3))),
    "value": lambda: np.asarray(lnp.ones(3) * 2).tolist(),
}
explicit = lib.make_mesh((2, 2), ("a", "b"))
auto = lib.make_mesh((2, 2), ("a", "b"), axis_types=(lib.sharding.AxisType.Auto,) * 2)
single = lib.make_mesh((1,), ("x",))
part = lib.sharding.Mesh(np.array(lib.devices()[:2]), ("s",))  # (Auto axes, 2 of 4 devices)
for label, mesh in (("explicit", explicit), ("auto", auto), ("one-device", single),
                    ("two of four", part)):
  with lib.set_mesh(mesh):
    kept = lnp.ones(3)
    for name, make in CASES.items():
      show(f"{label} {name}", lambda: placed(make()) if name != "value" else make())
  show(f"{label} after, op of a mesh value", lambda: placed(lnp.sin(kept)))
  show(f"{label} after, ones", lambda: placed(lnp.ones(3)))
print("DONE")
