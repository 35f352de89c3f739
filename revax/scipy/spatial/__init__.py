"""revax.scipy.spatial: as jax.scipy.spatial."""
from revax.scipy.spatial import transform as transform
