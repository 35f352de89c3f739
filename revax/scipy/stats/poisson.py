"""revax.scipy.stats.poisson: as jax.scipy.stats.poisson."""
from revax._src.scipy.stats.poisson import cdf as cdf
from revax._src.scipy.stats.poisson import entropy as entropy
from revax._src.scipy.stats.poisson import logpmf as logpmf
from revax._src.scipy.stats.poisson import pmf as pmf
