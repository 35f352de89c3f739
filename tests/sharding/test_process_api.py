"""The single-process names of JAX's multi-process API (process_count, process_index, host_*,
make_array_from_process_local_data, copy_to_host_async, reshard) against jax: revax runs one
process that holds every device, so they answer as jax does in one process."""
import numpy as np
import pytest

import jax
import revax
import revax.numpy as rnp
from revax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P


def test_process_counts_and_indices_match_jax():
  for name in ("process_count", "process_index", "process_indices", "host_count", "host_id",
               "host_ids"):
    assert getattr(revax, name)() == getattr(jax, name)(), name


def test_make_array_from_process_local_data_and_reshard():
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",))
  s = NamedSharding(mesh, P("x"))
  data = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  out = revax.make_array_from_process_local_data(s, data)
  np.testing.assert_array_equal(np.asarray(out), data)
  out = revax.make_array_from_process_local_data(s, data, (3, 2))
  np.testing.assert_array_equal(np.asarray(out), data)
  with pytest.raises(ValueError, match="global_shape"):
    revax.make_array_from_process_local_data(s, data, (6, 2))
  jmesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
  with pytest.raises(ValueError, match="global_shape"):
    jax.make_array_from_process_local_data(jax.sharding.NamedSharding(jmesh, jax.P("x")),
                                           data, (6, 2))
  r = revax.reshard({"a": rnp.asarray(data)}, {"a": s})
  np.testing.assert_array_equal(np.asarray(r["a"]), data)
  with pytest.raises(ValueError, match="NamedSharding"):
    revax.reshard(rnp.asarray(data), P("x"))
  f = revax.jit(lambda x: revax.reshard(x * 2, s))
  np.testing.assert_array_equal(np.asarray(f(rnp.asarray(data))), 2 * data)


def test_copy_to_host_async_returns_its_argument():
  tree = {"a": rnp.arange(3.0), "b": 1, "c": np.ones(2)}
  assert revax.copy_to_host_async(tree) is tree
  assert jax.copy_to_host_async(tree) is tree


def test_lax_empty_places_as_out_sharding_says():
  mesh = Mesh(np.array(revax.devices()[:1]), ("x",), axis_types=AxisType.Explicit)
  s = NamedSharding(mesh, P("x"))
  out = revax.lax.empty((4, 2), np.float32, out_sharding=s)
  for lib in (jax, revax):  # out_sharding on an Auto axis: ValueError in both
    auto = lib.sharding.Mesh(np.array(lib.devices()[:1]), ("x",))
    with pytest.raises(ValueError, match="Auto"):
      lib.lax.empty((4, 2), np.float32, out_sharding=lib.NamedSharding(auto, lib.P("x")))
  # jax takes out_sharding only on Explicit mesh axes (its make_mesh's default)
  jout = jax.lax.empty((4, 2), np.float32, out_sharding=jax.sharding.NamedSharding(
      jax.make_mesh((1,), ("x",)), jax.P("x")))
  assert out.shape == jout.shape and out.dtype == jout.dtype
  # on a 1-device mesh revax's placement is that device (with_sharding_constraint's own rule)
  assert out.sharding.device_set == set(s.device_set) == {revax.devices()[0]}
  jitted = revax.jit(lambda: revax.lax.empty((4, 2), np.float32, out_sharding=s))()
  assert jitted.shape == (4, 2)
