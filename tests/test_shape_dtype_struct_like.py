"""ShapeDtypeStruct.like against jax's: shape, dtype, weak type and sharding (kept only for
committed arrays) of arrays, scalars, NumPy values and other structs."""
import jax
import numpy as np
import pytest

import revax
from tests.platform_tolerances import as_the_oracles_device

MAKERS = {
    "array": lambda m: m.numpy.ones((2, 3)),
    "python_float": lambda m: 1.0,
    "python_int": lambda m: 3,
    "numpy_scalar": lambda m: np.float16(2),
    "numpy_array": lambda m: np.zeros((4,), np.int8),
    "committed": lambda m: m.device_put(m.numpy.ones(3), m.devices()[0]),
    "struct": lambda m: m.ShapeDtypeStruct((2,), np.float32, sharding=None),
    "weak_result": lambda m: m.numpy.arange(3.0) + 1.0,
    "bool": lambda m: True,
}


@pytest.mark.parametrize("name", MAKERS)
def test_like_matches_jax(name):
  j, r = jax.ShapeDtypeStruct.like(MAKERS[name](jax)), revax.ShapeDtypeStruct.like(
      MAKERS[name](revax))
  assert isinstance(r, revax.ShapeDtypeStruct)
  assert (r.shape, r.dtype, r.weak_type) == (j.shape, j.dtype, j.weak_type)
  assert (r.sharding is None) == (j.sharding is None)
  if j.sharding is not None:
    assert as_the_oracles_device(repr(r.sharding)) == repr(j.sharding)


def test_like_under_jit_and_eval_shape():
  out = revax.jit(lambda x: revax.ShapeDtypeStruct.like(x).shape)(np.ones((2, 5), np.float32))
  assert out == (2, 5)
  s = revax.ShapeDtypeStruct.like(np.ones((3,), np.float32))
  assert revax.eval_shape(lambda x: x * 2, s) == s
