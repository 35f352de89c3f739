"""revax.scipy.stats.laplace: as jax.scipy.stats.laplace."""
from revax._src.scipy.stats.laplace import cdf as cdf
from revax._src.scipy.stats.laplace import logpdf as logpdf
from revax._src.scipy.stats.laplace import pdf as pdf
