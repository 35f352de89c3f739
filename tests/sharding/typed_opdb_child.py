"""Run with 4 CPU devices (see test_sharding_in_types.py): every primitive of the op database,
on operands split over an Explicit mesh axis (so every value derived from them is typed and
constrained as its type says), computes what it computes on whole operands: the sharding rules
and the constraints they add change layouts, never values. One record per primitive; prints a
summary line and the records that disagree or raise."""
import numpy as np

import revax
from revax.sharding import NamedSharding, PartitionSpec as P
from tests.lax.op_db import all_records, tolerance

import sys
from revax.sharding import AxisType
mesh = revax.make_mesh((2,), ("x",), axis_types=(AxisType[sys.argv[1] if len(sys.argv) > 1 else "Explicit"],))


def split(a):
  """`a` placed split over "x" on its first dimension of even size (as it is when none is)."""
  a = np.asarray(a)
  if a.dtype == object or a.dtype.kind not in "fciub":
    return a, False
  for d, n in enumerate(a.shape):
    if n % 2 == 0 and n > 0:
      return revax.device_put(a, NamedSharding(mesh, P(*[None] * d, "x"))), True
  return a, False


seen, checked, bad = set(), 0, []
for record in all_records():
  if record.primitive in seen:
    continue
  rng = np.random.default_rng(0)
  args = record.args(rng)
  placed = [split(a) for a in args]
  if not any(was for _, was in placed):
    continue
  seen.add(record.primitive)
  try:
    want = revax.tree_util.tree_leaves(revax.jit(record.fun)(*args))
    for label, fn in (("jit", revax.jit(record.fun)), ("eager", record.fun)):
      got = revax.tree_util.tree_leaves(fn(*[a for a, _ in placed]))
      for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        if w.dtype.kind in "fc":
          rt, at = tolerance(w.dtype, record.rtol, record.atol)
          np.testing.assert_allclose(g, w, rtol=max(rt, 1e-6), atol=max(at, 1e-6),
                                     equal_nan=True, err_msg=f"{record.name} {label}")
        else:
          np.testing.assert_array_equal(g, w, err_msg=f"{record.name} {label}")
    checked += 1
  except Exception as e:  # noqa: BLE001 (reported below)
    bad.append(f"{record.name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
print(f"CHECKED {checked}")
for line in bad:
  print("BAD", line)
print("TYPED_OPDB_DONE")
