"""A jit signature over a mesh called again goes through its ShardedPlan (call_plans.py, the
compiled `Runner.call_sharded`); run with 4 CPU devices by test_sharded_plan.py, with the
compiled call path on or off (argv[1]: "1" or "0"). Every call is checked against NumPy and
against what the general path gives for the same call (the plan dropped), so the plan can only
change how fast a call is, never what it returns or raises."""
import sys

import numpy as np

import revax
import revax.numpy as rnp
from revax._src import call_plans
from revax._src.runtime import client
from revax.sharding import Mesh, NamedSharding, PartitionSpec as P

COMPILED = sys.argv[1] == "1"
devices = revax.devices()
assert len(devices) == 4
hits = []
_planned = client.call_planned


def counting(executable, runner, leaves):
  out = _planned(executable, runner, leaves)
  hits.append(out is not None)
  return out


client.call_planned = counting


def planned_call(f, *args):
  """f(*args) through the plan (it must take it), beside the general path's result."""
  assert isinstance(f._traces.plan, call_plans.ShardedPlan) == COMPILED, f._traces.plan
  del hits[:]
  got = f(*args)
  assert hits == ([True] if COMPILED else []), hits
  plan, f._traces.plan = f._traces.plan, None
  want = f(*args)  # the general path (it sets the plan again)
  assert type(f._traces.plan) is type(plan)
  for g, w in zip(revax.tree_util.tree_leaves(got), revax.tree_util.tree_leaves(want),
                  strict=True):
    assert type(g) is type(w) and g.aval == w.aval and g.sharding == w.sharding
    assert g.committed == w.committed
    assert [(s.device, s.index) for s in g.addressable_shards] == \
        [(s.device, s.index) for s in w.addressable_shards]
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  return got


def missed_call(f, *args):
  """f(*args) where the plan must not run it (the general path does)."""
  del hits[:]
  out = f(*args)
  assert not any(hits), hits
  return out


mesh = revax.make_mesh((4,), ("x",))
repl, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("x"))
rng = np.random.default_rng(0)
w_np = rng.standard_normal((8, 3)).astype(np.float32)
x_np = rng.standard_normal((16, 8)).astype(np.float32)

# A training-style step: pytree of replicated parameters, a split batch, outputs fed back.
# (x.T @ y contracts the split batch dimension of both operands: over Explicit axes its result's
# split must be given, as in JAX)
step = revax.jit(lambda p, x: ({"w": p["w"] - 0.1 * rnp.matmul(x.T, x @ p["w"],
                                                               out_sharding=repl)},
                              (x @ p["w"]).sum()),
                 in_shardings=({"w": repl}, split), out_shardings=({"w": repl}, repl))
p, x = {"w": revax.device_put(w_np, repl)}, revax.device_put(x_np, split)
want_w = w_np
for k in range(5):
  p, loss = planned_call(step, p, x) if k >= 2 else step(p, x)
  np.testing.assert_allclose(np.asarray(loss), (x_np @ want_w).sum(), rtol=1e-4)
  want_w = want_w - 0.1 * (x_np.T @ (x_np @ want_w))
  np.testing.assert_allclose(np.asarray(p["w"]), want_w, rtol=1e-4)
  assert p["w"].committed and loss.committed and p["w"].sharding == repl
print("step: ok")

# Flat arguments (no pytree) and a single output.
double = revax.jit(lambda a, b: a * 2 + b, in_shardings=(split, split), out_shardings=split)
a, b = revax.device_put(x_np, split), revax.device_put(x_np + 1, split)
double(a, b)
double(a, b)
out = planned_call(double, a, b)
np.testing.assert_allclose(np.asarray(out), x_np * 3 + 1, rtol=1e-6)
assert not out.is_deleted() and out.block_until_ready().is_ready()
mixed = revax.jit(lambda a: (a.sum(0), a * 2), in_shardings=split, out_shardings=(repl, split))
mixed(a)
mixed(a)
total, twice = planned_call(mixed, a)
np.testing.assert_allclose(np.asarray(total), x_np.sum(0), rtol=1e-5)
np.testing.assert_array_equal(np.asarray(twice), x_np * 2)
assert total.sharding == repl and twice.sharding == split
print("flat: ok")

