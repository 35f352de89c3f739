"""Sharded Arrays, jit over a mesh and with_sharding_constraint.

Multi-device checks run in a subprocess with 4 CPU devices for both libraries
(sharded_jit_child.py: device_put/make_array_* shards against jax's, jit values and the
shardings XLA chose against jax's, with_sharding_constraint with grad/jvp/vmap, errors, the two
pitfalls of SCALE_NOTES, a data-parallel training step, per-device memory of a model-sharded
gradient). The tests here run in the suite's single-device process."""
import os
import subprocess
import sys

import numpy as np
import pytest

import revax
from revax._src.runtime.array import Array as ConcreteArray  # the concrete class
import revax.numpy as rnp
from revax import P
from revax.sharding import NamedSharding, SingleDeviceSharding

from tests.sharding.children import ROOT, run_child
from tests.child_env import child_env


def test_four_devices_against_jax():
  run_child("sharded_jit_child.py", "SHARDED_JIT_OK")


def test_one_device_shardings_are_plain_arrays():
  mesh = revax.make_mesh((1,), ("x",))
  x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
  a = revax.device_put(x, NamedSharding(mesh, P("x")))
  # a plain single-device Array that reports its NamedSharding, as JAX's does
  assert type(a) is ConcreteArray and a.sharding == NamedSharding(mesh, P("x"))
  assert isinstance(a.sharding, revax.sharding.Sharding)
  (shard,) = a.addressable_shards
  assert shard.index == (slice(None), slice(None)) and shard.device == revax.devices()[0]
  assert shard.data.sharding == SingleDeviceSharding(revax.devices()[0])
  np.testing.assert_array_equal(np.asarray(shard.data), x)
  f = revax.jit(lambda v: v * 2, in_shardings=NamedSharding(mesh, P("x")),
                out_shardings=NamedSharding(mesh, P()))
  np.testing.assert_array_equal(f(x), x * 2)
  assert revax.local_device_count() == 1 and revax.local_devices() == revax.devices()
  b = revax.make_array_from_callback((4, 3), NamedSharding(mesh, P("x")), lambda ix: x[ix])
  np.testing.assert_array_equal(b, x)


def test_with_sharding_constraint_single_device():
  mesh = revax.make_mesh((1,), ("x",))
  s = NamedSharding(mesh, P("x"))
  f = lambda v: revax.lax.with_sharding_constraint(rnp.sin(v), s) * 2
  x = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(f(x), np.sin(x) * 2, rtol=1e-6)
  np.testing.assert_allclose(revax.jit(f)(x), np.sin(x) * 2, rtol=1e-6)
  np.testing.assert_allclose(revax.grad(lambda v: f(v).sum())(x), 2 * np.cos(x), rtol=1e-6)
  np.testing.assert_allclose(revax.vmap(f)(np.stack([x, x])), np.stack([x, x]) * 0 +
                             np.sin(x) * 2, rtol=1e-6)
  assert "sharding_constraint" in str(revax.make_jaxpr(f)(x))
  assert "sdy" not in revax.jit(f).lower(x).as_text()  # a single-device program
  tree = revax.lax.with_sharding_constraint({"a": x, "b": x}, {"a": s, "b": s})
  np.testing.assert_array_equal(tree["b"], x)


def test_errors():
  mesh = revax.make_mesh((1,), ("x",))
  x = np.ones((4, 3), np.float32)
  with pytest.raises(ValueError, match="PartitionSpec"):
    revax.device_put(x, P("x"))
  with pytest.raises(RuntimeError, match="PartitionSpec"):  # JAX's type for jit
    revax.jit(lambda v: v, in_shardings=P("x"))(x)
  with pytest.raises(ValueError, match="rank"):
    revax.device_put(x, NamedSharding(mesh, P("x", None, None)))
  with pytest.raises(ValueError, match="more than once"):
    NamedSharding(revax.make_mesh((1, 1), ("a", "b")), P("a", "a"))
  with pytest.raises(RuntimeError, match="PartitionSpec"):  # JAX's type
    revax.lax.with_sharding_constraint(x, P("x"))
  with pytest.raises(ValueError, match="device_put only accepts"):
    revax.device_put(x, "cpu:0")


_COUNTS_CHILD = r'''
import numpy as np, revax, revax.numpy as jnp
from revax import P
from revax.sharding import Mesh, NamedSharding
n = len(revax.devices())
x = np.arange(8 * n * 3, dtype=np.float32).reshape(8 * n, 3)
w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
mesh = Mesh(np.array(revax.devices()[:n]), ("d",))  # Auto: shard_map specs on unsplit inputs
f = revax.jit(lambda x, w: (jnp.tanh(x @ w) ** 2).mean(),
              in_shardings=(NamedSharding(mesh, P("d")), NamedSharding(mesh, P())))
np.testing.assert_allclose(f(x, w), (np.tanh(x @ w) ** 2).mean(), rtol=1e-5)
g = revax.jit(revax.grad(lambda w, x: (jnp.tanh(x @ w) ** 2).mean()),
              in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P("d"))))
np.testing.assert_allclose(g(w, x), revax.grad(lambda w: (jnp.tanh(x @ w) ** 2).mean())(w),
                           rtol=1e-5, atol=1e-6)
s = revax.jit(revax.shard_map(lambda v: revax.lax.psum(v.sum(0), "d"), mesh=mesh,
                              in_specs=P("d"), out_specs=P()))
np.testing.assert_allclose(s(x), x.sum(0), rtol=1e-5)
# a mesh over the last half of the devices runs there
half = Mesh(np.array(revax.devices()[n // 2:]), ("h",))
y = revax.device_put(x, NamedSharding(half, P("h")))
out = revax.jit(lambda v: v * 2)(y)
assert out.devices() == set(revax.devices()[n // 2:]), out.devices()
np.testing.assert_allclose(out, 2 * x)
print("COUNTS_OK", n)
'''


@pytest.mark.parametrize("count", [2, 8])
def test_other_device_counts(count):
  env = child_env(REVAX_CPU_DEVICE_COUNT=str(count))
  out = subprocess.run([sys.executable, "-c", _COUNTS_CHILD], env=env, capture_output=True,
                       text=True, timeout=300)
  assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
  assert f"COUNTS_OK {count}" in out.stdout
