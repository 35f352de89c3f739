"""revax.scipy.stats.expon: as jax.scipy.stats.expon."""
from revax._src.scipy.stats.expon import cdf as cdf
from revax._src.scipy.stats.expon import logcdf as logcdf
from revax._src.scipy.stats.expon import logpdf as logpdf
from revax._src.scipy.stats.expon import logsf as logsf
from revax._src.scipy.stats.expon import pdf as pdf
from revax._src.scipy.stats.expon import ppf as ppf
from revax._src.scipy.stats.expon import sf as sf
