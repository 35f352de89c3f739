"""revax.scipy.integrate.trapezoid, revax.scipy.ndimage.map_coordinates and
revax.scipy.optimize.minimize against jax.scipy (the oracle) and SciPy: values, jit, grad/vmap
where they apply, and error paths."""
import warnings

import jax
import jax.numpy as jnp
import jax.scipy.cluster.vq
import jax.scipy.integrate
import jax.scipy.ndimage
import jax.scipy.optimize
import numpy as np
import pytest
import scipy.integrate
import scipy.ndimage
import scipy.optimize

import revax
import revax.numpy as rnp
import revax.scipy.cluster.vq
import revax.scipy.integrate
import revax.scipy.ndimage
import revax.scipy.optimize

warnings.filterwarnings("ignore", category=RuntimeWarning)
F32 = np.float32


def _close(a, b, rtol=1e-5, atol=1e-6):
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
  np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# --- trapezoid -----------------------------------------------------------------------------------
Y = np.array([[1.0, 2.0, 4.0, 7.0], [0.0, 1.0, 0.0, 3.0]], F32)
XS = np.array([0.0, 1.0, 3.0, 4.0], F32)
TRAPZ_CASES = [(Y,), (Y, XS), (Y, None, 0.5), (Y, None, 1.0, 0), (Y, np.stack([XS, XS * 2])),
               (np.arange(5),)]


@pytest.mark.parametrize("args", TRAPZ_CASES, ids=range(len(TRAPZ_CASES)))
def test_trapezoid_matches_jax_and_scipy(args):
  out = revax.scipy.integrate.trapezoid(*args)
  _close(out, jax.scipy.integrate.trapezoid(*args))
  np.testing.assert_allclose(np.asarray(out, np.float64), scipy.integrate.trapezoid(*args),
                             rtol=1e-6)


def test_trapezoid_jit_grad_vmap():
  f = revax.scipy.integrate.trapezoid
  _close(revax.jit(f)(Y, XS), f(Y, XS))
  g = revax.grad(lambda y: f(y, XS).sum())(Y)
  _close(g, jax.grad(lambda y: jax.scipy.integrate.trapezoid(y, XS).sum())(Y))
  _close(revax.vmap(f)(Y), f(Y, axis=-1))
  with pytest.raises(ValueError, match="does not match"):
    f(Y, XS[:3])


# --- map_coordinates -----------------------------------------------------------------------------
IMG = np.arange(20, dtype=F32).reshape(4, 5) ** 1.5
COORDS = [np.array([-1.2, 0.5, 2.5, 3.7, 5.1, 1.0], F32), np.array([0.3, -0.5, 4.5, 1.0, 6.2, 2.0], F32)]
MODES = ["constant", "nearest", "wrap", "mirror", "reflect"]
# SciPy's names for jax's modes ('constant' and 'wrap' are SciPy's grid- variants)
SCIPY_MODES = {"constant": "grid-constant", "nearest": "nearest", "wrap": "grid-wrap",
               "mirror": "mirror", "reflect": "reflect"}


@pytest.fixture(scope="module")
def jax_maps():
  def run():
    return {(o, m): jax.scipy.ndimage.map_coordinates(IMG, COORDS, o, mode=m, cval=-1.0)
            for o in (0, 1) for m in MODES}
  return jax.device_get(jax.jit(run)())


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", MODES)
def test_map_coordinates_matches_jax_and_scipy(order, mode, jax_maps):
  out = revax.scipy.ndimage.map_coordinates(IMG, COORDS, order, mode=mode, cval=-1.0)
  _close(out, jax_maps[(order, mode)], rtol=1e-5)
  if order == 1:  # SciPy rounds order-0 halves to even
    ref = scipy.ndimage.map_coordinates(IMG.astype(np.float64), np.stack(COORDS).astype(np.float64),
                                        order=1, mode=SCIPY_MODES[mode], cval=-1.0)
    np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=1e-5, atol=1e-4)


def test_map_coordinates_integer_input_jit_and_grad():
  f = revax.scipy.ndimage.map_coordinates
  c = [np.array([0.5, 1.5, 2.5, -0.5], F32)]
  _close(f(np.arange(5), c, 1), jax.scipy.ndimage.map_coordinates(np.arange(5), c, 1))
  _close(revax.jit(lambda img, c: f(img, c, 1, mode="nearest"))(IMG, COORDS),
         f(IMG, COORDS, 1, mode="nearest"))
  g = revax.grad(lambda c0: f(IMG, [c0, COORDS[1]], 1, mode="nearest").sum())(COORDS[0])
  jg = jax.grad(lambda c0: jax.scipy.ndimage.map_coordinates(IMG, [c0, COORDS[1]], 1,
                                                             mode="nearest").sum())(COORDS[0])
  _close(g, jg, rtol=1e-4)


