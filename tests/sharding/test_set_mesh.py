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


# Lines where revax differs on purpose: an eager shard_map called again with arguments of the
# same structure reuses its traced program (one trace, 29 ms -> 0.18 ms per tiny call measured on
# 4 CPU devices), where jax traces the function on every eager call (3 traces for 3 calls).
TRACED_ONCE = ("AxisType.Auto shard_map traces once", "AxisType.Explicit shard_map traces once")


def test_revax_prints_what_jax_prints(transcripts):
  jax_lines, revax_lines = transcripts["jax"], transcripts["revax"]
  assert len(jax_lines) == len(revax_lines)
  for j, r in zip(jax_lines, revax_lines, strict=True):
    if j.startswith(TRACED_ONCE):
      assert j.endswith(", 3)") and r.endswith(", 1)") and j[:-3] == r[:-3], (j, r)
  diffs = [(j, r) for j, r in zip(jax_lines, revax_lines, strict=True)
           if j != r and not j.startswith(TRACED_ONCE)]
  assert not diffs, "\n".join(f"jax:   {j}\nrevax: {r}" for j, r in diffs)


def test_the_program_mostly_runs(transcripts):
  # the comparison means little if most checks only raise: most lines must be values
  values = [line for line in transcripts["revax"] if not line.endswith("Error")]
  assert len(values) >= 40, values
