"""Run in a subprocess with 4 CPU devices for both libraries (see test_collectives_more.py):
pbroadcast, pswapaxes, pcast and ragged_all_to_all under vmap(axis_name=...), shard_map and
jit(shard_map) (the manual lowering), with JVPs and VJPs, against jax.

jax 0.10.2 itself cannot run two of them on CPU: pbroadcast has a GPU-only lowering and its vmap
rule fails (`take` given a list), and XLA:CPU has no ragged-all-to-all. For those the oracle is
what JAX documents them to equal: pbroadcast is `psum(where(axis_index == source, x, 0))`
(computed by jax), ragged_all_to_all is the SEND/RECEIVE loop of its docstring (in NumPy)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh
from jax.sharding import PartitionSpec as JP

import revax
from tests.sharding.children import auto_mesh
import revax.numpy as rnp
from revax import P as RP

assert len(jax.devices()) == 4 and len(revax.devices()) == 4, (jax.devices(), revax.devices())
rng = np.random.default_rng(0)
JMESH = {"1d": JMesh(np.array(jax.devices()), ("x",)),
         "2d": JMesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))}
RMESH = {"1d": auto_mesh((4,), ("x",)), "2d": auto_mesh((2, 2), ("a", "b"))}
close = lambda got, want, msg: np.testing.assert_allclose(np.asarray(got), np.asarray(want),
                                                         rtol=1e-5, atol=1e-5, err_msg=msg)
checks = 0


def both(fn, mesh, ins, outs, args, msg, jax_fn=None, check_vma=True, derivatives=True):
  """fn(lax, numpy, *blocks) through jax.shard_map (jax_fn if given: the documented equivalent)
  and through revax.shard_map eagerly and under jit; values (and a JVP and a VJP) compared."""
  global checks
  jf = lambda *v: (jax_fn or fn)(jax.lax, jnp, *v)
  rf = lambda *v: fn(revax.lax, rnp, *v)
  js = jax.jit(jax.shard_map(jf, mesh=JMESH[mesh], in_specs=ins(JP), out_specs=outs(JP),
                             check_vma=check_vma))
  rs = revax.shard_map(rf, mesh=RMESH[mesh], in_specs=ins(RP), out_specs=outs(RP))
  want = js(*args)
  close(rs(*args), want, msg + " eager")
  jitted = revax.jit(rs)
  close(jitted(*args), want, msg + " jit")
  assert "sdy.manual_computation" in jitted.lower(*args).as_text(), msg
  checks += 1
  if not derivatives:
    return
  tangents = [rng.standard_normal(a.shape).astype(np.float32) for a in args]
  _, jt = jax.jvp(js, tuple(args), tuple(tangents))
  _, rt = revax.jvp(jitted, tuple(args), tuple(tangents))
  close(rt, jt, msg + " jvp")
  ct = rng.standard_normal(np.shape(want)).astype(np.float32)
  jg = jax.vjp(js, *args)[1](ct)
  rg = revax.vjp(rs, *args)[1](ct)
  for g, w in zip(rg, jg):
    close(g, w, msg + " vjp")


# --- pbroadcast: against jax's documented equivalent --------------------------------------------
def masked_psum(l, n, v, names, source):
  return l.psum(n.where(l.axis_index(names) == source, v, n.zeros_like(v)), names)


X = rng.standard_normal((8, 8)).astype(np.float32)
for k, (mesh, names, source, ins, outs) in enumerate([
    ("1d", "x", 3, lambda P: P(None, "x"), lambda P: P(None, "x")),
    ("2d", "a", 1, lambda P: P("a", "b"), lambda P: P("a", "b")),
    ("2d", ("a", "b"), 2, lambda P: P(("a", "b")), lambda P: P(("a", "b"))),
    ("2d", ("b", "a"), 1, lambda P: P("a", "b"), lambda P: P("a", "b")),
]):
  both(lambda l, n, v, names=names, source=source: l.pbroadcast(v * 2, names, source) + v,
       mesh, ins, outs, (X,), f"pbroadcast {names} {source}",
       jax_fn=lambda l, n, v, names=names, source=source: masked_psum(l, n, v * 2, names, source)
       + v, derivatives=k % 2 == 0)
# the result is the same on every member; its type says it varies (as JAX types pbroadcast),
# so a replicated out_spec needs check_vma=False
f = revax.jit(revax.shard_map(lambda v: revax.lax.pbroadcast(v, "x", 2), mesh=RMESH["1d"],
                              in_specs=RP("x"), out_specs=RP(), check_vma=False))
close(f(X), X[4:6], "pbroadcast replicated")
text = f.lower(X).as_text()
assert "all_reduce" in text and "collective_broadcast" not in text, text  # XLA:CPU's form
# the source's bits arrive exactly: -0.0, NaN, complex parts, ints, bools
special = np.array([[-0.0, np.nan, 1.5], [np.inf, -1e-40, 0.0]] * 4, np.float32)
for arr in (special, special + 1j * special[::-1], (X * 9).astype(np.int8), X > 0):
  got = np.asarray(f(arr))
  assert got.tobytes() == arr[4:6].tobytes(), (arr.dtype, got)
# vmap(axis_name): values, and the transpose rule (a per-member gradient)
XV = rng.standard_normal((4, 3)).astype(np.float32)
W = rng.standard_normal((4, 3)).astype(np.float32)
Z2 = rng.standard_normal((2, 2, 3, 4)).astype(np.float32)
want = jax.vmap(lambda v: masked_psum(jax.lax, jnp, v, "i", 1), axis_name="i")(XV)
close(revax.vmap(lambda v: revax.lax.pbroadcast(v, "i", 1), axis_name="i")(XV), want, "vmap")
# over the outer name of two nested vmaps (the inner vmap batches it like any primitive)
nest = lambda lib, f: lib.vmap(lib.vmap(f, axis_name="j"), axis_name="i")
close(nest(revax, lambda v: revax.lax.pbroadcast(v, "i", 1))(Z2),
      nest(jax, lambda v: masked_psum(jax.lax, jnp, v, "i", 1))(Z2), "nested vmap")
per_member = revax.vmap(revax.grad(lambda v, w: (revax.lax.pbroadcast(v, "i", 1) * w).sum()),
                        axis_name="i")(XV, W)
expect = np.zeros_like(XV)
expect[1] = W.sum(0)  # only the source's value reaches the others; it gets all cotangents
close(per_member, expect, "vmap of grad")
inner = revax.shard_map(
    lambda v, w: revax.grad(lambda v: (revax.lax.pbroadcast(v, "x", 3) * w).sum())(v),
    mesh=RMESH["1d"], in_specs=RP("x"), out_specs=RP("x"))
expect = np.zeros_like(X)
expect[6:8] = X.reshape(4, 2, 8).sum(0)
close(inner(X, X), expect, "grad inside shard_map")
close(revax.jit(inner)(X, X), expect, "grad inside jit(shard_map)")
checks += 1

# --- pswapaxes: against jax.lax.pswapaxes ------------------------------------------------------
Y = rng.standard_normal((8, 4, 2)).astype(np.float32)
Z = rng.standard_normal((4, 4, 2, 2)).astype(np.float32)
for k, (mesh, names, axis, args, ins) in enumerate([
    ("1d", "x", 1, (Y,), lambda P: P("x")),
    ("2d", "a", 2, (Z,), lambda P: P("b", None, None, "a")),
    ("2d", ("a", "b"), 1, (Z,), lambda P: P(("a", "b"))),
]):
  both(lambda l, n, v, names=names, axis=axis: l.pswapaxes(n.sin(v), names, axis), mesh, ins,
       ins, args, f"pswapaxes {names} {axis}", derivatives=k != 1)
want = jax.vmap(lambda v: jax.lax.pswapaxes(v, "i", 0), axis_name="i")(Z)
close(revax.vmap(lambda v: revax.lax.pswapaxes(v, "i", 0), axis_name="i")(Z), want, "pswap vmap")
nested = lambda lib, names: lib.vmap(lib.vmap(lambda v: lib.lax.pswapaxes(v, names, 1),
                                              axis_name="j"), axis_name="i")
for names in [("i", "j"), ("j", "i")]:  # all_to_all over two names, either order
  close(nested(revax, names)(Z2), nested(jax, names)(Z2), f"pswap nested vmap {names}")

# --- pcast: a value no-op (to="varying"), with jax's gradient ------------------------------------
both(lambda l, n, v: l.pcast(v, "x", to="varying") * (1.0 + l.axis_index("x")), "1d",
     lambda P: P(), lambda P: P("x"), (X,), "pcast")
both(lambda l, n, v: l.pcast(v, "a", to="varying") ** 2, "2d", lambda P: P(None, "b"),
     lambda P: P(None, ("b", "a")), (X,), "pcast 2d")


# --- ragged_all_to_all: against the SEND/RECEIVE loop of jax's docstring --------------------------
def ragged_case(members, per_member, n, m, trailing=()):
  """Random valid arguments (stacked per member): every sender packs its K segments into its
  operand in a random order with gaps, every receiver places them likewise."""
  k = members * per_member
  send = rng.integers(0, 3, size=(members, k)).astype(np.int32)
  io, oo, rs = (np.zeros((members, k), np.int32) for _ in range(3))
  for s in range(members):
    pos = 0
    for j in rng.permutation(k):
      pos += rng.integers(0, 2)
      io[s, j], pos = pos, pos + send[s, j]
    assert pos <= n
  for r in range(members):
    pos = 0
    for i in rng.permutation(k):
      src, t = divmod(i, per_member)
      j = r * per_member + t
      pos += rng.integers(0, 2)
      oo[src, j], rs[r, i], pos = pos, send[src, j], pos + send[src, j]
    assert pos <= m
  operand = rng.standard_normal((members, n) + trailing).astype(np.float32)
  output = rng.standard_normal((members, m) + trailing).astype(np.float32)
  return operand, output, io, send, oo, rs


def ragged_ref(operand, output, io, send, oo, rs):
  members, k = io.shape
  per = k // members
  result = np.array(output)
  for r in range(members):
    for i in range(k):
      src, t = divmod(i, per)
      j = r * per + t
      size = rs[r, i]
      result[r, oo[src, j]:oo[src, j] + size] = operand[src, io[src, j]:io[src, j] + size]
  return result


ragged = lambda *a: revax.lax.ragged_all_to_all(*a, axis_name="x")
member = lambda f: (lambda *a: f(*(b[0] for b in a))[None])
sm = lambda f, mesh="1d": revax.shard_map(f, mesh=RMESH[mesh], in_specs=RP("x"),
                                          out_specs=RP("x"))
for per_member, trailing in [(1, ()), (2, (3,)), (3, (2, 2))]:
  args = ragged_case(4, per_member, 24, 26, trailing)
  want = ragged_ref(*args)
  msg = f"ragged {per_member} {trailing}"
  close(revax.vmap(lambda *a: revax.lax.ragged_all_to_all(*a, axis_name="i"),
                   axis_name="i")(*args), want, msg + " vmap")
  f = sm(member(ragged))
  close(f(*args), want, msg + " shard_map")
  close(revax.jit(f)(*args), want, msg + " jit")
  # linear in (operand, output): the JVP is the same exchange of the tangents, and the VJP
  # passes the dot-product test
  op, out, *index = args
  g = lambda a, b: revax.jit(f)(a, b, *index)
  ta, tb = (rng.standard_normal(a.shape).astype(np.float32) for a in (op, out))
  _, tangent = revax.jvp(g, (op, out), (ta, tb))
  close(tangent, ragged_ref(ta, tb, *index), msg + " jvp")
  ct = rng.standard_normal(want.shape).astype(np.float32)
  ca, cb = revax.vjp(g, op, out)[1](ct)
  lhs = float((ragged_ref(ta, tb, *index) * ct).sum())
  rhs = float((np.asarray(ca) * ta).sum() + (np.asarray(cb) * tb).sum())
  assert abs(lhs - rhs) < 1e-3 * max(1.0, abs(lhs)), (msg, lhs, rhs)
  # the transpose rule itself (a VJP inside the member program): with ones as cotangent the
  # operand gets 1 on the rows it sent, the output 1 on the rows nothing overwrote
  def member_vjp(a, b, *ix):
    _, pull = revax.vjp(lambda a, b: ragged(a, b, *ix), a, b)
    return pull(rnp.ones(b.shape, np.float32))
  h = sm(lambda *a: tuple(c[None] for c in member_vjp(*(b[0] for b in a))))
  sent = ragged_ref(np.ones_like(op), np.zeros_like(out), *index)  # rows written on receivers
  rows_sent = np.zeros_like(op)
  for s in range(4):
    for j in range(index[0].shape[1]):
      rows_sent[s, index[0][s, j]:index[0][s, j] + index[1][s, j]] = 1
  for got in (h(*args), revax.jit(h)(*args)):
    close(got[0], rows_sent, msg + " transpose operand")
    close(got[1], 1 - sent, msg + " transpose output")
  checks += 1
# batching by a vmap over another axis, inside shard_map (examples merged into the ragged dim)
cases = [ragged_case(4, 2, 24, 26, (2,)) for _ in range(3)]
stacked = [np.stack([c[a] for c in cases], 1) for a in range(6)]
want = np.stack([ragged_ref(*c) for c in cases], 1)
f = sm(member(lambda *a: revax.vmap(ragged)(*a)))
close(f(*stacked), want, "ragged under vmap")
close(revax.jit(f)(*stacked), want, "ragged under vmap, jit")
# an int operand, and offsets of another integer type
args = ragged_case(4, 2, 24, 26)
iargs = (np.round(args[0] * 10).astype(np.int32), np.zeros_like(args[1], np.int32),
         args[2].astype(np.int16)) + args[3:]
close(revax.jit(sm(member(ragged)))(*iargs), ragged_ref(*iargs), "ragged int")

# --- errors, against jax's where jax raises them while tracing -----------------------------------
def raises(kind, match, fn):
  try:
    fn()
  except kind as e:
    assert match in str(e), (match, e)
    return
  raise AssertionError(f"no {kind.__name__} ({match})")


for lib, P, mesh in [(jax, JP, JMESH["1d"]), (revax, RP, RMESH["1d"])]:
  i4 = lib.numpy.zeros(4, np.int32)
  call = lambda f: lib.jit(lib.shard_map(f, mesh=mesh, in_specs=P(), out_specs=P("x"),
                                         **({"check_vma": False} if lib is jax else {}))).lower(X)
  raises(NameError, "unbound axis name: y", lambda: call(lambda v: lib.lax.pbroadcast(v, "y", 0)))
  raises(NameError, "unbound axis name: y", lambda: call(lambda v: lib.lax.pswapaxes(v, "y", 0)))
  raises(ValueError, "", lambda: call(lambda v: lib.lax.pswapaxes(v, "x", 1)))
  raises(NameError, "unbound axis name: y", lambda: call(
      lambda v: lib.lax.ragged_all_to_all(v, v, i4, i4, i4, i4, axis_name="y")))
  raises(ValueError, "input_offsets must be integer type",
         lambda: call(lambda v: lib.lax.ragged_all_to_all(v, v, i4 * 1.0, i4, i4, i4,
                                                          axis_name="x")))
  raises(ValueError, "send_sizes must be rank 1 with positive dimension size",
         lambda: call(lambda v: lib.lax.ragged_all_to_all(v, v, i4, i4[None], i4, i4,
                                                          axis_name="x")))
  raises(TypeError, "must be a tuple or a str",
         lambda: call(lambda v: lib.lax.pcast(v, {"x"}, to="varying")))
  raises(ValueError, "Allowed `to` values",
         lambda: call(lambda v: lib.lax.pcast(v, "x", to="sideways")))
  raises(ValueError, "should be called under", lambda: lib.lax.pcast(X, "x", to="varying"))
  raises(ValueError, "should be called under", lambda: lib.vmap(
      lambda v: lib.lax.pcast(v, "i", to="varying"), axis_name="i")(X))
# revax's own checks where jax asserts or fails later in XLA
raises(ValueError, "source=4 is not a member",
       lambda: revax.vmap(lambda v: revax.lax.pbroadcast(v, "i", 4), axis_name="i")(XV))
raises(ValueError, "source=-1 is not a member",
       lambda: sm(lambda v: revax.lax.pbroadcast(v, "x", -1))(X))
raises(NameError, "unbound axis name: y", lambda: sm(lambda v: revax.lax.pcast(v, "y",
                                                                                to="varying"))(X))
raises(NotImplementedError, "Explicit", lambda: sm(lambda v: revax.lax.pcast(v, "x",
                                                                              to="reduced"))(X))
i4 = np.zeros(4, np.int32)
raises(ValueError, "must have one length", lambda: sm(
    lambda v: revax.lax.ragged_all_to_all(v, v, i4, i4[:2], i4, i4, axis_name="x"))(X))
raises(ValueError, "multiple of the size", lambda: sm(
    lambda v: revax.lax.ragged_all_to_all(v, v, i4[:3], i4[:3], i4[:3], i4[:3],
                                          axis_name="x"))(X))
raises(TypeError, "one dtype", lambda: sm(
    lambda v: revax.lax.ragged_all_to_all(v, v.astype(np.int32), i4, i4, i4, i4,
                                          axis_name="x"))(X))
raises(ValueError, "same trailing dimensions", lambda: sm(
    lambda v: revax.lax.ragged_all_to_all(v, v[:, :2], i4, i4, i4, i4, axis_name="x"))(X))
# psend/precv: checked like ppermute, then refused (XLA:CPU has no send/recv)
raises(ValueError, "unique", lambda: sm(lambda v: revax.lax.psend(v, "x", [(0, 1), (0, 2)]))(X))
raises(ValueError, "outside the axis", lambda: sm(lambda v: revax.lax.psend(v, "x", [(0, 4)]))(X))
raises(NameError, "unbound axis name: y", lambda: sm(lambda v: revax.lax.psend(v, "y", []))(X))
raises(NotImplementedError, "XLA:CPU", lambda: sm(lambda v: revax.lax.psend(v, "x", [(0, 1)]))(X))
raises(NotImplementedError, "XLA:CPU", lambda: sm(lambda v: revax.lax.precv(
    None, revax.ShapeDtypeStruct(v.shape, v.dtype), "x", [(0, 1)]))(X))
print("COLLECTIVES_MORE_OK", checks)
