"""revax.scipy.sparse: as jax.scipy.sparse."""
from revax.scipy.sparse import linalg as linalg
