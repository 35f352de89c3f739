"""`Compiled.as_text()` over a mesh is XLA's SPMD-partitioned module, as jax's:
compiled_text_child.py on 8 CPU devices with each library gives the same transcript (header,
per-device entry signature, collectives, fusions of each program)."""
from tests.guide_transcripts import compare, run_both


def test_compiled_text_over_a_mesh_is_the_partitioned_module_as_jax():
  compare(run_both("sharding/compiled_text_child.py", devices=8), {})
