"""JAX's mesh context: `set_mesh` (global setter and `with` block), axis types, abstract meshes,
bare PartitionSpecs resolved against the mesh in context (device_put, jit, with_sharding_constraint,
reshard, shard_map, smap), auto_axes / explicit_axes, and the exceptions of each misuse.

One program (set_mesh_child.py) runs on jax and on revax with 4 CPU devices; its transcripts
(values, specs, exception types) must be identical."""
import pytest

from tests.sharding.children import run_child


@pytest.fixture(scope="module")
def transcripts():
  out = {}
  for lib in ("jax", "revax"):
    text = run_child("set_mesh_child.py", "SET_MESH_DONE", args=(lib,)).stdout
    out[lib] = [line for line in text.splitlines() if ": " in line]
  return out


def test_revax_prints_what_jax_prints(transcripts):
  jax_lines, revax_lines = transcripts["jax"], transcripts["revax"]
  assert len(jax_lines) == len(revax_lines)
  diffs = [(j, r) for j, r in zip(jax_lines, revax_lines, strict=True) if j != r]
  assert not diffs, "\n".join(f"jax:   {j}\nrevax: {r}" for j, r in diffs)


def test_the_program_mostly_runs(transcripts):
  # the comparison means little if most checks only raise: most lines must be values
  values = [line for line in transcripts["revax"] if not line.endswith("Error")]
  assert len(values) >= 40, values
