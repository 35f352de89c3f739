"""Gradients of functions of split arrays are split as jax 0.10.2's (grad_types_child.py, 4 CPU
devices): a reduction's cotangent and the zeros a gather's or a slice's transpose scatters into
are split as the primal (jax's zeros_like_aval and reduce_sum transpose)."""
from tests.sharding.children import run_child


def test_gradient_types_match_jax():
  jax_t, revax_t = (run_child("grad_types_child.py", "GRAD_TYPES_DONE", args=(lib,))
                    .stdout.splitlines() for lib in ("jax", "revax"))
  diffs = [f"jax   {j}\nrevax {r}" for j, r in zip(jax_t, revax_t, strict=True) if j != r]
  assert not diffs, "\n".join(diffs)
  assert sum("@" in line for line in revax_t) >= 40
