"""revax.nn: neural-network building blocks, as in jax.nn (activations, pooling, initializers)."""
