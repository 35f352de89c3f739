"""jax's shard_map guide runs on revax with jax's outputs: shard_map_guide_child.py (the guide's
steps in this suite's words: blocked matmul, specs, collectives, data parallel, FSDP, tensor
parallel, FSDP+TP, a pipeline) on 8 CPU devices gives the same transcript with each library,
but for the steps below."""
from tests.guide_transcripts import compare, run_both

KNOWN = {"implicit pvary jaxpr": (
    "jax prints the shard_map equation with its own params (check_vma, jaxpr, an AbstractMesh, "
    "newly_manual_axes); revax's shard_map_p holds body, fallback, manual and a Mesh")}


def test_shard_map_guide_matches_jax():
  compare(run_both("sharding/shard_map_guide_child.py", devices=8), KNOWN)
