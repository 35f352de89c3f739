"""revax.scipy.special: special functions, as in jax.scipy.special."""
from revax._src.nn.functions import logsumexp as logsumexp
