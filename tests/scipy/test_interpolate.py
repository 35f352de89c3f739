"""revax.scipy.interpolate.RegularGridInterpolator against jax.scipy.interpolate (and SciPy):
linear and nearest values inside and outside the grid, trailing value axes, tuple queries, grad
in the values and the query points, vmap, jit with the interpolator as a pytree, errors."""
import jax
import numpy as np
import pytest
import scipy.interpolate

import revax
import revax.scipy.interpolate as ri
import jax.scipy.interpolate as ji

GRID = (np.array([0.0, 1.0, 2.5, 4.0]), np.array([-1.0, 0.0, 2.0]))
RNG = np.random.RandomState(0)
VALUES = RNG.randn(4, 3).astype(np.float32)
VALUES3 = RNG.randn(4, 3, 2).astype(np.float32)
XI = np.array([[0.5, 0.5], [3.9, -1.0], [5.0, 0.0], [2.5, 1.9], [-0.1, 0.0]], np.float32)


@pytest.mark.parametrize("args,kw,xi,call_kw", [
    ((GRID, VALUES), {}, XI, {}),
    ((GRID, VALUES), {"method": "nearest"}, XI, {}),
    ((GRID, VALUES3), {}, XI, {}),
    ((GRID, VALUES), {"fill_value": None}, XI, {}),
    ((GRID, VALUES), {"fill_value": 7}, XI, {"method": "nearest"}),
    ((GRID, VALUES), {}, (XI[:, 0], XI[:, 1]), {}),
    ((GRID, VALUES), {}, XI.reshape(5, 1, 2), {}),
    (((GRID[0],), VALUES3), {}, XI[:, 0], {}),
], ids=["linear", "nearest", "trailing_axes", "extrapolate", "fill_nearest", "tuple_xi",
        "batched_xi", "one_axis"])
def test_equals_jax(args, kw, xi, call_kw):
  r = np.asarray(ri.RegularGridInterpolator(*args, **kw)(xi, **call_kw))
  j = np.asarray(ji.RegularGridInterpolator(*args, **kw)(xi, **call_kw))
  assert r.shape == j.shape and r.dtype == j.dtype
  np.testing.assert_allclose(r, j, rtol=1e-6, atol=1e-6)  # NaN where jax has NaN


def test_equals_scipy_inside_the_grid():
  inside = XI[[0, 1, 3]]
  s = scipy.interpolate.RegularGridInterpolator(GRID, VALUES3.astype(np.float64))(inside)
  np.testing.assert_allclose(ri.RegularGridInterpolator(GRID, VALUES3)(inside), s, rtol=1e-5)


def test_grad_vmap_jit():
  f = lambda m: lambda v, x: (m.RegularGridInterpolator(GRID, v)(x) ** 2).sum()
  inside = XI[[0, 1, 3]]
  for r, j in zip(revax.grad(f(ri), (0, 1))(VALUES, inside),
                  jax.jit(jax.grad(f(ji), (0, 1)))(VALUES, inside), strict=True):
    np.testing.assert_allclose(r, j, rtol=1e-5, atol=1e-6)
  interp = ri.RegularGridInterpolator(GRID, VALUES)
  batched = revax.vmap(lambda x: interp(x[None]))(XI)
  np.testing.assert_allclose(batched[:, 0], interp(XI), rtol=1e-6)
  jitted = revax.jit(lambda it, x: it(x))(interp, XI)
  np.testing.assert_allclose(jitted, interp(XI), rtol=1e-6)


def test_errors_match_jax():
  for m in (ri, ji):
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
      m.RegularGridInterpolator(GRID, VALUES, method="cubic")
    with pytest.raises(NotImplementedError, match="bounds_error"):
      m.RegularGridInterpolator(GRID, VALUES, bounds_error=True)
    with pytest.raises(ValueError, match="3 point arrays"):
      m.RegularGridInterpolator(GRID + (GRID[0],), VALUES)
    with pytest.raises(ValueError, match="fill_value"):
      m.RegularGridInterpolator(GRID, VALUES, fill_value=1j)
    with pytest.raises(ValueError, match="dimension"):
      m.RegularGridInterpolator(GRID, VALUES)(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="not defined"):
      m.RegularGridInterpolator(GRID, VALUES)(XI, method="cubic")
