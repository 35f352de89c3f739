"""revax internals of the example libraries (optimizers), as jax.example_libraries."""
