"""revax.scipy.stats.truncnorm: as jax.scipy.stats.truncnorm."""
from revax._src.scipy.stats.truncnorm import cdf as cdf
from revax._src.scipy.stats.truncnorm import logcdf as logcdf
from revax._src.scipy.stats.truncnorm import logpdf as logpdf
from revax._src.scipy.stats.truncnorm import logsf as logsf
from revax._src.scipy.stats.truncnorm import pdf as pdf
from revax._src.scipy.stats.truncnorm import sf as sf
