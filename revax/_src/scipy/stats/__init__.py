"""Implementations behind revax.scipy.stats: one module per distribution, as in jax.scipy.stats."""
