"""revax.scipy.stats.nbinom: as jax.scipy.stats.nbinom."""
from revax._src.scipy.stats.nbinom import logpmf as logpmf
from revax._src.scipy.stats.nbinom import pmf as pmf
