"""revax.scipy.ndimage: as jax.scipy.ndimage."""
from revax._src.scipy.ndimage import map_coordinates as map_coordinates
