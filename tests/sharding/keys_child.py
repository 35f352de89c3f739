"""Run with 4 CPU devices as `keys_child.py jax|revax` (see test_key_shardings.py): where typed
PRNG key arrays live (`.sharding`, `.is_fully_replicated`, `typeof`), on one device and split
over a mesh, eagerly and through jit."""
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib
else:
  import revax as lib
S = lib.sharding
P = S.PartitionSpec


def show(name, fn):
  try:
    result = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    result = f"{type(e).__name__}: {e}"
  print(f"{name}: {result}")


k = lib.random.key(0)
ks = lib.random.split(k, 8)
mesh = lib.make_mesh((2, 2), ("a", "b"))
placed = lib.device_put(ks, S.NamedSharding(mesh, P("a")))
grid = lib.device_put(lib.random.split(k, 16).reshape(4, 4), S.NamedSharding(mesh, P("a", "b")))
show("key sharding", lambda: k.sharding)
show("split sharding", lambda: ks.sharding)
show("replicated", lambda: (k.is_fully_replicated, placed.is_fully_replicated))
show("put on device 2", lambda: lib.device_put(ks, lib.devices()[2]).sharding)
show("jit result", lambda: lib.jit(lambda a: a)(ks).sharding)
show("placed spec", lambda: placed.sharding.spec)
show("placed type", lambda: lib.typeof(placed))
show("grid spec", lambda: grid.sharding.spec)
show("grid type", lambda: lib.typeof(grid))
show("placed through jit", lambda: (lib.jit(lambda a: a)(placed).sharding.spec,
                                    lib.typeof(lib.jit(lambda a: a)(placed))))
show("shards", lambda: [(str(s.device), s.index, s.replica_id, str(lib.typeof(s.data)))
                        for a in (ks, placed) for s in a.addressable_shards])
show("shard keys", lambda: np.asarray(lib.random.key_data(placed.addressable_shards[2].data))
     .tolist() == np.asarray(lib.random.key_data(ks))[4:].tolist())
show("placed values", lambda: np.asarray(lib.random.key_data(placed)).tolist()
     == np.asarray(lib.random.key_data(ks)).tolist())
seen = []
with lib.set_mesh(mesh):
  data = lib.jit(lambda a: (seen.append(str(lib.typeof(a))), lib.random.key_data(a))[1])(placed)
show("typed in jit", lambda: (seen, lib.typeof(data)))
print("KEYS_DONE")
