"""revax.scipy.stats.chi2: as jax.scipy.stats.chi2."""
from revax._src.scipy.stats.chi2 import cdf as cdf
from revax._src.scipy.stats.chi2 import logcdf as logcdf
from revax._src.scipy.stats.chi2 import logpdf as logpdf
from revax._src.scipy.stats.chi2 import logsf as logsf
from revax._src.scipy.stats.chi2 import pdf as pdf
from revax._src.scipy.stats.chi2 import sf as sf
