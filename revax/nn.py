"""revax.nn: neural-network building blocks, as in jax.nn (activations, pooling, initializers)."""
from revax._src.nn.pooling import avg_pool as avg_pool
from revax._src.nn.pooling import max_pool as max_pool
