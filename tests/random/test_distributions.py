"""The samplers of revax.random beyond uniform/normal/gamma: the same values as jax.random for
the same keys (bit for bit where JAX's algorithm is deterministic, to float rounding where it
goes through gamma draws, whose rejection sampler rounds differently), and a distribution test
(Kolmogorov-Smirnov against SciPy, or moments for discrete ones) for each."""
import jax
import numpy as np
import pytest
import scipy.stats

import revax
from tests import platform_tolerances
from revax import random as rr

N = 4000
BITWISE = [
    ("laplace", ((7,),), {}), ("logistic", ((7,),), {}), ("cauchy", ((7,),), {}),
    ("gumbel", ((7,),), {}), ("gumbel", ((7,),), {"mode": "high"}), ("rademacher", ((7,),), {}),
    ("pareto", (2.0, (7,)), {}), ("lognormal", (0.5, (7,)), {}),
    ("weibull_min", (1.5, 2.0, (7,)), {}), ("triangular", (0.0, 0.3, 1.0, (7,)), {}),
    ("rayleigh", (2.0, (7,)), {}), ("wald", (1.5, (7,)), {}), ("maxwell", ((2, 3),), {}),
    ("double_sided_maxwell", (0.5, 2.0, (7,)), {}), ("geometric", (0.3, (7,)), {}),
    ("poisson", (np.array([0.5, 3.0, 12.0, 50.0, 0.0], np.float32),), {}),
    ("laplace", ((3,), np.float16), {}),
    ("binomial", (np.array([3.0, 40.0, 100.0, 7.0, -1.0, np.inf]),
                  np.array([0.2, 0.5, 0.9, 0.95, 0.3, 0.3], np.float32)), {}),
]
CLOSE = [  # through gamma draws (f and generalized_normal reuse these pieces: KS-tested below)
    ("t", (3.0, (7,)), {}), ("chisquare", (3.0, (7,)), {}), ("ball", (3, 2, (4,)), {}),
]


def _both(name, args, kw, seed=5):
  r = getattr(rr, name)(rr.PRNGKey(seed), *args, **kw)
  j = getattr(jax.random, name)(jax.random.PRNGKey(seed), *args, **kw)
  return np.asarray(r), np.asarray(j)


@pytest.mark.parametrize("name,args,kw", BITWISE, ids=lambda x: str(x))
def test_same_bits_as_jax(name, args, kw):
  if platform_tolerances.ON_TPU and name in ("poisson", "binomial", "geometric"):
    pytest.skip("TPU: integer draws decided through log/lgamma, whose "
                + platform_tolerances.TRANSCENDENTAL)
  r, j = _both(name, args, kw)
  assert r.dtype == j.dtype and r.shape == j.shape
  platform_tolerances.assert_same_values(r, j)  # NaN positions equal too


@pytest.mark.parametrize("name,args,kw", CLOSE, ids=lambda x: str(x))
def test_same_values_as_jax_to_rounding(name, args, kw):
  r, j = _both(name, args, kw)
  assert r.dtype == j.dtype and r.shape == j.shape
  np.testing.assert_allclose(r, j, rtol=2e-5, atol=1e-6)


def test_typed_keys_jit_and_vmap():
  k = rr.key(3)
  x = rr.laplace(k, (5,))
  same = platform_tolerances.assert_same_values  # bit for bit but on a TPU (its log)
  same(x, jax.random.laplace(jax.random.key(3), (5,)))
  same(revax.jit(lambda k: rr.cauchy(k, (5,)))(k), rr.cauchy(k, (5,)))
  keys = rr.split(rr.PRNGKey(0), 3)
  out = revax.vmap(lambda k: rr.logistic(k, (2,)))(keys)
  ref = jax.vmap(lambda k: jax.random.logistic(k, (2,)))(jax.random.split(jax.random.PRNGKey(0), 3))
  same(out, ref)
  assert rr.clone(k) is k and rr.key_dtype() == k.dtype


