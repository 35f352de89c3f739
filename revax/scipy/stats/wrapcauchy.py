"""revax.scipy.stats.wrapcauchy: as jax.scipy.stats.wrapcauchy."""
from revax._src.scipy.stats.wrapcauchy import logpdf as logpdf
from revax._src.scipy.stats.wrapcauchy import pdf as pdf
