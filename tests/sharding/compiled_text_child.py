"""`Compiled.as_text()` of programs over a mesh (issue 35): XLA's optimized, SPMD-partitioned
module, as jax's. Run with `jax` or `revax` as its argument on 8 CPU devices, it prints per
program what the two libraries' XLA must agree on (test_compiled_text.py compares): the header
(module name, scheduled, entry layouts with the per-device shapes, partition count), the entry
computation's signature, the collectives the partitioner put in and whether ops were fused.
Names and the printer's details differ between the plugin's XLA and jaxlib's; these do not."""
import re
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
P = lib.P
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


def facts(text: str) -> str:
  """What XLA's optimized module says, without names: header fields (jaxlib's XLA adds the
  allow_spmd_sharding_propagation options jax sets for a one-device program), the ENTRY
  signature, the collectives present, whether anything was fused."""
  head = [f for f in text.split("\n", 1)[0].split(", ") if not f.startswith("allow_spmd")]
  entry = text[text.index("\nENTRY "):].split("\n")[1]
  signature = re.sub(r"[\w.\-]+: ", "", entry.split(" ", 2)[2])
  ops = sorted({m for m in re.findall(r" ([a-z][\w\-]*)\(", text) if m in COLLECTIVES})
  return f"{', '.join(head)} | {signature} | {ops} | fusion: {' fusion(' in text}"


def show(name, fn):
  try:
    result = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    result = f"{type(e).__name__}: {e}"
  print(f"{name}: {result}".replace("\n", " | "))


mesh = lib.make_mesh((2, 4), ("r", "c"))
lib.set_mesh(mesh)
a = lib.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4), P("r", "c"))
w = lib.device_put(np.ones((4, 16), np.float32), P("c", None))


def ring(v):  # each block to its neighbour along c
  return lib.lax.ppermute(v, "c", [(i, (i + 1) % 4) for i in range(4)])


PROGRAMS = {
    "sum0": (lambda v: lnp.sin(v).sum(0), (a,)),
    "sum": (lambda v: (v * 2).sum(), (a,)),
    "matmul": (lambda v, m: lnp.matmul(v, m, out_sharding=P("r", None)), (a, w)),
    "gather": (lambda v: lib.reshard(v * 2, P(None, None)), (a,)),
    "swap axes": (lambda v: lib.reshard(v, P("c", "r")), (a,)),
    "elementwise": (lambda v: lnp.exp(v) + 1, (a,)),
    "shard_map psum": (lib.shard_map(lambda v: lib.lax.psum(v, "r"), out_specs=P(None, "c")),
                       (a,)),
    "shard_map ppermute": (lib.shard_map(ring, out_specs=P("r", "c")), (a,)),
}
compiled = {}
for name, (f, args) in PROGRAMS.items():
  compiled[name] = lib.jit(f).lower(*args).compile()
  show(name, lambda: facts(compiled[name].as_text()))
c = compiled["sum0"]
show("modules", lambda: [(m.name, m.to_string() == c.as_text())
                         for m in c.runtime_executable().hlo_modules()])
show("result", lambda: np.asarray(c(a)).tolist())
print("DONE")