# What the plan does not cover takes the general path, with its result or its error.
np.testing.assert_allclose(np.asarray(missed_call(double, x_np, b)), x_np * 3 + 1,  # NumPy
                           rtol=1e-6)
try:  # a committed argument laid out otherwise: the general path's error, as jax's
  missed_call(double, revax.device_put(x_np, repl), b)
  raise AssertionError("a mismatched sharding ran")
except ValueError as e:
  assert "does not match the sharding" in str(e), e
np.testing.assert_allclose(np.asarray(missed_call(double, revax.device_put(x_np[:8], split),
                                                      revax.device_put(x_np[:8] + 1, split))),
                           x_np[:8] * 3 + 1, rtol=1e-6)  # another shape: retraced
gone = revax.device_put(x_np, split)
gone.delete()
try:
  missed_call(double, gone, b)
  raise AssertionError("a deleted argument ran")
except RuntimeError as e:
  assert "deleted" in str(e), e
try:
  missed_call(double, a)
  raise AssertionError("a missing argument ran")
except TypeError:
  pass
with revax.disable_jit():
  np.testing.assert_allclose(np.asarray(missed_call(double, a, b)), x_np * 3 + 1, rtol=1e-6)
missed_call(double, a, b)  # the last signature's plan misses; the general path swaps it
planned_call(double, a, b)
print("misses: ok")

# A closed-over sharded constant is an operand of the plan too; freed, it is the general
# path's error.
c = revax.device_put(np.arange(16, dtype=np.float32).reshape(16, 1), split)
shift = revax.jit(lambda a: a + c, in_shardings=split, out_shardings=split)
shift(a)
shift(a)
np.testing.assert_array_equal(np.asarray(planned_call(shift, a)),
                              x_np + np.arange(16, dtype=np.float32)[:, None])
c.delete()
try:
  missed_call(shift, a)
  raise AssertionError("a deleted constant ran")
except RuntimeError as e:
  assert "deleted" in str(e), e
print("constants: ok")

# A plain jit of committed sharded arguments commits its results, as the general path does.
plain = revax.jit(lambda a, b: a - b)
plain(a, b)
plain(a, b)
r = planned_call(plain, a, b)
assert r.committed and r.sharding == split
print("plain jit: ok")

# A mesh whose devices are not in id order: the executable's device order is not the mesh's.
rev = Mesh(np.array(devices[::-1]), ("x",))
rsplit = NamedSharding(rev, P("x"))
neg = revax.jit(lambda a: -a, in_shardings=rsplit, out_shardings=rsplit)
ra = revax.device_put(x_np, rsplit)
neg(ra)
neg(ra)
got = planned_call(neg, ra)
np.testing.assert_array_equal(np.asarray(got), -x_np)
for s in got.addressable_shards:
  np.testing.assert_array_equal(np.asarray(s.data), -x_np[s.index])
print("device order: ok")

# A long chain, each call taking the previous call's outputs while they may still compute.
half = revax.jit(lambda y, b: 0.5 * y + b, in_shardings=(split, split), out_shardings=split)
y = a
for _ in range(200):
  y = half(y, b)
np.testing.assert_allclose(np.asarray(y), 2 * (x_np + 1), rtol=1e-6)
# Waiting for one result settles the launch in flight, which readies every output of it.
y = half(y, b)
z = half(y, b)
assert client._in_flight.executable is not None and not z._buffers[0]._info.ready
y.block_until_ready()  # of an earlier launch: already ready, nothing to settle
assert client._in_flight.executable is not None
z.block_until_ready()
assert client._in_flight.executable is None
assert all(buf._info.ready for buf in z._buffers)
print("chain: ok")
print("PLAN DONE")
