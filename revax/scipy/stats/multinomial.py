"""revax.scipy.stats.multinomial: as jax.scipy.stats.multinomial."""
from revax._src.scipy.stats.multinomial import logpmf as logpmf
from revax._src.scipy.stats.multinomial import pmf as pmf
