"""revax.scipy.stats.norm: as jax.scipy.stats.norm."""
from revax._src.scipy.stats.norm import cdf as cdf
from revax._src.scipy.stats.norm import isf as isf
from revax._src.scipy.stats.norm import logcdf as logcdf
from revax._src.scipy.stats.norm import logpdf as logpdf
from revax._src.scipy.stats.norm import logsf as logsf
from revax._src.scipy.stats.norm import pdf as pdf
from revax._src.scipy.stats.norm import ppf as ppf
from revax._src.scipy.stats.norm import sf as sf
