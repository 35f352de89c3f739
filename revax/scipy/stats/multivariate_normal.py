"""revax.scipy.stats.multivariate_normal: as jax.scipy.stats.multivariate_normal."""
from revax._src.scipy.stats.multivariate_normal import logpdf as logpdf
from revax._src.scipy.stats.multivariate_normal import pdf as pdf
