"""`jax._src.state`: mutable array references (flax's nnx imports their abstract type)."""
