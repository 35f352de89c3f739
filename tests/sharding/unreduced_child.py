"""Unreduced and reduced mesh axes (jax 0.10.2's `PartitionSpec(..., unreduced=, reduced=)`)
on 8 CPU devices: the spec's fields, printing, equality and errors; types (`{U:c}`, `{R:c}`);
device_put of unreduced values; a contraction over a split dimension left unreduced with
`out_sharding=`, added up by `reshard`, eagerly and under jit, and its gradient; which ops
take unreduced operands and the errors of the others. Run with `jax` or `revax` as its argument,
it prints one `name: result` line per step (test_unreduced.py compares)."""
import sys
import numpy as np
if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
P = lib.sharding.PartitionSpec


def show(name, fn):
  try:
    r = fn()
  except Exception as e:
    r = f"{type(e).__name__}: {e}"
  print(f"{name}: {r}".replace("\n", " | "))


# --- the spec ---------------------------------------------------------------------------------
p = P("r", None, unreduced={"c"})
show("repr", lambda: (p, P(unreduced={"c"}), P("r", reduced={"c"}),
                      P(None, unreduced={"r"}, reduced={"c"}), P(("r", "c"), unreduced={"k"})))
show("fields", lambda: (sorted(p.unreduced), sorted(p.reduced), p.partitions, len(p)))
show("types", lambda: (type(p.unreduced).__name__, type(P("r").unreduced).__name__))
show("eq", lambda: (p == P("r", None, unreduced={"c"}), p == P("r", None),
                    p == P("r", None, reduced={"c"}), P("r", unreduced=frozenset({"c"})) ==
                    P("r", unreduced={"c"})))
show("hash", lambda: hash(p) == hash(P("r", None, unreduced=frozenset({"c"}))))
show("index", lambda: (p.index("r"), p.count(None)))
show("getitem", lambda: p[0])
show("iter", lambda: list(p))
show("overlap partitions", lambda: P("c", unreduced={"c"}))
show("overlap partitions tuple", lambda: P(("r", "c"), reduced={"c"}))
show("overlap sets", lambda: P(unreduced={"c"}, reduced={"c"}))
show("none axis", lambda: P(unreduced={None}))
show("none reduced", lambda: P(reduced={None}))
show("list", lambda: P(unreduced=["c"]))
show("tuple reduced", lambda: P(reduced=("c",)))
show("add spec", lambda: sorted((p + P(unreduced={"k"})).unreduced))
show("add overlapping", lambda: p + P("c"))
show("add tuple", lambda: p + ("k",))
show("radd tuple", lambda: ("k",) + P("r", reduced={"c"}))
show("add plain", lambda: P("r") + ("c",))
show("update", lambda: (p.update(unreduced={"r"}, partitions=(None,)), p.update(reduced={"k"}),
                        p.update(partitions=("k",))))

grid = lib.make_mesh((4, 2), ("r", "c"))
lib.sharding.set_mesh(grid)
show("named", lambda: lib.sharding.NamedSharding(grid, p))
show("named unknown", lambda: lib.sharding.NamedSharding(grid, P(None, unreduced={"zz"})))
show("named unknown reduced", lambda: lib.sharding.NamedSharding(grid, P(reduced={"zz"})))

# --- placed values ----------------------------------------------------------------------------
a = lnp.arange(32.0).reshape(8, 4)
d = lib.device_put(a, p)
show("put", lambda: (d.sharding, lib.typeof(d)))
show("put repr", lambda: repr(d))
show("put read", lambda: np.asarray(d))
show("put reduced", lambda: lib.typeof(lib.device_put(a, P("r", None, reduced={"c"}))))
show("put reduced value", lambda: np.asarray(lib.device_put(a, P("r", reduced={"c"}))).sum())
show("put both", lambda: lib.typeof(lib.device_put(a, P(None, unreduced={"r"}, reduced={"c"}))))
show("put unknown", lambda: lib.device_put(a, P(None, unreduced={"zz"})))
show("put then reshard", lambda: np.asarray(lib.sharding.reshard(d, P("r", None))).tolist())
show("put then reshard jit",
     lambda: np.asarray(lib.jit(lambda v: lib.sharding.reshard(v, P()))(d)).tolist())

# --- a contraction left unreduced ---------------------------------------------------------------
x = lib.device_put(lnp.arange(32.0).reshape(4, 8), P(None, "c"))
y = lib.device_put(lnp.arange(16.0).reshape(8, 2) - 3.0, P("c", None))
U = P(None, None, unreduced={"c"})
show("dot ambiguous", lambda: lnp.dot(x, y))
z = lnp.dot(x, y, out_sharding=U)
show("dot unreduced", lambda: (lib.typeof(z), z.sharding))
show("dot read", lambda: np.asarray(z))
show("reshard", lambda: (lib.typeof(lib.sharding.reshard(z, P())),
                         np.asarray(lib.sharding.reshard(z, P())).tolist()))
