"""revax.custom_batching: functions with their own vmap rule (as jax.custom_batching)."""
from revax._src.custom_batching import custom_vmap as custom_vmap
from revax._src.custom_batching import sequential_vmap as sequential_vmap
