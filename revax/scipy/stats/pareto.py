"""revax.scipy.stats.pareto: as jax.scipy.stats.pareto."""
from revax._src.scipy.stats.pareto import cdf as cdf
from revax._src.scipy.stats.pareto import logcdf as logcdf
from revax._src.scipy.stats.pareto import logpdf as logpdf
from revax._src.scipy.stats.pareto import logsf as logsf
from revax._src.scipy.stats.pareto import pdf as pdf
from revax._src.scipy.stats.pareto import ppf as ppf
from revax._src.scipy.stats.pareto import sf as sf
