"""revax.scipy.stats.gumbel_r: as jax.scipy.stats.gumbel_r."""
from revax._src.scipy.stats.gumbel_r import cdf as cdf
from revax._src.scipy.stats.gumbel_r import logcdf as logcdf
from revax._src.scipy.stats.gumbel_r import logpdf as logpdf
from revax._src.scipy.stats.gumbel_r import logsf as logsf
from revax._src.scipy.stats.gumbel_r import pdf as pdf
from revax._src.scipy.stats.gumbel_r import ppf as ppf
from revax._src.scipy.stats.gumbel_r import sf as sf
