"""multihost_utils in one process against jax's: gathers and broadcasts return NumPy arrays of
this process's data, barriers and equality checks pass (NaN excepted, as in jax), host-local and
global arrays convert into each other through NamedSharding, and the identity under jit/grad."""
import jax
import jax.experimental.multihost_utils as jmh
import jax.numpy as jjnp
import numpy as np
import pytest

import revax
import revax.numpy as jnp
from revax.experimental import multihost_utils as mh
from revax.sharding import Mesh, NamedSharding, PartitionSpec as P


def _same_tree(a, b):
  la, ta = jax.tree.flatten(a)
  lb, tb = jax.tree.flatten(b)
  assert ta == tb
  for x, y in zip(la, lb):
    assert type(x) is type(y) is np.ndarray, (type(x), type(y))
    assert x.dtype == y.dtype and x.shape == y.shape
    np.testing.assert_array_equal(x, y)


def test_allgather_and_broadcast_match_jax():
  data = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": 7, "c": [np.float32(2.5)]}
  rdata = jax.tree.map(jnp.asarray, data)
  jdata = jax.tree.map(jjnp.asarray, data)
  for tiled in (False, True):
    _same_tree(mh.process_allgather(rdata, tiled=tiled), jmh.process_allgather(jdata, tiled=tiled))
    _same_tree(mh.process_allgather(data, tiled=tiled), jmh.process_allgather(data, tiled=tiled))
  _same_tree(mh.broadcast_one_to_all(rdata), jmh.broadcast_one_to_all(jdata))
  _same_tree(mh.broadcast_one_to_all(data, is_source=False),
             jmh.broadcast_one_to_all(data, is_source=False))


def test_barriers_and_equality_checks():
  mh.sync_global_devices("step 1")
  mh.assert_equal({"x": jnp.arange(3), "y": 1.5})
  assert mh.reached_preemption_sync_point(10) is jmh.reached_preemption_sync_point(10) is False
  for lib, lnp in ((mh, jnp), (jmh, jjnp)):
    with pytest.raises(AssertionError, match="nan differs"):
      lib.assert_equal(lnp.array([1., np.nan]), "nan differs")
    with pytest.raises(RuntimeError, match="Distributed JAX not initialized"):
      with lib.live_devices(revax.devices()):
        pass
  assert str(mh.ProcessFailureError({1})) == str(jmh.ProcessFailureError({1}))


def test_host_local_and_global_arrays_match_jax():
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))
  jmesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
  local = {"w": np.arange(8.0).reshape(4, 2), "b": np.ones(2, np.int32)}
  g = mh.host_local_array_to_global_array(local, mesh, {"w": P("x"), "b": P()})
  jg = jmh.host_local_array_to_global_array(local, jmesh, {"w": jax.P("x"), "b": jax.P()})
  for k in local:
    assert g[k].dtype == jg[k].dtype and g[k].shape == jg[k].shape  # float64 -> float32
    np.testing.assert_array_equal(g[k], jg[k])
  assert g["w"].sharding == NamedSharding(mesh, P("x"))
  back = mh.global_array_to_host_local_array(g, mesh, P())
  assert back["w"] is g["w"]  # one process: a global array is already host local
  from_np = mh.global_array_to_host_local_array(np.float64(3.), mesh, P())
  jfrom_np = jmh.global_array_to_host_local_array(np.float64(3.), jmesh, jax.P())
  assert from_np.dtype == jfrom_np.dtype and from_np.shape == jfrom_np.shape == ()
  for lib, m, spec in ((mh, mesh, P), (jmh, jmesh, jax.P)):
    with pytest.raises(ValueError, match="`None` is not a valid input"):
      lib.host_local_array_to_global_array(np.ones(2), m, None)
    with pytest.raises(ValueError, match="`None` is not a valid input"):
      lib.global_array_to_host_local_array(np.ones(2), m, None)
    with pytest.raises(ValueError):
      lib.host_local_array_to_global_array([np.ones(2)], m, (spec(), spec()))


def test_conversions_are_the_identity_under_transformations():
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))

  def f(x):
    y = mh.host_local_array_to_global_array(x, mesh, P("x"))
    return (mh.global_array_to_host_local_array(y * y, mesh, P("x"))).sum()

  x = jnp.arange(4.)
  np.testing.assert_allclose(revax.jit(revax.grad(f))(x), 2 * np.arange(4.))
  np.testing.assert_allclose(revax.vmap(revax.grad(f))(jnp.ones((2, 4))), 2 * np.ones((2, 4)))
