"""schur (lax.linalg and scipy.linalg), rsf2csf, sqrtm and funm against jax: LAPACK's ?gees
on both sides (revax's C FFI handler under jit, ctypes eagerly), so the factors agree bit for bit (float32/64, complex64/128, batches, jit, vmap,
empty matrices, NaN where ?gees fails); JAX's errors, including its missing derivative."""
import contextlib

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import revax
import revax.numpy as rnp
import revax.scipy.linalg as rsl
from tests.platform_tolerances import ON_TPU, on_the_cpu_device

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _matrix(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  a = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    a = a + 1j * rng.standard_normal(shape)
  return a.astype(dtype)


def _same(actual, expected):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype and actual.shape == expected.shape
  np.testing.assert_array_equal(actual, expected)


def _close(actual, expected):
  """Matrix products after the factorization: XLA's dot (revax's plugin vs jaxlib's) rounds
  some sums differently in the last bit."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype and actual.shape == expected.shape
  eps = np.finfo(actual.dtype).eps
  scale = max(float(np.abs(expected).max(initial=0)), 1.0)
  np.testing.assert_allclose(actual, expected, rtol=16 * eps, atol=16 * eps * scale)


def _on_the_chip(dtype) -> bool:
  """Whether the `dtype` case runs on the chip where revax runs on a TPU: float32 and complex64
  do (?gees by send/recv); float64 and complex128 run on the CPU device beside it (XLA:TPU
  emulates float64 -- FLOAT64_EMULATION: the factors are not LAPACK's bits after the round trip --
  and refuses complex128 -- NO_COMPLEX128; sqrtm, funm and rsf2csf of float64 compute in
  complex128)."""
  return np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.complex128))


@pytest.fixture(autouse=True)
def _x64(request):
  dtype = getattr(request.node, "callspec", None) and request.node.callspec.params.get("dtype")
  device = on_the_cpu_device() if ON_TPU and dtype is not None and not _on_the_chip(dtype) \
      else contextlib.nullcontext()
  with revax.enable_x64(True), jax.enable_x64(True), device:
    yield


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (2, 3, 3), (1, 1), (0, 0), (2, 0, 0)])
def test_lax_schur(dtype, shape):
  a = _matrix(shape, dtype)
  for vectors in (True, False):
    expected = jax.lax.linalg.schur(a, compute_schur_vectors=vectors)
    for fn in (revax.lax.linalg.schur, revax.jit(revax.lax.linalg.schur,
                                                 static_argnames="compute_schur_vectors")):
      got = fn(a, compute_schur_vectors=vectors)
      assert len(got) == len(expected)
      for g, e in zip(got, expected):
        _same(g, e)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("output", ["real", "complex"])
def test_scipy_schur(dtype, output):
  a = _matrix((6, 6), dtype, seed=1)
  expected = jsl.schur(a, output)
  for got in (rsl.schur(a, output), revax.jit(rsl.schur, static_argnums=1)(a, output)):
    _same(got[0], expected[0])
    _same(got[1], expected[1])
  t, z = (np.asarray(x) for x in rsl.schur(a, output))
  np.testing.assert_allclose(z @ t @ z.conj().T, a, atol=1e-4 if a.dtype.itemsize <= 8 else 1e-10)


def test_vmap_and_nan_on_failure():
  a = _matrix((3, 4, 4), np.float32)
  expected = jax.vmap(jsl.schur)(a)
  got = revax.vmap(rsl.schur)(a)
  _same(got[0], expected[0])
  _same(got[1], expected[1])
  for dtype in DTYPES:  # ?gees fails: NaN (real and imaginary parts), eager and jitted
    bad = np.full((3, 3), np.nan, dtype)
    device = contextlib.nullcontext() if _on_the_chip(dtype) else on_the_cpu_device()
    with device:
      _schur_and_eig_of_nan(bad)


def _schur_and_eig_of_nan(bad):
  for fn in (rsl.schur, revax.jit(rsl.schur)):
    for g, e in zip(fn(bad), jsl.schur(bad)):
      _same(g, e)
  for fn in (revax.lax.linalg.eig, revax.jit(revax.lax.linalg.eig)):
    for g, e in zip(fn(bad), jax.lax.linalg.eig(bad)):
      _same(g, e)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rsf2csf(dtype):
  a = _matrix((2, 5, 5), dtype, seed=2)
  t, z = jsl.schur(a)
  expected = jsl.rsf2csf(t, z)
  got = rsl.rsf2csf(np.asarray(t), np.asarray(z))
  _close(got[0], expected[0])  # (its Givens rotations are applied by matrix products)
  _close(got[1], expected[1])
  one = np.ones((1, 1), dtype)
  for g, e in zip(rsl.rsf2csf(one, one), jsl.rsf2csf(one, one)):
    _same(g, e)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sqrtm(dtype):
  a = _matrix((5, 5), dtype, seed=3)
  expected = jsl.sqrtm(a)
  _close(rsl.sqrtm(a), expected)
  _close(revax.jit(rsl.sqrtm)(a), expected)
  x = np.asarray(rsl.sqrtm(a))
  np.testing.assert_allclose(x @ x, a, atol=1e-3 if a.dtype.itemsize <= 8 else 1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_funm(dtype):
  a = _matrix((4, 4), dtype, seed=4)
  _close(rsl.funm(a, rnp.sin), jsl.funm(a, jnp.sin))
  f, err = rsl.funm(a, rnp.exp, disp=False)
  jf, jerr = jsl.funm(a, jnp.exp, disp=False)
  _close(f, jf)
  np.testing.assert_allclose(err, jerr, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(f), np.asarray(jsl.expm(a.astype(f.dtype))),
                             rtol=1e-3, atol=1e-3)


def test_errors_match_jax():
  for lib, slib in ((revax.lax.linalg, rsl), (jax.lax.linalg, jsl)):
    with pytest.raises(ValueError):
      slib.schur(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError):
      slib.schur(np.eye(2, dtype=np.float32), output="bad")
    with pytest.raises(TypeError):
      lib.schur(np.eye(2, dtype=np.int32))
    with pytest.raises(NotImplementedError):
      lib.schur(np.eye(2, dtype=np.float32), sort_eig_vals=True)
    with pytest.raises(NotImplementedError):
      slib.sqrtm(np.eye(2, dtype=np.float32), blocksize=2)
    with pytest.raises(ValueError, match="square"):
      slib.funm(np.ones((2, 3), np.float32), np.sin)
    with pytest.raises(ValueError, match="must be square"):
      slib.rsf2csf(np.ones((2, 3)), np.eye(3))
    with pytest.raises(ValueError, match="shapes must match"):
      slib.rsf2csf(np.eye(2), np.eye(3))


def test_no_derivative_as_in_jax():
  a = _matrix((3, 3), np.float32)
  for grad, slib, np_ in ((revax.grad, rsl, rnp), (jax.grad, jsl, jnp)):
    with pytest.raises(NotImplementedError):
      grad(lambda x: slib.schur(x)[0].sum())(a)
    with pytest.raises(NotImplementedError):
      grad(lambda x: slib.sqrtm(x).real.sum())(a)
