"""revax.scipy.stats.cauchy: as jax.scipy.stats.cauchy."""
from revax._src.scipy.stats.cauchy import cdf as cdf
from revax._src.scipy.stats.cauchy import isf as isf
from revax._src.scipy.stats.cauchy import logcdf as logcdf
from revax._src.scipy.stats.cauchy import logpdf as logpdf
from revax._src.scipy.stats.cauchy import logsf as logsf
from revax._src.scipy.stats.cauchy import pdf as pdf
from revax._src.scipy.stats.cauchy import ppf as ppf
from revax._src.scipy.stats.cauchy import sf as sf
