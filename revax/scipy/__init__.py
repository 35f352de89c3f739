"""revax.scipy: SciPy functions on revax arrays, as in jax.scipy (so far: special.logsumexp)."""
from revax.scipy import special as special
from revax.scipy import linalg as linalg
