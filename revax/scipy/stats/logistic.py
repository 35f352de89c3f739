"""revax.scipy.stats.logistic: as jax.scipy.stats.logistic."""
from revax._src.scipy.stats.logistic import cdf as cdf
from revax._src.scipy.stats.logistic import isf as isf
from revax._src.scipy.stats.logistic import logpdf as logpdf
from revax._src.scipy.stats.logistic import pdf as pdf
from revax._src.scipy.stats.logistic import ppf as ppf
from revax._src.scipy.stats.logistic import sf as sf
