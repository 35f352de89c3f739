"""revax.scipy.cluster.vq: as jax.scipy.cluster.vq."""
from revax._src.scipy.cluster_vq import vq as vq
