"""revax experimental APIs (jax.experimental): one module per feature."""