show("reshard split", lambda: (lib.typeof(lib.sharding.reshard(z, P(None, "c"))),
                               np.asarray(lib.sharding.reshard(z, P(None, "c"))).tolist()))
show("reshard keep", lambda: lib.typeof(lib.sharding.reshard(z, U)))
show("numpy", lambda: (np.arange(32.0).reshape(4, 8) @ (np.arange(16.0).reshape(8, 2) - 3.0))
     .tolist())
show("lax dot_general", lambda: lib.typeof(lib.lax.dot_general(
    x, y, (((1,), (0,)), ((), ())), out_sharding=U)))
show("matmul", lambda: lib.typeof(lnp.matmul(x, y, out_sharding=U)))


@lib.jit
def reduced_late(u, v):
  w = lnp.dot(u, v, out_sharding=U)
  print("jit dot:", lib.typeof(w))
  w = w + w
  print("jit add:", lib.typeof(w))
  w = w.T.astype(lnp.float16)
  print("jit T astype:", lib.typeof(w))
  s = lnp.sum(w, axis=0)
  print("jit sum:", lib.typeof(s))
  out = lib.sharding.reshard(w, P())
  print("jit reshard:", lib.typeof(out))
  return out, lib.sharding.reshard(s, P())


show("jit", lambda: [np.asarray(o).tolist() for o in reduced_late(x, y)])
show("jit text", lambda: 'unreduced={"c"}' in reduced_late.lower(x, y).as_text())


def loss(u):
  return lib.sharding.reshard(lnp.dot(u, y, out_sharding=U), P()).sum()


show("grad", lambda: np.asarray(lib.grad(loss)(x)).tolist())
show("grad jit", lambda: np.asarray(lib.jit(lib.grad(loss))(x)).tolist())
show("grad type", lambda: lib.typeof(lib.grad(loss)(x)))
show("vjp ct type", lambda: lib.typeof(lib.vjp(lambda q: lnp.dot(q, y, out_sharding=U), x)[1](
    lib.device_put(lnp.ones((4, 2)), P(None, None, reduced={"c"})))[0]))

# --- what takes an unreduced operand ------------------------------------------------------------
show("add", lambda: lib.typeof(z + z))
show("add mixed", lambda: z + lnp.ones((4, 2)))
show("add mixed rhs", lambda: lnp.ones((4, 2)) + z)
show("mul scalar", lambda: z * 2)
show("mul both", lambda: z * z)
show("mul reduced", lambda: lib.typeof(
    z * lib.device_put(lnp.ones((4, 2)), P(None, None, reduced={"c"}))))
show("dot of unreduced", lambda: type(lnp.dot(z, lnp.ones((2, 2)))))
show("dot wrong axes", lambda: lnp.dot(x, y, out_sharding=P(None, None, unreduced={"r"})))
show("dot unsplit", lambda: lnp.dot(lnp.ones((4, 8)), lnp.ones((8, 2)), out_sharding=U))
show("transpose", lambda: lib.typeof(z.T))
show("astype", lambda: lib.typeof(z.astype(lnp.bfloat16)))
show("sum", lambda: lib.typeof(lnp.sum(z)))
for name, fn in [("sub", lambda: z - z), ("neg", lambda: -z), ("sin", lambda: lnp.sin(z)),
                 ("exp", lambda: lnp.exp(z)), ("max", lambda: lnp.max(z))]:
  show(name, lambda: type(fn()))

# --- into and out of unreduced ------------------------------------------------------------------
rows = lib.device_put(lnp.arange(8.0).reshape(4, 2), P("r", None))
UR = P("r", None, unreduced={"c"})
show("to unreduced", lambda: lib.typeof(lib.sharding.reshard(rows, UR)))
show("round trip", lambda: np.asarray(lib.sharding.reshard(lib.sharding.reshard(rows, UR),
                                                           P("r", None))).tolist())
show("round trip jit", lambda: np.asarray(lib.jit(lambda v: lib.sharding.reshard(
    lib.sharding.reshard(v, UR), P("r", None)))(rows)).tolist())
placed = lib.device_put(lnp.arange(8.0).reshape(4, 2), UR)
show("jit identity", lambda: lib.typeof(lib.jit(lambda v: v)(placed)))
show("jit identity reshard",
     lambda: np.asarray(lib.sharding.reshard(lib.jit(lambda v: v)(placed), P())).tolist())
show("jit add reshard",
     lambda: np.asarray(lib.sharding.reshard(lib.jit(lambda v: v + v)(placed), P())).tolist())
print("DONE")
