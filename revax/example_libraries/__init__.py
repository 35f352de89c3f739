"""revax.example_libraries: small libraries for examples (optimizers), as jax.example_libraries."""
