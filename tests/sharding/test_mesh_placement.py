"""Arrays computed under `set_mesh` live on the mesh as jax places them (mesh_placement.py):
every case of mesh_placement_child.py (creation functions, eager operations, jit results,
random draws, under Explicit and Auto meshes) reports jax's sharding, spec (`P(None, ...)` for
values typed over the mesh, `P()` otherwise), device count, type and commitment."""
from tests.guide_transcripts import compare, run_both


def test_placement_under_set_mesh_matches_jax():
  transcripts = run_both("sharding/mesh_placement_child.py", devices=4)
  compare(transcripts, {})
  assert sum("NamedSharding P(None" in line for line in transcripts["revax"]) >= 20
