"""revax.scipy.stats.bernoulli: as jax.scipy.stats.bernoulli."""
from revax._src.scipy.stats.bernoulli import cdf as cdf
from revax._src.scipy.stats.bernoulli import logpmf as logpmf
from revax._src.scipy.stats.bernoulli import pmf as pmf
from revax._src.scipy.stats.bernoulli import ppf as ppf
