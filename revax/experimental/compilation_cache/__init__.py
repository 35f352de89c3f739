"""The persistent compilation cache (JAX's `jax.experimental.compilation_cache`)."""
