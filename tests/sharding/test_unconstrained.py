"""`PartitionSpec.UNCONSTRAINED`, as jax: a singleton (printed UNCONSTRAINED, pickled to itself)
that a spec may hold for a dimension whose split XLA chooses: with_sharding_constraint lowers it
open (`{?}`). flax's linen partitioning names it (its partitioning_test did not import without).

One program (unconstrained_child.py) runs on jax and on revax with 4 CPU devices; its
transcripts must be identical."""
from tests.sharding.children import run_child


def _transcript(lib):
  text = run_child("unconstrained_child.py", "UNCONSTRAINED_DONE", args=(lib,)).stdout
  return [line for line in text.splitlines() if ": " in line]


def test_unconstrained_as_jax():
  jax_lines, revax_lines = _transcript("jax"), _transcript("revax")
  assert len(jax_lines) == len(revax_lines) >= 18
  diffs = [(j, r) for j, r in zip(jax_lines, revax_lines, strict=True) if j != r]
  assert not diffs, "\n".join(f"jax:   {j}\nrevax: {r}" for j, r in diffs)
  assert not any(line.endswith("Error") for line in revax_lines), revax_lines
  assert "lowered open: (1, True)" in revax_lines
  assert "lowered closed: (1, False)" in revax_lines

