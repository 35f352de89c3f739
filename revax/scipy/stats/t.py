"""revax.scipy.stats.t: as jax.scipy.stats.t."""
from revax._src.scipy.stats.t import logpdf as logpdf
from revax._src.scipy.stats.t import pdf as pdf
