"""gaussian_kde.resample against jax.scipy.stats: the same keys give the same draws (JAX's choice
bits; the kernel noise through revax's cholesky, equal to rounding), and the draws follow the
estimated density (Kolmogorov-Smirnov against the kernel mixture's CDF)."""
import jax
import numpy as np
import pytest
import scipy.stats

import revax

DATA = np.random.RandomState(0).randn(2, 30).astype(np.float32)
WEIGHTS = np.random.RandomState(1).rand(30).astype(np.float32)


@pytest.mark.parametrize("data,kw,shape", [
    (DATA, {}, (5,)), (DATA[0], {"weights": WEIGHTS}, (4,)), (DATA, {}, ()),
    (DATA[0], {}, (2, 2))])
def test_resample_equals_jax(data, kw, shape):
  r = revax.scipy.stats.gaussian_kde(data, **kw).resample(revax.random.PRNGKey(3), shape)
  j = jax.scipy.stats.gaussian_kde(data, **kw).resample(jax.random.PRNGKey(3), shape)
  assert r.shape == j.shape and r.dtype == j.dtype
  np.testing.assert_allclose(np.asarray(r), np.asarray(j), rtol=1e-5, atol=1e-5)


def test_resample_follows_the_density_and_jits():
  kde = revax.scipy.stats.gaussian_kde(DATA[0], weights=WEIGHTS)
  x = np.asarray(kde.resample(revax.random.PRNGKey(0), (3000,)))[0]
  sigma = np.sqrt(float(np.asarray(kde.covariance)[0, 0]))
  w = WEIGHTS / WEIGHTS.sum()
  cdf = lambda t: (w * scipy.stats.norm.cdf((np.asarray(t)[..., None] - DATA[0]) / sigma)).sum(-1)
  assert scipy.stats.kstest(x, cdf).pvalue > 1e-3
  jitted = revax.jit(lambda k, d: revax.scipy.stats.gaussian_kde(d).resample(k, (3,)))
  np.testing.assert_allclose(jitted(revax.random.PRNGKey(1), DATA),
                             revax.scipy.stats.gaussian_kde(DATA).resample(
                                 revax.random.PRNGKey(1), (3,)), atol=1e-6)
