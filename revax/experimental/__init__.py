"""Experimental APIs (jax.experimental)."""
from revax._src.lax.callbacks import io_callback as io_callback
