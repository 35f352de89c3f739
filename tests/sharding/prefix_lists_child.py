"""Run with 4 CPU devices as `prefix_lists_child.py jax|revax` (see test_prefix_lists.py):
pytree prefixes of specs and shardings that hold lists (flax's nnx passes its states' specs as
lists) in shard_map's in_specs/out_specs, jit's in_shardings/out_shardings and
with_sharding_constraint. One line per check: `name: result`."""
import sys

import numpy as np

from tests.sharding.children import show, spec_of

if sys.argv[1] == "jax":
  import jax as lib
else:
  import revax as lib
S = lib.sharding
P = S.PartitionSpec
mesh = lib.make_mesh((4,), ("x",), (S.AxisType.Auto,))
a = np.arange(8.0, dtype=np.float32)
b = np.arange(16.0, dtype=np.float32).reshape(8, 2)
vals = lambda out: [np.asarray(v).tolist() for v in lib.tree_util.tree_leaves(out)]
specs = lambda out: [spec_of(v.sharding) for v in lib.tree_util.tree_leaves(out)]

SM_CASES = {
    "list in, list out": (([P("x"), P("x")],), [P("x"), P("x")],
                          lambda xs: [xs[0] * 2, xs[1] + 1]),
    "list prefix per arg": ([P("x")], P("x"), lambda xs: [xs[0] * 2, xs[1] + 1]),
    "nested list": (([P("x"), [P("x")]],), [[P()], P("x")],
                    lambda xs: [[lib.lax.psum(xs[1][0].sum(), "x")], xs[0]]),
    "dict of lists": (({"u": [P("x")], "v": P()},), {"u": [P("x")], "v": P()},
                      lambda d: {"u": [d["u"][0] * 3], "v": d["v"]}),
}
SM_ARGS = {
    "list in, list out": lambda: ([a, b],), "list prefix per arg": lambda: ([a, b],),
    "nested list": lambda: ([a, [b]],), "dict of lists": lambda: ({"u": [a], "v": b},),
}
for name, (ins, outs, body) in SM_CASES.items():
  f = lib.shard_map(body, mesh=mesh, in_specs=ins, out_specs=outs)
  show(f"shard_map {name}", lambda: vals(f(*SM_ARGS[name]())))
  show(f"shard_map {name} jit", lambda: vals(lib.jit(f)(*SM_ARGS[name]())))

ns = lambda *spec: S.NamedSharding(mesh, P(*spec))
show("jit list shardings", lambda: specs(lib.jit(
    lambda xs: [xs[0] * 2, xs[1]], in_shardings=([ns("x"), ns()],),
    out_shardings=[ns(), ns("x")])([a, b])))
show("jit nested list shardings", lambda: specs(lib.jit(
    lambda xs: (xs, [xs[1][0]]), out_shardings=([ns("x"), [ns()]], [ns("x")]))([a, [b]])))
show("constraint list prefix", lambda: vals(lib.jit(lambda xs: lib.lax.with_sharding_constraint(
    [xs[0] * 2, [xs[1][0] + 1]], [ns("x"), [ns()]]))([a, [b]])))
show("constraint list prefix specs", lambda: specs(lib.jit(
    lambda xs: lib.lax.with_sharding_constraint([xs[0] * 2, [xs[1][0] + 1]],
                                                [ns(), [ns("x")]]))([a, [b]])))
print("PREFIX_LISTS_DONE")
