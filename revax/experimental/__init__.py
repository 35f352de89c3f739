"""revax.experimental: APIs JAX keeps under jax.experimental."""
from revax.experimental import serialize_executable as serialize_executable
