"""revax.scipy.stats.gennorm: as jax.scipy.stats.gennorm."""
from revax._src.scipy.stats.gennorm import cdf as cdf
from revax._src.scipy.stats.gennorm import logpdf as logpdf
from revax._src.scipy.stats.gennorm import pdf as pdf
