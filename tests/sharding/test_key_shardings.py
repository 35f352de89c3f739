"""Typed PRNG key arrays report where they live as jax 0.10.2's do (keys_child.py, 4 CPU
devices): `.sharding` (the key data's, over the keys' dimensions), `.is_fully_replicated`, and
their type's split (`key<fry>[8@a]`)."""
from tests.sharding.children import run_child


def test_key_shardings_match_jax():
  jax_t, revax_t = (run_child("keys_child.py", "KEYS_DONE", args=(lib,)).stdout.splitlines()
                    for lib in ("jax", "revax"))
  assert jax_t == revax_t
