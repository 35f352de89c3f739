"""revax.scipy.stats.dirichlet: as jax.scipy.stats.dirichlet."""
from revax._src.scipy.stats.dirichlet import logpdf as logpdf
from revax._src.scipy.stats.dirichlet import pdf as pdf
