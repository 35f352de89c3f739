"""Run with 4 CPU devices as `sharding_rules_child.py jax|revax` (see test_sharding_rules.py):
the sharding rules of elementwise ops, broadcasting, reductions, dot_general, reshape, sort,
top_k, cumulative reductions, concatenate and select over Explicit mesh axes, the `out_sharding=`
arguments that settle what the rules cannot tell, and jax.numpy functions over searches, updates
and convolutions of split arrays. Each line is `name: result`, a result being the result's type
(eager and jitted) or `ExceptionType: message`."""
import numpy as np

from tests.sharding.transcript import P, S, T, lib, lnp, mesh, put, show  # noqa: F401


x, xa, xb = put((8, 4), P("a", "b")), put((8, 4), P("a")), put((8, 4), P("b"))
y, z = put((4, 8), P("b")), put((4, 8), P("a"))
b1, b2, b3 = put((4, 8, 2), P("a", None, "b")), put((4, 2, 3), P(None, "b")), put((4, 2, 3),
                                                                               P("b"))
unsplit = put((8, 4), P())
ops = {
    "add same": (lambda a: a + a, x), "add a+b": (lambda a, b: a + b, xa, xb),
    "add split+unsplit": (lambda a, b: a + b, xa, unsplit),
    "add row": (lambda a, b: a + b, x, put((1, 4), P(None, "b"))),
    "add row conflict": (lambda a, b: a + b, x, put((1, 4), P(None, "a"))),
    "add col": (lambda a, b: a + b, x, put((8, 1), P("a"))),
    "mul lower rank": (lambda a, b: a * b, x, put((4,), P("b"))),
    "add scalar": (lambda a: a + 1.0, x), "compare": (lambda a: a > 0.5, x),
    "sum 0": (lambda a: a.sum(0), x), "sum 1": (lambda a: a.sum(1), x),
    "sum all": (lambda a: a.sum(), x), "max 0": (lambda a: a.max(0), x),
    "argmax 1": (lambda a: lnp.argmax(a, 1), x), "any 0": (lambda a: (a > 1).any(0), x),
    "mean 1": (lambda a: a.mean(1), x), "prod 0": (lambda a: a.prod(0), x),
    "sort split dim": (lambda a: lnp.sort(a, 1), x),
    "sort whole dim": (lambda a: lnp.sort(a, 1), xa),
    "sort other split": (lambda a: lnp.sort(a, 0), xb), "argsort": (lambda a: lnp.argsort(a, 0), x),
    "cumsum split": (lambda a: lnp.cumsum(a, 0), x),
    "cumsum whole": (lambda a: lnp.cumsum(a, 1), xa),
    "top_k split": (lambda a: lib.lax.top_k(a, 2)[0], x),
    "top_k whole": (lambda a: lib.lax.top_k(a, 2)[1], xa),
    "concatenate same": (lambda a: lnp.concatenate([a, a], 0), x),
    "concatenate differ": (lambda a, b: lnp.concatenate([a, b], 1), xa, xb),
    "stack": (lambda a: lnp.stack([a, a]), x),
    "where": (lambda a: lnp.where(a > 3, a, 0.0), x),
    "where cases differ": (lambda a, b: lnp.where(a > 3, b, a), xa, xb),
    "where which differs": (lambda a, b: lnp.where(b > 3, a, a), xa, xb),
    "transpose": (lambda a: a.T, x), "expand": (lambda a: a[:, None], x),
    "squeeze": (lambda a: a.squeeze(1), put((8, 1, 4), P("a"))),
    "astype": (lambda a: a.astype(np.int32), x),
    "broadcast_to": (lambda a: lnp.broadcast_to(a, (3, 8, 4)), x),
    "clip": (lambda a: lnp.clip(a, 1, 2), x), "rev": (lambda a: lib.lax.rev(a, (0,)), x),
    "lax.slice whole": (lambda a: lib.lax.slice(a, (0, 0), (8, 2)), xa),
    "lax.slice even": (lambda a: lib.lax.slice(a, (0, 0), (4, 2)), xa),
    "lax.dynamic_slice uneven": (lambda a: lib.lax.dynamic_slice(a, (0, 0), (3, 2)), xa),
    "lax.pad uneven": (lambda a: lib.lax.pad(a, 0.0, ((0, 1, 0), (0, 0, 0))), xa),
    "gather unsplit dim": (lambda a: a[:, np.array([0, 1])], xa),
    "take unsplit dim": (lambda a: lnp.take(a, np.array([3, 1, 2]), axis=1), xa),
    "index unsplit dim": (lambda a: a[:, 0], xa),
    "dot free splits": (lambda a, b: a @ b, xa, put((4, 6), P(None, "b"))),
    "dot one contracted split": (lambda a, b: a @ b, xa, y),
    "dot both contracted split": (lambda a, b: a @ b, x, y),
    "dot contracted differ": (lambda a, b: a @ b, x, z),
    "dot axis twice": (lambda a, b: a @ b, xa, put((4, 8), P(None, "a"))),
    "einsum": (lambda a, b: lnp.einsum("ij,jk->ik", a, b), xa, put((4, 6), P(None, "b"))),
    "einsum batch": (lambda a, b: lnp.einsum("bij,bjk->bik", a, b), put((4, 2, 4), P("a")),
                     put((4, 4, 2), P("a"))),
    "tensordot": (lambda a, b: lnp.tensordot(a, b, 1), xa, put((4, 6), P(None, "b"))),
    "matmul vector": (lambda a, b: a @ b, xa, put((4,), P())),
    "batch lhs split": (lambda a, b: lib.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                        b1, put((4, 2, 3), P())),
    "batch rhs split": (lambda a, b: lib.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                        put((4, 8, 2), P()), b3),
    "batch differ": (lambda a, b: lib.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                     b1, b3),
}
reshapes = [((8, 4), P("a", "b"), (32,)), ((8, 4), P("a"), (32,)), ((8, 4), P(None, "b"), (32,)),
            ((8, 4), P("a"), (4, 8)), ((8, 4), P("a"), (2, 4, 4)), ((8, 4), P("a"), (4, 2, 4)),
            ((8, 4), P(("a", "b")), (4, 2, 4)), ((8, 4), P(("a", "b")), (2, 4, 4)),
            ((8, 4), P("a", "b"), (1, 8, 1, 4)), ((1, 8, 4), P(None, "a"), (8, 4)),
            ((8, 4), P("a", "b"), (8, 2, 2)), ((8, 4), P("a", "b"), (2, 2, 2, 4)),
            ((2, 4, 4), P("a", "b"), (8, 4)), ((2, 4, 4), P(None, "a", "b"), (2, 16)),
            ((2, 4, 4), P("a", None, "b"), (8, 4)), ((4, 4), P("a", "b"), (2, 8)),
            ((16,), P(("a", "b")), (4, 4)), ((16,), P(("a", "b")), (2, 8)),
            ((8, 4), P(), (32,)), ((6, 4), P(None, "a"), (3, 8)), ((2, 6), P("a", None), (12,))]