def test_map_coordinates_errors():
  f = revax.scipy.ndimage.map_coordinates
  with pytest.raises(NotImplementedError, match="order<=1"):
    f(IMG, COORDS, 3)
  with pytest.raises(NotImplementedError, match="mode"):
    f(IMG, COORDS, 1, mode="grid-mirror")
  with pytest.raises(ValueError, match="length input.ndim"):
    f(IMG, COORDS[:1], 1)


# --- minimize ------------------------------------------------------------------------------------
def _rosen(np_):
  return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _quadratic(np_):
  a = np.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]], F32)
  b = np.array([1.0, -2.0, 0.5], F32)
  return lambda x, s: s * (0.5 * x @ (a @ x) - b @ x)


def test_minimize_matches_jax_and_scipy():
  """A quadratic through jit with extra args against jax and SciPy; Rosenbrock from (-1.2, 1)
  against SciPy (jax's float32 BFGS stops there with a failed line search at (-0.28, 0.04);
  revax's reaches the minimum)."""
  q0 = np.zeros(3, F32)
  out = revax.jit(lambda x0: revax.scipy.optimize.minimize(_quadratic(rnp), x0, args=(F32(0.5),),
                                                           method="BFGS"))(q0)
  ref = jax.scipy.optimize.minimize(_quadratic(jnp), q0, args=(F32(0.5),), method="BFGS")
  exact = scipy.optimize.minimize(_quadratic(np), q0.astype(np.float64), args=(0.5,),
                                  method="BFGS").x
  assert bool(out.success) and bool(ref.success) and int(out.status) == 0
  np.testing.assert_allclose(np.asarray(out.x), np.asarray(ref.x), atol=1e-4)
  np.testing.assert_allclose(np.asarray(out.x), exact, atol=1e-4)
  _close(out.fun, ref.fun, rtol=1e-5)
  assert out._fields == ref._fields
  assert out.x.dtype == np.float32 and out.success.dtype == np.bool_
  assert out.hess_inv.shape == (3, 3) and out.jac.shape == (3,)

  x0 = np.array([-1.2, 1.0], F32)
  out = revax.scipy.optimize.minimize(_rosen(rnp), x0, method="BFGS")
  assert isinstance(out, revax.scipy.optimize.OptimizeResults)
  assert bool(out.success) and int(out.status) == 0
  exact = scipy.optimize.minimize(_rosen(np), x0.astype(np.float64), method="BFGS").x
  np.testing.assert_allclose(np.asarray(out.x), exact, atol=2e-3)
  assert 0 < int(out.nit) <= 200 and int(out.nfev) >= int(out.nit)


def test_minimize_options_and_errors():
  x0 = np.array([-1.2, 1.0], F32)
  out = revax.scipy.optimize.minimize(_rosen(rnp), x0, method="BFGS", options={"maxiter": 3})
  assert int(out.nit) == 3 and int(out.status) == 1 and not bool(out.success)
  with pytest.raises(ValueError, match="not recognized"):
    revax.scipy.optimize.minimize(_rosen(rnp), x0, method="Nelder-Mead")
  with pytest.raises(TypeError, match="must be a tuple"):
    revax.scipy.optimize.minimize(_rosen(rnp), x0, args=[1], method="BFGS")


# --- cluster.vq ----------------------------------------------------------------------------------
def test_vq_matches_jax_and_scipy():
  import scipy.cluster.vq
  obs = np.array([[1.0, 2.0], [0.0, 0.0], [5.0, 5.0], [3.9, 4.2]], F32)
  book = np.array([[0.0, 0.0], [4.0, 4.0], [1.0, 1.5]], F32)
  for o, b in [(obs, book), (obs[:, 0], book[:, 0])]:
    code, dist = revax.scipy.cluster.vq.vq(o, b)
    jcode, jdist = jax.scipy.cluster.vq.vq(o, b)
    _close(code, jcode), _close(dist, jdist)
    scode, sdist = scipy.cluster.vq.vq(o.astype(np.float64), b.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(code), scode)
    np.testing.assert_allclose(np.asarray(dist), sdist, rtol=1e-6)
  code, dist = revax.jit(revax.scipy.cluster.vq.vq)(obs, book)
  eager_code, eager_dist = revax.scipy.cluster.vq.vq(obs, book)
  _close(code, eager_code), _close(dist, eager_dist)
  with pytest.raises(ValueError, match="same rank"):
    revax.scipy.cluster.vq.vq(obs, book[:, 0])
