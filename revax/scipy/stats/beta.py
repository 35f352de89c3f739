"""revax.scipy.stats.beta: as jax.scipy.stats.beta."""
from revax._src.scipy.stats.beta import cdf as cdf
from revax._src.scipy.stats.beta import logcdf as logcdf
from revax._src.scipy.stats.beta import logpdf as logpdf
from revax._src.scipy.stats.beta import logsf as logsf
from revax._src.scipy.stats.beta import pdf as pdf
from revax._src.scipy.stats.beta import sf as sf