for shape, spec, new in reshapes:
  ops[f"reshape {shape} {tuple(spec)} -> {new}"] = (lambda a, new=new: lnp.reshape(a, new),
                                                     put(shape, spec))
ops["lax.reshape dimensions"] = (lambda a: lib.lax.reshape(a, (32,), dimensions=(1, 0)), x)

with lib.set_mesh(mesh):
  for name, (f, *args) in ops.items():
    show(name, lambda: T(f(*args)))
    show(name + " (jit)", lambda: T(lib.jit(f)(*args)))
  # (jit only: jax's eager lax.slice runs as a dynamic_slice, and its message names that)
  show("lax.slice uneven (jit)", lambda: T(lib.jit(lambda a: lib.lax.slice(a, (1, 0), (8, 4)))(
      xa)))
  # out_sharding settles what the rules cannot tell; gradients and vmap keep it
  show("dot out_sharding", lambda: T(lnp.dot(x, y, out_sharding=P("a"))))
  show("matmul out_sharding jit", lambda: T(lib.jit(
      lambda a, b: lnp.matmul(a, b, out_sharding=P(None, "b")))(x, y)))
  show("einsum out_sharding", lambda: T(lnp.einsum("ij,jk->ik", x, y, out_sharding=P("a"))))
  show("einsum batch out_sharding", lambda: T(lnp.einsum(
      "bij,bjk->bik", b1, b2, out_sharding=P("a"))))
  show("lax.dot_general out_sharding", lambda: T(lib.lax.dot_general(
      x, y, (((1,), (0,)), ((), ())), out_sharding=P(None, "a"))))
  loss = lambda a, b: (lnp.dot(a, b, out_sharding=P("a")) ** 2).sum()
  show("grad through out_sharding", lambda: [T(g) for g in lib.grad(loss, (0, 1))(x, y)])
  show("grad values", lambda: [round(float(np.asarray(g).sum()), 2)
                               for g in lib.jit(lib.grad(loss, (0, 1)))(x, y)])
  show("grad of jit", lambda: [T(g) for g in lib.grad(lib.jit(loss), (0, 1))(x, y)])
  show("vmap out_sharding", lambda: T(lib.vmap(lambda r: lnp.dot(r, y, out_sharding=P()))(x)))
  show("reshape out_sharding", lambda: T(lnp.reshape(x, (4, 8), out_sharding=P("b"))))
  show("lax.reshape out_sharding", lambda: T(lib.lax.reshape(x, (4, 8), out_sharding=P("b"))))
  show("reshape out_sharding jit", lambda: T(lib.jit(
      lambda a: lnp.reshape(a, (4, 8), out_sharding=P(None, "a")))(x)))
  rloss = lambda a: (lnp.reshape(a, (4, 8), out_sharding=P("b")) ** 2).sum()
  show("grad reshape out_sharding", lambda: (T(lib.grad(rloss)(x)),
                                             round(float(np.asarray(lib.grad(rloss)(x)).sum()), 2)))
  mloss = lambda a: (lnp.reshape(a, (32,)) ** 2).sum()
  show("grad reshape merge", lambda: (T(lib.grad(mloss)(x)), T(lib.jit(lib.grad(mloss))(x))))
  show("vmap reshape", lambda: T(lib.vmap(lambda r: r.reshape(2, 2))(x)))
  show("vmap reshape axis 1", lambda: T(lib.vmap(lambda r: r.reshape(2, 4), in_axes=1,
                                                 out_axes=1)(x)))
  show("vmap reshape merge", lambda: T(lib.vmap(lambda r: r.reshape(16))(put((4, 4, 4),
                                                                            P("a", "b")))))
