"""jax.debug's sharding views against jax 0.10.2 on 4 CPU devices: inspect_array_sharding
(eagerly, under jit, vmap and grad) and visualize_array_sharding / visualize_sharding (the same
tables where `rich` is installed, the same ValueError where it is not)."""
import numpy as np
import pytest

from tests.sharding.children import run_child


def test_revax_prints_what_jax_prints():
  out = {lib: run_child("inspect_child.py", "INSPECT_DONE", args=(lib,)).stdout.splitlines()
         for lib in ("jax", "revax")}
  assert len(out["jax"]) == len(out["revax"])
  diffs = [(j, r) for j, r in zip(out["jax"], out["revax"], strict=True) if j != r]
  assert not diffs, "\n".join(f"jax:   {j}\nrevax: {r}" for j, r in diffs)
  assert sum("NamedSharding" in line for line in out["revax"]) == 5  # every inspect check


def test_inside_jit_a_value_without_a_typed_layout_is_refused():
  import revax
  import revax.numpy as jnp

  def f(a):
    revax.debug.inspect_array_sharding(a * 2, callback=print)
    return a

  with pytest.raises(NotImplementedError, match="cannot read"):
    revax.jit(f)(jnp.ones(3))
  seen = []
  revax.debug.inspect_array_sharding(np.ones(2, np.float32) + jnp.ones(2), callback=seen.append)
  assert len(seen) == 1 and seen[0].device_set == {revax.devices()[0]}
