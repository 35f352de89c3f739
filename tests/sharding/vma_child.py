"""Varying manual axes (vma) inside shard_map, generated over operations and in_specs: run with
`jax` or `revax` as its argument on 4 CPU devices, it prints one `name: result` line per case
(test_vma.py compares the two transcripts). A result is the type of the value the operation
gives inside the body (`jax.typeof`, with its `{V:...}`), the exception's type and message, a
jaxpr's text, or values.

Cases: every collective over each axis (and both) of a 2x2 mesh, applied to values split over
no axis, one axis or both; elementwise, reduction, shape, indexing and contraction operations
on operands of every pair of those kinds (JAX's implicit pvary); pcast; control flow (scan,
fori_loop, while_loop, cond, switch) with carries and branches that agree or not; jit, vmap,
custom_jvp and grad inside the body; grad of shard_map; check_vma=False; out_specs errors
eagerly and under jit (one and several outputs, one and two mesh axes); jaxprs' text.
"""
import re
import sys
import numpy as np
if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp
P = lib.sharding.PartitionSpec
lax = lib.lax
Auto = lib.sharding.AxisType.Auto


def show(name, fn):
  try:
    r = fn()
  except Exception as e:  # noqa: BLE001 (the exception is the result)
    r = f"{type(e).__name__}: {e}"
  # (a set of strings prints in an order fixed per process by string hashing: sorted here)
  r = re.sub(r"\{('[^']*'(?:, '[^']*')+)\}",
             lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", str(r))
  print(f"{name}: {r}".replace("\n", " | "))


mesh = lib.make_mesh((2, 2), ("i", "j"), (Auto, Auto))
X = np.arange(16, dtype=np.float32).reshape(4, 4) / 4
SPECS = {"none": P(), "i": P("i"), "j": P("j"), "ij": P(("i", "j")), "i,j": P("i", "j")}


def body_type(name, spec, op, args=(X,), out=None, check=True):
  """The type `op` gives inside a shard_map over `mesh` whose arguments are split as `spec`."""
  seen = []

  def body(*blocks):
    r = op(*blocks)
    seen.append(" ".join(str(lib.typeof(leaf)) for leaf in lib.tree_util.tree_leaves(r)))
    return blocks[0]

  def run():
    first = spec[0] if isinstance(spec, tuple) else spec
    lib.jit(lib.shard_map(body, mesh=mesh, in_specs=spec,
                          out_specs=first if out is None else out, check_vma=check))(*args)
    return seen[0]
  show(name, run)


# --- collectives, over each axis and both, on operands split over none, one or both axes ---
COLLECTIVES = {
    "psum": lambda a, t: lax.psum(t, a),
    "pmean": lambda a, t: lax.pmean(t, a),
    "pmax": lambda a, t: lax.pmax(t, a),
    "pmin": lambda a, t: lax.pmin(t, a),
    "all_gather": lambda a, t: lax.all_gather(t, a),
    "all_gather tiled": lambda a, t: lax.all_gather(t, a, tiled=True, axis=1),
    "all_gather invarying": lambda a, t: lax.all_gather(t, a, to="invarying"),
    "all_gather invarying tiled": lambda a, t: lax.all_gather(t, a, tiled=True, to="invarying"),
    "psum_scatter": lambda a, t: lax.psum_scatter(t, a, scatter_dimension=1, tiled=True),
    "ppermute": lambda a, t: lax.ppermute(t, a, [(0, 1), (1, 0)]) if isinstance(a, str)
    else lax.ppermute(t, a, [(k, (k + 1) % 4) for k in range(4)]),
    "pshuffle": lambda a, t: lax.pshuffle(t, a, [1, 0]) if isinstance(a, str)
    else lax.pshuffle(t, a, [3, 2, 1, 0]),
    "all_to_all": lambda a, t: lax.all_to_all(t, a, 1, 1, tiled=True),
    "axis_index": lambda a, t: lax.axis_index(a) + 0 * t.astype(np.int32)[0, 0],
    "axis_index alone": lambda a, t: lax.axis_index(a),
    "axis_size": lambda a, t: lax.axis_size(a) * t,
    "pcast": lambda a, t: lax.pcast(t, a, to="varying"),
}
for cname, fn in COLLECTIVES.items():
  for axes in ("i", "j", ("i", "j"), ("j", "i")):
    for sname, spec in SPECS.items():
      body_type(f"{cname} over {axes} of {sname}", spec,
                lambda t, fn=fn, axes=axes: fn(axes, t))

# --- collectives over both axes, in either order: values (the program over the mesh) and
# gradients (computed from shard_map's vmap form) ---
Y = np.sin(np.arange(32, dtype=np.float32)).reshape(8, 4)
MULTI = {
    "all_gather": (lambda a: lax.all_gather(a, ("i", "j"), axis=1, tiled=True), P("i", "j")),
    "all_gather ji": (lambda a: lax.all_gather(a, ("j", "i")), P("i", "j")),
    "all_gather invarying": (lambda a: lax.all_gather(a, ("j", "i"), to="invarying"), P()),
    "ppermute": (lambda a: lax.ppermute(a, ("i", "j"), [(0, 3), (3, 1), (1, 0)]), P("i", "j")),
    "ppermute ji": (lambda a: lax.ppermute(a, ("j", "i"), [(k, (k + 1) % 4) for k in range(4)]),
                    P("i", "j")),
    "psum_scatter": (lambda a: lax.psum_scatter(a, ("i", "j"), tiled=True), P("i", "j")),
    "psum_scatter ji": (lambda a: lax.psum_scatter(a, ("j", "i"), tiled=True), P("j", "i")),
    "psum_scatter untiled": (lambda a: lax.psum_scatter(a, ("j", "i")), P(("i", "j"))),
    "axis_index ji": (lambda a: a * lax.axis_index(("j", "i")), P("i", "j")),
}
for mname, (fn, out_spec) in MULTI.items():
  sm = lib.shard_map(fn, mesh=mesh, in_specs=P("i", "j"), out_specs=out_spec)
  show(f"multi {mname} eager", lambda sm=sm: np.asarray(sm(Y)).round(4).tolist())
  show(f"multi {mname} jit", lambda sm=sm: np.asarray(lib.jit(sm)(Y)).round(4).tolist())
  show(f"multi {mname} grad", lambda sm=sm: np.asarray(lib.jit(lib.grad(
      lambda y: (lnp.sin(sm(y)) * lnp.arange(sm(y).size).reshape(sm(y).shape)).sum()))(Y)
  ).round(3).tolist())

# --- operations on operands of two kinds: JAX's implicit pvary ---
BINARY = {
    "add": lambda a, b: a + b,
    "mul scalar": lambda a, b: a * 2.0 + b,
    "max": lambda a, b: lnp.maximum(a, b),
    "where": lambda a, b: lnp.where(a > b, a, b),
    "dot": lambda a, b: a @ b.T,
    "concatenate": lambda a, b: lnp.concatenate([a, b]),
    "stack": lambda a, b: lnp.stack([a, b]),
    "dynamic_slice": lambda a, b: lax.dynamic_slice_in_dim(a, b[0, 0].astype(np.int32), 1),
    "gather": lambda a, b: a[b[0].astype(np.int32) % 2],
    "scatter": lambda a, b: a.at[0].set(b[1]),
    "clamp": lambda a, b: lax.clamp(b, a, b + 1),
    "select_n": lambda a, b: lax.select_n(a > 1, a, b),
}
KINDS = {"none": P(), "i": P("i"), "j": P("j"), "i,j": P("i", "j")}
# arguments whose blocks are all 2x2 (the specs split dimension 0, or both)
GLOBAL = {"none": X[:2, :2], "i": X[:, :2], "j": X[:, :2], "i,j": X}
for oname, fn in BINARY.items():
  for k1, s1 in KINDS.items():
    for k2, s2 in KINDS.items():
      body_type(f"{oname} of {k1} and {k2}", (s1, s2), fn, args=(GLOBAL[k1], GLOBAL[k2] + 1))

UNARY = {
    "sin": lnp.sin, "sum": lnp.sum, "mean axis": lambda t: t.mean(0), "cumsum": lnp.cumsum,
    "reshape": lambda t: t.reshape(-1), "transpose": lambda t: t.T, "argmax": lnp.argmax,
    "sort": lnp.sort, "astype": lambda t: t.astype(np.int32), "zeros_like": lnp.zeros_like,
    "zeros": lambda t: lnp.zeros(3), "iota": lambda t: lnp.arange(3) + 0 * t[0, 0],
    "broadcast": lambda t: lnp.broadcast_to(t, (2,) + t.shape),
}
for uname, fn in UNARY.items():
  for sname, spec in KINDS.items():
    body_type(f"{uname} of {sname}", spec, fn)

# --- pcast errors and states ---
for sname, spec in KINDS.items():
  for axes in ("i", ("i", "j"), ()):
    body_type(f"pcast {axes} of {sname}", spec, lambda t, axes=axes: lax.pcast(t, axes,
                                                                                to="varying"))
body_type("pcast set", P("i"), lambda t: lax.pcast(t, {"j"}, to="varying"))
show("pvary removed", lambda: lax.pvary)


def constants():
  seen = []

  def body(t):
    for c in (lax.psum(1, "i"), lax.psum(np.float32(2.0), ("i", "j")), lax.pmean(3.0, "j"),
              lax.psum(np.arange(3), "j"), lax.pmean(2, ("i", "j"))):
      seen.append(f"{type(c).__name__} {np.asarray(c).dtype} {np.asarray(c).tolist()}")
    return t * lax.psum(1, ("i", "j"))
  out = lib.jit(lib.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(X)
  return seen, float(np.asarray(out).sum())


show("psum of constants", constants)
show("pmean of ints", lambda: np.asarray(lib.jit(lib.shard_map(
    lambda t: lax.pmean(t.astype(np.int32), "i"), mesh=mesh, in_specs=P("i"),
    out_specs=P()))(X * 4)).tolist())
body_type("pcast bad to", P("i"), lambda t: lax.pcast(t, "j", to="sideways"))
body_type("psum partly varying", P("i"), lambda t: lax.psum(t, ("i", "j")))


# --- control flow ---
def swap_scan(a, b):
  (a2, b2), _ = lax.scan(lambda c, _: ((c[1], c[0]), ()), (a, b), (), length=2)
  return a2 + b2


def count_scan(a, b):
  out, ys = lax.scan(lambda c, x: (c + x, c * 2), b[0], a)
  return out, ys


body_type("scan swap", (P("i"), P()), swap_scan, args=(X, X))
body_type("scan swap both varying", (P("i"), P("i")), swap_scan, args=(X, X))
body_type("scan xs varying", (P("i"), P()), count_scan, args=(X, X))
body_type("scan carry varying", (P(), P("i")), count_scan, args=(X, X))
body_type("scan 3 components",
          (P("i"), P()),
          lambda a, b: lax.scan(lambda c, _: ((c[1], c[2], c[0]), ()), (a, b, b * 2), (),
                                length=1)[0], args=(X, X))
body_type("fori carry mismatch", (P("i"), P()),
          lambda a, b: lax.fori_loop(0, 2, lambda k, c: c + a, b), args=(X, X))
body_type("fori carry ok", (P("i"), P()),
          lambda a, b: lax.fori_loop(0, 2, lambda k, c: c + a,
                                     lax.pcast(b, "i", to="varying")), args=(X, X))
body_type("while mismatch", (P("i"), P()),
          lambda a, b: lax.while_loop(lambda c: c[0, 0] < 10, lambda c: c + a, b), args=(X, X))
body_type("while pred varying", (P("i"), P()),
          lambda a, b: lax.while_loop(lambda c: (c[0, 0] + a[0, 0]) < 10, lambda c: c + 1, b),
          args=(X, X))
body_type("cond branches differ", (P("i"), P()),
          lambda a, b: lax.cond(True, lambda: a, lambda: b), args=(X, X))
body_type("cond branches differ reversed", (P("i"), P()),
          lambda a, b: lax.cond(True, lambda: b, lambda: a), args=(X, X))
body_type("cond varying pred", (P("i"), P()),
          lambda a, b: lax.cond(a[0, 0] > 1, lambda: b, lambda: b * 2), args=(X, X))
body_type("cond operands", (P("i"), P()),
          lambda a, b: lax.cond(True, lambda u, v: u + v, lambda u, v: u - v, a, b), args=(X, X))
body_type("switch", (P("i"), P()),
          lambda a, b: lax.switch(1, [lambda: a, lambda: a * 2, lambda: a + b]), args=(X, X))
body_type("map", P("i"), lambda a: lax.map(lambda r: r * 2, a))

# --- host callbacks: results vary as declared ---
body_type("pure_callback", P("i"), lambda t: lib.pure_callback(
    lambda u: np.asarray(u) * 2, lib.ShapeDtypeStruct(t.shape, t.dtype), t,
    vmap_method="sequential"))
body_type("pure_callback declared varying", P("i"), lambda t: lib.pure_callback(
    lambda u: np.asarray(u) * 2, lib.ShapeDtypeStruct(
        t.shape, t.dtype, manual_axis_type=lib.sharding.ManualAxisType(varying={"i"})), t,
    vmap_method="sequential"))
show("pure_callback values", lambda: np.asarray(lib.jit(lib.shard_map(
    lambda t: lib.pure_callback(lambda u: np.asarray(u) * 2,
                                lib.ShapeDtypeStruct(t.shape, t.dtype), t,
                                vmap_method="sequential"),
    mesh=mesh, in_specs=P("i"), out_specs=P("i")))(X)).tolist())

# --- transformations inside the body ---
body_type("jit inside", (P("i"), P()), lambda a, b: lib.jit(lambda u, v: (u * v, v))(a, b),
          args=(X, X))
body_type("vmap inside", (P("i"), P()), lambda a, b: lib.vmap(lambda u, v: u * v)(a, b),
          args=(X, X[:2]))
body_type("vmap inside in_axes None", (P("i"), P()),
          lambda a, b: lib.vmap(lambda u, v: u * v, in_axes=(0, None))(a, b[0]), args=(X, X))
body_type("grad inside wrt invariant", (P("i"), P()),
          lambda a, b: lib.grad(lambda w: (a * w).sum())(b), args=(X, X))
body_type("grad inside wrt varying", (P("i"), P()),
          lambda a, b: lib.grad(lambda u: (u * b).sum())(a), args=(X, X))
body_type("vjp inside", (P("i", "j"), P()), lambda a, w: (lambda o, f: f(lnp.ones_like(o)))(
    *lib.vjp(lambda a, w: lnp.sin(a) * w, a, w)), args=(X, X[:2, :2]))
body_type("jacrev inside", (P("i", "j"), P()),
          lambda a, w: lib.jacrev(lambda w: (lnp.sin(a) * w).sum(0))(w), args=(X, X[:2, :2]))
body_type("hessian inside", (P("i", "j"), P()),
          lambda a, w: lib.hessian(lambda w: (lnp.sin(a) * w ** 3).sum())(w[0]),
          args=(X, X[:2, :2]))
body_type("jvp inside", (P("i"), P()),
          lambda a, b: lib.jvp(lambda u, v: u * v, (a, b), (a, b)), args=(X, X))


@lib.custom_jvp
def cube(t):
  return t ** 3


cube.defjvp(lambda p, t: (cube(p[0]), 3 * p[0] ** 2 * t[0]))
body_type("custom_jvp", P("i"), cube)
@lib.custom_vjp
def scaled_sin(x, w):
  return lnp.sin(x) * w


def _scaled_sin_bwd(reduce, res, ct):
  x, w = res
  return ct * lnp.cos(x) * w, reduce((ct * lnp.sin(x)).sum(0))


for vname, reduce in (("custom_vjp bwd type error", lambda g: g),
                      ("custom_vjp bwd psum", lambda g: lax.psum(g, "i"))):
  scaled_sin.defvjp(lambda x, w: (scaled_sin(x, w), (x, w)),
                    lambda res, ct, reduce=reduce: _scaled_sin_bwd(reduce, res, ct))
  show(vname, lambda: [np.asarray(t).round(4).tolist() for t in lib.jit(lib.shard_map(
      lambda a, w: lib.grad(lambda a, w: scaled_sin(a, w).sum(), argnums=(0, 1))(a, w),
      mesh=mesh, in_specs=(P("i", "j"), P("j")), out_specs=(P("i", "j"), P("j"))))(X, X[0])])
show("checkpoint grad", lambda: np.asarray(lib.jit(lib.grad(lambda x: lib.shard_map(
    lambda a, w: lib.checkpoint(lambda a: lnp.tanh(a * w))(a) + lax.psum(0., "i"), mesh=mesh,
    in_specs=(P("i", "j"), P("j")), out_specs=P("i", "j"))(x, X[0, :2]).sum()))(X)).round(4)
    .tolist())
body_type("checkpoint", (P("i"), P()), lambda a, b: lib.checkpoint(lambda u, v: u * v)(a, b),
          args=(X, X))

# --- check_vma=False: nothing typed, nothing checked ---
body_type("unchecked type", P("i"), lambda t: t, check=False)
body_type("unchecked psum", P("i"), lambda t: lax.psum(t, "i"), check=False)
body_type("unchecked pcast", P(), lambda t: lax.pcast(t, "i", to="varying"), check=False)
body_type("unchecked scan swap", (P("i"), P()), swap_scan, args=(X, X), check=False)
show("unchecked out", lambda: np.asarray(lib.jit(lib.shard_map(
    lambda t: t * 0 + 1, mesh=mesh, in_specs=P("i"), out_specs=P(), check_vma=False))(X)).tolist())

# --- values: grad inside the body sums over the members (pvary's transpose is psum) ---
show("grad inside values", lambda: np.asarray(lib.jit(lib.shard_map(
    lambda a, b: lib.grad(lambda w: (a * w).sum())(b), mesh=mesh, in_specs=(P("i"), P()),
    out_specs=P()))(X, X[:2] * 0 + 1)).tolist())
show("grad of shard_map", lambda: np.asarray(lib.grad(lambda w: lib.shard_map(
    lambda a, b: lax.psum((a * b).sum(), ("i", "j")), mesh=mesh, in_specs=(P("i", "j"), P()),
    out_specs=P())(X, w))(X[:2, :2])).tolist())
show("grad of shard_map jit", lambda: np.asarray(lib.jit(lib.grad(lambda w: lib.shard_map(
    lambda a, b: lax.psum((a * lnp.sin(b)).sum(), "i"), mesh=mesh, in_specs=(P("i"), P()),
    out_specs=P())(X, w).sum()))(X[:2])).tolist())
for tiled in (False, True):
  show(f"all_gather invarying values {tiled}", lambda tiled=tiled: np.asarray(lib.jit(
      lib.shard_map(lambda t: lax.all_gather(t, "i", tiled=tiled, to="invarying"), mesh=mesh,
                    in_specs=P("i"), out_specs=P()))(X)).tolist())
  show(f"all_gather invarying grad inside {tiled}", lambda tiled=tiled: np.asarray(lib.jit(
      lib.shard_map(lambda t, w: lib.grad(lambda t: (lax.all_gather(
          t, "i", tiled=tiled, to="invarying") * w).sum())(t), mesh=mesh,
          in_specs=(P("i"), P()), out_specs=P("i")))(X, X if tiled else X.reshape(2, 2, 4))
  ).tolist())
show("all_gather bad to", lambda: lib.jit(lib.shard_map(
    lambda t: lax.all_gather(t, "i", to="sideways"), mesh=mesh, in_specs=P("i"),
    out_specs=P("i")))(X))
show("implicit pvary values", lambda: np.asarray(lib.jit(lib.shard_map(
    lambda a, b: a * b + lax.axis_index("i"), mesh=mesh, in_specs=(P("i"), P()),
    out_specs=P("i")))(X, X[:2])).tolist())
show("eager values", lambda: np.asarray(lib.shard_map(
    lambda a, b: lax.psum(a * b, "j"), mesh=mesh, in_specs=(P("i", "j"), P(None, "j")),
    out_specs=P("i")))(X, X[:2] + 1).tolist())


# --- out_specs errors ---
def named_two(t):
  return t * 2, {"k": t}


for how, wrap in (("eager", lambda f: f), ("jit", lib.jit)):
  show(f"{how} out P()", lambda wrap=wrap: wrap(lib.shard_map(
      lambda t: t, mesh=mesh, in_specs=P("i"), out_specs=P()))(X))
  show(f"{how} out two axes", lambda wrap=wrap: wrap(lib.shard_map(
      lambda t: t * 2, mesh=mesh, in_specs=P("i", "j"), out_specs=P()))(X))
  show(f"{how} out one of two", lambda wrap=wrap: wrap(lib.shard_map(
      lambda t: t * 2, mesh=mesh, in_specs=P("i", "j"), out_specs=P("i")))(X))
  show(f"{how} out tree", lambda wrap=wrap: wrap(lib.shard_map(
      named_two, mesh=mesh, in_specs=P("i"), out_specs=(P(), {"k": P("j")})))(X))
  show(f"{how} out ok after psum", lambda wrap=wrap: wrap(lib.shard_map(
      lambda t: lax.psum(t, "j"), mesh=mesh, in_specs=P("i", "j"), out_specs=P("i")))(X).shape)
  show(f"{how} out invariant tiled", lambda wrap=wrap: np.asarray(wrap(lib.shard_map(
      lambda t: t + 1, mesh=mesh, in_specs=P(), out_specs=P("i")))(X[:1])).tolist())

# --- jaxprs' text ---
for jname, fn, specs, outs in (
    ("jaxpr implicit pvary", lambda a, b: a * b, (P("i"), P()), P("i")),
    ("jaxpr psum", lambda a, b: lax.psum(a, "i") + b, (P("i"), P()), P()),
    ("jaxpr psum invariant", lambda a, b: lax.psum(b, "j") * a, (P("i"), P()), P("i")),
    ("jaxpr out pvary", lambda a, b: b, (P("i"), P()), P("i", "j")),
    ("jaxpr pcast", lambda a, b: lax.pcast(b, ("i", "j"), to="varying") * 2, (P("i"), P()),
     P(("i", "j"))),
    ("jaxpr unchecked", lambda a, b: a * b, (P("i"), P()), P("i")),
):
  check = jname != "jaxpr unchecked"
  show(jname, lambda fn=fn, specs=specs, outs=outs, check=check: str(lib.make_jaxpr(
      lib.shard_map(fn, mesh=mesh, in_specs=specs, out_specs=outs, check_vma=check))(
          X, X[:2])))

# --- ManualAxisType ---
show("ManualAxisType", lambda: lib.sharding.ManualAxisType(varying={"i"}).varying)
show("ManualAxisType clash",
     lambda: lib.sharding.ManualAxisType(varying={"i"}, unreduced={"i"}))
body_type("mat of body", P("i"), lambda t: lib.typeof(t).mat.varying == frozenset({"i"}) and t)
print("DONE")
