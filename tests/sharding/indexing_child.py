"""Run with 4 CPU devices as `indexing_child.py jax|revax` (see test_indexing_sharding.py):
indexing and `.at[...]` updates of arrays split over Explicit mesh axes. Each line is
`name: result`, the result's type (or its values) or `ExceptionType: message`; reads and updates
of a concrete split Array (where JAX reads partially indexed axes with a gather), and of a
jitted function's argument (where it slices)."""
import numpy as np

from tests.sharding.transcript import P, S, T, lib, lnp, mesh, put, show  # noqa: F401


arrays = {"x": put((8, 4), P("a", "b")), "xa": put((8, 4), P("a")),
          "xb": put((8, 4), P(None, "b")), "xr": put((8, 4), P()),
          "x3": put((4, 2, 4), P("a", None, "b"))}
i2, i22 = np.array([0, 1]), np.array([[0, 1], [2, 3]])
mask = np.array([True, False, True, False, False, True, True, False])
reads = {
    "[:4]": lambda a: a[:4], "[0]": lambda a: a[0], "[::2]": lambda a: a[::2],
    "[1:3]": lambda a: a[1:3], "[:, :2]": lambda a: a[:, :2], "[:, 0]": lambda a: a[:, 0],
    "[..., 1]": lambda a: a[..., 1], "[None]": lambda a: a[None], "[::-1]": lambda a: a[::-1],
    "[:, ::-1]": lambda a: a[:, ::-1], "[-1]": lambda a: a[-1], "[:, None, 1:3]":
    lambda a: a[:, None, 1:3], "[::-2]": lambda a: a[::-2], "[3, 1]": lambda a: a[3, 1],
    "[i2]": lambda a: a[i2], "[:, i2]": lambda a: a[:, i2], "[i22]": lambda a: a[i22],
    "[i2, 1]": lambda a: a[i2, 1], "[1, i2]": lambda a: a[1, i2], "[i2, ::2]":
    lambda a: a[i2, ::2], "[mask]": lambda a: a[mask], "[ds]": lambda a: a[lib.numpy.s_[2:6]],
    "take 0": lambda a: lnp.take(a, i2, axis=0), "take 1": lambda a: lnp.take(a, i2, axis=1),
    "get [i2]": lambda a: a.at[i2].get(), "get [0] fill": lambda a: a.at[0].get(mode="fill"),
    "get [:, 1] fill": lambda a: a.at[:, 1].get(mode="fill"),
    "get [i2] fill": lambda a: a.at[i2].get(mode="fill"),
    "get [0] clip": lambda a: a.at[0].get(mode="clip"),
}
updates = {
    "set [0]": lambda a: a.at[0].set(1.0), "set [:, 1]": lambda a: a.at[:, 1].set(2.0),
    "add [i2]": lambda a: a.at[i2].add(1.0), "add [:, i2]": lambda a: a.at[:, i2].add(1.0),
    "mul [0, 0]": lambda a: a.at[0, 0].multiply(2.0), "min [2:4]": lambda a: a.at[2:4].min(0.5),
    "max [:, :]": lambda a: a.at[:, :].max(0.5), "set [None, 1]": lambda a: a.at[None, 1].set(3.0),
    "divide [1]": lambda a: a.at[1].divide(2.0), "power [:, 0]": lambda a: a.at[:, 0].power(2.0),
    "apply [i2]": lambda a: a.at[i2].apply(lambda v: v * 3),
    "set [1:1]": lambda a: a.at[1:1].set(5.0), "set row of values": lambda a: a.at[0].set(
        lnp.arange(a.shape[-1], dtype=a.dtype)),
}
with lib.set_mesh(mesh):
  for aname, arr in arrays.items():
    ops = {**reads, **updates}
    if aname == "x3":
      ops = {"[0]": lambda a: a[0], "[:, 1]": lambda a: a[:, 1],
             "[i2, :, 1]": lambda a: a[i2, :, 1],
             "[:, :, i2]": lambda a: a[:, :, i2], "set [:, 0]": lambda a: a.at[:, 0].set(1.0),
             "add [i2, 1]": lambda a: a.at[i2, 1].add(1.0)}
    for name, f in ops.items():
      show(f"{aname}{name}", lambda: T(f(arr)))
      show(f"{aname}{name} (jit)", lambda: T(lib.jit(f)(arr)))
  x, xa, xb = arrays["x"], arrays["xa"], arrays["xb"]
  # out_sharding settles what the rules cannot tell, eagerly and under jit
  outs = {
      "get [i2] P(b)": lambda a: a.at[i2].get(out_sharding=P("b")),
      "get [0] P(b)": lambda a: a.at[0].get(out_sharding=P("b")),
      "get [:4] P(a)": lambda a: a.at[:4].get(out_sharding=P("a")),
      "get [i22] P(None, a)": lambda a: a.at[i22].get(out_sharding=P(None, "a")),
      "set [0] P(a, b)": lambda a: a.at[0].set(1.0, out_sharding=P("a", "b")),
      "add [i2] P(a)": lambda a: a.at[i2].add(1.0, out_sharding=P("a")),
      "divide [0] P(a)": lambda a: a.at[0].divide(2.0, out_sharding=P("a")),
  }
  for name, f in outs.items():
    show(f"x {name}", lambda: T(f(x)))
    show(f"x {name} (jit)", lambda: T(lib.jit(f)(x)))
    show(f"x {name} values", lambda: np.asarray(f(x)).round(4).tolist())
  # functions built on indexing ("fn" lines: revax builds some of them from other operations than
  # JAX, so only the result type or the exception type is compared; revax's take_along_axis
  # gathers every axis where JAX's batches the others)
  col = np.zeros((8, 1), np.int32) + 2
  for aname in ("x", "xa", "xb", "xr"):
    arr = arrays[aname]
    for name, f in {"take_along 1": lambda a: lnp.take_along_axis(a, col, axis=1),
                    "take_along 0": lambda a: lnp.take_along_axis(a, col[:4].T, axis=0),
                    "diagonal": lambda a: lnp.diagonal(a), "delete": lambda a: lnp.delete(a, 1, 0),
                    "tile (1, 2)": lambda a: lnp.tile(a, (1, 2)),
                    "tile (2, 1)": lambda a: lnp.tile(a, (2, 1)),
                    "tile (3, 1, 1)": lambda a: lnp.tile(a, (3, 1, 1)),
                    "repeat 0": lambda a: lnp.repeat(a, 2, axis=0),
                    "repeat 0 out_sharding": lambda a: lnp.repeat(a, 2, axis=0,
                                                                  out_sharding=P("a")),
                    "take_along split idx": lambda a: lnp.take_along_axis(
                        a, lib.device_put(col, S.NamedSharding(mesh, P("a"))), axis=1)}.items():
      show(f"fn {aname} {name}", lambda: T(f(arr)))
      show(f"fn {aname} {name} (jit)", lambda: T(lib.jit(f)(arr)))
  for aname in ("x", "xa", "xb", "xr"):
    show(f"fn {aname} rows", lambda: [(str(T(r)), r.committed, len(r.devices()))
                                     for r in arrays[aname]][:2])
    show(f"fn {aname} row values", lambda: np.asarray(list(arrays[aname])).round(4).tolist()
         == np.asarray(arrays[aname]).round(4).tolist())
  show("values take_along", lambda: np.asarray(lnp.take_along_axis(
      arrays["xa"], col, axis=1)).round(4).tolist())
  # values of the reads and updates that both compute
  show("values xb[0]", lambda: np.asarray(xb[0]).round(4).tolist())
  show("values xa[:, i2]", lambda: np.asarray(xa[:, i2]).round(4).tolist())
  show("values xb set", lambda: np.asarray(xb.at[0].set(1.0)).round(4).tolist())
  show("values xa add", lambda: np.asarray(xa.at[:, 1].add(1.0)).round(4).tolist())
print("INDEXING_DONE")
