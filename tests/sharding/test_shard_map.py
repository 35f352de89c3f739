"""revax.sharding and revax.shard_map: meshes, specs, and shard_map against jax.

The multi-device comparison runs in a subprocess with 4 CPU devices for both libraries
(shard_map_child.py: 1-d and 2-d meshes, every collective, matmuls split over the contracting
dimension, jit of shard_map, and a data-parallel gradient equal to the unsharded one)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax import P
from revax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from tests.sharding.children import ROOT, run_child
from tests.child_env import child_env


def test_four_devices_against_jax():
  run_child("shard_map_child.py", "SHARD_MAP_OK")


def test_partition_spec_and_shardings():
  assert P("x", None) == P("x") and hash(P("x", None)) == hash(P("x"))
  assert P(("a", "b")).axes_of(0) == ("a", "b") and P("x").axes_of(3) == ()
  assert len(P("x", None)) == 2 and list(P("x", None)) == ["x", None]
  assert PartitionSpec is type(P())
  mesh = revax.make_mesh((1,), ("x",))
  assert mesh.shape == {"x": 1} and mesh.axis_names == ("x",) and mesh.size == 1
  # make_mesh's axes are Explicit (JAX 0.10.2's default), Mesh's Auto: equal only when typed so
  assert mesh != Mesh(np.array(revax.devices()), ("x",))
  assert mesh == Mesh(np.array(revax.devices()), ("x",), axis_types=mesh.axis_types)
  s = NamedSharding(mesh, P("x"))
  assert s.num_devices == 1 and s.is_fully_replicated and s == NamedSharding(mesh, P("x", None))
  assert SingleDeviceSharding(revax.devices()[0]).device_set == {revax.devices()[0]}
  with pytest.raises(ValueError, match="not an axis of the mesh"):
    NamedSharding(mesh, P("y"))


def test_one_device_mesh():
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))  # Auto: specs on unsplit inputs
  x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
  f = revax.shard_map(lambda v: revax.lax.psum(v * 2, "x"), mesh=mesh, in_specs=P("x"),
                      out_specs=P())
  np.testing.assert_allclose(f(x), x * 2)
  np.testing.assert_allclose(revax.jit(f)(x), x * 2)
  np.testing.assert_allclose(revax.grad(lambda v: f(v).sum())(x), np.full_like(x, 2))
  np.testing.assert_allclose(revax.vmap(f)(np.stack([x, x])), np.stack([x, x]) * 2)


def test_errors():
  with pytest.raises(ValueError, match="must be >= the product"):
    revax.make_mesh((2,), ("x",))
  with pytest.raises(ValueError, match="ndim"):
    Mesh(np.array(revax.devices()), ("x", "y"))
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))  # Auto: specs on unsplit inputs
  x = np.ones((4, 3), np.float32)
  with pytest.raises(ValueError, match="not an axis of the mesh"):
    revax.shard_map(lambda v: v, mesh=mesh, in_specs=P("y"), out_specs=P())(x)
  with pytest.raises(ValueError, match="more than once"):
    revax.shard_map(lambda v: v, mesh=mesh, in_specs=P("x", "x"), out_specs=P())(x)
  with pytest.raises(ValueError, match="pytree prefix"):
    revax.shard_map(lambda v: v, mesh=mesh, in_specs=(P("x"), P("x")), out_specs=P())(x)
  with pytest.raises(ValueError, match="more entries than the argument's rank"):
    revax.shard_map(lambda v: v, mesh=mesh, in_specs=P("x", None, None), out_specs=P())(x)
  with pytest.raises(ValueError, match="context mesh"):  # no mesh= and none set: JAX's error
    revax.shard_map(lambda v: v, mesh=None, in_specs=P(), out_specs=P())(x)
  with pytest.raises(TypeError, match="Mesh"):
    revax.shard_map(lambda v: v, mesh="x", in_specs=P(), out_specs=P())(x)
  with pytest.raises(NameError, match="unbound axis name: y"):
    revax.shard_map(lambda v: revax.lax.psum(v, "y"), mesh=mesh, in_specs=P(), out_specs=P())(x)


def test_unreplicated_output_and_divisibility_on_four_members():
  code = """
import numpy as np, revax, pytest
from revax import P
mesh = revax.sharding.Mesh(np.array(revax.devices()), ("x",))  # Auto axes
x = np.ones((8, 3), np.float32)
with pytest.raises(ValueError, match="could not infer replication over any axes"):
  revax.shard_map(lambda v: v, mesh=mesh, in_specs=P("x"), out_specs=P())(x)
with pytest.raises(ValueError, match="not divisible"):
  revax.shard_map(lambda v: v, mesh=mesh, in_specs=P(None, "x"), out_specs=P(None, "x"))(x)
print("ERRORS_OK")
"""
  env = child_env(REVAX_CPU_DEVICE_COUNT="4")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
  assert "ERRORS_OK" in out.stdout, out.stderr[-2000:]


def test_numpy_inside_shard_map():
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))  # Auto: specs on unsplit inputs
  f = revax.shard_map(lambda v: rnp.cumsum(v, axis=0), mesh=mesh, in_specs=P(None, "x"),
                      out_specs=P(None, "x"))
  x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  np.testing.assert_allclose(f(x), np.cumsum(x, 0))