# lax.full / full_like: `sharding=` places the result; full_like follows a committed or typed x
placed_a = S.NamedSharding(mesh, P("a"))
show("full sharding", lambda: (T(lib.lax.full((8, 4), 1.0, sharding=placed_a)),
                               lib.lax.full((8, 4), 1.0, sharding=placed_a).committed))
show("full one device", lambda: lib.lax.full(
    (4,), 2, sharding=S.SingleDeviceSharding(lib.devices()[1])).sharding)
show("full_like sharding", lambda: T(lib.lax.full_like(x, 3, sharding=placed_a)))
show("full_like follows x", lambda: (T(lib.lax.full_like(x, 3)),
                                     lib.lax.full_like(x, 3).sharding == x.sharding))
show("full_like of a weak value", lambda: T(lib.lax.full_like(x * 0 + 1.0, 3)))
with lib.set_mesh(mesh):
  show("full sharding ignored in jit", lambda: T(lib.jit(
      lambda: lib.lax.full((8, 4), 1.0, sharding=placed_a))()))
  show("full typed in jit", lambda: T(lib.jit(lambda a: lib.lax.full(
      (8, 4), 1.0, sharding=T(a).sharding))(xa)))
  show("full_like in jit", lambda: T(lib.jit(lambda a: lib.lax.full_like(a, 3))(x)))
  show("full_like reshaped in jit", lambda: T(lib.jit(lambda a: lib.lax.full_like(
      a, 3, shape=(2, 2)))(x)))
# .at[...] reads and updates take out_sharding= (JAX: where gather cannot tell the result's)
with lib.set_mesh(mesh):
  idx = np.array([0, 1])
  show("at get out_sharding", lambda: T(xa.at[idx].get(out_sharding=P("b"))))
  show("at get out_sharding (jit)", lambda: T(lib.jit(
      lambda a: a.at[idx].get(out_sharding=P(None, "b")))(xa)))
  show("at set out_sharding", lambda: T(xa.at[0].set(2.0, out_sharding=P(None, "b"))))
  show("at add keeps", lambda: T(xa.at[:, 1].add(1.0)))
  show("at get values", lambda: np.asarray(xa.at[idx].get(out_sharding=P())).sum().item())
