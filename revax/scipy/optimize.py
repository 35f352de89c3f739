"""revax.scipy.optimize: as jax.scipy.optimize."""
from revax._src.scipy.optimize import OptimizeResults as OptimizeResults
from revax._src.scipy.optimize import minimize as minimize