KS = [  # (sampler call, scipy frozen distribution)
    (lambda k: rr.laplace(k, (N,)), scipy.stats.laplace()),
    (lambda k: rr.logistic(k, (N,)), scipy.stats.logistic()),
    (lambda k: rr.cauchy(k, (N,)), scipy.stats.cauchy()),
    (lambda k: rr.gumbel(k, (N,)), scipy.stats.gumbel_r()),
    (lambda k: rr.pareto(k, 3.0, (N,)), scipy.stats.pareto(3.0)),
    (lambda k: rr.lognormal(k, 0.5, (N,)), scipy.stats.lognorm(0.5)),
    (lambda k: rr.weibull_min(k, 2.0, 1.5, (N,)), scipy.stats.weibull_min(1.5, scale=2.0)),
    (lambda k: rr.triangular(k, 0.0, 0.3, 1.0, (N,)), scipy.stats.triang(0.3)),
    (lambda k: rr.rayleigh(k, 2.0, (N,)), scipy.stats.rayleigh(scale=2.0)),
    (lambda k: rr.wald(k, 1.0, (N,)), scipy.stats.wald()),
    (lambda k: rr.maxwell(k, (N,)), scipy.stats.maxwell()),
    (lambda k: abs(rr.double_sided_maxwell(k, 0.0, 1.0, (N,))), scipy.stats.maxwell()),
    (lambda k: rr.t(k, 4.0, (N,)), scipy.stats.t(4.0)),
    (lambda k: rr.chisquare(k, 3.0, (N,)), scipy.stats.chi2(3.0)),
    (lambda k: rr.f(k, 4.0, 6.0, (N,)), scipy.stats.f(4.0, 6.0)),
    (lambda k: rr.generalized_normal(k, 1.5, (N,)), scipy.stats.gennorm(1.5)),
]


@pytest.mark.parametrize("i", range(len(KS)))
def test_kolmogorov_smirnov(i):
  sample, dist = KS[i]
  x = np.asarray(sample(rr.PRNGKey(11)), np.float64)
  assert scipy.stats.kstest(x, dist.cdf).pvalue > 1e-3


def test_discrete_and_ball_moments():
  r = np.asarray(rr.rademacher(rr.PRNGKey(1), (N,)))
  assert set(np.unique(r)) == {-1, 1} and abs(r.mean()) < 0.06
  g = np.asarray(rr.geometric(rr.PRNGKey(1), 0.25, (N,)))
  assert g.min() >= 1 and abs(g.mean() - 4.0) < 0.25 and abs(g.var() - 12.0) < 1.5
  for lam in (3.0, 25.0):
    p = np.asarray(rr.poisson(rr.PRNGKey(2), lam, (N,)))
    assert abs(p.mean() - lam) < 4 * np.sqrt(lam / N) and abs(p.var() / lam - 1) < 0.12
  for n, p in ((5.0, 0.3), (60.0, 0.7)):  # inversion and BTRS branches
    x = np.asarray(rr.binomial(rr.PRNGKey(4), n, p, (N,)))
    assert abs(x.mean() - n * p) < 4 * np.sqrt(n * p * (1 - p) / N)
    assert abs(x.var() / (n * p * (1 - p)) - 1) < 0.12
  b = np.asarray(rr.ball(rr.PRNGKey(3), 3, 2, (N,)))
  radius = np.linalg.norm(b, axis=-1)
  assert radius.max() <= 1.0 and scipy.stats.kstest(radius ** 3, "uniform").pvalue > 1e-3


def test_errors_match_jax():
  with pytest.raises(ValueError, match="float dtype"):
    rr.laplace(rr.PRNGKey(0), (2,), np.int32)
  with pytest.raises(ValueError, match="int dtype"):
    rr.geometric(rr.PRNGKey(0), 0.5, (2,), np.float32)
  with pytest.raises(ValueError, match="broadcast"):
    rr.pareto(rr.PRNGKey(0), np.ones(3), (2,))
  with pytest.raises(TypeError):
    rr.laplace(np.zeros(3, np.float32), (2,))
