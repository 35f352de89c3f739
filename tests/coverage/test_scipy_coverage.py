"""Coverage of jax.scipy's special, stats (each distribution module), integrate, optimize,
ndimage and cluster.vq by revax.scipy: every public name present, or excluded below with a reason. (linalg,
fft and signal have coverage tests of their own.)"""
import importlib

import pytest

from tests.coverage.names import missing_names

SPECIAL_EXCLUSIONS = {}

STATS_EXCLUSIONS = {}

MODULE_EXCLUSIONS = {}
DISTRIBUTIONS = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet",
                 "expon", "gamma", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace",
                 "logistic", "multinomial", "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t",
                 "truncnorm", "uniform", "vonmises", "wrapcauchy"]


def test_special_coverage():
  assert missing_names("jax.scipy.special", "revax.scipy.special", SPECIAL_EXCLUSIONS) == []


def test_stats_coverage():
  assert missing_names("jax.scipy.stats", "revax.scipy.stats", STATS_EXCLUSIONS) == []


def test_every_distribution_module_is_covered():
  import jax.scipy.stats as jst
  jax_modules = {n for n in dir(jst) if not n.startswith("_")
                 and type(getattr(jst, n)).__name__ == "module"}
  assert jax_modules - set(MODULE_EXCLUSIONS) == set(DISTRIBUTIONS)


@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_distribution_module_coverage(name):
  importlib.import_module(f"revax.scipy.stats.{name}")
  assert missing_names(f"jax.scipy.stats.{name}", f"revax.scipy.stats.{name}", {}) == []


@pytest.mark.parametrize("module", ["integrate", "optimize", "ndimage", "cluster.vq",
                                    "spatial.transform", "interpolate"])
def test_small_module_coverage(module):
  assert missing_names(f"jax.scipy.{module}", f"revax.scipy.{module}", {}) == []


def test_sparse_linalg_coverage():
  assert missing_names("jax.scipy.sparse.linalg", "revax.scipy.sparse.linalg", {}) == []
