"""revax.scipy.stats.uniform: as jax.scipy.stats.uniform."""
from revax._src.scipy.stats.uniform import cdf as cdf
from revax._src.scipy.stats.uniform import logpdf as logpdf
from revax._src.scipy.stats.uniform import pdf as pdf
from revax._src.scipy.stats.uniform import ppf as ppf
