"""`jax.experimental.colocated_python.func`: in JAX, how colocated functions are serialized and
dispatched to a remote Python process. revax runs colocated functions in its own process
(`revax.experimental.colocated_python`), so it has none of this module's internals; the module
exists so that code importing it (orbax's checkpointing imports it at import time, and uses it
only on Pathways) imports."""
