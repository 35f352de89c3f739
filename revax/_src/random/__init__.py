"""revax.random's implementation: keys (keys.py) and samplers (samplers.py), on the PRNG
primitives of revax._src.lax.prng."""
