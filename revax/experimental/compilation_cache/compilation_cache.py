"""Persistent compilation cache settings (JAX's
`jax.experimental.compilation_cache.compilation_cache`)."""
from revax._src.experimental.compilation_cache import reset_cache as reset_cache
from revax._src.experimental.compilation_cache import set_cache_dir as set_cache_dir
