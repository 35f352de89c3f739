"""Type promotion follows JAX's lattice (checked against jax.numpy as the oracle)."""
import itertools

import ml_dtypes
import numpy as np
import pytest

from revax._src.core import dtypes

jnp = pytest.importorskip("jax.numpy")

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float64, np.complex128,
          ml_dtypes.bfloat16, np.float32, np.complex64]
WEAK_SCALARS = {"int": 1, "float": 1.0, "complex": 1j}


@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(DTYPES, 2)))
def test_promotion_of_strong_types_matches_jax(a, b):
  assert dtypes.promote_types(a, b) == jnp.promote_types(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", sorted(WEAK_SCALARS))
def test_weak_scalar_promotion_matches_jax(dtype, kind):
  x = jnp.zeros(2, dtype)
  expected = (x + WEAK_SCALARS[kind]).dtype
  got, weak = dtypes.promote_types_weak((np.dtype(dtype), False),
                                        dtypes.scalar_dtype(WEAK_SCALARS[kind]))
  assert got == expected
  assert weak is False or dtypes.is_bool(dtype) or got != np.dtype(dtype) or weak


def test_two_weak_scalars_stay_weak():
  assert dtypes.promote_types_weak((np.int32, True), (np.float32, True)) == (np.float32, True)
  assert dtypes.promote_types_weak((np.int32, True), (np.int8, False)) == (np.int8, False)


def test_canonicalization_without_x64():
  assert dtypes.canonicalize_dtype(np.float64) == np.float32
  assert dtypes.canonicalize_dtype(np.int64) == np.int32
  assert dtypes.canonicalize_dtype(np.uint64) == np.uint32
  assert dtypes.canonicalize_dtype(np.complex128) == np.complex64


def test_x64_flag_changes_defaults():
  from revax._src.core.config import config
  config.update("enable_x64", True)
  try:
    assert dtypes.canonicalize_dtype(np.float64) == np.float64
    assert dtypes.scalar_dtype(1.0) == (np.float64, True)
  finally:
    config.update("enable_x64", False)
  assert dtypes.scalar_dtype(1.0) == (np.float32, True)


def test_unknown_config_option_is_an_error():
  from revax._src.core.config import config
  # AttributeError, as jax.config.update raises for a name it does not know
  with pytest.raises(AttributeError, match="Unrecognized config option: enable_x46"):
    config.update("enable_x46", True)


def test_unsupported_dtype_is_a_type_error():
  with pytest.raises(TypeError, match="does not support dtype"):
    dtypes.canonicalize_dtype(np.dtype("U3"))


def test_short_names():
  assert [dtypes.short_name(d) for d in (np.float32, ml_dtypes.bfloat16, np.bool_, np.uint8)] == \
      ["f32", "bf16", "bool", "u8"]
