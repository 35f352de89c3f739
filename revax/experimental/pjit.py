"""`pjit` (JAX's `jax.experimental.pjit`): a deprecated attribute, read through `__getattr__`
with a DeprecationWarning as in JAX."""
from revax._src.experimental.pjit import module_getattr as __getattr__  # noqa: F401
