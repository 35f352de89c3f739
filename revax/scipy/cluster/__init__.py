"""revax.scipy.cluster: as jax.scipy.cluster."""
from revax.scipy.cluster import vq as vq
