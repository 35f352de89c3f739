"""Pytree prefixes that hold lists, read as jax reads them: the lists of a spec or sharding
prefix are tree nodes, in shard_map's in_specs/out_specs, jit's in_shardings/out_shardings and
with_sharding_constraint (revax grouped each prefix leaf's copies in lists too, so a prefix's
own list came out as one spec; flax's nnx shard_map and jit pass lists).

One program (prefix_lists_child.py) runs on jax and on revax with 4 CPU devices; its
transcripts must be identical."""
from tests.sharding.children import run_child


def _transcript(lib):
  text = run_child("prefix_lists_child.py", "PREFIX_LISTS_DONE", args=(lib,)).stdout
  return [line for line in text.splitlines() if ": " in line]


def test_list_prefixes_as_jax():
  jax_lines, revax_lines = _transcript("jax"), _transcript("revax")
  assert len(jax_lines) == len(revax_lines) >= 12
  diffs = [(j, r) for j, r in zip(jax_lines, revax_lines, strict=True) if j != r]
  assert not diffs, "\n".join(f"jax:   {j}\nrevax: {r}" for j, r in diffs)
  # (in_specs must be a tuple prefix of the arguments: a bare list is jax's ValueError too)
  raised = [line for line in revax_lines if line.endswith("Error")]
  assert all(line.startswith("shard_map list prefix per arg") for line in raised), raised
