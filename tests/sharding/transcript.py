"""What the transcript children (indexing_child.py, sharding_rules_child.py) share: the library
named on the command line, a `show` that prints one `name: result` line (an exception being a
result), and a 2x2 mesh with a `put` of a numbered array split over it."""
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
S = lib.sharding
P, T = S.PartitionSpec, lib.typeof


def show(name, fn):
  try:
    result = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    result = f"{type(e).__name__}: {e}"
  print(f"{name}: {result}".replace("\n", " "))


mesh = lib.make_mesh((2, 2), ("a", "b"))


def put(shape, spec):
  return lib.device_put(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7,
                        S.NamedSharding(mesh, spec))
