"""Run in a subprocess with 4 CPU devices for both libraries (see test_committed_devices.py):
where eager ops and jit calls run when an input is committed to a device other than the first,
and the error for committed inputs on different devices, written as one transcript per library
and compared line by line.

A result line records the devices, commitment and value; an error line records the exception
type and, from its message, the head sentence and each argument's shape and device ids. For jit
calls it records the whole message (the argument names and the function name included): revax
names them as JAX does. Eager primitives are named differently on purpose (JAX reports the jnp
function that wraps the primitive in a jit, e.g. `x of multiply`; revax the primitive and its
operand positions, `args[0] of mul`), so their lines leave the names out.
"""
import re
import sys

import numpy as np
import jax
import jax.numpy as jnp

import revax
import revax.numpy as rnp

assert len(jax.devices()) == 4 and revax.local_device_count() == 4
F32 = np.float32


def describe(v):
  if isinstance(v, tuple):
    return "(" + "; ".join(map(describe, v)) + ")"
  return (f"devices={sorted(d.id for d in v.devices())} committed={v.committed} "
          f"{np.round(np.asarray(v), 4).tolist()}")


def describe_error(e, whole: bool):
  text = str(e)
  if whole:
    return f"{type(e).__name__}: {text}"
  head = text.split(". ")[0]
  parts = re.findall(r"with shape (\S+) and with device ids (\[[\d, ]*\]) on platform (\w+)", text)
  return f"{type(e).__name__}: {head} {parts}"


