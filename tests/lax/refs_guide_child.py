"""jax's array-refs guide ("Ref: mutable arrays for data plumbing and memory control": new_ref,
indexing reads and writes, pure and impure functions under jit/grad/vmap, the restrictions and
their errors, plumbing refs and custom_vjp, vjp with_refs, refs in scan/fori/cond) exercised in
this suite's own words: run with `jax` or `revax` as its argument, it prints one `name: result`
line per step (test_refs_guide.py compares)."""
import sys
import numpy as np
if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
else:
  import revax as lib
  import revax.numpy as lnp

def show(name, fn):
  try:
    r = fn()
  except Exception as e:
    r = f"{type(e).__name__}: {e}"
  print(f"{name}: {r}".replace("\n", " | "))

counter = lib.new_ref(lnp.zeros(4))
@lib.jit
def bump():
  counter[2] += 1.5
show("before", lambda: counter)
bump(); bump()
show("after", lambda: counter)
show("repr scalar", lambda: repr(lib.new_ref(lnp.int32(7))))
def through(v):
  r = lib.new_ref(0.0)
  r[...] = lnp.cos(v)
  return r[...] * 2
show("grad through", lambda: lib.grad(through)(0.5))
show("sin of ref", lambda: lnp.sin(lib.new_ref(2.0)))
show("add ref", lambda: lib.new_ref(2.0) + 1)
show("types", lambda: (lib.Ref, lib.ref.Ref is lib.Ref, type(counter).__name__))
show("typeof", lambda: lib.typeof(counter))
grid = lib.new_ref(lnp.arange(20.).reshape(4, 5))
first = grid[0]
grid[2] = first
show("int idx", lambda: grid)
e = grid[1, 3]
grid[3, 4] = e
col = grid[:, 2]
grid[1, :4] = col
picked = grid[lnp.array([0, 1, 3]), lnp.array([4, 0, 2])]
grid[lnp.array([2, 3, 0]), lnp.array([1, 1, 0])] = picked
show("after indexing", lambda: grid)
show("get fn", lambda: lib.ref.get(grid, (slice(1, 3), 0)))
show("swap fn", lambda: (lib.ref.swap(grid, (0, 0), 99.0), grid[0, 0]))
lib.ref.addupdate(grid, 1, lnp.ones(5))
show("addupdate", lambda: grid[1])
lib.ref.set(grid, (slice(None), 4), lnp.zeros(4))
show("set fn", lambda: grid[:, 4])
show("oob read", lambda: grid[7])
show("shape/dtype", lambda: (grid.shape, grid.dtype, grid.ndim, grid.size))

@lib.jit
def copy_into(dst, src):
  dst[...] = src[...]
a, b = lib.new_ref(lnp.ones(3)), lib.new_ref(lnp.arange(3.))
copy_into(a, b)
show("impure args", lambda: a)
box = lib.new_ref(0)
@lib.jit
def store(v):
  box[...] = v
store(41)
show("impure closure", lambda: box)
@lib.jit
def internal(v):
  r = lib.new_ref(v)
  r[...] = r[...] * r[...]
  return r[...]
show("pure internal", lambda: internal(3.0))
show("pure grad", lambda: lib.grad(internal)(3.0))
show("pure vmap", lambda: lib.vmap(internal)(lnp.arange(3.)))
log = lib.new_ref(lnp.zeros(3))
@lib.jit
def sequenced(v):
  log[0] = v
  log[1] = log[0] + 1
  log[2] = log[1] * 2
sequenced(4.0)
show("program order", lambda: log)

r0 = lib.new_ref(1.0)
@lib.jit
def bad_return(r):
  r[...] = 2.0
  return r
show("return ref", lambda: bad_return(r0))
@lib.jit
def two(r, s):
  return None
show("same twice", lambda: two(r0, r0))
@lib.jit
def close_and_pass(s):
  s[...] = r0[...]
show("pass and close", lambda: close_and_pass(r0))
@lib.jit
def freeze_inside(r):
  return lib.freeze(r)
show("freeze elsewhere", lambda: freeze_inside(r0))
fr = lib.new_ref(lnp.arange(3))
fr[1] = 10
show("freeze", lambda: lib.freeze(fr))
show("after freeze", lambda: fr[...])
show("ref of ref", lambda: lib.new_ref(lib.new_ref(1.0)))
def scan_body(c, x):
  return c, c
show("scan returns ref", lambda: lib.lax.scan(lambda c, x: (c, None), r0, None, length=2))

def sqdist(u, w, out):
  out[...] = lnp.sum((u - w) ** 2)