# jax.numpy functions over searches, updates and convolutions: jax's scan search vmaps over the
# queries' axes (a split one is its ValueError), an update broadcasts its values to the slice's
# type (split values where the slice is whole: ValueError; over no mesh, the scatter's rule),
# conv_general_dilated has a rule of its own (a split kernel needs out_sharding=)
v1, col = put((8,), P("a")), put((8, 4), P(None, "b"))
srt, idx8 = lnp.arange(8.0), np.array([0, 2, 3, 4, 5, 6, 7, 8])
ones3 = np.ones(3, np.float32)
numpy_functions = {
    "insert": (lambda a: lnp.insert(a, 1, 0.0, axis=0), xa),
    "insert split columns": (lambda a: lnp.insert(a, 1, 0.0, axis=1), col),
    "insert all split": (lambda a: lnp.insert(a, 2, 0.0, axis=1), x),
    "searchsorted": (lambda a: lnp.searchsorted(srt, a), xa),
    "searchsorted inner split": (lambda a: lnp.searchsorted(srt, a, side="right"), x),
    "searchsorted 3d": (lambda a: lnp.searchsorted(srt, a), put((4, 2, 2), P("b"))),
    "searchsorted unrolled": (lambda a: lnp.searchsorted(srt, a, method="scan_unrolled"), v1),
    "searchsorted compare_all": (lambda a: lnp.searchsorted(srt, a, method="compare_all"), x),
    "searchsorted split sorted": (lambda a: lnp.searchsorted(a, srt), v1),
    "digitize": (lambda a: lnp.digitize(a, srt), col),
    "interp": (lambda a: lnp.interp(a, lnp.arange(3.0), lnp.arange(3.0)), xa),
    "interp split xp": (lambda a: lnp.interp(srt, a, srt), v1),
    "histogram": (lambda a: lnp.histogram(a)[0], col),
    "histogram range": (lambda a: lnp.histogram(a, bins=4, range=(0, 1))[0], v1),
    "histogram split weights": (lambda w: lnp.histogram(np.arange(32.0).reshape(8, 4),
                                                        weights=w)[0], col),
    "histogram2d": (lambda a: lnp.histogram2d(a, a, bins=3)[0], v1),
    "histogram_bin_edges": (lambda a: lnp.histogram_bin_edges(a, bins=3), v1),
    "bincount": (lambda a: lnp.bincount(a.astype(int), length=8), v1),
    "convolve split columns": (lambda a: lnp.convolve(a[:, 0], a[:, 1]), xa),
    "convolve split kernel": (lambda a: lnp.convolve(a, a), v1),
    "convolve split signal": (lambda a: lnp.convolve(a, ones3), v1),
    "convolve split short": (lambda a: lnp.convolve(ones3, a), v1),
    "convolve same": (lambda a: lnp.convolve(a, np.ones(2, np.float32), mode="same"), v1),
    "convolve full odd": (lambda a: lnp.convolve(a, np.ones(2, np.float32)), v1),
    "correlate valid": (lambda a: lnp.correlate(a, ones3), v1),
    "correlate split kernel": (lambda a: lnp.correlate(a, a), v1),
    "polymul": (lambda a: lnp.polymul(a, a), v1),
    "at set split into whole": (lambda a: lnp.zeros((9, 4)).at[idx8].set(a), xa),
    "at add split columns": (lambda a: lnp.zeros((9, 4)).at[idx8].add(a), col),
    "at set row": (lambda a: lnp.zeros((9, 4)).at[0].set(a[0]), col),
    "at set broadcast lower rank": (lambda a: lnp.zeros((9, 4)).at[:, :].set(a), put((4,), P("b"))),
    "at set size-1 split": (lambda a: lnp.zeros((9, 4)).at[:8].set(a), put((8, 1), P("a"))),
    "at set other split": (lambda a: a.at[:, :].set(xa), col),
    "at set same split": (lambda a: a.at[:, 1:3].set(a[:, :2]), xa),
}
with lib.set_mesh(mesh):
  for name, (f, *args) in numpy_functions.items():
    show(name, lambda: T(f(*args)))
    show(name + " (jit)", lambda: T(lib.jit(f)(*args)))
whole = lnp.zeros((9, 4))
show("at set split outside the mesh", lambda: T(whole.at[idx8].set(xa)))
show("bincount outside the mesh", lambda: T(lnp.bincount(v1.astype(int), length=8)))
show("insert outside the mesh", lambda: T(lnp.insert(xa, 1, 0.0, axis=0)))
show("searchsorted outside the mesh", lambda: T(lnp.searchsorted(srt, col)))
show("convolve outside the mesh", lambda: T(lnp.convolve(v1, ones3)))
print("RULES_DONE")
