"""revax.scipy.stats.binom: as jax.scipy.stats.binom."""
from revax._src.scipy.stats.binom import logpmf as logpmf
from revax._src.scipy.stats.binom import pmf as pmf
