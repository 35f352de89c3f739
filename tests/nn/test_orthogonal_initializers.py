"""revax.nn.initializers.orthogonal and delta_orthogonal against jax.nn.initializers: the same
keys give the same weights (to the rounding of revax's own QR), and the same errors."""
import jax
import numpy as np
import pytest

import revax
from tests.platform_tolerances import linalg_tol

ri, ji = revax.nn.initializers, jax.nn.initializers


@pytest.mark.parametrize("name,shape,kw", [
    ("orthogonal", (2, 3), {}),
    ("orthogonal", (3, 2, 4), {"column_axis": 0}),
    ("orthogonal", (4, 2, 3), {"scale": 2.0, "column_axis": 1}),
    ("orthogonal", (2, 2), {"dtype": np.complex64}),
    ("delta_orthogonal", (3, 3, 4), {}),
    ("delta_orthogonal", (2, 3, 2, 4), {"scale": 0.5}),
    ("delta_orthogonal", (3, 1, 3, 2, 2), {"column_axis": -2}),
])
def test_equals_jax(name, shape, kw):
  r = getattr(ri, name)(**kw)(revax.random.PRNGKey(4), shape)
  j = getattr(ji, name)(**kw)(jax.random.PRNGKey(4), shape)
  assert r.dtype == j.dtype and r.shape == j.shape
  np.testing.assert_allclose(np.asarray(r), np.asarray(j), **linalg_tol(rtol=1e-5, atol=1e-6))  # QR


def test_orthonormal_jit_empty_and_dtype_argument():
  w = np.asarray(ri.orthogonal(scale=3.0)(revax.random.key(1), (5, 3)))
  np.testing.assert_allclose(w.T @ w, 9.0 * np.eye(3), atol=1e-5)
  jitted = revax.jit(lambda k: ri.orthogonal()(k, (3, 4)))(revax.random.PRNGKey(2))
  np.testing.assert_allclose(jitted, ri.orthogonal()(revax.random.PRNGKey(2), (3, 4)), atol=1e-6)
  empty = ri.orthogonal()(revax.random.PRNGKey(0), (0, 3))
  assert empty.shape == (0, 3) and empty.dtype == np.float32
  assert ri.orthogonal(dtype=np.float32)(revax.random.PRNGKey(0), (2, 2)).dtype == np.float32
  k = ri.delta_orthogonal()(revax.random.PRNGKey(3), (3, 3, 2, 2))
  assert np.count_nonzero(np.asarray(k)[[0, 2]]) == 0 and np.count_nonzero(k[1, 1]) == 4


@pytest.mark.parametrize("name,shape,kw,error,msg", [
    ("orthogonal", (3,), {}, ValueError, "at least a 2D shape"),
    ("orthogonal", (3, 2), {"dtype": np.int32}, ValueError, "float or complex dtype"),
    ("delta_orthogonal", (3, 3), {}, ValueError, "3D, 4D or 5D"),
    ("delta_orthogonal", (3, 3, 3, 3, 3, 3), {}, ValueError, "3D, 4D or 5D"),
    ("delta_orthogonal", (3, 4, 3), {}, ValueError, "fan_in"),
])
def test_errors_match_jax(name, shape, kw, error, msg):
  dtype = kw.pop("dtype", None)
  for lib, key in ((ri, revax.random.PRNGKey(0)), (ji, jax.random.PRNGKey(0))):
    with pytest.raises(error, match=msg):
      getattr(lib, name)(**kw)(key, shape, dtype)
  with pytest.raises(NotImplementedError):
    ri.orthogonal()(revax.random.PRNGKey(0), (2, 2), out_sharding=object())
