"""multivariate_normal, orthogonal and multinomial of revax.random against jax.random.

multinomial is JAX's algorithm on revax's binomial (bit-equal to JAX's), so the same key gives the
same counts bit for bit. multivariate_normal and orthogonal use JAX's normal draws but revax's
own factorizations: cholesky and QR (made unique by the sign correction) equal JAX's to float
rounding; eigh and SVD factors are unique only up to the signs of their columns, so those
samples are compared after whitening with JAX's factor (each coordinate is +-JAX's normal draw,
the sign fixed per column), and by their sample covariance.
"""
import jax
import numpy as np
import pytest

import revax
from tests import platform_tolerances
from revax import random as rr
from tests.gradcheck import check_grads

_A = np.random.RandomState(0).randn(3, 3).astype(np.float32)
COV = _A @ _A.T + np.eye(3, dtype=np.float32)  # distinct eigenvalues
MEAN = np.array([1.0, -2.0, 0.5], np.float32)


def _both(name, *args, seed=3, **kw):
  r = getattr(rr, name)(rr.PRNGKey(seed), *args, **kw)
  j = getattr(jax.random, name)(jax.random.PRNGKey(seed), *args, **kw)
  assert r.dtype == j.dtype and r.shape == j.shape, (r.dtype, j.dtype, r.shape, j.shape)
  return np.asarray(r), np.asarray(j)


# --- multinomial ---------------------------------------------------------------------------------
_P6 = np.random.RandomState(1).dirichlet(np.ones(6), 3).astype(np.float32)


@pytest.mark.parametrize("args,kw", [
    ((np.array([50.0, 300.0, 7.0]), _P6), {}),  # inversion and BTRS binomial branches
    ((np.array([10, 20]), np.array([1, 3, 0])), {"shape": (2, 3), "dtype": np.int32}),
    ((np.float16(9), np.array([[0.5, 0.0, 0.5]], np.float16)), {"shape": (2, 3)}),
], ids=["batched", "int_weights_shape", "float16"])
@platform_tolerances.skip_on_tpu("counts drawn through the binomial sampler's log/lgamma, which "
                                 + platform_tolerances.TRANSCENDENTAL)
def test_multinomial_same_bits_as_jax(args, kw):
  r, j = _both("multinomial", *args, **kw)
  np.testing.assert_array_equal(r, j)


def test_multinomial_jit_vmap_typed_keys_and_moments():
  """vmap and jit against revax's eager draws (equal to JAX's bits, above)."""
  p = np.array([0.1, 0.6, 0.3], np.float32)
  keys = rr.split(rr.PRNGKey(0), 2)
  out = revax.vmap(lambda k: rr.multinomial(k, 10.0, p))(keys)
  np.testing.assert_array_equal(out, np.stack([rr.multinomial(k, 10.0, p) for k in keys]))
  jitted = revax.jit(lambda k, n: rr.multinomial(k, n, p))(rr.key(0), 10.0)
  np.testing.assert_array_equal(jitted, rr.multinomial(rr.PRNGKey(0), 10.0, p))
  np.testing.assert_array_equal(rr.multinomial(rr.PRNGKey(0), 10.0, p, unroll=2), jitted)
  # JAX's gradient through the (integer-valued) counts is zero; so is revax's
  np.testing.assert_array_equal(revax.grad(lambda q: rr.multinomial(keys[0], 5.0, q).sum())(p),
                                np.zeros(3, np.float32))
  counts = np.asarray(rr.multinomial(rr.PRNGKey(7), 20.0, p, shape=(2000, 3)))
  assert (counts.sum(-1) == 20).all() and counts.min() >= 0
  np.testing.assert_allclose(counts.mean(0), 20 * p, atol=4 * np.sqrt(20 * 0.25 / 2000))
  np.testing.assert_allclose(counts.var(0), 20 * p * (1 - p), rtol=0.15)


def test_multinomial_errors():
  with pytest.raises(TypeError, match="multinomial"):
    rr.multinomial(rr.PRNGKey(0), 5.0, [0.3, 0.7])
  with pytest.raises(ValueError):
    rr.multinomial(rr.PRNGKey(0), np.array([10.0, 20.0]), np.ones(3) / 3, shape=(2,))
  with pytest.raises(ValueError):
    rr.multinomial(rr.PRNGKey(0), 5.0, np.array([0.3, 0.7]), shape=(4, 3))


# --- multivariate_normal -------------------------------------------------------------------------
def test_multivariate_normal_cholesky_equals_jax():
  r, j = _both("multivariate_normal", MEAN, COV, (5,))
  np.testing.assert_allclose(r, j, *platform_tolerances.tolerance(1e-5, 1e-5))
  covs = np.stack([COV, 2 * COV])
  r, j = _both("multivariate_normal", MEAN, covs, (4, 2), np.float32)  # batch of covariances
  np.testing.assert_allclose(r, j, **platform_tolerances.linalg_tol(1e-5, 2e-5))  # (Cholesky)
  r, j = _both("multivariate_normal", np.zeros(2, np.int32), np.eye(2, dtype=np.int32))
  np.testing.assert_allclose(r, j, **platform_tolerances.linalg_tol(1e-6))  # (ints: float32)


