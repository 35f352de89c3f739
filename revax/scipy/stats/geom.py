"""revax.scipy.stats.geom: as jax.scipy.stats.geom."""
from revax._src.scipy.stats.geom import logpmf as logpmf
from revax._src.scipy.stats.geom import pmf as pmf
