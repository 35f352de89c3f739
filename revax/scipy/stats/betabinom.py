"""revax.scipy.stats.betabinom: as jax.scipy.stats.betabinom."""
from revax._src.scipy.stats.betabinom import logpmf as logpmf
from revax._src.scipy.stats.betabinom import pmf as pmf
