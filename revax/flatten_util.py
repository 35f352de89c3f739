"""revax.flatten_util: ravel_pytree, as jax.flatten_util."""
from revax._src.flatten_util import ravel_pytree as ravel_pytree
