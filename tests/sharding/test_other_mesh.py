"""A jit program over several meshes of the same devices, as jax 0.10.2 runs it
(other_mesh_child.py on 8 CPU devices, with each library, gives the same transcript): values
resharded under `use_abstract_mesh` to other axes land on that mesh (its type, sharding and
blocks as jax's), the module declares each mesh once, and a mesh of the same devices in another
order is jax's incompatible-devices ValueError."""
from tests.guide_transcripts import compare, run_both


def test_a_program_over_meshes_of_the_same_devices_as_jax():
  compare(run_both("sharding/other_mesh_child.py", devices=8), {})
