"""revax.nn internals: activation functions, pooling and initializers, built on revax.lax."""
