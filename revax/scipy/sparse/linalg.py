"""revax.scipy.sparse.linalg: Krylov solvers, as jax.scipy.sparse.linalg."""
from revax._src.scipy.sparse_linalg import bicgstab as bicgstab
from revax._src.scipy.sparse_linalg import cg as cg
from revax._src.scipy.sparse_linalg import gmres as gmres
