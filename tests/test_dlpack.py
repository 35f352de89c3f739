"""revax.dlpack and revax.numpy.from_dlpack against jax.dlpack: producers, device=, dtypes."""
import jax
import jax.dlpack
import numpy as np
import pytest

import revax
import revax.dlpack
import revax.numpy as rnp


def test_from_dlpack_matches_jax():
  for x in (np.arange(6.0).reshape(2, 3), np.arange(4, dtype=np.int8), np.array([True, False])):
    out, expected = revax.dlpack.from_dlpack(x), jax.dlpack.from_dlpack(x)
    assert out.dtype == expected.dtype and out.shape == expected.shape  # float64 canonicalized
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))
  out = revax.dlpack.from_dlpack(jax.numpy.arange(3.0))  # another library's array
  np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])
  bf16 = rnp.ones(2, rnp.bfloat16)  # revax's own Arrays, bfloat16 included
  assert revax.dlpack.from_dlpack(bf16).dtype == rnp.bfloat16
  np.testing.assert_array_equal(np.from_dlpack(rnp.arange(3)), [0, 1, 2])
  assert rnp.ones(2).__dlpack_device__() == jax.numpy.ones(2).__dlpack_device__()


def test_device_and_errors():
  dev = revax.devices()[0]
  out = rnp.from_dlpack(np.arange(3.0), device=dev, copy=True)
  assert isinstance(out, revax.Array) and out.devices() == {dev}
  out = revax.dlpack.from_dlpack(np.arange(2.0), device=revax.sharding.SingleDeviceSharding(dev))
  assert out.devices() == {dev}
  with pytest.raises(TypeError, match="must have __dlpack__ and __dlpack_device__"):
    revax.dlpack.from_dlpack([1.0, 2.0])
  with pytest.raises(TypeError, match="must have __dlpack__ and __dlpack_device__"):
    jax.dlpack.from_dlpack([1.0, 2.0])


def test_is_supported_dtype_matches_jax():
  for d in (np.float32, np.float64, np.int8, np.uint64, np.bool_, np.complex64, rnp.bfloat16,
            np.float16, "int32", np.dtype("V2"), np.str_):
    assert revax.dlpack.is_supported_dtype(d) == jax.dlpack.is_supported_dtype(d), d
  with pytest.raises(TypeError, match="Expected a string or dtype-like object"):
    revax.dlpack.is_supported_dtype(None)
