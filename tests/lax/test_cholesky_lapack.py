"""Jitted cholesky through LAPACK ?potrf (revax's FFI handler, revax/_src/runtime/_lapack.c) on
CPU: the custom call is in the lowered program, values match NumPy and JAX for batches of every
supported dtype (lower triangle only, zeros above), a matrix that is not positive definite (or
holds a NaN) gives NaN where JAX does while the rest of its batch is computed, empty matrices,
derivatives through jit match JAX's, and the blocked lax algorithm still serves without it."""
import numpy as np
import pytest

import revax
import revax.lax.linalg as lin
import revax.numpy as rnp
from revax._src.runtime import lapack

jax = pytest.importorskip("jax")
jlin = jax.lax.linalg

try:
  from revax._src.runtime import _lapack  # noqa: F401
  BUILT = True
except ImportError:
  BUILT = False
needs_lapack = pytest.mark.skipif(not BUILT, reason="the _lapack C extension is not built")

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 1e-4, np.float64: 1e-10, np.complex64: 1e-4, np.complex128: 1e-10}


def _spd(shape, dtype, seed=0):
  """Hermitian positive-definite matrices of `shape` (..., n, n)."""
  rng = np.random.default_rng(seed)
  a = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    a = a + 1j * rng.standard_normal(shape)
  a = a.astype(dtype)
  n = shape[-1]
  return (a @ np.swapaxes(a, -1, -2).conj() + n * np.eye(n)).astype(dtype)


@needs_lapack
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_values_match_numpy_and_jax(x64, dtype):
  assert lapack.target("potrf", dtype) == "revax_lapack_potrf"
  a = _spd((3, 6, 6), dtype)
  f = revax.jit(lambda x: lin.cholesky(x))
  assert "revax_lapack_potrf" in f.lower(a).as_text()
  got = np.asarray(f(a))
  assert got.dtype == dtype
  tol = TOL[dtype]
  np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=tol, atol=tol)
  np.testing.assert_allclose(got, np.asarray(jax.jit(jlin.cholesky)(a)), rtol=tol, atol=tol)
  assert not np.triu(got, 1).any()
  # symmetrize_input=False reads only the lower triangle: garbage above changes nothing
  garbage = a + np.triu(np.full(a.shape, 7, dtype), 1)
  got = revax.jit(lambda x: lin.cholesky(x, symmetrize_input=False))(garbage)
  np.testing.assert_allclose(np.asarray(got), np.linalg.cholesky(a), rtol=tol, atol=tol)


@needs_lapack
def test_failures_and_empty_matrices_match_jax():
  a = _spd((3, 4, 4), np.float32, 1)
  a[1] = -a[1]  # not positive definite
  a[2, 0, 0] = np.nan
  got = np.asarray(revax.jit(rnp.linalg.cholesky)(a))
  want = np.asarray(jax.jit(jax.numpy.linalg.cholesky)(a))
  assert np.isnan(got[1][np.tril_indices(4)]).all()  # not positive definite: NaN, zeros above
  # a NaN spreads through the lower triangle only, zeros stay above (no NaN check, as jaxlib)
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # (NaNs compare equal here)
  eager = np.asarray(rnp.linalg.cholesky(a))  # NumPy's LAPACK: the same NaNs
  np.testing.assert_array_equal(np.isnan(eager), np.isnan(want))
  for shape in [(0, 0), (2, 0, 0)]:
    z = np.zeros(shape, np.float32)
    got, want = revax.jit(lin.cholesky)(z), jax.jit(jlin.cholesky)(z)
    assert got.shape == want.shape and got.dtype == want.dtype


@needs_lapack
def test_derivatives_through_jit_match_jax():
  a, t = _spd((2, 5, 5), np.float32, 2), _spd((2, 5, 5), np.float32, 3)
  got = revax.jit(lambda x, s: revax.jvp(lin.cholesky, (x,), (s,)))(a, t)
  want = jax.jit(lambda x, s: jax.jvp(jlin.cholesky, (x,), (s,)))(a, t)
  for g, w in zip(got, want, strict=True):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-3, atol=1e-4)
  loss = lambda m, x: (m.cholesky(x) ** 2).sum()
  np.testing.assert_allclose(np.asarray(revax.jit(revax.grad(lambda x: loss(lin, x)))(a)),
                             np.asarray(jax.jit(jax.grad(lambda x: loss(jlin, x)))(a)),
                             rtol=1e-3, atol=1e-4)
  solve = lambda m, x: m.cho_solve(m.cho_factor(x), np.ones((5,), np.float32))
  np.testing.assert_allclose(
      np.asarray(revax.jit(lambda x: solve(revax.scipy.linalg, x))(a[0])),
      np.asarray(jax.jit(lambda x: solve(jax.scipy.linalg, x))(a[0])), rtol=1e-4, atol=1e-5)


def test_fallback_in_process(monkeypatch):
  """With no handler available the lowering is the blocked lax algorithm (XLA's own cholesky of
  each block), and its results are right, large and small."""
  monkeypatch.setattr(lapack, "_state", {})
  for n in (5, 70):
    a = _spd((2, n, n), np.float32, 4)
    f = revax.jit(lin.cholesky)
    assert "custom_call" not in f.lower(a).as_text()
    np.testing.assert_allclose(np.asarray(f(a)), np.linalg.cholesky(a), rtol=1e-4, atol=1e-4)
