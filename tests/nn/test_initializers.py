"""revax.nn.initializers against jax.nn.initializers: the same keys give the same values."""
import numpy as np
import pytest

import revax
from tests.platform_tolerances import ON_TPU, allclose_tol, tolerance

jax = pytest.importorskip("jax")

FACTORIES = ["glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal",
             "lecun_uniform", "lecun_normal", "he_uniform", "he_normal", "kaiming_uniform",
             "kaiming_normal"]


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 3, 2, 8), (5, 7)])
def test_variance_scaling_family_equals_jax(name, shape):
  r = getattr(revax.nn.initializers, name)()(revax.random.PRNGKey(7), shape)
  j = getattr(jax.nn.initializers, name)()(jax.random.PRNGKey(7), shape)
  assert r.dtype == j.dtype and r.shape == j.shape
  # normal draws pass the same bits through erf_inv: the chip's own (TRANSCENDENTAL) on a TPU
  rtol, atol = tolerance(1e-6, 1e-7)
  np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", FACTORIES)
def test_variance_scaling_family_of_complex_weights_equals_jax(name, dtype):
  """Complex weights (flax's Dense(param_dtype=complex64)): uniform draws from a disk,
  truncated_normal from a complex normal with its modulus truncated, as in JAX."""
  if ON_TPU and dtype == np.complex128:  # NO_COMPLEX128: refused, not an aborted process
    with revax.enable_x64(True), pytest.raises(TypeError, match="complex128"):
      getattr(revax.nn.initializers, name)()(revax.random.key(3), (4, 5), dtype)
    return
  with revax.enable_x64(dtype == np.complex128), jax.enable_x64(dtype == np.complex128):
    r = getattr(revax.nn.initializers, name)()(revax.random.key(3), (4, 5), dtype)
    j = getattr(jax.nn.initializers, name)()(jax.random.key(3), (4, 5), dtype)
    assert r.dtype == j.dtype and r.shape == j.shape
    np.testing.assert_allclose(np.asarray(r), np.asarray(j), **allclose_tol(rtol=1e-5, atol=1e-6))


def test_axes_modes_and_simple_initializers_equal_jax():
  rk, jk = revax.random.PRNGKey(1), jax.random.PRNGKey(1)
  for kw in ({"in_axis": 0, "out_axis": 1}, {"in_axis": (0, 1), "out_axis": -1},
             {"batch_axis": 0}):
    for mode in ("fan_in", "fan_out", "fan_avg"):
      for dist in ("normal", "uniform", "truncated_normal"):
        r = revax.nn.initializers.variance_scaling(0.5, mode, dist, **kw)(rk, (3, 4, 5))
        j = jax.nn.initializers.variance_scaling(0.5, mode, dist, **kw)(jk, (3, 4, 5))
        np.testing.assert_allclose(np.asarray(r), np.asarray(j),
                                   **allclose_tol(rtol=1e-6, atol=1e-7))  # (erf_inv)
  for name, args in (("normal", (0.3,)), ("uniform", (2.0,)), ("truncated_normal", (0.1,)),
                     ("constant", (1.5,))):
    r = getattr(revax.nn.initializers, name)(*args)(rk, (2, 3))
    j = getattr(jax.nn.initializers, name)(*args)(jk, (2, 3))
    np.testing.assert_allclose(np.asarray(r), np.asarray(j), **allclose_tol(rtol=1e-6))
  np.testing.assert_array_equal(revax.nn.initializers.zeros(rk, (2, 2), np.int32),
                                np.zeros((2, 2), np.int32))
  np.testing.assert_array_equal(revax.nn.initializers.ones(rk, (3,)), np.ones(3, np.float32))
  assert revax.jit(lambda k: revax.nn.initializers.he_normal()(k, (3, 4)))(rk).shape == (3, 4)


def test_errors():
  init = revax.nn.initializers.glorot_normal()
  with pytest.raises(ValueError, match="Must be at least 2D"):
    init(revax.random.PRNGKey(0), (3,))
  with pytest.raises(ValueError, match="invalid mode"):
    revax.nn.initializers.variance_scaling(1.0, "fan_sideways", "normal")
  with pytest.raises(ValueError, match="invalid distribution"):
    revax.nn.initializers.variance_scaling(1.0, "fan_in", "cauchy")