def transcript(lib):
  """[(case, thunk, whole_message)]: the same calls in each library."""
  j, np_ = (jax, jnp) if lib == "jax" else (revax, rnp)
  d = j.devices()

  def put(v, i):
    return j.device_put(np.asarray(v, F32), d[i])

  x1, x2 = put([1, 2, 3], 1), put([4, 5, 6], 2)
  u = np_.arange(3.0)  # uncommitted, on the host
  ud = j.jit(lambda a: a * 2)(np_.ones(3))  # uncommitted, only a device buffer
  m2 = put(np.eye(3) * 2, 2)
  s2 = put(3.0, 2)  # a committed scalar
  key2 = j.device_put(j.random.key(0), d[2])
  const = np_.arange(3.0)

  def unchanged(a):
    return f"{describe(a)} (left where it was)"

  def mixed():
    y = u + x2
    return f"{describe(y)} | {unchanged(u)}"

  def mixed_device_only():
    y = ud * x2
    return f"{describe(y)} | {unchanged(ud)}"

  def jit_repeated():
    f = j.jit(lambda a: a * 2 + const)
    return tuple(f(x2) for _ in range(3))

  def jit_mixed():
    out = j.jit(lambda a, b: a + b)(u, x2)
    return f"{describe(out)} | {unchanged(u)}"

  mesh = j.make_mesh((2,), ("x",), devices=d[:2])
  split = j.device_put(np.arange(4, dtype=F32), j.sharding.NamedSharding(
      mesh, j.sharding.PartitionSpec("x")))

  def eager_conflict_kinds():
    return x1 * x2

  return [
      ("add scalar", lambda: x2 + 1, False),
      ("scalar first", lambda: 3.0 * x2, False),
      ("uncommitted host + committed", mixed, False),
      ("uncommitted device-only + committed", mixed_device_only, False),
      ("unary chain", lambda: np_.sum(np_.sin(x2) * 2), False),
      ("norm", lambda: np_.linalg.norm(x2), False),
      ("where", lambda: np_.where(x2 > 4, x2, 0.0), False),
      ("index", lambda: x2[1], False),
      ("at set", lambda: x2.at[1].set(9.0), False),
      ("astype", lambda: x2.astype(np.int32), False),
      ("matmul with numpy", lambda: m2 @ np.ones(3, F32), False),
      ("inv", lambda: np_.linalg.inv(m2), False),
      ("concatenate", lambda: np_.concatenate([u, x2]), False),
      ("random with committed key", lambda: j.random.uniform(key2, (2,)), False),
      ("split committed key", lambda: j.random.key_data(j.random.split(key2)), False),
      ("device_put of a device-only array", lambda: j.device_put(ud, d[3]), False),
      ("grad", lambda: j.grad(lambda a: (a * a).sum())(x2), False),
      ("vmap", lambda: j.vmap(lambda a: a * 2)(x2), False),
      ("grad through a committed scalar", lambda: j.grad(lambda a: (a * s2).sum())(u), False),
      ("vjp of jit through a committed scalar",
       lambda: j.vjp(j.jit(lambda a: a * s2), x2)[1](np_.ones(3)), False),
      ("jit closing over a committed array", lambda: j.jit(lambda a: a * x2)(u), False),
      ("fori_loop", lambda: j.lax.fori_loop(0, 3, lambda i, c: c * 2, x2), False),
      ("scan", lambda: j.lax.scan(lambda c, a: (c + a, a * 2), 0.0, x2), False),
      ("pure_callback", lambda: j.pure_callback(lambda a: np.asarray(a) * 2,
                                                j.ShapeDtypeStruct((3,), F32), x2), False),
      ("zeros_like", lambda: np_.zeros_like(x2), False),
      ("full_like with a shape", lambda: np_.full_like(x2, 7, shape=(2,)), False),
      ("ones_like of a weakly typed scalar", lambda: np_.ones_like(j.device_put(2.0, d[2])),
       False),
      ("jit", lambda: j.jit(lambda a: a * 2)(x2), False),
      ("compiled", lambda: j.jit(lambda a: a * 2).lower(x2).compile()(x2), False),
      ("jit repeated, closed-over constant", jit_repeated, False),
      ("jit uncommitted + committed", jit_mixed, False),
      ("jit unread committed argument elsewhere", lambda: j.jit(lambda a, b: a * 2)(x1, x2),
       False),
      ("jit only unread argument committed", lambda: j.jit(lambda a, b: a * 2)(u, x2), False),
      ("eager conflict", eager_conflict_kinds, False),
      ("eager conflict with the first device", lambda: put([1, 1, 1], 0) + x2, False),
      ("eager conflict of shapes", lambda: put(2.0, 1) * x2, False),
      ("concatenate conflict", lambda: np_.concatenate([x1, u, x2]), False),
      ("sharded + uncommitted", lambda: split + np_.ones(4), False),
      ("sharded + committed elsewhere", lambda: split + put([1, 1, 1, 1], 2), False),
      ("jit sharded + committed on one of its devices",
       lambda: j.jit(lambda a, b: a + b)(split, put([1, 1, 1, 1], 0)), True),
      ("jit conflict", lambda: j.jit(lambda a, b: a + b)(x1, x2), True),
      ("jit conflict by keyword", lambda: j.jit(lambda a, b: a * b)(x1, b=x2), True),
      ("jit conflict in a dict", lambda: j.jit(lambda p: p["x"] * p["y"])({"x": x1, "y": x2}),
       True),
      ("jit conflict, first argument uncommitted",
       lambda: j.jit(lambda a, b, c: a * b * c)(u, x1, x2), True),
      ("jit conflict with a static argument",
       lambda: j.jit(lambda a, n, b: a * b, static_argnums=1)(x1, 3, x2), True),
  ]


def run(lib):
  lines = []
  for name, thunk, whole in transcript(lib):
    try:
      result = describe(out) if not isinstance(out := thunk(), str) else out
    except Exception as e:  # noqa: BLE001 - the error is the result
      result = describe_error(e, whole)
    lines.append(f"{name}: {result}")
  return lines


def main():
  want, got = run("jax"), run("revax")
  bad = [f"  jax:   {w}\n  revax: {g}" for w, g in zip(want, got, strict=True) if w != g]
  if bad:
    print("MISMATCH\n" + "\n".join(bad))
    sys.exit(1)
  print("\n".join(got))
  print("COMMITTED DEVICES DONE")


if __name__ == "__main__":
  main()
