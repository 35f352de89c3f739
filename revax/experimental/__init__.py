"""revax.experimental: APIs JAX keeps under jax.experimental."""
from revax._src.lax.callbacks import io_callback as io_callback
from revax.experimental import serialize_executable as serialize_executable
