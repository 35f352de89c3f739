"""revax.scipy.stats.gamma: as jax.scipy.stats.gamma."""
from revax._src.scipy.stats.gamma import cdf as cdf
from revax._src.scipy.stats.gamma import logcdf as logcdf
from revax._src.scipy.stats.gamma import logpdf as logpdf
from revax._src.scipy.stats.gamma import logsf as logsf
from revax._src.scipy.stats.gamma import pdf as pdf
from revax._src.scipy.stats.gamma import sf as sf
