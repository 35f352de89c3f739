"""Run with 4 CPU devices as `unconstrained_child.py jax|revax` (see test_unconstrained.py):
`PartitionSpec.UNCONSTRAINED` (a dimension whose split XLA chooses; flax's logical partitioning
names it) in specs, NamedShardings and with_sharding_constraint. One line per check."""
import pickle
import sys

import numpy as np

from tests.sharding.children import show, spec_of

if sys.argv[1] == "jax":
  import jax as lib
else:
  import revax as lib
S = lib.sharding
P, AxisType = S.PartitionSpec, S.AxisType
U = P.UNCONSTRAINED

show("repr", lambda: (repr(U), repr(P(U, "a")), repr(P(None, U))))
show("identity", lambda: (P.UNCONSTRAINED is U, pickle.loads(pickle.dumps(U)) is U,
                          pickle.loads(pickle.dumps(P(U, "a"))) == P(U, "a")))
show("equality", lambda: (P(U) == P(U), P(U) == P(), P(U, "a") == P(U, "b"), P(U) == P(None),
                          hash(P(U, "a")) == hash(P(U, "a"))))
show("spec items", lambda: (P(U, "a")[0] is U, len(P(U, "a"))))
mesh = lib.make_mesh((2, 2), ("a", "b"), (AxisType.Auto,) * 2)
x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
for spec in (P(U, "a"), P("a", U), P(U, U), P(U), P(("a", "b"), U)):
  ns = S.NamedSharding(mesh, spec)
  show(f"{spec!r} constraint values", lambda: np.asarray(lib.jit(
      lambda v: lib.lax.with_sharding_constraint(v * 2, ns) + 1)(x)).sum().item())
  show(f"{spec!r} constraint under grad", lambda: np.asarray(lib.grad(
      lambda v: lib.lax.with_sharding_constraint(v * v, ns).sum())(x)).sum().item())
  show(f"{spec!r} fully replicated", lambda: ns.is_fully_replicated)
with lib.set_mesh(mesh):
  show("bare spec constraint", lambda: np.asarray(lib.jit(
      lambda v: lib.lax.with_sharding_constraint(v * 2, P(U, "b")))(x)).sum().item())
  show("constraint keeps the named split", lambda: "b" in str(spec_of(lib.jit(
      lambda v: lib.lax.with_sharding_constraint(v * 2, P(U, "b")))(x).sharding)))


def constraint_open(spec):
  """Whether the program's sharding constraint leaves a dimension open (`{?}`)."""
  text = lib.jit(lambda v: lib.lax.with_sharding_constraint(
      v * 2, S.NamedSharding(mesh, spec))).lower(x).as_text()
  lines = [ln for ln in text.splitlines() if "sharding_constraint" in ln]
  return len(lines), "{?}" in lines[0]


show("lowered open", lambda: constraint_open(P(U, "b")))
show("lowered closed", lambda: constraint_open(P(None, "b")))
print("UNCONSTRAINED_DONE")
