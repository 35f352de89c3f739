"""revax.scipy.stats.vonmises: as jax.scipy.stats.vonmises."""
from revax._src.scipy.stats.vonmises import logpdf as logpdf
from revax._src.scipy.stats.vonmises import pdf as pdf