rows = lnp.arange(12.).reshape(3, 4)
table = lib.new_ref(lnp.zeros((3, 3)))
lib.vmap(lib.vmap(sqdist, (0, None, 0)), (None, 0, 0))(rows, rows, table)
show("vmap refs", lambda: table)
cell = lib.new_ref(0.0)
def closes(v):
  cell[...] = v
show("vmap closure", lambda: lib.vmap(closes)(lnp.arange(3.)))
show("remat impure", lambda: lib.checkpoint(closes)(1.0))

def plumb_bad(v, sink):
  w = v * 3
  sink[...] += w
  return w
def plumb_ok(v, sink):
  w = v * 3
  sink[...] += lib.lax.stop_gradient(w)
  return w
sink = lib.new_ref(0.0)
show("plumb bad", lambda: lib.grad(plumb_bad)(2.0, sink))
show("plumb ok", lambda: (lib.grad(plumb_ok)(2.0, sink), sink))
show("grad wrt ref", lambda: lib.grad(lambda r: r[...] ** 2)(lib.new_ref(3.0)))

@lib.custom_vjp
def keep(gref, v):
  return v
def keep_fwd(gref, v):
  return v, gref
def keep_bwd(gref, g):
  gref[...] = g
  return None, g
keep.defvjp(keep_fwd, keep_bwd)
def stashing(v, gref):
  return lnp.cos(keep(gref, v)) * 2
gs = lib.new_ref(0.0)
show("stash grad", lambda: lib.grad(stashing)(0.7, gs))
show("stashed", lambda: gs)

def sq(r):
  return r[...] ** 3
rr = lib.new_ref(2.0)
show("vjp ref", lambda: lib.vjp(sq, rr)[0])
y, fv = lib.vjp(sq, rr)
gr = lib.new_ref(10.0)
show("with_refs", lambda: (fv.with_refs(gr)(1.0), gr))
show("no with_refs", lambda: lib.vjp(sq, lib.new_ref(2.0))[1](1.0))
def upd(r):
  r[...] = lnp.sin(r[...])
  return r[...] ** 2
ur = lib.new_ref(2.0)
_, uv = lib.vjp(upd, ur)
ug = lib.new_ref(0.0)
show("upd vjp", lambda: (uv.with_refs(ug)(1.0), ug, ur))
_, sv = lib.vjp(lnp.sin, 1.0)
show("value vjp", lambda: sv(1.0))
sg = lib.new_ref(0.0)
_, sv = lib.vjp(lnp.sin, 1.0)
show("value with_refs", lambda: (sv.with_refs(sg)(1.0), sg))
@lib.jit
def pick(v, i):
  return v[i]
vec = lnp.arange(10.)
show("pick vjp", lambda: lib.vjp(pick, vec, 3)[1](1.0))
acc = lib.new_ref(lnp.zeros(10))
for i in [3, 5, 3]:
  _, pv = lib.vjp(pick, vec, i)
  pv.with_refs(acc, lib.ad.GradValue())(1.0)
show("sparse acc", lambda: acc)
W, xx = lnp.ones((4, 4)), lnp.ones(4)
_, mv = lib.vjp(lambda W, x: W @ x, W, xx)
show("dontwant", lambda: mv.with_refs(lib.ad.GradValue(), lib.ad.DontWant())(lnp.ones(4)))

def scan_acc(xs):
  total = lib.new_ref(0.0)
  def body(_, x):
    total[...] += x
    return None, None
  lib.lax.scan(body, None, xs)
  return lib.freeze(total)
show("scan ref", lambda: scan_acc(lnp.arange(5.)))
show("scan ref jit", lambda: lib.jit(scan_acc)(lnp.arange(5.)))
show("scan ref grad", lambda: lib.grad(scan_acc)(lnp.arange(5.)))
def fori_acc(n):
  t = lib.new_ref(lnp.zeros(3))
  def body(i, c):
    t[i % 3] += i
    return c
  lib.lax.fori_loop(0, n, body, 0)
  return t[...]
show("fori ref", lambda: lib.jit(fori_acc, static_argnums=0)(7))
def cond_ref(p):
  t = lib.new_ref(1.0)
  def yes(): t[...] = 5.0
  def no(): t[...] = -5.0
  lib.lax.cond(p, yes, no)
  return t[...]
show("cond ref", lambda: (cond_ref(True), lib.jit(cond_ref)(False)))
show("jaxpr", lambda: str(lib.make_jaxpr(internal)(1.0)).replace("\n", " | "))
print("DONE")