@pytest.mark.parametrize("method", ["eigh", "svd"])
def test_multivariate_normal_eigh_svd_equal_jax_up_to_factor_signs(method):
  r, j = _both("multivariate_normal", MEAN, COV, (200,), method=method)
  z = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (200, 3)))
  w, v = np.linalg.eigh(COV.astype(np.float64))
  white = (r - MEAN) @ (v / np.sqrt(w))  # coordinates in the eigenbasis, scaled to unit variance
  order = np.argsort(-w) if method == "svd" else np.arange(3)  # svd: descending
  signs = np.sign(white[0] * z[0, order])
  np.testing.assert_allclose(white, z[:, order] * signs, rtol=2e-3, atol=2e-3)
  x = np.asarray(rr.multivariate_normal(rr.PRNGKey(1), MEAN, COV, (4000,), method=method))
  np.testing.assert_allclose(np.cov(x.T), COV, atol=0.15 * np.abs(COV).max())
  np.testing.assert_allclose(x.mean(0), MEAN, atol=0.15)


def test_multivariate_normal_singular_covariance_with_eigh():
  cov = np.array([[1.0, 1.0], [1.0, 1.0]], np.float32)  # rank 1: cholesky gives NaN
  x = np.asarray(rr.multivariate_normal(rr.PRNGKey(0), np.zeros(2, np.float32), cov, (50,),
                                        method="eigh"))
  np.testing.assert_allclose(x[:, 0], x[:, 1], atol=1e-3)


def test_multivariate_normal_grad_vmap_jit():
  def loss(mod, key, method):
    return lambda mu, c: (mod.random.multivariate_normal(key, mu, c, (5,), method=method) ** 2
                          ).sum()
  gr = revax.grad(loss(revax, rr.PRNGKey(1), "cholesky"), (0, 1))(MEAN, COV)
  gj = jax.grad(loss(jax, jax.random.PRNGKey(1), "cholesky"), (0, 1))(MEAN, COV)
  for a, b in zip(gr, gj, strict=True):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
  cov64 = COV.astype(np.float64)
  check_grads(lambda c: rr.multivariate_normal(rr.PRNGKey(1), MEAN, c, method="eigh"), (cov64,),
              order=1, modes=("rev",), atol=5e-2, rtol=5e-2)
  means = np.stack([MEAN, 2 * MEAN])
  r = revax.vmap(lambda m: rr.multivariate_normal(rr.PRNGKey(0), m, COV))(means)
  j = jax.vmap(lambda m: jax.random.multivariate_normal(jax.random.PRNGKey(0), m, COV))(means)
  np.testing.assert_allclose(r, j, *platform_tolerances.tolerance(1e-5, 1e-5))
  jitted = revax.jit(lambda k, m, c: rr.multivariate_normal(k, m, c))(rr.key(4), MEAN, COV)
  np.testing.assert_allclose(jitted, jax.random.multivariate_normal(jax.random.key(4), MEAN, COV),
                             **platform_tolerances.linalg_tol(1e-5, 1e-5))


def test_multivariate_normal_errors_match_jax():
  k = rr.PRNGKey(0)
  cases = [((np.zeros(()), np.eye(2)), {}, "mean.ndim >= 1"),
           ((np.zeros(2), np.zeros(2)), {}, "cov.ndim >= 2"),
           ((np.zeros(3), np.eye(2)), {}, r"cov.shape == \(..., n, n\) for n=3"),
           ((np.zeros(2), np.eye(2)), {"method": "qr"}, "method must be one of"),
           ((np.zeros(2), np.eye(2)), {"dtype": np.int32}, "must be a float dtype"),
           ((np.zeros((3, 2)), np.eye(2)), {"shape": (2,)}, "broadcast")]
  for args, kw, msg in cases:
    with pytest.raises(ValueError, match=msg):
      rr.multivariate_normal(k, *args, **kw)
    with pytest.raises(ValueError, match=msg):
      jax.random.multivariate_normal(jax.random.PRNGKey(0), *args, **kw)


# --- orthogonal ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n,shape,dtype,m", [
    (3, (), None, None), (4, (2,), np.float32, 2), (2, (), np.float32, 5),
    (3, (2,), np.complex64, None)])
def test_orthogonal_equals_jax(n, shape, dtype, m):
  r, j = _both("orthogonal", n, shape, dtype, m)
  np.testing.assert_allclose(r, j, rtol=1e-5, atol=1e-5)
  gram = r @ np.conj(np.swapaxes(r, -1, -2)) if n <= (m or n) else \
      np.conj(np.swapaxes(r, -1, -2)) @ r
  np.testing.assert_allclose(gram, np.broadcast_to(np.eye(min(n, m or n)), gram.shape),
                             atol=1e-5)


def test_orthogonal_vmap_jit_haar_and_errors():
  keys = rr.split(rr.PRNGKey(1), 3)
  r = revax.vmap(lambda k: rr.orthogonal(k, 3))(keys)
  j = jax.vmap(lambda k: jax.random.orthogonal(k, 3))(jax.random.split(jax.random.PRNGKey(1), 3))
  np.testing.assert_allclose(r, j, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(revax.jit(lambda k: rr.orthogonal(k, 3))(keys[0]), r[0], atol=1e-6)
  # Haar measure: the trace of a uniform O(n) matrix has mean 0 and variance 1
  traces = np.trace(np.asarray(rr.orthogonal(rr.PRNGKey(5), 4, (2000,))), axis1=-2, axis2=-1)
  assert abs(traces.mean()) < 0.1 and abs(traces.var() - 1) < 0.15
  with pytest.raises(ValueError, match="float or complex dtype"):
    rr.orthogonal(rr.PRNGKey(0), 3, dtype=np.int32)
  with pytest.raises(TypeError):
    rr.orthogonal(rr.PRNGKey(0), 2.5)
  with pytest.raises(revax.errors.ConcretizationTypeError):
    revax.jit(lambda n: rr.orthogonal(rr.PRNGKey(0), n))(3)
