"""Arrays computed under `set_mesh` live on the mesh as jax places them (mesh_placement.py):
every case of mesh_placement_child.py (creation functions, eager operations, jit results,
random draws, under Explicit and Auto meshes) reports jax's sharding, spec (`P(None, ...)` for
values typed over the mesh, `P()` otherwise), device count, type and commitment."""
from tests.guide_transcripts import compare, run_both


KNOWN = {
    "one-device key": ("a scalar key made over a mesh of one device: jax makes key data with its "
                       "random_seed primitive, typed over the mesh (P(None,)); revax computes "
                       "the data from the seed, typed over no mesh (P())"),
    "one-device after, op of a mesh value": (
        "outside the mesh context, eager ops on arrays over a mesh of one device give plain "
        "one-device results in revax (runtime/sharded.mark: such arrays stay plain Arrays so "
        "the cached one-device paths stay as they are); jax keeps the mesh's sharding"),
}


def test_placement_under_set_mesh_matches_jax():
  transcripts = run_both("sharding/mesh_placement_child.py", devices=4)
  compare(transcripts, KNOWN)
  assert sum("NamedSharding P(None" in line for line in transcripts["revax"]) >= 20
