"""create_device_mesh / create_hybrid_device_mesh against jax on one CPU device (the 4-device
cases run in multidevice_child.py): NumPy arrays of devices of the requested shape, and jax's
exceptions for bad shapes and missing granule attributes. Devices are passed explicitly: a test
process may have more than one CPU device (a doctest of this worker may have set 4)."""
import jax
import jax.experimental.mesh_utils as jmu
import numpy as np
import pytest

import revax
from revax.experimental import mesh_utils as mu
from revax.sharding import Mesh


def R1():  # noqa: N802
  return revax.devices()[:1]


def J1():  # noqa: N802
  return jax.devices()[:1]


def _ids(mesh):
  return np.vectorize(lambda d: d.id)(mesh)


def test_create_device_mesh_matches_jax_on_one_device():
  for shape in ((1,), (1, 1), [1, 1, 1]):
    m, jm = mu.create_device_mesh(shape, R1()), jmu.create_device_mesh(shape, J1())
    assert type(m) is np.ndarray and m.dtype == jm.dtype == object and m.shape == jm.shape
    assert isinstance(m.flat[0], revax.Device)
    np.testing.assert_array_equal(_ids(m), _ids(jm))
  m = mu.create_device_mesh((1,), R1(), contiguous_submeshes=True,
                            allow_split_physical_axes=True)
  assert Mesh(m, ("x",)).devices.shape == (1,)


@pytest.mark.parametrize("lib,devs", [(mu, R1), (jmu, J1)])
def test_bad_mesh_shapes_raise_value_error(lib, devs):
  with pytest.raises(ValueError, match="must equal the product"):
    lib.create_device_mesh((2,), devs())
  with pytest.raises(ValueError, match="should be a sequence of ints"):
    lib.create_device_mesh(("a",), devs())


def test_hybrid_mesh_matches_jax_on_one_device():
  m = mu.create_hybrid_device_mesh((1,), (1,), R1(), process_is_granule=True)
  jm = jmu.create_hybrid_device_mesh((1,), (1,), J1(), process_is_granule=True)
  assert m.shape == jm.shape == (1,) and m.dtype == object
  np.testing.assert_array_equal(_ids(m), _ids(jm))
  for lib, devs in ((mu, R1), (jmu, J1)):  # CPU devices have no slice_index
    with pytest.raises(ValueError, match="slice_index"):
      lib.create_hybrid_device_mesh((1,), (1,), devs())
    with pytest.raises(ValueError, match="Number of slices 1"):
      lib.create_hybrid_device_mesh((1,), (2,), devs(), process_is_granule=True)


def test_device_kind_handler_takes_precedence():
  kind = revax.devices()[0].device_kind
  calls = []

  def handler(shape, devices, *, contiguous_submeshes):
    calls.append((shape, contiguous_submeshes))
    return None  # falls back to the general rule

  mu.device_kind_handler_dict[kind] = handler
  try:
    m = mu.create_device_mesh([1], R1())
  finally:
    del mu.device_kind_handler_dict[kind]
  assert calls == [((1,), False)] and m.shape == (1,)
  assert jax.devices()[0].device_kind not in jmu.device_kind_handler_dict  # jax's are TPU's
