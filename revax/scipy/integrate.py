"""revax.scipy.integrate: as jax.scipy.integrate."""
from revax._src.scipy.integrate import trapezoid as trapezoid
