"""revax.scipy.interpolate: as jax.scipy.interpolate."""
from revax._src.scipy.interpolate import RegularGridInterpolator as RegularGridInterpolator
