"""revax.flatten_util: ravel a pytree of arrays into one flat vector (as jax.flatten_util)."""
from revax._src.flatten_util import ravel_pytree as ravel_pytree
