"""revax.interpreters: rule tables for libraries that define primitives (jax.interpreters)."""
