"""`shard_map` (JAX's `jax.experimental.shard_map`): a deprecated attribute, read through
`__getattr__` with a DeprecationWarning as in JAX."""
from revax._src.experimental.shard_map import module_getattr as __getattr__  # noqa: F401
