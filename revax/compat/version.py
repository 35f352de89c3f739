"""`jax.version` in the jax-compatibility mode: the jax release whose API revax follows (flax
compares `jax.version.__version_info__`)."""
from revax.compat._finder import JAX_VERSION as __version__

__version_info__ = tuple(int(p) for p in __version__.split("."))
_version = __version__
