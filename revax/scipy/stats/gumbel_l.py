"""revax.scipy.stats.gumbel_l: as jax.scipy.stats.gumbel_l."""
from revax._src.scipy.stats.gumbel_l import cdf as cdf
from revax._src.scipy.stats.gumbel_l import logcdf as logcdf
from revax._src.scipy.stats.gumbel_l import logpdf as logpdf
from revax._src.scipy.stats.gumbel_l import logsf as logsf
from revax._src.scipy.stats.gumbel_l import pdf as pdf
from revax._src.scipy.stats.gumbel_l import ppf as ppf
from revax._src.scipy.stats.gumbel_l import sf as sf
