"""`jax._src.dispatch`: equinox registers `wait_for_tokens` with atexit (and unregisters it) to
flush ordered effects at exit; revax's equivalent is `effects_barrier`."""
from revax._src.lax.callbacks import effects_barrier as wait_for_tokens
